"""Finding recordings: the sessions dir listed with a summary each, and a bare name resolved to a file.

Listing reads each recording through the index pass (:class:`~eagletui.session.index.ReplaySource`),
bounded to :data:`LIST_MAX_BYTES` per file, and caches the summary beside the recording as
``NAME.idx`` (0600, validated against the file's size and mtime) when the file lives in the user's
sessions dir, so a second ``eagletui sessions`` is a stat and a small read per file. A file that
cannot be read is listed with its error; the listing itself never fails on one.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagletui.session.format import SessionError
from eagletui.session.index import ReplaySource
from eagletui.session.timeline import Summary

SUFFIXES = (".jsonl", ".jsonl.gz")
#: Per file, the listing indexes at most this much (decompressed) data; a longer recording is
#: summarised from its first part and says so.
LIST_MAX_BYTES = 512 * 1024**2
#: A listing looks at this many files at most (newest first), so a dir of a million files is bounded.
LIST_MAX_FILES = 1000
_CACHE_VERSION = 4  # 2: the run book's baseline, spec pairs and invalid runs; 3: unjudged pairs; 4: startup
_CACHE_MAX = 64 * 1024


@dataclass
class Entry:
    """One recording in a listing: its summary, or the error that kept it from being read."""

    path: Path
    summary: Summary | None = None
    error: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return session_name(self.path)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": str(self.path), "name": self.name}
        with contextlib.suppress(OSError):
            out["size"] = self.path.stat().st_size
        if self.summary is not None:
            out.update(self.summary.to_dict())
        out["error"] = self.error
        out["warnings"] = self.warnings[:10]
        return out


def session_name(path: Path) -> str:
    """The name a user types: the file name without ``.jsonl``/``.jsonl.gz``."""
    name = path.name
    for suffix in SUFFIXES[::-1]:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def recordings_newest_first(directory: Path) -> list[Path]:
    try:
        found = [p for p in directory.iterdir() if p.name.endswith(SUFFIXES) and p.is_file()]
    except OSError:
        return []

    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(found, key=lambda p: (mtime(p), p.name), reverse=True)


def _cache_path(path: Path) -> Path:
    return path.with_name(path.name + ".idx")


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _read_cache(path: Path) -> Entry | None:
    key = _stat_key(path)
    cp = _cache_path(path)
    if key is None:
        return None
    try:
        with open(cp, "rb") as fh:
            raw = fh.read(_CACHE_MAX + 1)
        if len(raw) > _CACHE_MAX:
            return None
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("v") != _CACHE_VERSION:
            return None
        if [data.get("size"), data.get("mtime_ns")] != list(key):
            return None
        summary = Summary(**{k: v for k, v in data["summary"].items() if k in Summary.__dataclass_fields__})
        warnings = [str(w) for w in data.get("warnings", [])][:10]
        return Entry(path, summary, warnings=warnings)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _write_cache(entry: Entry) -> None:
    """Best effort: a read-only dir or a full disk only costs the next listing its speed."""
    key = _stat_key(entry.path)
    if key is None or entry.summary is None:
        return
    data = {
        "v": _CACHE_VERSION,
        "size": key[0],
        "mtime_ns": key[1],
        "summary": entry.summary.to_dict(),
        "warnings": entry.warnings[:10],
    }
    cp = _cache_path(entry.path)
    tmp = cp.with_name(f".{cp.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, cp)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def summarize(path: Path, *, cache: bool = False, max_bytes: int = LIST_MAX_BYTES) -> Entry:
    """The summary of one recording (from the cache if it is still valid); never raises."""
    if cache:
        cached = _read_cache(path)
        if cached is not None:
            return cached
    try:
        with ReplaySource.open(path, max_bytes=max_bytes) as src:
            entry = Entry(path, src.summary(), warnings=list(src.warnings))
    except SessionError as exc:
        return Entry(path, error=exc.reason)
    except OSError as exc:
        return Entry(path, error=f"cannot read: {exc.strerror or exc}")
    except Exception as exc:  # a listing must survive any one file
        return Entry(path, error=f"unreadable ({type(exc).__name__}: {exc})")
    if cache:
        _write_cache(entry)
    return entry


def list_sessions(directory: str | Path, *, cache: bool = False, limit: int = LIST_MAX_FILES) -> list[Entry]:
    """The recordings in ``directory``, newest first (by the header's start, else the file's mtime)."""
    d = Path(directory).expanduser()
    entries = [summarize(p, cache=cache) for p in recordings_newest_first(d)[:limit]]
    # Newest first by when the session started; files sort by mtime already, and a header's
    # ``created`` (ISO 8601 with offset) wins where it parses.
    import datetime as _dt

    def started(e: Entry) -> float:
        if e.summary is not None and e.summary.created:
            with contextlib.suppress(ValueError):
                return _dt.datetime.fromisoformat(e.summary.created).timestamp()
        try:
            return e.path.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(entries, key=started, reverse=True)


class NotFound(LookupError):
    """No recording by that name; ``suggestions`` are the close ones."""

    def __init__(self, name: str, searched: list[Path], suggestions: list[str]):
        self.name, self.searched, self.suggestions = name, searched, suggestions
        where = ", ".join(str(d) for d in searched) or "no sessions dir"
        msg = f"no session {name!r} (looked in {where})"
        if suggestions:
            msg += "; did you mean " + " or ".join(repr(s) for s in suggestions) + "?"
        super().__init__(msg)


class Ambiguous(LookupError):
    """More than one recording matches; ``candidates`` are their paths."""

    def __init__(self, name: str, candidates: list[Path]):
        self.name, self.candidates = name, candidates
        listed = "\n".join(f"  {session_name(p)}  ({p})" for p in candidates[:20])
        more = f"\n  ... and {len(candidates) - 20} more" if len(candidates) > 20 else ""
        super().__init__(f"{name!r} matches {len(candidates)} sessions:\n{listed}{more}")


def resolve(name: str, directories: list[Path]) -> Path:
    """A file path as given, or a session by name in ``directories`` (in order): an exact name
    (``20261130-0102-gpu``, ``demo-eagle3``, with or without ``.jsonl``/``.jsonl.gz``), else a unique
    prefix. Raises :class:`Ambiguous` or :class:`NotFound` (with close names)."""
    p = Path(name).expanduser()
    if p.exists() or os.sep in name or name.endswith(SUFFIXES):
        return p  # a path: opening it reports what is wrong with it
    searched = [d for d in directories if d.is_dir()]
    everything: list[Path] = []
    for d in searched:
        files = recordings_newest_first(d)
        everything += files
        exact = [f for f in files if session_name(f) == name]
        if exact:
            return exact[0]  # .jsonl and .jsonl.gz of one name: the newer one
    for d in searched:
        prefixed = [f for f in recordings_newest_first(d) if f.name.startswith(name)]
        if len(prefixed) == 1:
            return prefixed[0]
        if prefixed:
            raise Ambiguous(name, prefixed)
    names = sorted({session_name(f) for f in everything})
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    close += [n for n in names if name in n and n not in close][: 3 - len(close)]
    raise NotFound(name, searched, close)
