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
