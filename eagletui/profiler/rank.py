"""What one rank's trace summarises to: the kernel time per category, per step and per decode cycle
(:class:`RankSummary`), and its JSON (contract: docs/trace-json.md).

Apart from the fold that builds it (:mod:`eagletui.profiler.summary`) because the step profile, the cycle
model and ``eagletui trace`` read these figures without folding anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagletui.core.cycle.model import cpu_bound, kernel_share
from eagletui.profiler.categories import ORDER
from eagletui.profiler.cycles import SPEC_PARTS

SCHEMA = 2


@dataclass
class CategoryTotal:
    us: float = 0.0
    count: int = 0


@dataclass
class StepSummary:
    """One outermost stage range (a part of a cycle, or of a prefill batch)."""

    name: str
    gpu_ms: float
    kernel_ms: float
    categories: dict[str, float]
    stage: str = "decode"
    #: stage ranges nested in this one: a draft's own forwards when it drafted eagerly (a CUDA-graph
    #: replay writes none), which the cycle model reads as "each draft step costs its launches"
    forwards: int = 0
    #: the kernels one CUDA-graph launch replayed inside this range: their GPU span (first start to
    #: last end: what the replayed forwards cost the GPU, its gaps included), how many, and the time from
    #: the range's start to the replay (the eager preparation before it: CPU-bound, inflated by the
    #: profiler like every gap)
    replay_ms: float = 0.0
    replay_kernels: int = 0
    lead_ms: float = 0.0
    #: how long the GPU idles from this part's replay end to the next part's replay start in the same
    #: cycle, less the kernels run between: what the replay could grow by (more draft forwards) without
    #: delaying the next part, because the CPU is still preparing it (profiled: inflated as every gap)
    idle_after_ms: float = 0.0


@dataclass
class CycleSummary:
    """One decode batch: a speculative cycle (draft + verify + draft extend, ``kind`` "spec") or a plain
    decode step (``kind`` "decode"). ``gpu_ms`` runs from its first part's start to its last part's end;
    its kernels include those between its parts (tree building, acceptance)."""

    kind: str
    bs: int | None
    complete: bool
    gpu_ms: float
    kernel_ms: float
    categories: dict[str, float]
    parts: list[StepSummary]
    #: from this cycle's start to the next decode cycle's (None for the last one): the profiled cycle
    #: time, which the profiler inflates (the cycle model scales its CPU-bound parts by measured ÷ this)
    period_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "bs": self.bs,
            "complete": self.complete,
            "gpu_ms": round(self.gpu_ms, 4),
            "kernel_ms": round(self.kernel_ms, 4),
            "categories": {k: round(v, 4) for k, v in self.categories.items()},
            "parts": [_step_json(p) for p in self.parts],
            "period_ms": None if self.period_ms is None else round(self.period_ms, 4),
        }


def _step_json(s: StepSummary) -> dict[str, Any]:
    return {
        "name": s.name,
        "stage": s.stage,
        "gpu_ms": round(s.gpu_ms, 4),
        "kernel_ms": round(s.kernel_ms, 4),
        "categories": {k: round(v, 4) for k, v in s.categories.items()},
        "replay_ms": round(s.replay_ms, 4),
        "replay_kernels": s.replay_kernels,
        "lead_ms": round(s.lead_ms, 4),
        "idle_after_ms": round(s.idle_after_ms, 4),
    }


def _zero() -> dict[str, float]:
    return dict.fromkeys((c.label for c in ORDER), 0.0)


def _median(xs: list[float]) -> float:
    ys = sorted(xs)
    n = len(ys)
    if not n:
        return 0.0
    return ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2


@dataclass
class RankSummary:
    file: str
    rank: int | None
    kernel_ms: float
    categories: dict[str, CategoryTotal]
    steps: list[StepSummary] | None
    kernels: int
    events: int
    top_kernels: list[tuple[str, str, float, int]] = field(default_factory=list)
    #: events skipped for a bad ``ts``/``dur`` (NaN, inf, "x", negative): said, never a traceback
    skipped: int = 0
    cycles: list[CycleSummary] = field(default_factory=list)
    prefill: list[CycleSummary] = field(default_factory=list)  # prefill batches (kept out of decode)
    outside_ms: float = 0.0  # kernel time in no stage range (scheduler, result copies)
    graph_kernels: int = 0  # kernels replayed by a CUDA graph launch (judged by their names)

    @property
    def decode_cycles(self) -> list[CycleSummary]:
        """The complete decode cycles: what every per-cycle figure averages."""
        return [c for c in self.cycles if c.complete]

    def per_cycle(self) -> dict[str, float] | None:
        """Kernel ms per complete decode cycle by category; None when the trace has no cycle."""
        done = self.decode_cycles
        if not done:
            return None
        return {c.label: sum(x.categories[c.label] for x in done) / len(done) for c in ORDER}

    def parts_by_bs(self) -> dict[int, dict[str, Any]]:
        """:meth:`parts_json` of the complete cycles at each batch size (the cycle model reads the one
        nearest the concurrency it predicts for: a profile's load runs at several)."""
        sizes = sorted({c.bs for c in self.decode_cycles if c.bs is not None})
        return {bs: self.parts_json([c for c in self.decode_cycles if c.bs == bs]) for bs in sizes}

    def parts_json(self, cycles: list[CycleSummary] | None = None) -> dict[str, Any]:
        """Per part of the cycle (draft, verify, draft extend; or decode): mean over the complete cycles
        (or over ``cycles``)."""
        done = self.decode_cycles if cycles is None else cycles
        out: dict[str, Any] = {}
        stages = [
            s for s in (*SPEC_PARTS, "decode", "between") if any(p.stage == s for c in done for p in c.parts)
        ]
        for stage in stages:
            ps = [p for c in done for p in c.parts if p.stage == stage]
            n = len(done)
            out[stage] = {
                "count": len(ps),
                "gpu_ms": round(sum(p.gpu_ms for p in ps) / n, 4),
                "kernel_ms": round(sum(p.kernel_ms for p in ps) / n, 4),
                "forwards": round(sum(p.forwards for p in ps) / n, 4),
                "replay_ms": round(sum(p.replay_ms for p in ps) / n, 4),
                "replay_kernels": round(sum(p.replay_kernels for p in ps) / n, 4),
                "lead_ms": round(sum(p.lead_ms for p in ps) / n, 4),
                "idle_after_ms": round(sum(p.idle_after_ms for p in ps) / n, 4),
                # the part's communication kernels: "verify 30 ms, of which 25 ms NCCL" (step bars, why)
                "comm_ms": round(sum(p.categories.get("communication", 0.0) for p in ps) / n, 4),
                # the dense GEMMs: a forward's weight reads, which a no-spec step pays too (cycle.fit)
                "gemm_ms": round(sum(p.categories.get("gemm", 0.0) for p in ps) / n, 4),
                "categories": {c.label: round(sum(p.categories[c.label] for p in ps) / n, 4) for c in ORDER},
            }
        return out

    def period_ms(self, cycles: list[CycleSummary] | None = None) -> float | None:
        """The mean profiled period of the complete cycles (or of ``cycles``) that have one."""
        done = self.decode_cycles if cycles is None else cycles
        periods = [c.period_ms for c in done if c.period_ms is not None and c.period_ms > 0]
        return sum(periods) / len(periods) if periods else None

    def span_ms(self, cycles: list[CycleSummary] | None = None) -> float | None:
        """The mean span of the complete cycles (or of ``cycles``): first part's start to last part's end,
        what a cycle's kernel share is taken of (:func:`~eagletui.core.cycle.model.kernel_share`)."""
        done = self.decode_cycles if cycles is None else cycles
        return sum(c.gpu_ms for c in done) / len(done) if done else None

    def decode_json(self) -> dict[str, Any] | None:
        done = self.decode_cycles
        if not self.cycles:
            return None
        per = self.per_cycle() or _zero()
        kinds = sorted({c.kind for c in done})
        span = self.span_ms(done) or 0.0
        share = kernel_share(sum(per.values()), span)
        return {
            "cycles": len(done),
            "partial": len(self.cycles) - len(done),
            "kind": kinds[0] if len(kinds) == 1 else ("mixed" if kinds else None),
            "kernel_ms": round(sum(c.kernel_ms for c in done), 4),
            "kernel_ms_per_cycle": round(sum(per.values()), 4),
            "median_kernel_ms": round(_median([c.kernel_ms for c in done]), 4),
            "gpu_ms_per_cycle": round(span, 4),
            "kernel_share": round(share, 4) if share is not None else None,
            "bound": None if share is None else ("cpu" if cpu_bound(share) else "gpu"),
            "categories": {k: round(v, 4) for k, v in per.items()},
            "batch_sizes": sorted({c.bs for c in done if c.bs is not None}),
            "parts": self.parts_json(),
        }

    def share(self, cat: str) -> float:
        total = self.kernel_ms
        return (self.categories[cat].us / 1000.0) / total if total > 0 else 0.0

    def ms(self, cat: str) -> float:
        return self.categories[cat].us / 1000.0

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "rank": self.rank,
            "kernel_ms": round(self.kernel_ms, 4),
            "kernels": self.kernels,
            "skipped": self.skipped,
            "categories": {
                c.label: {
                    "ms": round(self.ms(c.label), 4),
                    "share": round(self.share(c.label), 4),
                    "count": self.categories[c.label].count,
                }
                for c in ORDER
            },
            "steps": None if self.steps is None else [_step_json(s) for s in self.steps],
            "decode": self.decode_json(),
            "cycles": [c.to_json() for c in self.cycles],
            "prefill": {
                "batches": len(self.prefill),
                "kernel_ms": round(sum(p.kernel_ms for p in self.prefill), 4),
                "gpu_ms": round(sum(p.gpu_ms for p in self.prefill), 4),
            },
            "outside_ms": round(self.outside_ms, 4),
            "graph_kernels": self.graph_kernels,
            "top_kernels": [
                {"name": n, "category": c, "ms": round(ms, 4), "count": k} for n, c, ms, k in self.top_kernels
            ],
        }
