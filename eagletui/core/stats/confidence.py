"""How sure a measurement is: confidence intervals of benchmark means and the test that tells two apart.

A benchmark's tok/s moves from one run to the next (batching order, clocks, other tenants, a 2 s run
on a real server: ±5 % is common). A sweep therefore repeats and asks, for two settings measured
``n_a`` and ``n_b`` times, whether the difference of their means is more than that noise explains:

* the **standard error** of a mean of ``n`` runs is ``s / √n`` — ``s`` either the cell's own sample
  standard deviation (``n − 1`` degrees of freedom) or, better with two or three runs a cell, the
  run-to-run noise **pooled** over every cell of the sweep (:func:`pooled_noise`: the coefficient of
  variation ``√(Σ (x/mean − 1)² / Σ (n − 1))``, as in a one-way ANOVA; benchmark noise as a fraction of
  the mean is a property of the host and the benchmark's length, not of one setting);
* the difference ``a − b`` has standard error ``√(se_a² + se_b²)`` and a Student-t confidence interval
  with the pooled degrees of freedom (or Welch–Satterthwaite's when each side has its own);
* two settings are **separated** when that interval excludes 0, and **equivalent** when it lies inside
  ``± tie_pct`` of ``b`` (a difference too small to matter, whatever its sign);
* "how sure" is the one-sided confidence that the faster-looking one is faster: the t distribution's
  CDF at ``|a − b| / se``.

Pure, dependency-free (no SciPy on a laptop): Student's t through the regularized incomplete beta
function (Lentz's continued fraction). Other modules (the sweep's repeats and decisions, and any view
that wants an interval) call this one; it holds no policy.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DEFAULT_CONFIDENCE = 0.95


# ------------------------------------------------------------------------------ Student's t


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 ≤ x ≤ 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with ``df`` (> 0, not necessarily whole) degrees of freedom."""
    if math.isnan(t) or not df > 0:
        return math.nan
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """The t value below which a fraction ``p`` (0 < p < 1) of Student's t with ``df`` lies. Remembered:
    a bisection over the incomplete beta costs ~1 ms, and the run book's calls ask for the same few
    (confidence, degrees of freedom) over and over (a frontier's fold asked 256 times)."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0 (got p={p}, df={df})")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):  # bisection: monotone, and exact enough after 60 halvings of [0, hi]
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def t_critical(confidence: float, df: float) -> float:
    """The two-sided critical value: half of the ``confidence`` interval in standard errors."""
    return t_quantile(0.5 + confidence / 2.0, df)


# ------------------------------------------------------------------------------ samples


def _finite(values: Iterable[float | None]) -> list[float]:
    out = []
    for v in values:
        if v is None or isinstance(v, bool):
            continue
        f = float(v)
        if math.isfinite(f):
            out.append(f)
    return out


@dataclass(frozen=True)
class Noise:
    """Run-to-run noise as a fraction of the mean (``cv``) with its degrees of freedom; ``cells`` is how
    many cells it was pooled over (1: one cell's own repeats)."""

    cv: float
    df: float
    cells: int = 1

    def text(self) -> str:
        over = f"pooled over {self.cells} cells" if self.cells > 1 else "one cell's repeats"
        return f"run-to-run noise {self.cv * 100:.1f} % ({over}, {self.df:g} d.f.)"


def pooled_noise(samples: Iterable[Sequence[float | None]]) -> Noise | None:
    """The coefficient of variation pooled over every sample of two or more positive values: Σ over
    samples of Σ (x / mean − 1)², divided by Σ (n − 1). None when no sample has two values."""
    ss, df, cells = 0.0, 0, 0
    for s in samples:
        xs = [x for x in _finite(s) if x > 0]
        if len(xs) < 2:
            continue
        m = math.fsum(xs) / len(xs)
        ss += math.fsum((x / m - 1.0) ** 2 for x in xs)
        df += len(xs) - 1
        cells += 1
    if df == 0:
        return None
    return Noise(math.sqrt(ss / df), float(df), cells)


@dataclass(frozen=True)
class Estimate:
    """A mean of ``n`` runs with its standard error and degrees of freedom (``se`` None: one run and no
    pooled noise to lean on). ``pooled`` says the error comes from a :class:`Noise` shared with others."""

    mean: float
    n: int
    se: float | None
    df: float | None
    pooled: bool = False

    def interval(self, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float] | None:
        if self.se is None or self.df is None:
            return None
        half = t_critical(confidence, self.df) * self.se
        return self.mean - half, self.mean + half

    def half_pct(self, confidence: float = DEFAULT_CONFIDENCE) -> float | None:
        """Half the confidence interval as a % of the mean."""
        iv = self.interval(confidence)
        if iv is None or self.mean == 0:
            return None
        return (iv[1] - self.mean) / abs(self.mean) * 100.0


def estimate(values: Iterable[float | None], noise: Noise | None = None) -> Estimate | None:
    """The mean of ``values`` (non-finite ones dropped) and its error: from ``noise`` when given (its
    cv × the mean, its degrees of freedom), else from the values' own spread (two or more)."""
    xs = _finite(values)
    if not xs:
        return None
    n = len(xs)
    m = math.fsum(xs) / n
    if noise is not None and noise.df > 0:
        return Estimate(m, n, noise.cv * abs(m) / math.sqrt(n), noise.df, pooled=True)
    if n < 2:
        return Estimate(m, n, None, None)
    sd = math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (n - 1))
    return Estimate(m, n, sd / math.sqrt(n), float(n - 1))


@dataclass(frozen=True)
class Difference:
    """``a − b`` with its interval at ``confidence``. Unknown noise (a one-run side) leaves ``se`` None:
    nothing is then separated, equivalent or sure."""

    a: Estimate
    b: Estimate
    confidence: float
    se: float | None
    df: float | None

    @property
    def diff(self) -> float:
        return self.a.mean - self.b.mean

    @property
    def half(self) -> float | None:
        if self.se is None or self.df is None:
            return None
        return t_critical(self.confidence, self.df) * self.se

    @property
    def pct(self) -> float | None:
        """The difference as a % of ``b``."""
        return None if self.b.mean == 0 else self.diff / abs(self.b.mean) * 100.0

    @property
    def half_pct(self) -> float | None:
        h = self.half
        return None if h is None or self.b.mean == 0 else h / abs(self.b.mean) * 100.0

    @property
    def separated(self) -> bool | None:
        """The interval excludes 0 (None: the noise is unknown)."""
        h = self.half
        if h is None:
            return None
        return abs(self.diff) > h

    def within(self, tie_pct: float) -> bool | None:
        """The whole interval lies inside ± ``tie_pct`` % of ``b``: equal for every practical purpose."""
        h, p = self.half_pct, self.pct
        if h is None or p is None:
            return None
        return abs(p) + h <= tie_pct

    @property
    def sure(self) -> float | None:
        """One-sided confidence (0.5–1) that the one with the larger mean really is larger."""
        if self.se is None or self.df is None:
            return None
        if self.se == 0:
            return 1.0 if self.diff else 0.5
        return t_cdf(abs(self.diff) / self.se, self.df)

    def text(self) -> str:
        """``+6.2 % ± 2.1 % (95 % CI), 99.9 % sure`` or ``+6.2 % (noise unknown: 1 run)``."""
        p = self.pct
        if p is None:
            return "no comparison (a zero reference)"
        hp, s = self.half_pct, self.sure
        if hp is None or s is None:
            n = min(self.a.n, self.b.n)
            return f"{p:+.1f} % (noise unknown: {n} run{'s' if n != 1 else ''})"
        return f"{p:+.1f} % ± {hp:.1f} % ({self.confidence * 100:g} % CI), {fmt_sure(s)} sure"


def fmt_sure(p: float) -> str:
    """``99.9 %``, ``>99.9 %``, ``62 %``: enough digits to tell 99 from 99.99 without false precision."""
    pct = p * 100.0
    if pct >= 99.95:
        return ">99.9 %"
    if pct >= 99.0:
        return f"{pct:.1f} %"
    return f"{pct:.0f} %"


def compare(a: Estimate, b: Estimate, confidence: float = DEFAULT_CONFIDENCE) -> Difference:
    """``a − b``: the pooled degrees of freedom when both lean on the same noise, else Welch's."""
    if a.se is None or b.se is None or a.df is None or b.df is None:
        return Difference(a, b, confidence, None, None)
    va, vb = a.se * a.se, b.se * b.se
    se = math.sqrt(va + vb)
    if a.pooled and b.pooled and a.df == b.df:
        df = a.df
    elif va + vb == 0:
        df = min(a.df, b.df)
    else:
        df = (va + vb) ** 2 / (
            (va * va / a.df if a.df else 0.0) + (vb * vb / b.df if b.df else 0.0) or 1e-300
        )
    return Difference(a, b, confidence, se, max(df, 1.0))
