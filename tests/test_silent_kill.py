"""Issue 20 item 8: a death with no log line (``kill -9`` during weight loading: what the host OOM
killer does) is triaged at any phase, and every view agrees the launch failed: the live state and
its failure box, the run book, the export and ``eagletui sessions``. Also when the launcher's waiter
died too and the run dir holds no exit record. The real simulator, real signals, real files."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from eagletui.core.runs.run import RunOutcome
from eagletui.core.state.launch import ServerState
from eagletui.core.timings import FAST
from eagletui.session.model import SessionModel
from eagletui.session.record import Recorder
from eagletui.workspace import Workspace
from tests.conftest_fault import Collector, fault_profile, wait_pid_gone

pytestmark = pytest.mark.slow


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def _kill_during_load(tmp_path: Path, *, waiter_too: bool) -> tuple[SessionModel, Collector, Path]:
    prof = fault_profile(tmp_path / "p", time_scale=0.2)  # weight loading lasts a few seconds
    rec = Recorder.create(tmp_path / "sessions", target="local", profile_name=prof.name)
    model = SessionModel(target="local", profile=prof, recorder=rec, learn_history=False)
    got = Collector(model.dispatch)
    ws = Workspace(prof, got, target="local", preflight=False, timings=FAST)
    await ws.connect()
    try:
        await ws.launch()
        await got.wait(
            lambda e: e.type == "phase_started" and e.phase == "load_target", 60, what="weight loading"
        )
        assert ws.run is not None
        pid = ws.run.pid
        if waiter_too:  # the launcher's waiter (the server's parent) first: no exit record is written
            os.kill(_ppid(pid), signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
        assert wait_pid_gone(pid)
        await got.wait(lambda e: e.type == "process_exited", 30, what="the exit")
    finally:
        await ws.close()
        model.close()
    return model, got, rec.path


def _cli(*argv: str, tmp: Path) -> str:
    env = {**os.environ, "EAGLETUI_CONFIG_DIR": str(tmp / "config")}
    out = subprocess.run(
        [sys.executable, "-m", "eagletui", *argv], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("waiter_too", [False, True], ids=["sigkill", "sigkill-waiter-too"])
def test_a_silent_kill_during_weight_loading_is_triaged_everywhere(tmp_path: Path, waiter_too: bool) -> None:
    model, got, recording = asyncio.run(_kill_during_load(tmp_path, waiter_too=waiter_too))
    [failed] = got.of("server_failed")
    assert failed.kind == "died" and failed.phase == "load_target"
    if waiter_too:
        assert (
            failed.message == "the server process ended during target weight loading and left no exit status"
        )
    else:
        assert failed.message == "killed by signal 9 (SIGKILL) during target weight loading"
    assert "OOM killer" in failed.hint and "dmesg" in failed.hint
    # the triage comes before the exit, so the fold keeps it as the cause
    assert got.events.index(failed) < got.events.index(got.of("process_exited")[0])
    la = model.state.launch
    assert la is not None and la.status == ServerState.FAILED and la.failure == failed  # the failure box
    assert model.runbook.runs[1].outcome == RunOutcome.FAILED
    # the export and the sessions list read the recording the same way
    doc = json.loads(_cli("export", str(recording), "--format", "json", tmp=tmp_path))
    [run] = doc["runs"]
    assert run["outcome"] == "failed" and run["failure_kind"] == "died"
    [listed] = json.loads(_cli("sessions", str(recording.parent), "--json", tmp=tmp_path))
    assert listed["launches"] == 1 and listed["failures"] == 1


def _old_recording(tmp: Path) -> Path:
    """As eagletui recorded a SIGKILL before the live triage: the phases, then only the exit."""
    from eagletui.core import events as ev
    from eagletui.session.format import make_header, write_session

    t = 1_795_000_000.0
    events = [
        ev.LaunchStarted(launch=1, target="local", config={"args": {"--tp": 8}}, wall=t, mono=1.0),
        ev.PhaseStarted(phase="launch", launch=1, wall=t + 1, mono=2.0),
        ev.PhaseFinished(phase="launch", launch=1, seconds=1.0, wall=t + 2, mono=3.0),
        ev.PhaseStarted(phase="load_target", launch=1, wall=t + 2, mono=3.0),
        ev.ProcessExited(signal=9, pid=4242, launch=1, wall=t + 30, mono=31.0),
    ]
    header = make_header("local", "p")
    header.pop("keyframes", None)
    (tmp / "old").mkdir()
    return write_session(tmp / "old" / "old.jsonl", header, events)


async def test_an_old_recording_of_a_silent_kill_reads_as_failed_everywhere(tmp_path: Path) -> None:
    from eagletui.session.format import read_session
    from eagletui.ui.widgets.phases import PhasePanel
    from tests.replay_apps import replay_app

    path = _old_recording(tmp_path)
    _h, events, _w = read_session(path)
    app = replay_app(events)
    async with app.run_test(size=(200, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        app.repaint_now()
        await pilot.pause()
        la = app.state.launch
        assert la is not None and la.status == ServerState.FAILED
        assert (
            la.failure is not None
            and la.failure.message == "killed by signal 9 (SIGKILL) during target weight loading"
        )
        box = str(app.query_one("#phase-failure").render())
        assert "killed by signal 9" in box and "OOM killer" in box, box
        assert app.query_one(PhasePanel).has_class("failed")
    doc = json.loads(_cli("export", str(path), "--format", "json", tmp=tmp_path))
    assert doc["runs"][0]["outcome"] == "failed"
    [listed] = json.loads(_cli("sessions", str(path.parent), "--json", tmp=tmp_path))
    assert listed["failures"] == 1
