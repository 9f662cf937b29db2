"""Small, dependency-free statistics for benchmark numbers.

Percentiles use linear interpolation between closest ranks (numpy's default), so our p90/p99 agree
with ``sglang.bench_serving`` on the same samples and the two runners can be compared side by side.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """``q`` in [0, 100] over an already sorted sequence (sorting once serves several percentiles)."""
    n = len(sorted_values)
    if n == 0:
        return math.nan
    if n == 1:
        return float(sorted_values[0])
    pos = (n - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac)


def summarize(values: Iterable[float]) -> dict[str, float] | None:
    """mean/median/p90/p99, or None when there is nothing to summarize (never NaN or Infinity in
    JSON: non-finite samples are left out, so ``bench --json`` stays valid JSON)."""
    data = sorted(float(v) for v in values if v is not None and math.isfinite(v))
    if not data:
        return None
    return {
        "mean": math.fsum(data) / len(data),
        "median": percentile(data, 50),
        "p90": percentile(data, 90),
        "p99": percentile(data, 99),
    }


def mean_stdev(values: Iterable[float | None]) -> tuple[float | None, float | None, int]:
    """Mean, sample stdev (None below two samples: one run says nothing about noise) and count."""
    data = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not data:
        return None, None, 0
    m = math.fsum(data) / len(data)
    if len(data) < 2:
        return m, None, len(data)
    var = math.fsum((x - m) ** 2 for x in data) / (len(data) - 1)
    return m, math.sqrt(var), len(data)


def stat(stats: dict[str, Any], metric: str, key: str = "median") -> float | None:
    """Safe lookup into a BenchmarkResult.stats dict (missing metric or key → None)."""
    block = stats.get(metric) if isinstance(stats, dict) else None
    if not isinstance(block, dict):
        return None
    v = block.get(key)
    return float(v) if isinstance(v, int | float) else None
