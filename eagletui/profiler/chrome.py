"""Stream the events of a Chrome trace (torch.profiler's export, what SGLang's ``/start_profile`` writes).

Real traces of a decode step on 8 GPUs reach hundreds of MB, so the file is never loaded whole: it is
decompressed in bounded chunks and each element of ``traceEvents`` is decoded on its own with the C
decoder (``JSONDecoder.raw_decode``). Memory is bounded by the chunk size plus the largest single event
(``max_event_bytes``); a longer event, a truncated file or a top level that is not a trace raise
:class:`TraceError` with the byte offset, never a bare ``JSONDecodeError``.

Top-level keys other than ``traceEvents`` that are small objects (``distributedInfo``, ``deviceProperties``)
are decoded too and handed back as :attr:`ChromeTrace.meta`, so a rank can be read from the header.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

CHUNK = 1 << 20
MAX_EVENT_BYTES = 4 << 20
MAX_META_BYTES = 8 << 20
#: A trace decompresses to at most this much: a decode step on 8 GPUs is hundreds of MB.
MAX_DECOMPRESSED = 8 << 30
#: Past :data:`RATIO_AFTER` decompressed bytes, a gzip that expands more than this is a bomb: torch's
#: JSON compresses about 10x (2.1 MB of gzip holding 2 GiB of whitespace took 520 s of one core).
MAX_RATIO = 200
RATIO_AFTER = 64 << 20
#: ``progress(bytes read)`` is called every this many decompressed bytes
PROGRESS_EVERY = 256 << 20


class TraceError(Exception):
    """The file is not a readable Chrome trace; the message says where and why."""


_WS = " \t\r\n"
#: a run of whitespace, skipped in C (a Python loop over 2 GiB of it took minutes)
_WS_RUN = re.compile(r"[ \t\r\n]*")


class ChromeTrace:
    """One trace file: ``events()`` yields each event dict once; ``meta`` fills in as the header is read."""

    def __init__(
        self,
        path: str | Path,
        *,
        max_event_bytes: int = MAX_EVENT_BYTES,
        max_bytes: int = MAX_DECOMPRESSED,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.max_event_bytes = max_event_bytes
        self.max_bytes = max_bytes
        self.progress = progress
        self._raw: IO[bytes] | None = None  # the compressed file under a gzip stream
        self.meta: dict[str, Any] = {}
        self.bytes_read = 0
        #: values stepped over because they nest deeper than the JSON decoder can go
        self.skipped_deep = 0

    def _open(self) -> IO[bytes]:
        raw = self.path.open("rb")
        head = raw.read(2)
        raw.seek(0)
        if head == b"\x1f\x8b":
            self._raw = raw
            return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
        return raw

    def events(self) -> Iterator[dict[str, Any]]:
        decoder = json.JSONDecoder()
        with self._open() as fh:
            reader = _Reader(fh, self)
            reader.skip_ws()
            if reader.peek() != "{":
                raise TraceError(f"{self.path}: not a Chrome trace (no JSON object at the start)")
            reader.pos += 1
            found = False
            while True:
                reader.skip_ws()
                ch = reader.peek()
                if ch == "}":
                    break
                if ch == ",":
                    reader.pos += 1
                    continue
                if ch == "":
                    raise TraceError(f"{self.path}: truncated at byte {self.bytes_read}")
                key = reader.decode(decoder, 4096, "a key")
                reader.skip_ws()
                if reader.peek() != ":":
                    raise TraceError(f"{self.path}: expected ':' after {key!r} near byte {self.bytes_read}")
                reader.pos += 1
                reader.skip_ws()
                if key == "traceEvents":
                    found = True
                    yield from reader.array(decoder)
                else:
                    value = reader.decode(decoder, MAX_META_BYTES, f"the {key!r} entry")
                    if value is not SKIPPED:
                        self.meta[str(key)] = value
            if not found:
                raise TraceError(f"{self.path}: no traceEvents in this file")


class _Reader:
    """A text window over the decompressed stream that grows only as far as one value needs."""

    def __init__(self, fh: IO[bytes], trace: ChromeTrace) -> None:
        self.fh = fh
        self.trace = trace
        self.buf = ""
        self.pos = 0
        self.eof = False
        self._tail = b""

    def _more(self) -> bool:
        if self.eof:
            return False
        try:
            data = self.fh.read(CHUNK)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"{self.trace.path}: unreadable at byte {self.trace.bytes_read}: {exc}") from exc
        if not data:
            self.eof = True
            if self._tail:
                raise TraceError(f"{self.trace.path}: ends inside a UTF-8 character")
            return False
        self._account(len(data))
        data = self._tail + data
        # Keep an incomplete UTF-8 sequence for the next chunk instead of replacing it.
        cut = len(data)
        for back in range(1, min(4, len(data)) + 1):
            b = data[-back]
            if b & 0xC0 != 0x80:  # a lead byte or ASCII
                need = 1 if b < 0x80 else 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else 4
                if need > back:
                    cut = len(data) - back
                break
        self._tail = data[cut:]
        text = data[:cut].decode("utf-8", "replace")
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return True

    def _account(self, n: int) -> None:
        """Count decompressed bytes; refuse past the size bound or a bomb's ratio; report progress."""
        trace = self.trace
        before, trace.bytes_read = trace.bytes_read, trace.bytes_read + n
        if trace.bytes_read > trace.max_bytes:
            raise TraceError(
                f"{trace.path}: over {trace.max_bytes >> 20} MiB decompressed: stopped reading there"
            )
        if trace._raw is not None and trace.bytes_read > RATIO_AFTER:
            packed = max(1, trace._raw.tell())
            if trace.bytes_read > MAX_RATIO * packed:
                raise TraceError(
                    f"{trace.path}: {packed} compressed bytes expand to over {trace.bytes_read >> 20} MiB "
                    f"(more than {MAX_RATIO}x): a decompression bomb, not a trace; stopped reading"
                )
        if trace.progress is not None and before // PROGRESS_EVERY != trace.bytes_read // PROGRESS_EVERY:
            trace.progress(trace.bytes_read)

    def peek(self) -> str:
        while self.pos >= len(self.buf):
            if not self._more():
                return ""
        return self.buf[self.pos]

    def skip_ws(self) -> None:
        while True:
            pos = _WS_RUN.match(self.buf, self.pos).end()  # type: ignore[union-attr]  # matches "" too
            n = len(self.buf)
            self.pos = pos
            if pos < n or not self._more():
                return

    def decode(self, decoder: json.JSONDecoder, limit: int, what: str) -> Any:
        while True:
            try:
                value, end = decoder.raw_decode(self.buf, self.pos)
            except RecursionError:
                # nested deeper than any trace is: step over the value, count it, read on
                self.skip_value(limit, what)
                self.trace.skipped_deep += 1
                return SKIPPED
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos > limit:
                    raise TraceError(
                        f"{self.trace.path}: {what} near byte {self.trace.bytes_read} is over "
                        f"{limit // 1024} KiB or malformed ({exc.msg})"
                    ) from None
                if not self._more():
                    raise TraceError(
                        f"{self.trace.path}: truncated or malformed in {what} ({exc.msg})"
                    ) from None
                continue
            # A number at the very end of the window may continue in the next chunk.
            if end >= len(self.buf) and not self.eof and isinstance(value, (int, float)):
                if self._more():
                    continue
            self.pos = end
            return value

    def skip_value(self, limit: int, what: str) -> None:
        """Move past the one JSON value at ``pos`` without decoding it (brackets counted outside
        strings), reading more as needed, up to ``limit`` characters."""
        while True:
            depth = 0
            for m in _TOKEN.finditer(self.buf, self.pos):
                t = m.group()
                if t in "[{":
                    depth += 1
                elif t in "]}":
                    depth -= 1
                    if depth <= 0:
                        self.pos = m.end()
                        return
            if len(self.buf) - self.pos > limit:
                raise TraceError(
                    f"{self.trace.path}: {what} near byte {self.trace.bytes_read} is nested too deep "
                    f"and over {limit // 1024} KiB"
                )
            if not self._more():
                raise TraceError(f"{self.trace.path}: truncated inside {what} nested too deep to read")

    def array(self, decoder: json.JSONDecoder) -> Iterator[dict[str, Any]]:
        if self.peek() != "[":
            raise TraceError(f"{self.trace.path}: traceEvents is not a list")
        self.pos += 1
        if _fast_loads is not None:
            yield from self._array_fast(decoder, _fast_loads)
            return
        limit = self.trace.max_event_bytes
        raw_decode = decoder.raw_decode
        while True:
            self.skip_ws()
            ch = self.peek()
            if ch == "]":
                self.pos += 1
                return
            if ch == ",":
                self.pos += 1
                continue
            if ch == "":
                raise TraceError(f"{self.trace.path}: truncated inside traceEvents")
            try:
                value, end = raw_decode(self.buf, self.pos)
            except (json.JSONDecodeError, RecursionError):
                value = self.decode(decoder, limit, "an event")
            else:
                self.pos = end
            if isinstance(value, dict):
                yield value

    def _array_fast(self, decoder: json.JSONDecoder, loads: Any) -> Iterator[dict[str, Any]]:
        """Cut the window at each ``}`` followed by ``, {`` and decode the piece with orjson; a cut that
        fell inside a string or a nested object fails to decode and is simply joined with the next
        piece. About three times the stdlib decoder's speed on torch's exports."""
        limit = self.trace.max_event_bytes
        finditer = _CUT.finditer
        while True:
            self.skip_ws()
            ch = self.peek()
            if ch == "]":
                self.pos += 1
                return
            if ch == ",":
                self.pos += 1
                continue
            if ch != "{":
                # a non-object element (or garbage): let the careful path judge and skip it
                self.decode(decoder, limit, "an event")
                continue
            buf = self.buf
            start = self.pos
            progressed = False
            for m in finditer(buf, start):
                end = m.start() + 1
                try:
                    value = loads(buf[start:end])
                except ValueError:
                    if end - start > limit:
                        break
                    continue
                if isinstance(value, dict):
                    yield value
                start = m.end()
                progressed = True
            self.pos = start
            if not progressed:
                # the event runs past this window (or is the last one): decode it the careful way
                value = self.decode(decoder, limit, "an event")
                if isinstance(value, dict):
                    yield value


_CUT = re.compile(r"\}\s*,\s*(?=\{)")
#: what :meth:`_Reader.skip_value` counts: whole strings (their brackets do not count) and brackets
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
#: :meth:`_Reader.decode`'s answer for a value it stepped over (never an event, never meta)
SKIPPED: Any = object()

_fast_loads: Any
try:  # an optional accelerator: the stdlib decoder gives the same events, slower
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - orjson is a dependency; this keeps the reader importable without it
    _fast_loads = None
