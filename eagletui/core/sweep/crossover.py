"""A sweep's crossover: the best config per range of a client factor, and one launch that serves them all.

Where the winners of the concurrency levels differ only in speculation that SGLang's adaptive mode can
switch at run time, the ``--speculative-adaptive-config`` that serves each range with its winner; else
why not. Apart from :mod:`eagletui.core.sweep.decide`, whose decisions it reads, because it answers a
different question (what to launch for every level, not which config wins one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagletui.core.sweep.decide import Decision, cost_of

SPEC_PREFIX = "--speculative-"
ADAPTIVE_ALGOS = ("EAGLE", "EAGLE3")


@dataclass(frozen=True)
class CrossoverRow:
    """Client values ``levels`` (ascending) where ``winner`` is best; ``start`` is the first of them."""

    start: Any
    levels: tuple[Any, ...]
    winner: int
    sure: tuple[str, ...]  # how sure each level's decision is

    def to_dict(self, names: Mapping[int, str]) -> dict[str, Any]:
        return {
            "from": self.start,
            "levels": list(self.levels),
            "winner": names.get(self.winner, str(self.winner)),
            "how_sure": list(self.sure),
        }


@dataclass(frozen=True)
class Crossover:
    factor: str
    rows: tuple[CrossoverRow, ...]
    #: the ``--speculative-adaptive-config`` JSON (sglang ≥ 0.5.17: ``{"<batch size>": {"candidate_steps":
    #: [...]}}``, a slot serving every batch size from its key up to the next) or None with ``why_not``
    adaptive_config: dict[str, Any] | None
    launch_args: dict[str, Any] | None
    why_not: str = ""


def _spec_of(args: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k.startswith(SPEC_PREFIX) and v is not None and v is not False}


def _rest_of(args: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in args.items() if not k.startswith(SPEC_PREFIX) and v is not None and v is not False
    }


def _int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() else None


def crossover(
    decisions: Sequence[Decision],
    levels: Sequence[Any],
    factor: str,
    args_of: Mapping[int, Mapping[str, Any]],
    env_of: Mapping[int, Mapping[str, str]] | None = None,
) -> Crossover:
    """The best config per range of ``factor`` (``levels[i]`` is group ``i``'s value, ascending after
    sorting) and, where the winners differ only in speculation that SGLang's adaptive mode can switch
    at run time (EAGLE/EAGLE3, top-k 1, draft tokens = steps + 1, or off = 0 steps), the
    ``--speculative-adaptive-config`` that serves each range with its winner."""
    rows = _ranges(decisions, levels)
    if not rows:
        return Crossover(factor, (), None, None, "nothing measured")
    winners = [r.winner for r in rows]
    env_of = env_of or {}

    def no(why: str) -> Crossover:
        return Crossover(factor, tuple(rows), None, None, why)

    if factor != "concurrency":
        return no(f"SGLang's adaptive config is keyed by batch size: {factor} is not one")
    if any(_int(r.start) is None or (_int(r.start) or 0) < 1 for r in rows):
        return no("the concurrency levels are not positive integers")
    why = _beyond_speculation(winners, args_of, env_of)
    if why:
        return no(why)
    adaptive = _adaptive_steps(winners, args_of)
    if isinstance(adaptive, str):
        return no(adaptive)
    steps_of, spec_on = adaptive
    if not spec_on:
        return no("speculation does not win at any measured concurrency: launch without it")
    common = list(spec_on.values())
    if any(c != common[0] for c in common[1:]):
        return no("the speculating winners differ in their drafter or algorithm")
    config = {str(_int(r.start)): {"candidate_steps": [steps_of[r.winner]]} for r in rows}
    initial = next(steps_of[r.winner] for r in rows if steps_of[r.winner] > 0)
    launch = {
        **common[0],
        "--speculative-eagle-topk": 1,
        "--speculative-num-steps": initial,
        "--speculative-adaptive": True,
        "--speculative-adaptive-config": "FILE",
    }
    return Crossover(factor, tuple(rows), config, launch)


def _ranges(decisions: Sequence[Decision], levels: Sequence[Any]) -> list[CrossoverRow]:
    """The levels with a winner, ascending, run together where the same config wins them."""
    pairs = sorted(
        ((lv, d) for lv, d in zip(levels, decisions, strict=True) if d.winner is not None),
        key=lambda x: x[0],
    )
    rows: list[CrossoverRow] = []
    for lv, d in pairs:
        assert d.winner is not None
        if rows and rows[-1].winner == d.winner:
            last = rows[-1]
            rows[-1] = CrossoverRow(last.start, (*last.levels, lv), d.winner, (*last.sure, d.how_sure()))
        else:
            rows.append(CrossoverRow(lv, (lv,), d.winner, (d.how_sure(),)))
    return rows


def _beyond_speculation(
    winners: Sequence[int],
    args_of: Mapping[int, Mapping[str, Any]],
    env_of: Mapping[int, Mapping[str, str]],
) -> str:
    """Why no single launch serves the winners when they differ in more than speculation (their other
    flags or their environment); "" when they do not."""
    rests = {w: _rest_of(args_of.get(w, {})) for w in winners}
    first = winners[0]
    for w in winners[1:]:
        if rests[w] != rests[first] or dict(env_of.get(w, {})) != dict(env_of.get(first, {})):
            diff = sorted(
                k for k in set(rests[w]) | set(rests[first]) if rests[w].get(k) != rests[first].get(k)
            )
            envd = sorted(
                k
                for k in set(env_of.get(w, {})) | set(env_of.get(first, {}))
                if env_of.get(w, {}).get(k) != env_of.get(first, {}).get(k)
            )
            what = ", ".join(diff + envd) or "their settings"
            return f"the winners differ in more than speculation ({what}): no single launch serves them all"
    return ""


def _adaptive_steps(
    winners: Sequence[int], args_of: Mapping[int, Mapping[str, Any]]
) -> tuple[dict[int, int], dict[int, dict[str, Any]]] | str:
    """Each winner's draft steps (0: speculation off) and, for those that speculate, their speculative
    flags less the ones adaptive mode sets; or why a winner's speculation cannot be switched at run time."""
    steps_of: dict[int, int] = {}
    spec_on: dict[int, dict[str, Any]] = {}
    for w in dict.fromkeys(winners):
        args = args_of.get(w, {})
        if cost_of(args)[0] == 0:
            steps_of[w] = 0
            continue
        spec = _spec_of(args)
        algo = str(spec.get("--speculative-algorithm", ""))
        if algo.upper() not in ADAPTIVE_ALGOS:
            return f"adaptive speculation supports EAGLE and EAGLE3 only (a winner uses {algo})"
        topk = _int(spec.get("--speculative-eagle-topk"))
        if topk not in (None, 1):
            return f"adaptive speculation needs --speculative-eagle-topk 1 (a winner uses {topk})"
        steps = _int(spec.get("--speculative-num-steps"))
        if steps is None or steps < 1:
            return "a winner leaves --speculative-num-steps to SGLang's choice: the steps are unknown"
        ndt = _int(spec.get("--speculative-num-draft-tokens"))
        if ndt is not None and ndt != steps + 1:
            return (
                f"adaptive speculation drafts steps + 1 tokens; a winner measured {ndt} draft tokens at "
                f"{steps} steps"
            )
        steps_of[w] = steps
        spec_on[w] = {
            k: v
            for k, v in spec.items()
            if k
            not in ("--speculative-num-steps", "--speculative-num-draft-tokens", "--speculative-eagle-topk")
        }
    return steps_of, spec_on
