"""The index pass's byte scan over a self-contained recording (:mod:`eagletui.session.index`): where
the seek points are (each the start of a block, timed by its clock) and which lines hold context
events, found by byte search in C (``bytes.find``/``re``/``bytes.count``) without decoding the events
between them.

Apart from the index because it is the one performance-critical pass over the whole file (a
million-event recording opens in about a second because of it) and needs nothing of the reader but
the file: what it finds, the index decodes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from eagletui.session.codec import LogCodec
from eagletui.session.timeline import CONTEXT_TYPES, _clock_of, _step

#: A context event's line (the recorder writes ``type`` first). Not anchored with ``^``/re.M: that
#: disables the literal-prefix search and makes the scan ten times slower.
_TYPE_RE = re.compile(rb'\n\{"type":"(?:' + b"|".join(t.encode() for t in sorted(CONTEXT_TYPES)) + rb')"')
_SEEK_BYTES = b'"' + LogCodec.SEEK_MARK.encode() + b'":1'
#: What only a recording not in the compact form holds (``json.dumps`` with its default separators,
#: hand-edited lines): outside a string a quote is never escaped, inside one it always is, so these
#: bytes are never inside a log line's text. Where a region holds them, the looser search below runs.
_LOOSE = (b'"type": ', b'"type" :', b'{ "type"')
_LOOSE_TYPE_RE = re.compile(
    rb'\{\s*"type"\s*:\s*"(?:' + b"|".join(t.encode() for t in sorted(CONTEXT_TYPES)) + rb')"'
)
_LOOSE_SEEK_BYTES = b'"' + LogCodec.SEEK_MARK.encode() + b'": 1'


def _loose_hits(region: bytes) -> list[tuple[int, bool]]:
    """Seek points and context lines written with spaces after separators: any valid JSON line is
    read (a recording re-written by ``json.dumps`` read as empty). Context lines at a line start only."""
    hits = [(p, True) for p in _find_all(region, _LOOSE_SEEK_BYTES)]
    for m in _LOOSE_TYPE_RE.finditer(region):
        if m.start() == 0 or region[m.start() - 1 : m.start()] == b"\n":
            hits.append((m.start(), False))
    return hits


def _find_all(data: bytes, needle: bytes) -> Iterator[int]:
    """Offsets of ``needle`` followed by ``,`` or ``}``: bytes.find (memchr-fast) where a regex
    starting with a quote would stop at every quote of 150 MB of JSON."""
    pos = data.find(needle)
    n = len(needle)
    while pos >= 0:
        if data[pos + n : pos + n + 1] in (b",", b"}"):
            yield pos
        pos = data.find(needle, pos + n)


@dataclass(slots=True)
class _Block:
    offset: int  # byte offset of its first line
    line: int  # its first event line number
    t: float  # time of the event before its first one (or of the first one itself)
    clock: tuple[float, float] | None  # (mono, wall) of that event; None = the first block
    codec: LogCodec | None  # codec state to start from; None = a fresh self-contained codec


def find_seek_points(
    fh: BinaryIO, start: int, end: int, *, chunk_size: int, max_line: int
) -> tuple[list[_Block], list[tuple[int, int]], int]:
    """Search the bytes of ``fh`` from ``start`` to ``end`` (read ``chunk_size`` bytes at a time; a line
    longer than ``max_line`` is dropped) for the seek points, each a block timed by its clock, and the
    context lines, without decoding the events between them. Returns the blocks, the context lines'
    ``(offset, line)`` and the number of event lines."""
    fh.seek(start)
    offset = start  # file offset of buf[0]
    line = 0  # line number at buf[0]
    buf = b""
    context_lines: list[tuple[int, int]] = []  # (offset, line)
    blocks: list[_Block] = []
    prev_clock: tuple[float, float] | None = None
    t = 0.0
    unterminated = False
    remaining = end - start
    while True:
        chunk = fh.read(min(chunk_size, remaining)) if remaining > 0 else b""
        remaining -= len(chunk)
        data = buf + chunk if buf else chunk
        if not data:
            break
        cut = data.rfind(b"\n") + 1 if chunk else len(data)
        if cut == 0:
            if len(data) > max_line:  # one endless line: drop what we have of it, keep scanning
                offset += len(data)
                buf = b""
                continue
            buf = data
            continue
        region = data[:cut] if cut < len(data) else data
        hits: list[tuple[int, bool]] = [(p, True) for p in _find_all(region, _SEEK_BYTES)]
        hits += [(m.start() + 1, False) for m in _TYPE_RE.finditer(region)]
        if region.startswith(b'{"type":"') and _TYPE_RE.match(b"\n" + region[:64]):
            hits.append((0, False))  # a context line right at the start of the region
        if any(region.find(x) >= 0 for x in _LOOSE):
            hits = list(set(hits + _loose_hits(region)))  # (a compact line is found by both)
        hits.sort()
        cnt_pos, cnt_line, last_ls = 0, line, -1
        for pos, is_seek in hits:
            ls = region.rfind(b"\n", 0, pos) + 1
            if is_seek and ls == last_ls:
                continue
            cnt_line += region.count(b"\n", cnt_pos, ls)
            cnt_pos = ls
            if not is_seek:
                context_lines.append((offset + ls, cnt_line))
                continue
            last_ls = ls
            le = region.find(b"\n", ls)
            try:
                clock = _clock_of(json.loads(region[ls : le if le >= 0 else len(region)]))
            except ValueError:
                clock = None
            if clock is None:
                continue
            t += _step(prev_clock, *clock)
            prev_clock = clock
            blocks.append(_Block(offset + ls, cnt_line, t, clock, None))
        line += region.count(b"\n")
        unterminated = bool(region[region.rfind(b"\n") + 1 :].strip())  # the last line, cut short
        offset += len(region)
        buf = data[cut:] if cut < len(data) else b""
        if not chunk:
            break
    return blocks, context_lines, line + (1 if unterminated else 0)
