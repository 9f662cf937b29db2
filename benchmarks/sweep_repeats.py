"""Adaptive vs fixed repeats on the demo sweep: the same ranking, how many benchmark runs.

Why: a sweep's second cost after its launches is its benchmark runs; adaptive repeats must reach the
decisions fixed repeats reach, with fewer runs (docs/sweeps.md §2).

How: the demo sweep (``eagletui profile init --example demo-sweep``: 2 × 2, all-reduce fusion ×
NCCL_ALGO on the simulator's PCIe host) is run once on the real simulator with six runs a variant
(``--record``: about 5 minutes), and both policies are **replayed** on those runs
(:func:`eagletui.core.sweep.decide.replay`): the same measurements in the same order, so the
difference is the policy's alone. Then the runs of each variant are put in 200 random orders and both
policies replayed again: how often each finds the ranking of all six runs, and at what cost.

Without ``--record`` (and with ``--quick``) the recording shipped with the tests is used
(``tests/fixtures/sweep/demo-sweep-runs.json``); ``--record FILE`` writes a new one.

The last line is JSON: ``fixed3_runs``, ``adaptive_runs``, ``same_ranking`` (recorded order) and,
over the reorderings, ``fixed3_hits``, ``adaptive_hits``, ``fixed3_mean_runs``, ``adaptive_mean_runs``.

Usage: ``python benchmarks/sweep_repeats.py [--quick] [--record FILE] [--orders N]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eagletui.commands.demo import free_port
from eagletui.commands.profile import example_text
from eagletui.core.profile.sweep import RepeatPolicy
from eagletui.core.sweep.decide import Recorded, replay

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "sweep" / "demo-sweep-runs.json"
FIXED3 = RepeatPolicy(adaptive=False, repeats=3, min_repeats=3, max_repeats=3)
ADAPTIVE = RepeatPolicy(adaptive=True, repeats=2, min_repeats=2, max_repeats=6)
ALL6 = RepeatPolicy(adaptive=False, repeats=6, min_repeats=6, max_repeats=6)


def record(path: Path) -> None:
    """Run the demo sweep on the simulator with six runs a variant and write its runs to ``path``."""
    with tempfile.TemporaryDirectory(prefix="sweep-repeats-") as tmp:
        t = Path(tmp)
        text = example_text("demo-sweep")
        text = text.replace("port = 30017", f"port = {free_port()}", 1)
        text = text.replace('runs_dir = "~/.eagletui/runs"', f'runs_dir = "{t / "runs"}"', 1)
        text = re.sub(r'repeats = "adaptive"', "repeats = 6", text, count=1)
        prof = t / "demo6.toml"
        prof.write_text(text)
        env = {**os.environ, "EAGLETUI_DATA_DIR": str(t / "data"), "EAGLETUI_CONFIG_DIR": str(t / "cfg")}
        env["PYTHONPATH"] = str(ROOT)
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "eagletui",
                "sweep",
                "local",
                "--profile",
                str(prof),
                "--json",
                "--no-preflight",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if res.returncode != 0:
            raise SystemExit(f"the sweep failed ({res.returncode}):\n{res.stderr[-3000:]}")
        rep = json.loads(res.stdout)
    launches = []
    for v in rep["variants"]:
        cell = v["cells"][0]
        launches.append(
            {
                "config": v["index"],
                "name": v["name"],
                "settings": v["settings"],
                "cost": [],
                "runs": [round(r["tok_s"], 3) for r in cell["repeats"] if r.get("tok_s")],
                "seconds": [r.get("seconds") for r in cell["repeats"]],
            }
        )
    path.write_text(
        json.dumps(
            {
                "provenance": "eagletui's demo-sweep profile run on the bundled simulator with repeats = 6 "
                "by benchmarks/sweep_repeats.py --record; tok/s of each run in the order measured",
                "launches": launches,
            },
            indent=1,
        )
    )


def load(path: Path) -> list[Recorded]:
    data = json.loads(path.read_text())
    return [Recorded(x["config"], (tuple(x["runs"]),), tuple(x.get("cost") or ())) for x in data["launches"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the shipped recording, 50 reorderings")
    ap.add_argument(
        "--record", type=Path, default=None, metavar="FILE", help="run the demo sweep and write FILE"
    )
    ap.add_argument("--orders", type=int, default=200, help="random reorderings of the recorded runs")
    ns = ap.parse_args()
    path = FIXTURE
    if ns.record is not None and not ns.quick:
        record(ns.record)
        path = ns.record
    rec = load(path)
    fixed, adaptive, everything = replay(rec, FIXED3), replay(rec, ADAPTIVE), replay(rec, ALL6)
    truth = everything.rankings()
    print(f"recording: {path} ({len(rec)} launches, {sum(len(r.cells[0]) for r in rec)} runs)")
    print(f"fixed 3 : {fixed.runs} runs, ranking {fixed.rankings()}")
    print(f"adaptive: {adaptive.runs} runs {adaptive.taken}, ranking {adaptive.rankings()}")
    print(f"all runs: ranking {truth}; {adaptive.decisions[0].how_sure()}")
    orders = 50 if ns.quick else ns.orders
    rng = random.Random(7)
    hits = {"f": 0, "a": 0}
    runs = {"f": 0, "a": 0}
    for _ in range(orders):
        shuffled = [
            Recorded(r.config, (tuple(rng.sample(r.cells[0], len(r.cells[0]))),), r.cost) for r in rec
        ]
        f, a = replay(shuffled, FIXED3), replay(shuffled, ADAPTIVE)
        hits["f"] += f.rankings() == truth
        hits["a"] += a.rankings() == truth
        runs["f"] += f.runs
        runs["a"] += a.runs
    print(
        f"over {orders} reorderings: the all-runs ranking found by fixed 3 {hits['f']}×, by adaptive {hits['a']}×; "
        f"mean runs {runs['f'] / orders:.2f} vs {runs['a'] / orders:.2f}"
    )
    print(
        json.dumps(
            {
                "fixed3_runs": fixed.runs,
                "adaptive_runs": adaptive.runs,
                "same_ranking": fixed.rankings() == adaptive.rankings(),
                "orders": orders,
                "fixed3_hits": hits["f"],
                "adaptive_hits": hits["a"],
                "fixed3_mean_runs": round(runs["f"] / orders, 2),
                "adaptive_mean_runs": round(runs["a"] / orders, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
