"""Does speculation pay at one concurrency? The call, on what the measurements carry.

A spec run's speedup over its no-spec reference is a difference of two means, each over a few short
benchmarks; it **pays** only when that difference is outside its noise, as the sweep decides
(:mod:`eagletui.core.sweep.decide`): the confidence interval of the difference of the means
(:func:`eagletui.core.stats.confidence.compare`, 95 %), with the run-to-run noise pooled over every
setting both runs measured (the larger of that and this concurrency's own: noise is not the same at
every batch size). With a single run on each side and nothing to pool, the noise rule's assumed band
(:data:`eagletui.core.stats.noise.ASSUMED_NOISE` of the reference) stands in, said as assumed.

The steady-state decode (:mod:`eagletui.core.runs.steady`) is judged the same way and must agree:

* ``pays``: the aggregate is faster beyond its noise and the steady-state decode (where measured) is
  faster too;
* ``costs``: the aggregate is slower beyond its noise and the steady-state decode does not say the
  opposite beyond its own;
* ``disputed``: the two disagree (the aggregate pays but the decode is no faster; or the aggregate
  costs while the decode is faster beyond noise): TTFT, the prefill or the ramp weigh in the aggregate;
* ``within noise``: neither.

Pure: numbers in, calls out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from eagletui.core.stats.confidence import (
    DEFAULT_CONFIDENCE,
    Noise,
    compare,
    estimate,
    pooled_noise,
    t_critical,
)
from eagletui.core.stats.noise import ASSUMED_NOISE

#: More runs a side than this are no advice: a difference that needs them is too small for repeats
#: at this noise (a longer benchmark lowers the noise itself).
MAX_RUNS = 50

PAYS = "pays"
COSTS = "costs"
DISPUTED = "disputed"
WITHIN = "within noise"


@dataclass(frozen=True)
class Gap:
    """``a`` vs ``b`` in % of ``b``, with the half-width of its band (None: no band at all) and how that
    band was had."""

    pct: float
    half_pct: float | None
    how: str
    n_a: int
    n_b: int

    @property
    def outside(self) -> bool:
        return self.half_pct is not None and abs(self.pct) > self.half_pct

    @property
    def faster(self) -> bool:
        """``a`` is faster beyond the noise."""
        return self.outside and self.pct > 0

    @property
    def slower(self) -> bool:
        return self.outside and self.pct < 0

    def short(self) -> str:
        """``+7.0 % ± 27.1 %``."""
        band = f" ± {self.half_pct:.1f} %" if self.half_pct is not None else ""
        return f"{self.pct:+.1f} %{band}"

    def text(self) -> str:
        """``+7.0 % ± 27.1 % (95 % CI of 2+2 runs, run-to-run noise 10.5 % pooled over 6 cells)``."""
        return f"{self.short()} ({self.how})"

    def runs_needed(self, noise_cv: float | None) -> int | None:
        """Runs per side at which a difference this large would leave its 95 % band (the normal
        approximation, the noise as estimated now); None when no practical number would
        (:data:`MAX_RUNS`), or there is no difference or no noise estimate."""
        if noise_cv is None or noise_cv <= 0 or self.pct == 0:
            return None
        rel, ratio = abs(self.pct) / 100.0, 1.0 + self.pct / 100.0
        # half ≈ 1.96 × cv × √((1 + ratio²) / n) of b: solve half < rel for n
        n = (1.96 * noise_cv) ** 2 * (1.0 + ratio * ratio) / (rel * rel)
        return max(2, int(n) + 1) if n <= MAX_RUNS else None


def noise_of(cells: Sequence[Sequence[float]], own: Sequence[Sequence[float]]) -> Noise | None:
    """Run-to-run noise pooled over ``cells`` (every setting of both runs), or over ``own`` (this
    setting's two sides) when that is larger (the sweep's rule)."""
    every, mine = pooled_noise(cells), pooled_noise(own)
    if every is None:
        return mine
    if mine is not None and mine.cv > every.cv:
        return mine
    return every


def gap(a: Sequence[float], b: Sequence[float], noise: Noise | None) -> Gap | None:
    """``a``'s mean vs ``b``'s with its band (see the module docstring); None when either is empty."""
    ea, eb = estimate(a, noise), estimate(b, noise)
    if ea is None or eb is None or eb.mean <= 0:
        return None
    d = compare(ea, eb, DEFAULT_CONFIDENCE)
    pct = d.pct if d.pct is not None else 0.0
    if d.half_pct is not None and noise is not None:
        over = "one side's runs" if noise.cells <= 1 else f"{noise.cells} sides × settings"
        how = (
            f"{DEFAULT_CONFIDENCE * 100:g} % CI of {ea.n}+{eb.n} runs, "
            f"run-to-run noise {noise.cv * 100:.1f} % pooled over {over}"
        )
        return Gap(pct, d.half_pct, how, ea.n, eb.n)
    n = min(ea.n, eb.n)
    how = f"{n} run{'s' if n != 1 else ''} a side, no noise estimate: assumed ±{ASSUMED_NOISE * 100:.0f} %"
    return Gap(pct, ASSUMED_NOISE * 100.0, how, ea.n, eb.n)


def closable(a: Sequence[float], b: Sequence[float], noise: Noise | None, extra: int) -> bool:
    """Could ``extra`` more runs of ``b`` (``a`` as it is, the noise as estimated now, its degrees of
    freedom grown by the runs) put the difference of the means outside its band? The other side's own
    runs bound the band from below: past that, runs of one side are wasted."""
    if noise is None or not a or not b or extra <= 0:
        return False
    ma, mb = math.fsum(a) / len(a), math.fsum(b) / len(b)
    se = noise.cv * math.sqrt(ma * ma / len(a) + mb * mb / (len(b) + extra))
    return abs(ma - mb) > t_critical(DEFAULT_CONFIDENCE, noise.df + extra) * se


def call(aggregate: Gap, steady: Gap | None) -> str:
    """The call at one concurrency (the module docstring's rules)."""
    if aggregate.faster:
        return PAYS if steady is None or steady.pct > 0 else DISPUTED
    if aggregate.slower:
        return DISPUTED if steady is not None and steady.faster else COSTS
    return WITHIN
