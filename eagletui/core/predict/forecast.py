"""Candidate settings and their predictions at every concurrency a spec run measured (:class:`Forecast`),
each with the band the cycle model's alternatives leave open.

The raw forecasts: :mod:`eagletui.core.predict.checks` holds them against later launches and
:mod:`eagletui.core.predict.ranking` adds this host's track record to the bands and decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from eagletui.core.cycle.model import SpecSettings, neighbours, predict
from eagletui.core.predict.bases import Basis, _label, _reference, bases
from eagletui.core.runs.book import RunBook
from eagletui.core.servers.spec import captured_max_bs
from eagletui.core.stats.noise import ASSUMED_NOISE

#: Predictions within this share of the measured run are not worth a launch.
WORTH = 0.03
#: How far one launch's tok/s lies from the mean over launches of its setting (relative standard
#: deviation), before this host has any check of its own: 0.12 on the lent H200 (SGLang 0.5.17, twelve
#: settings launched twice in one grid, 32 × 256 requests: their launches 2-37 % apart).
LAUNCH_SD = 0.12
#: The prior's width in standard deviations: four predictions in five inside it.
LAUNCH_Z = 1.28
#: The half-width a prediction's shown band gets from launch-to-launch noise until checks exist: the
#: base is one launch and what checks it another, each off its setting's mean by ``LAUNCH_SD``.
LAUNCH_PRIOR = LAUNCH_Z * LAUNCH_SD * math.sqrt(2.0)
#: How the prior reads in a band's source.
PRIOR_TEXT = f"launches of one setting ±{LAUNCH_PRIOR * 100:.0f} % apart until this host has checks"


@dataclass(frozen=True)
class Forecast:
    """One candidate setting at one concurrency: predicted aggregate tok/s (a measurement where
    ``measured`` is set: the no-spec reference's own number), and the band it may lie in (``low`` …
    ``high``, aggregate tok/s; ``band`` says where it comes from: the track record of this host's
    checks, else the model's own alternatives)."""

    label: str
    settings: SpecSettings | None  # None: speculation off
    concurrency: int
    tok_s: float
    base_tok_s: float  # what the spec run measured at this concurrency
    accept: float | None
    source: str
    measured: bool = False
    low: float | None = None
    high: float | None = None
    band: str = ""
    #: the concurrency runs above the launch's largest CUDA-graph batch: decoded eagerly
    eager: bool = False
    #: the relative uncertainty of the base's mean, which the predicted tok/s inherits (shown in the
    #: band; a decision compares against the same base, so there it cancels)
    noise: float = 0.0
    #: how far a launch may land off its setting's mean, relative: :data:`LAUNCH_PRIOR` until this host's
    #: checks of this kind of prediction measure it (then 0: the track record holds it)
    launch_noise: float = 0.0
    #: what ``tok_s``, the band and ``base_tok_s`` are in: the book's objective (``tok/s``, ``tok/s per
    #: user``, ``goodput tok/s``: :func:`eagletui.core.predict.ranking.ranked` converts them)
    unit: str = "tok/s"
    #: predicted from a step profile whose cycle is CPU-bound (its parts' :attr:`CycleParts.cpu_bound`):
    #: a step change moves CPU work that no profile shows, so launching it is the way to know
    cpu_bound: bool = False

    @property
    def delta_pct(self) -> float:
        return (self.tok_s / self.base_tok_s - 1.0) * 100.0 if self.base_tok_s > 0 else 0.0

    @property
    def floor(self) -> float:
        """The low edge of the decision's band (model and track record; the prediction itself without)."""
        return self.tok_s if self.low is None else min(self.low, self.tok_s)

    @property
    def ceiling(self) -> float:
        return self.tok_s if self.high is None else max(self.high, self.tok_s)

    def shown(self) -> tuple[float, float]:
        """The band of what a launch of this setting may measure: the decision's band widened by the
        base's own uncertainty and, before any check on this host, by how far launches of one setting
        land apart: each edge's distance from the prediction and those noises are independent, so they add
        in quadrature (added end to end, the model's alternatives and the launch prior together made the
        lent H200's bands twice as wide as its misses needed)."""
        if self.tok_s <= 0:
            return self.floor, self.ceiling
        n = math.hypot(self.noise, self.launch_noise)
        down = math.hypot(1 - self.floor / self.tok_s, n)
        up = math.hypot(self.ceiling / self.tok_s - 1, n)
        return self.tok_s * max(0.0, 1 - down), self.tok_s * (1 + up)

    def band_text(self) -> str:
        """``-15 … +7 %, 4 checks on this host``; "" without a band."""
        if self.low is None or self.high is None or self.base_tok_s <= 0 or self.tok_s <= 0:
            return ""
        lo, hi = self.shown()
        return f"{(lo / self.tok_s - 1) * 100:+.0f} … {(hi / self.tok_s - 1) * 100:+.0f} %" + (
            f", {self.band}" if self.band else ""
        )

    def flags(self) -> dict[str, Any]:
        """The launch flags that make this setting (``None``: remove the flag)."""
        if self.settings is None:
            return {"--speculative-algorithm": None}
        out: dict[str, Any] = {"--speculative-num-steps": self.settings.steps}
        out["--speculative-eagle-topk"] = self.settings.topk
        out["--speculative-num-draft-tokens"] = self.settings.tokens
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "setting": self.label,
            "flags": self.flags(),
            "concurrency": self.concurrency,
            "tok_s": round(self.tok_s, 2),
            "delta_pct": round(self.delta_pct, 2),
            "accept_len": None if self.accept is None else round(self.accept, 3),
            "source": self.source,
            "measured": self.measured,
            "unit": self.unit,
        }
        if self.low is not None and self.high is not None:
            lo, hi = self.shown()
            out["tok_s_band"] = [round(lo, 2), round(hi, 2)]
            out["band_from"] = self.band
        if self.eager:
            out["eager"] = True
        return out


def _base_noise(b: Any) -> tuple[float, str]:
    """The relative uncertainty of the base's mean tok/s (two standard errors over its repeats), and how
    it reads. One benchmark says nothing of its own noise: the noise rule's assumed band stands in
    (:data:`~eagletui.core.stats.noise.ASSUMED_NOISE`, as a single run's comparison has it), said as
    assumed; a band without it claimed the base exact (the lent H200's launches of one setting spread
    3-37 %)."""
    m = b.group.metric("tok_s")
    if m.mean and m.stdev is not None and m.n >= 2:
        rel = 2.0 * m.stdev / (m.mean * math.sqrt(m.n))
        return rel, f"±{rel * 100:.0f} % from the base's {m.n} benchmarks"
    return ASSUMED_NOISE, f"one benchmark of the base: its noise assumed ±{ASSUMED_NOISE * 100:.0f} %"


def candidates(s: SpecSettings) -> list[SpecSettings]:
    """The settings around ``s`` worth predicting: its step neighbours, a chain for a tree."""
    out = [c for c in neighbours(s) if c.steps != s.steps]
    if s.topk > 1:
        out.append(SpecSettings(steps=s.steps, topk=1))
    return out


def forecasts(book: RunBook, launch: int) -> tuple[list[Forecast], str]:
    """Every candidate at every concurrency of the spec run, best first within each concurrency, each
    with the model's band; a concurrency above the largest CUDA-graph batch of the launch or of the
    no-spec run it is measured against is marked eager on every row (either side decoded eagerly there:
    neither the profile nor the cycles at graph batch sizes carry to it)."""
    bs, why = bases(book, launch)
    run = book.runs.get(launch)
    largest = captured_max_bs(run.args) if run is not None else None
    ref = _reference(book, run) if run is not None else None
    ref_largest = captured_max_bs(ref.args) if ref is not None else None
    out: list[Forecast] = []
    for b in bs:
        m, c = b.measurement, b.group.concurrency
        eager = (largest is not None and c > largest) or (
            b.nospec_tok_s is not None and ref_largest is not None and c > ref_largest
        )
        src = m.parts.source
        rows: list[Forecast] = []
        noise, noise_text = _base_noise(b)
        for s in candidates(m.settings):
            p = predict(m, s)
            tok = b.aggregate(p.tok_s)
            low = b.aggregate(p.tok_s_low) if p.tok_s_low is not None else tok
            high = b.aggregate(p.tok_s_high) if p.tok_s_high is not None else tok
            band = "; ".join(
                x for x in ("the model's alternatives" if p.tok_s_low is not None else "", noise_text) if x
            )
            band = f"{band}; {PRIOR_TEXT}"
            rows.append(
                Forecast(
                    _label(s),
                    s,
                    c,
                    tok,
                    b.tok_s,
                    p.accept,
                    src,
                    False,
                    low,
                    high,
                    band,
                    eager,
                    noise,
                    LAUNCH_PRIOR,
                    cpu_bound=m.parts.cpu_bound,
                )
            )
        if b.nospec_tok_s:
            rows.append(
                Forecast(
                    _label(None),
                    None,
                    c,
                    b.nospec_tok_s,
                    b.tok_s,
                    None,
                    "the no-spec run's measurement",
                    True,
                    eager=eager,
                )
            )
        else:
            off = _nospec_estimate(b, eager, noise, noise_text)
            if off is not None:
                rows.append(off)
        rows.sort(key=lambda f: -f.tok_s)
        out.extend(rows)
    return out, why


def _nospec_estimate(b: Basis, eager: bool, noise: float, noise_text: str) -> Forecast | None:
    """Speculation off where no no-spec run was measured: the no-spec step the cycle's parts estimate
    (a step profile's verify alone and its share of the cycle's CPU-bound gaps, with the band that share
    leaves open: :func:`eagletui.core.cycle.fit.nospec_from_cycle`; where the GPU bounds the cycle, the
    verify's share of it: :func:`~eagletui.core.cycle.fit.nospec_gpu_bound`), else the verify part."""
    step, fast, slow = b.measurement.parts.nospec_step()
    if step <= 0:
        return None
    tok = b.aggregate(1000.0 / step)
    if fast < slow:
        parts = b.measurement.parts
        if parts.gpu_bound:
            src = (
                f"estimate: a no-spec step ≈ the verify's share of the measured cycle, where the GPU bounds it: "
                f"{step:.2f} ms, from {fast:.2f} for its GEMMs and all-reduce alone to {slow:.2f}; only a no-spec "
                "launch can tell"
            )
        else:
            src = (
                f"estimate: a no-spec step ≈ the verify alone and a share of the cycle's CPU-bound gaps, "
                f"{step:.2f} ms, {fast:.2f}-{slow:.2f}; only a no-spec launch can tell"
            )
        low, high, band = b.aggregate(1000.0 / slow), b.aggregate(1000.0 / fast), "the model's alternatives"
        return Forecast(
            _label(None), None, b.group.concurrency, tok, b.tok_s, None, src, False, low, high,
            f"{band}; {noise_text}; {PRIOR_TEXT}", eager, noise, LAUNCH_PRIOR,
        )
    return Forecast(
        _label(None), None, b.group.concurrency, tok, b.tok_s, None, "estimate: a no-spec step ≈ the verify part",
        eager=eager,
    )
