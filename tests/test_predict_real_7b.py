"""Issue 32 on a real server whose cycle the GPU bounds: SGLang 0.5.17 on the lent H200 serving a
Llama-2-7B-shaped target (random weights, 11.3 GB) with the "work" EAGLE-3 drafter (accept = steps + 1
exactly), two launches of every setting (fixtures/real-sglang-0.5.17-7b/grid, README there). The tiny
target's cycle is the scheduler's CPU work (kernels 16 % of it) and no model priced on a GPU profile
follows it; here a verify is milliseconds of weight reads, as on a deployed model, and the predictions
from one steps-3 launch must land where the two launches of each setting do. What eagletui predicts is
read through ``tools/real-sglang/grid_eval.py --json``: the book, forecasts and ranking the product uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest_grid import grid_eval

GRID = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-7b" / "grid"
#: fresh launches of the same target, taken after the model was fitted to GRID (README there)
GRID2 = GRID.with_name("grid2")
STEPS = ("steps 1", "steps 2", "steps 4", "steps 5")


def _eval(grid: Path = GRID) -> dict[str, Any]:
    return grid_eval(grid)


def _rows(base: str) -> list[dict[str, Any]]:
    return [r for r in _eval()["rows"] if r["base"] == base]


def test_every_setting_was_launched_twice_and_the_launches_agree() -> None:
    for r in _rows("fit + no-spec"):
        assert r["launches"] == 2, r
        assert r["spread_pct"] < 17, r  # steps 4 at c = 4: 16 %; the rest 1-5 %


def test_steps_1_2_4_5_from_a_steps_3_launch_and_its_no_spec_launch_within_ten_percent_of_the_means() -> None:
    """The fit path (the steps-3 launch of round 1 and its round's no-spec launch): 8 of 8 within ±10 %
    (+9.3 % the largest, steps 4 at c = 4, whose two launches spread 16 %); speculation off is measured."""
    rows = _rows("fit + no-spec")
    steps = [r for r in rows if r["setting"] in STEPS]
    assert len(steps) == 8
    for r in steps:
        assert abs(r["error_pct"]) <= 10, r
        assert r["low"] <= r["measured_mean"] <= r["high"], r
    off = [r for r in rows if r["setting"] == "speculation off"]
    assert len(off) == 2 and all(abs(r["error_pct"]) <= 10 for r in off), off


def test_the_profile_path_prices_a_gpu_bound_cycle_additively_within_ten_percent() -> None:
    """From the steps-3 launch and its step profile (taken at batch 5): the cycle is GPU-bound (kernels 68 %
    of it), so the draft's forwards add to it, although the GPU idles 1.3 ms after the draft's replay. With
    that idle taken as room for more forwards (the regime of the tiny, CPU-bound target) steps 4 and 5 at
    c = 4 came out 13 % fast; now 7 of 8 within ±10 % (steps 4 at c = 4 +10.5 %, where its own two launches
    spread 16 %), every mean inside the band."""
    steps = [r for r in _rows("profile") if r["setting"] in STEPS]
    assert len(steps) == 8
    assert all("additive: kernels fill 68 % of the cycle" in r["source"] for r in steps), steps[0]["source"]
    assert all(r["low"] <= r["measured_mean"] <= r["high"] for r in steps)
    assert sum(abs(r["error_pct"]) <= 10 for r in steps) >= 7
    s5 = [r for r in steps if r["setting"] == "steps 5"]
    assert all(abs(r["error_pct"]) <= 10 for r in s5), s5


def test_the_verify_grows_with_the_draft_tokens_as_the_launchs_cycles_across_concurrencies_say() -> None:
    """The profile (one batch) holds the verify fixed, yet each step from 3 to 5 cost about 0.4 ms of a
    stream's cycle at c = 1 and 0.9 ms at c = 4 against a 0.26 ms draft replay: the verify checks c more
    tokens a step. The steps-3 launch's own cycles at c = 1 and 4 (7.02 and 7.65 ms for 4 and 16 verified
    tokens) give what a token costs; with it every step change lands within ±10 % (steps 4 at c = 4 +10.5 %
    before, +8.1 % now; its own launches spread 16 %) and the band keeps the fixed verify as an
    alternative."""
    steps = [r for r in _rows("profile") if r["setting"] in STEPS]
    assert len(steps) == 8
    for r in steps:
        assert abs(r["error_pct"]) <= 10, r
        assert r["low"] <= r["measured_mean"] <= r["high"], r
    c4 = [r for r in steps if r["concurrency"] == 4]
    assert all("the verify grows 0.2" in r["source"] for r in c4), c4[0]["source"]
    c1 = [r for r in steps if r["concurrency"] == 1]
    assert all("the verify grows 0.05" in r["source"] for r in c1), c1[0]["source"]


def test_speculation_off_from_the_profile_alone_is_the_verifys_share_of_the_cycle_within_ten_percent() -> None:
    """No no-spec launch in the book: the profile (batch 5, 5 × 4 verified tokens) spans its verify 6.9 ms,
    as long as the whole steps-3 cycle the benchmark measured at one request. Taken as the step (the CPU-bound
    rule: the verify alone), speculation off came out 25 % slow at c = 1 and 26 % at c = 4; as the verify's
    share of the profiled cycle applied to the measured one, -4.9 % and -7.8 %, each mean inside a band
    whose fast edge is the verify's GEMMs alone."""
    off = [r for r in _rows("profile") if r["setting"] == "speculation off"]
    assert len(off) == 2
    for r in off:
        assert abs(r["error_pct"]) <= 10, r
        assert r["low"] <= r["measured_mean"] <= r["high"], r
        assert "the verify's share of the measured cycle, where the GPU bounds it" in r["source"], r["source"]


@pytest.mark.parametrize("c", ["1", "4"])
def test_one_ranking_names_the_measured_best_and_the_adaptive_config_agrees(c: str) -> None:
    measured = _eval()["measured"]  # "steps 5 c=1": [tok/s of each launch]
    means = {k.rsplit(" c=", 1)[0]: sum(v) / len(v) for k, v in measured.items() if k.endswith(f" c={c}")}
    assert max(means, key=lambda k: means[k]) == "steps 5"
    assert f"at concurrency {c}: steps 5" in _eval()["next_launch"]
    assert _eval()["adaptive_config"][c] == {"candidate_steps": [5]}
    assert "CPU-bound" not in _eval()["next_launch"]


def test_on_fresh_launches_every_profile_prediction_lands_within_ten_percent() -> None:
    """The check on launches the model was not shaped on (grid2: a new steps-3 launch and its profile,
    speculation off, steps 1 once, steps 4 twice, steps 5 three times): from the steps-3 launch and its
    profile alone, steps 1 / 4 / 5 and speculation off at c = 1 and 4 all within ±10 % of their means
    (speculation off +1.0 / -3.7 %), each inside its band; both paths and the adaptive config name steps 5."""
    rows = [r for r in _eval(GRID2)["rows"] if r["base"] == "profile"]
    assert sorted({r["setting"] for r in rows}) == ["speculation off", "steps 1", "steps 4", "steps 5"]
    assert len(rows) == 8
    for r in rows:
        assert abs(r["error_pct"]) <= 10, r
        assert r["low"] <= r["measured_mean"] <= r["high"], r
    assert _eval(GRID2)["adaptive_config"] == {"1": {"candidate_steps": [5]}, "4": {"candidate_steps": [5]}}
