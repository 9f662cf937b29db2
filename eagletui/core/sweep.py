"""Sweeps: the ``[sweep]`` table of a profile, the plan it expands to, and what helped (pure).

A tuning session is a search over toggles. A profile declares it either as a list of variants::

    [sweep]
    repeats = 2
    [[sweep.variants]]
    name = "no spec"
    set = { "speculative-algorithm" = "" }      # "" / false = unset

or as a matrix crossed in full (the first value of each factor is its reference level)::

    [sweep.matrix]
    "enable-flashinfer-allreduce-fusion" = [false, true]
    NCCL_ALGO = ["Ring", "Tree"]

A toggle is named like in the Tune panel: ``NCCL_ALGO`` / ``enable-x`` / ``--enable-x`` or the full
key ``env:NCCL_ALGO`` / ``arg:--enable-x``; it must be one of the profile's ``[[toggles]]``, and each
value goes through the same rules as a value staged by hand (:class:`~eagletui.core.staged.StagedConfig`),
so a sweep cannot launch what the Tune panel would refuse. Errors name ``file:line:col``.

The effects functions take plain numbers (tok/s mean, stdev and count per variant) so they can be
tested with hand-made results; the first variant is the baseline every Δ % is measured against.

No I/O, no UI.
"""

from __future__ import annotations

import difflib
import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagletui.core.noise import NOISE_SIGMAS, SUGGEST_REPEATS, band, outside
from eagletui.core.tomlpos import locate, locate_in_array

if TYPE_CHECKING:
    from eagletui.core.profile import Profile, Toggle

MAX_VARIANTS = 256
MAX_REPEATS = 100
_SWEEP_KEYS = {"repeats", "matrix", "variants", "targets"}
_VARIANT_KEYS = {"name", "set"}


@dataclass(frozen=True)
class Variant:
    """One point of the sweep: ``settings`` are toggle key → value (None = unset) over the profile."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SweepSpec:
    variants: tuple[Variant, ...]
    repeats: int = 1
    factors: tuple[str, ...] = ()  # toggle keys of a matrix sweep (empty for a list)
    targets: tuple[str, ...] = ()  # several hosts: each takes the next variant

    @property
    def factorial(self) -> bool:
        return bool(self.factors)


def _err(message: str, path: Any, where: tuple[int | None, int | None]) -> Exception:
    from eagletui.core.profile import ProfileError

    return ProfileError(message, path, *where)


def resolve_toggle(profile: Profile, name: str) -> Toggle | None:
    """The profile toggle a sweep names: ``NCCL_ALGO``, ``enable-x``, ``--enable-x`` or ``env:…``/``arg:…``."""
    if profile.toggle(name) is not None:
        return profile.toggle(name)
    bare = name.strip().lstrip("-").replace("_", "-")
    for t in profile.toggles:
        if t.name == name or t.name.lstrip("-") == bare or (t.kind == "env" and t.name == name):
            return t
    return None


def _toggle_names(profile: Profile) -> list[str]:
    return [t.name.lstrip("-") for t in profile.toggles]


def _check_value(profile: Profile, toggle: Toggle, value: Any) -> tuple[Any, str | None]:
    """Canonical value and the refusal (None if accepted) under the StagedConfig rules."""
    from eagletui.core.staged import StagedConfig

    if value is False and toggle.type != "bool":
        value = None
    try:
        canon = toggle.validate(value) if not (value is None or value is False) else value
    except ValueError as exc:
        return None, str(exc)
    why = StagedConfig(profile).stage(toggle, canon)
    return canon, why


def fmt_value(value: Any) -> str:
    """A toggle value as the Tune panel says it: unset / on / off / the value."""
    return _fmt(value)


def _fmt(value: Any) -> str:
    if value is None:
        return "unset"
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)


def variant_label(settings: dict[str, Any]) -> str:
    """``NCCL_ALGO=Tree enable-flashinfer-allreduce-fusion=on`` (the name of a matrix variant)."""
    parts = [f"{k.partition(':')[2].lstrip('-')}={_fmt(v)}" for k, v in settings.items()]
    return " ".join(parts) or "profile as is"


def parse_sweep(raw: Any, profile: Profile, text: str = "", path: Any = None) -> SweepSpec:
    """Validate ``[sweep]`` against ``profile``'s toggles; raise ProfileError with file:line:col."""
    if not isinstance(raw, dict):
        raise _err("sweep must be a table ([sweep])", path, locate(text, "sweep"))
    for key in raw:
        if key not in _SWEEP_KEYS:
            close = difflib.get_close_matches(str(key), sorted(_SWEEP_KEYS), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise _err(
                f"unknown key {key!r} in [sweep]{hint} (allowed: {', '.join(sorted(_SWEEP_KEYS))})",
                path,
                locate(text, key, "sweep"),
            )
    repeats = raw.get("repeats", 1)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise _err(
            f"sweep.repeats must be an integer from 1 to {MAX_REPEATS}, got {repeats!r}",
            path,
            locate(text, "repeats", "sweep"),
        )
    targets = raw.get("targets", [])
    if not isinstance(targets, list) or not all(isinstance(t, str) and t.strip() for t in targets):
        raise _err("sweep.targets must be a list of host names", path, locate(text, "targets", "sweep"))
    has_matrix, has_list = "matrix" in raw, "variants" in raw
    if has_matrix == has_list:
        raise _err(
            "[sweep] needs exactly one of [sweep.matrix] (toggles × values to cross) or [[sweep.variants]]",
            path,
            locate(text, "sweep"),
        )
    if has_matrix:
        variants, factors = _matrix(raw["matrix"], profile, text, path)
    else:
        variants, factors = _variant_list(raw["variants"], profile, text, path), []
    if len(variants) > MAX_VARIANTS:
        raise _err(
            f"the sweep has {len(variants)} variants; at most {MAX_VARIANTS}", path, locate(text, "sweep")
        )
    names = [v.name for v in variants]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise _err(f"two sweep variants are named {dup!r}", path, locate(text, "sweep"))
    return SweepSpec(tuple(variants), repeats, tuple(factors), tuple(targets))


def _matrix(raw: Any, profile: Profile, text: str, path: Any) -> tuple[list[Variant], list[str]]:
    if not isinstance(raw, dict) or not raw:
        raise _err("[sweep.matrix] must map toggles to lists of values", path, locate(text, "matrix"))
    keys: list[str] = []
    levels: list[list[Any]] = []
    for name, values in raw.items():
        where = locate(text, name, "sweep.matrix")
        toggle = resolve_toggle(profile, name)
        if toggle is None:
            close = difflib.get_close_matches(name.lstrip("-"), _toggle_names(profile), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else " (add it to [[toggles]] first)"
            raise _err(f"sweep.matrix: {name!r} is not a toggle of this profile{hint}", path, where)
        if toggle.key in keys:
            raise _err(f"sweep.matrix: {name!r} is given twice", path, where)
        if not isinstance(values, list) or not values:
            raise _err(f"sweep.matrix.{name} must be a non-empty list of values", path, where)
        canon_values: list[Any] = []
        for v in values:
            canon, why = _check_value(profile, toggle, v)
            if why is not None and not why.startswith("no profile"):
                raise _err(f"sweep.matrix: {why}", path, where)
            if canon in canon_values:
                raise _err(f"sweep.matrix.{name}: {_fmt(canon)} is listed twice", path, where)
            canon_values.append(canon)
        keys.append(toggle.key)
        levels.append(canon_values)
    variants = []
    for combo in itertools.product(*levels):
        settings = dict(zip(keys, combo, strict=True))
        variants.append(Variant(variant_label(settings), settings))
    return variants, keys


def _variant_list(raw: Any, profile: Profile, text: str, path: Any) -> list[Variant]:
    if not isinstance(raw, list) or not raw or not all(isinstance(v, dict) for v in raw):
        raise _err("[[sweep.variants]] must be a list of tables", path, locate(text, "variants"))
    out = []
    for i, item in enumerate(raw):

        def where(key: str, i: int = i) -> tuple[int | None, int | None]:
            return locate_in_array(text, ("sweep.variants",), i, key)

        for key in item:
            if key not in _VARIANT_KEYS:
                raise _err(
                    f"unknown key {key!r} in sweep variant {i + 1} (allowed: name, set)", path, where(key)
                )
        sets = item.get("set", {})
        if not isinstance(sets, dict):
            raise _err(f"sweep variant {i + 1}: set must be a table of toggle = value", path, where("set"))
        settings: dict[str, Any] = {}
        for name, value in sets.items():
            toggle = resolve_toggle(profile, name)
            if toggle is None:
                close = difflib.get_close_matches(name.lstrip("-"), _toggle_names(profile), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else " (add it to [[toggles]] first)"
                raise _err(
                    f"sweep variant {i + 1}: {name!r} is not a toggle of this profile{hint}",
                    path,
                    where("set"),
                )
            canon, why = _check_value(profile, toggle, value)
            if why is not None:
                raise _err(f"sweep variant {i + 1}: {why}", path, where("set"))
            settings[toggle.key] = canon
        label = item.get("name", variant_label(settings))
        if not isinstance(label, str) or not label.strip() or "\n" in label:
            raise _err(f"sweep variant {i + 1}: name must be a one-line string", path, where("name"))
        out.append(Variant(label.strip(), settings))
    return out


def variant_profile(profile: Profile, variant: Variant) -> Profile:
    """The profile that launches ``variant``: its settings staged and applied like Tune-panel toggles
    (a value equal to the profile's own simply changes nothing)."""
    from eagletui.core.staged import StagedConfig

    staged = StagedConfig(profile)
    for key, value in variant.settings.items():
        why = staged.stage(key, value)
        if why is not None:
            raise ValueError(f"{variant.name}: {why}")
    return staged.preview() or profile


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
        """The noise band the rule uses: :data:`~eagletui.core.noise.NOISE_SIGMAS` × the effect's error."""
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
    :mod:`eagletui.core.noise` (``stdev``/``n`` of this variant's repeats, ``base_*`` the baseline's):
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
