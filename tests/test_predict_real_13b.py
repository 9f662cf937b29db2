"""Issue 32 on a third shape: a Llama-2-13B-shaped target on the lent H200 (fixtures/real-sglang-0.5.17-13b,
README there), one launch each of steps 3 (with its step profile), steps 5 and speculation off, and (a later
device call) steps 1, 2 and 4. What the 7B
grids taught must hold here without anything fitted to it: from the steps-3 launch and its profile alone,
steps 5 and speculation off within ±10 % at c = 1 and 4, inside their bands, and steps 5 named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest_grid import grid_eval

GRID = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-13b" / "grid"


def _eval() -> dict[str, Any]:
    return grid_eval(GRID)


def test_steps_5_and_speculation_off_from_the_steps_3_profile_within_ten_percent() -> None:
    """Measured: steps 3 305.6 / 986.9, steps 5 408.8 / 1,323.1, speculation off 105.2 / 375.9 tok/s. The
    verify's share of the cycle puts speculation off at +5.8 / +0.9 %. Subtracting the verify's extra
    tokens as priced by the cycles across concurrencies (tried in ae91461, reverted) put it at +10.7 /
    +18.8 %: on a dense target the no-spec step does not shrink with them."""
    rows = [r for r in _eval()["rows"] if r["base"] == "profile"]
    assert sorted((r["setting"], r["concurrency"]) for r in rows) == [
        ("speculation off", 1), ("speculation off", 4), ("steps 1", 1), ("steps 1", 4), ("steps 2", 1),
        ("steps 2", 4), ("steps 4", 1), ("steps 4", 4), ("steps 5", 1), ("steps 5", 4),
    ]
    for r in rows:
        assert r["low"] <= r["measured_mean"] <= r["high"], r
        if r["setting"] in ("steps 5", "speculation off"):
            assert abs(r["error_pct"]) <= 10, r
    off = [r for r in rows if r["setting"] == "speculation off"]
    assert all("the verify's share of the measured cycle, where the GPU bounds it" in r["source"] for r in off)


def test_steps_1_2_and_4_launched_in_another_device_call() -> None:
    """Steps 1, 2 and 4 (`grid-r2-*`, one launch each, a later device call: 2026-12-04) from the same steps-3
    launch and profile: 177.2 / 612.7, 254.3 / 852.2, 380.7 / 1,293.2 tok/s measured; predicted +2.5 / +4.2,
    -3.5 / -3.4, -5.8 / -13.4 %. A third call (`grid-r3-*`: steps 3, speculation off, steps 4 again) put
    steps 4 at 375.8 / 1,231.3 and its base 8.8 % faster at c = 4 than round 1's: against the mean of two,
    steps 4 at c = 4 is -11.2 % (-7.3 % normalised by the base's own launches), inside its band."""
    rows = {(r["setting"], r["concurrency"]): r for r in _eval()["rows"] if r["base"] == "profile"}
    for key in [("steps 1", 1), ("steps 1", 4), ("steps 2", 1), ("steps 2", 4), ("steps 4", 1)]:
        assert abs(rows[key]["error_pct"]) <= 10, rows[key]
    assert -15 <= rows[("steps 4", 4)]["error_pct"] <= -10


def test_the_ranking_names_steps_5_at_both_concurrencies() -> None:
    assert _eval()["adaptive_config"] == {"1": {"candidate_steps": [5]}, "4": {"candidate_steps": [5]}}
    for c in ("1", "4"):
        assert f"at concurrency {c}: steps 5" in _eval()["next_launch"]
