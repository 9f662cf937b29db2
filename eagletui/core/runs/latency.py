"""Per-request latencies of a benchmark, kept bounded, and what they say under the profile's SLO.

Every finished request of the built-in client is a ``BenchmarkSample`` (``scope="request"``) with its
TTFT, mean ITL, end-to-end latency and output tokens: the per-request records, in the recording. The run
book keeps them per benchmark in :class:`LatencyRecords`: **exact up to** :data:`RESERVOIR` **requests**,
beyond that a uniform reservoir sample of that many (Algorithm R, seeded by the benchmark's number, so a
replay keeps the same sample). A 100k-request run therefore holds 2048 rows in packed arrays (≈ 80 KiB),
not 100k objects; its attainment is then an estimate whose standard error is at most
√(0.25 ÷ 2048) ≈ 1.1 percentage points, and its percentiles those of the sample.

:func:`slo_stats` turns the records of one setting's repeats (one concurrency) into what a tuner reads:
the percentage of requests meeting every bound (attainment), goodput (requests/s and output tokens/s
of those requests), p50/p90/p99 of each latency, and whether each bound holds at its percentile. The
percentiles interpolate like :mod:`eagletui.core.stats.sample` (numpy's default), the same definition
as the benchmark's own summary.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from eagletui.core.events import BenchmarkResult, BenchmarkSample
from eagletui.core.profile.slo import METRICS, Slo
from eagletui.core.stats.sample import percentile

#: requests kept exactly per benchmark; beyond it a uniform sample of this many
RESERVOIR = 2048
_NAN = math.nan


def _value(v: float | None) -> float:
    return float(v) if isinstance(v, int | float) and math.isfinite(v) and v >= 0 else _NAN


class LatencyRecords:
    """One benchmark's per-request rows (ttft, itl, tpot, e2e in ms, output tokens), at most
    :data:`RESERVOIR` of them; ``seen`` counts every request folded."""

    __slots__ = ("_cols", "_rng", "seen", "tokens")

    def __init__(self, seed: int = 0) -> None:
        self._cols: dict[str, array[float]] = {m: array("d") for m in METRICS}
        self.tokens: array[int] = array("q")
        self.seen = 0
        self._rng = random.Random(seed)

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, sample: BenchmarkSample) -> None:
        """Fold one finished request (``scope="request"``); TPOT = (e2e − TTFT) ÷ (tokens − 1)."""
        ttft, e2e = _value(sample.ttft_ms), _value(sample.e2e_ms)
        n = sample.output_tokens if isinstance(sample.output_tokens, int) and sample.output_tokens > 0 else 0
        tpot = (e2e - ttft) / (n - 1) if n > 1 and e2e >= ttft else _NAN
        row = {"ttft_ms": ttft, "itl_ms": _value(sample.itl_ms), "tpot_ms": tpot, "e2e_ms": e2e}
        self.seen += 1
        if len(self.tokens) < RESERVOIR:
            for m, col in self._cols.items():
                col.append(row[m])
            self.tokens.append(n)
            return
        slot = self._rng.randrange(self.seen)
        if slot < RESERVOIR:
            for m, col in self._cols.items():
                col[slot] = row[m]
            self.tokens[slot] = n

    def column(self, metric: str) -> Sequence[float]:
        return self._cols[metric]


@dataclass(frozen=True)
class SloStats:
    """One setting's (one concurrency's) latencies under the SLO. ``attainment`` is a fraction of the
    requests (None: no SLO, or no per-request records); goodput is over the repeats' summed time."""

    requests: int = 0
    #: requests the numbers are computed from (below ``requests`` only past the reservoir)
    sampled: int = 0
    attainment: float | None = None
    goodput_req_s: float | None = None
    goodput_tok_s: float | None = None
    #: metric → {"p50", "p90", "p99"} in ms, over requests
    percentiles: dict[str, dict[str, float]] = field(default_factory=dict)
    #: metric → its bound's percentile is within it (None: that latency was not recorded)
    meets: dict[str, bool | None] = field(default_factory=dict)

    @property
    def meets_slo(self) -> bool | None:
        """Every bound holds (None: one cannot be told, or there is no SLO)."""
        if not self.meets or any(v is None for v in self.meets.values()):
            return None
        return all(self.meets.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "sampled": self.sampled,
            "slo_attainment": self.attainment,
            "goodput": {"req_s": self.goodput_req_s, "tok_s": self.goodput_tok_s},
            "latency_ms": self.percentiles,
            "meets": self.meets,
            "meets_slo": self.meets_slo,
        }


def _meets(row: dict[str, float], slo: Slo) -> bool:
    # a latency the request did not report (NaN) cannot be shown to meet its bound
    return all(row[b.metric] <= b.max_ms for b in slo.bounds)


def slo_stats(pairs: Iterable[tuple[BenchmarkResult, LatencyRecords | None]], slo: Slo | None) -> SloStats:
    """The repeats of one setting, each result with its records (None: the runner kept none, as
    ``bench_serving`` does), under ``slo`` (None or empty: percentiles only)."""
    cols: dict[str, list[float]] = {m: [] for m in METRICS}
    requests = sampled = 0
    good_req = good_tok = duration = 0.0
    counted = False
    for result, rec in pairs:
        if rec is None or not len(rec) or result.duration_s <= 0:
            continue
        counted = True
        requests += result.requests
        sampled += len(rec)
        duration += result.duration_s
        rows = [{m: rec.column(m)[i] for m in METRICS} for i in range(len(rec))]
        for m in METRICS:
            cols[m].extend(v for v in rec.column(m) if not math.isnan(v))
        if slo:
            ok = [_meets(r, slo) for r in rows]
            all_tok = sum(rec.tokens)
            ok_tok = sum(t for t, k in zip(rec.tokens, ok, strict=True) if k)
            good_req += result.requests * sum(ok) / len(rec)
            good_tok += result.output_throughput * result.duration_s * (ok_tok / all_tok if all_tok else 0.0)
    if not counted:
        return SloStats()
    pct = {}
    for m, values in cols.items():
        if values:
            values.sort()
            pct[m] = {f"p{q}": percentile(values, q) for q in (50, 90, 99)}
    meets: dict[str, bool | None] = {}
    attainment = goodput_req = goodput_tok = None
    if slo:
        for b in slo.bounds:
            values = cols[b.metric]  # sorted above
            meets[b.metric] = percentile(values, b.p) <= b.max_ms if values else None
        attainment = good_req / requests if requests else None
        goodput_req, goodput_tok = good_req / duration, good_tok / duration
    return SloStats(requests, sampled, attainment, goodput_req, goodput_tok, pct, meets)
