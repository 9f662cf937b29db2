"""``ui_load.py``'s sweep phase: frame time while a sweep's cells land, with the charts shown and with the
frontier view (issue 35) open over them.

A sweep's host streams decode lines (the feeder keeps the log going at ``rate`` lines/s) and a cell
finishes every ``cell_s`` seconds: a ``BenchmarkStarted``/``BenchmarkResult`` pair carrying 64 requests'
latencies, alternating between a spec and a no-spec launch over eight concurrencies, so the frontier
refolds and replots on each one. The same stream runs twice for ``seconds`` each: first with the main
screen (the live charts), then with the frontier view pushed (``v``). Frames are the probe's compositor
frames that produced output; the report is their p50/p95 per pass and the ratio frontier ÷ charts.
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


async def _pass(app: Any, probe: Probe, feeder: Feeder, seconds: float, cell_s: float, rate: float, k0: int) -> tuple[list[float], int]:
    rnd = random.Random(k0)
    probe.frames.clear()
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
    return [(e - s) * 1000 for s, e in probe.frames], k


async def sweep_frames(app: Any, pilot: Any, probe: Probe, feeder: Feeder, seconds: float, cell_s: float = 0.25, rate: float = 2000.0) -> dict:
    """Frame times with the charts, then with the frontier view open, under the same sweep stream."""
    _launches(app)
    charts, k = await _pass(app, probe, feeder, seconds, cell_s, rate, 0)
    await pilot.press("v")
    await pilot.pause()
    opened = type(app.screen).__name__
    frontier, k = await _pass(app, probe, feeder, seconds, cell_s, rate, k)
    await pilot.press("escape")
    await pilot.pause()
    p95c, p95f = pct(charts, 0.95), pct(frontier, 0.95)
    return {
        "screen": opened,
        "cells": k,
        "charts_frames": len(charts),
        "charts_frame_p50_ms": round(pct(charts, 0.5), 1),
        "charts_frame_p95_ms": round(p95c, 1),
        "frontier_frames": len(frontier),
        "frontier_frame_p50_ms": round(pct(frontier, 0.5), 1),
        "frontier_frame_p95_ms": round(p95f, 1),
        "frontier_vs_charts_p95": round(p95f / p95c, 3) if p95c > 0 else None,
    }
