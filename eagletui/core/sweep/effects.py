"""What helped: the main effect of each factor of a sweep and the judgement of its best variant (pure).

The effects functions take plain numbers (tok/s mean, stdev and count per variant) so they can be
tested with hand-made results; the first variant is the baseline every Δ % is measured against.
The ``[sweep]`` table they come from is :mod:`eagletui.core.profile.sweep`. No I/O, no UI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from eagletui.core.stats.noise import NOISE_SIGMAS, SUGGEST_REPEATS, band, outside

# ------------------------------------------------------------------------------------- effects


@dataclass(frozen=True)
class Measured:
    """A variant's result as the effects need it: tok/s mean over its repeats, their stdev and count."""

    name: str
    settings: dict[str, Any]
    tok_s: float | None  # None: no result (failed, skipped, pending)
    stdev: float | None = None
    n: int = 1


def delta_pct(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base <= 0 or not math.isfinite(value):
        return None
    return (value - base) / base * 100.0


def sem_pct(m: Measured) -> float | None:
    """Standard error of the mean as a % of the mean (None without repeats to tell)."""
    if m.tok_s is None or m.tok_s <= 0 or m.stdev is None or m.n < 2:
        return None
    return m.stdev / math.sqrt(m.n) / m.tok_s * 100.0


def ranked(results: list[Measured]) -> list[Measured]:
    """Measured variants, fastest first (variants without a result are left out)."""
    return sorted((m for m in results if m.tok_s is not None), key=lambda m: -(m.tok_s or 0.0))


def best(results: list[Measured]) -> Measured | None:
    r = ranked(results)
    return r[0] if r else None


@dataclass(frozen=True)
class Effect:
    """Changing ``factor`` from ``ref`` to ``level`` moved tok/s by ``delta_pct`` on average over
    ``pairs`` pairs of variants that differ in that factor only; ``noise_pct`` is the standard error
    of that mean from the repeats' stdev (None when there were no repeats)."""

    factor: str
    ref: Any
    level: Any
    delta_pct: float
    noise_pct: float | None
    pairs: int

    @property
    def band_pct(self) -> float | None:
        """The noise band the rule uses: :data:`~eagletui.core.stats.noise.NOISE_SIGMAS` × the effect's error."""
        return None if self.noise_pct is None else NOISE_SIGMAS * self.noise_pct

    @property
    def clear(self) -> bool | None:
        """True when the effect is outside its noise band; None when the noise is unknown."""
        band = self.band_pct
        if band is None:
            return None
        return abs(self.delta_pct) > band

    def band_text(self) -> str:
        """What is printed beside the effect: the band the rule used and what it says."""
        band = self.band_pct
        if band is None:
            return f"1 run per variant, no noise estimate: {SUGGEST_REPEATS}"
        return f"noise band ±{band:.1f} % ({NOISE_SIGMAS:g}σ): " + (
            "outside" if self.clear else "within noise"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "factor": self.factor,
            "from": self.ref,
            "to": self.level,
            "delta_pct": round(self.delta_pct, 3),
            "noise_pct": None if self.noise_pct is None else round(self.noise_pct, 3),
            "band_pct": None if self.band_pct is None else round(self.band_pct, 3),
            "band": self.band_text(),
            "pairs": self.pairs,
            "clear": self.clear,
        }


def main_effects(results: list[Measured], factors: list[str] | tuple[str, ...]) -> list[Effect]:
    """Each factor's main effect in a factorial sweep, per non-reference level.

    For every pair of measured variants equal in all other factors, the pair's Δ % (level vs the
    factor's reference level, the first value listed) is taken; the effect is their mean. Its noise
    band combines the pairs' standard errors: sqrt(Σ (se_a² + se_b²)) / pairs."""
    out: list[Effect] = []
    for f in factors:
        levels: list[Any] = []
        for m in results:
            v = m.settings.get(f)
            if v not in levels:
                levels.append(v)
        if len(levels) < 2:
            continue
        ref = levels[0]
        for level in levels[1:]:
            deltas: list[float] = []
            var_sum = 0.0
            noise_known = True
            for a in results:
                if a.settings.get(f) != ref or a.tok_s is None:
                    continue
                rest = {k: v for k, v in a.settings.items() if k != f}
                for b in results:
                    if b.settings.get(f) != level or b.tok_s is None:
                        continue
                    if {k: v for k, v in b.settings.items() if k != f} != rest:
                        continue
                    d = delta_pct(b.tok_s, a.tok_s)
                    if d is None:
                        continue
                    deltas.append(d)
                    sa, sb = sem_pct(a), sem_pct(b)
                    if sa is None or sb is None:
                        noise_known = False
                    else:
                        var_sum += sa * sa + sb * sb
            if deltas:
                noise = math.sqrt(var_sum) / len(deltas) if noise_known else None
                out.append(Effect(f, ref, level, sum(deltas) / len(deltas), noise, len(deltas)))
    return out


def judge(
    tok_s: float | None,
    accept: float | None,
    ttft_ms: float | None,
    base_tok_s: float | None,
    verdict: Any,
    *,
    is_spec: bool,
    stdev: float | None = None,
    n: int = 1,
    base_stdev: float | None = None,
    base_n: int = 1,
) -> tuple[str, list[str]]:
    """``pass`` / ``fail`` / ``unknown`` and why, from the profile's ``[verdict]`` thresholds.

    ``min_accept_len`` applies to speculative variants only; ``min_speedup`` is vs the baseline
    variant (the baseline itself is not judged on it), with the one noise rule of
    :mod:`eagletui.core.stats.noise` (``stdev``/``n`` of this variant's repeats, ``base_*`` the baseline's):
    a shortfall inside the band is not a fail, and the band is printed."""
    if tok_s is None or tok_s <= 0:
        return "fail", ["no tokens measured"]
    reasons: list[str] = []
    v = verdict
    if getattr(v, "min_tok_s", None) is not None and tok_s < v.min_tok_s:
        reasons.append(f"{tok_s:.1f} tok/s < {v.min_tok_s:g}")
    if is_spec and getattr(v, "min_accept_len", None) is not None:
        if accept is None:
            reasons.append("no accept length reported")
        elif accept < v.min_accept_len:
            reasons.append(f"accept {accept:.2f} < {v.min_accept_len:g}")
    if getattr(v, "max_ttft_ms", None) is not None and ttft_ms is not None and ttft_ms > v.max_ttft_ms:
        reasons.append(f"TTFT {ttft_ms:.0f} ms > {v.max_ttft_ms:g}")
    if getattr(v, "min_speedup", None) is not None and base_tok_s:
        speedup = tok_s / base_tok_s
        need = base_tok_s * v.min_speedup
        b = band(stdev, n, None if base_stdev is None else base_stdev * v.min_speedup, base_n, base=need)
        if speedup < v.min_speedup - 1e-9 and outside(tok_s - need, b):
            reasons.append(
                f"speedup {speedup:.2f}x < {v.min_speedup:g}x vs the baseline variant ({b.text()})"
            )
    return ("fail" if reasons else "pass"), reasons
