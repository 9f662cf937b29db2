"""Issue 33's first-hour items 14-19: what a new user saw that was wrong, each against the real parts."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.containers import Vertical, VerticalScroll

from eagletui.commands.host_files import read_host_file
from eagletui.commands.parse import parse_path
from eagletui.commands.parse import render as render_parse
from eagletui.commands.trace import render_text
from eagletui.core import events as ev
from eagletui.core.events import LaunchStarted, PhaseFinished, PhaseStarted, ServerFailed, ServerReady
from eagletui.core.logs.registry import get_format
from eagletui.core.logs.torch_oom import oversized_allocation
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.core.profile.load import load_profile
from eagletui.core.profile.model import Verdict
from eagletui.core.runs.book import RunBook
from eagletui.profiler import summarize_file
from eagletui.profiler.summary import step_breakdown
from eagletui.session.baseline import ForeignRun
from eagletui.sim.perf import DEFAULT_HOST, HOSTS
from eagletui.ui.screens.history import row_text
from eagletui.ui.screens.modals import TextScreen, _Modal
from eagletui.ui.widgets.charts import MetricChart
from eagletui.ui.widgets.runs import ready_cell
from eagletui.ui.widgets.stepbars import step_bars
from eagletui.ui.widgets.timeline import GLYPHS
from tests.replay_apps import replayed
from tests.test_diagnosis import HERE, REAL, diagnose, kinds

PROFILES = Path(__file__).resolve().parent.parent / "eagletui" / "profiles"


def _launch(book: RunBook, n: int) -> None:
    book.apply(LaunchStarted(launch=n, target="local", config={"args": {}}, wall=1000.0, mono=10.0))
    book.apply(PhaseStarted(phase="load_target", launch=n, wall=1000.0, mono=10.0))
    book.apply(PhaseFinished(phase="load_target", seconds=3.6, launch=n, wall=1003.6, mono=13.6))


def test_item14_a_launch_that_never_became_ready_has_no_ready_time() -> None:
    """Item 14: the ``ready`` column showed 3.6 s (how far the phases got) for a launch that crashed."""
    book = RunBook(Verdict())
    _launch(book, 1)
    book.apply(ServerFailed(kind="oom", message="CUDA out of memory", launch=1, wall=1003.7, mono=13.7))
    _launch(book, 2)  # still starting
    _launch(book, 3)
    book.apply(ServerReady(launch=3, wall=1005.0, mono=15.0))
    failed, starting, ready = (book.row(n) for n in (1, 2, 3))
    assert failed.ready_s is None and str(ready_cell(failed)) == "failed after 3.6s"
    assert starting.ready_s is None and str(ready_cell(starting)) == "—"
    assert ready.ready_s is not None and ready_cell(ready) == " 5.0s"


GPU_FIXTURES = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-turn4-shared" / "gpu"


@pytest.mark.parametrize("fmt", ["sglang", "vllm"])
def test_item15_one_allocation_larger_than_the_gpu_is_named_not_sent_to_the_memory_knobs(fmt: str) -> None:
    """Item 15: a real torch 2.11 OOM of 200 GiB on a 139.8 GiB H200 got "lower --mem-fraction-static"."""
    summary = parse_path(str(GPU_FIXTURES / "torch-cuda-oom.txt"), fmt=get_format(fmt))
    hint = summary["failure"]["hint"]
    assert "200.00 GiB is larger than GPU 0's whole memory (139.80 GiB)" in hint
    assert "mem-fraction" not in hint and "gpu-memory-utilization" not in hint


def test_item15_an_allocation_that_would_fit_keeps_the_memory_advice() -> None:
    line = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 139.81 GiB of which 788.00 MiB is free."
    )
    assert oversized_allocation(line) is None
    hint = get_format("sglang").hint_for("oom", "cuda_oom", None, "0.5.17", line)
    assert "--mem-fraction-static" in hint


def _chart_lines(chart: MetricChart) -> list[str]:
    return ["".join(seg.text for seg in chart.render_line(y)) for y in range(chart.size.height)]


@pytest.mark.slow
async def test_item16_at_60x20_every_y_label_sits_on_the_plot_in_order() -> None:
    """Item 16: at 60×20 the chart is five rows; the x axis took the plot's rows and the y labels were
    drawn on the frame, "0" on top and the run's scale on the bottom border."""
    async with replayed((60, 20)) as (app, pilot):
        # the charts were plotted while their tab was hidden (no size): showing it must redraw the axes
        app.screen.action_tab("charts")
        await pilot.pause()
        chart = app.query_one("#chart-toks", MetricChart)
        assert chart.size.height < 7
        lines = _chart_lines(chart)
        rows = {
            label: next(
                (i for i, ln in enumerate(lines) if ln.lstrip().startswith((label + "┤", label + "├"))), None
            )
            for label in chart.y_labels
        }
        assert len(rows) >= 2 and None not in rows.values(), lines
        top, bottom = chart.y_labels[-1], chart.y_labels[0]
        assert rows[top] < rows[bottom], lines  # the scale reads upwards


@pytest.mark.slow
async def test_item17_launch_5_says_it_is_the_first_of_its_config() -> None:
    """Item 17: replay said "first launch: no estimate" on launch #5, the first launch of its config."""
    events: list[ev.Event] = []
    for n in range(1, 5):
        events += [
            ev.LaunchStarted(launch=n, target="local", config={"args": {"--tp": 2}}),
            ev.PhaseStarted(phase="load_target", launch=n),
            ev.PhaseFinished(phase="load_target", seconds=3.0, launch=n),
            ev.ServerReady(launch=n),
            ev.ProcessExited(code=0, launch=n),
        ]
    events += [
        ev.LaunchStarted(launch=5, target="local", config={"args": {"--tp": 4}}),
        ev.PhaseStarted(phase="load_target", launch=5),
    ]
    async with replayed((200, 50), events=events) as (app, pilot):
        app.repaint_now()
        await pilot.pause()
        summary = str(app.query_one("#phase-summary").render())
        assert "first launch of this config: no estimate" in summary, summary


SPEC_TRACE = (
    Path(__file__).resolve().parent / "fixtures" / "traces" / "eagle3-graphs-TP-0-DECODE.trace.json.gz"
)


def _spec_profile() -> dict:
    """The real EAGLE-3 decode trace (SGLang 0.5.17, H200, CUDA graphs), summarised as ``P`` does."""
    return step_breakdown([summarize_file(SPEC_TRACE)])


def test_item18_P_shows_the_draft_verify_draft_extend_split_that_trace_prints() -> None:
    """Item 18: ``P`` showed no draft / verify / draft-extend split although ``eagletui trace`` did."""
    summary = _spec_profile()
    book = RunBook(Verdict())
    book.apply(LaunchStarted(launch=1, target="local", config={"args": {}}))
    book.apply(ev.ProfileCaptured(launch=1, summary=summary))
    shown = step_bars(book, 1).plain
    traced = render_text([summarize_file(SPEC_TRACE)], None)
    for label in ("draft", "verify", "draft extend"):
        # the trace's per-part row: label, GPU ms, kernel ms, ...; the bars show the kernel ms
        row = next(ln.split() for ln in traced.splitlines() if ln.strip().startswith(label + " "))
        kernel_ms = float(row[len(label.split()) + 1])
        assert f"{label} {kernel_ms:.2f} ms" in shown, (label, kernel_ms, shown)
    assert "a cycle: draft " in shown


def test_item18_the_why_line_says_speculative_cycle_and_its_verify_part() -> None:
    """Item 18: the why line said "of a decode step" for a profile of speculative cycles."""
    text = (REAL / "pcie-l4x4-customar-0434.log").read_text()
    summary = _spec_profile()
    summary["parts"]["verify"]["comm_ms"] = 0.25  # a TP rank's verify spends this in NCCL
    ar = kinds(diagnose(text, after=[ev.ProfileCaptured(launch=1, summary=summary)]))["allreduce"]
    assert "% of a speculative cycle. Verify 0.55 ms, of which 0.25 ms communication." in ar.text, ar.text
    assert "decode step" not in ar.text


@pytest.mark.slow
async def test_item19_ctrl_c_with_nothing_selected_says_q_quits() -> None:
    """Item 19: Ctrl-C in the TUI only said "nothing to copy" (a new user pressed it to quit)."""
    async with replayed((120, 40)) as (app, pilot):
        await pilot.press("ctrl+c")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any(m.startswith("copied ") and m.endswith("; q quits") for m in said), said


@pytest.mark.parametrize("tab", ["charts", "runs"])
async def test_ctrl_c_off_the_log_tab_does_not_call_the_log_empty(tab: str) -> None:
    """Seen in the first hour after round 4: at 80×24 on the Charts tab Ctrl-C said "nothing to copy: the
    log is empty" over a log of hundreds of lines (the hidden log view has no rows on screen)."""
    async with replayed((80, 24)) as (app, pilot):
        app.screen.action_tab(tab)
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert not any("the log is empty" in m for m in said), said
        assert any(m.startswith("the log is not on this tab: 1 shows it") and m.endswith("q quits") for m in said)


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*.toml")), ids=lambda p: p.name)
def test_item19_no_shipped_toggle_offers_the_simulators_default_host_beside_unset(path: Path) -> None:
    """Item 19: ``--sim-host`` offered both ``unset`` and ``pcie-rtx6000``, the same host twice."""
    for toggle in load_profile(path).toggles:
        if toggle.name.lstrip("-") == "sim-host":
            assert DEFAULT_HOST not in toggle.choices, toggle.choices
            assert None in toggle.options() and set(toggle.choices) <= set(HOSTS)


def test_item19_the_readme_names_every_mark_the_replay_timeline_draws() -> None:
    """Item 19: the replay timeline's ✓ and ■ were missing from the legend (the README's replay row)."""
    readme = (PROFILES.parent.parent / "README.md").read_text(encoding="utf-8")
    row = next(ln for ln in readme.splitlines() if ln.startswith("| `eagletui replay ") and "timeline" in ln)
    for kind, (glyph, _style) in GLYPHS.items():
        assert glyph in row, (kind, glyph)


def test_item19_a_capture_of_token_counts_is_not_counted_in_bs() -> None:
    """Item 19: the draft capture's "Capturing num tokens (num_tokens=…)" bar was counted as "bs"."""
    text = (HERE / "real" / "stopped-sigterm-sigquit-cleanup-0516.log").read_text()
    it = LogInterpreter(launch=1)
    got = [e for e in [*it.feed(text), *it.flush()] if isinstance(e, ev.PhaseProgress)]
    tokens = [e for e in got if e.label.startswith("num_tokens=")]
    batches = [e for e in got if e.label.startswith("bs=")]
    assert tokens and all(e.unit == "shapes" for e in tokens), {e.unit for e in tokens}
    assert batches and all(e.unit == "bs" for e in batches)


@pytest.mark.slow
async def test_item21_a_tab_key_on_a_wide_screen_does_not_restyle_the_whole_screen() -> None:
    """Item 21: every tab key toggled a class on the screen, which restyles every widget under it
    (~35 ms a key under a burst); only a narrow screen uses that class (the phase panel gives way)."""
    async with replayed((160, 50)) as (app, pilot):
        screen = app.screen
        restyled: list[object] = []
        real = app.update_styles

        def spy(node, animate=True):  # type: ignore[no-untyped-def]
            restyled.append(node)
            return real(node, animate=animate)

        app.update_styles = spy  # type: ignore[method-assign]
        for tab in ("tune", "log", "runs", "log"):
            screen.action_tab(tab)
            await pilot.pause()
        assert screen not in restyled and not screen.has_class("-full-pane"), restyled
    async with replayed((80, 24)) as (app, pilot):
        screen = app.screen
        screen.action_tab("runs")
        await pilot.pause()
        assert screen.has_class("-full-pane") and not app.query_one("#phases").display
        screen.action_tab("log")
        await pilot.pause()
        assert not screen.has_class("-full-pane") and app.query_one("#phases").display


@pytest.mark.slow
@pytest.mark.parametrize("size", [(200, 50), (80, 24)])
async def test_item19_a_modal_fits_its_text_and_a_long_one_scrolls_to_its_end(size: tuple[int, int]) -> None:
    """Item 19: modals were huge and mostly empty at 200×50 (a 5-line body in a 45-row box)."""
    for lines in (5, 200):
        async with replayed(size) as (app, pilot):
            app.push_screen(TextScreen("t", "\n".join(f"line {i}" for i in range(lines))))
            await pilot.pause()
            await pilot.pause()
            box = app.screen.query_one(Vertical).region
            scroll = app.screen.query_one(VerticalScroll)
            if lines == 5:
                assert box.height <= lines + _Modal.CHROME_ROWS, box
            else:  # the scroll area ends inside the box (its border and padding): the last line is reachable
                assert scroll.region.bottom <= box.bottom - 2, (scroll.region, box)
                assert scroll.max_scroll_y == lines - scroll.region.height


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("nccl-debug-info-tp2.log", "NCCL 2.28.9+cuda13.0; 2 ranks; transports P2P/CUMEM ×48"),
        ("nvidia-smi-h200x2.txt", "nvidia-smi topo -m output: NV18 between all 2 GPUs"),
    ],
)
def test_item19_parse_of_the_outputs_eagletuis_hints_ask_for_says_what_they_show(
    name: str, says: str
) -> None:
    """Item 19: ``parse`` of an NCCL_DEBUG=INFO log or of nvidia-smi output said only "unknown"."""
    path = str(GPU_FIXTURES / name)
    summary = parse_path(path)
    summary["host_file"] = read_host_file(path)  # what `eagletui parse` adds when no server spoke
    text = render_parse(path, summary)
    assert says in text and "state: unknown" not in text, text


def test_item19_the_history_list_shows_steps_concurrency_and_host() -> None:
    """Item 19: the ``H`` list showed no concurrency, host or step count."""
    book = RunBook(Verdict())
    args = {"--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3, "--tp": 8}
    book.apply(LaunchStarted(launch=1, target="gpu-box-7", config={"args": args}))
    book.apply(ev.BenchmarkStarted(bench=1, launch=1, workload={"concurrency": 4}, workload_fingerprint="w"))
    book.apply(
        ev.BenchmarkResult(
            bench=1,
            launch=1,
            output_throughput=250.0,
            accept_length=3.1,
            requests=10,
            workload_fingerprint="w",
        )
    )
    row = row_text(ForeignRun(session="s", path=Path("s.jsonl"), run=book.runs[1]), None).plain
    assert "spec s3" in row and "c=4" in row and "gpu-box-7" in row, row


def _screen_lines(app) -> list[str]:
    """What the terminal shows, a string per row (the compositor's last frame)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize("size", [(200, 50), (80, 24), (60, 20)])
async def test_the_stop_question_wraps_and_keeps_its_warning(size: tuple[int, int]) -> None:
    """Seen in the first hour after round 4: the question about a server launched in another session was
    cut at the box's edge at every size, and the part lost was the warning itself."""
    from eagletui.ui.screens.modals import ConfirmScreen

    question = (
        "Run 20261204-162458-L2-34b2f9 (pid 27399) was launched by eagletui, but not in this session: "
        "another session may be using it. Stop it? (y/n)"
    )
    async with replayed(size) as (app, pilot):
        app.push_screen(ConfirmScreen(question))
        await pilot.pause()
        await pilot.pause()
        # the box's rows, without its border: the question as it reads, line after line
        text = " ".join(line.strip().strip("█").strip() for line in _screen_lines(app))
        assert "another session may be using it. Stop it? (y/n)" in " ".join(text.split()), text


@pytest.mark.parametrize("runs", [0, 2])
async def test_item19_the_history_box_fits_its_runs(tmp_path: Path, runs: int) -> None:
    """Item 19, the ``H`` window: at 200×50 one line of text sat in a 36-row box (its height was a fixed
    80 %); it now fits what it lists."""
    from textual.widgets import OptionList

    from eagletui.ui.screens.history import HistoryScreen

    async with replayed((200, 50)) as (app, pilot):
        screen = HistoryScreen(tmp_path, target="", model="", exclude=None, current=None)
        app.push_screen(screen)
        for _ in range(20):
            await pilot.pause(0.05)
            if "reading" not in str(screen.query_one("#history-status").render()):
                break
        if runs:  # what _show does with runs, without writing sessions for them
            screen.query_one(OptionList).display = True
            screen.query_one(OptionList).add_options([f"run {i}" for i in range(runs)])
            await pilot.pause()
        box = screen.query_one(Vertical).region
        # the box's chrome, and the list (with its border) only when there is something to list
        assert box.height <= HistoryScreen.CHROME_ROWS + (runs + 2 if runs else 0), box
