"""What one more verified token costs a cycle, read from one launch's cycles at several concurrencies
(issue 32: a step profile holds the verify fixed, but on a GPU-bound target each draft step costs c more
verified tokens; the 7B-shaped grid's steps 4 and 5 at c = 4 came out 10 % fast without it)."""

from __future__ import annotations

import math

import pytest

from eagletui.core.cycle.fit import _token_growth, verify_token_slope


def test_the_slope_is_the_cycle_over_the_tokens_each_cycle_verifies() -> None:
    # the 7B grid's steps-3 launch: 4 draft tokens a request, 7.02 ms at c = 1, 7.65 ms at c = 4
    slope = verify_token_slope([(1, 7.02), (4, 7.65)], tokens=4)
    assert slope is not None and math.isclose(slope, 0.63 / 12, rel_tol=1e-9)
    # least squares over three points on a line
    line = verify_token_slope([(1, 5.0), (2, 5.4), (4, 6.2)], tokens=2)
    assert line is not None and math.isclose(line, 0.2, rel_tol=1e-9)


@pytest.mark.parametrize(
    "points",
    [
        [(4, 7.65)],  # one concurrency tells nothing
        [(4, 7.65), (4, 7.7)],  # nor two benchmarks of one
        [(1, 7.65), (4, 7.02)],  # a faster cycle at a larger batch: noise, not a cost
        [(1, float("nan")), (4, 7.0)],
        [(0, 7.0), (1, -1.0)],
    ],
)
def test_nothing_to_read_gives_none(points: list[tuple[int, float]]) -> None:
    assert verify_token_slope(points, tokens=4) is None


def test_only_a_gpu_bound_cycle_grows_its_verify_by_the_tokens() -> None:
    assert _token_growth(0.21, busy=0.68) == 0.21
    # a CPU-bound cycle grows with the batch by the scheduler's work, not the verify's
    assert _token_growth(0.21, busy=0.16) == 0.0
    assert _token_growth(0.21, busy=None) == 0.0
    assert _token_growth(None, busy=0.9) == 0.0
    assert _token_growth(float("inf"), busy=0.9) == 0.0
