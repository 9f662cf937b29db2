"""Whether a browser tab is still there: pings counted in beats, not a pong's lateness in seconds.

A tab's socket can go half-open (a laptop that slept, a tunnel that died without a FIN), and only a
ping finds that out. aiohttp's own heartbeat (``heartbeat=15``) closes the socket when one pong is
more than half the interval (7.5 s) late, and closing the owner's socket quits the owner's app: the
session, and a demo's simulator with it. A pong is late for reasons that say nothing about the tab:
a loaded machine, an ``ssh -L`` over a slow link (the ping waits behind screen updates already in
flight), a browser busy elsewhere. A user lost the session that way (under load, the browser test's
owner left and never came back).

So the rule here is counted: the tab is pinged every ``session.web_ping_s`` seconds, anything it
sends (a pong, a key, a resize) is an answer, and it is taken as gone only when
``session.web_ping_misses`` pings in a row got no answer — about a minute of silence with the real
timings. The count is in beats of this loop, not in elapsed time: a loop that was itself stalled
for a minute wakes to one more beat, not to a verdict, because the answer waiting in the socket is
read before the next beat can count it missing.
"""

from __future__ import annotations

from aiohttp import web

from eagletui.core.timings import Timings


class TabHeartbeat:
    """Counts the pings a tab has left unanswered; :meth:`beat` says whether to ping again or give up."""

    def __init__(self, misses: int) -> None:
        if misses < 1:
            raise ValueError(f"a tab is given at least one ping to answer, not {misses}")
        self.misses = misses
        #: pings sent since the tab last said anything
        self.unanswered = 0

    def heard(self) -> None:
        """The tab sent something: it is there."""
        self.unanswered = 0

    def beat(self) -> bool:
        """One beat: True when the tab is to be pinged (it counts as unanswered until :meth:`heard`),
        False when ``misses`` pings in a row went unanswered: the tab is gone."""
        if self.unanswered >= self.misses:
            return False
        self.unanswered += 1
        return True


async def watch_tab(ws: web.WebSocketResponse, heartbeat: TabHeartbeat, timings: Timings) -> str:
    """Pings the tab every ``session.web_ping_s`` of the timings' clock until the socket closes ("")
    or the tab stops answering (why, for the server's log). The tab's reader calls
    :meth:`TabHeartbeat.heard` on every message."""
    every = timings.session.web_ping_s
    while not ws.closed:
        await timings.clock.sleep(every)
        if ws.closed:
            break
        if not heartbeat.beat():
            return (
                f"the browser answered none of {heartbeat.misses} pings sent {every:g} s apart "
                "(a closed laptop or a dead tunnel): taken as closed"
            )
        try:
            await ws.ping()
        except (ConnectionError, RuntimeError):  # closing under us: the reader sees the end
            break
    return ""
