"""Adaptive speculation of one launch, folded from its log: which tier (speculative step count) ran
when, what the extra tiers cost at startup, and whether the server silently ran static steps instead.

SGLang 0.5.23 (``--speculative-adaptive``, ``speculative/adaptive_spec_params.py`` and
``speculative/eagle_worker_v2.py``) swaps the worker's tier before a decode round whenever the batch's
slot runs another one (batch size alone can change it) and logs every swap (``Switch adaptive runtime
state: steps 3 -> 1, draft_tokens 4 -> 2``); an EMA of accepted drafts moves a slot's tier
(``Adaptive spec params updated: …``), which takes effect at the next swap. Neither the Decode line nor
the top level of ``/server_info`` says which tier ran, so the swaps are the timeline: the tier at a time
is the ``to`` of the last swap before it (the launch's own steps before the first). The notes arrive as
:class:`~eagletui.core.events.LaunchNote` ``adaptive`` events (one per distinct swap and log second:
a tier that flaps faster is drawn at the second's first swap).

Pure: times are the events' walls.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

#: Swaps kept per launch (oldest dropped): the chart thins them, the shares need no more.
TIMELINE_LIMIT = 2000


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1000 else None


def _num(v: Any) -> float | None:
    if isinstance(v, int | float) and not isinstance(v, bool) and v == v and abs(v) < 1e9:
        return float(v)
    return None


@dataclass
class TierView:
    """What one launch's log said about adaptive speculation (see the module docstring)."""

    #: the server runs adaptive speculation (its args said so, or it logged its tiers)
    on: bool = False
    #: the first slot's candidate steps (``AdaptiveSpeculativeParams initialized``)
    candidates: tuple[int, ...] = ()
    #: the launch's own steps: the tier before the first swap
    start: int | None = None
    #: (wall, steps) at each swap, oldest first
    timeline: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=TIMELINE_LIMIT))
    swaps: int = 0
    #: steps → (seconds, GB) of each extra tier's graphs and workspace (``Built adaptive runtime state``)
    built: dict[int, tuple[float, float]] = field(default_factory=dict)
    #: the server's reason for running static steps although adaptive was asked for
    fallback: str | None = None

    @property
    def active(self) -> int | None:
        return self.timeline[-1][1] if self.timeline else self.start

    def fold(self, key: str, value: Any, wall: float) -> bool:
        """One ``adaptive`` note; True when it changed what is shown."""
        v = value if isinstance(value, dict) else {}
        if key == "config":
            self.on = self.on or bool(v.get("on"))
        elif key == "init":
            self.on = True
            steps = _int(v.get("steps"))
            self.start = steps if self.start is None else self.start
            cands = v.get("candidates")
            if isinstance(cands, list):
                self.candidates = tuple(c for c in (_int(x) for x in cands[:64]) if c is not None)
        elif key == "switch":
            to = _int(v.get("to"))
            if to is None:
                return False
            self.on = True
            if self.start is None:
                self.start = _int(v.get("from"))
            self.timeline.append((wall, to))
            self.swaps += 1
        elif key == "built":
            steps, el, mem = _int(v.get("steps")), _num(v.get("elapsed")), _num(v.get("mem_gb"))
            if steps is None or el is None or el < 0:
                return False
            self.on = True
            self.built[steps] = (el, max(0.0, mem or 0.0))
        elif key == "fallback":
            reason = v.get("reason")
            self.fallback = str(reason)[:300] if reason else "the server gave no reason"
        else:
            return False
        return True

    def tier_at(self, wall: float) -> int | None:
        """The tier running at ``wall``: the last swap's at or before it, else the launch's own."""
        tier = self.start
        for t, steps in self.timeline:
            if t > wall:
                break
            tier = steps
        return tier

    def shares(self, t0: float, t1: float) -> dict[int, float]:
        """Each tier's share of the time from ``t0`` to ``t1`` (empty when unknown or no time)."""
        if t1 <= t0:
            return {}
        cur = self.tier_at(t0)
        last = t0
        spent: dict[int, float] = {}
        for t, steps in self.timeline:
            if t <= t0:
                continue
            if t >= t1:
                break
            if cur is not None:
                spent[cur] = spent.get(cur, 0.0) + t - last
            cur, last = steps, t
        if cur is not None:
            spent[cur] = spent.get(cur, 0.0) + t1 - last
        total = sum(spent.values())
        return {k: v / total for k, v in sorted(spent.items())} if total > 0 else {}

    def swaps_between(self, t0: float, t1: float) -> int:
        return sum(1 for t, _ in self.timeline if t0 < t <= t1)

    def capture_cost(self) -> tuple[int, float, float] | None:
        """(extra tiers, seconds, GB) the extra tiers' graphs took at startup; None before any."""
        if not self.built:
            return None
        return (
            len(self.built),
            sum(s for s, _ in self.built.values()),
            sum(g for _, g in self.built.values()),
        )

    def capture_text(self, steps: bool = True) -> str | None:
        """The extra tiers' share of the capture, in one phrase (the run details; the phase panel leaves
        out which ``steps``, it has one line)."""
        cost = self.capture_cost()
        if cost is None:
            return None
        n, secs, gb = cost
        which = f" (steps {', '.join(str(s) for s in sorted(self.built))})" if steps else ""
        return f"adaptive: +{n} tier{'s' if n != 1 else ''}{which} {secs:.1f} s, {gb:.2f} GB"

    def share_text(self, t0: float, t1: float) -> str | None:
        """``steps 3 62% · 1 38%, 14 swaps`` over a window; None when the tier is unknown there."""
        shares = self.shares(t0, t1)
        if not shares:
            return None
        parts = " · ".join(f"{k} {v * 100:.0f}%" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]))
        n = self.swaps_between(t0, t1)
        return f"steps {parts}, {n} swap{'s' if n != 1 else ''}"
