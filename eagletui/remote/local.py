"""The local machine as a :class:`~eagletui.remote.transport.Transport` (``eagletui demo``, tests).

Commands get the same treatment as over SSH (a list is exec'd verbatim, a string goes to ``sh -c``),
so code that works here does not silently depend on local-only behaviour such as ``~`` expansion.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator

from eagletui.core.events import ConnectionState
from eagletui.core.timings import REAL, Timings
from eagletui.remote.transport import CommandResult, StateCallback


class LocalTransport:
    """Commands and streams on this machine. ``timings`` bounds a command without a timeout of its own
    and a kill's wait; a command or the app passes its own (the real ones are the default, so a test's
    ``LocalTransport()`` is the user's)."""

    target = "local"

    def __init__(self, on_state: StateCallback | None = None, *, timings: Timings = REAL):
        self.on_state = on_state
        self.timings = timings
        self._procs: set[asyncio.subprocess.Process] = set()

    def emit_state(self, state: str, detail: str = "") -> None:
        if self.on_state is not None:
            self.on_state(ConnectionState(state=state, target=self.target, detail=detail))

    async def _spawn(self, argv: list[str] | str, **kw) -> asyncio.subprocess.Process:
        if isinstance(argv, str):
            return await asyncio.create_subprocess_exec("/bin/sh", "-c", argv, **kw)
        return await asyncio.create_subprocess_exec(*argv, **kw)

    async def run(
        self, argv: list[str] | str, *, timeout: float | None = None, input: str | None = None
    ) -> CommandResult:
        timeout = self.timings.link.command_s if timeout is None else timeout
        try:
            proc = await self._spawn(
                argv,
                stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                # its own process group: a timeout kills what it started too (a hung nvidia-smi's
                # helper would otherwise hold the pipe open, and this wait, for as long as it lives)
                start_new_session=True,
            )
        except OSError as exc:  # e.g. the executable does not exist: same shape as sh's 127
            return CommandResult(127, "", str(exc))
        try:
            async with asyncio.timeout(timeout):
                out, err = await proc.communicate(input.encode() if input is not None else None)
        except (TimeoutError, asyncio.CancelledError):
            _kill_group(proc)
            # bounded: a child that left the group (setsid) may still hold the pipes; they are
            # closed below, and the timeout is the caller's answer either way (a cancellation of the
            # caller meanwhile is raised instead: a SIGTERM is never turned into a timeout)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.timings.link.kill_wait_s):
                    await asyncio.shield(proc.wait())
            raise
        finally:
            _close_pipes(proc)
        return CommandResult(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))

    async def stream(self, argv: list[str] | str) -> AsyncIterator[bytes]:
        # stdin is a pipe we close on exit: readers that watch stdin for EOF stop with us, like over SSH.
        proc = await self._spawn(
            argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        self._procs.add(proc)
        try:
            assert proc.stdout is not None
            while True:
                chunk = await proc.stdout.read(65536)
                if not chunk:
                    break
                yield chunk
            await proc.wait()
        finally:
            self._procs.discard(proc)
            try:
                if proc.returncode is None:
                    with contextlib.suppress(Exception):
                        assert proc.stdin is not None
                        proc.stdin.close()
                    with contextlib.suppress(ProcessLookupError):
                        proc.terminate()
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(self.timings.link.kill_wait_s):
                            await proc.wait()
            finally:  # even if a cancel cuts the wait short (closing the transport kills a live child)
                _close_pipes(proc)

    async def forward_port(self, remote_port: int, host: str = "127.0.0.1") -> int:
        return remote_port  # reached directly: the caller connects to ``host`` itself

    async def close(self) -> None:
        for proc in list(self._procs):
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.timings.link.kill_wait_s):
                    await proc.wait()
            _close_pipes(proc)
        self.emit_state("closed")

    @property
    def home(self) -> str:
        return os.path.expanduser("~")




def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's process group (it leads one: ``start_new_session``), else the command."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close a finished child's pipes now: left to the GC they are finalised after the event loop has
    closed, which prints "Event loop is closed" tracebacks after the test summary."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()
