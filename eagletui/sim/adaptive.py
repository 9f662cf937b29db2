"""Adaptive speculation as SGLang 0.5.23 runs it (``speculative/adaptive_spec_params.py``), for the simulator.

One slot per batch-size key of the config (default keys 1, 8, 32, 64); a batch is padded to the CUDA-graph
size that covers it and routed to the largest key at or below that. Each slot keeps an exponential moving
average of the accepted drafts per request (``ema_alpha`` 0.2), starts at ``current − 1``, waits
``warmup_batches`` (10), then every ``update_interval`` (5) verifies moves down while the EMA is at or below
the threshold of the next lower candidate (``prev − 0.5``, ``0.5`` towards 0, plus ``down_hysteresis``) or
else up while it is above ``current − 0.5 + up_hysteresis``; a ``ceiling_coeff`` above 0 caps a target that
is no step up at ``ceil(ema × coeff)``. A zero-step slot drafts nothing and probes the
smallest positive step at its next update. Every change is logged as SGLang logs it:
``Adaptive spec params updated: steps 3 -> 1 (ema_accept_len=0.42)``.
"""

from __future__ import annotations

import bisect
import json
import math
from typing import Any

from eagletui.sim.version import version_tuple

DEFAULT_CONFIG: dict[str, dict[str, Any]] = {
    "1": {"candidate_steps": [1, 3, 5, 7], "up_hysteresis": 0.0, "down_hysteresis": -0.25},
    "8": {"candidate_steps": [0, 1, 3], "up_hysteresis": 0.0, "down_hysteresis": 0.0},
    "32": {"candidate_steps": [0, 1], "up_hysteresis": 0.0, "down_hysteresis": 0.0},
    "64": {"candidate_steps": [0], "up_hysteresis": 0.0, "down_hysteresis": 0.0},
}

#: 0.5.17's default (the same file of its wheel; the real server logged ``candidate_steps=[1, 3, 7]``): no
#: steps 5 in the first slot
DEFAULT_CONFIG_0517: dict[str, dict[str, Any]] = {
    **DEFAULT_CONFIG,
    "1": {"candidate_steps": [1, 3, 7], "up_hysteresis": 0.0, "down_hysteresis": -0.25},
}


class Slot:
    def __init__(self, initial: int, cfg: dict[str, Any]) -> None:
        self.candidates = sorted({int(s) for s in cfg["candidate_steps"] if isinstance(s, int) and s >= 0}) or [0]
        self.alpha = float(cfg.get("ema_alpha", 0.2))
        self.interval = int(cfg.get("update_interval", 5))
        self.warmup = int(cfg.get("warmup_batches", 10))
        self.down = float(cfg.get("down_hysteresis", -0.25))
        self.up = float(cfg.get("up_hysteresis", 0.0))
        self.ceiling = float(cfg.get("ceiling_coeff", 0) or 0)
        self.steps = initial if initial in self.candidates else self.candidates[len(self.candidates) // 2]
        self.ema = float(self.steps - 1)
        self.batches = 0

    def update(self, accepted: list[int]) -> tuple[int, int] | None:
        """Feed one verify's accepted drafts per request; (old, new) when the step count changes."""
        if not accepted:
            return None
        if self.steps > 0:
            self.ema = (1 - self.alpha) * self.ema + self.alpha * (sum(accepted) / len(accepted))
        self.batches += 1
        if self.batches <= self.warmup or (self.batches - self.warmup) % self.interval:
            return None
        old = self.steps
        idx = self.candidates.index(old)
        if old == 0:
            idx = min(idx + 1, len(self.candidates) - 1)
            target = self.candidates[idx]
            if target > 0 and self.ema < 0:
                self.ema = float(target - 1)
        else:
            start = idx
            while idx > 0:
                prev = self.candidates[idx - 1]
                drop = (0.5 if prev == 0 else prev - 0.5) + self.down
                if self.ema <= drop:
                    idx -= 1
                else:
                    break
            if idx == start:
                while idx < len(self.candidates) - 1 and self.ema > self.candidates[idx] - 0.5 + self.up:
                    idx += 1
            target = self.candidates[idx]
            if self.ceiling > 0:  # caps a target that is not a step up at ceil(ema × coeff)
                cap = max(1, math.ceil(self.ema * self.ceiling))
                if cap < target <= old:
                    while idx > 0 and self.candidates[idx] > cap:
                        idx -= 1
                    target = self.candidates[idx]
        if target == old:
            return None
        self.steps = target
        return old, target


def _before_0523(version: str | None) -> bool:
    """The simulated release's default config is 0.5.17's (unknown: the newest)."""
    return bool(version) and version_tuple(str(version)) < (0, 5, 23)


class AdaptiveSteps:
    """The per-batch-size slots of one server."""

    def __init__(
        self, initial: int, config_path: str | None, graph_bs: list[int] | None, version: str | None = None
    ) -> None:
        default = DEFAULT_CONFIG_0517 if _before_0523(version) else DEFAULT_CONFIG
        cfg: dict[str, Any] = default
        if config_path:
            with open(config_path) as f:
                loaded = json.load(f)
            if isinstance(loaded, dict):
                cfg = loaded
        entries = {int(k): v for k, v in cfg.items() if str(k).isdigit() and isinstance(v, dict)}
        if not entries:
            entries = {int(k): v for k, v in default.items()}
        self.keys = sorted(entries)
        self.slots = {k: Slot(initial, {**cfg, **entries[k]}) for k in self.keys}
        self.graph_bs = sorted(graph_bs) if graph_bs else None
        #: the tier the worker runs now: the launch's steps until the first swap
        self.active = initial

    def _key_slot(self, bs: int) -> Slot:
        i = bisect.bisect_right(self.keys, bs) - 1
        return self.slots[self.keys[max(0, i)]]

    def _slot(self, bs: int) -> Slot:
        padded = bs
        if self.graph_bs:
            i = bisect.bisect_left(self.graph_bs, bs)
            padded = self.graph_bs[i] if i < len(self.graph_bs) else bs
        return self._key_slot(padded)

    def graph_bs_for_step(self, step: int) -> list[int]:
        """``cuda_graph_bs_for_step``: the captured batch sizes whose slot lists ``step`` (the sizes an
        extra tier's graphs are captured for; none: that tier runs eagerly)."""
        return [v for v in self.graph_bs or [] if step in self._key_slot(v).candidates]

    def activate(self, bs: int) -> tuple[int, int] | None:
        """``activate_step_by_batch`` before a decode round: (old, new) when the batch's slot runs another
        tier than the worker's (the server logs ``Switch adaptive runtime state`` then)."""
        steps = self.steps_for(bs)
        if steps == self.active:
            return None
        old, self.active = self.active, steps
        return old, steps

    def steps_for(self, bs: int) -> int:
        return self._slot(bs).steps

    def candidates(self) -> list[int]:
        return sorted({c for s in self.slots.values() for c in s.candidates})

    def on_verify(self, accepted: list[int], bs: int) -> tuple[int, int, float] | None:
        slot = self._slot(bs)
        moved = slot.update(accepted)
        return (moved[0], moved[1], slot.ema) if moved else None
