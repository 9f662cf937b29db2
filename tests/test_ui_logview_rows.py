"""The log view's rows from the log format's offsets: ranks collapse by the prefix the format parsed,
and back-to-back progress bars keep one row each (a bar's frames replace only that bar's row)."""

from __future__ import annotations

import io

from textual.app import App, ComposeResult

from eagletui.core.events import LogLine
from eagletui.core.logs.registry import get_format
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.sim.vllm_log import Log
from eagletui.ui.widgets.logview import COUNT, TEXT, LogView, _display_text


class _One(App):
    def compose(self) -> ComposeResult:
        yield LogView(id="log")


def _lines(text: str, fmt: str) -> list[LogLine]:
    it = LogInterpreter(fmt=get_format(fmt))
    return [e for e in it.feed(text) + it.flush() if isinstance(e, LogLine)]


async def test_two_bars_in_a_row_keep_a_row_each_at_their_last_frame() -> None:
    buf = io.StringIO()
    log = Log(out=buf)
    log.bar("EngineCore", "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 8, 0)
    log.bar("EngineCore", "Capturing CUDA graphs (decode, FULL)", 4, 0)
    async with _One().run_test() as pilot:
        view = pilot.app.query_one(LogView)
        view.add_events(_lines(buf.getvalue(), "vllm"))  # one batch: the worst case
        view.flush()
        texts = [r[TEXT] for r in view.rows]
    assert len(texts) == 2, texts
    assert "PIECEWISE):" in texts[0] and "8/8" in texts[0]
    assert "FULL):" in texts[1] and "4/4" in texts[1]


async def test_ranks_collapse_by_the_formats_offsets_for_either_server() -> None:
    sglang = "".join(
        f"[2026-03-14 12:00:0{r} TP{r}] Load weight begin. avail mem=78.50 GB\n" for r in range(4)
    )
    vllm = "".join(
        f"(Worker_TP{r} pid=1{r}) INFO 05-06 20:59:0{r} [gpu_model_runner.py:4830] Starting to load model m...\n"
        for r in range(2)
    )
    async with _One().run_test() as pilot:
        view = pilot.app.query_one(LogView)
        view.add_events(_lines(sglang, "sglang"))
        view.add_events(_lines(vllm, "vllm"))
        view.flush()
        rows = list(view.rows)
    assert [r[COUNT] for r in rows] == [4, 2]
    assert _display_text(rows[0]) == "[2026-03-14 12:00:00 TP0–3 ×4] Load weight begin. avail mem=78.50 GB"
    assert _display_text(rows[1]).startswith("(TP0–1 ×2 pid=10) INFO 05-06 20:59:00")


async def test_a_filtered_view_follows_row_by_row_as_a_full_refilter_would() -> None:
    """Issue 33 item 21: a filter or a search on during a burst rebuilt the view (and searched it) from
    the whole ring at every flush. Now both follow the rows added, merged (ranks, tqdm frames) and
    dropped off a full ring; this checks them against the full rebuild over random batches (a small
    ring, so rows fall off it)."""
    import random

    from eagletui.ui.widgets.logview import make_row

    rnd = random.Random(5)
    kinds = ["error", "decode", "http", "progress", "warning"]
    async with _One().run_test() as pilot:
        view = pilot.app.query_one(LogView)
        view.rows = type(view.rows)(maxlen=50)
        view.set_filter({"error", "progress", "warning"}, rank=2)
        n = most = 0
        for batch in range(120):
            if batch == 60:  # the same without a filter, a search on
                view.set_filter(None)
                view.set_search("1")
            for _ in range(rnd.randint(1, 30)):
                kind = rnd.choice(kinds)
                msg = f"step {n // 3}" if kind != "progress" else f"Capturing batches {rnd.randint(1, 9)}%"
                rank = rnd.choice([None, 0, 1, 2, 3])
                prefix = "[TP] " if rank is not None else ""
                view._pending.append(make_row(prefix + msg, kind, rank, len(prefix)))
                n += 1
            if batch == 30:
                view.set_search("2")  # a search beside the filter from here on
            view.flush()
            shown, hits, index = list(view.view_rows), list(view.hits), view.hit_index
            view._refilter()  # what the rebuild from the whole ring gives
            assert shown == list(view.view_rows)
            assert hits == view.hits and index == view.hit_index, batch
            assert all(view.view_rows[h] is r for h, r in zip(view.hits, view._hit_rows, strict=True))
            most = max(most, len(hits))
        assert view.dropped > 0 and most > 5
        view.set_filter({"error", "progress", "warning"}, rank=2)
        rebuilt: list[int] = []
        view._refilter = lambda: rebuilt.append(1)  # type: ignore[method-assign]
        view._pending.append(make_row("[TP] boom", "error", 2, 5))
        view.flush()
        assert not rebuilt and view.view_rows[-1][TEXT] == "[TP] boom"  # d26d01f rebuilt it here
        del view._refilter
