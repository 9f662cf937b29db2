"""A browser tab is taken as gone only after several unanswered pings, counted in beats.

Under load the browser test's owner "left and never came back": ``eagletui serve`` used aiohttp's
heartbeat, which closes a tab whose one pong is more than 7.5 s late, and closing the owner's socket
quits the session. (Measured before the fix: a real ``eagletui serve replay`` and a tab that answered
its first ping 9 s late lost its session 23 s in.) Here the rule, then the server: a real
:class:`~eagletui.web.server.WebServer` on a loopback port, a real websocket client, the tab's app a
real process (a stand-in that draws nothing), and the watcher's clock stepped by the test so each
beat happens when the test says, whatever the machine's load.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from eagletui.core.timings import FAST, Timings
from eagletui.web.floor import Floor
from eagletui.web.heartbeat import TabHeartbeat
from eagletui.web.server import serve

MISSES = 3
#: the tab's app: says it draws through the web driver, then quits on the first byte it is sent
#: (the server's ``quit``)
APP = "import sys; sys.stdout.write('__GANGLION__\\n'); sys.stdout.flush(); sys.stdin.buffer.read(1)"
WAIT = 30.0  # bounded waits for what a step causes (real time: a loaded machine is slow, never wrong)


def test_a_tab_is_gone_after_misses_pings_in_a_row_not_after_one_late_answer() -> None:
    beat = TabHeartbeat(misses=3)
    assert [beat.beat() for _ in range(3)] == [True, True, True]  # three pings, none answered yet
    beat.heard()  # the answer to the first, late: the count starts again
    assert [beat.beat() for _ in range(3)] == [True, True, True]
    assert beat.beat() is False  # a fourth beat after three silent pings: gone
    assert beat.beat() is False
    for bad in (0, -1):
        with pytest.raises(ValueError, match="at least one ping"):
            TabHeartbeat(misses=bad)


class StepClock:
    """The watcher's clock: each ``sleep`` is one beat, and it passes when the test says."""

    def __init__(self) -> None:
        self._beats = asyncio.Semaphore(0)

    def monotonic(self) -> float:
        return 0.0

    def wall(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        await self._beats.acquire()

    def tick(self) -> None:
        self._beats.release()


class Served:
    def __init__(self, floor: Floor, clock: StepClock, port: int) -> None:
        self.floor, self.clock, self.port = floor, clock, port

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/tok/ws?width=80&height=24"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    clock = StepClock()
    timings: Timings = dataclasses.replace(
        FAST.replace(session_web_ping_misses=MISSES, session_web_quit_s=WAIT), clock=clock
    )
    floor = Floor(tmp_path, [sys.executable, "-c", APP], timings=timings)
    stop = asyncio.Event()
    bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(
        serve(floor, token="tok", title="t", host="127.0.0.1", port=0, stop=stop, ready=bound.set_result)
    )
    port = await asyncio.wait_for(bound, WAIT)
    try:
        yield Served(floor, clock, port)
    finally:
        stop.set()
        await asyncio.wait_for(task, WAIT)


async def _owner_drawn(s: Served) -> Any:
    async def started() -> Any:
        while s.floor.owner is None or s.floor.owner.pid is None:
            await asyncio.sleep(0.01)
        return s.floor.owner

    return await asyncio.wait_for(started(), WAIT)


async def _ping(ws: aiohttp.ClientWebSocketResponse, clock: StepClock) -> aiohttp.WSMessage:
    """One beat; the server's ping as the tab receives it."""
    clock.tick()
    msg = await ws.receive(timeout=WAIT)
    assert msg.type == aiohttp.WSMsgType.PING, msg
    return msg


async def _settle() -> None:
    """Let the server read what the tab just sent (one loopback write, a few turns of this loop)."""
    for _ in range(50):
        await asyncio.sleep(0)


async def test_a_tab_that_answers_late_keeps_its_session_and_a_silent_one_is_closed(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="eagletui.serve")
    async with aiohttp.ClientSession() as session:
        # autoping off: the tab answers (or not) when the test says, as a stalled tunnel would
        async with session.ws_connect(served.ws_url, autoping=False) as ws:
            owner = await _owner_drawn(served)
            # every ping answered one beat late (the pong behind the next ping): never gone
            late = await _ping(ws, served.clock)
            for _ in range(8):
                nxt = await _ping(ws, served.clock)
                await ws.pong(late.data)
                await _settle()
                late = nxt
            # answered right away, pong only (what an idle browser sends): never gone
            for _ in range(MISSES + 2):
                await ws.pong((await _ping(ws, served.clock)).data)
                await _settle()
            assert served.floor.owner is owner and not ws.closed
            assert "taken as closed" not in caplog.text

            # silent: MISSES pings unanswered, then the next beat closes the tab
            for _ in range(MISSES):
                await _ping(ws, served.clock)
            served.clock.tick()
            msg = await ws.receive(timeout=WAIT)
            assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), msg
    assert f"answered none of {MISSES} pings" in caplog.text

    async def gone() -> None:
        while served.floor.owner is not None:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(gone(), WAIT)  # the owner's app quit: a new tab gets a new session
    assert served.floor.state()["owner"] is None
