"""SIGTERM, SIGHUP and Ctrl-C end a headless command alike: what it started is cleaned up, what it measured
is printed, and it exits non-zero.

Python's default for SIGTERM and SIGHUP kills the process on the spot: a ``bench --launch`` under
``timeout`` (or a CI cancel, or systemd stopping a unit) left its server holding the GPUs and printed
nothing (issue 31: a sweep, and ``bench --launch`` on the simulator, with empty stdout). Here the
first of these signals cancels the command's main task, as asyncio does for Ctrl-C: the command's own
``except CancelledError`` path (:func:`withdraw`) then stops what it started — or, for a sweep, says
the server keeps running and how to resume —, prints its JSON with an ``interrupted`` block and
returns :attr:`Interrupt.exit_code` (128 + the signal, as a shell reports it). Later signals are said
and ignored: a hang-up often comes twice, and the cleanup must not be cut halfway.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from eagletui.commands._headless import _say

QUIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


@dataclass
class Interrupt:
    """The signal that ended the command; ``signum`` None while none came."""

    signum: int | None = None
    #: what the command was doing when it came (the JSON's ``interrupted.during``)
    stage: str = ""

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum if self.signum is not None else signal.SIGINT)

    def to_json(self) -> dict[str, Any]:
        return {"signal": self.name, "during": self.stage or None, "exit_code": self.exit_code}


def withdraw(got: Interrupt) -> bool:
    """Called in an ``except asyncio.CancelledError`` block: True when one of :data:`QUIT_SIGNALS` asked
    for the cancellation, which is then withdrawn so the cleanup can await (stop the server, print);
    False for any other cancellation, which the caller re-raises."""
    if got.signum is None:
        return False
    task = asyncio.current_task()
    if task is not None:
        while task.cancelling():
            task.uncancel()
    return True


def run_headless(amain: Callable[[Interrupt], Coroutine[Any, Any, int]]) -> int:
    """``asyncio.run(amain(got))`` with :data:`QUIT_SIGNALS` turned into a cancellation of the main task
    (see the module docstring); the exit status ``amain`` returns, or 128 + the signal when the
    cancellation got out of it."""
    got = Interrupt()

    async def main() -> int:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()

        def on_signal(signum: int) -> None:
            if got.signum is not None:
                _say(f"eagletui: {signal.Signals(signum).name} again: still cleaning up what was started")
                return
            got.signum = signum
            _say(f"eagletui: {got.name}: stopping (what was started is cleaned up first)")
            if task is not None:
                task.cancel()

        installed = []
        for sig in QUIT_SIGNALS:
            try:
                loop.add_signal_handler(sig, on_signal, int(sig))
                installed.append(sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread: none
                pass
        try:
            return await amain(got)
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        return got.exit_code
