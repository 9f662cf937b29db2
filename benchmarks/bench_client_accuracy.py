"""Accuracy and capacity of the built-in benchmark client against the SGLang simulator.

Why: every tuning decision rests on the client's tok/s and accept length, so they must agree with what
the server actually did (the simulator's ``/sim/stats`` ground truth, counted since the post-warmup
flush), and the client must not be the bottleneck on a fast server.

Runs the real simulator in a subprocess (free port, fast startup), measures at concurrency 1 and 32,
then a high-concurrency, high-speed run for the max aggregate tok/s, recording CPU seconds of both the
client (this process) and the simulator so a shortfall can be attributed. The last printed line is JSON:
``tok_s_error_pct``, ``accept_len_error_pct`` (worst over concurrencies), ``max_aggregate_tok_s``.

Usage: ``python benchmarks/bench_client_accuracy.py [--quick]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._simproc import SimProcess
from eagletui.bench.client import run_builtin
from eagletui.core.profile.model import BenchSettings

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process from /proc (the simulator's CPU, to tell who is the bottleneck)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def sim_flags(speed: float, max_running: int) -> list[str]:
    return [
        "--model-path",
        "moonshotai/Kimi-K2.5",
        "--tp",
        "8",
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "lmsys/Kimi-K2.5-EAGLE3",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "4",
        "--max-running-requests",
        str(max_running),
        "--cuda-graph-max-bs-decode",
        str(max_running),
        "--enable-metrics",
        "--sim-time-scale",
        "0.003",
        "--sim-speed",
        str(speed),
    ]


def sim_argv(port: int, speed: float, max_running: int) -> list[str]:
    return [sys.executable, "-m", "eagletui.sim", "--port", str(port), *sim_flags(speed, max_running)]


class Sim(SimProcess):
    def __init__(self, speed: float, max_running: int = 256) -> None:
        super().__init__(sim_flags(speed, max_running))

    async def stats(self) -> dict[str, Any]:
        async with aiohttp.ClientSession() as s, s.get(self.url + "/sim/stats") as r:
            data = await r.json()
        data.pop("per_request", None)
        return data


def pct(measured: float | None, truth: float | None) -> float | None:
    if measured is None or not truth:
        return None
    return abs(measured - truth) / truth * 100.0


async def measure(sim: Sim, concurrency: int, num_prompts: int, max_new_tokens: int) -> dict[str, Any]:
    settings = BenchSettings(
        num_prompts=num_prompts, concurrency=concurrency, max_new_tokens=max_new_tokens, warmup=1, seed=1
    )
    cpu0, sim_cpu0, t0 = time.process_time(), proc_cpu_s(sim.proc.pid), time.monotonic()
    res = await run_builtin(sim.url, settings, bench=concurrency, launch=1, emit=lambda e: None)
    wall = time.monotonic() - t0
    client_cpu, sim_cpu = time.process_time() - cpu0, proc_cpu_s(sim.proc.pid) - sim_cpu0
    truth = await sim.stats()
    return {
        "concurrency": concurrency,
        "requests": res.requests,
        "failed": res.failed,
        "error": res.error,
        "client_tok_s": round(res.output_throughput, 1),
        "truth_tok_s": round(truth["output_tok_s"] or 0.0, 1),
        "tok_s_error_pct": pct(res.output_throughput, truth["output_tok_s"]),
        "client_accept_len": res.accept_length,
        "truth_accept_len": truth["accept_len"],
        "accept_len_error_pct": pct(res.accept_length, truth["accept_len"]),
        "truth_output_tokens": truth["output_tokens"],
        "client_cpu_pct": round(100 * client_cpu / wall, 1),
        "sim_cpu_pct": round(100 * sim_cpu / wall, 1),
        "wall_s": round(wall, 2),
    }


async def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): smaller runs",
    )
    ap.add_argument("--speed", type=float, default=10.0, help="--sim-speed of the accuracy runs")
    ap.add_argument("--max-speed", type=float, default=40.0, help="--sim-speed of the capacity run")
    ap.add_argument("--streams", type=int, default=256)
    ns = ap.parse_args(argv)
    scale = 1 if ns.quick else 2
    rows: list[dict[str, Any]] = []
    sim = Sim(ns.speed)
    try:
        await sim.wait_ready()
        rows.append(await measure(sim, 1, 4 * scale, 256))
        rows.append(await measure(sim, 32, 64 * scale, 256))
    finally:
        sim.stop()
    fast = Sim(ns.max_speed, max_running=ns.streams)
    try:
        await fast.wait_ready()
        cap = await measure(fast, ns.streams, ns.streams * 2 * scale, 512)
    finally:
        fast.stop()
    for row in [*rows, cap]:
        print(json.dumps(row), file=sys.stderr)
    summary = {
        "tok_s_error_pct": round(max(r["tok_s_error_pct"] or 0.0 for r in rows), 3),
        "accept_len_error_pct": round(max(r["accept_len_error_pct"] or 0.0 for r in rows), 3),
        "max_aggregate_tok_s": round(cap["client_tok_s"], 1),
        "capacity_run": {
            "streams": ns.streams,
            "sim_speed": ns.max_speed,
            "truth_tok_s": cap["truth_tok_s"],
            "tok_s_error_pct": cap["tok_s_error_pct"],
            "client_cpu_pct": cap["client_cpu_pct"],
            "sim_cpu_pct": cap["sim_cpu_pct"],
            "failed": cap["failed"],
        },
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1:])))
