"""Who is looking at a served session and who controls it: a small JSON file the ``eagletui serve``
server rewrites whenever a tab comes or goes, read by the app processes behind the tabs.

The server is the only one that knows every tab; each tab's app is a separate process. A file in the
server's private runtime directory (0700, the file 0600, replaced atomically) is the simplest channel
that survives any of them dying: a reader that finds it missing or damaged says "unknown", never
guesses. The app learns its own role from the environment the server started it with.

No Textual, no HTTP here.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eagletui.core.timings import REAL

#: What the server puts in each app process's environment.
ROLE_ENV = "EAGLETUI_SERVE_ROLE"  # "owner" | "viewer"
PRESENCE_ENV = "EAGLETUI_SERVE_PRESENCE"  # the presence file
FEED_ENV = "EAGLETUI_SERVE_FEED"  # the owner writes its feed here
VISIT_ENV = "EAGLETUI_SERVE_VISIT"  # this tab's number (1, 2, …)
SESSION_ENV = "EAGLETUI_SERVE_SESSION"  # the session number this tab belongs to

#: A presence file is a few hundred bytes; anything much larger is not one.
MAX_PRESENCE_BYTES = 64 * 1024
#: How often a reader looks at the file again (the UI asks at 10 Hz).


def write_presence(path: Path, data: dict[str, Any]) -> None:
    """Replace the presence file atomically (a reader never sees half of it), mode 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.write(fd, json.dumps(data, separators=(",", ":")).encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _visitor(visit: Any) -> str:
    return f"tab #{visit}" if isinstance(visit, int) and not isinstance(visit, bool) else "another tab"


class Presence:
    """One tab's view of the presence file: its role, who controls, how many watch.

    ``role`` is ``owner`` (this tab has the session) or ``viewer`` (a read-only view of session
    ``session``). :meth:`label` is the line the status header shows; :meth:`owner_gone` tells a view
    whether the session it follows has lost its owner (the feed may never say ``end`` if the owner's
    process was killed)."""

    def __init__(
        self,
        path: str | Path | None,
        *,
        role: str,
        visit: int | None = None,
        session: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        reread_s: float = REAL.session.presence_reread_s,
    ) -> None:
        self.path = Path(path) if path else None
        self.reread_s = reread_s
        self.role = role if role in ("owner", "viewer") else "viewer"
        self.visit = visit
        self.session = session
        self._clock = clock
        self._read_at = float("-inf")
        self._data: dict[str, Any] | None = None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Presence | None:
        """The presence of this process when ``eagletui serve`` started it, else None."""
        env = os.environ if environ is None else environ
        role = env.get(ROLE_ENV, "")
        if role not in ("owner", "viewer"):
            return None
        return cls(
            env.get(PRESENCE_ENV) or None,
            role=role,
            visit=_int(env.get(VISIT_ENV)),
            session=_int(env.get(SESSION_ENV)),
        )

    @property
    def read_only(self) -> bool:
        return self.role != "owner"

    def read(self) -> dict[str, Any] | None:
        """The presence file's content (re-read at most every ``reread_s``), None when unknown."""
        now = self._clock()
        if now - self._read_at < self.reread_s:
            return self._data
        self._read_at = now
        self._data = None
        if self.path is None:
            return None
        with contextlib.suppress(OSError, ValueError, UnicodeDecodeError):
            with open(self.path, "rb") as fh:
                raw = fh.read(MAX_PRESENCE_BYTES + 1)
            if len(raw) <= MAX_PRESENCE_BYTES:
                data = json.loads(raw.decode("utf-8"))
                if isinstance(data, dict):
                    self._data = data
        return self._data

    def _owner(self, data: dict[str, Any]) -> dict[str, Any] | None:
        owner = data.get("owner")
        return owner if isinstance(owner, dict) else None

    def _viewers(self, data: dict[str, Any]) -> int:
        n = data.get("viewers")
        return n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1_000_000 else 0

    def owner_gone(self) -> bool | None:
        """True when the session this tab follows has no owner any more; None when unknown."""
        data = self.read()
        if data is None:
            return None
        owner = self._owner(data)
        return owner is None or owner.get("session") != self.session

    def owner_label(self) -> str:
        """Who controls, in words: ``tab #1 (since 10:32:05)``."""
        data = self.read()
        owner = self._owner(data) if data is not None else None
        if owner is None:
            return "no tab"
        since = owner.get("since")
        when = ""
        if isinstance(since, int | float) and not isinstance(since, bool) and 0 < since < 1e11:
            when = f" (since {time.strftime('%H:%M:%S', time.localtime(since))})"
        return f"{_visitor(owner.get('visit'))}{when}"

    def label(self) -> str:
        """The status header's words for this tab's control: who controls, how many watch."""
        data = self.read()
        if self.role == "owner":
            if data is None:
                return "◆ you control this session"
            n = self._viewers(data)
            watching = f"{n} read-only view{'s' if n != 1 else ''}" if n else "no other tabs"
            return f"◆ you control this session · {watching}"
        if data is None:
            return "◇ read-only view"
        owner = self._owner(data)
        current = data.get("session")
        if owner is not None and owner.get("session") == self.session:
            return f"◇ read-only view · {self.owner_label()} controls"
        if isinstance(current, int) and current != self.session:
            return "◇ read-only view · a new session started: reload to follow it"
        return "◇ read-only view · the session ended (its tab closed): reload to start one"


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None
