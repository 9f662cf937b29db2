"""Is speculation worth it here? The arithmetic of one spec run against its no-spec reference.

Per concurrency, never across: a stream at concurrency 1 and one at 8 run different batch sizes, and a
mean of the two is nobody's throughput. For one stream at concurrency ``c`` (tok/s per request =
the benchmark's output tok/s ÷ ``c``):

- plain decoding makes one token per step: ``step = 1 / tok_s_nospec``;
- a speculative cycle yields ``accept`` tokens: ``cycle = accept / tok_s_spec``;
- speedup = ``tok_s_spec / tok_s_nospec``; it pays when above 1.

What would pay comes from the cycle-time model (:mod:`eagletui.core.cycle.model`): the cycle is
``steps × draft + verify + accept × per_token``, so the **break-even accept length** solves
``accept × step = cycle(accept)`` (a better drafter also makes the cycle longer) and is compared with
the most the settings can accept per verify (``min(steps + 1, num_draft_tokens)``; with topk 1 that is
``--speculative-num-draft-tokens``): a break-even above it is **out of reach** at these settings and is
said so, never shown as a goal. The **verify that would pay** at today's accept length is the verify
time that solves the same equation. Neighbouring step counts are predicted from the measured
per-position acceptance and shown as predictions.

Pure arithmetic: no I/O, no clock. Every formula here is stated in docs/economics.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from eagletui.core.cycle.model import (
    BreakEven,
    CycleParts,
    Measurement,
    Prediction,
    SpecSettings,
    break_even,
    neighbours,
    predict,
)


@dataclass(frozen=True)
class Economics:
    speedup: float
    accept_len: float
    cycle_ms: float
    baseline_step_ms: float
    #: the accept length at which the cycle matches the no-spec step (None: none can)
    break_even_accept_len: float | None
    #: the cycle time that today's accept length needs
    needed_cycle_ms: float
    concurrency: int | None = None
    #: the most tokens one verify can accept at these settings (None: the settings are unknown)
    max_accept: int | None = None
    parts: CycleParts | None = None
    #: the verify time that would make today's accept length pay (None: none would, or no parts)
    needed_verify_ms: float | None = None
    #: the model's predictions for the neighbouring step counts (each one a prediction)
    predictions: tuple[Prediction, ...] = field(default=())
    settings: SpecSettings | None = None
    #: the call on the measurements (:mod:`eagletui.core.runs.call`: ``pays``, ``within noise``, ``costs``,
    #: ``disputed``); None: not judged against a noise band (then ``pays`` is the bare ``speedup > 1``)
    call: str | None = None
    #: the half-width of the speedup's noise band, in % (None: not known)
    band_pct: float | None = None

    @property
    def pays(self) -> bool:
        """Speculation pays here: beyond the noise (and confirmed by the steady-state decode) once called."""
        if self.call is not None:
            return self.call == "pays"
        return self.speedup > 1.0

    @property
    def reachable(self) -> bool | None:
        """Can the drafter reach the break-even at these settings? None when the settings are unknown."""
        if self.break_even_accept_len is None:
            return False
        if self.max_accept is None:
            return None
        return self.break_even_accept_len <= self.max_accept

    @property
    def best_prediction(self) -> Prediction | None:
        """The predicted fastest neighbouring setting other than the measured one."""
        others = [
            p for p in self.predictions if self.settings is None or p.settings.steps != self.settings.steps
        ]
        return max(others, key=lambda p: p.tok_s) if others else None

    def to_json(self) -> dict[str, Any]:
        def r(x: float | None, d: int) -> float | None:
            return None if x is None else round(x, d)

        return {
            "speedup": round(self.speedup, 4),
            "pays": self.pays,
            "accept_len": round(self.accept_len, 4),
            "cycle_ms": round(self.cycle_ms, 3),
            "baseline_step_ms": round(self.baseline_step_ms, 3),
            "break_even_accept_len": r(self.break_even_accept_len, 3),
            "max_accept": self.max_accept,
            "break_even_reachable": self.reachable,
            "needed_cycle_ms": round(self.needed_cycle_ms, 3),
            "needed_verify_ms": r(self.needed_verify_ms, 3),
            "cycle_parts": self.parts.to_json() if self.parts is not None else None,
            "predictions": [p.to_json() for p in self.predictions],
            "concurrency": self.concurrency,
            "call": self.call,
            "band_pct": r(self.band_pct, 2),
        }

    def sentence(self, name: str = "EAGLE-3", context: str = "") -> str:
        """A few short sentences for the screen: the verdict, then one fact each (the accept length against
        its break-even, the most a verify can accept, what else would pay). ``context`` follows the
        percentage (`` vs no-spec #3 at concurrency 8``). Plain sentences, no nested brackets: issue 33
        item 19 found "(accept 4.00 ≥ break-even 2.26; at most 4 per verify at these settings)" hard to read."""
        pct = (self.speedup - 1.0) * 100.0
        band = f" ± {self.band_pct:.0f} %" if self.band_pct is not None else ""
        head = f"{name} {pct:+.0f} %{band}{context}"
        most = f"At most {self.max_accept} tokens per verify at these settings." if self.max_accept else ""
        be = self.break_even_accept_len
        against = f" against a break-even of {be:.2f}" if be is not None else ""
        if self.call in ("within noise", "disputed"):
            what = "within noise" if self.call == "within noise" else "not called"
            return f"{head}: {what}. Accept {self.accept_len:.2f}{against}."
        if self.pays:
            return _sentences(f"{head}: pays.", f"Accept {self.accept_len:.2f}{against}.", most)
        if be is None:
            per = self.parts.per_token_ms if self.parts is not None else 0.0
            parts = [
                f"{head}: no accept length pays at this cost.",
                f"Each accepted token costs {per:.1f} ms.",
                f"A no-spec step costs {self.baseline_step_ms:.1f} ms.",
            ]
        elif self.reachable is False:
            parts = [f"{head}: the break-even accept {be:.2f} is out of reach.", most, f"It accepts {self.accept_len:.2f}."]
        else:
            parts = [f"{head}: needs accept ≥ {be:.2f}.", f"It accepts {self.accept_len:.2f}.", most]
        parts.extend(self._what_else_pays())
        return _sentences(*parts)

    def _what_else_pays(self) -> list[str]:
        """The sentences after a verdict that does not pay: the verify (or cycle) time that would."""
        if self.parts is None:
            return [
                f"A cycle ≤ {self.needed_cycle_ms:.1f} ms would pay.",
                f"The cycle takes {self.cycle_ms:.1f} ms.",
            ]
        est = "estimated " if self.parts.source.startswith("estimate") else ""
        if self.needed_verify_ms is not None:
            out = [
                f"A verify ≤ {self.needed_verify_ms:.1f} ms would pay.",
                f"The {est}verify takes {self.parts.verify_ms:.1f} ms.",
            ]
        else:
            out = ["No verify time would pay at this accept length."]
        # what to launch instead is the one ranking's (next_launch): naming a setting here made two
        # recommendations that contradicted each other (issue 32, item 3)
        best = self.best_prediction
        if best is not None and best.speedup is not None and best.speedup > 1.0:
            out.append("See next launch.")
        return out


def _sentences(*parts: str) -> str:
    """The non-empty sentences, one space apart."""
    return " ".join(p for p in parts if p)


def as_sentence(text: str) -> str:
    """``text`` as a sentence of its own: first letter up, a full stop at the end ("" stays "")."""
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "…")) else text + "."


def _ok(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def economics(
    spec_tok_s: float | None,
    accept_len: float | None,
    base_tok_s: float | None,
    *,
    concurrency: int | None = None,
    settings: SpecSettings | None = None,
    rates: tuple[float, ...] = (),
    other: tuple[float, float] | None = None,
    profile: dict[str, Any] | None = None,
) -> Economics | None:
    """The economics of a spec run vs its no-spec reference, both as per-request tok/s at one
    concurrency; None when not computable (no accept length, a zero or missing throughput).

    ``settings`` (the spec run's steps/topk/draft tokens) bound the break-even and let the cycle model
    (:func:`eagletui.core.cycle.model.fit_parts`) predict neighbours; ``rates`` is the measured per-position
    acceptance, ``other`` (cycle ms, accept) of the same settings with another drafter, ``profile`` a
    step profile's split of the cycle."""
    from eagletui.core.cycle.fit import fit_parts
    from eagletui.core.cycle.model import rates_from_mean

    if not (_ok(spec_tok_s) and _ok(accept_len) and _ok(base_tok_s)):
        return None
    assert spec_tok_s is not None and accept_len is not None and base_tok_s is not None
    t_b = 1000.0 / base_tok_s
    t_c = 1000.0 * accept_len / spec_tok_s
    max_accept = settings.max_accept if settings is not None else None
    parts: CycleParts | None = None
    be: BreakEven | None = None
    preds: tuple[Prediction, ...] = ()
    if settings is not None:
        parts = fit_parts(settings, t_c, accept_len, t_b, other=other, profile=profile)
    if parts is not None and settings is not None:
        be = break_even(parts, settings, t_b, accept_len)
        m = Measurement(
            settings, rates or rates_from_mean(accept_len, settings.depth), parts, t_b, concurrency or 1
        )
        preds = tuple(predict(m, s) for s in neighbours(settings))
    return Economics(
        speedup=spec_tok_s / base_tok_s,
        accept_len=accept_len,
        cycle_ms=t_c,
        baseline_step_ms=t_b,
        break_even_accept_len=be.accept if be is not None else t_c / t_b,
        needed_cycle_ms=accept_len * t_b,
        concurrency=concurrency,
        max_accept=max_accept,
        parts=parts,
        needed_verify_ms=be.needed_verify_ms if be is not None else None,
        predictions=preds,
        settings=settings,
    )


def per_request(tok_s: float | None, concurrency: int | None) -> float | None:
    """A benchmark's output tok/s for one stream: total / concurrency (1 when unknown or unbounded)."""
    if tok_s is None:
        return None
    c = concurrency if concurrency and concurrency > 0 else 1
    return tok_s / c


def crossover(points: list[tuple[int, Economics]]) -> int | None:
    """The lowest concurrency at which speculation stops paying, given (concurrency, economics) pairs;
    None when it pays everywhere measured (or nowhere is known)."""
    for conc, econ in sorted(points, key=lambda p: p[0]):
        if not econ.pays:
            return conc
    return None


def _listed(concs: list[int]) -> str:
    return ", ".join(map(str, concs[:-1])) + (" and " if len(concs) > 1 else "") + str(concs[-1])


def crossover_text(points: list[tuple[int, Economics]], left_out: tuple[str, ...] = ()) -> str:
    """Across the concurrencies that can be judged: ``pays at every concurrency measured, 1–8`` / ``pays
    at no concurrency measured, 1–8`` / ``stops paying at concurrency 8`` / ``starts paying at
    concurrency 8``, or each call by its concurrencies where the calls are mixed (``within noise at 1
    and 4``); "" with one point. ``left_out``: the points that cannot be judged, each with why
    (``16: both decoded eagerly …``), said after in a sentence of their own."""
    ordered = sorted(points, key=lambda p: p[0])
    out = ""
    if len(ordered) >= 2:
        lo, hi = ordered[0][0], ordered[-1][0]
        pays = [e.pays for _, e in ordered]
        calls = [e.call or ("pays" if e.pays else "costs") for _, e in ordered]
        if all(pays):
            out = f"pays at every concurrency measured, {lo}–{hi}"
        elif all(c == "costs" for c in calls):
            out = f"pays at no concurrency measured, {lo}–{hi}"
        elif set(calls) == {"pays", "costs"} and pays == sorted(pays, reverse=True):
            out = f"stops paying at concurrency {crossover(ordered)}"
        elif set(calls) == {"pays", "costs"} and pays == sorted(pays):
            out = f"starts paying at concurrency {next(c for c, e in ordered if e.pays)}"
        else:
            by: dict[str, list[int]] = {}
            for (c, _), k in zip(ordered, calls, strict=True):
                by.setdefault(k, []).append(c)
            out = "; ".join(f"{k} at {_listed(cs)}" for k, cs in by.items())
            if not any(pays):
                out = f"pays at no concurrency measured, {lo}–{hi}: {out}"
    if left_out:
        out += (". Not" if out else "not") + " judged at " + "; at ".join(left_out)
    return out
