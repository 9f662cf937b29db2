"""Issue 32 on steady launches: the lent H200's grids of 2026-12-03 (fixtures/real-sglang-0.5.17-pinned),
where pinning the measured scheduler to one CPU brought two launches of a setting within 0.5-15 %. What is
left is the model's own error, and this server's cycle is not monotonic in the step count (steps 2 runs a
shorter cycle than steps 1 and 3 in its own decode lines), which no GPU profile shows. So these tests hold
what must stay true there: the one ranking picks the measured best, next_launch and adaptive_config agree,
the band holds the measured means it held, and the profile says the cycle is CPU-bound."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagletui.core import events as ev
from eagletui.core.cycle.model import CPU_BOUND_SHARE
from eagletui.core.predict.forecast import forecasts
from eagletui.core.predict.next_launch import prediction_diagnoses
from eagletui.core.predict.ranking import adaptive_config
from eagletui.core.runs.book import RunBook

GRID = json.loads((Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-pinned" / "grid.json").read_text())
LABEL = {"s1": "steps 1", "s2": "steps 2", "s3": "steps 3", "s4": "steps 4", "s5": "steps 5", "off": "speculation off"}


def _launch(book: RunBook, n: int, launch: dict[str, Any]) -> None:
    book.apply(ev.LaunchStarted(launch=n, target="local", config={"args": launch["args"], "env": {}, "target": "local"}))
    book.apply(ev.ServerReady(launch=n))
    for i, r in enumerate(launch["runs"]):
        stats: dict[str, Any] = {"tok_s": {"mean": 1000.0 / r["itl_ms_mean"]}, "ttft_ms": {"mean": r["ttft_ms_mean"]}}
        book.apply(ev.BenchmarkStarted(bench=100 * n + i, launch=n, workload={"concurrency": r["concurrency"]}))
        book.apply(
            ev.BenchmarkResult(
                bench=100 * n + i,
                launch=n,
                output_throughput=r["output_throughput"],
                accept_length=r["accept_length"],
                requests=r["requests"],
                duration_s=r["duration_s"],
                workload_fingerprint=f"c{r['concurrency']}",
                stats=stats,
            )
        )


def _book(call: str, nospec: bool = True) -> RunBook:
    """Round 1's steps-3 launch with its step profile, and (``nospec``) round 1's no-spec launch."""
    g = GRID["calls"][call]
    first = lambda name: next(x for x in g["launches"][name] if x["round"] == 1)  # noqa: E731
    book = RunBook()
    _launch(book, 1, first("s3"))
    book.apply(ev.ProfileCaptured(launch=1, summary=g["profile_steps3_round1"]))
    if nospec:
        _launch(book, 2, first("off"))
    return book


def _means(call: str) -> dict[tuple[str, int], float]:
    out: dict[tuple[str, int], list[float]] = {}
    for name, launches in GRID["calls"][call]["launches"].items():
        for x in launches:
            for r in x["runs"]:
                out.setdefault((LABEL[name], r["concurrency"]), []).append(r["output_throughput"])
    return {k: sum(v) / len(v) for k, v in out.items()}


def test_pinned_launches_of_a_setting_agree_and_the_server_s_cycle_is_not_monotonic() -> None:
    """The fixture's own facts, which the rest leans on: one CPU gave steady launches (four did not), and
    the server's decode lines put steps 2's cycle below steps 1's and steps 3's."""
    for call, worst in (("pin1", 0.16), ("pin4", 0.40)):
        spreads = []
        for launches in GRID["calls"][call]["launches"].values():
            for c in (1, 4):
                tok = [next(r["output_throughput"] for r in x["runs"] if r["concurrency"] == c) for x in launches]
                spreads.append((max(tok) - min(tok)) / (sum(tok) / len(tok)))
        assert (max(spreads) < worst) == (call == "pin1"), (call, max(spreads))
    cycle = {
        s: (int(s[1]) + 1) * 1000.0 / GRID["calls"]["pin1"]["launches"][s][0]["server_decode_median_at_1"]
        for s in ("s1", "s2", "s3")
    }
    assert cycle["s2"] < cycle["s1"] and cycle["s2"] < cycle["s3"], cycle


@pytest.mark.parametrize("call", ["pin1", "pin4"])
def test_the_one_ranking_picks_the_measured_best_and_its_two_readers_agree(call: str) -> None:
    book = _book(call)
    means = _means(call)
    best = {c: max((s for s, cc in means if cc == c), key=lambda s: means[(s, c)]) for c in (1, 4)}
    assert best == {1: "steps 5", 4: "steps 5"}
    nxt = [d for d in prediction_diagnoses(book, 1) if d.kind == "next_launch"]
    assert nxt and "at concurrency 1: steps 5" in nxt[0].text and "at concurrency 4: steps 5" in nxt[0].text
    assert nxt[0].text.endswith("; the profile's cycle is CPU-bound: launch it to know")
    assert adaptive_config(book, 1) == {"1": {"candidate_steps": [5]}, "4": {"candidate_steps": [5]}}


@pytest.mark.parametrize(("call", "inside"), [("pin1", 6), ("pin4", 7)])
def test_the_band_holds_the_measured_means_it_held(call: str, inside: int) -> None:
    """From the steps-3 launch and its profile alone, 6 and 7 of the 10 predictions (steps 1, 2, 4, 5 and
    speculation off at c = 1 and 4) had the mean of their two launches inside the shown band; the misses
    are steps 2 and 5, whose cycles the profile cannot see. A change that narrows the band past these
    measurements fails here."""
    means = _means(call)
    fs, _why = forecasts(_book(call, nospec=False), 1)
    judged = [f for f in fs if not f.measured and f.low is not None and (f.label, f.concurrency) in means]
    assert len(judged) == 10, [(f.label, f.concurrency) for f in judged]
    held = [f for f in judged if f.shown()[0] <= means[(f.label, f.concurrency)] <= f.shown()[1]]
    assert len(held) >= inside, [(f.label, f.concurrency, f.shown(), means[(f.label, f.concurrency)]) for f in judged]


def test_a_prediction_from_this_cpu_bound_profile_says_so() -> None:
    """Kernels fill 24 % of the profiled parts (16 % of the whole cycle, gaps between parts included):
    every step change predicted from it says the cycle is CPU-bound and that a step change moves CPU work
    the profile cannot show."""
    parts = GRID["calls"]["pin1"]["profile_steps3_round1"]["parts"]
    kernels = sum(parts[p]["kernel_ms"] for p in ("draft", "verify", "draft_extend"))
    span = sum(parts[p]["gpu_ms"] for p in ("draft", "verify", "draft_extend"))
    assert kernels / span < CPU_BOUND_SHARE
    fs, _why = forecasts(_book("pin1", nospec=False), 1)
    said = [f.source for f in fs if not f.measured and f.label != "speculation off"]
    assert len(said) == 8 and all("CPU-bound: kernels fill 24 % of the draft, verify and extend" in s for s in said)
    # the verdict travels as a field (next_launch reads it), not as words found in the source text
    assert all(f.cpu_bound for f in fs if not f.measured and f.settings is not None)
    assert not any(f.cpu_bound for f in fs if f.measured)
