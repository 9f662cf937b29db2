"""Issue 33 item 13: ``eagletui demo`` quit when the host-side stop fails. The real demo simulator,
the real runs dir made unusable the way a hostile host makes it (group/other-writable: the host
program refuses it, as OpenSSH's StrictModes would), and a real recording file removed under the
session. The simulator was left running and "session recorded to" named a file that was gone."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from eagletui.commands import demo
from eagletui.config import UserConfig
from eagletui.session.record import Recorder
from tests.test_ui_confirm_and_quit_live import slow_profile
from tests.test_ui_demo import pid_alive, wait_for

pytestmark = pytest.mark.slow


def test_the_demo_server_is_stopped_on_quit_even_when_the_host_side_stop_fails(
    tmp_path: Path, capsys
) -> None:
    rec = Recorder(tmp_path / "s.jsonl", target="local", profile_name="demo")
    app = demo.build_app(slow_profile(tmp_path, 0.004), UserConfig(record=False), recorder=rec, preflight=False)
    runs = Path()

    async def session() -> int:
        nonlocal runs
        async with app.run_test(size=(160, 50)) as pilot:
            assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state
            runs = Path(app.workspace.control.runs_dir)
            os.chmod(runs, 0o777)  # the host program now refuses the runs dir: every host-side stop fails
            pid = app.workspace.run.pid
            await pilot.press("q")
            await pilot.pause(1)
            return pid

    pid = asyncio.run(session())
    try:
        assert pid_alive(pid)  # the host-side stop on quit failed, as on the host
        (tmp_path / "s.jsonl").unlink()  # and the recording is gone (a temp dir removed, a cleaner)
        assert demo._cleanup(app) == 0
        err = capsys.readouterr().err
        assert not pid_alive(pid), err
        assert "killing it directly" in err
        assert "session recorded to" not in err and "session not recorded" in err
    finally:
        os.chmod(runs, 0o700)
        if pid_alive(pid):
            os.killpg(os.getpgid(pid), 9)


def test_a_recording_that_lost_events_says_so(tmp_path: Path) -> None:
    """Issue 33 item 10: events lost after the recording stopped are counted and said."""
    from eagletui.core.events import Notice

    rec = Recorder(tmp_path / "s.jsonl", target="local", profile_name="demo")
    rec.write(Notice(message="kept"))
    assert rec.outcome() == (f"session recorded to {rec.path}", True)
    rec.error = "recording stopped: No space left on device (test)"
    rec._close_fd()  # what a write error other than ENOSPC does
    rec.write(Notice(message="lost"))
    said, whole = rec.outcome()
    assert not whole and "1 event(s) could not be written" in said and "No space left" in said
