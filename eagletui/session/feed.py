"""A live session as a file others can follow: :class:`FeedWriter` (the session that has control) and
:class:`FeedFollower` (read-only views of it).

``eagletui serve`` gives the first browser tab the session and every further tab a read-only view.
A view needs nothing but the events: the session model is a pure fold, so a second model fed the same
events in the same order shows the same phases, runs and charts. The owner therefore appends every
event its model folds to a *feed* — a session recording (same header, same compact codec, redacted by
the same :class:`~eagletui.session.record.Recorder`) plus a few control lines no recording has:

* ``{"feed":"source","kind":"live"|"replay"}`` right after the header: whose clock the times follow
  (a view of a replay measures elapsed times to the replay's clock, not to now);
* ``{"feed":"reset"}``: the owner's model started over (a replay seek); a view resets too and folds
  the catch-up events that follow;
* ``{"feed":"end","reason":…}``: the owner's app has quit; nothing more will come.

A follower reads whatever whole lines are there (bounded per call and per line) and keeps the last
partial line until its newline arrives, so it can start at any moment of the owner's session and then
keep up by polling. A plain recording that another eagletui is still writing can be followed the same
way (it just never says ``end``).

No Textual here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagletui.core.events import Event
from eagletui.core.profile.redact import Redactor
from eagletui.session.codec import LogCodec
from eagletui.session.decode import LineDecoder
from eagletui.session.format import _GZIP_MAGIC, MAX_LINE, SessionError, _parse_header, self_contained
from eagletui.session.record import Recorder

#: The key that marks a control line (never a field of an event line: events carry ``type``).
CONTROL_KEY = "feed"
_CONTROL_PREFIX = b'{"' + CONTROL_KEY.encode() + b'":'
#: How much a follower reads from the file per call: a view catching up on a long session folds it in
#: slices and paints in between, instead of holding the whole file.
READ_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FeedControl:
    """A control line: ``kind`` is ``source``, ``reset`` or ``end``; ``data`` the whole line."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)


class FeedWriter:
    """Appends what a session model folds (and its resets) to a new feed file (0600, never an existing
    file). Subscribe it with :meth:`attach`; :meth:`end` says the session is over and closes the file.
    Write errors stop the feed (kept in ``error``), never the session."""

    def __init__(
        self,
        path: str | Path,
        *,
        target: str,
        profile_name: str = "",
        source: str = "live",
        redactor: Redactor | None = None,
    ) -> None:
        self.recorder = Recorder(path, target=target, profile_name=profile_name, redactor=redactor)
        self.path = self.recorder.path
        self._unsubscribe: list[Any] = []
        self.control("source", kind=source)

    @property
    def error(self) -> str | None:
        return self.recorder.error

    def attach(self, model: Any) -> None:
        """Follow ``model`` (a :class:`~eagletui.session.model.SessionModel`): every folded event, every
        reset. The events are written in the order the model folded them."""
        self._unsubscribe.append(model.subscribe(self.write))
        self._unsubscribe.append(model.on_reset(self.reset))

    def write(self, event: Event) -> None:
        self.recorder.write(event)

    def reset(self) -> None:
        self.control("reset")

    def control(self, what: str, **data: Any) -> None:
        self.recorder.write_control({CONTROL_KEY: what, **data})

    def end(self, reason: str = "") -> None:
        """The owner's session is over (quit, or the app failed): followers stop waiting."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        if not self.recorder.closed:
            self.control("end", reason=reason)
            self.recorder.close()


class FeedFollower:
    """Reads a feed (or any plain session recording) as it grows. :meth:`open` reads the header;
    :meth:`read` returns the events and control lines that are complete now, at most ``limit`` of
    them and at most :data:`READ_CHUNK` bytes a call. Damaged lines are skipped into ``warnings``."""

    def __init__(self, path: str | Path, *, max_line: int = MAX_LINE) -> None:
        self.path = Path(path)
        self.max_line = max_line
        self.header: dict[str, Any] = {}
        self.source = "live"
        self.ended = False
        self.end_reason = ""
        self.warnings: list[str] = []
        self.skipped = 0
        self._fh: Any = None
        self._ino: int | None = None
        self._buf = b""
        self._skipping = False  # inside an overlong line: drop bytes until its newline
        self._lineno = 1
        self._decoder: LineDecoder | None = None

    def open(self) -> dict[str, Any]:
        """Open the file and read its header; :class:`SessionError` when it is not a session (yet: an
        owner that has not written its header is "not a session", and the caller may retry)."""
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            raise SessionError(self.path, "no such file") from None
        except IsADirectoryError:
            raise SessionError(self.path, "is a directory, not a session file") from None
        except OSError as exc:
            raise SessionError(self.path, f"cannot read: {exc.strerror or exc}") from None
        try:
            first = fh.readline(64 * 1024)
            if first.startswith(_GZIP_MAGIC):
                raise SessionError(self.path, "a compressed recording is finished: replay it instead")
            if not first.endswith(b"\n"):
                raise SessionError(self.path, "no complete header line yet")
            self.header = _parse_header(first.decode("utf-8", errors="replace"), self.path)
        except BaseException:
            fh.close()
            raise
        self._fh = fh
        self._ino = os.fstat(fh.fileno()).st_ino
        self._lineno = 2
        self._decoder = LineDecoder(LogCodec(self_contained=self_contained(self.header)))
        return self.header

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def replaced(self) -> bool:
        """The path now names another file (or none): what is open will not grow any more."""
        try:
            return os.stat(self.path).st_ino != self._ino
        except OSError:
            return True

    def read(self, limit: int = 2000) -> list[Event | FeedControl]:
        """What is complete in the file now (possibly nothing), in file order."""
        fh, decoder = self._fh, self._decoder
        if fh is None or decoder is None:
            raise RuntimeError("FeedFollower.read before open()")
        out: list[Event | FeedControl] = []
        budget = READ_CHUNK
        while len(out) < limit and budget > 0 and not self.ended:
            nl = self._buf.find(b"\n")
            if nl < 0:
                chunk = fh.read(min(budget, READ_CHUNK))
                if not chunk:
                    break
                budget -= len(chunk)
                self._buf += chunk
                if self._skipping or (self._buf.find(b"\n") < 0 and len(self._buf) > self.max_line):
                    self._drop_overlong()
                continue
            raw, self._buf = self._buf[:nl], self._buf[nl + 1 :]
            lineno = self._lineno
            self._lineno += 1
            if self._skipping:
                self._skipping = False
                continue
            if len(raw) > self.max_line:
                self._warn(f"line {lineno}: longer than {self.max_line} bytes, ignored")
                continue
            if not raw.strip():
                continue
            if raw.startswith(_CONTROL_PREFIX):
                control = self._control(lineno, raw)
                if control is not None:
                    out.append(control)
                continue
            event, problem = decoder.decode(lineno, raw)
            if event is not None:
                out.append(event)
            elif problem is not None:
                self._warn(problem)
        return out

    def _drop_overlong(self) -> None:
        """The line being read is already longer than ``max_line``: forget it up to its newline."""
        nl = self._buf.find(b"\n")
        if not self._skipping:
            self._warn(f"line {self._lineno}: longer than {self.max_line} bytes, ignored")
            self._skipping = True
        if nl < 0:
            self._buf = b""
        else:
            self._buf = self._buf[nl:]  # the newline ends the skipped line on the next pass

    def _control(self, lineno: int, raw: bytes) -> FeedControl | None:
        try:
            data = json.loads(raw.decode("utf-8", errors="replace"))
        except ValueError:
            self._warn(f"line {lineno}: damaged control line, ignored")
            return None
        kind = data.get(CONTROL_KEY) if isinstance(data, dict) else None
        if not isinstance(kind, str):
            self._warn(f"line {lineno}: damaged control line, ignored")
            return None
        if kind == "source" and data.get("kind") in ("live", "replay"):
            self.source = data["kind"]
        elif kind == "end":
            self.ended = True
            reason = data.get("reason")
            self.end_reason = reason if isinstance(reason, str) else ""
        return FeedControl(kind, data)

    def _warn(self, message: str) -> None:
        self.skipped += 1
        if len(self.warnings) < 100:
            self.warnings.append(message)
