"""``tune`` against the exhaustive sweep of the same space: how many launches, and does it find the best?

Why: launches are the currency of a tuning session (~10 minutes each on the original host); ``tune``
must find what an exhaustive sweep finds with a third of its launches (issue 37).

How: the space is the issue's, (steps 1–5 with EAGLE-3 + speculation off) × NCCL_ALGO Ring/Tree = 12
server configurations, the objective tok/s at concurrency 1 and 8 (geometric mean), two benchmarks a
concurrency. The host is the simulator's own performance model (:mod:`eagletui.sim.perf`, the model the
simulator's server decodes by) on both presets, each benchmark its noise-free throughput × the
simulator's seeded noise; the cycle model cannot see NCCL_ALGO (the simulator slows the all-reduce by
Tree, by a share that differs per preset). A speculative launch gives the cycle model what a step
profile of the simulator gives it — the draft, verify and extend parts of a cycle — and eagletui's
:func:`~eagletui.core.cycle.model.predict` forecasts the other step counts and speculation off from
them; the chooser is ``tune``'s own (:func:`~eagletui.core.sweep.tune.choose`). The exhaustive sweep
measures all 12 with another seed of the same noise; ``found_best`` counts a seed when ``tune``'s best
is the sweep's best or the sweep cannot tell the two apart at 90 % (they are equal within noise).

What it does not exercise: the HTTP server, the launch, the trace parser (``tests/test_tune_run.py``
and ``tools/real-sglang/device.sh tune`` run ``eagletui tune`` end to end on the simulator).

The last line is JSON: ``launches_ratio`` (tune's launches ÷ the sweep's, mean over seeds and presets),
``found_best`` (share of seeds), per preset the same, and the seeds run.

Usage: ``python benchmarks/tune_efficiency.py [--quick] [--seeds N]``
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eagletui.core.cycle.model import CycleParts, Measurement, SpecSettings, predict, rates_from_mean
from eagletui.core.predict.bases import _label
from eagletui.core.stats.confidence import compare
from eagletui.core.sweep.tune import ASSUMED_NOISE, Point, Ratio, choose, objective_estimates
from eagletui.sim import perf

CONCURRENCIES = (1, 8)
REPEATS = 2
PRIOR = 0.10
CONFIDENCE = 0.9
PRESETS = ("pcie-rtx6000", "h200-nvlink")
SPACE = [(steps, algo) for steps in (3, 1, 2, 4, 5, None) for algo in ("Ring", "Tree")]


def config(preset: str, steps: int | None, algo: str) -> perf.PerfConfig:
    args = {"model_path": "moonshotai/Kimi-K2.5", "tp": 8, "sim_host": preset}
    if steps is not None:
        args.update(speculative_algorithm="EAGLE3", speculative_num_steps=steps, speculative_eagle_topk=1)
    return perf.PerfConfig.from_args(args, {"NCCL_ALGO": algo})


def points() -> list[Point]:
    return [
        Point(
            i,
            f"{_label(None if s is None else SpecSettings(s))} {a}",
            _label(None if s is None else SpecSettings(s)),
            (("env:NCCL_ALGO", a),),
        )
        for i, (s, a) in enumerate(SPACE)
    ]


def bench(cfg: perf.PerfConfig, rng: random.Random) -> list[list[float]]:
    """Two benchmarks at each concurrency: throughput × the simulator's noise."""
    return [[perf.throughput(cfg, c) * perf.noise(rng) for _ in range(REPEATS)] for c in CONCURRENCIES]


def forecast(cfg: perf.PerfConfig) -> dict[str, Ratio]:
    """What the cycle model predicts from a step profile of this speculative launch (objective ratios)."""
    s = SpecSettings(cfg.num_steps)
    out: dict[str, list[tuple[float, float, float]]] = {}
    h = cfg.preset
    for c in CONCURRENCIES:
        a = perf.mean_accept_len(cfg)
        parts = perf.spec_parts_ms(cfg, c, a)
        per_forward = (
            h.draft_step_ms * perf.DRAFT_FORWARD * (1 + perf.DRAFT_BS_SLOPE * (c - 1)) * perf.step_factor(cfg)
        )
        runner = parts["draft"] - per_forward * s.draft_forwards
        cp = CycleParts(
            draft_step_ms=per_forward,
            verify_ms=parts["verify"],
            per_token_ms=parts["extend"] / a,
            source="step profile",
            draft_fixed_ms=max(0.0, runner),
            per_forward=True,
        )
        m = Measurement(s, rates_from_mean(a, s.depth), cp, None, c)
        base = predict(m).tok_s
        for k in range(1, 6):
            if k != s.steps:
                p = predict(m, SpecSettings(k))
                out.setdefault(_label(SpecSettings(k)), []).append(
                    (p.tok_s / base, ASSUMED_NOISE, ASSUMED_NOISE)
                )
        # speculation off: a no-spec step ≈ the verify part (the ranking's estimate), a prior's band
        off = 1000.0 / parts["verify"]
        out.setdefault(_label(None), []).append((off / base, PRIOR, PRIOR))
    got = {}
    for label, rows in out.items():
        mid = math.exp(sum(math.log(r[0]) for r in rows) / len(rows))
        half = max(r[1] for r in rows)
        got[label] = Ratio(mid, mid * (1 - half), mid * (1 + half), f"{label}: cycle model")
    return got


def tune(preset: str, rng: random.Random) -> tuple[int, int]:
    """(tune's best configuration, its launches)."""
    pts = points()
    samples: dict[int, list[list[float]]] = {}
    fc: dict[int, dict[str, Ratio]] = {}
    while len(samples) < len(pts):
        c = choose(
            pts, objective_estimates(samples), fc, tried=set(samples), prior=PRIOR, confidence=CONFIDENCE
        )
        if c.next is None:
            break
        steps, algo = SPACE[c.next]
        cfg = config(preset, steps, algo)
        samples[c.next] = bench(cfg, rng)
        if steps is not None:
            fc[c.next] = forecast(cfg)
    est = objective_estimates(samples)
    return max(est, key=lambda i: est[i].mean), len(samples)


def one(preset: str, seed: int) -> tuple[float, bool]:
    sweep = {i: bench(config(preset, s, a), random.Random(seed * 1000 + i)) for i, (s, a) in enumerate(SPACE)}
    est = objective_estimates(sweep)
    truth = max(est, key=lambda i: est[i].mean)
    best, launches = tune(preset, random.Random(seed * 7919 + 1))
    same = best == truth or compare(est[best], est[truth], CONFIDENCE).separated is False
    return launches / len(SPACE), same


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10 seeds a preset")
    ap.add_argument("--seeds", type=int, default=None)
    ns = ap.parse_args()
    seeds = ns.seeds or (10 if ns.quick else 200)
    t0 = time.monotonic()
    per: dict[str, dict[str, float]] = {}
    ratios, founds = [], []
    for preset in PRESETS:
        rs, fs = zip(*(one(preset, s) for s in range(seeds)), strict=True)
        per[preset] = {
            "launches_ratio": round(sum(rs) / len(rs), 3),
            "found_best": round(sum(fs) / len(fs), 3),
        }
        ratios += rs
        founds += fs
        print(
            f"{preset}: {per[preset]['launches_ratio'] * 12:.1f} of 12 launches, best found in {per[preset]['found_best'] * 100:.0f} % of {seeds} seeds"
        )
    out = {
        "launches_ratio": round(sum(ratios) / len(ratios), 3),
        "found_best": round(sum(founds) / len(founds), 3),
        "presets": per,
        "seeds": seeds,
        "seconds": round(time.monotonic() - t0, 2),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
