"""Byte-exact, reconnecting log tail.

The client owns the offset: a host-side reader (stdlib Python, inotify when available, a short poll
otherwise) sends framed chunks tagged with their file offset, and the client only advances its
offset when a whole frame arrived. After a dropped connection the reader is restarted at that offset,
so nothing is lost or repeated — including a half-written line — and a rotated or truncated file is
reported instead of silently producing garbage. The reader exits when its stdin closes, so dropped
channels never leave orphan tails on the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from eagletui.core.events import ConnectionState
from eagletui.core.timings import Timings
from eagletui.remote import hosttail
from eagletui.remote.transport import StateCallback, Transport, TransportError, host_program

# Frames as hosttail.op_tail writes them.
HEADER = struct.Struct(">cQI")
FRAME_KINDS = frozenset(b"DIWTHE"[i : i + 1] for i in range(6))
MAX_FRAME = 8 << 20
#: Chunks waiting for the consumer: when it is behind, the pump stops reading, the pipe or SSH
#: window fills and the host-side reader blocks. Memory stays ~QUEUE_CHUNKS × hosttail.CHUNK.
QUEUE_CHUNKS = 16

TransportSource = Transport | Callable[[], Awaitable[Transport]]


class LogRefused(Exception):
    """The host-side reader will not read the log (a symbolic link, or not the user's file, in a run
    dir of eagletui's): final, never retried, and said to the user."""


class LogTail:
    """Yields ``(offset, bytes)``; an offset lower than the previous chunk's end means the file was reset."""

    def __init__(
        self,
        transport_factory: TransportSource,
        path: str,
        *,
        start_offset: int = 0,
        on_state: StateCallback | None = None,
        on_reset: Callable[[str], None] | None = None,
        python: str = "python3",
        timings: Timings,
        own: bool = False,
    ):
        self._source = transport_factory
        self.path = path
        #: the log of a run eagletui started: read only if it is the user's own regular file
        self.own = own
        self.offset = start_offset
        self.inode = 0
        self.device = 0
        #: The last bytes delivered: the reader checks the file still holds them before reading on,
        #: so a truncate-and-rewrite that outgrew the offset is caught (size alone cannot tell).
        self._anchor = b""
        self.on_state = on_state
        self.on_reset = on_reset
        self.python = python
        self.backoff_initial = timings.link.backoff_initial_s
        self.backoff_max = timings.link.backoff_max_s
        self.clock = timings.clock
        self.reconnects = 0
        self.resets = 0
        self.file_missing = False
        #: monotonic time of the last frame (data or heartbeat): tells "silent log" from "dead link".
        self.last_frame = 0.0
        self._stopped = False
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=QUEUE_CHUNKS)
        self._task: asyncio.Task[None] | None = None
        self._owned: Transport | None = None

    def _state(self, state: str, detail: str = "", retry_in: float | None = None) -> None:
        if self.on_state is not None:
            target = getattr(self._owned or self._source, "target", "")
            self.on_state(ConnectionState(state=state, target=target, detail=detail, retry_in=retry_in))

    async def _transport(self) -> Transport:
        if hasattr(self._source, "stream"):
            return self._source  # type: ignore[return-value]
        if self._owned is not None:
            with contextlib.suppress(Exception):
                await self._owned.close()
            self._owned = None
        self._owned = await self._source()  # type: ignore[operator]
        return self._owned

    async def _pump(self) -> None:
        attempt = 0
        loop = asyncio.get_running_loop()
        try:
            while not self._stopped:
                detail = "reader exited"
                try:
                    transport = await self._transport()
                    anchor = bytes(self._anchor)
                    argv = host_program(
                        self.python,
                        "tail",
                        self.path,
                        str(self.offset),
                        str(self.inode),
                        str(self.device),
                        str(len(anchor)),
                        str(hosttail.anchor_crc(anchor)),
                        *(["own"] if self.own else []),
                    )
                    buf = bytearray()
                    async with contextlib.aclosing(transport.stream(argv)) as stream:  # type: ignore[type-var]
                        async for raw in stream:
                            buf += raw
                            self.last_frame = loop.time()
                            while len(buf) >= HEADER.size:
                                kind, a, n = HEADER.unpack_from(buf)
                                if kind not in FRAME_KINDS or n > MAX_FRAME:
                                    raise TransportError(
                                        "unexpected output from the remote shell before the log reader "
                                        "(check ~/.bashrc / ~/.profile for commands that print)"
                                    )
                                if len(buf) < HEADER.size + n:
                                    break
                                payload = bytes(buf[HEADER.size : HEADER.size + n])
                                del buf[: HEADER.size + n]
                                attempt = await self._frame(kind, a, payload, attempt)
                except (TransportError, OSError) as exc:
                    detail = str(exc) or type(exc).__name__
                if self._stopped:
                    break
                delay = min(self.backoff_max, self.backoff_initial * (2**attempt))
                attempt += 1
                self.reconnects += 1
                self._state("lost", detail)
                self._state("reconnecting", detail, retry_in=delay)
                await self.clock.sleep(delay)
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                self._queue.put_nowait(None)

    async def _frame(self, kind: bytes, a: int, payload: bytes, attempt: int) -> int:
        if kind == b"D":
            if a + len(payload) <= self.offset:
                return attempt  # already delivered (cannot happen with one reader; cheap insurance)
            if a < self.offset:
                payload = payload[self.offset - a :]
                a = self.offset
            self.offset = a + len(payload)
            self._anchor = (self._anchor + payload[-hosttail.ANCHOR :])[-hosttail.ANCHOR :]
            await self._queue.put((a, payload))
        elif kind == b"I":
            if attempt or self.reconnects == 0 or self.file_missing:
                self._state("connected", self.path)
            self.inode = a
            self.device = int(payload or b"0")
            self.file_missing = False
            attempt = 0
        elif kind == b"T":
            self.offset = a
            self._anchor = b""
            self.resets += 1
            if self.on_reset is not None:
                self.on_reset(payload.decode(errors="replace"))
        elif kind == b"W":
            self.file_missing = True
            attempt = 0
        elif kind == b"E":
            raise LogRefused(f"not reading the log {self.path}: {payload.decode(errors='replace')}")
        return attempt

    async def chunks(self) -> AsyncIterator[tuple[int, bytes]]:
        if self._task is None:
            self._task = asyncio.create_task(self._pump())
        try:
            while True:
                item = await self._queue.get()
                if item is None:
                    break
                yield item
        finally:
            self.stop()
        # the reader's pump ended on its own with an error it does not retry: say so, not just stop
        task = self._task
        if task is not None and task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]

    async def wait_closed(self) -> None:
        """Let the cancelled pump finish its cleanup (closing the remote reader) before moving on."""
        if self._task is not None:
            # asyncio.wait raises only a cancellation of ours (never the pump's own); its failure is
            # chunks()'s to raise, and marked read here for when nobody iterates any more
            await asyncio.wait({self._task})
            if not self._task.cancelled():
                self._task.exception()

    def stop(self) -> None:
        # Cancel the pump once: a second cancel (chunks() ends by calling stop() too) would interrupt
        # the reader's cleanup halfway and leave its process and pipes to the garbage collector.
        first = not self._stopped
        self._stopped = True
        if first and self._task is not None and not self._task.done():
            self._task.cancel()
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)
        if self._owned is not None:
            owned, self._owned = self._owned, None
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().create_task(owned.close())
