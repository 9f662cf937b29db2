"""Replay timing, speed, pause/resume and seeking, with timings small enough to keep the suite fast."""

from __future__ import annotations

import asyncio
import time

import pytest

from eagletui.core import events as ev
from eagletui.session.replay import Replayer, relative_times


def _events(offsets: list[float]) -> list[ev.Event]:
    return [ev.LogLine(text=str(i), seq=i, wall=5000.0 + t, mono=50.0 + t) for i, t in enumerate(offsets)]


async def _collect(r: Replayer, speed: float | str) -> tuple[list[ev.Event], list[float]]:
    start = time.monotonic()
    got, when = [], []
    async for e in r.play(speed=speed):
        got.append(e)
        when.append(time.monotonic() - start)
    return got, when


def test_relative_times_clock_fallbacks() -> None:
    es = [
        ev.LogLine(text="a", wall=100.0, mono=10.0),
        ev.LogLine(text="b", wall=101.0, mono=11.0),
        ev.LogLine(text="c", wall=103.0, mono=2.0),  # monotonic went back (another process): use wall
        ev.LogLine(text="d", wall=90.0, mono=1.0),  # both back: no time passes, order is kept
        ev.LogLine(text="e", wall=500.0, mono=400.0),
    ]
    assert relative_times(es) == [0.0, 1.0, 3.0, 3.0, 402.0]
    assert relative_times(es, max_gap=5)[-1] == 8.0


async def test_original_timing_at_speed_1() -> None:
    events = _events([0.0, 0.05, 0.15])
    got, when = await _collect(Replayer(events), 1.0)
    assert got == events
    assert when[1] >= 0.045 and when[2] >= 0.145
    assert when[2] < 1.0


async def test_speed_scales_timing() -> None:
    events = _events([0.0, 0.5, 1.0])
    got, when = await _collect(Replayer(events), 10)
    assert got == events
    assert 0.095 <= when[-1] < 0.6


async def test_instant_does_not_sleep() -> None:
    events = _events([i * 10.0 for i in range(1000)])  # 10 000 s of recording
    r = Replayer(events)
    got, when = await _collect(r, "instant")
    assert got == events and when[-1] < 2.0
    assert r.finished and r.position == pytest.approx(r.duration)


def test_bad_speed() -> None:
    for bad in (0, -1, "fast", True):
        with pytest.raises(ValueError):
            Replayer([]).set_speed(bad)  # type: ignore[arg-type]


async def test_pause_and_resume() -> None:
    events = _events([0.0, 0.02, 0.04])
    r = Replayer(events)
    got: list[ev.Event] = []

    async def consume() -> None:
        async for e in r.play(speed=1.0):
            got.append(e)
            if len(got) == 1:
                r.pause()

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.15)
    assert len(got) == 1 and r.paused
    frozen = r.position
    await asyncio.sleep(0.03)
    assert r.position == frozen  # the virtual clock stops while paused
    r.resume()
    await asyncio.wait_for(task, 2)
    assert got == events


async def test_seek_during_play_returns_prefix_and_continues() -> None:
    events = _events([0.0, 0.5, 1.0, 1.5, 2.0])
    r = Replayer(events)
    got: list[ev.Event] = []
    rebuilt: list[ev.Event] = []
    start = time.monotonic()
    async for e in r.play(speed=1.0):
        got.append(e)
        if len(got) == 1:
            rebuilt = r.seek(fraction=0.7)  # t = 1.4 s
            assert r.position == pytest.approx(1.4, abs=0.05)
    assert rebuilt == events[:3]
    assert got == [events[0], events[3], events[4]]
    assert time.monotonic() - start < 1.4  # it jumped; it did not wait out the skipped 1.4 s


def test_events_until_and_seek_bounds() -> None:
    events = _events([0.0, 1.0, 2.0, 3.0])
    r = Replayer(events)
    assert r.duration == 3.0
    assert r.events_until(-1) == []
    assert r.events_until(1.0) == events[:2]
    assert r.events_until(99) == events
    assert r.seek(time=2.5) == events[:3] and r.index == 3
    assert r.seek(fraction=5) == events and r.finished
    assert r.seek(fraction=0) == events[:1]
    with pytest.raises(ValueError):
        r.seek()
    r.rewind()
    assert r.index == 0 and r.position == 0.0


async def test_seek_while_paused_then_resume() -> None:
    events = _events([0.0, 0.01, 5.0, 5.01])
    r = Replayer(events)
    r.pause()
    got: list[ev.Event] = []

    async def consume() -> None:
        async for e in r.play(speed=1.0):
            got.append(e)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.05)
    assert got == []  # paused before starting
    assert r.seek(time=4.99) == events[:2]
    r.resume()
    await asyncio.wait_for(task, 2)
    assert got == events[2:]


async def test_empty_replay() -> None:
    r = Replayer([])
    assert (await _collect(r, 2))[0] == [] and r.duration == 0.0 and r.fraction == 1.0
