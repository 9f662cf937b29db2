"""How close the next-launch prediction comes to the launch it predicts (issue 25), on the simulator.

Why: "what to launch next" is only worth showing if the tok/s it predicts is what the launch then
measures. For each host preset of the simulator this launches a spec run (``--speculative-num-steps 3``),
its no-spec counterpart and the neighbouring step counts (2 and 4), benchmarks each at every
concurrency, folds them into one run book as a session would, predicts the neighbours from the first
two launches only (:mod:`eagletui.core.predict.next_launch` on the cycle model of :mod:`eagletui.core.cycle.model`) and
compares with what they measured. A second pass predicts from a step profile's parts instead of the
no-spec run (the simulator's own parts for one cycle, as its profiler would report them).

The last printed line is JSON: ``max_abs_error_pct`` over every prediction, and the table.

Usage: ``python benchmarks/prediction_error.py [--quick]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._simproc import SimProcess
from eagletui.bench.client import run_builtin
from eagletui.core import events as ev
from eagletui.core.predict.checks import checks
from eagletui.core.predict.ranking import forecasts
from eagletui.core.profile.model import BenchSettings
from eagletui.core.runs.book import RunBook

BASE_ARGS = {
    "--model-path": "moonshotai/Kimi-K2.5",
    "--tp": 8,
    "--sim-time-scale": 0.003,
    "--sim-speed": 2,
    "--max-running-requests": 64,
}
SPEC = {
    "--speculative-algorithm": "EAGLE3",
    "--speculative-draft-model-path": "lmsys/Kimi-K2.5-EAGLE3",
    "--speculative-eagle-topk": 1,
}


def argv(args: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in args.items():
        out += [k, str(v)]
    return out


class Sim(SimProcess):
    def __init__(self, args: dict[str, Any]) -> None:
        super().__init__(argv(args), prefix="eagletui-pred-")


async def launch(
    book: RunBook, n: int, args: dict[str, Any], concs: list[int], prompts: int, tokens: int
) -> None:
    """One launch: the events a session records for it, folded into ``book``."""
    book.apply(ev.LaunchStarted(launch=n, target="sim", config={"args": args, "env": {}, "target": "sim"}))
    sim = Sim(args)
    try:
        await sim.wait_ready()
        book.apply(ev.ServerReady(launch=n))
        for i, c in enumerate(concs):
            s = BenchSettings(
                num_prompts=max(prompts, 4 * c), concurrency=c, max_new_tokens=tokens, warmup=1, seed=7
            )
            bench = 10 * n + i
            book.apply(ev.BenchmarkStarted(bench=bench, launch=n, workload={"concurrency": c}))
            res = await run_builtin(sim.url, s, bench=bench, launch=n, emit=lambda e: None)
            book.apply(res)
    finally:
        sim.stop()


def profile_of(host: str, steps: int, accept: float, bs: int) -> dict[str, Any]:
    """The simulator's own parts of one cycle at batch ``bs`` (what its step profiler reports as spans,
    at the simulator's speed factor)."""
    from eagletui.sim import perf

    cfg = perf.PerfConfig(
        host=host,
        spec=True,
        num_steps=steps,
        topk=1,
        num_draft_tokens=steps + 1,
        speed=float(BASE_ARGS["--sim-speed"]),
    )
    p = perf.spec_parts_ms(cfg, bs, accept)
    return {
        "unit": "cycle",
        "parts": {
            # the simulator's parts are all GPU work: its kernels fill its spans
            "draft": {"gpu_ms": p["draft"], "kernel_ms": p["draft"]},
            "verify": {"gpu_ms": p["verify"], "kernel_ms": p["verify"]},
            "draft_extend": {"gpu_ms": p["extend"], "kernel_ms": p["extend"]},
        },
    }


async def one_host(host: str, concs: list[int], prompts: int, tokens: int) -> list[dict[str, Any]]:
    base = {**BASE_ARGS, "--sim-host": host}
    book = RunBook()
    await launch(
        book,
        1,
        {**base, **SPEC, "--speculative-num-steps": 3, "--speculative-num-draft-tokens": 4},
        concs,
        prompts,
        tokens,
    )
    await launch(book, 2, base, concs, prompts, tokens)  # the no-spec reference
    await launch(
        book,
        3,
        {**base, **SPEC, "--speculative-num-steps": 2, "--speculative-num-draft-tokens": 3},
        concs,
        prompts,
        tokens,
    )
    await launch(
        book,
        4,
        {**base, **SPEC, "--speculative-num-steps": 4, "--speculative-num-draft-tokens": 5},
        concs,
        prompts,
        tokens,
    )
    rows: list[dict[str, Any]] = []
    for n in (3, 4):
        for ck in checks(book, n):
            rows.append({**ck.to_json(), "host": host, "parts": "fit (no-spec run)", "basis": ck.source})
    # the same predictions from a step profile's parts instead of the no-spec run: a profile taken while
    # benchmarking at each concurrency (its parts are those of that batch size)
    for c in concs:
        pbook = RunBook()
        for e in _events_of(book, {1, 3, 4}, c):
            pbook.apply(e)
        g1 = next(g for g in book.runs[1].groups() if g.concurrency == c)
        acc = g1.metric("accept_len").mean or 3.0
        pbook.apply(ev.ProfileCaptured(launch=1, summary=profile_of(host, 3, acc, c)))
        rows += _profile_rows(book, pbook, host)
        rows += _ablation_rows(pbook, host)
    return rows


def _ablation_rows(pbook: RunBook, host: str) -> list[dict[str, Any]]:
    """The same profile predictions with the gap split in the spans' shares instead of per forward
    (what the cycle model did before issue 25): kept out of the headline error, printed to compare."""
    from eagletui.core.cycle import model as cycle

    def shares(settings: Any, cycle_ms: float, accept: float, d: float, v: float, e: float, **_: Any) -> Any:
        t = d + v + e
        return cycle.CycleParts(
            cycle_ms * d / t / settings.steps,
            cycle_ms * v / t,
            cycle_ms * e / t / accept,
            "shares (ablation)",
        )

    real = cycle._split
    cycle._split = shares  # type: ignore[assignment]
    try:
        fresh = RunBook()
        for n in sorted(pbook.runs):
            for e in _events_of(pbook, {n}, None):
                fresh.apply(e)
        fresh.apply(ev.ProfileCaptured(launch=1, summary=pbook.runs[1].step_profile or {}))
        return [
            {**ck.to_json(), "host": host, "parts": "profile, shares (ablation)", "ablation": True}
            for n in (3, 4)
            for ck in checks(fresh, n)
        ]
    finally:
        cycle._split = real  # type: ignore[assignment]


def _profile_rows(book: RunBook, pbook: RunBook, host: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    fs, _ = forecasts(pbook, 1)
    for n in (3, 4):
        for ck in checks(pbook, n):
            rows.append({**ck.to_json(), "host": host, "parts": "step profile", "basis": ck.source})
    # speculation off estimated from the profile, against the no-spec run's measurement
    for f in fs:
        if f.settings is None:
            g = next(g for g in book.runs[2].groups() if g.concurrency == f.concurrency)
            m = g.metric("tok_s").mean or 0.0
            rows.append(
                {
                    "host": host,
                    "parts": "step profile",
                    "setting": f.label,
                    "concurrency": f.concurrency,
                    "predicted_tok_s": round(f.tok_s, 2),
                    "measured_tok_s": round(m, 2),
                    "error_pct": round((f.tok_s / m - 1) * 100, 2) if m else None,
                    "predicted_from": 1,
                    "launch": 2,
                }
            )
    return rows


def _events_of(book: RunBook, launches: set[int], conc: int | None) -> list[ev.Event]:
    out: list[ev.Event] = []
    for n in sorted(launches):
        r = book.runs[n]
        out.append(ev.LaunchStarted(launch=n, target="sim", config=r.config))
        out.append(ev.ServerReady(launch=n))
        for res in r.results:
            if conc is not None and r.concurrency_of(res) != conc:
                continue
            out.append(
                ev.BenchmarkStarted(
                    bench=res.bench, launch=n, workload={"concurrency": r.concurrency_of(res)}
                )
            )
            out.append(res)
    return out


async def amain(quick: bool) -> list[dict[str, Any]]:
    concs = [1, 8] if quick else [1, 4, 16]
    prompts, tokens = (8, 96) if quick else (32, 256)
    rows: list[dict[str, Any]] = []
    for host in ("pcie-rtx6000", "h200-nvlink"):
        rows += await one_host(host, concs, prompts, tokens)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description="Prediction error of the next-launch model on the simulator.")
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): concurrencies 1 and 8, 96 tokens",
    )
    ns = ap.parse_args()
    rows = asyncio.run(amain(ns.quick))
    print(
        f"{'host':14} {'parts':18} {'setting':16} {'conc':>4} {'predicted':>10} {'measured':>10} {'error':>8}"
    )
    for r in rows:
        print(
            f"{r['host']:14} {r['parts']:18} {r['setting']:16} {r['concurrency']:>4} {r['predicted_tok_s']:>10.1f} "
            f"{r['measured_tok_s']:>10.1f} {r['error_pct']:>+7.1f}%"
        )
    worst = max(
        (abs(r["error_pct"]) for r in rows if r["error_pct"] is not None and not r.get("ablation")),
        default=None,
    )
    print(json.dumps({"max_abs_error_pct": worst, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
