"""Issue 37: ``eagletui tune``'s pure parts — the ``[tune]`` table, the chooser (expected improvement, the
exploration prior shrunk by measured pairs, the stop rule) and the tuner over a real sweep queue (never
a configuration twice, the budget, what was never tried and why). Milliseconds each."""

from __future__ import annotations

import math

import pytest

from eagletui.commands.profile import example_text
from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.model import ProfileError
from eagletui.core.profile.objective import Objective
from eagletui.core.stats.confidence import estimate
from eagletui.core.sweep.tune import (
    Point,
    Ratio,
    choose,
    expected_gain,
    factor_effect,
    margin,
    noise_of,
    objective_estimates,
)
from eagletui.session.sweep.cells import DONE, SKIPPED
from eagletui.session.sweep.queue import SweepQueue
from eagletui.session.sweep.tuner import Tuner, point_of, separable_by_repeat, tune_report

TUNE = """
[tune]
concurrency = [1, 8]
{extra}
[tune.space]
speculative-algorithm = ["EAGLE3", ""]
speculative-num-steps = [3, 1, 2, 4, 5]
NCCL_ALGO = ["Ring", "Tree"]
"""


def _profile(extra: str = ""):
    return parse_profile(example_text("demo") + TUNE.replace("{extra}", extra), "tune.toml")


def test_the_space_is_one_configuration_per_server_speculation_off_once_per_nccl_algo():
    spec = _profile().tune
    assert len(spec.configs) == 12  # (5 step counts + off) × Ring/Tree, not 2 × 5 × 2 = 20
    off = [v for v in spec.configs if v.settings["arg:--speculative-algorithm"] is None]
    assert [v.settings for v in off] == [
        {"arg:--speculative-algorithm": None, "env:NCCL_ALGO": "Ring"},
        {"arg:--speculative-algorithm": None, "env:NCCL_ALGO": "Tree"},
    ]
    assert len(spec.merged) == 8
    assert spec.configs[0].settings["arg:--speculative-num-steps"] == 3  # the first values: the start
    assert spec.budget_launches == 12 and spec.objective == Objective("tok_s", (1, 8))
    sweep = spec.sweep_spec()
    assert len(sweep.variants) == 12 and sweep.client == (("concurrency", (1, 8)),) and sweep.step_profile


@pytest.mark.parametrize(
    "extra, message",
    [
        ("budget = 3", "unknown key 'budget' in [tune]; did you mean"),
        ("objective = 'goodputt'", "tune.objective must be one of tok_s, tok_s_per_user"),
        ("budget_launches = 0", "tune.budget_launches must be an integer from 1"),
        ("prior_pct = nan", "tune.prior_pct must be a number from 0 to 100"),
        ("confidence = true", "tune.confidence must be a number"),
    ],
)
def test_a_bad_tune_table_names_file_line_and_column(extra, message):
    with pytest.raises(ProfileError) as exc:
        _profile(extra)
    text = str(exc.value)
    assert message in text and text.startswith("tune.toml:") and text.split(":")[1].isdigit()


def test_a_space_value_the_tune_panel_would_refuse_is_refused_with_its_line():
    bad = example_text("demo") + TUNE.replace("{extra}", "").replace('"Tree"]', '"Trea"]')
    with pytest.raises(ProfileError) as exc:
        parse_profile(bad, "tune.toml")
    line = bad.splitlines()[int(str(exc.value).split(":")[1]) - 1]
    assert "tune.space: NCCL_ALGO: 'Trea' is not one of" in str(exc.value) and line.startswith("NCCL_ALGO")


def test_objective_per_user_and_the_geometric_mean():
    o = Objective("tok_s_per_user", (1, 8))
    assert o.value(800.0, 8) == 100.0 and o.value(90.0, 1) == 90.0
    assert math.isclose(o.combine([100.0, 400.0]) or 0, 200.0)
    assert o.combine([100.0]) is None  # a concurrency missing: no value, never a partial one


# ---------------------------------------------------------------- the chooser, on numbers

P = [
    Point(0, "s3 ring", "steps 3", (("env:NCCL_ALGO", "Ring"),)),
    Point(1, "s3 tree", "steps 3", (("env:NCCL_ALGO", "Tree"),)),
    Point(2, "off ring", "speculation off", (("env:NCCL_ALGO", "Ring"),)),
    Point(3, "off tree", "speculation off", (("env:NCCL_ALGO", "Tree"),)),
]


def _m(*values):
    return estimate(list(values))


def test_the_start_first_then_the_largest_expected_gain():
    assert choose(P, {}, {}, tried=set(), prior=0.1, confidence=0.9).next == 0
    measured = {0: _m(60.0, 61.0, 59.0, 60.0)}
    fc = {0: {"speculation off": Ratio(1.4, 1.3, 1.5, "cycle model")}}
    c = choose(P, measured, fc, tried={0}, prior=0.1, confidence=0.9)
    assert c.next == 2  # predicted +40 %: before NCCL Tree, which only the prior lets beat the best
    g = {g.index: g for g in c.guesses}
    assert g[1].why.endswith("prior ±10 %") and g[1].gain > 0
    assert g[3].gain > g[1].gain


def test_an_unmeasured_factor_is_explored_once_then_its_measured_effect_decides():
    fc = {0: {"speculation off": Ratio(1.4, 1.3, 1.5)}}
    measured = {0: _m(60.0, 61.0, 59.0, 60.0), 2: _m(84.0, 85.0, 86.0, 85.0)}
    c = choose(P, measured, fc, tried={0, 2}, prior=0.1, confidence=0.9)
    assert c.next == 3  # Ring → Tree never measured: its prior may beat the best
    measured[3] = _m(82.0, 83.0, 82.5, 82.0)
    eff = factor_effect(P, measured, "env:NCCL_ALGO", "Ring", "Tree", 0.9)
    assert eff is not None and eff.mid < 1 and eff.hi < 1.03  # shrunk from ±10 % to what was measured
    c = choose(P, measured, fc, tried={0, 2, 3}, prior=0.1, confidence=0.9)
    assert c.next is None and "beyond its noise" in c.why  # s3 tree: 60 × Tree's measured −3 %
    assert c.best == 2


def test_a_prediction_within_the_noise_is_not_worth_a_launch_however_wide_its_band():
    """The rule ``n`` reads too (issue 37): the cycle model's +3 % for speculation off, its band
    -12 … +18 %, straddles the bar (the best lifted by its 5 % noise) and used to be worth its expected
    improvement; it is not: no launch could show it better. The NCCL prior's band is still explored,
    and a prediction beyond the bar is worth what it beats the bar by."""
    measured = {0: _m(60.0, 61.0, 59.0, 60.0), 1: _m(58.0, 59.0, 57.0, 58.0)}  # Tree measured: -3 %
    fc = {0: {"speculation off": Ratio(1.03, 0.88, 1.18, "cycle model")}}
    c = choose(P, measured, fc, tried={0, 1}, prior=0.1, confidence=0.9)
    g = {g.index: g for g in c.guesses}
    assert not g[2].explores and g[2].gain == 0.0 and g[2].high > c.bar
    assert c.next is None and "beyond its noise" in c.why
    fc = {0: {"speculation off": Ratio(1.2, 1.1, 1.3, "cycle model")}}
    c = choose(P, {0: measured[0]}, fc, tried={0}, prior=0.1, confidence=0.9)
    g = {g.index: g for g in c.guesses}
    assert c.next == 2 and g[2].gain == pytest.approx(g[2].value - c.bar)
    assert g[1].explores and g[1].gain > 0  # Ring → Tree never measured: explored by its prior


def test_a_first_launchs_noise_lifts_the_bar_by_its_standard_error_not_a_t_quantile_of_two_df():
    """The loaded simulated H200 (``eagletui tune``, its first launch: steps 3 at 1402/1231 and
    7212/7840 tok/s): the 90 % t interval of two degrees of freedom is ±11 %, and steps 5 predicted +9 %
    was never launched. The bar is the best lifted by its standard error × the normal quantile (±6 %)."""
    est = objective_estimates({0: [[1401.7, 1230.7], [7211.5, 7840.2]]})
    assert est[0].half_pct(0.9) > 11.0 and noise_of(est[0], 0.9) == pytest.approx(0.0635, abs=0.001)
    fc = {0: {"steps 5": Ratio(1.089, 1.034, 1.143)}}
    pts = [Point(0, "s3", "steps 3", ()), Point(1, "s5", "steps 5", ())]
    assert choose(pts, est, fc, tried={0}, prior=0.1, confidence=0.9).next == 1


def test_every_launch_that_predicts_a_configuration_counts_not_only_the_first():
    """Found in benchmarks/tune_efficiency.py (the simulated H200): steps 3's forecast of steps 4 (+8 %)
    launched it after steps 5, nearer, had measured 8 % under its own forecast and predicted steps 4
    below the best. Both forecasts now count, weighted by their bands: steps 4 is not worth a launch."""
    pts = [
        Point(0, "s3", "steps 3", (("env:NCCL_ALGO", "Ring"),)),
        Point(1, "s5", "steps 5", (("env:NCCL_ALGO", "Ring"),)),
        Point(2, "s4", "steps 4", (("env:NCCL_ALGO", "Ring"),)),
    ]
    measured = {0: _m(2066.0, 2070.0, 2062.0, 2066.0), 1: _m(2139.0, 2143.0, 2135.0, 2139.0)}
    fc = {
        0: {"steps 4": Ratio(1.077, 1.023, 1.131), "steps 5": Ratio(1.125, 1.069, 1.181)},
        1: {"steps 4": Ratio(0.957, 0.909, 1.005), "steps 3": Ratio(0.889, 0.845, 0.933)},
    }
    c = choose(pts, measured, fc, tried={0, 1}, prior=0.1, confidence=0.9)
    g = {g.index: g for g in c.guesses}
    assert 2066.0 * 0.957 < g[2].value < 2066.0 * 1.077 and "other launch" in g[2].why
    assert c.next is None and c.best == 1


def test_a_prediction_is_launched_before_the_same_prediction_with_a_prior_stacked_on_it():
    """Found in the benchmark's end-to-end run (the simulated H200, seed 1): steps 4 Tree, the model's
    steps 4 from one launch times Tree's untried prior, outbid steps 4 Ring, the same prediction pooled
    over both launches. Guesses with a prior pool alike now, and at an equal gain the one that tests one
    thing goes first."""
    ring, tree = (("env:NCCL_ALGO", "Ring"),), (("env:NCCL_ALGO", "Tree"),)
    pts = [
        Point(0, "s3 ring", "steps 3", ring),
        Point(1, "s5 ring", "steps 5", ring),
        Point(2, "s4 ring", "steps 4", ring),
        Point(3, "s4 tree", "steps 4", tree),
    ]
    measured = {0: _m(2000.0, 2002.0, 1998.0, 2000.0), 1: _m(2050.0, 2052.0, 2048.0, 2050.0)}
    fc = {0: {"steps 4": Ratio(1.10, 1.05, 1.15)}, 1: {"steps 4": Ratio(1.06, 1.01, 1.11)}}
    c = choose(pts, measured, fc, tried={0, 1}, prior=0.1, confidence=0.9)
    g = {g.index: g for g in c.guesses}
    assert g[3].priors and g[3].value == pytest.approx(g[2].value, rel=1e-3)  # was 2200: s3 ring's alone
    assert c.next == 2


def test_an_anchor_that_predicts_the_speculative_change_beats_one_that_would_guess_it():
    """Found on the simulator: from 'off tree' (no forecast of steps) a ±20 % guess outran the cycle
    model's forecast from 's3 ring'; a launch of a step count the model called 25 % worse followed."""
    fc = {0: {"speculation off": Ratio(1.3, 1.2, 1.4)}}
    measured = {0: _m(60.0, 61.0, 59.0, 60.0), 3: _m(85.0, 84.0, 85.0, 86.0)}
    c = choose(P, measured, fc, tried={0, 3}, prior=0.1, confidence=0.9)
    g = {g.index: g for g in c.guesses}
    assert g[1].anchor == 0 and g[1].value < 70  # s3 tree from s3 ring (× Tree's prior), not from off tree


def test_without_a_repeat_the_noise_is_unknown_not_zero():
    """Found in the dry run of device.sh tune (one benchmark a concurrency): the margin read "± 0.0 %,
    >99.9 % sure" because two copies of one mean have no spread."""
    est = objective_estimates({0: [[100.0], [400.0]], 1: [[90.0], [380.0]]})
    assert est[0].mean == pytest.approx(200.0) and est[0].se is None
    assert "noise unknown" in (margin(est, 0.9) or ("", "", ""))[2]
    assert noise_of(est[0], 0.9) == 0.05  # the assumed band, not none


def test_expected_gain_reads_the_band_as_uniform():
    assert expected_gain(90.0, 95.0, 100.0, 100.0) == 0.0
    assert expected_gain(90.0, 100.0, 110.0, 100.0) == pytest.approx(2.5)
    assert expected_gain(105.0, 105.0, 105.0, 100.0) == pytest.approx(5.0)
    assert expected_gain(101.0, 105.0, 130.0, 100.0) == pytest.approx(5.0)  # not the wide band's middle


# ---------------------------------------------------------------- the tuner over a real queue


def _queue(prof):
    return SweepQueue.plan(prof.tune.sweep_spec(), target="local", profile_path="tune.toml", profile=prof)


def _measure(q, i, conc1, conc8):
    v = q.variants[i]
    v.state = DONE
    for c, vals in zip(v.cells, (conc1, conc8), strict=True):
        c.repeats = [{"tok_s": x} for x in vals]


def test_the_tuner_never_picks_a_tried_configuration_and_says_why_the_rest_were_never_tried():
    prof = _profile("budget_launches = 2")
    q = _queue(prof)
    t = Tuner(prof, prof.tune)
    assert point_of(prof, q.variants[0]).spec == "steps 3"
    assert point_of(prof, q.variants[10]).spec == "speculation off"
    first = t.pick(q)
    assert first is not None and first.index == 0
    _measure(q, 0, [60.0, 61.0], [400.0, 410.0])
    q.variants[0].tune["forecast"] = {"speculation off": [1.4, 1.3, 1.5, "cycle model"]}
    second = t.pick(q)
    assert second is not None and second.index == 10 and second.tune["predicted"][0] > 0
    _measure(q, 10, [85.0, 86.0], [560.0, 570.0])
    assert t.pick(q) is None  # the budget of two launches is spent
    rest = [v for v in q.variants if v.state == SKIPPED]
    assert len(rest) == 10 and all(v.failure.startswith("the budget of 2 launches is spent") for v in rest)
    rep = tune_report(t, q)
    assert rep["best"]["config"] == q.variants[10].name and rep["launches"] == 2
    assert (
        rep["tried"][1]["predicted_band"][0] <= rep["tried"][1]["predicted"] and len(rep["never_tried"]) == 10
    )


def test_a_configuration_is_launched_twice_only_when_the_repeat_separates_the_best_two():
    prof = _profile()
    q = _queue(prof)
    t = Tuner(prof, prof.tune)
    assert t.pick(q).index == 0
    _measure(q, 0, [60.0, 66.0], [400.0, 440.0])
    q.variants[0].tune["forecast"] = {
        "speculation off": [1.2, 1.1, 1.3, "cycle model"],  # launched, then measured alike
        **{f"steps {k}": [0.8, 0.75, 0.85, "cycle model"] for k in (1, 2, 4, 5)},
    }
    nxt = t.pick(q)
    while nxt is not None and nxt.recheck_of is None:
        # speculation off and the NCCL factor measured 6.5 % below: nothing left to beat the best, and
        # the two not told apart (88 % sure) though a repeat of the best could (see the next test)
        same = [56.1, 61.7], [374.0, 411.4]
        _measure(q, nxt.index, *same)
        nxt = t.pick(q)
    assert nxt is not None and q.variants[nxt.recheck_of].state == DONE and nxt.name.endswith("(again)")
    assert "a repeat" in nxt.tune["chosen"] and "not told apart" in nxt.tune["chosen"]
    _measure(q, nxt.index, [62.0, 64.0], [410.0, 430.0])
    assert t.pick(q) is None  # once: still not told apart, never a third launch of it
    assert sum(1 for v in q.variants if v.recheck_of is not None) == 1
    rep = tune_report(t, q)
    assert rep["tried"][-1]["config"].endswith("(again)") and rep["tried"][-1]["measured"] is not None


def test_no_repeat_that_could_not_tell_the_best_two_apart():
    """Found on the simulated H200 under load (``eagletui tune``, two benchmarks a concurrency): steps 4
    (#3) against steps 3 (#1), +4.2 % ± 11.1 %, 75 % sure, was launched again; doubling its benchmarks
    could not reach the 90 % asked. Now said, not chased: 3 launches, not 4."""
    prof = _profile()
    q = _queue(prof)
    t = Tuner(prof, prof.tune)
    _measure(q, 0, [1408.9, 1233.2], [7735.0, 6796.9])
    _measure(q, 3, [1486.6, 1475.1], [7654.4, 6422.4])
    for v in q.variants:
        if v.state != DONE:
            v.state = SKIPPED
    est = t.measured(q)
    assert not separable_by_repeat(est[0], est[3], 0.9) and t._repeat(q) is None
    # the same two 6.5 % apart with less noise: a repeat of the best can decide
    a = objective_estimates({0: [[60.0, 66.0], [400.0, 440.0]], 1: [[56.1, 61.7], [374.0, 411.4]]})
    assert separable_by_repeat(a[0], a[1], 0.9)


def test_no_repeat_where_the_noise_is_unknown_but_the_two_are_far_apart():
    """Found in the dry run of device.sh tune (one benchmark a concurrency): speculation off 558 vs
    steps 3 373 tok/s, noise unknown, was launched again to "separate" them."""
    prof = _profile("budget_launches = 6")
    q = _queue(prof)
    t = Tuner(prof, prof.tune)
    _measure(q, 0, [60.0], [400.0])
    _measure(q, 10, [90.0], [600.0])
    for v in q.variants:
        if v.state != DONE:
            v.state = SKIPPED  # nothing else to try: only a repeat could follow
    assert t._repeat(q) is None
    q.variants[10].cells[0].repeats = [{"tok_s": 62.0}]
    q.variants[10].cells[1].repeats = [{"tok_s": 405.0}]
    assert t._repeat(q) is not None  # within the assumed band: the repeat is what tells them apart
