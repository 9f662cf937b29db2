"""What ``eagletui connect`` says about the server on exit follows the launch's real state (issue 13)."""

from __future__ import annotations

from eagletui.commands.connect import exit_note
from eagletui.core.events import LaunchStarted, ProcessExited, ServerReady, ServerStopped
from eagletui.core.state import SessionState


def _state(*events) -> SessionState:
    s = SessionState(target="local")
    s.apply(LaunchStarted(launch=1, target="local", config={}))
    for ev in events:
        s.apply(ev)
    return s


def test_a_stopped_server_is_not_said_to_keep_running() -> None:
    s = _state(
        ServerStopped(reason="stopped by user", launch=1), ProcessExited(code=0, signal=15, pid=9, launch=1)
    )
    note = exit_note("r1", s.launches[1].status, "local", "/runs/r1/server.log")
    assert "was stopped" in note and "keeps running" not in note and "reattaches" not in note
    assert "/runs/r1/server.log" in note


def test_a_server_that_exited_on_its_own_is_not_said_to_keep_running() -> None:
    s = _state(ProcessExited(code=1, signal=None, pid=9, launch=1))
    note = exit_note("r1", s.launches[1].status, "gpu1")
    assert "keeps running" not in note and "exited" in note


def test_a_ready_server_keeps_running_and_can_be_reattached() -> None:
    s = _state(ServerReady(launch=1))
    note = exit_note("r1", s.launches[1].status, "gpu1")
    assert "keeps running on gpu1" in note and "'eagletui connect gpu1' reattaches" in note
