"""A run found running (a reattach, a headless ``bench`` without ``--launch``): what its log already held is
its past (issue 31 items 1 and 5).

Item 1: the backfilled server-args line is the launch itself, never "the server restarted during the run"
(real sglang 0.5.17: 3 of 3 headless benchmarks of a server eagletui had launched were thrown away); a
server-args line written after the run was found still is a restart.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from eagletui.core import events as ev
from eagletui.core.profile.model import Profile
from eagletui.core.runs.book import RunBook
from eagletui.core.timings import FAST
from eagletui.remote.control import ServerControl
from eagletui.remote.local import LocalTransport
from eagletui.remote.source import LiveSource

PY = sys.executable
ARGS_LINE = "[2026-12-01 22:03:45] server_args=ServerArgs(model_path='/m', tp_size=1, port=30000)"


def _bench(book: RunBook, during: list[ev.Event]) -> tuple[str, list[str]]:
    book.apply(ev.LaunchStarted(launch=1, target="local", config={"args": {"--tp": 1}}))
    book.apply(ev.ServerReady(launch=1))
    book.apply(ev.BenchmarkStarted(bench=1, launch=1))
    for e in during:
        book.apply(e)
    book.apply(ev.BenchmarkResult(bench=1, launch=1, output_throughput=100.0, requests=4, duration_s=2.0))
    return book.verdict_for(1)


def test_a_server_args_line_read_back_from_the_log_is_no_restart() -> None:
    verdict, reasons = _bench(RunBook(), [ev.LaunchDetected(launch=1, args={"tp_size": 1}, history=True)])
    assert verdict != "invalid", reasons
    verdict, reasons = _bench(RunBook(), [ev.LaunchDetected(launch=1, args={"tp_size": 1})])
    assert verdict == "invalid" and reasons[0] == "the server restarted during the run", reasons


@pytest.mark.slow
async def test_the_log_so_far_is_history_and_what_follows_is_not(tmp_path: Path) -> None:
    """A real process writes its server-args line, eagletui finds it running and follows it (``history``),
    then the process writes a second one (a restart in the same log): only the first is history."""
    go = tmp_path / "go"
    script = (
        "import os, sys, time\n"
        f"print({ARGS_LINE!r}, flush=True)\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        f"print({ARGS_LINE!r}, flush=True)\n"
        "time.sleep(30)\n"
    )
    runs = str(tmp_path / "runs")
    prof = Profile(command=(PY, "-c", script), python=PY, runs_dir=runs, workdir=str(tmp_path), port=39997)
    control = ServerControl(LocalTransport(), str(tmp_path / "runs"), python=PY, timings=FAST)
    run = await control.launch(prof, launch=1)
    try:
        deadline = time.monotonic() + 20
        while "server_args" not in Path(run.log_path).read_text():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        src = LiveSource(control.transport, control, run, poll_s=0.1, timings=FAST, history=True)
        seen: list[ev.LaunchDetected] = []

        async def follow() -> None:
            async for e in src.events():
                if isinstance(e, ev.LaunchDetected):
                    seen.append(e)
                    if len(seen) == 1:
                        go.touch()  # the process writes its second line only now: after we found it
                    else:
                        return

        await asyncio.wait_for(follow(), 20)
        src.stop()
        assert [e.history for e in seen] == [True, False]
    finally:
        await control.stop(run, grace=2)


# item 5: a reattach counts start-up from the run's real start ------------------------------------------


def test_a_run_found_running_is_timed_from_its_start_not_its_first_line() -> None:
    """As the real reattach of run 20261201-215702-L2-35513e: launched 80 s before ready, its first
    timestamped line 27 s after the start; found running 40 s after ready, the log read back at once."""
    from eagletui.core.state.screen import SessionState

    book, screen = RunBook(), SessionState()
    t0 = 1000.0
    found = [
        ev.LaunchStarted(launch=2, target="local", config={"args": {}}, started_ago=120.0, wall=t0, mono=t0),
        ev.PhaseStarted(phase="launch", launch=2, log_time="2026-12-01 21:57:29", since_start=27.0, wall=t0 + 0.1, mono=t0 + 0.1),
        ev.PhaseFinished(phase="launch", seconds=3.0, launch=2, wall=t0 + 0.1, mono=t0 + 0.1),
        ev.PhaseFinished(phase="load_target", seconds=47.0, launch=2, wall=t0 + 0.2, mono=t0 + 0.2),
        ev.ServerReady(launch=2, since_start=80.0, wall=t0 + 0.3, mono=t0 + 0.3),
    ]  # fmt: skip
    for e in found:
        book.apply(e)
        screen.apply(e)
    run, la = book.runs[2], screen.launches[2]
    assert run.ready_after == la.ready_after == 80.0  # not 50 (the phases), not 120 (now − start)
    assert run.before_first_line == la.before_first_line == 27.0
    assert run.phases["launch"] == la.phases["launch"].seconds == 30.0  # its log's 3 s + the 27 before
    assert run.started_wall == la.started == t0 - 120.0


def test_a_run_found_running_before_its_first_line_counts_from_its_start() -> None:
    """Found while it still imports: the phase panel's clock runs from the process start."""
    from eagletui.core.state.screen import SessionState
    from eagletui.ui.widgets.phases import launch_elapsed

    screen = SessionState()
    screen.apply(ev.LaunchStarted(launch=1, target="local", config={}, started_ago=30.0, wall=500.0, mono=5.0))
    assert launch_elapsed(screen.launches[1], 510.0) == pytest.approx(40.0)


@pytest.mark.slow
async def test_reattach_times_the_launch_from_the_host_record(tmp_path: Path) -> None:
    """End to end on the simulator: a launch whose imports take 2 s before its first line, found running
    later; the model says start to ready from the process start, as the log's clock and /proc tell it."""
    import re
    from datetime import datetime

    from eagletui.commands.demo import free_port
    from eagletui.core.profile.load import load_profile
    from eagletui.session.model import SessionModel
    from eagletui.workspace import Workspace
    from tests.conftest_sim import sim_profile_toml

    prof = load_profile(sim_profile_toml(tmp_path, free_port()))
    prof.env["EAGLETUI_SIM_IMPORT_DELAY"] = "2"
    control = ServerControl(LocalTransport(), str(tmp_path / "runs"), python=PY, timings=FAST)
    launched = time.time()
    run = await control.launch(prof, launch=1)
    try:
        log = Path(run.log_path)
        deadline = time.monotonic() + 60
        while "ready to roll" not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-2000:]
            await asyncio.sleep(0.1)
        await asyncio.sleep(3.0)  # found well after ready
        text = log.read_text(errors="replace")
        ready_line = re.search(r"\[([\d-]+ [\d:]+)\] The server is fired up", text)
        assert ready_line is not None
        ready_at = datetime.strptime(ready_line[1], "%Y-%m-%d %H:%M:%S").timestamp()
        expected = ready_at - launched  # the log's second resolution: ±1 s
        model = SessionModel(target="local", profile=prof)
        ws = Workspace(prof, model.dispatch, target="local", preflight=False, timings=FAST)
        await ws.connect()
        try:
            assert await ws.attach_newest()
            deadline = time.monotonic() + 20
            while model.runbook.runs.get(1) is None or model.runbook.runs[1].ready_after is None:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            got = model.runbook.runs[1].ready_after
            assert got == pytest.approx(expected, abs=1.5) and got >= 2.0, (got, expected)
            assert model.state.launches[1].ready_after == got
        finally:
            await ws.close()
            model.close()
    finally:
        await control.stop(run, grace=5)
