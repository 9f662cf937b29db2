"""``ui_load.py``'s sweep phase: frame time while a sweep's cells land, with the charts shown and with the
frontier view (issue 35) open over them.

A sweep's host streams decode lines (the feeder keeps the log going at ``rate`` lines/s) and a cell
finishes every ``cell_s`` seconds: a ``BenchmarkStarted``/``BenchmarkResult`` pair carrying 64 requests'
latencies, alternating between a spec and a no-spec launch over eight concurrencies, so the frontier
refolds and replots on each one. The same stream runs for ``seconds`` with each view, in alternating
halves (charts, frontier view pushed with ``v``, charts, frontier view), so a change in the machine's
load during the phase falls on both alike. Frames are the probe's compositor frames that produced
output; the report is their p50/p95 per view, in wall time and in the process's CPU time (on a shared
machine the wall time of a frame follows the load of others; its CPU time much less), and the ratios
frontier ÷ charts of both.
"""

from __future__ import annotations

import random
import time
from typing import Any

from benchmarks._ui_load_drive import Feeder, Probe, pct
from eagletui.core.events import BenchmarkResult, BenchmarkStarted, LaunchStarted
from eagletui.core.runs.latency import records_of

_ARGS = {"--model-path": "moonshotai/Kimi-K2.5", "--tp": 8}
_SPEC = {**_ARGS, "--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3}
_CONCS = (1, 2, 4, 8, 16, 32, 64, 128)


def _launches(app: Any) -> None:
    for n, args in ((901, _SPEC), (902, _ARGS)):
        cfg = {"target": "bench-host", "model": _ARGS["--model-path"], "tp": 8, "args": args, "env": {}}
        cfg["slo"] = {"ttft_ms": {"p": 99, "max": 2000}, "itl_ms": {"p": 99, "max": 50}}
        app.dispatch(LaunchStarted(launch=n, target="bench-host", config=cfg))


def _cell(app: Any, rnd: random.Random, k: int) -> None:
    launch = 901 + k % 2
    conc = _CONCS[(k // 2) % len(_CONCS)]
    bench = 10_000 + k
    fp = f"c{conc}"
    app.dispatch(BenchmarkStarted(bench=bench, launch=launch, workload={"concurrency": conc}, workload_fingerprint=fp))
    rows = []
    for _ in range(64):
        ttft = rnd.uniform(50, 300) * conc**0.5
        itl = rnd.uniform(5, 9) * (1 + conc / 32)
        rows.append((ttft, itl, ttft + 127 * itl, 128))
    tok_s = conc * 1000 / (7 * (1 + conc / 32)) * (1.4 if launch == 901 else 1.0)
    app.dispatch(
        BenchmarkResult(
            bench=bench,
            launch=launch,
            output_throughput=tok_s,
            accept_length=2.5 if launch == 901 else None,
            requests=64,
            duration_s=64 * 128 / tok_s,
            workload_fingerprint=fp,
            latency=records_of(rows, seed=bench),
        )
    )


async def _pass(
    app: Any, probe: Probe, feeder: Feeder, seconds: float, cell_s: float, rate: float, k0: int
) -> tuple[list[float], list[float], float, int]:
    rnd = random.Random(k0)
    cpu0, t0 = time.process_time(), time.perf_counter()
    probe.frames.clear()
    probe.frame_cpu.clear()
    probe.record_frames = True
    t_end = time.perf_counter() + seconds
    k = k0
    next_cell = time.perf_counter()
    while time.perf_counter() < t_end:
        if time.perf_counter() >= next_cell:
            _cell(app, rnd, k)
            k += 1
            next_cell += cell_s
        await feeder.burst(max(1, int(rate * 0.05)), rate, 0.005, 200)
    probe.record_frames = False
    busy = (time.process_time() - cpu0) / (time.perf_counter() - t0)
    return [(e - s) * 1000 for s, e in probe.frames], [c * 1000 for c in probe.frame_cpu], busy, k


async def sweep_frames(
    app: Any, pilot: Any, probe: Probe, feeder: Feeder, seconds: float, cell_s: float = 0.25, rate: float = 2000.0
) -> dict:
    """Frame times with the charts and with the frontier view open, in alternating halves, under the
    same sweep stream."""
    _launches(app)
    wall: dict[str, list[float]] = {"charts": [], "frontier": []}
    cpu: dict[str, list[float]] = {"charts": [], "frontier": []}
    busy: dict[str, list[float]] = {"charts": [], "frontier": []}
    k, opened = 0, ""
    for _ in range(2):
        for view in ("charts", "frontier"):
            if view == "frontier":
                await pilot.press("v")
                await pilot.pause()
                opened = type(app.screen).__name__
            w, c, b, k = await _pass(app, probe, feeder, seconds / 2, cell_s, rate, k)
            wall[view] += w
            cpu[view] += c
            busy[view].append(b)
            if view == "frontier":
                await pilot.press("escape")
                await pilot.pause()
    out: dict[str, Any] = {"screen": opened, "cells": k}
    for view in ("charts", "frontier"):
        out[f"{view}_frames"] = len(wall[view])
        # the whole process's CPU share (frames, folds, the feeder): what the view costs, like for like
        out[f"{view}_cpu_share"] = round(sum(busy[view]) / len(busy[view]), 3)
        for q in (50, 95):
            out[f"{view}_frame_p{q}_ms"] = round(pct(wall[view], q / 100), 1)
            out[f"{view}_frame_cpu_p{q}_ms"] = round(pct(cpu[view], q / 100), 1)
    for what in ("frame_p95_ms", "frame_cpu_p95_ms", "frame_cpu_p50_ms", "cpu_share"):
        c, f = out[f"charts_{what}"], out[f"frontier_{what}"]
        out[f"frontier_vs_charts_{what.removeprefix('frame_').removesuffix('_ms')}"] = round(f / c, 3) if c > 0 else None
    return out
