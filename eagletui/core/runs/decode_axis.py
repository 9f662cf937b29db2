"""The frontier's y axis: the per-user decode speed that a per-token SLO bound constrains.

Output tok/s ÷ concurrency (what the economics call tok/s per user) includes each request's time to first
token and its wait in the queue, so a per-token bound (ITL or TPOT ≤ b ms) is no floor on it: a point
below 1000 ÷ b could meet the SLO, and a line there misled (issue 35's fixes). The axis is therefore the
speed the bound itself speaks of: **1000 ÷ the run's per-token latency at the percentile the SLO names**
(decode tok/s per user). With a TPOT bound it is 1000 ÷ TPOT at that bound's percentile, else with an
ITL bound 1000 ÷ ITL at its percentile (TPOT first: the bound the issue's "1/TPOT" names; a second
per-token bound greys points like TTFT's); the SLO's line sits at 1000 ÷ the bound, so a point under the
line is exactly one whose decode misses it (:attr:`~eagletui.core.runs.latency.SloStats.at_bound` is the
very number ``meets`` compares). Without a per-token bound it is 1000 ÷ the **median** request's TPOT.

Why per request and a percentile, not the mean: each run keeps its requests' TTFT, mean ITL, e2e and
output tokens (:mod:`eagletui.core.runs.latency`, TPOT = (e2e − TTFT) ÷ (tokens − 1)), and the SLO is
judged on those per-request values at a percentile; the median of them is what a typical user's stream
ran at, and one stalled request does not move it as it moves a mean. A run that kept no per-request
records (``bench_serving``) gives the summary's TPOT at that percentile where it has it (its median, p90
or p99 over requests, as SGLang's ``bench_serving`` computes them; its ITL percentiles are over the gaps
between chunks, another quantity, so an ITL axis takes none), else no y: such a point is listed
(``—``) but not drawn nor on the frontier. TTFT and e2e bounds have no line on this axis: they grey
the points that miss them, and the caption says so.

Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from eagletui.core.events import BenchmarkResult
from eagletui.core.profile.slo import METRICS, Slo, SloBound
from eagletui.core.runs.latency import SloStats
from eagletui.core.stats.sample import mean_stdev, stat

#: the per-token latencies the axis may stand on, in the order preferred
PER_TOKEN = ("tpot_ms", "itl_ms")
#: a summary's key for a percentile (``bench_serving``'s ``median_tpot_ms`` …, :mod:`eagletui.bench.bench_serving`)
_SUMMARY_KEY = {50.0: "median", 90.0: "p90", 99.0: "p99"}


@dataclass(frozen=True)
class DecodeAxis:
    """``metric`` at percentile ``p`` over requests, as 1000 ÷ ms; ``bound`` the SLO's on it (None: no
    per-token bound, the median request's TPOT and no line)."""

    metric: str = "tpot_ms"
    p: float = 50.0
    bound: SloBound | None = None

    @classmethod
    def for_slo(cls, slo: Slo | None) -> DecodeAxis:
        for metric in PER_TOKEN:
            b = next((b for b in (slo.bounds if slo else ()) if b.metric == metric), None)
            if b is not None:
                return cls(metric, b.p, b)
        return cls()

    @property
    def line(self) -> float | None:
        """The SLO on this axis: 1000 ÷ the bound (decode tok/s per user), None without one."""
        return 1000.0 / self.bound.max_ms if self.bound is not None else None

    @property
    def name(self) -> str:
        """``decode tok/s per user (1000 ÷ tpot p99)``: the axis label every view prints."""
        return f"decode tok/s per user (1000 ÷ {METRICS[self.metric]} p{self.p:g})"

    def caption(self, slo: Slo | None) -> str:
        """What the line and the grey say: ``SLO line: itl p99 ≤ 50 ms (under it decode misses it);
        ttft p99 ≤ 2 s: grey x only (no line on this axis)``; "" without an SLO."""
        if not slo:
            return ""
        rest = [b.describe() for b in slo.bounds if b != self.bound]
        parts = [f"SLO line: {self.bound.describe()} (under it decode misses it)"] if self.bound else []
        if rest:
            parts.append(" and ".join(rest) + ": grey x only (no line on this axis)")
        return "; ".join(parts)

    def value(self, stats: SloStats, results: Iterable[BenchmarkResult]) -> float | None:
        """1000 ÷ the pooled repeats' per-token latency at the axis's percentile (None: not measured)."""
        ms = (
            stats.at_bound.get(self.metric)
            if self.bound
            else stats.percentiles.get(self.metric, {}).get("p50")
        )
        if ms is None and stats.requests == 0 and self.metric == "tpot_ms":
            # no per-request records: the runner's own summary of TPOT over requests (bench_serving's
            # ITL summary is over gaps between chunks, not per request: never this axis)
            key = _SUMMARY_KEY.get(self.p)
            got = [stat(r.stats, self.metric, key) for r in results] if key else []
            ms = mean_stdev(got)[0] if got and None not in got else None
        return 1000.0 / ms if ms is not None and ms > 0 and math.isfinite(ms) else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "metric": self.metric, "p": self.p, "slo_line": self.line}
