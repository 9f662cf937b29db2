"""The ``[sweep]`` table of a profile: its variants or matrix, client points and repeat policy, validated.

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
    concurrency = [1, 4, 16, 64]                # a client factor: no relaunch

Factors are of two kinds. **Server factors** (toggles: flags and environment variables) need a
relaunch; **client factors** (:data:`CLIENT_KEYS`: concurrency, the prompt set, output and input
lengths, the request rate) only change the benchmark. A variant is one server config; the client
factors (in the matrix, or ``[sweep.client]`` beside a variant list) are crossed into *client points*
that every variant is benchmarked at within its one launch (:mod:`eagletui.core.sweep.plan`).

A toggle is named like in the Tune panel: ``NCCL_ALGO`` / ``enable-x`` / ``--enable-x`` or the full
key ``env:NCCL_ALGO`` / ``arg:--enable-x``; it must be one of the profile's ``[[toggles]]``, and each
value goes through the same rules as a value staged by hand (:class:`~eagletui.core.profile.staged.StagedConfig`),
so a sweep cannot launch what the Tune panel would refuse. Errors name ``file:line:col``.

What the runs then show (the effects, the decisions) is :mod:`eagletui.core.sweep`'s; this module
holds only what the user declared, so a profile loads without the sweep's logic.

No I/O, no UI.
"""

from __future__ import annotations

import difflib
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagletui.core.profile.max_rate import MaxRateSpec, parse_max_rate
from eagletui.core.profile.objective import Objective, parse_kind
from eagletui.core.stats.confidence import DEFAULT_CONFIDENCE
from eagletui.core.tomlpos import locate, locate_in_array

if TYPE_CHECKING:
    from eagletui.core.profile.model import BenchSettings, Profile, Toggle
MIN_FLOOR = 2  # a floor below two measures no noise at all


DEFAULT_MAX_REPEATS = 6


DEFAULT_TIE_PCT = 1.0  # the 1 % a closed vLLM tuner PR treated as a tie; here it needs a CI inside it


@dataclass(frozen=True)
class RepeatPolicy:
    """How often a cell runs: ``adaptive`` (``min_repeats``..``max_repeats``, by the rule above) or a
    fixed ``repeats``."""

    adaptive: bool = True
    repeats: int = 3  # fixed policy: runs a cell
    min_repeats: int = MIN_FLOOR
    max_repeats: int = DEFAULT_MAX_REPEATS
    confidence: float = DEFAULT_CONFIDENCE
    tie_pct: float = DEFAULT_TIE_PCT

    @property
    def floor(self) -> int:
        return self.min_repeats if self.adaptive else self.repeats

    @property
    def most(self) -> int:
        return self.max_repeats if self.adaptive else self.repeats

    def describe(self) -> str:
        if not self.adaptive:
            return f"{self.repeats} run{'s' if self.repeats != 1 else ''} a cell"
        return (
            f"adaptive: {self.min_repeats}–{self.max_repeats} runs a cell until "
            f"{self.confidence * 100:g} % sure (ties within ±{self.tie_pct:g} %)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "adaptive": self.adaptive,
            "repeats": self.repeats,
            "min_repeats": self.min_repeats,
            "max_repeats": self.max_repeats,
            "confidence": self.confidence,
            "tie_pct": self.tie_pct,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RepeatPolicy:
        return cls(
            adaptive=bool(d.get("adaptive", True)),
            repeats=int(d.get("repeats", 3)),
            min_repeats=int(d.get("min_repeats", MIN_FLOOR)),
            max_repeats=int(d.get("max_repeats", DEFAULT_MAX_REPEATS)),
            confidence=float(d.get("confidence", DEFAULT_CONFIDENCE)),
            tie_pct=float(d.get("tie_pct", DEFAULT_TIE_PCT)),
        )


MAX_VARIANTS = 256


MAX_REPEATS = 100


MAX_CLIENT_POINTS = 64


MAX_GPU_WAIT_S = 24 * 3600.0


DEFAULT_GPU_WAIT_S = 300.0


_SWEEP_KEYS = {
    "repeats",
    "matrix",
    "variants",
    "targets",
    "client",
    "min_repeats",
    "max_repeats",
    "confidence",
    "tie_pct",
    "drift_check",
    "gpu_wait_s",
    "step_profile",
    "objective",
    "max_rate",
}


_VARIANT_KEYS = {"name", "set"}


def client_key(name: str) -> str | None:
    """``concurrency`` / ``bench.concurrency`` / ``max-new-tokens`` → the [bench] key; None if not one."""
    bare = name.strip()
    if bare.startswith("bench."):
        bare = bare[len("bench.") :]
    bare = bare.replace("-", "_")
    return bare if bare in CLIENT_KEYS else None


@dataclass(frozen=True)
class Variant:
    """One point of the sweep: ``settings`` are toggle key → value (None = unset) over the profile."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SweepSpec:
    variants: tuple[Variant, ...]  # server configs: one launch each
    repeats: int = 1  # fixed policy: runs a cell; adaptive: its floor
    factors: tuple[str, ...] = ()  # toggle keys of a matrix sweep (empty for a list)
    targets: tuple[str, ...] = ()  # several hosts: each takes the next variant
    #: client factors in declared order, each with its values (the first is the reference level)
    client: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    policy: RepeatPolicy | None = None  # None: ``repeats`` fixed
    drift_check: bool | None = None  # the baseline again at the end; None = when it costs ≤ 25 %
    gpu_wait_s: float = DEFAULT_GPU_WAIT_S  # the bound on waiting for GPU memory between launches
    #: a step profile (SGLang's /start_profile, a few decode cycles) of each speculative launch after
    #: its benchmarks: the cycle model then predicts the next launch from the measured split of a cycle
    step_profile: bool = False
    #: what the decisions and the crossover optimise (:mod:`eagletui.core.profile.objective`)
    objective: Objective = field(default_factory=Objective)
    max_rate: MaxRateSpec | None = None  # [sweep.max_rate]: each launch's highest rate meeting the [slo]

    @property
    def factorial(self) -> bool:
        return bool(self.factors)

    @property
    def repeat_policy(self) -> RepeatPolicy:
        return self.policy or RepeatPolicy(adaptive=False, repeats=self.repeats)

    def client_points(self) -> list[dict[str, Any]]:
        """Every client setting a launch is benchmarked at (``[{}]``: the profile's [bench] as is)."""
        if not self.client:
            return [{}]
        keys = [k for k, _ in self.client]
        return [
            dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(v for _, v in self.client))
        ]

    @property
    def client_factors(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.client)

    def drift_enabled(self) -> bool:
        """The baseline runs again at the end when asked, or (unset) when that adds at most a fifth
        to the launches: five server configs or more."""
        if len(self.variants) < 2:
            return False
        if self.drift_check is not None:
            return self.drift_check
        return len(self.variants) >= 5


def client_label(point: dict[str, Any]) -> str:
    """``concurrency=4 max_new_tokens=256``; the profile's benchmark as is for ``{}``."""
    return " ".join(f"{k}={_fmt(v)}" for k, v in point.items()) or "the profile's benchmark"


def apply_client(bench: BenchSettings, point: dict[str, Any]) -> BenchSettings:
    """The profile's [bench] with a client point's values."""
    import dataclasses

    return dataclasses.replace(bench, **point) if point else bench


def _err(message: str, path: Any, where: tuple[int | None, int | None]) -> Exception:
    from eagletui.core.profile.model import ProfileError

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
    from eagletui.core.profile.staged import StagedConfig

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
    _check_sweep_keys(raw, text, path)
    policy = _policy(raw, text, path)
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
    client: list[tuple[str, tuple[Any, ...]]] = []
    if has_matrix:
        variants, factors = _matrix(raw["matrix"], profile, text, path, client)
    else:
        variants, factors = _variant_list(raw["variants"], profile, text, path), []
    if "client" in raw:
        _client_table(raw["client"], text, path, client)
    n_points = math.prod(len(v) for _, v in client) if client else 1
    if n_points > MAX_CLIENT_POINTS:
        raise _err(
            f"the sweep benchmarks {n_points} client settings a launch; at most {MAX_CLIENT_POINTS}",
            path,
            locate(text, "client", "sweep") if "client" in raw else locate(text, "matrix", "sweep"),
        )
    if not variants:
        variants = [Variant(variant_label({}), {})]  # only client factors: one launch of the profile
    if len(variants) > MAX_VARIANTS:
        raise _err(
            f"the sweep has {len(variants)} variants; at most {MAX_VARIANTS}", path, locate(text, "sweep")
        )
    names = [v.name for v in variants]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise _err(f"two sweep variants are named {dup!r}", path, locate(text, "sweep"))
    drift, wait, step_profile = _run_settings(raw, text, path)
    return SweepSpec(
        tuple(variants),
        policy.floor,
        tuple(factors),
        tuple(targets),
        tuple(client),
        policy,
        drift,
        float(wait),
        step_profile,
        Objective(parse_kind(raw, "sweep", text, path, has_slo=bool(profile.slo))),
        None if "max_rate" not in raw else parse_max_rate(raw["max_rate"], profile, text, path),
    )


def _check_sweep_keys(
    raw: dict[str, Any], text: str, path: Any, allowed: set[str] = _SWEEP_KEYS, section: str = "sweep"
) -> None:
    """Refuse a key ``[sweep]`` (or ``[tune]``) does not know, with the nearest known one."""
    for key in raw:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise _err(
                f"unknown key {key!r} in [{section}]{hint} (allowed: {', '.join(sorted(allowed))})",
                path,
                locate(text, key, section),
            )


def _run_settings(raw: dict[str, Any], text: str, path: Any) -> tuple[bool | None, int | float, bool]:
    """How the sweep runs, checked: ``drift_check``, ``gpu_wait_s`` and ``step_profile``."""
    drift = raw.get("drift_check")
    if drift is not None and not isinstance(drift, bool):
        raise _err(
            f"sweep.drift_check must be true or false, got {drift!r}",
            path,
            locate(text, "drift_check", "sweep"),
        )
    wait = raw.get("gpu_wait_s", DEFAULT_GPU_WAIT_S)
    if (
        isinstance(wait, bool)
        or not isinstance(wait, int | float)
        or not math.isfinite(wait)
        or not 0 <= wait <= MAX_GPU_WAIT_S
    ):
        raise _err(
            f"sweep.gpu_wait_s must be a number of seconds from 0 to {MAX_GPU_WAIT_S:g}, got {wait!r}",
            path,
            locate(text, "gpu_wait_s", "sweep"),
        )
    step_profile = raw.get("step_profile", False)
    if not isinstance(step_profile, bool):
        raise _err(
            f"sweep.step_profile must be true or false, got {step_profile!r}",
            path,
            locate(text, "step_profile", "sweep"),
        )
    return drift, wait, step_profile


def _policy(raw: dict[str, Any], text: str, path: Any) -> RepeatPolicy:
    """``repeats = N`` (fixed) or ``repeats = "adaptive"`` (the default) with its bounds."""
    repeats = raw.get("repeats", "adaptive")
    where = locate(text, "repeats", "sweep")
    adaptive_keys = [k for k in ("min_repeats", "max_repeats", "confidence", "tie_pct") if k in raw]
    if repeats == "adaptive":
        lo = _int_key(raw, "min_repeats", MIN_FLOOR, MIN_FLOOR, MAX_REPEATS, text, path)
        hi = _int_key(raw, "max_repeats", max(DEFAULT_MAX_REPEATS, lo), lo, MAX_REPEATS, text, path)
        conf = raw.get("confidence", 0.95)
        if isinstance(conf, bool) or not isinstance(conf, int | float) or not 0.5 <= conf < 1:
            raise _err(
                f"sweep.confidence must be a number from 0.5 to below 1 (0.95 = 95 %), got {conf!r}",
                path,
                locate(text, "confidence", "sweep"),
            )
        tie = raw.get("tie_pct", DEFAULT_TIE_PCT)
        if isinstance(tie, bool) or not isinstance(tie, int | float) or not 0 <= tie <= 50:
            raise _err(
                f"sweep.tie_pct must be a percentage from 0 to 50, got {tie!r}",
                path,
                locate(text, "tie_pct", "sweep"),
            )
        return RepeatPolicy(True, lo, lo, hi, float(conf), float(tie))
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise _err(
            f'sweep.repeats must be "adaptive" or an integer from 1 to {MAX_REPEATS}, got {repeats!r}',
            path,
            where,
        )
    if adaptive_keys:
        raise _err(
            f'sweep.{adaptive_keys[0]} applies to repeats = "adaptive" only (repeats = {repeats} runs every '
            "cell that often)",
            path,
            locate(text, adaptive_keys[0], "sweep"),
        )
    return RepeatPolicy(False, repeats, repeats, repeats)


def _int_key(raw: dict[str, Any], key: str, default: int, lo: int, hi: int, text: str, path: Any) -> int:
    v = raw.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _err(
            f"sweep.{key} must be an integer from {lo} to {hi}, got {v!r}", path, locate(text, key, "sweep")
        )
    return v


def _client_values(
    key: str, values: Any, where: tuple[int | None, int | None], path: Any, label: str
) -> tuple[Any, ...]:
    """A client factor's values checked against :data:`CLIENT_KEYS` (type, range, no repeats)."""
    typ, lo, hi = CLIENT_KEYS[key]
    if not isinstance(values, list) or not values:
        raise _err(f"{label}.{key} must be a non-empty list of values", path, where)
    out: list[Any] = []
    for v in values:
        if typ is str:
            if not isinstance(v, str) or not v.strip() or "\n" in v:
                raise _err(f"{label}.{key}: {v!r} is not a prompt set name or file", path, where)
        elif isinstance(v, bool) or not isinstance(v, int | float) or (typ is int and not isinstance(v, int)):
            raise _err(
                f"{label}.{key}: {v!r} is not {'an integer' if typ is int else 'a number'}", path, where
            )
        elif not math.isfinite(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            raise _err(f"{label}.{key}: {v!r} is out of range ({lo:g}..{hi:g})", path, where)
        v = typ(v)
        if v in out:
            raise _err(f"{label}.{key}: {_fmt(v)} is listed twice", path, where)
        out.append(v)
    return tuple(out)


def _client_table(raw: Any, text: str, path: Any, client: list[tuple[str, tuple[Any, ...]]]) -> None:
    if not isinstance(raw, dict) or not raw:
        raise _err(
            "[sweep.client] must map client settings (concurrency, prompts, …) to lists of values",
            path,
            locate(text, "client", "sweep"),
        )
    for name, values in raw.items():
        where = locate(text, name, "sweep.client")
        key = client_key(name)
        if key is None:
            close = difflib.get_close_matches(name, sorted(CLIENT_KEYS), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise _err(
                f"sweep.client: {name!r} is not a client setting{hint} (one of {', '.join(CLIENT_KEYS)}; "
                "server flags and env go in [sweep.matrix] or the variants)",
                path,
                where,
            )
        if any(k == key for k, _ in client):
            raise _err(f"sweep.client: {key} is given twice", path, where)
        client.append((key, _client_values(key, values, where, path, "sweep.client")))


def _matrix(
    raw: Any,
    profile: Profile,
    text: str,
    path: Any,
    client: list[tuple[str, tuple[Any, ...]]],
    section: str = "sweep.matrix",
) -> tuple[list[Variant], list[str]]:
    """Toggles × values crossed in full (``section`` names the table in errors: ``[tune.space]`` too)."""
    if not isinstance(raw, dict) or not raw:
        raise _err(f"[{section}] must map toggles to lists of values", path, locate(text, section.split(".")[-1]))
    keys: list[str] = []
    levels: list[list[Any]] = []
    for name, values in raw.items():
        where = locate(text, name, section)
        ckey = client_key(name)
        if ckey is not None:
            if any(k == ckey for k, _ in client):
                raise _err(f"{section}: {ckey} is given twice", path, where)
            client.append((ckey, _client_values(ckey, values, where, path, section)))
            continue
        toggle = resolve_toggle(profile, name)
        if toggle is None:
            close = difflib.get_close_matches(name.lstrip("-"), _toggle_names(profile), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else " (add it to [[toggles]] first)"
            raise _err(f"{section}: {name!r} is not a toggle of this profile{hint}", path, where)
        if toggle.key in keys:
            raise _err(f"{section}: {name!r} is given twice", path, where)
        if not isinstance(values, list) or not values:
            raise _err(f"{section}.{name} must be a non-empty list of values", path, where)
        canon_values: list[Any] = []
        for v in values:
            canon, why = _check_value(profile, toggle, v)
            if why is not None and not why.startswith("no profile"):
                raise _err(f"{section}: {why}", path, where)
            if canon in canon_values:
                raise _err(f"{section}.{name}: {_fmt(canon)} is listed twice", path, where)
            canon_values.append(canon)
        keys.append(toggle.key)
        levels.append(canon_values)
    if not keys:
        return [], []
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
            if client_key(name) is not None:
                raise _err(
                    f"sweep variant {i + 1}: {name!r} is a client setting: list it under [sweep.client] "
                    "(every variant is benchmarked at each value within its one launch)",
                    path,
                    where("set"),
                )
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
    from eagletui.core.profile.staged import StagedConfig

    staged = StagedConfig(profile)
    for key, value in variant.settings.items():
        why = staged.stage(key, value)
        if why is not None:
            raise ValueError(f"{variant.name}: {why}")
    return staged.preview() or profile


#: Client factors: ``[bench]`` keys a sweep may vary without a relaunch, with their type and range.
CLIENT_KEYS: dict[str, tuple[type, float | None, float | None]] = {
    "concurrency": (int, 1, 10_000),
    "prompts": (str, None, None),  # the dataset: chat | code | long | a JSONL file
    "num_prompts": (int, 1, 100_000),
    "max_new_tokens": (int, 1, 1_048_576),  # output length
    "input_len": (int, 1, 2_097_152),  # prompt length (bench_serving's random-ids)
    "request_rate": (float, 0, 1e6),  # requests/s, Poisson arrivals; 0 = as fast as the concurrency allows
}
