"""The sweep's statistics and decisions on hand-made numbers: Student's t, intervals, the stop rule,
ties to the cheaper setting, the crossover and SGLang's adaptive config."""

from __future__ import annotations

import math

import pytest

from eagletui.core.profile.sweep import RepeatPolicy
from eagletui.core.stats.confidence import (
    compare,
    estimate,
    fmt_sure,
    pooled_noise,
    t_cdf,
    t_critical,
    t_quantile,
)
from eagletui.core.sweep.crossover import crossover
from eagletui.core.sweep.decide import Cell, Recorded, cost_of, decide, next_step, replay

ADAPTIVE = RepeatPolicy(adaptive=True, repeats=2, min_repeats=2, max_repeats=6)
FIXED3 = RepeatPolicy(adaptive=False, repeats=3, min_repeats=3, max_repeats=3)


# ------------------------------------------------------------------ Student's t


@pytest.mark.parametrize(
    ("df", "t975"),
    [(1, 12.7062), (2, 4.3027), (3, 3.1824), (5, 2.5706), (10, 2.2281), (30, 2.0423), (1000, 1.9623)],
)
def test_t_critical_matches_the_tables(df, t975):
    assert t_critical(0.95, df) == pytest.approx(t975, abs=2e-4)


def test_t_cdf_is_symmetric_and_monotone():
    assert t_cdf(0.0, 4) == pytest.approx(0.5)
    assert t_cdf(2.0, 5) == pytest.approx(0.94903, abs=1e-5)
    assert t_cdf(-2.0, 5) == pytest.approx(1 - 0.94903, abs=1e-5)
    xs = [t_cdf(x / 4, 3.5) for x in range(-20, 21)]
    assert xs == sorted(xs)
    assert t_cdf(math.inf, 2) == 1.0 and math.isnan(t_cdf(math.nan, 2))
    assert t_quantile(0.975, 7.3) == pytest.approx(-t_quantile(0.025, 7.3))
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


def test_pooled_noise_is_the_anova_coefficient_of_variation():
    n = pooled_noise([[100.0, 102.0], [200.0, 196.0], [50.0]])  # the single run adds nothing
    assert n is not None and n.df == 2 and n.cells == 2
    r1 = [(100 / 101 - 1) ** 2 + (102 / 101 - 1) ** 2, (200 / 198 - 1) ** 2 + (196 / 198 - 1) ** 2]
    assert n.cv == pytest.approx(math.sqrt(sum(r1) / 2))
    assert pooled_noise([[1.0], [2.0]]) is None
    assert pooled_noise([[math.nan, 5.0, math.inf]]) is None  # non-finite values are dropped


def test_estimates_and_differences():
    a = estimate([110.0, 112.0, 108.0])
    b = estimate([100.0, 101.0, 99.0])
    assert a is not None and b is not None and a.n == 3 and a.df == 2
    d = compare(a, b)
    assert d.pct == pytest.approx(10.0) and d.separated is True and d.sure is not None and d.sure > 0.99
    assert "± " in d.text() and "sure" in d.text()
    one = estimate([100.0])
    assert one is not None and one.se is None
    d1 = compare(one, b)
    assert d1.separated is None and d1.sure is None and "noise unknown" in d1.text()
    assert fmt_sure(0.99996) == ">99.9 %" and fmt_sure(0.995) == "99.5 %" and fmt_sure(0.62) == "62 %"


# ------------------------------------------------------------------ the stop rule


def test_floor_first_of_group_and_max():
    c = Cell(0, 0, (100.0,))
    assert next_step(c, [c], ADAPTIVE).reason == "floor"
    c2 = Cell(0, 0, (100.0, 101.0))
    assert next_step(c2, [c2], ADAPTIVE).reason == "first" and next_step(c2, [c2], ADAPTIVE).more
    c3 = Cell(0, 0, (100.0, 101.0, 100.5))  # the yardstick of its group: one run over the floor
    assert next_step(c3, [c3], ADAPTIVE).reason == "first" and not next_step(c3, [c3], ADAPTIVE).more
    c6 = Cell(1, 0, (90.0, 110.0) * 3)
    assert next_step(c6, [c2, c6], ADAPTIVE).reason == "max"
    assert next_step(c2, [c2], FIXED3).more and next_step(c2, [c2], FIXED3).reason == "fixed"


def test_separated_tie_and_overlap():
    base = Cell(0, 0, (100.0, 100.5, 99.5, 100.2))
    far = Cell(1, 0, (110.0, 110.4))
    s = next_step(far, [base, far], ADAPTIVE)
    assert s.reason == "separated" and not s.more and s.vs == 0
    same = Cell(1, 0, (100.05, 100.1))
    quiet = [Cell(2, 1, (50.0, 50.01, 49.99)), Cell(3, 1, (80.0, 80.02, 79.98))]  # pooled noise: tiny
    t = next_step(same, [base, same, *quiet], ADAPTIVE)
    assert t.reason == "tie" and not t.more
    close = Cell(1, 0, (103.5, 100.5))
    o = next_step(close, [base, close], ADAPTIVE)
    assert o.more and o.reason == "overlap"


def test_limited_when_the_reference_alone_keeps_it_open():
    # the reference has two very noisy runs: no number of runs of the other closes the interval
    ref = Cell(0, 0, (80.0, 120.0))
    me = Cell(1, 0, (101.0, 101.2))
    s = next_step(me, [ref, me], ADAPTIVE, noise_cells=[ref, me])
    assert s.reason == "limited" and not s.more


# ------------------------------------------------------------------ decisions


def test_ties_go_to_the_cheaper_setting():
    spec4 = cost_of({"--speculative-algorithm": "EAGLE3", "--speculative-num-draft-tokens": 4})
    spec2 = cost_of({"--speculative-algorithm": "EAGLE3", "--speculative-num-draft-tokens": 2})
    off = cost_of({"--speculative-algorithm": None, "--speculative-num-draft-tokens": 4})
    assert off < spec2 < spec4 and off == (0, 0, 0, 0)
    cells = [
        Cell(0, 0, (100.5, 99.0, 101.5), spec4),  # ahead by a third of a percent: within the noise
        Cell(1, 0, (100.0, 102.0, 98.0), spec2),
        Cell(2, 0, (80.0, 81.0, 79.0), off),
    ]
    d = decide(cells, 0)
    assert d.leader == 0 and d.winner == 1 and d.on_cost and d.ranking == (1, 0, 2)
    assert d.how_sure().startswith("a tie within the noise") and "cheaper setting wins" in d.how_sure()
    # a clear winner is the winner whatever it costs
    clear = [Cell(0, 0, (120.0, 121.0, 119.0), spec4), Cell(1, 0, (100.0, 101.0, 99.0), off)]
    d2 = decide(clear, 0)
    assert d2.winner == 0 and not d2.on_cost and d2.margin is not None and (d2.margin.sure or 0) > 0.99
    assert d2.how_sure().startswith("clear (+20.0 % ±")


def test_unknown_noise_ranks_by_the_means():
    cells = [Cell(0, 0, (100.0,)), Cell(1, 0, (101.0,))]
    d = decide(cells, 0)
    assert d.ranking == (1, 0) and "noise unknown" in d.how_sure()


def test_replay_is_paired_and_counts_runs():
    rec = [
        Recorded(0, ((100.0, 100.4, 99.8, 100.1, 99.9, 100.2),)),
        Recorded(1, ((110.0, 110.3, 109.9, 110.2, 110.1, 109.8),)),
        Recorded(2, ((90.0, 90.2, 89.9, 90.1, 89.8, 90.3),)),
    ]
    fixed = replay(rec, FIXED3)
    adaptive = replay(rec, ADAPTIVE)
    assert fixed.runs == 9 and fixed.taken == ((3,), (3,), (3,))
    assert adaptive.rankings() == fixed.rankings() == [(1, 0, 2)]
    assert adaptive.runs < fixed.runs and adaptive.taken[0] == (3,)  # the yardstick got its third run


# ------------------------------------------------------------------ the demo sweep, recorded


def _demo_recording():
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "fixtures/sweep/demo-sweep-runs.json").read_text())
    return [Recorded(x["config"], (tuple(x["runs"]),), tuple(x["cost"])) for x in data["launches"]]


def test_adaptive_reaches_fixed_3s_ranking_on_the_demo_sweep_with_fewer_runs():
    """The demo sweep (2 × 2, six runs a variant recorded on the simulator) replayed under both
    policies: the same runs in the same order, so any difference is the policy's."""
    rec = _demo_recording()
    fixed, adaptive = replay(rec, FIXED3), replay(rec, ADAPTIVE)
    everything = replay(rec, RepeatPolicy(adaptive=False, repeats=6, min_repeats=6, max_repeats=6))
    assert fixed.runs == 12 and adaptive.runs < fixed.runs
    assert adaptive.rankings() == fixed.rankings() == everything.rankings() == [(2, 3, 0, 1)]
    assert adaptive.decisions[0].winner == 2 and (adaptive.decisions[0].margin.sure or 0) > 0.95


@pytest.mark.slow
def test_adaptive_is_right_at_least_as_often_as_fixed_3_over_reorderings():
    """The recorded runs in 200 random orders: how often each policy ranks the four variants as all
    six runs of each do, and at what cost (noise is heavy-tailed: a slow run now and then)."""
    import random

    rec = _demo_recording()
    truth = replay(rec, RepeatPolicy(adaptive=False, repeats=6, min_repeats=6, max_repeats=6)).rankings()
    rng = random.Random(7)
    hits = {"fixed": 0, "adaptive": 0}
    runs = {"fixed": 0, "adaptive": 0}
    for _ in range(200):
        shuffled = [Recorded(r.config, (tuple(rng.sample(r.cells[0], 6)),), r.cost) for r in rec]
        for name, pol in (("fixed", FIXED3), ("adaptive", ADAPTIVE)):
            res = replay(shuffled, pol)
            hits[name] += res.rankings() == truth
            runs[name] += res.runs
    assert hits["adaptive"] >= hits["fixed"] * 0.95, hits
    assert runs["adaptive"] < runs["fixed"] * 0.95, runs


# ------------------------------------------------------------------ crossover


def _dec(group, winner, runner=None):
    cells = [Cell(winner, group, (200.0, 201.0, 199.0))]
    if runner is not None:
        cells.append(Cell(runner, group, (150.0, 151.0, 149.0)))
    return decide(cells, group)


def test_crossover_rows_and_the_adaptive_config():
    spec = {
        "--model-path": "m",
        "--speculative-algorithm": "EAGLE3",
        "--speculative-draft-model-path": "d",
        "--speculative-eagle-topk": 1,
    }
    args = {
        0: {**spec, "--speculative-num-steps": 3, "--speculative-num-draft-tokens": 4},
        1: {**spec, "--speculative-num-steps": 1, "--speculative-num-draft-tokens": 2},
        2: {"--model-path": "m", "--speculative-algorithm": None},
    }
    decisions = [_dec(0, 0, 2), _dec(1, 0, 2), _dec(2, 1, 0), _dec(3, 2, 1)]
    xo = crossover(decisions, [1, 4, 16, 64], "concurrency", args)
    assert [(r.start, r.levels, r.winner) for r in xo.rows] == [
        (1, (1, 4), 0),
        (16, (16,), 1),
        (64, (64,), 2),
    ]
    assert xo.adaptive_config == {
        "1": {"candidate_steps": [3]},
        "16": {"candidate_steps": [1]},
        "64": {"candidate_steps": [0]},
    }
    assert xo.launch_args is not None and xo.launch_args["--speculative-num-steps"] == 3
    assert (
        xo.launch_args["--speculative-adaptive"] is True
        and "--speculative-num-draft-tokens" not in xo.launch_args
    )


@pytest.mark.parametrize(
    ("other", "why"),
    [
        ({"--speculative-eagle-topk": 4}, "topk 1"),
        ({"--speculative-num-draft-tokens": 8}, "steps + 1"),
        ({"--speculative-algorithm": "NGRAM"}, "EAGLE and EAGLE3"),
        ({"--tp-size": 4}, "more than speculation (--tp-size)"),
    ],
)
def test_crossover_says_why_there_is_no_adaptive_config(other, why):
    base = {"--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3, "--speculative-eagle-topk": 1}
    args = {0: base, 1: {**base, "--speculative-num-steps": 1, **other}}
    xo = crossover([_dec(0, 0, 1), _dec(1, 1, 0)], [1, 8], "concurrency", args)
    assert xo.adaptive_config is None and why in xo.why_not, xo.why_not
    assert len(xo.rows) == 2  # the plain table is there all the same


def test_crossover_without_speculation_winning():
    args = {0: {"--speculative-algorithm": None}, 1: {"--speculative-algorithm": None, "--x": 1}}
    xo = crossover([_dec(0, 0), _dec(1, 0)], [1, 8], "concurrency", args)
    assert xo.adaptive_config is None and "does not win" in xo.why_not
    assert crossover([_dec(0, 0)], [4], "max_new_tokens", args).why_not.startswith("SGLang's adaptive")
