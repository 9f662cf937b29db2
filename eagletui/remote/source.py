"""The live event source for one launch: log tail + classifier + process watcher + staleness.

It turns "bytes in a file on some host" into the typed events the core consumes, and it is the
place that decides when silence means trouble: a quiet log during a weight load is normal for a
while, a quiet log with a dead process is a crash, and a quiet log while the link is down is
neither (the tail is reconnecting, so no ``LogStale`` is raised then).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from eagletui.core.events import ConnectionState, Event, LogLine, LogStale, Notice, ProcessExited
from eagletui.remote.control import RunInfo, ServerControl
from eagletui.remote.tail import LogTail
from eagletui.remote.transport import Transport, TransportError

#: Silence multipliers per phase: loads and warmup legitimately go quiet for longer; an idle
#: ready server is allowed to be silent forever.
PHASE_STALE_FACTOR: dict[str | None, float | None] = {
    "load_target": 2.0,
    "load_draft": 2.0,
    "warmup": 2.0,
    "ready": None,
}


class _LineSplitter:
    """Stand-in classifier used until ``eagletui.core.log_interpreter`` exists: plain LogLines."""

    class _State:
        phase: str | None = None

    def __init__(self, launch: int):
        self.launch = launch
        self.state = self._State()
        self._buf = b""
        self._seq = 0

    def _line(self, raw: bytes) -> LogLine:
        self._seq += 1
        return LogLine(text=raw.decode(errors="replace").rstrip("\r"), seq=self._seq, launch=self.launch)

    def feed_bytes(self, chunk: bytes) -> list[Event]:
        self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        return [self._line(x) for x in lines]

    def flush(self) -> list[Event]:
        out = [self._line(self._buf)] if self._buf else []
        self._buf = b""
        return out


def make_interpreter(launch: int) -> Any:
    try:
        from eagletui.core.log_interpreter import LogInterpreter
    except ImportError:
        return _LineSplitter(launch)
    return LogInterpreter(launch=launch)


class LiveSource:
    def __init__(
        self,
        transport: Transport,
        control: ServerControl,
        run: RunInfo,
        *,
        stale_after: float = 120.0,
        poll_interval: float = 1.0,
    ):
        self.transport = transport
        self.control = control
        self.run = run
        self.stale_after = stale_after
        self.poll_interval = poll_interval
        self.interp = make_interpreter(run.launch)
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._last_data = time.monotonic()
        self._link_up = True
        self._stale_sent = False
        self._stopped = False
        self._tasks: list[asyncio.Task[Any]] = []
        self.tail = LogTail(
            transport,
            run.log_path,
            on_state=self._on_state,
            on_reset=self._on_reset,
            python=control.python,
        )

    def _on_state(self, ev: ConnectionState) -> None:
        self._link_up = ev.state == "connected"
        if self._link_up:
            self._last_data = time.monotonic()  # silence while disconnected is not the server's
        self._queue.put_nowait(ev)

    def _on_reset(self, reason: str) -> None:
        self._queue.put_nowait(
            Notice(level="warning", message=f"log file {reason}: reading it from the start", source="tail")
        )

    def _emit(self, events: list[Event]) -> None:
        for ev in events:
            self._queue.put_nowait(ev)

    async def _tail_loop(self) -> None:
        async for _off, data in self.tail.chunks():
            self._last_data = time.monotonic()
            self._stale_sent = False
            self._emit(self.interp.feed_bytes(data))

    def _stale_limit(self) -> float | None:
        phase = self.interp.state.phase
        factor = PHASE_STALE_FACTOR.get(phase, 1.0)
        return None if factor is None else self.stale_after * factor

    async def _drain_tail(self, settle: float = 0.3, limit: float = 5.0) -> None:
        """After the process died, give the tail time to deliver the last bytes (the crash message)."""
        size = None
        with contextlib.suppress(TransportError, OSError):
            res = await self.transport.run(["stat", "-c", "%s", self.run.log_path], timeout=10)
            if res.exit_status == 0:
                size = int(res.stdout.strip())
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            quiet = time.monotonic() - self._last_data >= settle
            if quiet and (size is None or self.tail.offset >= size):
                break
            await asyncio.sleep(0.05)

    async def _watch_loop(self) -> None:
        while not self._stopped:
            await asyncio.sleep(self.poll_interval)
            try:
                alive = await self.control.is_alive(self.run)
            except (TransportError, OSError):
                continue  # the tail reports the link state; try again next tick
            if not alive:
                await self._drain_tail()
                self.tail.stop()
                self._emit(self.interp.flush())
                code = sig = None
                with contextlib.suppress(TransportError, OSError):
                    code, sig = await self.control.exit_info(self.run)
                self.run.alive = False
                self._queue.put_nowait(
                    ProcessExited(code=code, signal=sig, pid=self.run.pid, launch=self.run.launch)
                )
                return
            limit = self._stale_limit()
            silent = time.monotonic() - self._last_data
            if limit is not None and self._link_up and not self._stale_sent and silent > limit:
                self._stale_sent = True
                self._queue.put_nowait(
                    LogStale(seconds=round(silent, 1), phase=self.interp.state.phase, launch=self.run.launch)
                )

    async def events(self) -> AsyncIterator[Event]:
        tail_task = asyncio.create_task(self._tail_loop())
        watch_task = asyncio.create_task(self._watch_loop())
        self._tasks = [tail_task, watch_task]
        watch_task.add_done_callback(lambda _t: self._queue.put_nowait(None))
        try:
            while True:
                ev = await self._queue.get()
                if ev is None:
                    break
                yield ev
            while not self._queue.empty():
                ev = self._queue.get_nowait()
                if ev is not None:
                    yield ev
        finally:
            self.stop()

    def stop(self) -> None:
        self._stopped = True
        self.tail.stop()
        for t in self._tasks:
            if not t.done():
                t.cancel()
