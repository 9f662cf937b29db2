"""UI responsiveness under a log burst: key-press → repaint latency, tail lag and RSS of the real ``EagleApp``.

Usage::

    python benchmarks/ui_load.py [--lines 100000] [--rate 30000] [--bursts 3] [--idle-keys 30]
                                 [--no-encode] [--python-gc] [--ab-keypath] [--profile /tmp/burst.pstats]

What runs
    The real :class:`~eagletui.ui.app.EagleApp`, headless, through Textual's ``App.run_test(size=(160, 50),
    notifications=True)``, in replay mode with a replay source that never yields (no network, no file
    replay): every event reaches the app through :meth:`EagleApp.dispatch`, the app's single entry.
    The log is the synthetic tp=8 EAGLE-3 SGLang log of ``benchmarks/parse_throughput.py`` (startup
    phases, then Decode / Prefill / HTTP access lines in serving proportions), streamed from a temp file
    through a live :class:`LogInterpreter` *inside the app's event loop*, exactly like a tail would: the
    interpreter's cost is part of the load.

Phases (one process, one app)
    1. startup: the log up to "ready to roll" is fed; the app settles.
    2. idle: ``--idle-keys`` key presses, no log traffic → ``idle_key_p50_ms`` / ``idle_key_p95_ms``.
    3. burst: ``--lines`` serving lines at ``--rate`` lines/s (every ``--interval`` s the feeder reads
       the lines that are due, ≤ ``--chunk-lines`` per chunk with a loop yield between chunks, feeds them
       to the interpreter and dispatches the events). Keys are pressed the whole time. The achieved rate
       is measured from the first to the last dispatched line and reported (``lines_per_s`` is the
       slowest burst's). ``--bursts`` (default 3) bursts run back to back with ``--pause`` s between
       them: the first fills the 100,000-line scrollback, the others run against a full ring (steady
       state), and together they give enough key samples for a p95. Key stats pool all bursts.
    4. lag: after each burst, time from its last dispatched line until a frame painted it (see
       below); ``lag_s`` is the worst burst's.
    5. sweep (``--sweep-s`` per view, 0: none): a sweep's cells land while decode lines stream, with
       the charts shown and with the frontier view open, in alternating halves
       (``benchmarks/_ui_sweep_phase.py``); frame p50/p95 in wall and CPU time per view, the process's
       CPU share, and the ratios frontier ÷ charts (issue 35: the frontier view no worse than the charts).

Key sequence
    Pairs that always return to the Log tab with no filter and follow on, so the tail stays visible:
    ``3``/``1`` (Tune tab and back), ``e``/``0`` (errors filter, all), ``t`` (next theme), ``slash``/
    ``escape`` (search line open/close), ``4``/``1`` (Runs tab and back), ``f`` (follow). A pair
    interrupted by the end of the burst is completed.

How key → repaint latency is measured
    ``pilot.press()`` is *not* used for timing: it waits for the process to go CPU-idle, which never
    happens during a burst, so it measures the harness. Instead a key is sent the way a terminal driver
    sends it (``driver.send_message(events.Key)``, i.e. into the app's message queue behind whatever is
    already queued) and timed with ``perf_counter``:

    * t0: just before the key is sent;
    * the key's action is seen completing by wrapping ``app.run_action`` (every binding, app, screen or
      widget level, goes through it); right then ``app.call_after_refresh`` registers a callback, which
      Textual runs once the screen has processed everything queued so far *and* has no pending
      layout/repaint, i.e. after the frame that shows the action's effect (theme CSS refresh, search
      line, tab switch and filter all land in that frame; after a theme switch the charts keep their
      last figure until their next coalesced replot, within a second, which is not waited for);
    * t1: the end of the last compositor frame (``Screen._on_timer_update`` that produced output,
      observed by a class-level wrapper) that finished after the action completed; if no frame was
      needed, the callback time.

    latency = t1 - t0: queueing behind the burst + key handling + action + layout + compositing. In
    headless mode Textual skips turning the frame into terminal escape sequences; by default this
    harness does that too (``CompositorUpdate.render_segments``, output discarded) so the frame cost is
    what a real terminal would pay minus the write itself. ``--no-encode`` turns that off.

How lag is measured
    The LogView's ``render_line`` is wrapped; lag = (end of the first frame in which the row holding
    the last dispatched line was rendered) - (time that line was dispatched). ``lag_rows_s`` is the part
    until the line is in ``LogView.rows`` (the 10 Hz ``_tick`` flush).

RSS
    ``VmRSS``/``VmHWM`` from /proc/self/status (whole process: Python + Textual + app + harness; the log
    is streamed from disk so the harness holds no copy of it). ``rss_mb`` is the peak (VmHWM).

Garbage collection
    The app freezes its start-up objects and runs Python's full collections itself when input pauses
    (``eagletui/ui/gcpolicy.py``). Keys are pressed all through a burst here, so during bursts full
    collections only run between them; ``gc_full_n`` / ``gc_full_max_ms`` count and time every full
    collection during the bursts and pauses. ``--python-gc`` switches the policy off (Python's own
    schedule, nothing frozen) to show what it is worth.

Key path A/B
    ``--ab-keypath``: every other key pair (alternating per cycle, so both halves press every key) runs
    with the app's direct key path off (``eagletui/ui/keypath.py``: a key handed to the bindings in one
    turn of the loop instead of bubbling through each widget's queue), and is timed apart
    (``keypath_ab``: its p50/p95, burst and idle, and the ratios direct / bubbling). The headline key
    figures are then the direct half only. Both halves run under the same load, in the same run.

Also reported, to point at the cost: frame (compositor) time, ``_tick`` time, event-loop stalls (a 5 ms
heartbeat's overshoot), the feeder's dispatch time, and ``cpu_ms_per_1k_lines``: the process's CPU time
over the bursts per 1,000 lines (feeder, app, keys and frames together), the figure that compares two
builds like for like on a shared machine, where wall-clock latencies follow the load of others. The
last output line is a JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._ui_keypath_ab import keypath_ab, keypath_rows  # noqa: E402
from benchmarks._ui_load_drive import (  # noqa: E402
    Feeder,
    GcWatch,
    NeverReplay,
    Probe,
    heartbeat,
    key_loop,
    pct,
    rss,
)
from benchmarks._ui_sweep_phase import sweep_frames  # noqa: E402
from eagletui.config import UserConfig  # noqa: E402
from eagletui.core.phases.interpreter import LogInterpreter  # noqa: E402
from eagletui.ui.app import EagleApp  # noqa: E402
from eagletui.ui.widgets.logview import TEXT, LogView, printable  # noqa: E402

TARGETS = {"key_p95_ms": 100.0, "lag_s": 1.0, "rss_mb": 250.0}


def _load_generator():
    spec = importlib.util.spec_from_file_location("_pt", Path(__file__).with_name("parse_throughput.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate


@dataclass
class _BurstRun:
    """What the burst phase measured, all bursts together (the report's raw material)."""

    bursts: list[dict]
    keys: list[float]
    per: dict[str, list[float]]
    stalls: list[float]
    rss_samples: list[float]
    gcw: GcWatch
    collections_before: int
    view: LogView
    rss_after: float
    rss_peak: float
    keys_textual: list[float]


async def run(ns: argparse.Namespace, log: Path) -> dict:
    rnd = random.Random(11)
    rss_base, _ = rss()
    replay = NeverReplay()
    app = EagleApp(
        profile=None,
        target="bench-host:30000",
        mode="replay",
        replay=replay,
        user_config=UserConfig(record=False),
    )
    probe = Probe(app, encode=not ns.no_encode)
    probe.install()
    res: dict = {}
    try:
        async with app.run_test(size=(160, 50), notifications=True) as pilot:
            await pilot.pause()
            if ns.python_gc:
                await asyncio.sleep(0.2)  # the collector starts after the first frame
                app.collector.stop()  # Python's own schedule, nothing frozen: what the collector saves
            probe.hook_logview()
            with log.open("r", encoding="utf-8", errors="replace") as fh:
                feeder = Feeder(app, fh, LogInterpreter(launch=1))
                feeder.feed_until("ready to roll")
                startup_lines = feeder.lines
                await asyncio.sleep(1.0)
                await pilot.pause()

                # ---- idle
                idle: list[float] = []
                idle_per: dict[str, list[float]] = {}
                idle_textual: list[float] | None = [] if ns.ab_keypath else None
                await key_loop(probe, ns.idle_keys, None, ns.key_gap, rnd, idle, idle_per, idle_textual)
                rss_idle, _ = rss()
                await asyncio.sleep(0.3)

                # ---- bursts (the first fills the 100k scrollback; later ones run against a full one)
                b = await _bursts(ns, app, probe, feeder, rnd)
                res = _results(ns, app, probe, b, idle, idle_per, startup_lines, rss_base, rss_idle)
                if idle_textual is not None:
                    res["keypath_ab"] = keypath_ab(keys=res, burst=b.keys_textual, idle=idle_textual)
                # ---- a sweep's cells landing: frame time with the charts, then the frontier view open
                if ns.sweep_s > 0:
                    res["sweep"] = await sweep_frames(app, pilot, probe, feeder, ns.sweep_s)
            replay.stop.set()
            await pilot.pause()
    finally:
        probe.uninstall()
    return res


async def _bursts(
    ns: argparse.Namespace, app: EagleApp, probe: Probe, feeder: Feeder, rnd: random.Random
) -> _BurstRun:
    """``--bursts`` bursts with ``--pause`` between them, keys pressed all the while, under the
    heartbeat, the GC watch and (``--profile``) cProfile."""
    stalls: list[float] = []
    stop_hb = asyncio.Event()
    hb = asyncio.create_task(heartbeat(stalls, stop_hb))
    keys: list[float] = []
    keys_textual: list[float] = []
    per: dict[str, list[float]] = {}
    rss_samples: list[float] = []
    bursts: list[dict] = []
    probe.record_frames = True
    gcw = GcWatch()
    gc.callbacks.append(gcw)
    gcw.on = True
    collections_before = app.collector.collections
    view = app.query_one(LogView)
    prof = None
    if ns.profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    for b in range(ns.bursts):
        bursts.append(await _burst(ns, app, view, probe, feeder, rnd, keys, per, rss_samples, keys_textual))
        if b + 1 < ns.bursts:
            await asyncio.sleep(ns.pause)
    if prof is not None:
        prof.disable()
        prof.dump_stats(ns.profile)
    stop_hb.set()
    await hb
    gcw.on = False
    gc.callbacks.remove(gcw)
    probe.record_frames = False
    rss_after, rss_peak = rss()
    return _BurstRun(
        bursts,
        keys,
        per,
        stalls,
        rss_samples,
        gcw,
        collections_before,
        view,
        rss_after,
        rss_peak,
        keys_textual,
    )


async def _burst(
    ns: argparse.Namespace,
    app: EagleApp,
    view: LogView,
    probe: Probe,
    feeder: Feeder,
    rnd: random.Random,
    keys: list[float],
    per: dict[str, list[float]],
    rss_samples: list[float],
    keys_textual: list[float],
) -> dict:
    """One burst of ``--lines`` with keys pressed through it, then the wait for its last line's frame."""
    burst_done = asyncio.Event()
    feeder.lines = feeder.events = 0
    feeder.dispatch_s = 0.0
    probe.expect_last = None
    probe.last_row_painted = False
    probe.lag_frame_end = None
    n_keys_before = len(keys)

    async def feed(done: asyncio.Event = burst_done) -> None:
        try:
            await feeder.burst(ns.lines, ns.rate, ns.interval, ns.chunk_lines)
        finally:
            done.set()

    async def sample_rss(done: asyncio.Event = burst_done) -> None:
        while not done.is_set():
            rss_samples.append(rss()[0])
            await asyncio.sleep(0.25)

    cpu0 = time.process_time()
    ft = asyncio.create_task(feed())
    st = asyncio.create_task(sample_rss())
    textual = keys_textual if ns.ab_keypath else None
    kt = asyncio.create_task(key_loop(probe, None, burst_done, ns.key_gap, rnd, keys, per, textual))
    await ft
    cpu_s = time.process_time() - cpu0  # the whole process: feeder, app, keys, frames
    t_end = feeder.t_last
    probe.expect_last = printable(feeder.last_text or "")
    t_rows = None
    deadline = time.perf_counter() + ns.lag_timeout
    while time.perf_counter() < deadline:
        if t_rows is None and view.rows and view.rows[-1][TEXT] == probe.expect_last:
            t_rows = time.perf_counter()
        if probe.lag_frame_end is not None:
            break
        await asyncio.sleep(0.002)
    stuck = None
    if probe.lag_frame_end is None:  # say why the tail was never painted
        tabs = app.query_one("#tabs")
        stuck = {
            "follow": view.follow,
            "tab": getattr(tabs, "active", None),
            "filter": sorted(view.filter_kinds) if view.filter_kinds else None,
            "scroll_y": view.scroll_y,
            "max_scroll_y": view.max_scroll_y,
            "view_rows": len(view.view_rows),
            "screen": type(app.screen).__name__,
            "last_keys": [k for k, _ in probe.history[-6:]],
        }
    await kt
    await st
    burst_s = t_end - feeder.t_first
    return {
        "lines": feeder.lines,
        "events": feeder.events,
        "burst_s": round(burst_s, 3),
        "lines_per_s": round(feeder.lines / burst_s) if burst_s > 0 else 0,
        "dispatch_cpu_share": round(feeder.dispatch_s / burst_s, 3) if burst_s > 0 else None,
        "cpu_s": round(cpu_s, 3),
        "lag_s": round(probe.lag_frame_end - t_end, 3) if probe.lag_frame_end else None,
        "lag_rows_s": round(t_rows - t_end, 3) if t_rows else None,
        "lag_unpainted_state": stuck,
        "key_n": len(keys) - n_keys_before,
        "key_p95_ms": round(pct(keys[n_keys_before:], 0.95), 1),
    }


def _results(
    ns: argparse.Namespace,
    app: EagleApp,
    probe: Probe,
    b: _BurstRun,
    idle: list[float],
    idle_per: dict[str, list[float]],
    startup_lines: int,
    rss_base: float,
    rss_idle: float,
) -> dict:
    """The report's JSON object (the last output line), its keys in their order of old."""
    bursts, keys, per, stalls, gcw, view = b.bursts, b.keys, b.per, b.stalls, b.gcw, b.view
    bf = [(e - s) * 1000 for s, e in probe.frames]
    span = (probe.frames[-1][1] - probe.frames[0][0]) if len(probe.frames) > 1 else float("nan")
    lags = [x["lag_s"] for x in bursts]
    lines = sum(x["lines"] for x in bursts)
    wall = sum(x["burst_s"] for x in bursts)
    return {
        "bursts": len(bursts),
        "lines": bursts[0]["lines"],
        "startup_lines": startup_lines,
        "events": bursts[0]["events"],
        "burst_s": bursts[0]["burst_s"],
        "lines_per_s": min(x["lines_per_s"] for x in bursts),
        "lines_per_s_mean": round(lines / wall) if wall > 0 else None,
        "target_rate": ns.rate,
        "dispatch_cpu_share": round(statistics.mean(x["dispatch_cpu_share"] or 0 for x in bursts), 3),
        # CPU seconds of the whole process per 1,000 burst lines: unlike the wall times, barely moved by
        # other work on a shared machine, so two builds compare like for like across runs
        "cpu_ms_per_1k_lines": round(1e6 * sum(x["cpu_s"] for x in bursts) / lines, 1) if lines else None,
        "key_n": len(keys),
        "key_p50_ms": round(pct(keys, 0.5), 1),
        "key_p95_ms": round(pct(keys, 0.95), 1),
        "key_max_ms": round(max(keys), 1) if keys else None,
        "key_per_key_p50_ms": {k: round(statistics.median(v), 1) for k, v in per.items()},
        "key_per_key_max_ms": {k: round(max(v), 1) for k, v in per.items()},
        "key_p95_ms_no_theme": round(pct([x for k, v in per.items() if k != "t" for x in v], 0.95), 1),
        "idle_key_n": len(idle),
        "idle_key_p50_ms": round(pct(idle, 0.5), 1),
        "idle_key_p95_ms": round(pct(idle, 0.95), 1),
        "idle_key_max_ms": round(max(idle), 1) if idle else None,
        "idle_key_p95_ms_no_theme": round(
            pct([x for k, v in idle_per.items() if k != "t" for x in v], 0.95), 1
        ),
        "idle_per_key_p50_ms": {k: round(statistics.median(v), 1) for k, v in idle_per.items()},
        "unhandled_keys": probe.unhandled,
        "lag_s": None if None in lags else max(lags),
        "lag_rows_s": bursts[-1]["lag_rows_s"],
        "per_burst": bursts,
        "frames": len(probe.frames),
        "fps": round(len(probe.frames) / span, 1) if span == span and span > 0 else None,
        "frame_p50_ms": round(pct(bf, 0.5), 1),
        "frame_p95_ms": round(pct(bf, 0.95), 1),
        "frame_max_ms": round(max(bf), 1) if bf else None,
        "tick_p50_ms": round(pct([x * 1000 for x in probe.ticks], 0.5), 1),
        "tick_p95_ms": round(pct([x * 1000 for x in probe.ticks], 0.95), 1),
        "tick_max_ms": round(max(probe.ticks) * 1000, 1) if probe.ticks else None,
        "loop_stall_p95_ms": round(pct([x * 1000 for x in stalls], 0.95), 1),
        "gc_full_n": len(gcw.pauses),
        "gc_full_by_app": app.collector.collections - b.collections_before,
        "gc_full_max_ms": round(max(gcw.pauses), 1) if gcw.pauses else None,
        "loop_stall_max_ms": round(max(stalls) * 1000, 1) if stalls else None,
        "rss_mb": round(b.rss_peak, 1),
        "rss_current_mb": round(b.rss_after, 1),
        "rss_burst_max_mb": round(max(b.rss_samples + [b.rss_after]), 1),
        "rss_idle_mb": round(rss_idle, 1),
        "rss_baseline_mb": round(rss_base, 1),
        "logview_rows": len(view.rows),
        "logview_dropped": view.dropped,
        "encode_frames": not ns.no_encode,
        "python_gc": ns.python_gc,
    }


def _parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=100_000, help="serving lines in the burst")
    ap.add_argument(
        "--rate",
        type=float,
        default=30_000,
        help="target lines/s; what is achieved (must be ≥ 20,000) is reported",
    )
    ap.add_argument("--interval", type=float, default=0.005, help="feeder period, s")
    ap.add_argument("--chunk-lines", type=int, default=500, help="max lines per dispatch chunk (a tail read)")
    ap.add_argument("--idle-keys", type=int, default=30)
    ap.add_argument("--key-gap", type=float, default=0.06, help="mean pause between key presses, s")
    ap.add_argument("--bursts", type=int, default=3, help="bursts of --lines each (more key samples)")
    ap.add_argument("--pause", type=float, default=1.0, help="seconds between bursts")
    ap.add_argument("--no-encode", action="store_true", help="don't encode frames to escape sequences")
    ap.add_argument(
        "--lag-timeout", type=float, default=5.0, help="give up waiting for the tail after this, s"
    )
    ap.add_argument(
        "--python-gc",
        action="store_true",
        help="turn the app's IdleCollector off (Python's automatic full collections, nothing frozen)",
    )
    ap.add_argument(
        "--sweep-s", type=float, default=6.0, help="seconds per view of the sweep phase, in two halves (0: skip it)"
    )
    ap.add_argument(
        "--ab-keypath",
        action="store_true",
        help="every other key pair with the direct key path off (Textual's bubbling): both, same run",
    )
    ap.add_argument("--profile", default="", help="cProfile the burst phase only, dump pstats here")
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): one burst of 5k lines",
    )
    ns = ap.parse_args()
    if ns.quick:
        ns.lines, ns.bursts, ns.idle_keys, ns.pause, ns.sweep_s = 5_000, 1, 5, 0.2, 2.0
    return ns


def main() -> int:
    ns = _parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="eagletui-uiload-"))
    log = tmp / "server.log"
    # + startup head (~130 lines) and slack, + the sweep phase's two passes at 2,000 lines/s
    _load_generator()(log, ns.lines * ns.bursts + 400 + int(ns.sweep_s * 2 * 2_000))
    try:
        res = asyncio.run(run(ns, log))
    finally:
        log.unlink(missing_ok=True)
        with __import__("contextlib").suppress(OSError):
            tmp.rmdir()

    if not res:
        print("the app did not complete the run (see the traceback above)", file=sys.stderr)
        return 1
    ok = {
        "key_p95_ms": res["key_p95_ms"] <= TARGETS["key_p95_ms"],
        "lag_s": res["lag_s"] is not None and res["lag_s"] <= TARGETS["lag_s"],
        "rss_mb": res["rss_mb"] <= TARGETS["rss_mb"],
        "rate": (res["lines_per_s"] or 0) >= 20_000,
    }
    res["targets_met"] = ok
    rows = _rows(ns, res, ok)
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")
    if res["unhandled_keys"]:
        print(f"warning: {res['unhandled_keys']} key presses were handled by no binding (excluded)")
    print(json.dumps(res))
    return 0


def _rows(ns: argparse.Namespace, res: dict, ok: dict[str, bool]) -> list[tuple[str, str]]:
    """The human-readable table, a row per measure, printed above the JSON line."""
    return [
        (
            "burst",
            f"{res['bursts']} × {res['lines']:,} lines; first in {res['burst_s']:.2f} s; slowest burst "
            f"{res['lines_per_s']:,} lines/s (target {ns.rate:,.0f}; ≥ 20,000: {'ok' if ok['rate'] else 'MISSED'}), "
            f"{res['events']:,} events per burst",
        ),
        (
            "per burst",
            "  ".join(
                f"#{i + 1}: {x['lines_per_s']:,}/s lag {x['lag_s']} s keys {x['key_n']} p95 "
                f"{x['key_p95_ms']} ms"
                for i, x in enumerate(res["per_burst"])
            ),
        ),
        (
            "feeder cost",
            f"interpret+dispatch {res['dispatch_cpu_share'] * 100:.0f}% of the burst wall time; the whole "
            f"process used {res['cpu_ms_per_1k_lines']} ms CPU per 1,000 lines",
        ),
        (
            "key → repaint (burst)",
            f"p50 {res['key_p50_ms']:.1f} ms  p95 {res['key_p95_ms']:.1f} ms  max "
            f"{res['key_max_ms']} ms  n={res['key_n']}  "
            f"[{'ok' if ok['key_p95_ms'] else 'MISSED'} ≤ 100 ms]",
        ),
        (
            "key → repaint (idle)",
            f"p50 {res['idle_key_p50_ms']:.1f} ms  p95 {res['idle_key_p95_ms']:.1f} ms  max "
            f"{res['idle_key_max_ms']} ms  n={res['idle_key_n']}",
        ),
        (
            "p95 without theme key",
            f"burst {res['key_p95_ms_no_theme']} ms, idle {res['idle_key_p95_ms_no_theme']} ms "
            "(t = CSS restyle + full repaint; charts recolour on their next replot)",
        ),
        ("per key p50 (burst)", "  ".join(f"{k}:{v}" for k, v in res["key_per_key_p50_ms"].items())),
        ("per key max (burst)", "  ".join(f"{k}:{v}" for k, v in res["key_per_key_max_ms"].items())),
        ("per key p50 (idle)", "  ".join(f"{k}:{v}" for k, v in res["idle_per_key_p50_ms"].items())),
        (
            "lag after burst",
            f"{res['lag_s']} s to paint, worst burst (last burst: in LogView.rows after {res['lag_rows_s']} s) "
            f"[{'ok' if ok['lag_s'] else 'MISSED'} ≤ 1 s]",
        ),
        (
            "frames (burst)",
            f"{res['frames']} frames, {res['fps']} fps, compose+render p50 {res['frame_p50_ms']} ms "
            f"p95 {res['frame_p95_ms']} ms max {res['frame_max_ms']} ms",
        ),
        (
            "_tick (burst)",
            f"p50 {res['tick_p50_ms']} ms  p95 {res['tick_p95_ms']} ms  max {res['tick_max_ms']} ms",
        ),
        ("event-loop stalls", f"p95 {res['loop_stall_p95_ms']} ms  max {res['loop_stall_max_ms']} ms"),
        (
            "full GC (bursts)",
            f"{res['gc_full_n']} collections ({res['gc_full_by_app']} run by the app's idle collector), "
            f"longest {res['gc_full_max_ms']} ms",
        ),
        (
            "RSS",
            f"peak {res['rss_mb']} MB [{'ok' if ok['rss_mb'] else 'MISSED'} ≤ 250 MB], after burst "
            f"{res['rss_current_mb']} MB, idle {res['rss_idle_mb']} MB, before app {res['rss_baseline_mb']} MB",
        ),
        ("LogView", f"{res['logview_rows']:,} rows, {res['logview_dropped']:,} dropped"),
        *_sweep_rows(res.get("sweep")),
        *keypath_rows(res.get("keypath_ab")),
    ]


def _sweep_rows(sw: dict | None) -> list[tuple[str, str]]:
    if not sw:
        return []
    return [
        (
            "frames (sweep)",
            f"{sw['cells']} cells landed; charts p50 {sw['charts_frame_p50_ms']} p95 {sw['charts_frame_p95_ms']} ms "
            f"({sw['charts_frames']} frames); frontier view ({sw['screen']}) p50 {sw['frontier_frame_p50_ms']} "
            f"p95 {sw['frontier_frame_p95_ms']} ms ({sw['frontier_frames']} frames); "
            f"p95 ratio {sw['frontier_vs_charts_p95']}",
        ),
        (
            "frame CPU (sweep)",
            f"charts p50 {sw['charts_frame_cpu_p50_ms']} p95 {sw['charts_frame_cpu_p95_ms']} ms; frontier view "
            f"p50 {sw['frontier_frame_cpu_p50_ms']} p95 {sw['frontier_frame_cpu_p95_ms']} ms; ratios p50 "
            f"{sw['frontier_vs_charts_cpu_p50']} p95 {sw['frontier_vs_charts_cpu_p95']}; process CPU share charts "
            f"{sw['charts_cpu_share']} frontier {sw['frontier_cpu_share']} (ratio {sw['frontier_vs_charts_cpu_share']})",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
