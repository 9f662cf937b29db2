"""``tune``'s choice of the next launch: expected improvement over what was measured, stop when nothing
left can beat the best by more than the noise.

Every configuration of the space not yet launched gets an estimate of the objective with a band
(:class:`Guess`), built from a launched one (its *anchor*) as ratios:

* the **speculative** change (another step count, speculation off) is the cycle model's: the anchor's
  forecast from the one ranking (:func:`~eagletui.core.predict.ranking.ranked`, its band widened by this
  host's track record of missed predictions: a miss lowers the confidence in the next of its kind);
* every **other factor** that differs (NCCL_ALGO, fusion, a memory fraction …) the model cannot predict:
  its effect is the geometric mean over launched pairs that differ in that factor alone, its band
  their spread and the noise; without such a pair, the exploration prior (``prior_pct`` either side),
  so an unmeasured factor is worth one launch and a measured one only what its pairs allow.

Where several launches predict a configuration without a prior, their predictions are pooled (see
:func:`guess`); otherwise the anchor whose band is narrowest wins. The next launch is the configuration with the largest
expected improvement over the bar: the best launched value lifted by its noise at the declared
confidence (:func:`~eagletui.core.predict.ranking.launch_bar`, the one ``n`` reads). What the cycle
model and measured effects predict is worth what the prediction beats the bar by, and nothing where it
does not: a model band that merely reaches past the bar is no reason to launch (with bands of ±15 %
every neighbour reaches past it, and a loaded host's noise widened them further: 6 launches of 12 on
the simulated H200). A prior (a factor never measured, a step count the model cannot predict) is
explored where it is all that changes from the anchor: its band, read as uniform, is worth its expected
improvement over the bar; stacked on a predicted change it is not (a launch of both could not say which
moved it). When nothing is worth a launch the search stops: no candidate can beat the
best by more than the noise. Pure: numbers in, a choice out (the session feeds it,
:mod:`eagletui.session.sweep.tuner`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist

from eagletui.core.predict.ranking import launch_bar
from eagletui.core.stats.confidence import Estimate, compare, estimate, pooled_noise

#: The relative band assumed for one launch while no launch has been repeated (the noise rule's 5 %).
ASSUMED_NOISE = 0.05


@dataclass(frozen=True)
class Point:
    """One configuration of the space: ``spec`` is its speculative setting as the ranking labels it
    ("steps 3", "speculation off"), ``others`` the values of its other factors."""

    index: int
    name: str
    spec: str
    others: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Ratio:
    """A predicted ratio to an anchor's value, with its band (``lo`` ≤ ``mid`` ≤ ``hi``) and where it
    comes from."""

    mid: float
    lo: float
    hi: float
    source: str = ""
    #: the band is a prior (nothing measured or modelled says where in it the value lies): worth exploring
    prior: bool = False


@dataclass(frozen=True)
class Guess:
    """An unlaunched configuration's estimate of the objective: value, band, the launch it rests on and
    how; ``gain`` its expected improvement over the bar (0: cannot beat the best beyond the noise)."""

    index: int
    value: float
    low: float
    high: float
    anchor: int
    why: str
    gain: float = 0.0
    #: the band a launch explores: the priors' where nothing but priors changes from the anchor;
    #: ``value`` itself otherwise (a prediction is worth what it beats the bar by)
    explore_low: float = 0.0
    explore_high: float = 0.0
    #: some part is a prior (explored or stacked on a prediction)
    priors: bool = False

    @property
    def explores(self) -> bool:
        return self.explore_low < self.explore_high

    def band_pct(self) -> tuple[float, float]:
        return (self.low / self.value - 1) * 100.0, (self.high / self.value - 1) * 100.0


@dataclass(frozen=True)
class Choice:
    """The next configuration to launch (None: stop) and why, over every guess made."""

    next: int | None
    why: str
    best: int | None
    bar: float | None
    guesses: tuple[Guess, ...] = field(default_factory=tuple)


def objective_estimates(samples: Mapping[int, Sequence[Sequence[float]]]) -> dict[int, Estimate]:
    """Each launched configuration's objective (the geometric mean over its concurrencies of the mean
    there; ``samples[i][c]`` the runs at concurrency ``c``) with its error from the noise pooled over
    every launch: run-to-run noise is a property of the host, not of one configuration."""
    noise = pooled_noise(s for runs in samples.values() for s in runs)
    out: dict[int, Estimate] = {}
    for i, runs in samples.items():
        means = [sum(r) / len(r) for r in runs if r]
        if not means or len(means) != len(runs) or min(means) <= 0:
            continue
        geo = math.exp(sum(math.log(m) for m in means) / len(means))
        n = sum(len(r) for r in runs)
        # without a repeat anywhere the noise is unknown, never zero (n copies of one mean have no spread)
        e = estimate([geo] * n, noise) if noise is not None else Estimate(geo, n, None, None)
        if e is not None:
            out[i] = e
    return out


def noise_of(e: Estimate, confidence: float) -> float:
    """How far a launched value may be off, relative, at ``confidence`` (:data:`ASSUMED_NOISE` unknown):
    its standard error times the normal quantile. The bar a launch must clear is a threshold, not a test
    of a difference: the t quantile of a first launch's two degrees of freedom (2.9 standard errors at
    90 %) lifted it past every gain the model predicted, and the loaded simulated H200 stopped after its
    first launch, steps 5 (+9 % predicted, +9 % measured by the sweep) never tried."""
    if e.se is None or e.mean <= 0:
        return ASSUMED_NOISE
    return NormalDist().inv_cdf(0.5 + confidence / 2.0) * e.se / e.mean


def factor_effect(
    points: Sequence[Point], measured: Mapping[int, Estimate], key: str, a: str, b: str, confidence: float
) -> Ratio | None:
    """What changing factor ``key`` from ``a`` to ``b`` does, from launched pairs that differ in it
    alone (None: no such pair). The band: the pairs' spread, never narrower than their noise."""
    by_rest: dict[tuple[object, ...], dict[str, int]] = {}
    for p in points:
        if p.index not in measured:
            continue
        rest = (p.spec, tuple(kv for kv in p.others if kv[0] != key))
        value = dict(p.others).get(key)
        if value is not None:
            by_rest.setdefault(rest, {})[value] = p.index
    logs, widths = [], []
    for pair in by_rest.values():
        if a in pair and b in pair:
            ea, eb = measured[pair[a]], measured[pair[b]]
            logs.append(math.log(eb.mean / ea.mean))
            d = compare(eb, ea, confidence)
            widths.append((d.half_pct or ASSUMED_NOISE * 100 * math.sqrt(2)) / 100.0)
    if not logs:
        return None
    mid = math.exp(sum(logs) / len(logs))
    half = max(max(widths) / math.sqrt(len(logs)), (max(logs) - min(logs)) / 2)
    n = len(logs)
    return Ratio(
        mid,
        mid * (1 - half),
        mid * (1 + half),
        f"{key.partition(':')[2]} {a}→{b}: {n} pair{'s' if n != 1 else ''}",
    )


def guess(
    point: Point,
    points: Sequence[Point],
    measured: Mapping[int, Estimate],
    forecasts: Mapping[int, Mapping[str, Ratio]],
    prior: float,
    confidence: float,
) -> Guess | None:
    """The estimate of an unlaunched ``point`` (see the module doc). Where launches predict it without
    a prior, every one of them counts: the value is their predictions' mean weighted by the inverse
    square of each band's width, the band the narrowest one's (their errors are the one model's, so
    agreeing anchors do not narrow it). One anchor's forecast is made when it is launched and kept: a
    later launch nearer the point, or one that found the model off, must move the estimate too (on the
    simulated H200 steps 4 was launched on steps 3's forecast after steps 5 measured 8 % under its own).
    Without such launches, the guesses with priors are pooled alike."""
    # an anchor that predicts the speculative change beats one that can only guess it
    predicts = [
        a
        for a in points
        if a.index in measured and (a.spec == point.spec or point.spec in forecasts.get(a.index, {}))
    ]
    made = [
        _from_anchor(point, a, points, measured, forecasts, prior, confidence)
        for a in predicts or [a for a in points if a.index in measured]
    ]
    if not made:
        return None
    pool = [g for g in made if not g.priors] or made
    narrowest = min(pool, key=_width)
    if len(pool) < 2:
        return narrowest
    weights = [1.0 / max(_width(g), 1e-6) ** 2 for g in pool]
    mid = math.exp(sum(w * math.log(g.value) for w, g in zip(weights, pool, strict=True)) / sum(weights))
    k = mid / narrowest.value
    n = len(pool) - 1
    why = f"{narrowest.why}; with the predictions of {n} other launch{'es' if n > 1 else ''}"
    return replace(
        narrowest,
        value=mid,
        low=narrowest.low * k,
        high=narrowest.high * k,
        why=why,
        explore_low=narrowest.explore_low * k,
        explore_high=narrowest.explore_high * k,
    )


def _width(g: Guess) -> float:
    """A guess's band as a log-width (relative, symmetric in up and down)."""
    return math.log(g.high / g.low) if g.low > 0 else math.inf


def _prior(half: float, what: str) -> Ratio:
    """No effect expected, ± ``half`` either side: what nothing measured or modelled can say."""
    return Ratio(1.0, 1 - half, 1 + half, f"{what}, prior ±{half * 100:.0f} %", prior=True)


def _from_anchor(
    point: Point,
    anchor: Point,
    points: Sequence[Point],
    measured: Mapping[int, Estimate],
    forecasts: Mapping[int, Mapping[str, Ratio]],
    prior: float,
    confidence: float,
) -> Guess:
    """``point`` estimated from one launched ``anchor`` as ratios."""
    e = measured[anchor.index]
    parts: list[Ratio] = []
    if anchor.spec != point.spec:
        r = forecasts.get(anchor.index, {}).get(point.spec)
        if r is None:
            r = _prior(2 * prior, f"{point.spec}: no prediction")
        parts.append(r)
    mine = dict(point.others)
    for key, value in anchor.others:
        if mine.get(key) == value:
            continue
        r = factor_effect(points, measured, key, value, mine.get(key, ""), confidence)
        if r is None:
            name = key.partition(":")[2] or key
            r = _prior(prior, f"{name} {value}→{mine.get(key)}: not measured")
        parts.append(r)
    mid = e.mean * math.prod(r.mid for r in parts)
    lo = e.mean * math.prod(r.lo for r in parts)
    hi = e.mean * math.prod(r.hi for r in parts)
    why = "; ".join(r.source for r in parts) or "the same configuration"
    # a launch explores a prior's band only where the prior is all that changes: stacked on a
    # predicted change, its measurement could not say which of the two moved it (and the
    # prediction is checked by a launch of its own first)
    alone = bool(parts) and all(r.prior for r in parts)
    e_lo = lo if alone else mid
    e_hi = hi if alone else mid
    g = Guess(
        point.index,
        mid,
        min(lo, mid),
        max(hi, mid),
        anchor.index,
        f"from {anchor.name}: {why}",
        0.0,
        min(e_lo, mid),
        max(e_hi, mid),
        any(r.prior for r in parts),
    )
    return g


def expected_gain(low: float, value: float, high: float, bar: float) -> float:
    """E[max(0, X − bar)] for X uniform on [low, high] where the band straddles the bar; wholly above
    it, the predicted ``value`` − bar (a band widened by a prior is no reason to prefer a setting that
    the model predicts no better)."""
    if high <= bar:
        return 0.0
    if low >= bar or high <= low:
        return value - bar
    return (high - bar) ** 2 / (2 * (high - low))


def choose(
    points: Sequence[Point],
    measured: Mapping[int, Estimate],
    forecasts: Mapping[int, Mapping[str, Ratio]],
    *,
    tried: set[int],
    prior: float,
    confidence: float,
) -> Choice:
    """The next launch: the start (index 0) first, then the largest expected improvement over the best
    launched value lifted by its noise (see the module doc: a prior's band is explored, a prediction
    must beat the bar itself); None when no untried configuration has any."""
    if not measured:
        first = next((p.index for p in points if p.index not in tried), None)
        return Choice(first, "the start: the first value of every factor", None, None)
    best = max(measured, key=lambda i: measured[i].mean)
    bar = launch_bar(measured[best].mean, noise_of(measured[best], confidence))
    guesses = []
    for p in points:
        if p.index in tried:
            continue
        g = guess(p, points, measured, forecasts, prior, confidence)
        if g is not None:
            guesses.append(replace(g, gain=expected_gain(g.explore_low, g.value, g.explore_high, bar)))
    # at an equal gain, the launch that tests one thing (a prediction, then a prior) before one that
    # stacks a prior on a prediction: its measurement checks the model or measures the factor
    guesses.sort(key=lambda g: (-g.gain, g.priors and not g.explores, g.explores, -g.value))
    if not guesses or guesses[0].gain <= 0:
        return Choice(
            None,
            f"no configuration left can beat the best beyond its noise ({confidence * 100:g} % band)",
            best,
            bar,
            tuple(guesses),
        )
    g = guesses[0]
    lo, hi = g.band_pct()
    return Choice(
        g.index,
        f"the largest expected gain: predicted {g.value:.1f} ({lo:+.0f} … {hi:+.0f} %) {g.why}",
        best,
        bar,
        tuple(guesses),
    )


def margin(measured: Mapping[int, Estimate], confidence: float) -> tuple[int, int, str, float | None] | None:
    """(best, runner-up, the difference said, how sure the best is the best) over launched values."""
    ranked = sorted(measured, key=lambda i: -measured[i].mean)
    if len(ranked) < 2:
        return None
    d = compare(measured[ranked[0]], measured[ranked[1]], confidence)
    return ranked[0], ranked[1], d.text(), d.sure
