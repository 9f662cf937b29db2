"""The session file format: JSON Lines, one header line then one event per line.

JSON Lines because a recording must survive the app (or the machine) dying mid-write: every line is
complete on its own, so a reader only ever loses the line that was in flight. Reading is deliberately
tolerant (a session from a crashed run, a newer eagletui or a hand-edited file still loads) and only
refuses files that are clearly not sessions at all.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

from eagletui import __version__
from eagletui.core.events import Event, event_type

FORMAT_NAME = "eagletui-session"
FORMAT_VERSION = 1

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


def make_header(target: str, profile_name: str, created: _dt.datetime | None = None) -> dict[str, Any]:
    created = created or _dt.datetime.now(_dt.UTC).astimezone()
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "created": created.isoformat(timespec="seconds"),
        "target": target,
        "profile": profile_name,
        "eagletui": __version__,
    }


def _read_bytes(path: Path, warnings: list[str]) -> bytes:
    """Whole file, decompressed if gzip; a truncated gzip stream keeps what could be decompressed."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SessionError(path, "no such file") from None
    except IsADirectoryError:
        raise SessionError(path, "is a directory, not a session file") from None
    except OSError as exc:
        raise SessionError(path, f"cannot read: {exc.strerror or exc}") from None
    if not raw.startswith(_GZIP_MAGIC):
        return raw
    # zlib with wbits=31 (gzip) instead of gzip.decompress: it hands back everything decoded so far
    # when the stream stops early, which is exactly the crashed-while-compressing case.
    out = bytearray()
    data = raw
    while data:
        d = zlib.decompressobj(wbits=31)
        try:
            out += d.decompress(data)
        except zlib.error as exc:
            if not out:
                raise SessionError(path, f"corrupt gzip data: {exc}") from None
            warnings.append(f"compressed data corrupt after {len(out)} bytes ({exc}), rest ignored")
            break
        if not d.eof:
            warnings.append("compressed stream truncated, loaded what was readable")
            break
        data = d.unused_data  # concatenated gzip members are legal (e.g. appended-to .gz files)
    return bytes(out)


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
    return header


def read_session(path: str | Path) -> tuple[dict[str, Any], list[Event], list[str]]:
    """Load a session: ``(header, events, warnings)``.

    Raises :class:`SessionError` only when the file cannot be a session (missing, empty, no header);
    damaged lines become warnings such as ``line 812: truncated, ignored`` and are skipped.
    """
    p = Path(path).expanduser()
    warnings: list[str] = []
    data = _read_bytes(p, warnings)
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        raise SessionError(p, "empty file, not a session")
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines.pop()  # the empty string after the final newline

    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    header = _parse_header(lines[first], p)
    if header["version"] > FORMAT_VERSION:
        warnings.append(
            f"session format version {header['version']} is newer than this eagletui understands "
            f"({FORMAT_VERSION}); loading what it can"
        )

    events: list[Event] = []
    skipped = 0
    last_index = len(lines) - 1

    def warn(msg: str) -> None:
        nonlocal skipped
        skipped += 1
        if skipped <= MAX_WARNINGS:
            warnings.append(msg)

    for i in range(first + 1, len(lines)):
        line = lines[i]
        lineno = i + 1
        if not line.strip():
            continue
        try:
            data_obj = json.loads(line)
        except ValueError:
            if i == last_index and not ends_with_newline:
                warn(f"line {lineno}: truncated, ignored")
            else:
                warn(f"line {lineno}: not valid JSON, ignored")
            continue
        if not isinstance(data_obj, dict) or not isinstance(data_obj.get("type"), str):
            warn(f"line {lineno}: not an event, ignored")
            continue
        try:
            event_type(data_obj["type"])
        except KeyError:
            warn(f"line {lineno}: unknown event type {data_obj['type']!r}, ignored")
            continue
        try:
            events.append(Event.from_dict(data_obj))
        except (TypeError, ValueError) as exc:
            warn(f"line {lineno}: bad {data_obj['type']} event ({exc}), ignored")
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
