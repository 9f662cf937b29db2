"""Replaying a recorded session with its original rhythm, faster, or all at once.

The replayer knows nothing about widgets: it only decides *when* each event is due. Seeking hands
back the events to fold into a fresh state, because state (phase timelines, charts) is rebuilt by
folding events, never by jumping into the middle of them.

:class:`Replayer` holds a list of events (tests, small recordings); :class:`StreamReplayer` has the
same interface over an indexed :class:`~eagletui.session.index.ReplaySource` and is what
``eagletui replay`` uses: it reads a block at a time, and its seek hands back a bounded catch-up
(context events plus a recent window) instead of everything before the target.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal

from eagletui.core.events import Event

Speed = float | Literal["instant"]


def _check_speed(speed: Speed) -> Speed:
    if speed == "instant":
        return speed
    if isinstance(speed, bool) or not isinstance(speed, int | float) or not speed > 0:
        raise ValueError(f"speed must be a positive number or 'instant', got {speed!r}")
    return float(speed)


def relative_times(events: Sequence[Event], max_gap: float | None = None) -> list[float]:
    """Seconds since the first event, never decreasing.

    Steps use the monotonic clock (immune to NTP jumps during the recording) and fall back to the
    wall clock when the monotonic one goes backwards (events from another process or a reboot).
    ``max_gap`` squeezes long idle stretches so a replay does not sit silent for ten minutes.
    """
    out: list[float] = []
    t = 0.0
    for i, ev in enumerate(events):
        if i:
            prev = events[i - 1]
            step = ev.mono - prev.mono
            if step < -1e-5:  # not a rounding of the recorded clock (exact only at keyframes)
                step = ev.wall - prev.wall
            step = max(0.0, step)
            if max_gap is not None:
                step = min(step, max_gap)
            t += step
        out.append(t)
    return out


class _VirtualClock:
    """The play clock both replayers share: a position that runs at ``speed`` times real time from an
    anchor, and pause, resume and re-speed that move the anchor. Subclasses provide ``duration`` and
    ``finished`` and set ``_playing`` while ``play()`` iterates."""

    _clock: Callable[[], float]
    _pos: float
    _anchor: float
    _speed: Speed
    _paused: bool
    _playing: bool
    _wake: asyncio.Event | None

    def _init_clock(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._pos = 0.0  # virtual position at the anchor
        self._anchor = clock()
        self._speed = 1.0
        self._paused = False
        self._playing = False
        self._wake = None

    @property
    def duration(self) -> float:
        raise NotImplementedError

    @property
    def finished(self) -> bool:
        raise NotImplementedError

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def speed(self) -> Speed:
        return self._speed

    @property
    def position(self) -> float:
        """Current virtual time in seconds from the start of the recording."""
        if self._paused or not self._playing or self._speed == "instant":
            return self._pos
        return min(self.duration, self._pos + (self._clock() - self._anchor) * float(self._speed))

    @property
    def fraction(self) -> float:
        return self.position / self.duration if self.duration else (1.0 if self.finished else 0.0)

    def _reanchor(self) -> None:
        self._pos = self.position
        self._anchor = self._clock()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def pause(self) -> None:
        if not self._paused:
            self._reanchor()
            self._paused = True
            self._poke()

    def resume(self) -> None:
        if self._paused:
            self._anchor = self._clock()
            self._paused = False
            self._poke()

    def toggle_pause(self) -> bool:
        """Flip pause; returns the new paused state (handy for a single key binding)."""
        self.resume() if self._paused else self.pause()
        return self._paused

    def set_speed(self, speed: Speed) -> None:
        speed = _check_speed(speed)
        self._reanchor()
        self._speed = speed
        self._poke()

    async def _sleep_until(
        self, due: float, moved: Callable[[], bool], *, max_gap: float | None = None
    ) -> bool:
        """Sleep until virtual time reaches ``due`` (pauses, speed changes and seeks wake it); False
        when ``moved()`` says a seek took the cursor elsewhere meanwhile. With ``max_gap`` an idle
        stretch longer than that is skipped instead of waited out."""
        assert self._wake is not None
        while True:
            if moved():
                return False
            if self._paused:
                self._wake.clear()
                await self._wake.wait()
                continue
            if self._speed == "instant":
                return True
            if max_gap is not None and due - self.position > max_gap:
                self._pos, self._anchor = due - max_gap, self._clock()  # skip the idle stretch
            remaining = (due - self.position) / float(self._speed)
            if remaining <= 0:
                return True
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._wake.wait()


class Replayer(_VirtualClock):
    """Plays events on a virtual clock that runs at ``speed`` times real time and can be paused,
    re-speeded and repositioned while ``play()`` is iterating."""

    def __init__(
        self,
        events: Sequence[Event],
        *,
        max_gap: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.events: list[Event] = list(events)
        self.times = relative_times(self.events, max_gap)
        self._init_clock(clock)
        self._index = 0

    # -- inspection -----------------------------------------------------------------------------

    @property
    def duration(self) -> float:
        return self.times[-1] if self.times else 0.0

    @property
    def index(self) -> int:
        """Index of the next event to be played."""
        return self._index

    @property
    def finished(self) -> bool:
        return self._index >= len(self.events)

    def events_until(self, t: float) -> list[Event]:
        """Every event at or before ``t`` seconds: what a state builder must fold to stand at ``t``."""
        return self.events[: bisect.bisect_right(self.times, t)]

    # -- control --------------------------------------------------------------------------------

    def seek(self, fraction: float | None = None, *, time: float | None = None) -> list[Event]:
        """Move to a fraction of the duration (or to ``time`` seconds); returns the events up to
        there, which the caller re-feeds into a fresh state. Playback continues after them."""
        if (fraction is None) == (time is None):
            raise ValueError("seek needs exactly one of fraction or time")
        t = fraction * self.duration if fraction is not None else float(time or 0.0)
        t = min(max(t, 0.0), self.duration)
        before = self.events_until(t)
        self._index = len(before)
        self._pos = t
        self._anchor = self._clock()
        self._poke()
        return before

    def rewind(self) -> None:
        self.seek(time=0.0)
        self._index = 0

    # -- playback -------------------------------------------------------------------------------

    async def _wait_until_due(self, due: float) -> bool:
        """Sleep until virtual time reaches ``due``; False if a seek moved the cursor meanwhile."""
        index = self._index
        return await self._sleep_until(due, lambda: self._index != index)

    async def play(self, speed: Speed | None = None) -> AsyncIterator[Event]:
        """Yield the remaining events as they fall due. With ``"instant"`` nothing sleeps, but the
        loop still yields control now and then so a long file does not freeze the UI."""
        if speed is not None:
            self.set_speed(speed)
        self._wake = asyncio.Event()
        self._anchor = self._clock()
        self._playing = True
        try:
            since_yield = 0
            while self._index < len(self.events):
                i = self._index
                if not await self._wait_until_due(self.times[i]):
                    continue  # seeked: start again from the new cursor
                if self._index != i:
                    continue
                self._index = i + 1
                if self._speed == "instant" or self._pos > self.times[i]:
                    self._pos = max(self._pos, self.times[i])
                    self._anchor = self._clock()
                since_yield += 1
                if self._speed == "instant" and since_yield >= 200:
                    since_yield = 0
                    await asyncio.sleep(0)
                yield self.events[i]
        finally:
            self._reanchor()
            self._playing = False


class StreamReplayer(_VirtualClock):
    """:class:`Replayer`'s interface over an indexed :class:`~eagletui.session.index.ReplaySource`:
    the recording is read a block at a time as playback reaches it, never held whole, so a
    million-event session plays, pauses and seeks like a small one.

    Differences from :class:`Replayer`: positions are the recording's own seconds (``--at 90`` is 90 s
    into the session); ``max_gap`` skips idle stretches during playback instead of squeezing the
    timeline; and :meth:`seek` hands back a bounded catch-up (every launch/config/phase/benchmark
    event before the target plus the last ``window`` events) instead of everything before it.
    :meth:`start_at` seeks before ``play()`` starts: ``play()`` then yields the catch-up first and
    waits, paused, at the target — which is how ``eagletui replay --at/--launch`` reaches today's UI.
    """

    def __init__(
        self,
        source: Any,
        *,
        max_gap: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        window: int | None = None,
    ):
        from eagletui.session.index import SEEK_WINDOW
        from eagletui.session.timeline import Position

        self.source = source
        self.max_gap = max_gap
        self.window = SEEK_WINDOW if window is None else window
        self._init_clock(clock)
        self._cursor = Position(0, 0.0)
        self._pending: list[Event] = []
        self._gen = 0  # bumped by every seek: a play loop on an older generation starts over
        self._finished = False

    # -- inspection -----------------------------------------------------------------------------

    @property
    def duration(self) -> float:
        return float(self.source.duration)

    @property
    def marks(self) -> list[Any]:
        """The timeline (:class:`~eagletui.session.index.Mark`: launches, config changes, ready,
        failures, exits, benchmark results, each with ``t`` seconds from the start)."""
        return list(self.source.marks)

    @property
    def index(self) -> int:
        """Line number of the next event to be played."""
        return self._cursor.line

    @property
    def finished(self) -> bool:
        return self._finished or self._cursor.line >= self.source.events_count

    # -- control --------------------------------------------------------------------------------

    def _target(self, fraction: float | None, time_s: float | None, launch: int | None, mark: Any) -> Any:
        given = [x for x in (fraction, time_s, launch, mark) if x is not None]
        if len(given) != 1:
            raise ValueError("seek needs exactly one of fraction, time, launch or mark")
        if fraction is not None:
            return self.source.seek(time=fraction * self.duration)
        return self.source.seek(time=time_s, launch=launch, mark=mark)  # KeyError names the launches

    def seek(
        self,
        fraction: float | None = None,
        *,
        time: float | None = None,
        launch: int | None = None,
        mark: Any = None,
    ) -> list[Event]:
        """Move to a fraction of the duration, ``time`` seconds, just after launch ``launch`` started,
        or just after a :class:`~eagletui.session.index.Mark`; returns the catch-up events, which the
        caller folds into a fresh state. Playback continues from there."""
        pos = self._target(fraction, time, launch, mark)
        catch_up = self.source.catch_up(pos, self.window)
        self._cursor = pos
        self._finished = False
        self._pos = pos.t
        self._anchor = self._clock()
        self._gen += 1
        self._pending = []
        self._poke()
        return catch_up

    def seek_mark(self, step: int, kinds: frozenset[str] | None = None) -> list[Event] | None:
        """To the next (``step`` > 0) or previous mark (of ``kinds``, e.g. launch and config) from the
        current position; None when there is none that way. For ``[``/``]`` in the UI."""
        here = self.position
        marks = [m for m in self.source.marks if kinds is None or m.kind in kinds]
        if step > 0:
            ahead = [m for m in marks if m.t > here + 1e-6]
            return self.seek(mark=ahead[0]) if ahead else None
        behind = [m for m in marks if m.t < here - 0.5]  # 0.5 s: pressing twice goes further back
        return self.seek(mark=behind[-1]) if behind else None

    def start_at(
        self, *, time: float | None = None, launch: int | None = None, mark: Any = None, paused: bool = True
    ) -> None:
        """Before ``play()``: seek, and have ``play()`` yield the catch-up first (into the UI's fresh
        state) and then wait there, paused unless ``paused=False``."""
        catch_up = self.seek(time=time, launch=launch, mark=mark)
        self._pending = catch_up
        if paused:
            self.pause()

    def prepend(self, events: Sequence[Event]) -> None:
        """Have ``play()`` yield ``events`` first (a warning about the recording, say)."""
        self._pending = [*events, *self._pending]

    def rewind(self) -> None:
        self.seek(time=0.0)

    # -- playback -------------------------------------------------------------------------------

    async def _wait_until_due(self, due: float, gen: int) -> bool:
        return await self._sleep_until(due, lambda: self._gen != gen, max_gap=self.max_gap)

    async def play(self, speed: Speed | None = None) -> AsyncIterator[Event]:
        """Yield events as they fall due, reading the file a block at a time."""
        from eagletui.session.timeline import Position

        if speed is not None:
            self.set_speed(speed)
        self._wake = asyncio.Event()
        self._anchor = self._clock()
        self._playing = True
        try:
            since_yield = 0
            while True:
                gen = self._gen
                pending, self._pending = self._pending, []
                for ev in pending:
                    yield ev
                    if self._gen != gen:
                        break
                if self._gen != gen:
                    continue
                restarted = False
                for line, t, ev in self.source.events_from(self._cursor):
                    if not await self._wait_until_due(t, gen) or self._gen != gen:
                        restarted = True
                        break
                    self._cursor = Position(line + 1, t)
                    if self._speed == "instant" or self._pos > t:
                        self._pos = max(self._pos, t)
                        self._anchor = self._clock()
                    since_yield += 1
                    if self._speed == "instant" and since_yield >= 200:
                        since_yield = 0
                        await asyncio.sleep(0)
                        if self._gen != gen:  # a seek while we yielded the loop: ev is from before it
                            restarted = True
                            break
                    yield ev
                    if self._gen != gen:
                        restarted = True
                        break
                if restarted:
                    continue
                self._finished = True
                self._pos = self.duration
                return
        finally:
            self._reanchor()
            self._playing = False
