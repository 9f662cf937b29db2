"""The one noise rule: when is a difference between two measurements more than run-to-run noise?

Every view that says "outside the noise" or "within noise" (the runs table's Δ colours, the verdicts,
the sweep's ranking and main effects) asks this module, and prints the band it used, so the rule and
the number on screen cannot disagree.

The rule. Two measurements ``a`` and ``b`` of tok/s (each a mean over its repeats of the same settings,
with a sample standard deviation) differ beyond noise when

    |a − b|  >  NOISE_SIGMAS × sqrt(sd_a² + sd_b²)

i.e. by more than twice what two single runs of unchanged settings typically differ by. The band is
**measured** only when both sides have at least two repeats: a standard deviation needs two samples,
and one side's noise says nothing about the other's settings. With one run on either side there is no
estimate: the comparison says "1 run, no noise estimate" (and suggests ``bench.repeats``) and is judged
against an **assumed** band of :data:`ASSUMED_NOISE` of the reference value, printed as such. A single
benchmark of the simulator or of a real server commonly moves by a few percent from one run to the
next, so a −2.6 % single run is not called a regression.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: A difference counts when it exceeds this many combined standard deviations.
NOISE_SIGMAS = 2.0
#: The band assumed (a fraction of the reference value) when a side has a single run.
ASSUMED_NOISE = 0.05


@dataclass(frozen=True)
class Band:
    """The noise band of one comparison: its half-width (absolute, in the metric's unit), whether it was
    measured (both sides repeated) or assumed, and how many runs each side had."""

    half: float | None
    n_a: int = 1
    n_b: int = 1
    base: float | None = None  # the reference value, for the band as a percentage
    measured: bool = True

    @property
    def pct(self) -> float | None:
        """The half-width as a % of the reference value (None without a reference)."""
        if self.half is None or not self.base:
            return None
        return self.half / abs(self.base) * 100.0

    def text(self) -> str:
        """``±3.1 % (2σ of 3+3 runs)`` or ``1 run, no noise estimate: assumed ±5 %``."""
        pct = self.pct
        width = "" if self.half is None else (f"±{pct:.1f} %" if pct is not None else f"±{self.half:.3g}")
        if not self.measured:
            n = min(self.n_a, self.n_b)
            head = f"{n} run{'s' if n != 1 else ''}, no noise estimate"
            return f"{head}: assumed {width}" if width else head
        return f"{width} ({NOISE_SIGMAS:g}σ of {self.n_a}+{self.n_b} runs)"

    def short(self) -> str:
        """The band in a few words, for a column: ``±3.1 %`` or ``±5.0 % assumed, 1 run``."""
        pct = self.pct
        width = "" if self.half is None else (f"±{pct:.1f} %" if pct is not None else f"±{self.half:.3g}")
        if not self.measured:
            return f"{width} assumed, 1 run" if width else "1 run"
        return width


def band(sd_a: float | None, n_a: int, sd_b: float | None, n_b: int, *, base: float | None = None) -> Band:
    """The band for comparing a measurement (``sd_a`` over ``n_a`` runs) with another (``sd_b``, ``n_b``)
    whose value is ``base``: measured when both repeated, else :data:`ASSUMED_NOISE` of ``base``."""
    ok = sd_a is not None and sd_b is not None and math.isfinite(sd_a) and math.isfinite(sd_b)
    if n_a < 2 or n_b < 2 or not ok:
        half = ASSUMED_NOISE * abs(base) if base is not None and math.isfinite(base) else None
        return Band(half, n_a, n_b, base, measured=False)
    assert sd_a is not None and sd_b is not None
    return Band(NOISE_SIGMAS * math.sqrt(sd_a * sd_a + sd_b * sd_b), n_a, n_b, base)


def outside(diff: float, b: Band) -> bool:
    """Is the difference ``diff`` (a − b, the metric's unit) outside the band?"""
    if b.half is None:
        return False
    return abs(diff) > b.half and diff != 0


SUGGEST_REPEATS = "set bench.repeats ≥ 2 for a measured noise band"
