"""The instruments and drivers of ``benchmarks/ui_load.py``: RSS and percentiles, the never-yielding replay
source, the probe hooked into the app (frames, actions, ``_tick``, the LogView's rows; key → repaint
timing), the full-GC watch, the event-loop heartbeat, the key presser and the log feeder.

Apart so the script keeps what it runs (the phases) and what it reports; its name starts with ``_`` so CI
does not run it as a benchmark. How each measure is taken is told in ``ui_load.py``'s docstring.
"""

from __future__ import annotations

import asyncio
import random
import resource
import time
from itertools import islice

from textual import events
from textual._compositor import CompositorUpdate
from textual.screen import Screen

from eagletui.core.events import LogLine
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.ui.app import EagleApp
from eagletui.ui.widgets.logview import TEXT, LogView

KEY_PAIRS: list[tuple[str, ...]] = [("3", "1"), ("e", "0"), ("t",), ("slash", "escape"), ("4", "1"), ("f",)]
KEY_CHARS = {"slash": "/", "escape": None}
KEY_TIMEOUT = 10.0


def rss() -> tuple[float, float]:
    """(current, peak) RSS in MB."""
    cur = peak = 0.0
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cur = peak
    return cur, peak


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


class NeverReplay:
    """A replay source that yields nothing until told to stop: the harness dispatches itself."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()

    async def play(self):
        await self.stop.wait()
        return
        yield  # pragma: no cover - makes this an async generator


class Probe:
    """Instrumentation hooked into one app instance (and, for frames, the Screen class)."""

    def __init__(self, app: EagleApp, encode: bool) -> None:
        self.app = app
        self.encode = encode
        self.frames: list[tuple[float, float]] = []  # (start, end) of frames that produced output
        self.frame_cpu: list[float] = []  # the process's CPU seconds in each of those frames
        self.last_frame_end = 0.0
        self._frame_displayed = False
        self.ticks: list[float] = []
        self.pending: dict | None = None
        self.record_frames = False
        # lag
        self.expect_last: str | None = None
        self.last_row_painted = False
        self.lag_frame_end: float | None = None
        self.unhandled = 0
        self.history: list[tuple[str, float]] = []

    # -- hooks ------------------------------------------------------------------------------
    def install(self) -> None:
        app = self.app
        probe = self
        orig_display = app._display

        def _display(screen, renderable):
            if renderable is not None:
                probe._frame_displayed = True
                if probe.encode and isinstance(renderable, CompositorUpdate):
                    renderable.render_segments(app.console)  # what a real terminal frame costs to encode
            return orig_display(screen, renderable)

        app._display = _display

        orig_run_action = app.run_action

        async def run_action(action, default_namespace=None, namespaces=None):
            result = await orig_run_action(action, default_namespace, namespaces)
            p = probe.pending
            if p is not None and p["acted"] is None:
                p["acted"] = time.perf_counter()
                p["action"] = str(action)
                app.call_after_refresh(probe._refreshed, p)
            return result

        app.run_action = run_action

        orig_tick = app._tick

        def _tick() -> None:
            t = time.perf_counter()
            orig_tick()
            if probe.record_frames:
                probe.ticks.append(time.perf_counter() - t)

        app._tick = _tick  # before mount: set_interval picks up the instance attribute

        self._orig_timer_update = Screen._on_timer_update

        def _on_timer_update(screen_self) -> None:
            t, cpu = time.perf_counter(), time.process_time()
            probe._frame_displayed = False
            probe._orig_timer_update(screen_self)
            if probe._frame_displayed:
                end = time.perf_counter()
                probe.last_frame_end = end
                if probe.record_frames:
                    probe.frames.append((t, end))
                    probe.frame_cpu.append(time.process_time() - cpu)
                if probe.last_row_painted and probe.lag_frame_end is None:
                    probe.lag_frame_end = end

        Screen._on_timer_update = _on_timer_update

    def uninstall(self) -> None:
        Screen._on_timer_update = self._orig_timer_update

    def hook_logview(self) -> None:
        view = self.app.query_one(LogView)
        orig = view.render_line
        probe = self

        def render_line(y: int):
            strip = orig(y)
            if probe.expect_last is not None and not probe.last_row_painted:
                rows = view.view_rows
                idx = view.scroll_offset.y + y
                if rows and idx == len(rows) - 1 and rows[idx][TEXT] == probe.expect_last:
                    probe.last_row_painted = True
            return strip

        view.render_line = render_line

    def _refreshed(self, p: dict) -> None:
        now = time.perf_counter()
        done = self.last_frame_end if self.last_frame_end >= p["acted"] else now
        if not p["fut"].done():
            p["fut"].set_result(done)

    # -- keys -------------------------------------------------------------------------------
    async def press(self, key: str) -> float | None:
        """One key → ms until the frame showing its effect; None if no binding handled it."""
        loop = asyncio.get_running_loop()
        p = {"key": key, "acted": None, "action": None, "fut": loop.create_future()}
        self.pending = p
        char = KEY_CHARS.get(key, key if len(key) == 1 else None)
        ev = events.Key(key, char)
        t0 = time.perf_counter()
        self.history.append((key, t0))
        self.app._driver.send_message(ev)
        try:
            done = await asyncio.wait_for(asyncio.shield(p["fut"]), KEY_TIMEOUT)
        except TimeoutError:
            self.pending = None
            if p["acted"] is None:
                self.unhandled += 1
                return None
            return KEY_TIMEOUT * 1000
        self.pending = None
        return (done - t0) * 1000


class GcWatch:
    """Full (generation 2) collections during the bursts and how long each paused the loop."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._t = 0.0
        self.on = False

    def __call__(self, phase: str, info: dict) -> None:
        if not self.on or info.get("generation") != 2:
            return
        if phase == "start":
            self._t = time.perf_counter()
        else:
            self.pauses.append((time.perf_counter() - self._t) * 1000)


async def heartbeat(stalls: list[float], stop: asyncio.Event, period: float = 0.005) -> None:
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(period)
        stalls.append(max(0.0, time.perf_counter() - t - period))


async def key_loop(
    probe: Probe,
    n: int | None,
    until: asyncio.Event | None,
    gap: float,
    rnd: random.Random,
    out: list[float],
    per_key: dict[str, list[float]],
    textual_path: list[float] | None = None,
) -> None:
    """Press key pairs until ``n`` presses are done or ``until`` is set (finishing the current pair).

    ``textual_path`` (``--ab-keypath``): every other pair is pressed with the app's direct key path
    off (each key bubbling through the widgets' queues, as plain Textual does) and timed into it, so
    the two compare under the same load in the same run."""
    i = 0
    count = 0
    app = probe.app
    while True:
        # half of each cycle's pairs, the other half the next cycle: both paths press every key
        plain = textual_path is not None and (i + i // len(KEY_PAIRS)) % 2 == 1
        saved = app._direct_keys
        app._direct_keys = saved and not plain
        try:
            for key in KEY_PAIRS[i % len(KEY_PAIRS)]:
                ms = await probe.press(key)
                if ms is not None:
                    if plain and textual_path is not None:
                        textual_path.append(ms)
                    else:
                        out.append(ms)
                        per_key.setdefault(key, []).append(ms)
                count += 1
                await asyncio.sleep(gap * rnd.uniform(0.5, 1.5))
        finally:
            app._direct_keys = saved
        i += 1
        if n is not None and count >= n:
            return
        if until is not None and until.is_set():
            return


class Feeder:
    def __init__(self, app: EagleApp, fh, interp: LogInterpreter) -> None:
        self.app = app
        self.fh = fh
        self.interp = interp
        self.lines = 0
        self.events = 0
        self.dispatch_s = 0.0
        self.t_first = 0.0
        self.t_last = 0.0
        self.last_text: str | None = None

    def _feed(self, lines: list[str]) -> None:
        t = time.perf_counter()
        evs = self.interp.feed("".join(lines))
        dispatch = self.app.dispatch
        for e in evs:
            dispatch(e)
            if isinstance(e, LogLine):
                self.last_text = e.text
        self.events += len(evs)
        self.lines += len(lines)
        self.dispatch_s += time.perf_counter() - t

    def feed_until(self, marker: str) -> None:
        buf: list[str] = []
        for line in self.fh:
            buf.append(line)
            if marker in line:
                break
        self._feed(buf)

    async def burst(self, n_lines: int, rate: float, interval: float, chunk: int) -> None:
        sent = 0
        t_start = time.perf_counter()
        while sent < n_lines:
            due = min(n_lines, int((time.perf_counter() - t_start) * rate) + 1)
            while sent < due:
                lines = list(islice(self.fh, min(chunk, due - sent)))
                if not lines:
                    n_lines = sent  # the file ran short
                    break
                if sent == 0:
                    self.t_first = time.perf_counter()
                self._feed(lines)
                sent += len(lines)
                self.t_last = time.perf_counter()
                if sent < due:
                    await asyncio.sleep(0)
            await asyncio.sleep(interval)
