"""Stall detection for the built-in benchmark: a server that stops answering ends the benchmark in
about a minute, with what was measured, instead of each request waiting out its own 5-minute timeout.

Two signs, both from :class:`~eagletui.bench.httplimits.HttpLimits`:

* a stream that has started and then goes silent for ``stall_s`` is stalled (tokens of a running
  request come every few milliseconds); the request ends with a "stalled" error
  (:func:`~eagletui.bench.stream.stream_generate` does that);
* no progress on any stream (no new token, no request finished) for ``server_stall_s`` while
  requests are in flight: the server is not serving, whether the requests are queued or started.

A third sign ends it as "server gone": requests in a row that found nothing listening on the port
(connection refused while the link is up; more of them than ``max_stalls`` and than twice the
concurrency, so one wave of a cut link never counts, and over at least ``gone_after_s``: the transport
reports a cut link a moment late, later on a loaded machine, and the refusals meanwhile are the link's).
A server killed mid-run once left a 400-prompt benchmark failing one request every ``link_settle_s``
for 50 s.

After ``max_stalls`` stalled streams, the whole-server stall or the gone server, :class:`StallWatch` sets ``halt``:
the pool stops drawing prompts and cancels what is in flight, and the result says "server stalled"
(or "server gone") with the reason and counts the abandoned requests as failed. While nothing moves it says every
``progress_s`` what it waits for (a ``Notice`` from source ``bench``: the headless bench prints it).

Kept apart from the client's request code: it only reads the shared token counter once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from eagletui.bench.httplimits import HttpLimits
from eagletui.core.events import Event, Notice

#: How often the watch looks at the token counter.


class StallWatch:
    """Watches one pool of requests; ``halt`` is the pool's stop event (the user's stop sets it too)."""

    def __init__(
        self,
        limits: HttpLimits,
        *,
        emit: Callable[[Event], None],
        total: int,
        concurrency: int,
        tokens: Callable[[], int],
        stop: asyncio.Event | None = None,
        what: str = "benchmark",
        waiting: Callable[[], bool] | None = None,
    ) -> None:
        self.lim = limits
        self.emit = emit
        self.total = total
        self.concurrency = max(1, concurrency)
        self.tokens = tokens
        self.user_stop = stop
        self.what = what
        #: True while the pool waits for the link to the host (no silence is the server's then)
        self.waiting = waiting
        self.halt = asyncio.Event()
        self.done = 0
        self.stalls = 0
        #: why the benchmark was halted as stalled ("" while it was not), and how: "stalled" or "gone"
        self.reason = ""
        self.kind = "stalled"
        #: requests in a row that found nothing listening (connection refused) while the link was up,
        #: and when the first of them ended
        self.refused = 0
        self._refused_since = 0.0
        #: requests in flight when it halted: counted as failed, they will never finish
        self.abandoned = 0
        self._last_progress = self.lim.clock.monotonic()
        self._last_tokens = 0
        self._last_said = 0.0

    @property
    def in_flight(self) -> int:
        return 0 if self.halt.is_set() else min(self.concurrency, max(0, self.total - self.done))

    def finished(self, stalled: bool, refused: bool = False) -> None:
        """A request ended (``stalled``: it had started and went silent; ``refused``: its connection
        was refused, nothing listens on the port)."""
        self.done += 1
        now = self._last_progress = self.lim.clock.monotonic()
        link_down = self.waiting is not None and self.waiting()
        self.refused = self.refused + 1 if refused and not link_down else 0
        if self.refused == 1:
            self._refused_since = now
        lasted = now - self._refused_since
        if (
            self.refused >= max(self.lim.max_stalls, 2 * self.concurrency)
            and lasted >= self.lim.gone_after_s
            and not self.halt.is_set()
        ):
            self._stall(
                f"{self.refused} requests in a row over {lasted:.1f}s found nothing listening on the server's "
                "port (connection refused)",
                free=1,
                kind="gone",
            )
            return
        if not stalled:
            return
        self.stalls += 1
        if self.stalls == 1:
            self._say(
                "warning",
                f"a request stalled: its stream went silent for {min(self.lim.stall_s, self.lim.idle_s):g}s "
                f"(the benchmark ends as 'server stalled' after {self.lim.max_stalls})",
            )
        if self.stalls >= self.lim.max_stalls and not self.halt.is_set():
            # this request's worker is between requests now: its slot is not in flight
            self._stall(
                f"{self.stalls} streams went silent for {min(self.lim.stall_s, self.lim.idle_s):g}s after they had started",
                free=1,
            )

    def _stall(self, reason: str, free: int = 0, kind: str = "stalled") -> None:
        self.abandoned = max(0, min(self.concurrency - free, self.total - self.done))
        self.reason = reason
        self.kind = kind
        self.halt.set()
        self._say(
            "warning",
            f"server {kind}: {reason}; stopped after {self.done}/{self.total} requests"
            + (f", {self.abandoned} abandoned" if self.abandoned else ""),
        )

    def _say(self, level: str, message: str) -> None:
        self.emit(Notice(level=level, message=f"{self.what}: {message}", source="bench"))

    def check(self, now: float | None = None) -> None:
        """One look: progress since the last, a progress line, or the whole-server stall."""
        now = self.lim.clock.monotonic() if now is None else now
        if self.waiting is not None and self.waiting():
            self._last_progress = now  # the link is down: nothing is drawn, nothing is the server's fault
            return
        tokens = self.tokens()
        if tokens != self._last_tokens:
            self._last_tokens = tokens
            self._last_progress = now
        n = self.in_flight
        if n == 0:
            self._last_progress = now
            return
        silent = now - self._last_progress
        if silent >= self.lim.server_stall_s:
            self._stall(
                f"no token from any of the {n} request(s) in flight for {silent:.0f}s "
                "(queued or streaming: the server is not serving)"
            )
        elif silent >= self.lim.progress_s and now - self._last_said >= self.lim.progress_s:
            self._last_said = now
            self._say(
                "info",
                f"waiting for the server: {n} request(s) in flight, no token for {silent:.0f}s, "
                f"{self.done}/{self.total} done (gives up at {self.lim.server_stall_s:g}s)",
            )

    async def run(self) -> None:
        """Look every ``limits.stall_poll_s`` until halted; the user's stop halts at once."""
        while not self.halt.is_set():
            if self.user_stop is not None and self.user_stop.is_set():
                self.halt.set()
                return
            self.check()
            if self.user_stop is None:
                await asyncio.sleep(self.lim.stall_poll_s)
                continue
            # not 3.11's wait_for, which drops a cancellation that lands as the user's stop comes: the
            # pool would then wait forever for a watch that goes on looking
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.lim.stall_poll_s):
                    await self.user_stop.wait()
