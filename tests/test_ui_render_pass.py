"""Issue 33 item 21: a frame reads the log pane's and a chart's DOM-walking properties once per render
pass, not once per line. ``Widget.rich_style`` (~130 µs) and ``Widget.size`` (~25 µs) per line were
over half of the log pane's cost at every 10 Hz flush of a burst and in every full repaint (a tab or
theme key). The lines drawn are the same as line-by-line rendering gives; how fast is measured by
``benchmarks/ui_load.py``, not here."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.app import App, ComposeResult
from textual.geometry import Size
from textual.strip import Strip

from eagletui.core.events import LogLine
from eagletui.ui.widgets.charts import TokSChart
from eagletui.ui.widgets.logview import LogView, _display_text, make_row, printable, row_of


class _CountingLog(LogView):
    reads = 0

    @property
    def rich_style(self) -> Style:
        type(self).reads += 1
        return super().rich_style


class _CountingChart(TokSChart):
    reads = 0

    @property
    def size(self) -> Size:
        type(self).reads += 1
        return super().size


class _Pane(App):
    def compose(self) -> ComposeResult:
        yield _CountingLog(id="log")
        yield _CountingChart(id="chart")


_TEXTS = [
    "[2026-03-14 12:00:00 TP0] Decode batch. #running-req: 8, #token: 4096, gen throughput (token/s): 812.5",
    "plain ascii with a\ttab",
    "wide 漢字 characters and an escape \x1b[31m here",
    "",
    "x" * 300,
]


def _strips_text(strips) -> list[str]:
    return ["".join(seg.text for seg in s) for s in strips]


async def test_one_pass_reads_the_panes_style_and_a_charts_size_once_and_draws_the_same_lines() -> None:
    app = _Pane()
    async with app.run_test(size=(90, 40)) as pilot:
        view = app.query_one(_CountingLog)
        chart = app.query_one(_CountingChart)
        view.add_events(
            [LogLine(text=_TEXTS[i % len(_TEXTS)], kind="decode", launch=1, seq=i + 1) for i in range(120)]
        )
        view.flush()
        await pilot.pause()
        for setup in (lambda: None, lambda: view.set_search("tab"), lambda: view.scroll_to(x=7, animate=False)):
            setup()
            await pilot.pause()
            height = view.size.height
            assert height > 10
            # line by line, outside a pass: what the pane drew before it read the properties once
            alone = _strips_text(view.render_line(y) for y in range(height))
            _CountingLog.reads = 0
            view._styles_cache.clear()
            in_pass = _strips_text(view.render_lines(view.size.region))
            assert _CountingLog.reads <= 2, _CountingLog.reads  # was one per line
            assert in_pass == alone
            # the plain rows' one-Strip path cuts and pads as Strip.crop/extend_cell_length would
            sx, sy, width = int(view.scroll_offset.x), int(view.scroll_offset.y), view.size.width
            for y, row in enumerate(list(view.view_rows)[sy : sy + height]):
                whole = Strip([Segment(_display_text(row))]).crop(sx, sx + width).extend_cell_length(width)
                assert _strips_text([view.render_line(y)]) == [whole.text], row[0]
        _CountingChart.reads = 0
        chart._styles_cache.clear()
        chart.render_lines(chart.size.region)
        assert chart.size.height > 5
        assert _CountingChart.reads <= 4, _CountingChart.reads  # was one per line


def test_a_printable_line_takes_the_short_way_to_the_same_row() -> None:
    """``row_of`` hands a line with nothing to make visible straight to the row; every other line still
    goes through ``printable`` (control characters shown, tabs expanded, offsets moved with the text)."""
    texts = _TEXTS + [
        "nbsp\u00a0and a line separator\u2028",
        "\x9b31m one-byte CSI",
        "\x7f",
        "é accents ok",
        "y" * 5000,
        "[2026-03-14 12:00:00 TP3] \tindented after the prefix",
    ]
    for text in texts:
        ev = LogLine(text=text, kind="decode", rank=3, launch=1, prefix_end=26, rank_start=21, rank_end=24)
        row = row_of(ev)
        shown = printable(text)
        assert row[0] == shown
        if shown == text:  # the short way: the format's offsets as they were
            assert row == make_row(text, "decode", 3, 26, (21, 24))
        elif len(shown) != len(text):  # offsets moved with the text
            assert row[5] == len(printable(text[:26]))
