"""The sweep's ETA: by launch, from what this sweep measured, else the phase history, over its workers.

Apart from the queue so the estimate reads as one piece: learned launch time, runs each cell still
needs × seconds per benchmark at that client point, time between launches, then a list schedule over
the hosts or jobs (:func:`~eagletui.core.sweep.plan.makespan`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eagletui.core.sweep.plan import makespan, median
from eagletui.session.sweep.cells import (
    DONE,
    FAILED,
    IN_FLIGHT,
    LAUNCHING,
    PENDING,
    SKIPPED,
    client_fingerprint,
)

if TYPE_CHECKING:
    from eagletui.session.sweep.cells import VariantState
    from eagletui.session.sweep.queue import SweepQueue


@dataclass(frozen=True)
class Eta:
    """The sweep's ETA: ``seconds`` (a lower bound while ``unknown`` lists missing estimates), the
    estimate per remaining launch, the workers it was divided over and the runs a cell is expected to
    take."""

    seconds: float
    unknown: list[str]
    per_launch: dict[int, float | None]
    workers: int
    runs_per_cell: float

    @property
    def complete(self) -> bool:
        return not self.unknown


def _hist(history: Any, key: str, phase: str) -> float | None:
    if history is None or not key:
        return None
    try:
        v = history.estimate(key, phase)
    except Exception:  # a history that cannot answer is no estimate, never a crash
        return None
    return float(v) if isinstance(v, int | float) else None


def _launch_hist(history: Any, key: str) -> float | None:
    fn = getattr(history, "launch_estimate", None)
    if fn is None or not key:
        return None
    try:
        v = fn(key)
    except Exception:
        return None
    return float(v) if isinstance(v, int | float) else None


def sweep_eta(q: SweepQueue, now: float, history: Any = None) -> Eta:
    """Seconds until the sweep is done, by launch: the learned launch time (this sweep's launches,
    else the phase history), the runs each cell still needs × this sweep's (or the history's)
    seconds per benchmark at that client point, the time between launches; then a list schedule
    over :attr:`workers` hosts or jobs."""
    policy = q.repeat_policy
    unknown: set[str] = set()
    over_meas = [v.overhead_s for v in q.variants if v.overhead_s is not None]
    overhead = median([x for x in over_meas if x is not None])
    if overhead is None:
        overhead = _hist(
            history, "sweep:" + (q.variants[0].launch_key if q.variants else ""), "overhead"
        )
    # runs a cell of an adaptive sweep still needs: as many as the cells decided so far took
    decided = [len(c.good) for v in q.variants for c in v.cells if c.stop]
    expect = sum(decided) / len(decided) if decided and policy.adaptive else float(policy.floor)
    first_s: dict[int, list[float]] = {}
    next_s: dict[int, list[float]] = {}
    for v in q.variants:
        for ci, c in enumerate(v.cells):
            for r in c.repeats:
                s = r.get("seconds")
                if isinstance(s, int | float) and s > 0:
                    (first_s if r.get("warm") else next_s).setdefault(ci, []).append(float(s))
    # a launch's benchmarks as a block, where no single run's time is known (older queues)
    blocks = [v.bench_s / max(1, len(v.cells)) for v in q.variants if v.state == DONE and v.bench_s]
    block = median(blocks)
    pending: list[float] = []
    busy: list[float] = []
    per_launch: dict[int, float | None] = {}
    # a worker's first launch stops nothing before it: no time between launches
    started = sum(1 for v in q.variants if v.launches or v.state in IN_FLIGHT)
    free_starts = max(0, q.workers - started)
    for i in q.order:
        v = q.variants[i]
        if v.state in (DONE, FAILED, SKIPPED):
            continue
        total = 0.0
        if v.state == PENDING or v.state == LAUNCHING and not v.launch_s:
            est = _launch_estimate(q, v, history)
            if est is None:
                unknown.add("launch time (no launch of this config measured yet)")
            else:
                total += est
            if v.state == PENDING and free_starts > 0:
                free_starts -= 1
            elif overhead is not None and v.state == PENDING:
                total += overhead
        for ci, c in enumerate(v.cells):
            if c.stop:
                continue
            good = len(c.good)
            want = policy.repeats if not policy.adaptive else max(policy.floor, expect)
            left = max(0.0, want - good)
            if left <= 0:
                continue
            fkey = "sweep-bench:" + v.launch_key + "|" + client_fingerprint(c.client)
            f = median(first_s.get(ci, [])) or _hist(history, fkey, "first")
            n = median(next_s.get(ci, [])) or _hist(history, fkey, "next") or f
            f = f or n
            if (f is None or n is None) and block is not None and good == 0:
                total += block
                continue
            if f is None or n is None:
                unknown.add(f"benchmark time at {c.label} (none measured yet)")
                continue
            total += (f + (left - 1) * n) if good == 0 or v.state == PENDING else left * n
        if v.state in IN_FLIGHT and v.started_wall is not None:
            elapsed = max(0.0, now - v.started_wall)
            total = max(0.0, total - (elapsed if v.state == LAUNCHING else 0.0))
            busy.append(total)
        else:
            pending.append(total)
        per_launch[i] = total
    seconds = makespan(pending, busy, q.workers)
    return Eta(seconds, sorted(unknown), per_launch, q.workers, expect)

def _launch_estimate(q: SweepQueue, v: VariantState, history: Any) -> float | None:
    """A launch's seconds: this sweep's launches of the same config key, else the history's
    (the sweep's own record, else the phase history's sum of medians), else any launch of this
    sweep."""
    same = median([w.launch_s for w in q.variants if w.launch_s and w.launch_key == v.launch_key])
    if same is not None:
        return same
    if v.launch_key:
        learned = _hist(history, "sweep:" + v.launch_key, "launch") or _launch_hist(history, v.launch_key)
        if learned is not None:
            return learned
    return median([w.launch_s for w in q.variants if w.launch_s])
