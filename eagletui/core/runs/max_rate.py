"""The highest request rate a launch config sustains under the ``[slo]``, from the rates it was measured at.

A rate *meets* the SLO when every bound holds at its percentile over that rate's requests (pooled over
its benchmarks: :func:`eagletui.core.runs.latency.slo_stats`). The sustainable rate is the highest rate
that met it below the lowest that missed it (a rate above a miss that met it anyway is noise, not
capacity), and how sure that is: a rate whose percentile lay within the noise rule's assumed band of a
bound (:data:`~eagletui.core.stats.noise.ASSUMED_NOISE`) is named as such. The search that picks the
rates is :mod:`eagletui.core.sweep.maxrate`; this is its answer, read alike by the search, the frontier
(:mod:`eagletui.core.runs.frontier`), ``sweep --json`` and every export. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from eagletui.core.profile.slo import Slo
from eagletui.core.runs.latency import LatencyRecords
from eagletui.core.stats.noise import ASSUMED_NOISE
from eagletui.core.stats.sample import percentile


@dataclass(frozen=True)
class Trial:
    """One rate (req/s) and whether it met the SLO (None: could not be told), ``near``: a bound's
    percentile within the noise of it."""

    rate: float
    meets: bool | None
    near: bool = False


@dataclass(frozen=True)
class MaxRate:
    """``rate``: the highest that met the SLO below ``fails_at`` (the lowest that missed it; None: none
    did), over ``trials`` rates; None where even the lowest missed it."""

    rate: float | None
    fails_at: float | None
    trials: tuple[Trial, ...]

    @property
    def unsure(self) -> bool:
        """The answer rests on a rate judged within the noise (the rate itself or the miss above it)."""
        return any(t.near and t.rate in (self.rate, self.fails_at) for t in self.trials)

    def text(self) -> str:
        """``sustains 4.2 req/s under the SLO (5.1 misses it; 5 rates tried)``."""
        n = len(self.trials)
        tried = f"{n} rate{'s' if n != 1 else ''} tried"
        noise = "; within the noise of a bound" if self.unsure else ""
        if self.rate is None:
            low = min((t.rate for t in self.trials), default=None)
            return f"misses the SLO even at {rate_text(low)} req/s ({tried}{noise})" if low is not None else "no rate tried"
        above = f"{rate_text(self.fails_at)} misses it" if self.fails_at is not None else "no rate tried missed it"
        return f"sustains {rate_text(self.rate)} req/s under the SLO ({above}; {tried}{noise})"

    def to_json(self) -> dict[str, Any]:
        return {
            "req_s": self.rate,
            "fails_at_req_s": self.fails_at,
            "unsure": self.unsure,
            "trials": [{"req_s": t.rate, "meets_slo": t.meets, "near_bound": t.near} for t in self.trials],
            "text": self.text(),
        }


def rate_text(rate: float) -> str:
    """A rate as a person reads it: three significant digits (a bisection's 159.055 is 159), whole from
    1000 up (2000, not 2e+03)."""
    return f"{rate:.3g}" if rate < 1000 else f"{rate:.0f}"


def sustainable(trials: Iterable[Trial]) -> MaxRate:
    """The answer from the rates tried (a rate tried twice: its last verdict)."""
    by_rate = {t.rate: t for t in trials}
    ordered = tuple(by_rate[r] for r in sorted(by_rate))
    fails = [t.rate for t in ordered if t.meets is False]
    fails_at = min(fails) if fails else None
    ok = [t.rate for t in ordered if t.meets is True and (fails_at is None or t.rate < fails_at)]
    return MaxRate(max(ok) if ok else None, fails_at, ordered)


def near_bound(records: Sequence[LatencyRecords], slo: Slo) -> bool:
    """Whether a bound's percentile over ``records`` lies within the noise of the bound (so its verdict
    could flip on a rerun): within ± :data:`~eagletui.core.stats.noise.ASSUMED_NOISE` of it."""
    for b in slo.bounds:
        values = sorted(v for rec in records for v in rec.column(b.metric) if not math.isnan(v))
        if values and abs(percentile(values, b.p) / b.max_ms - 1.0) <= ASSUMED_NOISE:
            return True
    return False
