"""The session file format: JSON Lines, one header line then one event per line.

JSON Lines because a recording must survive the app (or the machine) dying mid-write: every line is
complete on its own, so a reader only ever loses the line that was in flight. Reading is deliberately
tolerant (a session from a crashed run, a newer eagletui or a hand-edited file still loads) and only
refuses files that are clearly not sessions at all.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import itertools
import json
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eagletui import __version__
from eagletui.core.events import Event
from eagletui.session.codec import LogCodec
from eagletui.session.decode import LineDecoder

FORMAT_NAME = "eagletui-session"
FORMAT_VERSION = 2  # 2: log lines in LogCodec's compact form; 1 (all dicts) still reads

#: Past this many problem lines the reader summarises instead of listing, so a garbage file cannot
#: produce a million-line warning list.
MAX_WARNINGS = 100

_GZIP_MAGIC = b"\x1f\x8b"


class SessionError(Exception):
    """A file that cannot be read as a session at all; names the file so the UI can say which."""

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def target_slug(target: str) -> str:
    """File-name-safe form of a target (``user@gpu-box:2222`` → ``user-gpu-box-2222``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", target or "").strip("-._")
    return (slug or "local")[:60]


def session_filename(target: str, when: _dt.datetime | None = None, *, gz: bool = False) -> str:
    when = when or _dt.datetime.now()
    return f"{when:%Y%m%d-%H%M%S}-{target_slug(target)}.jsonl" + (".gz" if gz else "")


#: Header key saying that every keyframe stands alone (see :class:`LogCodec`): a reader may start
#: decoding at any keyframe, which is what makes seeking in a million-event recording cheap.
SELF_CONTAINED_KEY = "keyframes"


def make_header(target: str, profile_name: str, created: _dt.datetime | None = None) -> dict[str, Any]:
    created = created or _dt.datetime.now(_dt.UTC).astimezone()
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "created": created.isoformat(timespec="seconds"),
        "target": target,
        "profile": profile_name,
        "eagletui": __version__,
        SELF_CONTAINED_KEY: LogCodec.SEEK_POINT,
        OFFSETS_KEY: 1,
    }


#: Header key saying that log rows carry the log format's prefix offsets (``p``); files without it
#: (older recordings, all of SGLang) get them derived from the text when read.
OFFSETS_KEY = "log_offsets"


def has_offsets(header: dict[str, Any]) -> bool:
    return header.get(OFFSETS_KEY) == 1


def self_contained(header: dict[str, Any]) -> bool:
    """Whether the file's keyframes stand alone (written by a Recorder that says so in the header)."""
    v = header.get(SELF_CONTAINED_KEY)
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


# -- bounded reading ------------------------------------------------------------------------------

#: A recording is proportional to its log; past this much decompressed data reading stops (with a
#: warning), whatever the file claims.
MAX_DECOMPRESSED = 4 * 1024**3
#: Compressed recordings hold varied JSON (10-30:1); a stream that inflates far beyond that after the
#: first 64 MiB is a decompression bomb, not a session.
MAX_RATIO = 250
_RATIO_GRACE = 64 * 1024**2
#: A single line (an event) longer than this is skipped without being held in memory.
MAX_LINE = 32 * 1024**2
_CHUNK = 1024**2
_BLANK_RE = re.compile(rb"[ \t\r\n]+")


def _raw_chunks(path: Path) -> Iterator[bytes]:
    try:
        fh = open(path, "rb")  # closed by the with below, also when the generator is dropped
    except FileNotFoundError:
        raise SessionError(path, "no such file") from None
    except IsADirectoryError:
        raise SessionError(path, "is a directory, not a session file") from None
    except OSError as exc:
        raise SessionError(path, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        while True:
            try:
                chunk = fh.read(_CHUNK)
            except OSError as exc:
                raise SessionError(path, f"cannot read: {exc.strerror or exc}") from None
            if not chunk:
                return
            yield chunk


def _chunks(path: Path, warnings: list[str], max_bytes: int) -> Iterator[bytes]:
    """The file's bytes, gunzipped if it is gzip, in bounded pieces; stops at ``max_bytes`` of output
    or at a ratio that only a bomb reaches. A truncated or damaged gzip stream keeps what decoded."""
    raw = _raw_chunks(path)
    first = next(raw, b"")
    if not first.startswith(_GZIP_MAGIC):
        total = 0
        for chunk in itertools.chain([first], raw):
            total += len(chunk)
            if total > max_bytes:
                warnings.append(f"file larger than {max_bytes} bytes: stopped reading there")
                yield chunk[: len(chunk) - (total - max_bytes)]
                return
            yield chunk
        return
    # zlib with wbits=31 (gzip) instead of gzip.open: it hands back everything decoded so far when the
    # stream stops early, which is exactly the crashed-while-compressing case. max_length bounds each
    # step, so a bomb never inflates more than one chunk at a time.
    d = zlib.decompressobj(wbits=31)
    consumed = out_total = 0
    in_member = False  # a member has begun and not ended: running out of input now means truncated
    for data in itertools.chain([first], raw):
        consumed += len(data)
        out = b""
        while data or len(out) == _CHUNK:  # a full output chunk may leave more pending inside zlib
            in_member = True
            try:
                out = d.decompress(data, _CHUNK)
            except zlib.error as exc:
                if not out_total:
                    raise SessionError(path, f"corrupt gzip data: {exc}") from None
                warnings.append(f"compressed data corrupt after {out_total} bytes ({exc}), rest ignored")
                return
            out_total += len(out)
            if out_total > max_bytes:
                warnings.append(f"decompresses to more than {max_bytes} bytes: stopped reading there")
                return
            used = consumed - len(d.unconsumed_tail)  # input actually inflated so far
            if out_total > _RATIO_GRACE and out_total > MAX_RATIO * used:
                warnings.append(
                    f"decompresses more than {MAX_RATIO}:1 ({used} bytes to over {out_total}): "
                    "not a recording (a decompression bomb?), stopped reading there"
                )
                return
            if out:
                yield out
            if d.eof:
                in_member = False
                data = d.unused_data  # concatenated gzip members are legal (appended-to .gz files)
                d = zlib.decompressobj(wbits=31)
                if data and not data.startswith(_GZIP_MAGIC[:1]):
                    if data.strip(b"\x00"):
                        warnings.append("trailing data after the compressed stream ignored")
                    return
            else:
                data = d.unconsumed_tail
    if in_member:
        warnings.append("compressed stream truncated, loaded what was readable")


def _lines(
    path: Path, warnings: list[str], max_bytes: int, max_line: int
) -> Iterator[tuple[int, bytes, bool]]:
    """``(line number, line, ends with a newline)`` for each non-blank line. Runs of blank lines are
    skipped in C (2 GB of newlines is a scan, not two billion Python strings); a line longer than
    ``max_line`` is reported and skipped without being held."""
    lineno = 1
    buf = b""
    skipping = False  # inside an overlong line: drop bytes until its newline
    for chunk in _chunks(path, warnings, max_bytes):
        buf = buf + chunk if buf else chunk
        pos = 0
        n = len(buf)
        while pos < n:
            if skipping:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    pos = n
                    break
                skipping = False
                lineno += 1
                pos = nl + 1
                continue
            m = _BLANK_RE.match(buf, pos)
            if m is not None:
                end = m.end()
                nl_count = buf.count(b"\n", pos, end)
                if end == n:  # blank to the end: keep the last partial (blank) line's start
                    lineno += nl_count
                    pos = n
                    break
                if nl_count:
                    lineno += nl_count
                    pos = buf.rfind(b"\n", pos, end) + 1
            nl = buf.find(b"\n", pos)
            if nl < 0:
                if n - pos > max_line:
                    warnings.append(f"line {lineno}: longer than {max_line} bytes, ignored")
                    skipping = True
                    pos = n
                break
            if nl - pos > max_line:
                warnings.append(f"line {lineno}: longer than {max_line} bytes, ignored")
            else:
                yield lineno, buf[pos:nl], True
            lineno += 1
            pos = nl + 1
        buf = buf[pos:] if pos < n else b""
    if buf.strip() and not skipping:
        yield lineno, buf, False


def _parse_header(line: str, path: Path) -> dict[str, Any]:
    try:
        header = json.loads(line)
    except ValueError:
        raise SessionError(path, "not an eagletui session (first line is not JSON)") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise SessionError(path, f'not an eagletui session (first line has no "format": "{FORMAT_NAME}")')
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionError(path, f"session header has an invalid version {version!r}")
    for key in ("target", "profile", "created", "eagletui"):
        if key in header and not isinstance(header[key], str):
            header[key] = "" if header[key] is None else str(header[key])
    return header


def read_session(
    path: str | Path, *, max_bytes: int = MAX_DECOMPRESSED, max_line: int = MAX_LINE
) -> tuple[dict[str, Any], list[Event], list[str]]:
    """Load a session: ``(header, events, warnings)``.

    Raises :class:`SessionError` only when the file cannot be a session (missing, empty, no header);
    damaged lines and invalid events become warnings such as ``line 812: truncated, ignored`` or
    ``line 9: bad log event (field 'mono' must be a finite number, got a string), ignored`` and are
    skipped; the rest loads. Reading is bounded: ``max_bytes`` of (decompressed) data, ``max_line``
    per line, and a decompression ratio no real recording reaches.
    """
    p = Path(path).expanduser()
    warnings: list[str] = []
    lines = _lines(p, warnings, max_bytes, max_line)
    try:
        first = next(lines)
    except StopIteration:
        raise SessionError(p, "empty file, not a session") from None
    header = _parse_header(first[1].decode("utf-8", errors="replace"), p)
    if header["version"] > FORMAT_VERSION:
        warnings.append(
            f"session format version {header['version']} is newer than this eagletui understands "
            f"({FORMAT_VERSION}); loading what it can"
        )

    events: list[Event] = []
    skipped = 0
    decoder = LineDecoder(LogCodec(self_contained=self_contained(header), offsets=has_offsets(header)))
    for lineno, raw, complete in lines:
        event, problem = decoder.decode(lineno, raw, complete)
        if event is not None:
            events.append(event)
        elif problem is not None:
            skipped += 1
            if skipped <= MAX_WARNINGS:
                warnings.append(problem)
    if skipped > MAX_WARNINGS:
        warnings.append(f"... and {skipped - MAX_WARNINGS} more damaged lines ignored")
    return header, events, warnings


def write_session(
    path: str | Path, header: dict[str, Any], events: list[Event], *, gz: bool | None = None
) -> Path:
    """Write a whole session at once (exports, tests, re-compressing); live recording uses ``Recorder``.

    Events are written as given: callers that hold unredacted events must go through ``Recorder``.
    """
    p = Path(path)
    gz = p.name.endswith(".gz") if gz is None else gz
    body = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in [header, *(e.to_dict() for e in events)])
    payload = gzip.compress(body.encode("utf-8")) if gz else body.encode("utf-8")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the file may have existed with looser permissions
        with os.fdopen(fd, "wb", closefd=False) as fh:
            fh.write(payload)
    finally:
        os.close(fd)
    return p
