"""How close the next-launch prediction comes to the launch it predicts (issues 25 and 32), on the simulator.

Why: "what to launch next" is only worth showing if the tok/s it predicts is what the launch then
measures. For each host preset of the simulator this launches a spec run (``--speculative-num-steps 3``),
its no-spec counterpart and the other step counts (1, 2, 4 and 5), benchmarks each at every concurrency,
folds them into one run book as a session would, predicts the other step counts from the first two
launches only (:mod:`eagletui.core.predict` on the cycle model of :mod:`eagletui.core.cycle`: the verify
from the no-spec run, the work per accepted token from the base run's own requests at concurrency 1) and
compares with what they measured, and with the simulator's noise-free truth (``perf.expected``). A second
pass predicts from a step profile of the base launch instead of the no-spec run (the trace the
simulator's profiler writes for the base setting: its graph replays, the draft's lead, the period).

The last printed line is JSON: ``max_abs_error_pct`` over every prediction, the smallest and largest
ratio of predicted to measured tok/s, the seconds it took, and the table (each row with its ratio).

Usage: ``python benchmarks/prediction_error.py [--quick] [--keep FILE | --from FILE]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._simproc import SimProcess
from eagletui.bench.client import run_builtin
from eagletui.core import events as ev
from eagletui.core.predict.checks import checks
from eagletui.core.predict.forecast import forecasts
from eagletui.core.profile.model import BenchSettings
from eagletui.core.runs.book import RunBook

BASE_ARGS = {
    "--model-path": "moonshotai/Kimi-K2.5",
    "--tp": 8,
    "--sim-time-scale": 0.003,
    "--sim-speed": 1,
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
    book: RunBook,
    n: int,
    args: dict[str, Any],
    concs: list[int],
    prompts: int,
    tokens: int,
    sim: Sim | None = None,
) -> None:
    """One launch: the events a session records for it, folded into ``book``. ``sim`` is its simulator
    where it was started beforehand (its startup overlapping others'); it is stopped either way."""
    book.apply(ev.LaunchStarted(launch=n, target="sim", config={"args": args, "env": {}, "target": "sim"}))
    sim = sim or Sim(args)
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


class _Log:
    def line(self, msg: str, rank: int | None = None, level: int = 20) -> None:
        pass


def profile_of(host: str, steps: int, accept: float, bs: int) -> dict[str, Any]:
    """A step profile of the base setting at batch ``bs``: the trace the simulator's profiler writes for
    a few decode cycles (graph replays, the draft's lead, the period), summarised as eagletui does."""
    from eagletui.profiler.summary import step_breakdown, summarize_events
    from eagletui.sim import perf
    from eagletui.sim.chrome_trace import Step
    from eagletui.sim.profiler import Session, SimProfiler

    cfg = perf.PerfConfig(
        host=host,
        spec=True,
        num_steps=steps,
        topk=1,
        num_draft_tokens=steps + 1,
        speed=float(BASE_ARGS["--sim-speed"]),
    )
    prof = SimProfiler(cfg, _Log(), tp=8, ep=1)
    session = Session(
        output_dir=Path("."), profile_id="x", num_steps=None, by_stage=True, activities=["CPU", "GPU"]
    )
    t = 0.0
    for _ in range(5):
        parts = perf.spec_parts_ms(cfg, bs, accept)
        ms = sum(parts.values())
        session.steps.append(Step("DECODE", bs, bs * (steps + 1), t, ms, parts))
        t += ms * 1000 + 50
    trace = prof.trace(session, 0, [0.0] * 8)
    return step_breakdown([summarize_events("sim-TP-0-DECODE.trace.json", trace["traceEvents"], rank=0)])


#: the step counts predicted from the steps-3 base: every neighbour, and in the short mode steps 1 only
#: (where drafting stops: the prediction the issue found furthest off)
STEPS = (1, 2, 4, 5)
QUICK_STEPS = (1,)


async def one_host(
    host: str,
    concs: list[int],
    prompts: int,
    tokens: int,
    steps_to_predict: tuple[int, ...] = STEPS,
    kept: list[ev.Event] | None = None,
) -> tuple[list[dict[str, Any]], list[ev.Event]]:
    """Every launch of one host preset, benchmarked one after another (their simulators start together:
    a startup is mostly waiting), and the rows of every prediction; with the launches' events, which
    ``kept`` (from ``--keep``) stands in for: the predictions again without launching anything."""
    from eagletui.sim import perf

    base = {**BASE_ARGS, "--sim-host": host}
    book = RunBook()

    def spec(steps: int) -> dict[str, Any]:
        return {**base, **SPEC, "--speculative-num-steps": steps, "--speculative-num-draft-tokens": steps + 1}

    # launch 1 the steps-3 base, 2 its no-spec reference, then one per step count to predict
    plan = [spec(3), base, *(spec(steps) for steps in steps_to_predict)]
    if kept is not None:
        for e in kept:
            book.apply(e)
    else:
        sims = [Sim(args) for args in plan]
        try:
            for n, (args, sim) in enumerate(zip(plan, sims, strict=True), start=1):
                await launch(book, n, args, concs, prompts, tokens, sim)
        finally:
            for sim in sims:
                sim.stop()
    truth = {
        steps: perf.expected(
            {**_sim_args(spec(steps)), "sim_host": host, "sim_speed": BASE_ARGS["--sim-speed"]}
        )
        for steps in (3, *steps_to_predict)
    }
    rows: list[dict[str, Any]] = []
    later = range(3, 3 + len(steps_to_predict))
    for n in later:
        # each step count predicted from the base launch and its no-spec run only (in a session the
        # check reads the nearest earlier launch, which would be another of these)
        alone = RunBook()
        for e in _events_of(book, {1, 2, n}, None):
            alone.apply(e)
        for ck in checks(alone, n):
            rows.append(_row(ck, host, "fit (no-spec run)", truth))
    # the same predictions from a step profile of the base launch instead of the no-spec run, taken at
    # each concurrency (its parts are those of that batch size)
    for c in concs:
        g1 = next(g for g in book.runs[1].groups() if g.concurrency == c)
        acc = g1.metric("accept_len").mean or 3.0
        summary = profile_of(host, 3, acc, c)
        for n in later:
            # every concurrency of both launches (the base's requests at concurrency 1 say what an
            # accepted token costs), the profile taken at this one; the rows of this one
            pbook = RunBook()
            for e in _events_of(book, {1, n}, None):
                pbook.apply(e)
            pbook.apply(ev.ProfileCaptured(launch=1, summary=summary))
            rows += [r for r in _profile_rows(book, pbook, host, truth, n) if r["concurrency"] == c]
    return rows, _events_of(book, set(range(1, len(plan) + 1)), None)


def _sim_args(args: dict[str, Any]) -> dict[str, Any]:
    return {k.lstrip("-").replace("-", "_"): v for k, v in args.items()}


def _row(ck: Any, host: str, parts: str, truth: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """A check as a row, with the error against the simulator's noise-free truth where the base's and the
    setting's truths are known (single stream only: the truth is the one-stream rate)."""
    row = {**ck.to_json(), "host": host, "parts": parts, "basis": ck.source}
    steps = int(ck.label.split()[1]) if ck.label.startswith("steps ") else None
    if steps in truth and ck.concurrency == 1 and ck.measured > 0:
        ratio = truth[steps]["single_stream_tok_s"] / truth[3]["single_stream_tok_s"]
        row["true_ratio"] = round(ratio, 4)
    return row


def _profile_rows(
    book: RunBook, pbook: RunBook, host: str, truth: dict[int, dict[str, Any]], n: int
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [_row(ck, host, "step profile", truth) for ck in checks(pbook, n)]
    if n != 3:
        return rows
    # speculation off estimated from the profile, against the no-spec run's measurement (once)
    fs, _ = forecasts(pbook, 1)
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


HOSTS = ("pcie-rtx6000", "h200-nvlink")


async def amain(quick: bool, kept: dict[str, list[ev.Event]] | None = None) -> tuple[list[dict[str, Any]], dict]:
    """Full: every neighbour at concurrencies 1, 4 and 16, the hosts one after the other. Short (CI, under
    a minute): steps 1 at concurrency 1 only, fewer and shorter requests (eight: the fewest from which the
    client reads the work per accepted token), the two hosts side by side; the same code otherwise.
    Returns the rows and each host's events (``--keep``)."""
    if not quick:
        rows: list[dict[str, Any]] = []
        events: dict[str, list[ev.Event]] = {}
        for host in HOSTS:
            got, events[host] = await one_host(host, [1, 4, 16], 32, 256, kept=(kept or {}).get(host))
            rows += got
        return rows, events
    per_host = await asyncio.gather(
        *(one_host(host, [1], 8, 64, QUICK_STEPS, kept=(kept or {}).get(host)) for host in HOSTS)
    )
    return [r for rows, _ in per_host for r in rows], {h: e for h, (_, e) in zip(HOSTS, per_host, strict=True)}


def main() -> int:
    ap = argparse.ArgumentParser(description="Prediction error of the next-launch model on the simulator.")
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): steps 1 at concurrency 1, 8 requests of 64 tokens",
    )
    ap.add_argument("--keep", default="", help="write every launch's events here (pickle), for --from")
    ap.add_argument(
        "--from",
        dest="source",
        default="",
        help="predict again from the events --keep wrote, launching nothing (the model's error on the same "
        "measurements, to compare two builds of the predictor)",
    )
    ns = ap.parse_args()
    t0 = time.monotonic()
    kept = None
    if ns.source:
        with open(ns.source, "rb") as fh:
            kept = pickle.load(fh)  # a file this script wrote
    rows, events = asyncio.run(amain(ns.quick, kept))
    if ns.keep:
        with open(ns.keep, "wb") as fh:
            pickle.dump(events, fh)
    for r in rows:
        m = r["measured_tok_s"]
        r["predicted_to_measured"] = round(r["predicted_tok_s"] / m, 4) if m else None
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
    ratios = [r["predicted_to_measured"] for r in rows if r["predicted_to_measured"] is not None]
    print(
        json.dumps(
            {
                "quick": ns.quick,
                "max_abs_error_pct": worst,
                "min_predicted_to_measured": min(ratios, default=None),
                "max_predicted_to_measured": max(ratios, default=None),
                "predictions": len(rows),
                "seconds": round(time.monotonic() - t0, 1),
                "rows": rows,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
