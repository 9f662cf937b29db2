"""Live session recording, with secrets scrubbed before a byte reaches the disk.

Recordings get shared (bug reports, "look at this run"), so redaction happens at write time rather
than at share time: a secret that was never written cannot leak. Each line goes straight to the file
descriptor (no userspace buffer), so a crash loses at most the line being written.
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from eagletui.core.events import Event
from eagletui.core.profile.redact import Redactor
from eagletui.session.codec import LogCodec
from eagletui.session.format import make_header, session_filename

#: Write errors that are waited out (disk full, quota): the next event tries again.
_RETRY_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})

#: No spaces after separators: a recording is mostly log lines, and two spaces a line add up.
_SEPARATORS = (",", ":")


class Recorder:
    """Appends redacted events to a new session file (mode 0600, never overwrites an existing file).

    A write error (disk full) pauses recording and is kept in ``error`` rather than raised: losing
    the recording must never take the live session down with it. A line that was only partly written
    is cut off again, so the file ends on a whole event. Every later event is tried again: once one is
    written (space came back) recording resumes, ``error`` is cleared, ``lost`` counts what could not
    be written and a notice in the file says so; the event after a gap is a seek point, so nothing
    read after it depends on what is missing. Only a file that can no longer be written at all (it was
    removed, the descriptor broke) stops recording for good (``closed``).

    Log lines are written in :class:`~eagletui.session.format.LogCodec`'s compact form, which keeps a
    recording proportional to the log it holds (about 1.1x for sglang-sized lines).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        target: str,
        profile_name: str,
        secrets: Iterable[str] = (),
        created: _dt.datetime | None = None,
        redactor: Redactor | None = None,
    ):
        self.path = Path(path)
        #: Shared with whoever knows the secrets (the profile's): what it learns, the recording hides.
        self.redactor = redactor if redactor is not None else Redactor()
        for s in secrets:
            self.redactor.learn(s)
        self.error: str | None = None
        #: events that could not be written while paused (disk full), since the session started
        self.lost = 0
        self._lost_since_resume = 0
        self.events_written = 0
        self.bytes_written = 0
        self._codec = LogCodec(self_contained=True)
        self._lock = threading.Lock()
        from eagletui.config import private_app_dir  # late: config pulls platformdirs

        private_app_dir(self.path.parent)  # the data dir above sessions/ too: 0700, not 0755
        flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        self._fd: int | None = os.open(self.path, flags, 0o600)
        self._made = os.fstat(self._fd)  # what "the file we wrote" is, when the session ends
        header = make_header(target, profile_name, created)
        header = {k: (self.redactor.text(v) if isinstance(v, str) else v) for k, v in header.items()}
        self._write_line(header)

    @classmethod
    def create(
        cls,
        sessions_dir: str | Path | None = None,
        *,
        target: str,
        profile_name: str,
        secrets: Iterable[str] = (),
        now: _dt.datetime | None = None,
        redactor: Redactor | None = None,
    ) -> Recorder:
        """A recorder on a fresh ``YYYYmmdd-HHMMSS-<target>.jsonl`` in ``sessions_dir``; a second
        session started in the same second gets ``-2``, ``-3``... rather than failing. Without
        ``sessions_dir`` the default from the user config's data dir is used."""
        if sessions_dir is None:
            from eagletui.config import default_sessions_dir  # late: config is only needed for the default

            sessions_dir = default_sessions_dir()
        d = Path(sessions_dir).expanduser()
        name = session_filename(target, now)
        stem = name.removesuffix(".jsonl")
        for n in range(1, 1000):
            path = d / (name if n == 1 else f"{stem}-{n}.jsonl")
            try:
                return cls(path, target=target, profile_name=profile_name, secrets=secrets, redactor=redactor)
            except FileExistsError:
                continue
        raise FileExistsError(f"no free session file name for {name} in {d}")

    @property
    def closed(self) -> bool:
        return self._fd is None

    def write(self, event: Event) -> None:
        """Record one event. After ``close()`` or a write error this is a silent no-op: events keep
        flowing during shutdown and must not raise into the event pump."""
        if self._fd is None:
            if self.error is not None:
                self.lost += 1  # stopped by an error, not closed: this event is missing from the file
            return
        try:
            data = self.redactor.event_dict(event)
        except Exception as exc:  # a malformed event must not stop recording of the others
            data = {
                "type": "notice",
                "level": "warning",
                "source": "recorder",
                "message": f"unrecordable event: {exc}",
            }
        with self._lock:  # the codec's state must follow the order lines reach the file
            if self._fd is None:
                return
            paused = self.error is not None
            if paused:
                self._codec.restart()  # what was lost must not be leaned on
            if self._write_locked(self._codec.encode(data)):
                self.events_written += 1
                if paused:
                    self._resumed()
            else:
                self.lost += 1
                self._lost_since_resume += 1

    @property
    def paused(self) -> bool:
        """Writes fail for now (disk full) but are tried again with every event."""
        return self.error is not None and self._fd is not None

    def _resumed(self) -> None:
        n, self._lost_since_resume = self._lost_since_resume, 0
        why, self.error = self.error, None
        note: dict[str, Any] = {
            "type": "notice",
            "level": "warning",
            "source": "recorder",
            "message": f"recording resumed: {n} event(s) before this could not be written ({why})",
        }
        import time

        note.update(wall=time.time(), mono=time.monotonic())
        if self._write_locked(self._codec.encode(note)):
            self.events_written += 1

    def write_control(self, data: dict[str, Any]) -> None:
        """A line that is not an event (a feed's control line, :mod:`eagletui.session.feed`): written
        as given, outside the codec (its state is untouched). Strings are redacted like an event's."""
        self._write_line({k: (self.redactor.text(v) if isinstance(v, str) else v) for k, v in data.items()})

    def _write_line(self, data: Any) -> None:
        with self._lock:
            if self._fd is not None:
                self._write_locked(data)

    def _write_locked(self, data: Any) -> bool:
        """Write one line; False when it could not be (recording paused or, for good, stopped)."""
        assert self._fd is not None
        payload = (json.dumps(data, ensure_ascii=False, default=str, separators=_SEPARATORS) + "\n").encode(
            "utf-8"
        )
        try:
            view = memoryview(payload)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            # Keep what is on disk whole by cutting the partial line off. Out of space (or quota) is
            # waited out: the next event tries again. Anything else stops recording for good; either
            # way the live session goes on.
            try:
                os.ftruncate(self._fd, self.bytes_written)
            except OSError:
                pass
            if exc.errno in _RETRY_ERRNOS and self._still_ours():
                if self.error is None:
                    self.error = (
                        f"recording paused: {exc.strerror or exc} ({self.path}); it resumes when there "
                        "is space again"
                    )
            else:
                self.error = f"recording stopped: {exc.strerror or exc} ({self.path})"
                self._close_fd()
            return False
        self.bytes_written += len(payload)
        return True

    def _still_ours(self) -> bool:
        """The file we write is still the one at ``path`` (not removed or replaced under us)."""
        try:
            return os.path.samestat(os.fstat(self._fd), os.stat(self.path)) if self._fd is not None else False
        except OSError:
            return False

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        with self._lock:
            self._close_fd()

    def outcome(self) -> tuple[str, bool]:
        """What to say when the session ends, and whether the recording is whole. Never claims a file
        it did not write: the file at ``path`` must still be the one it made (a demo's temp dir, a
        removed or replaced file: "session not recorded"). Events lost while paused (disk full) or
        after it stopped are counted, with why: a headless command exits non-zero on them."""
        try:
            here = os.path.samestat(os.stat(self.path), self._made)
        except OSError:
            here = False
        if not here:
            return f"session not recorded: {self.path} is no longer the file this session wrote", False
        if self.lost or self.error:
            why = f" ({self.error})" if self.error else ""
            return (
                f"session recorded to {self.path}, incomplete: {self.lost} event(s) could not be "
                f"written{why}",
                False,
            )
        return f"session recorded to {self.path}", True

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
