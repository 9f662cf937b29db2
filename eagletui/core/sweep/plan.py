"""A sweep's plan: which launches, in which order, what each benchmarks, and how long it all takes.

**Plan by relaunch.** A launch costs ~10 minutes on a big host and a benchmark seconds to minutes, so
the unit of the plan is a *launch*: one per server config (a variant), each benchmarking every client
point (concurrency, prompt set, lengths, request rate) of the sweep before the next launch. A sweep of
3 server configs × 4 concurrencies is 3 launches and 12 cells, never 12 launches.

**Order for information and fairness.**

* the baseline (variant 1, the profile as declared) first: every Δ is measured against it;
* then the variants closest to it first — those that change one factor, then two … (declared order
  within a distance): after a few launches every main effect has its first estimate, and a sweep cut
  short has measured what tells most;
* launches of the same server config (a variant list may repeat one) as far apart as the plan allows;
* the baseline **again at the end** when the drift check is on (``drift_check``; by default when it
  adds at most a quarter to the launches): its two measurements, hours apart, say whether the host
  drifted under the sweep.

Within a launch the cells are benchmarked in rounds — every cell once, then again those that still
need runs — so slow drift within a launch spreads over all cells instead of favouring the first; the
first benchmark of each cell warms up at its own concurrency.

**ETA.** A launch's time comes from the phase history (median of earlier launches of the same key,
:mod:`eagletui.core.phases.history`) or this sweep's own launches; a benchmark's from this sweep's
benchmarks at that client point (the first of a cell, with its warm-up, apart from the rest); the
time between launches (stop, GPU memory release, launch command) from this sweep's. The total is a
list schedule of the remaining launches over the hosts or parallel jobs (:func:`makespan`).

Pure: the session layer (:mod:`eagletui.session.sweep.queue`) feeds it the queue and the history.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any


def config_key(settings: Mapping[str, Any]) -> str:
    """Two variants with this key equal launch the same server."""
    return json.dumps({k: settings[k] for k in sorted(settings)}, sort_keys=True, default=str)


_AS_PROFILE = object()  # a toggle a variant does not mention: the profile's value (not "unset")


def distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    """How many toggles two variants set differently (an unmentioned toggle is the profile's value,
    which differs from setting it to "unset")."""
    keys = set(a) | set(b)
    return sum(1 for k in keys if a.get(k, _AS_PROFILE) != b.get(k, _AS_PROFILE))


def launch_order(variants: Sequence[Mapping[str, Any]]) -> list[int]:
    """The run order of variants (their settings, index 0 the baseline): baseline, then by distance
    from it (declared order within a distance), with launches of the same config spread apart."""
    if not variants:
        return []
    base = variants[0]
    rest = sorted(range(1, len(variants)), key=lambda i: (distance(variants[i], base), i))
    first: list[int] = [0]
    later: list[int] = []  # second and further launches of a config already planned
    seen = {config_key(base)}
    for i in rest:
        k = config_key(variants[i])
        (later if k in seen else first).append(i)
        seen.add(k)
    order = list(first)
    # each repeat launch goes as far as possible from the launches of its config already placed, never
    # before the baseline (the first launch: every Δ is measured against it; a real sweep on the lent
    # H200 once launched a repeat of a variant first)
    for i in later:
        k = config_key(variants[i])
        same = [p for p, j in enumerate(order) if config_key(variants[j]) == k]
        best_pos, best_gap = len(order), -1
        for pos in range(1, len(order) + 1):
            gap = min(abs(pos - p) if p < pos else p - pos + 1 for p in same)
            if gap > best_gap:
                best_pos, best_gap = pos, gap
        order.insert(best_pos, i)
    return order


def median(values: Sequence[float]) -> float | None:
    xs = sorted(v for v in values if isinstance(v, int | float) and math.isfinite(v) and v >= 0)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else 0.5 * (xs[mid - 1] + xs[mid])


def makespan(pending: Sequence[float], busy: Sequence[float] = (), workers: int = 1) -> float:
    """Seconds until ``pending`` launches (each its estimated seconds, in run order) are done when
    ``workers`` hosts or jobs take the next one as each frees up; ``busy`` are the seconds left of the
    launches in flight (one worker each)."""
    workers = max(1, workers, len(busy))
    free = sorted([max(0.0, b) for b in busy] + [0.0] * (workers - len(busy)))
    heapq.heapify(free)
    end = max(free) if free else 0.0
    for p in pending:
        t = heapq.heappop(free) + max(0.0, p)
        end = max(end, t)
        heapq.heappush(free, t)
    return end


def fmt_duration(seconds: float | None) -> str:
    """``1:02:03``, ``12:30``, ``?`` (unknown)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    s = int(round(max(0.0, seconds)))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
