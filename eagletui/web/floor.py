"""Who has the floor: the first tab gets the session, the others read-only views of it (:class:`Floor`).

A served session is one eagletui app with one driver: two tabs each starting their own app would be
two sessions fighting over one server (two demos, two connections launching on one host). So a tab
that arrives while another owns the session gets a *viewer* process instead: ``eagletui replay FEED
--follow`` on the owner's feed (:mod:`eagletui.session.feed`), which shows the same screen and can
change nothing. Control stays with the owner until its tab closes; its app then quits like ``q``
(a demo's simulator stops, a live server keeps running), and the next tab to arrive owns a new
session. A tab that arrives while the old owner is still quitting waits for it (bounded), so two
owners never overlap. Every change rewrites the presence file (:mod:`eagletui.session.presence`)
the apps read to say who controls.

No HTTP here: the server (:mod:`eagletui.web.server`) calls :meth:`Floor.arrive` and
:meth:`Floor.leave` around each tab's socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagletui.core.timings import Timings
from eagletui.session.presence import (
    FEED_ENV,
    PRESENCE_ENV,
    ROLE_ENV,
    SESSION_ENV,
    VISIT_ENV,
    write_presence,
)

#: The driver every served app draws through (see :mod:`eagletui.web.driver`).
DRIVER = "eagletui.web.driver:EagleWebDriver"
#: How long a new tab waits for the previous owner's app to finish quitting before it gives up.



@dataclass
class Visit:
    """One tab: its number, role, the session it belongs to, when it came, and its app's pid."""

    number: int
    role: str  # "owner" | "viewer"
    session: int
    feed: Path
    since: float = field(default_factory=time.time)
    pid: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "visit": self.number,
            "role": self.role,
            "session": self.session,
            "since": self.since,
            "pid": self.pid,
        }


class HandoverTimeout(Exception):
    """The previous owner's app did not finish quitting in time."""


class Floor:
    """The served session's tabs. ``owner_argv`` runs the session (``eagletui demo …``); a viewer runs
    ``eagletui replay FEED --follow``. ``runtime`` is the server's private directory (0700)."""

    def __init__(
        self, runtime: Path, owner_argv: Sequence[str], *, timings: Timings, python: str = sys.executable
    ) -> None:
        #: ``session.web_handover_s``: a new owner waits this long for the previous one to quit
        self.timings = timings
        self.runtime = runtime
        self.owner_argv = list(owner_argv)
        self.python = python
        self.presence_path = runtime / "presence.json"
        self.owner: Visit | None = None
        self.viewers: dict[int, Visit] = {}
        self.session = 0
        self.owner_leaving = False  # the owner's tab closed, its app is quitting
        self._visits = 0
        self._owner_gone = asyncio.Event()
        self._owner_gone.set()
        self._lock = asyncio.Lock()
        self.publish()

    # ------------------------------------------------------------------ arrivals and departures

    async def arrive(self) -> Visit:
        """A new tab: the owner of a new session when nobody owns one, else a viewer of the current
        one. Waits (at most the timings' ``session.web_handover_s``) while a previous owner is still quitting."""
        async with self._lock:
            self._visits += 1
            number = self._visits
            if self.owner is not None and not self.owner_leaving:
                visit = Visit(number, "viewer", self.session, self.owner.feed)
                self.viewers[number] = visit
                self.publish()
                return visit
            try:
                async with asyncio.timeout(self.timings.session.web_handover_s):
                    await self._owner_gone.wait()
            except TimeoutError:
                raise HandoverTimeout(
                    f"the previous session's app has not quit after {self.timings.session.web_handover_s:.0f} s"
                ) from None
            self.session += 1
            feed = self.runtime / f"feed-{self.session}.jsonl"
            self.owner = Visit(number, "owner", self.session, feed)
            self.owner_leaving = False
            self._owner_gone.clear()
            self.publish()
            return self.owner

    def leaving(self, visit: Visit) -> None:
        """The tab's socket closed; its app is being stopped. A new tab now gets a new session (after
        this app has quit), not a view of the one that is ending."""
        if visit is self.owner:
            self.owner_leaving = True
        self.viewers.pop(visit.number, None)
        self.publish()

    def left(self, visit: Visit) -> None:
        """The tab's app has exited."""
        if visit is self.owner:
            self.owner = None
            self.owner_leaving = False
            self._owner_gone.set()
        self.viewers.pop(visit.number, None)
        self.publish()

    # ------------------------------------------------------------------ what each app runs

    def argv(self, visit: Visit) -> list[str]:
        if visit.role == "owner":
            return list(self.owner_argv)
        return [self.python, "-m", "eagletui", "replay", str(visit.feed), "--follow"]

    def env(self, visit: Visit, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env.update(
            {
                "TEXTUAL_DRIVER": DRIVER,
                "TEXTUAL_FPS": "60",
                "TEXTUAL_COLOR_SYSTEM": "truecolor",
                "TERM_PROGRAM": "textual",
                ROLE_ENV: visit.role,
                PRESENCE_ENV: str(self.presence_path),
                VISIT_ENV: str(visit.number),
                SESSION_ENV: str(visit.session),
            }
        )
        if visit.role == "owner":
            env[FEED_ENV] = str(visit.feed)
        else:
            env.pop(FEED_ENV, None)
        return env

    # ------------------------------------------------------------------ presence

    def state(self) -> dict[str, Any]:
        owner = self.owner if self.owner is not None and not self.owner_leaving else None
        return {
            "server_pid": os.getpid(),
            "session": self.session,
            "owner": owner.as_dict() if owner is not None else None,
            "viewers": sum(1 for v in self.viewers.values() if v.session == self.session),
            "feed": str(owner.feed) if owner is not None else None,
            "visits": [
                v.as_dict() for v in ([self.owner] if self.owner else []) + list(self.viewers.values())
            ],
            "updated": time.time(),
        }

    def publish(self) -> None:
        with contextlib.suppress(OSError):  # the runtime dir is going away (shutdown)
            write_presence(self.presence_path, self.state())
