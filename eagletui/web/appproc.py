"""One eagletui app process behind one browser tab: :class:`AppProcess`.

The app draws through Textual's web driver (:mod:`eagletui.web.driver`), which speaks a framed
protocol on the process's pipes: after a ``__GANGLION__`` line, stdout carries packets of one type
byte (``D`` terminal data, ``M`` JSON meta, ``P`` packed binary), a 4-byte big-endian length and the
payload; stdin takes ``D`` (keys, mouse) and ``M`` (resize, focus, blur, quit) packets the same way.
That is textual-serve's ``AppService`` protocol; it is re-implemented here rather than subclassed
because eagletui needs what the stock class does not do: an argv without a shell, a process group
of its own, every read bounded (a packet's size, stderr kept as a tail), and a stop that cannot hang
(quit, then SIGTERM, then SIGKILL, each after a timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Awaitable, Callable, Sequence

from eagletui.core.timings import Timings

#: The largest packet believed from an app (a full 300x100 truecolor frame is well under 1 MiB).
MAX_PACKET = 16 * 1024 * 1024
#: How much of an app's stderr is kept to show when it fails (the tail: the error is at the end).
STDERR_TAIL = 64 * 1024
#: Lines an app may print before it says it draws through the web driver.
MAX_PRELUDE_LINES = 20

PRELUDE = b"__GANGLION__\n"


def packet(kind: bytes, payload: bytes) -> bytes:
    return kind + len(payload).to_bytes(4, "big") + payload


class AppProcess:
    """Starts ``argv`` with ``env``, forwards its screen to ``send_bytes`` and closes the tab's socket
    (``close``) when the app exits. :meth:`stop` always ends the process."""

    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        *,
        send_bytes: Callable[[bytes], Awaitable[None]],
        close: Callable[[], Awaitable[object]],
        timings: Timings,
    ) -> None:
        self.timings = timings
        self.argv = list(argv)
        self.env = env
        self._send_bytes = send_bytes
        self._close = close
        self.process: asyncio.subprocess.Process | None = None
        self.started = False  # the app said __GANGLION__: it draws
        self.stderr_tail = b""
        self._pump: asyncio.Task[None] | None = None
        self._stderr: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    async def start(self, width: int, height: int) -> None:
        env = dict(self.env, COLUMNS=str(width), ROWS=str(height))
        self.process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,  # a Ctrl+C in the server's terminal is the server's to handle
        )
        self._stderr = asyncio.create_task(self._read_stderr())
        self._pump = asyncio.create_task(self._read_screen())

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        err = self.process.stderr
        with contextlib.suppress(OSError):
            while chunk := await err.read(16 * 1024):
                self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]

    async def _read_screen(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        out = self.process.stdout
        tab_gone = False
        try:
            for _ in range(MAX_PRELUDE_LINES):
                try:
                    line = await out.readline()
                except ValueError:  # a line longer than the stream's limit: not our app
                    break
                if not line:
                    break
                if line == PRELUDE:
                    self.started = True
                    break
            if self.started:
                while True:
                    head = await out.readexactly(5)
                    size = int.from_bytes(head[1:], "big")
                    if size > MAX_PACKET:
                        break  # not the protocol: stop reading rather than buffer it
                    payload = await out.readexactly(size)
                    kind = head[:1]
                    if kind == b"D":
                        if not tab_gone:
                            try:
                                await self._send_bytes(payload)
                            except Exception:  # the tab closed: keep draining so the app never blocks
                                tab_gone = True
                    elif kind == b"M" and self._meta(payload) == "exit":
                        break
                    # P (file deliveries) is not used by eagletui: ignored
        except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError):
            pass
        except asyncio.CancelledError:
            return
        finally:
            if self.process is not None:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(self.timings.session.web_quit_s):
                        await self.process.wait()
        if self._stderr is not None:
            await asyncio.wait({self._stderr}, timeout=2)  # its tail is read below, whatever it ended as
            self._stderr.cancel()
        if not self.started and self.stderr_tail:
            # The app never drew (a bad target, a refused option): its error is the page's content.
            text = self.stderr_tail.decode("utf-8", errors="replace")
            text = "".join(ch for ch in text if ch in "\n\t" or ch.isprintable())
            with contextlib.suppress(Exception):
                await self._send_bytes(text.replace("\n", "\r\n").encode("utf-8"))
        with contextlib.suppress(Exception):
            await self._close()

    @staticmethod
    def _meta(payload: bytes) -> str:
        try:
            data = json.loads(payload)
        except ValueError:
            return ""
        kind = data.get("type") if isinstance(data, dict) else None
        return kind if isinstance(kind, str) else ""

    # ------------------------------------------------------------------ input

    async def _write(self, data: bytes) -> bool:
        proc = self.process
        if proc is None or proc.stdin is None or proc.returncode is not None:
            return False
        try:
            proc.stdin.write(data)
            await proc.stdin.drain()
        except (ConnectionResetError, BrokenPipeError, RuntimeError):
            return False
        return True

    async def send_input(self, text: str) -> bool:
        return await self._write(packet(b"D", text.encode("utf-8")))

    async def send_meta(self, data: dict[str, object]) -> bool:
        return await self._write(packet(b"M", json.dumps(data).encode("utf-8")))

    async def resize(self, width: int, height: int) -> bool:
        return await self.send_meta({"type": "resize", "width": width, "height": height})

    # ------------------------------------------------------------------ stop

    async def wait(self, timeout: float) -> bool:
        """True once the process has exited (within ``timeout``)."""
        proc = self.process
        if proc is None:
            return True
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(proc.wait())
        except TimeoutError:
            return False
        return True

    def _signal(self, sig: int) -> None:
        proc = self.process
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)  # its own group (start_new_session): the app and its children

    async def stop(self, *, quit_timeout: float | None = None, term_timeout: float | None = None) -> None:
        """Ask the app to quit (the ``q`` path); SIGTERM after ``quit_timeout``, SIGKILL after
        ``term_timeout`` more (None: the timings' ``session.web_quit_s`` and ``web_term_s``: how long the
        app may take to quit cleanly, a demo stops its simulator first, then after SIGTERM). Returns once
        the process has exited and the pump is done."""
        quit_timeout = self.timings.session.web_quit_s if quit_timeout is None else quit_timeout
        term_timeout = self.timings.session.web_term_s if term_timeout is None else term_timeout
        if self.process is not None and self.process.returncode is None:
            await self.send_meta({"type": "quit"})
            if not await self.wait(quit_timeout):
                self._signal(signal.SIGTERM)
                if not await self.wait(term_timeout):
                    self._signal(signal.SIGKILL)
                    await self.wait(5)
        if self.process is not None and self.process.stdin is not None:
            with contextlib.suppress(Exception):
                self.process.stdin.close()
        for task in (self._pump, self._stderr):
            if task is not None and not task.done():
                await asyncio.wait({task}, timeout=5)
                task.cancel()  # given up on after that (nothing when it ended)
