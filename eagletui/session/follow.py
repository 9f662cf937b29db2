"""The read-only view of a session someone else controls: :class:`FollowDriver`.

It folds a growing feed (:mod:`eagletui.session.feed`) into its own session model — first everything
already written, at once, then each new line as it lands — so a second browser tab shows what the
owner's tab shows without being able to change it: it has no workspace, so it cannot launch, stop,
benchmark or profile, and it never records or learns phase durations (the owner does both).

No Textual here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from eagletui.core.events import Event
from eagletui.core.timings import REAL, Timings
from eagletui.session.drivers import Driver, DriverHost
from eagletui.session.feed import FeedControl, FeedFollower
from eagletui.session.format import SessionError

if TYPE_CHECKING:
    from eagletui.session.model import SessionModel
    from eagletui.session.presence import Presence

#: Events folded before the view lets the UI paint (a long session catches up in slices).
SLICE = 2000


class FollowDriver(Driver):
    """Follows a feed read-only; ``presence`` (when served) names the owner and says when it left."""

    kind = "follow"
    read_only: ClassVar[bool] = True

    def __init__(self, follower: FeedFollower, *, presence: Presence | None = None, timings: Timings = REAL) -> None:
        self.source = follower
        self.presence = presence
        #: ``session.follow_poll_s``: how often the feed is looked at once the view has caught up;
        #: ``session.follow_open_s``: how long a view waits for an owner that has not written its header
        self.timings = timings
        self.done = asyncio.Event()  # set once the feed has ended (or can no longer grow)

    @property
    def learns_history(self) -> bool:
        return False  # the owner's app records the launches; a view would count them twice

    @property
    def rings_bells(self) -> bool:
        return False  # the owner's tab rings; every view ringing too is noise

    def refusal(self) -> str:
        if self.presence is None:
            return "read-only view: this follows a recording; the eagletui writing it has the controls"
        return f"read-only view: {self.presence.owner_label()} controls this session"

    def no_bench_here(self) -> str:
        # a view of a live session is no recording (issue 33 item 19: it said "in this recording")
        if self.source.source == "replay":
            return super().no_bench_here()
        return "no benchmark yet in this session: the tab in control runs them (this view is read-only)"

    def now(self, model: SessionModel, clock: Callable[[], float]) -> float:
        # a view of a replay measures elapsed times to the replay's clock, a live one to now
        if self.source.source == "replay":
            return model.state.last_wall or clock()
        return clock()

    async def _open(self, host: DriverHost) -> bool:
        open_s = self.timings.session.follow_open_s
        deadline = asyncio.get_running_loop().time() + open_s
        while True:
            try:
                self.source.open()
                return True
            except SessionError as exc:
                if "no complete header" not in exc.reason and "no such file" not in exc.reason:
                    host.notify(str(exc), title="cannot follow", severity="error", timeout=30)
                    return False
                if asyncio.get_running_loop().time() > deadline:
                    host.notify(
                        f"{exc} after {open_s:.0f} s waiting for the session to start",
                        title="cannot follow",
                        severity="error",
                        timeout=30,
                    )
                    return False
            await asyncio.sleep(self.timings.session.follow_poll_s)

    def _fold(self, items: list[Event | FeedControl], model: SessionModel, host: DriverHost) -> None:
        for item in items:
            if isinstance(item, FeedControl):
                if item.kind == "reset":
                    model.reset()
                continue
            try:
                host.dispatch(item)
            except Exception as exc:  # a damaged event must not end the view silently
                host.notify(f"skipped a damaged event ({type(exc).__name__}: {exc})", severity="warning")

    async def run(self, model: SessionModel, host: DriverHost) -> None:
        if not await self._open(host):
            self.done.set()
            return
        src = self.source
        caught_up = False
        reported = 0
        try:
            while True:
                items = src.read(SLICE)
                self._fold(items, model, host)
                if len(src.warnings) > reported:
                    host.notify(f"feed: {src.warnings[reported]}", severity="warning")
                    reported = len(src.warnings)
                if src.ended:
                    host.settled()
                    host.notify(self._ended_words(), title="session ended", timeout=30)
                    break
                if items and len(items) >= SLICE:
                    await asyncio.sleep(0)  # more is there: let the UI breathe, then go on
                    continue
                if not caught_up:
                    caught_up = True
                    host.settled()
                if not items and self._orphaned():
                    host.settled()
                    host.notify(
                        "the tab that controlled this session is gone", title="session ended", timeout=30
                    )
                    break
                await asyncio.sleep(self.timings.session.follow_poll_s)
        finally:
            self.done.set()

    def _orphaned(self) -> bool:
        """Nothing new, and nothing more can come: the file was replaced, or the owner has gone."""
        if self.source.replaced():
            return True
        return bool(self.presence is not None and self.presence.owner_gone())

    def _ended_words(self) -> str:
        reason = self.source.end_reason
        return f"the session ended: {reason}" if reason else "the session ended"

    async def close(self) -> None:
        self.source.close()
