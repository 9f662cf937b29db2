"""Waiting on the session model: until the current launch is ready (or has failed), or its exit is known.

One copy for the headless commands and the sweep runner: both watch the same model fold, so "ready"
and "failed before ready" mean the same in ``bench``, ``sweep`` and the UI. Every wait has a bound and
polls at the timings' ``session.ready_poll_s`` on the timings' clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eagletui.core.state.launch import ServerState

if TYPE_CHECKING:
    from eagletui.core.timings import Timings
    from eagletui.session.model import SessionModel


async def wait_ready(model: SessionModel, timeout: float, timings: Timings) -> tuple[str, str]:
    """Until the phase machine says the current launch serves: ("", "") then, else (kind, why): the
    failure's kind and message, ``exited`` for a process that ended before it was ready, ``timeout``."""
    clock = timings.clock
    deadline = clock.monotonic() + timeout
    while clock.monotonic() < deadline:
        la = model.state.launch
        status = la.status if la is not None else None
        if status == ServerState.READY:
            return "", ""
        if la is not None and status in (ServerState.FAILED, ServerState.EXITED, ServerState.STOPPED):
            if la.failure is not None:
                return la.failure.kind, la.failure.message
            return "exited", "the server process exited before it was ready"
        await clock.sleep(timings.session.ready_poll_s)
    return "timeout", f"not ready after {timeout:.0f}s"


def why_not_ready(kind: str, why: str) -> str:
    """:func:`wait_ready`'s answer as one sentence ("" when ready)."""
    if not kind:
        return ""
    return why if kind in ("exited", "timeout") else f"failed ({kind}): {why}"


async def wait_exit(model: SessionModel, timeout: float, timings: Timings) -> bool:
    """Until the current launch's process exit is known (True), or ``timeout`` (a hung server)."""
    clock = timings.clock
    deadline = clock.monotonic() + timeout
    while clock.monotonic() < deadline:
        la = model.state.launch
        if la is not None and (la.exit_code is not None or la.exit_signal is not None):
            return True
        await clock.sleep(timings.session.ready_poll_s)
    return False
