"""Pilot tests of the real app on the real simulator: launch → ready → benchmark → relaunch → quit,
the toggle → diff → apply → relaunch → compare cycle, and crash triage on screen."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from pathlib import Path

import pytest

from eagletui.commands.demo import build_app, write_demo_profile
from eagletui.config import UserConfig
from eagletui.core.phases.history import PhaseHistory, history_key
from eagletui.core.profile.load import load_profile
from eagletui.session.format import read_session
from eagletui.session.record import Recorder
from eagletui.ui.widgets.logview import TEXT, LogView
from eagletui.ui.widgets.tuning import TuningPanel

pytestmark = pytest.mark.slow

FAST = 0.004  # a whole simulated launch in ~3 s


def fast_profile(tmp_path: Path, **env: str):
    prof = load_profile(write_demo_profile(tmp_path, time_scale=FAST))
    prof.args["--sim-speed"] = 4
    prof.bench = dataclasses.replace(prof.bench, num_prompts=6, concurrency=3, max_new_tokens=24, warmup=1)
    prof.env.update(env)
    return prof


async def wait_for(pilot, predicate, timeout: float = 30.0, step: float = 0.1) -> bool:
    waited = 0.0
    while waited < timeout:
        if predicate():
            return True
        await pilot.pause(step)
        waited += step
    return predicate()


async def quit_app(pilot, timeout: float = 60.0) -> None:
    """Press q and wait until the app has finished quitting (see ``wait_quit``)."""
    await pilot.press("q")
    await wait_quit(pilot.app, timeout)


async def wait_quit(app, timeout: float = 60.0) -> None:
    """Wait, bounded, until an app asked to quit has finished quitting: it exits only after its driver
    stopped the demo server and its benchmark. A fixed pause was not enough on a loaded CI machine:
    leaving ``run_test`` shuts the app down and cancels a quit still stopping the server, which then
    outlived the test."""
    deadline = time.monotonic() + timeout
    while app.return_code is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert app.return_code is not None, f"the app did not finish quitting within {timeout:.0f} s"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of the launcher's own group counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def test_demo_launch_ready_bench_relaunch_quit(tmp_path: Path) -> None:
    prof = fast_profile(tmp_path)
    rec = Recorder(tmp_path / "s.jsonl", target="local", profile_name="demo")
    app = build_app(
        prof, UserConfig(record=False, history_path=str(tmp_path / "h.jsonl")), recorder=rec, preflight=False
    )
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state
        la = app.state.launch
        assert la.phases["load_target"].total == 64 and la.phases["load_target"].done == 64
        assert la.phases["capture_target"].status == "done"
        assert all(la.phases[p].status in ("done", "skipped") for p in la.phases)
        assert len(app.query_one(LogView).rows) > 50
        first_pid = app.workspace.run.pid

        await pilot.press("b")
        assert await wait_for(pilot, lambda: bool(app.state.bench_results), 40)
        result = app.state.bench_results[-1]
        assert result.requests == 6 and result.output_throughput > 0
        assert 2.5 < result.accept_length < 4.0  # the demo's good drafter
        chart = app.query_one("#chart-req-wide")
        assert await wait_for(pilot, lambda: chart.points >= 6, 5)  # per-request samples reached the chart
        toks = app.query_one("#chart-toks-wide")
        assert await wait_for(pilot, lambda: toks.points > 0, 5)  # charts take turns replotting

        await pilot.press("r")
        assert await wait_for(pilot, lambda: app.state.current == 2, 20)
        assert app.state.launch.phases["ready"].status == "pending"  # the phases started over
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40)
        assert not pid_alive(first_pid)
        second_pid = app.workspace.run.pid

        await quit_app(pilot)
    assert not pid_alive(second_pid), "the demo server outlived the demo"

    header, events, warnings = read_session(tmp_path / "s.jsonl")
    assert not warnings
    assert sum(1 for e in events if e.type == "launch_started") == 2
    assert any(e.type == "bench_result" for e in events)
    assert oct((tmp_path / "s.jsonl").stat().st_mode & 0o777) == "0o600"


@pytest.mark.serial  # asserts the simulator's speed (no-spec faster on PCIe): run last, alone
async def test_toggle_diff_apply_relaunch_compare(tmp_path: Path) -> None:
    prof = fast_profile(tmp_path)
    # the comparison is the simulator's speed: at --sim-speed 4 a benchmark of these 24 tokens is
    # ~0.15 s of emulated GPU time, so a loaded machine's delays (the same on either side) can pull
    # the +39 % of no-spec on this preset under the +5 % asserted below (the PCIe economics test
    # measured 1.06 for a true ~0.72 that way); at 1 the emulated time is ~0.6 s a side
    prof.args["--sim-speed"] = 1
    history = PhaseHistory(tmp_path / "h.jsonl")
    app = build_app(prof, UserConfig(record=False), preflight=False, history=history)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40)
        assert app._estimates()  # the ready launch was recorded: the next one has an ETA
        await pilot.press("b")
        assert await wait_for(pilot, lambda: len(app.state.bench_results) == 1, 40)

        await pilot.press("3")  # Tune tab
        tuning = app.query_one(TuningPanel)
        tuning.focus()
        await pilot.pause()
        # stage: no speculative decoding (speculative-algorithm → unset)
        row = [t.key for t in prof.toggles].index("arg:--speculative-algorithm")
        tuning.move_cursor(row=row)
        await pilot.press("left")  # EAGLE3 → unset
        await pilot.pause()
        assert tuning.pending == {"arg:--speculative-algorithm": None}

        await pilot.press("d")
        await pilot.pause()
        assert app.screen.id == "diff-screen"
        body = str(app.screen.query_one("#text-body").render())
        assert "--speculative-algorithm" in body and "EAGLE3" in body and "unset" in body
        await pilot.press("a")  # the diff window says "a applies"
        assert await wait_for(pilot, lambda: app.state.current == 2, 20)
        la = app.state.launch
        # issue 19: one meaning of no-spec — unsetting the algorithm drops every --speculative-* flag
        assert la.diff["arg:--speculative-algorithm"] == ["EAGLE3", None]
        assert la.diff["arg:--speculative-draft-model-path"][1] is None
        assert la.diff["arg:--speculative-num-steps"] == [3, None]
        assert not any(a.startswith("--speculative-") for a in la.command)
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40)
        await pilot.press("b")
        assert await wait_for(pilot, lambda: len(app.state.bench_results) == 2, 40)
        await pilot.pause(0.5)

        rows = app.runbook.rows()
        assert [r.launch for r in rows] == [1, 2]
        assert rows[0].is_baseline
        d = rows[1].deltas["tok_s"]
        assert d.pct is not None and d.flagged and d.pct > 5  # no-spec is faster in the simulator
        assert "speculative-algorithm" in rows[1].diff
        # ETA history: the first launch's phase durations were recorded for the next one
        assert history.samples(history_key(app.state.launches[1].config), "load_target")
        # pin launch 2 as the baseline from the runs table
        await pilot.press("4")
        table = app.query_one("#runs-table")
        table.focus()
        table.move_cursor(row=1)
        await pilot.press("m")
        await pilot.pause(0.3)
        assert app.runbook.baseline == 2
        await quit_app(pilot)


async def test_injected_crash_shows_kind_and_hint(tmp_path: Path) -> None:
    prof = fast_profile(tmp_path, EAGLETUI_SIM_FAIL="oom-capture")
    app = build_app(prof, UserConfig(record=False, history_path=str(tmp_path / "h.jsonl")), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(
            pilot, lambda: app.state.launch is not None and app.state.launch.failure is not None, 40
        )
        f = app.state.launch.failure
        assert f.kind == "oom"
        assert "--cuda-graph-max-bs" in f.hint or "--mem-fraction-static" in f.hint
        await pilot.pause(0.3)
        panel = app.query_one("#phase-failure")
        assert panel.display
        shown = str(panel.render())
        assert "OOM" in shown and "hint" in shown
        assert app.state.launch.phases["capture_target"].status == "failed"
        await quit_app(pilot)


async def test_failure_injected_from_the_tune_tab(tmp_path: Path) -> None:
    """The demo profile's simulator-only toggle, driven from the keyboard: apply → the new launch
    fails → kind, hint and the failed phase on screen, and the run records what was changed."""
    prof = fast_profile(tmp_path)
    app = build_app(prof, UserConfig(record=False, history_path=str(tmp_path / "h.jsonl")), preflight=False)
    async with app.run_test(size=(80, 24)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40)
        await pilot.press("3")
        tuning = app.query_one(TuningPanel)
        assert app.focused is tuning
        tuning.move_cursor(row=[t.key for t in prof.toggles].index("env:EAGLETUI_SIM_FAIL"))
        await pilot.press("right")  # unset → oom-load
        assert tuning.pending == {"env:EAGLETUI_SIM_FAIL": "oom-load"}
        await pilot.press("a")
        assert await wait_for(pilot, lambda: app.state.current == 2, 20)
        assert app.state.launch.diff == {"env:EAGLETUI_SIM_FAIL": [None, "oom-load"]}
        assert await wait_for(pilot, lambda: app.state.launch.failure is not None, 40)
        assert app.state.launch.failure.kind == "oom"
        assert app.state.launch.phases["load_target"].status == "failed"
        await pilot.press("1")  # the Log tab shows the phase panel, failure box included
        await pilot.pause(0.3)
        panel = app.query_one("#phase-failure")
        assert panel.display and panel.region.height > 2
        shown = str(panel.render())
        assert "OOM" in shown and "hint" in shown
        await quit_app(pilot)


async def test_log_text_is_never_markup(tmp_path: Path) -> None:
    """Rich markup and ANSI escapes in log lines are shown literally."""
    from eagletui.core.events import LogLine

    app = build_app(fast_profile(tmp_path), UserConfig(record=False), preflight=False)
    app.workspace_factory = None  # no server: feed lines by hand
    async with app.run_test(size=(120, 30)) as pilot:
        nasty = "[bold red]not bold[/] \x1b[31mred?\x1b[0m [link=http://x]x[/link]"
        app.dispatch(LogLine(text=nasty, kind="error"))
        app.dispatch(LogLine(text="x" * 200_000, kind="other"))
        await pilot.pause(0.3)
        log = app.query_one(LogView)
        rows = [r[TEXT] for r in log.rows]
        assert "[bold red]not bold[/]" in rows[-2]
        assert "\x1b" not in rows[-2] and "␛[31m" in rows[-2]
        assert len(rows[-1]) < 5000  # huge lines are truncated for display
        strip = log.render_line(len(log.view_rows) - 2 - int(log.scroll_offset.y))
        assert "[bold red]" in "".join(seg.text for seg in strip)


@pytest.fixture(autouse=True)
def _no_leftover_sims(monkeypatch):
    """Whatever a failing test leaves, the simulators it launched are stopped (they run detached)."""
    apps = []
    import eagletui.commands.demo as demo

    real = demo.build_app

    def tracking(*a, **kw):
        app = real(*a, **kw)
        apps.append(app)
        return app

    monkeypatch.setattr(demo, "build_app", tracking)
    monkeypatch.setitem(globals(), "build_app", tracking)
    yield
    for app in apps:
        demo._cleanup(app)
