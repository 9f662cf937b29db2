"""The live event source for one launch: log tail + classifier + process watcher + staleness.

It turns "bytes in a file on some host" into the typed events the core consumes, and it is the
place that decides when silence means trouble: a quiet log during a weight load is normal for a
while, a quiet log with a dead process is a crash, and a quiet log while the link is down is
neither (the tail is reconnecting, so no ``LogStale`` is raised then).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from eagletui.core.events import (
    ConnectionState,
    Event,
    LaunchDetected,
    LogLine,
    LogStale,
    Notice,
    PhaseStarted,
    ProcessExited,
    ServerReady,
)
from eagletui.core.timings import Timings
from eagletui.remote.control import Liveness, RunInfo
from eagletui.remote.launcher import Launcher
from eagletui.remote.tail import LogTail
from eagletui.remote.transport import Transport, TransportError

#: Silence multipliers per phase: loads and warmup legitimately go quiet for longer; an idle
#: ready server is allowed to be silent forever.
PHASE_STALE_FACTOR: dict[str | None, float | None] = {
    "load_target": 2.0,
    "load_draft": 2.0,
    "compile": 2.0,
    "warmup": 2.0,
    "ready": None,
}


#: Events waiting for the consumer before the tail stops reading (the host-side reader then blocks).
QUEUE_EVENTS = 8192
#: A longer line is cut here with a marker; the rest of it is skipped up to its newline, never held.
MAX_LINE_BYTES = 256 * 1024
#: Liveness checks that may fail in a row before the user is told the server cannot be watched.
UNKNOWN_NOTICE_AFTER = 5


class LineLimiter:
    """Cuts lines longer than ``limit`` bytes, marking the cut; a huge or binary line costs O(limit).

    Works on the byte stream before decoding, so a 2 GB line without a newline is streamed through
    in chunks and dropped, rather than accumulated by whatever splits lines downstream.
    """

    def __init__(self, limit: int = MAX_LINE_BYTES):
        self.limit = limit
        self.cur = 0  # bytes of the current (unfinished) line passed on
        self.dropped = 0  # bytes of the current line skipped since the cut
        self.cuts = 0

    def _marker(self) -> bytes:
        return f" …[eagletui: line cut, {self.dropped} more bytes skipped]\n".encode()

    def feed(self, data: bytes) -> bytes:
        if not self.dropped and self.cur + len(data) <= self.limit:
            nl = data.rfind(b"\n")
            self.cur = len(data) - nl - 1 if nl >= 0 else self.cur + len(data)
            return data
        parts = data.split(b"\n")
        if (
            not self.dropped
            and self.cur + len(parts[0]) <= self.limit
            and (len(parts) == 1 or max(map(len, parts[1:])) <= self.limit)
        ):
            self.cur = len(parts[-1]) if len(parts) > 1 else self.cur + len(parts[0])
            return data
        out: list[bytes] = []
        last = len(parts) - 1
        for i, part in enumerate(parts):
            ended = i < last  # a newline follows this part
            if self.dropped:
                self.dropped += len(part)
            else:
                room = self.limit - self.cur
                if len(part) <= room:
                    out.append(part)
                    self.cur += len(part)
                else:
                    out.append(part[:room])
                    self.dropped = len(part) - room
                    self.cuts += 1
            if ended:
                if self.dropped:
                    out.append(self._marker())
                else:
                    out.append(b"\n")
                self.cur = 0
                self.dropped = 0
        return b"".join(out)


class _LineSplitter:
    """Stand-in classifier used until ``eagletui.core.phases.interpreter`` exists: plain LogLines."""

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
        out: list[Event] = [self._line(self._buf)] if self._buf else []
        self._buf = b""
        return out


#: Prints a file's size on the host (``~`` expanded as the tail's reader does); stdlib only.
_SIZE = "import os,sys; print(os.path.getsize(os.path.expanduser(sys.argv[1])))"


class Backlog:
    """What a log already held when eagletui found its run running (a reattach): the interpreter reads it
    from the start to rebuild the launch's story, but those lines are history. A server-args line in
    them is the launch itself, long ago, never a restart during a benchmark that runs now (issue 31:
    every headless ``bench`` of a server eagletui had launched was thrown away as "restarted").

    ``end`` is the log's size when the run was found (None: not known, and nothing is marked)."""

    def __init__(self, end: int | None) -> None:
        self.end = end

    @classmethod
    async def measure(cls, transport: Transport, python: str, path: str, timings: Timings) -> Backlog:
        """The log's size on the host now; unknown (nothing marked) when it cannot be read."""
        with contextlib.suppress(TransportError, OSError, TimeoutError, ValueError):
            res = await transport.run([python, "-c", _SIZE, path], timeout=timings.watch.stat_s)
            if res.exit_status == 0:
                return cls(int(res.stdout.strip().splitlines()[-1]))
        return cls(None)

    def split(self, off: int, data: bytes) -> tuple[bytes, bytes]:
        """``data`` (read at ``off``) as (the part written before the run was found, the rest)."""
        if self.end is None or off >= self.end:
            return b"", data
        cut = self.end - off
        return data[:cut], data[cut:]

    @staticmethod
    def mark(events: list[Event]) -> list[Event]:
        return [dataclasses.replace(e, history=True) if isinstance(e, LaunchDetected) else e for e in events]


class StartClock:
    """Times a run found running from its real start: the host's /proc knows when the leader started
    (``RunInfo.started_clock``, its local time of day) and the log's timestamps tell when the first
    line and the ready line were written, on the same clock. A reattach otherwise counts start-up from
    the first log line (issue 31: "elapsed 50.0s" for a launch that took 80 s: imports come first).

    Fills ``since_start`` of the first line's ``PhaseStarted`` (``launch``), the ready one's and the
    ``ServerReady`` after it. A value past ``started_ago`` (a server logging in another time zone) is
    dropped, never shown."""

    def __init__(self, fmt: Any, clock: float | None, ago: float | None) -> None:
        self.fmt = fmt if clock is not None and ago is not None else None
        self.clock = clock or 0.0
        self.ago = ago or 0.0
        self._ready: float | None = None

    def _since(self, log_time: str) -> float | None:
        ts = self.fmt.ts_seconds(log_time) if log_time and self.fmt is not None else None
        if ts is None:
            return None
        since = (ts % 86400 - self.clock) % 86400  # days apart: the time of day wraps at midnight
        return round(since, 3) if since <= self.ago + 2.0 else None  # 2 s: the stamps' resolution

    def stamp(self, events: list[Event]) -> list[Event]:
        if self.fmt is None:
            return events
        out = []
        for e in events:
            if isinstance(e, PhaseStarted) and e.phase in ("launch", "ready"):
                since = self._since(e.log_time)
                if e.phase == "ready":
                    self._ready = since
                e = dataclasses.replace(e, since_start=since) if since is not None else e
            elif isinstance(e, ServerReady) and self._ready is not None:
                e = dataclasses.replace(e, since_start=self._ready)
            out.append(e)
        return out


def make_interpreter(launch: int, log_format: str | None = None) -> Any:
    """The interpreter for one launch's log, in the server's log format (the default when None)."""
    try:
        from eagletui.core.logs.registry import get_format
        from eagletui.core.phases.interpreter import LogInterpreter
    except ImportError:
        return _LineSplitter(launch)
    return LogInterpreter(launch=launch, fmt=get_format(log_format))


class LiveSource:
    def __init__(
        self,
        transport: Transport,
        control: Launcher,
        run: RunInfo,
        *,
        timings: Timings,
        poll_s: float | None = None,
        log_format: str | None = None,
        history: bool = False,
    ):
        self.transport = transport
        self.control = control
        self.run = run
        self.timings = timings
        self.clock = timings.clock
        self.stale_after = timings.watch.stale_s
        self.poll_interval = timings.watch.poll_s if poll_s is None else poll_s
        self.interp = make_interpreter(run.launch, log_format)
        self.start_clock = StartClock(getattr(self.interp, "fmt", None), run.started_clock, run.started_ago)
        self.limiter = LineLimiter()
        # Unbounded for the rare control events (link state, notices, exit), which come from
        # callbacks that cannot wait; log events wait in _put until the consumer has caught up.
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._room = asyncio.Event()
        self._room.set()
        self.unknown_checks = 0
        self._last_data = self.clock.monotonic()
        self._link_up = True
        self._stale_sent = False
        self._stopped = False
        self._exit_expected = False
        self._tasks: list[asyncio.Task[Any]] = []
        #: a run found running: what its log held then is history (:class:`Backlog`)
        self.history = history
        self.tail = LogTail(
            transport,
            run.log_path,
            on_state=self._on_state,
            on_reset=self._on_reset,
            python=control.python,
            timings=timings,
            own=run.owned and bool(run.run_dir),
        )

    def _on_state(self, ev: ConnectionState) -> None:
        self._link_up = ev.state == "connected"
        if self._link_up:
            self._last_data = self.clock.monotonic()  # silence while disconnected is not the server's
        self._queue.put_nowait(ev)

    def _on_reset(self, reason: str) -> None:
        self._queue.put_nowait(
            Notice(level="warning", message=f"log file {reason}: reading it from the start", source="tail")
        )

    def _emit(self, events: list[Event]) -> None:
        for ev in events:
            self._queue.put_nowait(ev)

    async def _put(self, events: list[Event]) -> None:
        """Queue log events, first waiting while the consumer is more than QUEUE_EVENTS behind."""
        while self._queue.qsize() >= QUEUE_EVENTS:
            self._room.clear()
            await self._room.wait()
        self._emit(self.start_clock.stamp(events))

    async def _backlog(self, path: str) -> Backlog:
        if not self.history:
            return Backlog(None)
        return await Backlog.measure(self.transport, self.control.python, path, self.timings)

    async def _tail_loop(self) -> None:
        end = self.tail.offset
        backlog = await self._backlog(self.run.log_path)
        async for off, data in self.tail.chunks():
            self._last_data = self.clock.monotonic()
            self._stale_sent = False
            if off < end:  # the file was reset: the old file's unfinished line ends here
                await self._put(self.interp.flush())
                self.limiter = LineLimiter()
                backlog = Backlog(None)  # a new file: nothing in it predates us
            end = off + len(data)
            old, data = backlog.split(off, data)
            if old:
                await self._put(backlog.mark(self.interp.feed_bytes(self.limiter.feed(old))))
            await self._put(self.interp.feed_bytes(self.limiter.feed(data)))

    def _stale_limit(self) -> float | None:
        phase = self.interp.state.phase
        factor = PHASE_STALE_FACTOR.get(phase, 1.0)
        return None if factor is None else self.stale_after * factor

    async def _drain_tail(self) -> None:
        """After the process died, give the tail time to deliver the last bytes (the crash message)."""
        settle, limit = self.timings.watch.drain_settle_s, self.timings.watch.drain_limit_s
        size = None
        with contextlib.suppress(TransportError, OSError):
            res = await self.transport.run(
                ["stat", "-c", "%s", self.run.log_path], timeout=self.timings.watch.stat_s
            )
            if res.exit_status == 0:
                size = int(res.stdout.strip())
        clock = self.clock
        t0 = clock.monotonic()
        while clock.monotonic() - t0 < limit:
            quiet = clock.monotonic() - self._last_data >= settle
            if quiet and (size is None or self.tail.offset >= size):
                break
            await clock.sleep(0.05)

    async def _watch_loop(self) -> None:
        while not self._stopped:
            await self.clock.sleep(self.poll_interval)
            try:
                state = await self.control.liveness(self.run)
            except (TransportError, OSError, TimeoutError) as exc:
                self.control.last_check_detail = str(exc)
                state = Liveness.UNKNOWN
            if state is Liveness.UNKNOWN:
                # The check failed, not the server: never act on it; tell the user if it persists.
                self.unknown_checks += 1
                if self.unknown_checks == UNKNOWN_NOTICE_AFTER:
                    self._queue.put_nowait(
                        Notice(
                            level="warning",
                            message=f"cannot check whether the server (pid {self.run.pid}) is running: "
                            f"{self.control.last_check_detail}; still trying",
                            source="watch",
                        )
                    )
                continue
            self.unknown_checks = 0
            if state is Liveness.DEAD:
                await self._drain_tail()
                self.tail.stop()
                self._emit(self.interp.flush())
                code = sig = None
                with contextlib.suppress(TransportError, OSError):
                    code, sig = await self.control.exit_info(self.run)
                self.run.alive = False
                if self._exit_expected:
                    return  # stopped by eagletui: the workspace reports the stop and the exit itself
                # a death no log line explained (a SIGKILL prints nothing) is triaged here, at any phase
                triage = getattr(self.interp, "process_exited", None)
                if triage is not None:
                    self._emit(triage(code, sig))
                self._queue.put_nowait(
                    ProcessExited(code=code, signal=sig, pid=self.run.pid, launch=self.run.launch)
                )
                return
            limit = self._stale_limit()
            silent = self.clock.monotonic() - self._last_data
            if limit is not None and self._link_up and not self._stale_sent and silent > limit:
                self._stale_sent = True
                self._queue.put_nowait(
                    LogStale(seconds=round(silent, 1), phase=self.interp.state.phase, launch=self.run.launch)
                )

    async def events(self) -> AsyncIterator[Event]:
        from eagletui.remote import tasks

        launch = self.run.launch
        # a failure of either is a TaskFailed in the stream (recorded, shown), never a silent stop;
        # the log can stop while the process watch goes on, but without the watch the source ends
        tail_task = tasks.start(self._tail_loop(), "log tail", self._queue.put_nowait, launch=launch)
        watch_task = tasks.start(self._watch_loop(), "process watch", self._queue.put_nowait, launch=launch)
        self._tasks = [tail_task, watch_task]
        watch_task.add_done_callback(lambda _t: self._queue.put_nowait(None))
        try:
            while True:
                ev = await self._queue.get()
                if self._queue.qsize() < QUEUE_EVENTS // 2:
                    self._room.set()
                if ev is None:
                    break
                yield ev
            while not self._queue.empty():
                ev = self._queue.get_nowait()
                if ev is not None:
                    yield ev
        finally:
            self.stop()

    def expect_exit(self, expected: bool = True) -> None:
        """eagletui is stopping this server: its exit is a stop, reported by the workspace, not a
        death to triage (the watch may see it dead before the stop returns). ``False`` when the
        stop failed: a later death is the watch's to report again."""
        self._exit_expected = expected

    def stop(self) -> None:
        self._stopped = True
        self.tail.stop()
        for t in self._tasks:
            if not t.done():
                t.cancel()
