"""Per-request latencies of a benchmark, kept bounded, and what they say under the profile's SLO.

The built-in client measures every request's TTFT, mean ITL, end-to-end latency and output tokens, and
its result carries them (``BenchmarkResult.latency``: one column per latency, the per-request records),
so a recording, a replay's seek, a browser's feed and every export judge the SLO from the same records.
They are bounded: **exact up to** :data:`RESERVOIR` **requests**, beyond that a uniform reservoir sample
of that many (Algorithm R, seeded by the benchmark's number, so the same run keeps the same sample). A
100k-request run therefore holds 2048 rows (packed arrays in the run book, ≈ 80 KiB), not 100k objects;
its attainment is then an estimate whose standard error is at most √(0.25 ÷ 2048) ≈ 1.1 percentage
points, and its percentiles those of the sample (``sampled`` < ``requests`` says so).

:func:`slo_stats` turns the records of one setting's repeats (one concurrency) into what a tuner reads:
the share of requests meeting every bound (attainment), goodput (requests/s and output tokens/s of those
requests), p50/p90/p99 of each latency, and whether each bound holds at its percentile. TPOT is
(e2e − TTFT) ÷ (tokens − 1), as vLLM and ``bench_serving`` define it. The percentiles interpolate like
:mod:`eagletui.core.stats.sample` (numpy's default), the benchmark's own summary's definition.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import itertools
import math
import random
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eagletui.core.events import BenchmarkResult
from eagletui.core.profile.slo import METRICS, Slo
from eagletui.core.stats.sample import percentile

#: requests kept exactly per benchmark; beyond it a uniform sample of this many
RESERVOIR = 2048
_NAN = math.nan
#: the columns a result carries (TPOT is derived from them)
_STORED = ("ttft_ms", "itl_ms", "e2e_ms")
#: rows read back from a result at most (a hostile recording's million-row column costs no minute)
_MAX_ROWS = 64 * RESERVOIR


def _value(v: Any) -> float:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    return float(v) if ok else _NAN


class LatencyRecords:
    """One benchmark's per-request rows (ttft, itl, tpot, e2e in ms, output tokens), at most
    :data:`RESERVOIR` of them; ``seen`` counts every request added."""

    __slots__ = ("_cols", "_rng", "seen", "tokens")

    def __init__(self, seed: int = 0) -> None:
        self._cols: dict[str, array[float]] = {m: array("d") for m in METRICS}
        self.tokens: array[int] = array("q")
        self.seen = 0
        self._rng = random.Random(seed)

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, ttft_ms: Any, itl_ms: Any, e2e_ms: Any, tokens: Any) -> None:
        """One finished request; a value it lacks (or an impossible one) is NaN: it meets no bound."""
        ttft, e2e = _value(ttft_ms), _value(e2e_ms)
        n = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else 0
        tpot = (e2e - ttft) / (n - 1) if n > 1 and e2e >= ttft else _NAN
        row = {"ttft_ms": ttft, "itl_ms": _value(itl_ms), "tpot_ms": tpot, "e2e_ms": e2e}
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

    def to_json(self) -> dict[str, Any]:
        """``BenchmarkResult.latency``: ``n`` requests seen, then one list per stored column (null for a
        value the request lacked)."""
        out: dict[str, Any] = {"n": self.seen}
        for m in _STORED:
            out[m] = [None if math.isnan(v) else v for v in self._cols[m]]
        out["tokens"] = list(self.tokens)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], seed: int = 0) -> LatencyRecords:
        """Back from :meth:`to_json` (a recording, a feed: not trusted): a value a column lacks or gets
        wrong is NaN, rows past :data:`RESERVOIR` are sampled like new ones, past :data:`_MAX_ROWS` ignored."""
        rec = cls(seed)
        cols = [_list(d.get(m))[:_MAX_ROWS] for m in (*_STORED, "tokens")]
        for ttft, itl, e2e, tok in itertools.zip_longest(*cols):
            rec.add(ttft, itl, e2e, tok)
        n = d.get("n")
        if isinstance(n, int) and not isinstance(n, bool) and n > rec.seen:
            rec.seen = n  # the client saw more than it kept
        return rec


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def records_of(rows: Iterable[tuple[Any, Any, Any, Any]], seed: int = 0) -> dict[str, Any]:
    """(ttft ms, mean itl ms, e2e ms, output tokens) per request → ``BenchmarkResult.latency``."""
    rec = LatencyRecords(seed)
    for row in rows:
        rec.add(*row)
    return rec.to_json()


@dataclass(frozen=True)
class SloStats:
    """One setting's (one concurrency's) latencies under the SLO. ``attainment`` is a fraction of the
    requests (None: no SLO, no per-request records, or a bound's latency that no request recorded: see
    :attr:`unrecorded`); goodput is over the repeats' summed time."""

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
    #: metric → its value (ms) at its bound's percentile, what :attr:`meets` compares with the bound (the
    #: frontier's decode axis is 1000 ÷ the per-token one: the same number, so its SLO line is exact)
    at_bound: dict[str, float] = field(default_factory=dict)

    @property
    def unrecorded(self) -> list[str]:
        """The bounds' latencies no request recorded (``itl_ms`` of one-token answers): why the SLO
        cannot be told though records were kept."""
        return [m for m, v in self.meets.items() if v is None]

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
    at_bound: dict[str, float] = {}
    attainment = goodput_req = goodput_tok = None
    if slo:
        for b in slo.bounds:
            values = cols[b.metric]  # sorted above
            if values:
                at_bound[b.metric] = percentile(values, b.p)
            meets[b.metric] = at_bound[b.metric] <= b.max_ms if values else None
        # a bound no request recorded (an itl bound over one-token answers) leaves every request
        # unjudged: the share within the SLO is as unknown as the verdict, never "0 %" beside it
        if all(v is not None for v in meets.values()):
            attainment = good_req / requests if requests else None
            goodput_req, goodput_tok = good_req / duration, good_tok / duration
    return SloStats(requests, sampled, attainment, goodput_req, goodput_tok, pct, meets, at_bound)


def goodput_of(result: BenchmarkResult, slo: Slo | None) -> float | None:
    """One benchmark's goodput tok/s under ``slo`` from the records it carries (None: no SLO, or no
    per-request records to judge by): what a sweep keeps per repeat for ``objective = "goodput"``."""
    if not slo or not isinstance(result.latency, dict) or not result.latency:
        return None
    return slo_stats([(result, LatencyRecords.from_json(result.latency, result.bench))], slo).goodput_tok_s
