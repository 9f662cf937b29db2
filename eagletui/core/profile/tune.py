"""The ``[tune]`` table of a profile: the space ``eagletui tune`` searches, its objective and its budget.

A sweep launches every configuration it declares; ``tune`` launches as few as it can. The space is
declared like a sweep's matrix (toggles of the profile × values, the first value of each the start)::

    [tune]
    objective = "tok_s"               # or "tok_s_per_user"
    concurrency = [1, 8]              # where the objective is measured (one launch benchmarks each)
    budget_launches = 6               # and/or budget_hours = 2.5
    confidence = 0.9                  # how sure "nothing left beats the best" must be to stop early
    prior_pct = 10                    # what a factor the cycle model cannot predict may move, a priori
    [tune.space]
    speculative-algorithm = ["EAGLE3", ""]      # "" = unset: speculation off
    speculative-num-steps = [3, 1, 2, 4, 5]
    NCCL_ALGO = ["Ring", "Tree"]

Settings that launch the same server are one configuration: with speculation off the speculative
flags do not matter, so the space above is (5 step counts + off) × 2 = 12 configurations, not 20.

Each value is checked like a value staged in the Tune panel (:func:`~eagletui.core.profile.sweep._matrix`
does it for both tables), errors name ``file:line:col``. No I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagletui.core.profile.numbers import bounded_number
from eagletui.core.profile.objective import Objective, parse_kind
from eagletui.core.profile.sweep import (
    DEFAULT_GPU_WAIT_S,
    MAX_GPU_WAIT_S,
    MAX_REPEATS,
    MAX_VARIANTS,
    RepeatPolicy,
    SweepSpec,
    Variant,
    _check_sweep_keys,
    _err,
    _matrix,
    variant_label,
    variant_profile,
)
from eagletui.core.tomlpos import locate

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile

#: The flags that mean nothing once speculation is off (two settings that differ only in them launch
#: the same server).
SPEC_ONLY = ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens")

_TUNE_KEYS = {
    "space",
    "objective",
    "concurrency",
    "budget_launches",
    "budget_hours",
    "confidence",
    "prior_pct",
    "repeats",
    "gpu_wait_s",
}

@dataclass(frozen=True)
class TuneSpec:
    """A validated ``[tune]``: the configurations (index 0 the start), which toggles are the cycle
    model's (speculative) and which are not, the objective, the budget and how sure a stop must be."""

    configs: tuple[Variant, ...]
    factors: tuple[str, ...]
    objective: Objective
    budget_launches: int
    budget_hours: float | None = None
    confidence: float = 0.9
    prior_pct: float = 10.0
    repeats: int = 2
    gpu_wait_s: float = DEFAULT_GPU_WAIT_S
    #: the configurations that the space named more than once (speculation off × every step count)
    merged: tuple[str, ...] = field(default_factory=tuple)

    def sweep_spec(self) -> SweepSpec:
        """The exhaustive sweep of the same space (what ``tune`` is measured against, and the queue its
        launches run in): every configuration, each benchmarked at the objective's concurrencies."""
        client = (("concurrency", self.objective.concurrencies),) if self.objective.concurrencies else ()
        policy = RepeatPolicy(
            adaptive=False, repeats=self.repeats, min_repeats=self.repeats, max_repeats=self.repeats
        )
        return SweepSpec(
            self.configs,
            self.repeats,
            self.factors,
            (),
            client,
            policy,
            False,
            self.gpu_wait_s,
            True,  # a step profile of each speculative launch: the cycle model predicts from its split
            Objective(self.objective.kind),  # the queue's decisions and crossover by the tune's objective
        )


def parse_tune(raw: Any, profile: Profile, text: str = "", path: Any = None) -> TuneSpec:
    """Validate ``[tune]`` against ``profile``'s toggles; raise ProfileError with file:line:col."""
    if not isinstance(raw, dict):
        raise _err("tune must be a table ([tune])", path, locate(text, "tune"))
    _check_sweep_keys(raw, text, path, _TUNE_KEYS, "tune")
    if "space" not in raw:
        raise _err(
            "[tune] needs a [tune.space] table: toggles × the values to search", path, locate(text, "tune")
        )
    client: list[tuple[str, tuple[Any, ...]]] = []
    variants, factors = _matrix(raw["space"], profile, text, path, client, section="tune.space")
    if client:
        raise _err(
            f"tune.space: {client[0][0]} is a client setting: the objective's concurrencies go in "
            "tune.concurrency",
            path,
            locate(text, client[0][0], "tune.space"),
        )
    configs, merged = _distinct(variants, profile)
    objective = _objective(raw, profile, text, path)
    budget = _number(raw, "budget_launches", len(configs), 1, MAX_VARIANTS, text, path, integer=True)
    hours = raw.get("budget_hours")
    if hours is not None:
        hours = _number(raw, "budget_hours", 1.0, 0.01, 24 * 30, text, path)
    return TuneSpec(
        tuple(configs),
        tuple(factors),
        objective,
        int(budget),
        hours,
        _number(raw, "confidence", 0.9, 0.5, 0.999, text, path),
        _number(raw, "prior_pct", 10.0, 0.0, 100.0, text, path),
        int(_number(raw, "repeats", 2, 1, MAX_REPEATS, text, path, integer=True)),
        _number(raw, "gpu_wait_s", DEFAULT_GPU_WAIT_S, 0.0, MAX_GPU_WAIT_S, text, path),
        tuple(merged),
    )


def _number(
    raw: dict[str, Any],
    key: str,
    default: float,
    lo: float,
    hi: float,
    text: str,
    path: Any,
    *,
    integer: bool = False,
) -> float:
    return bounded_number(raw, key, default, lo, hi, text, path, section="tune", integer=integer)


def _objective(raw: dict[str, Any], profile: Profile, text: str, path: Any) -> Objective:
    kind = parse_kind(raw, "tune", text, path, has_slo=bool(profile.slo))
    if kind == "goodput":
        raise _err(
            "tune.objective = 'goodput' is a [sweep] objective: tune ranks unlaunched configurations by the "
            "cycle model, which predicts tok/s, not latencies (use tok_s or tok_s_per_user)",
            path,
            locate(text, "objective", "tune"),
        )
    conc = raw.get("concurrency", [profile.bench.concurrency])
    if isinstance(conc, int) and not isinstance(conc, bool):
        conc = [conc]
    where = locate(text, "concurrency", "tune")
    if (
        not isinstance(conc, list)
        or not conc
        or len(conc) > 16
        or not all(isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= 10_000 for c in conc)
        or len(set(conc)) != len(conc)
    ):
        raise _err(
            f"tune.concurrency must be a list of 1 to 16 distinct integers from 1 to 10000, got {conc!r}",
            path,
            where,
        )
    return Objective(str(kind), tuple(int(c) for c in conc))


def _distinct(variants: list[Variant], profile: Profile) -> tuple[list[Variant], list[str]]:
    """One variant per server configuration: with speculation off the speculative flags are dropped
    (the first such variant stands for all of them); the names of those merged."""
    out: list[Variant] = []
    seen: set[str] = set()
    merged: list[str] = []
    for v in variants:
        settings = dict(v.settings)
        if not speculates(profile, settings):
            settings = {k: x for k, x in settings.items() if k.partition(":")[2] not in SPEC_ONLY}
        key = json.dumps(settings, sort_keys=True, default=str)
        if key in seen:
            merged.append(v.name)
            continue
        seen.add(key)
        out.append(Variant(variant_label(settings), settings))
    return out, merged


def speculates(profile: Profile, settings: dict[str, Any]) -> bool:
    """Whether these settings over ``profile`` launch a speculative server (the server kind's rule)."""
    try:
        prof = variant_profile(profile, Variant("", settings))
    except ValueError:
        return True
    return bool(prof.kind.is_spec(prof.args))
