"""Issue 32 on a third shape: a Llama-2-13B-shaped target on the lent H200 (fixtures/real-sglang-0.5.17-13b,
README there), one launch each of steps 3 (with its step profile), steps 5 and speculation off. What the 7B
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
        ("speculation off", 1), ("speculation off", 4), ("steps 5", 1), ("steps 5", 4)
    ]
    for r in rows:
        assert abs(r["error_pct"]) <= 10, r
        assert r["low"] <= r["measured_mean"] <= r["high"], r
    off = [r for r in rows if r["setting"] == "speculation off"]
    assert all("the verify's share of the measured cycle (the GPU bounds it)" in r["source"] for r in off)


def test_the_ranking_names_steps_5_at_both_concurrencies() -> None:
    assert _eval()["adaptive_config"] == {"1": {"candidate_steps": [5]}, "4": {"candidate_steps": [5]}}
    for c in ("1", "4"):
        assert f"at concurrency {c}: steps 5" in _eval()["next_launch"]
