"""Fold one rank's trace events into a kernel-time breakdown: per category, per step, and across ranks.

One pass over the events (they arrive in file order, not time order), keeping only compact arrays:
per kernel its start, duration and name category; the launching op's category by torch's
``External id``; the launch call (``cudaLaunchKernel``, ``cuLaunchKernelEx``, …) by ``correlation``;
and the Python/op ranges whose names say something (attention, moe, …). Kernels whose name says
nothing are then resolved through their op, or through the innermost telling range around their launch.
Every kernel lands in exactly one category, so the categories always add up to the plain sum of kernel
durations.

Under CUDA graphs a kernel has no launching op: it was replayed by a ``cudaGraphLaunch`` that launched
hundreds of kernels of every kind, so the frames around that launch say nothing about any one of them;
such a kernel is judged by its own name only (SGLang's triton attention names are known, see
:mod:`eagletui.profiler.categories`).

Steps are the outermost GPU-side stage ranges (``gpu_user_annotation``: SGLang's ``draft``,
``step[TARGET_VERIFY bs=3]``, ``draft_extend``, ``step[EXTEND bs=1 toks=41]``, or a plain
``decode_step_3``); :mod:`eagletui.profiler.cycles` names their stages and groups them into speculative
decode **cycles** (draft + verify + draft extend) and prefill batches, which stay out of every decode
figure. Kernels are assigned by start time. Rank skew: a rank's communication time beyond the fastest
rank's is time spent waiting for the slowest rank, not transfer.
"""

from __future__ import annotations

import math
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from eagletui.profiler.categories import ORDER, Category, by_kernel_name, by_op_name
from eagletui.profiler.cycles import Group, group, outermost
from eagletui.profiler.rank import SCHEMA, CategoryTotal, CycleSummary, RankSummary, StepSummary, _zero

_MAX_RANGES = 200_000  # GPU ranges kept per rank (a real 8-rank decode trace has a few hundred)
_RANK_IN_NAME = re.compile(r"-TP-(\d+)")
_LAUNCH = ("launch", "graphlaunch")  # cudaLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch, …
_RANGE_CATS = ("cpu_op", "python_function", "user_annotation")


class RankFold:
    """Collects one file's events; :meth:`result` resolves and totals them."""

    def __init__(self, file: str, rank: int | None = None) -> None:
        self.file = file
        self.rank = rank
        self.events = 0
        #: events skipped for a timestamp or duration that is not a finite, non-negative number
        self.skipped = 0
        # per kernel
        self.k_ts = array("d")
        self.k_dur = array("d")
        self.k_cat = array("b")
        self.k_ext = array("q")
        self.k_corr = array("q")
        self.k_name = array("l")
        self.names: dict[str, int] = {}
        self.name_list: list[str] = []
        # launching ops by External id (only those whose name tells a category)
        self.op_cat: dict[int, int] = {}
        # launch calls by correlation → (tid, ts)
        self.l_corr = array("q")
        self.l_tid = array("q")
        self.l_ts = array("d")
        self.l_graph = array("b")  # 1: a CUDA graph launch (replays many kernels; no launching op)
        # op / Python / annotation ranges per thread: (start, end, category or OTHER)
        self.ranges: dict[int, tuple[array, array, array]] = {}
        # GPU-side ranges (stages are picked from them at the end)
        self.steps: list[tuple[float, float, str]] = []

    def _name_id(self, name: str) -> int:
        i = self.names.get(name)
        if i is None:
            i = self.names[name] = len(self.name_list)
            self.name_list.append(name)
        return i

    def add(self, ev: dict[str, Any]) -> None:
        self.events += 1
        cat = ev.get("cat")
        if cat == "kernel" or cat == "Kernel":
            dur = _num(ev.get("dur"))
            ts = _num(ev.get("ts"))
            if dur is None or ts is None or dur < 0:
                self.skipped += 1
                return
            name = str(ev.get("name", ""))
            args: dict[str, Any] = ev["args"] if isinstance(ev.get("args"), dict) else {}
            nid = self._name_id(name)
            self.k_ts.append(ts)
            self.k_dur.append(dur)
            self.k_cat.append(int(by_kernel_name(name)))
            self.k_ext.append(_int(args.get("External id")))
            self.k_corr.append(_int(args.get("correlation")))
            self.k_name.append(nid)
            return
        if cat in _RANGE_CATS:
            name = str(ev.get("name", ""))
            c = by_op_name(_telling_part(name) if cat == "python_function" else name)
            args = ev["args"] if isinstance(ev.get("args"), dict) else {}
            if cat == "cpu_op" and c is not Category.OTHER:
                ext = _int(args.get("External id"))
                if ext >= 0:
                    self.op_cat[ext] = int(c)
            ts, dur, tid = _num(ev.get("ts")), _num(ev.get("dur")), _int(ev.get("tid"))
            if ts is None or dur is None or dur < 0:
                if "dur" in ev or "ts" in ev:
                    self.skipped += 1
            else:
                starts, ends, cats = self.ranges.setdefault(tid, (array("d"), array("d"), array("b")))
                starts.append(ts)
                ends.append(ts + dur)
                cats.append(int(c))
            return
        if cat in ("cuda_runtime", "cuda_driver"):
            name = str(ev.get("name", "")).lower()
            if not any(w in name for w in _LAUNCH):
                return
            args = ev["args"] if isinstance(ev.get("args"), dict) else {}
            corr = _int(args.get("correlation"))
            ts = _num(ev.get("ts"))
            if corr >= 0 and ts is not None:
                self.l_corr.append(corr)
                self.l_tid.append(_int(ev.get("tid")))
                self.l_ts.append(ts)
                self.l_graph.append(1 if "graphlaunch" in name else 0)
            return
        if cat == "gpu_user_annotation":
            name = str(ev.get("name", ""))
            ts, dur = _num(ev.get("ts")), _num(ev.get("dur"))
            if ts is not None and dur is not None and dur >= 0:
                if len(self.steps) < _MAX_RANGES:
                    self.steps.append((ts, ts + dur, name))
            else:
                self.skipped += 1

    def result(self) -> RankSummary:
        n = len(self.k_ts)
        cats, replays = self._resolve()
        graph_kernels = sum(replays)
        totals = {c.label: CategoryTotal() for c in ORDER}
        per_name: dict[tuple[int, int], list[float]] = {}
        labels = {int(c): c.label for c in Category}
        for i in range(n):
            t = totals[labels[cats[i]]]
            t.us += self.k_dur[i]
            t.count += 1
            slot = per_name.setdefault((self.k_name[i], cats[i]), [0.0, 0])
            slot[0] += self.k_dur[i]
            slot[1] += 1
        kernel_us = sum(self.k_dur)
        top = sorted(per_name.items(), key=lambda kv: -kv[1][0])[:10]
        summary = RankSummary(
            file=self.file,
            rank=self.rank,
            kernel_ms=kernel_us / 1000.0,
            categories=totals,
            steps=None,
            kernels=n,
            events=self.events,
            skipped=self.skipped,
            top_kernels=[(self.name_list[k], labels[c], v[0] / 1000.0, int(v[1])) for (k, c), v in top],
            graph_kernels=graph_kernels,
        )
        self._stages(summary, cats, labels, replays)
        return summary

    def _resolve(self) -> tuple[array, array]:
        """Each kernel's category, and which kernels a CUDA graph launch replayed."""
        cats = array("b", self.k_cat)
        replays = array("b", bytes(len(cats)))
        other = int(Category.OTHER)
        launches = {corr: j for j, corr in enumerate(self.l_corr)}
        sorted_ranges: dict[int, tuple[list[float], list[float], list[int]]] | None = None
        for i in range(len(cats)):
            j = launches.get(self.k_corr[i]) if self.k_corr[i] >= 0 else None
            replayed = j is not None and self.l_graph[j] == 1
            replays[i] = replayed
            if cats[i] != other or replayed:
                continue  # a graph replay has no launching op: its kernel's own name is all there is
            c = self.op_cat.get(self.k_ext[i])
            if c is not None:
                cats[i] = c
                continue
            if j is None:
                continue
            if sorted_ranges is None:
                sorted_ranges = _sort_ranges(self.ranges)
            r = sorted_ranges.get(self.l_tid[j])
            if r is not None:
                cats[i] = _innermost(r, self.l_ts[j])
        return cats, replays

    def _idle_after(self, groups: list[Group], replay: list[list[list[float]]]) -> dict[tuple[int, int], float]:
        """Per (group, part) with a graph replay followed by another part's replay in its cycle: the GPU's
        idle ms between the two (:attr:`StepSummary.idle_after_ms`)."""
        order = sorted(range(len(self.k_ts)), key=self.k_ts.__getitem__)
        starts = [self.k_ts[i] for i in order]
        ends = [self.k_ts[i] + self.k_dur[i] for i in order]
        out: dict[tuple[int, int], float] = {}
        for gi, g in enumerate(groups):
            ordered = sorted(range(len(g.parts)), key=lambda i: g.parts[i].start)
            for a, b in zip(ordered, ordered[1:], strict=False):
                ra, rb = replay[gi][a], replay[gi][b]
                if ra[2] and rb[2] and rb[0] > ra[1]:
                    out[(gi, a)] = _idle_between(starts, ends, ra[1], rb[0]) / 1000.0
        return out

    def _stages(self, out: RankSummary, cats: array, labels: dict[int, str], replays: array) -> None:
        """Steps (the outermost stage ranges), decode cycles and prefill batches, with their kernels."""
        parts = outermost(self.steps)
        if not parts:
            out.outside_ms = out.kernel_ms
            return
        groups = group(parts)
        # Time slots in order: each part, and the gap inside a group between two of its parts.
        slots: list[tuple[float, float, int, int]] = []  # (start, end, group index, part index or -1)
        for gi, g in enumerate(groups):
            ordered = sorted(g.parts, key=lambda p: p.start)
            for pi, p in enumerate(ordered):
                slots.append((p.start, p.end, gi, g.parts.index(p)))
                if pi + 1 < len(ordered) and ordered[pi + 1].start > p.end:
                    slots.append((p.end, ordered[pi + 1].start, gi, -1))
        slots.sort()
        starts = [sl[0] for sl in slots]
        part_acc = [[_zero() for _ in g.parts] for g in groups]
        gap_acc = [_zero() for _ in groups]
        # per part: the replayed kernels' first start, last end and count
        replay = [[[math.inf, -math.inf, 0] for _ in g.parts] for g in groups]
        outside = 0.0
        for i in range(len(self.k_ts)):
            ts = self.k_ts[i]
            k = bisect_right(starts, ts) - 1
            ms = self.k_dur[i] / 1000.0
            if k < 0 or ts > slots[k][1]:
                outside += ms
                continue
            _s, _e, gi, pi = slots[k]
            (part_acc[gi][pi] if pi >= 0 else gap_acc[gi])[labels[cats[i]]] += ms
            if pi >= 0 and replays[i]:
                span = replay[gi][pi]
                span[0] = min(span[0], ts)
                span[1] = max(span[1], ts + self.k_dur[i])
                span[2] += 1
        out.outside_ms = outside
        idle = self._idle_after(groups, replay)
        steps: list[tuple[float, StepSummary]] = []
        for gi, g in enumerate(groups):
            summaries = [
                StepSummary(
                    name=p.name,
                    gpu_ms=(p.end - p.start) / 1000.0,
                    kernel_ms=sum(acc.values()),
                    categories=acc,
                    stage=p.stage,
                    forwards=len(p.nested),
                    replay_ms=(rp[1] - rp[0]) / 1000.0 if rp[2] else 0.0,
                    replay_kernels=int(rp[2]),
                    lead_ms=(rp[0] - p.start) / 1000.0 if rp[2] else 0.0,
                    idle_after_ms=idle.get((gi, pi), 0.0),
                )
                for pi, (p, acc, rp) in enumerate(zip(g.parts, part_acc[gi], replay[gi], strict=True))
            ]
            steps += [(p.start, st) for p, st in zip(g.parts, summaries, strict=True)]
            summary = _cycle(g, summaries, gap_acc[gi])
            (out.prefill if g.kind == "prefill" else out.cycles).append(summary)
        out.steps = [st for _, st in sorted(steps, key=lambda x: x[0])]
        _periods(groups, out.cycles)


def _idle_between(starts: list[float], ends: list[float], a: float, b: float) -> float:
    """Microseconds from ``a`` to ``b`` in which no kernel ran (``starts`` sorted, ``ends`` matching)."""
    busy, edge = 0.0, a
    for i in range(bisect_right(starts, a), bisect_right(starts, b)):
        lo, hi = max(starts[i], edge), min(ends[i], b)
        if hi > lo:
            busy += hi - lo
            edge = hi
    return max(0.0, (b - a) - busy)


def _cycle(g: Group, summaries: list[StepSummary], gap: dict[str, float]) -> CycleSummary:
    """One cycle or prefill batch: its parts, and the kernels between them as a part of their own."""
    cyc_parts = list(summaries)
    if sum(gap.values()) > 0:
        cyc_parts.append(
            StepSummary(
                name="between parts", gpu_ms=0.0, kernel_ms=sum(gap.values()), categories=gap, stage="between"
            )
        )
    total = _zero()
    for sp in cyc_parts:
        for c, v in sp.categories.items():
            total[c] += v
    return CycleSummary(
        kind=g.kind,
        bs=g.bs,
        complete=g.complete,
        gpu_ms=(g.end - g.start) / 1000.0,
        kernel_ms=sum(total.values()),
        categories=total,
        parts=cyc_parts,
    )


def _periods(groups: list[Group], cycles: list[CycleSummary]) -> None:
    """Each decode cycle's period: to the next decode cycle's start, where nothing else ran between
    (a prefill batch in between is not part of the cycle)."""
    decode = [g for g in groups if g.kind != "prefill"]
    order = sorted(range(len(groups)), key=lambda gi: groups[gi].start)
    cycle_of = {id(g): c for g, c in zip(decode, cycles, strict=True)}
    for a, b in zip(order, order[1:], strict=False):
        ga, gb = groups[a], groups[b]
        if ga.kind != "prefill" and gb.kind == ga.kind and ga.complete:
            cycle_of[id(ga)].period_ms = (gb.start - ga.start) / 1000.0


def _sort_ranges(
    ranges: dict[int, tuple[array, array, array]],
) -> dict[int, tuple[list[float], list[float], list[int]]]:
    out = {}
    for tid, (s, e, c) in ranges.items():
        order = sorted(range(len(s)), key=s.__getitem__)
        out[tid] = ([s[i] for i in order], [e[i] for i in order], [c[i] for i in order])
    return out


def _innermost(
    r: tuple[list[float], list[float], list[int]], ts: float, depth: int = 8, scan: int = 512
) -> int:
    """The category told by the nearest of the ``depth`` innermost ranges around ``ts``: the frames that
    launched a kernel, not the forward pass or scheduler loop far above it (those enclose everything)."""
    starts, ends, cats = r
    j = bisect_right(starts, ts) - 1
    stop = max(-1, j - scan)
    seen = 0
    while j > stop and seen < depth:
        if ends[j] >= ts:
            seen += 1
            if cats[j]:
                return cats[j]
        j -= 1
    return int(Category.OTHER)


_FRAME = re.compile(r"^(?P<path>[^()]*?)(?:\.py)?\(\d+\): (?P<func>.*)$")


@lru_cache(maxsize=65536)
def _telling_part(name: str) -> str:
    """``sglang/…/extend_attention.py(664): extend_attention_fwd`` → ``extend_attention extend_attention_fwd``:
    the file's own name and the function, not the directories (``distributed/`` holds far more than
    communication)."""
    m = _FRAME.match(name)
    if not m:
        return name
    stem = m.group("path").rsplit("/", 1)[-1]
    return f"{stem} {m.group('func')}"


#: A timestamp or duration in µs past this (3000 years; torch writes epoch µs, ~1.8e15) is not from
#: a profiler: the event is skipped.
MAX_US = 1e17


def _num(v: Any) -> float | None:
    """A finite number of µs (a numeric string too), or None: NaN, inf, "x" and 1e308 are unknown."""
    if isinstance(v, bool):
        return None
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return None
    if isinstance(v, (int, float)):
        return float(v) if -MAX_US <= v <= MAX_US else None  # NaN compares false
    return None


def _int(v: Any) -> int:
    if isinstance(v, bool) or v is None:
        return -1
    try:
        return int(v)
    except (TypeError, ValueError):
        return -1


def rank_from(file: str, meta: dict[str, Any]) -> int | None:
    """The TP rank: SGLang's file name (``…-TP-3-…``) first, else torch's ``distributedInfo.rank``."""
    m = _RANK_IN_NAME.search(file)
    if m:
        return int(m.group(1))
    info = meta.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"])
    return None


def summarize_events(file: str, events: Iterable[dict[str, Any]], rank: int | None = None) -> RankSummary:
    fold = RankFold(file, rank)
    for ev in events:
        fold.add(ev)
    return fold.result()


def skew(ranks: list[RankSummary]) -> dict[str, Any] | None:
    """Communication time beyond the fastest rank's, per rank: waiting for the slowest, not transfer."""
    if len(ranks) < 2:
        return None
    comm = [r.ms("communication") for r in ranks]
    fastest = min(comm)
    per = [
        {"rank": r.rank, "file": r.file, "communication_ms": round(c, 4), "wait_ms": round(c - fastest, 4)}
        for r, c in zip(ranks, comm, strict=True)
    ]
    kernel = [r.kernel_ms for r in ranks]
    return {
        "fastest_communication_ms": round(fastest, 4),
        "max_wait_ms": round(max(comm) - fastest, 4),
        "kernel_ms_spread": round(max(kernel) - min(kernel), 4),
        "ranks": per,
    }


def report_json(ranks: list[RankSummary]) -> dict[str, Any]:
    return {"schema": SCHEMA, "ranks": [r.to_json() for r in ranks], "skew": skew(ranks)}


_PART_FIGURES = (
    "gpu_ms", "kernel_ms", "forwards", "replay_ms", "replay_kernels", "lead_ms", "idle_after_ms", "comm_ms",
    "gemm_ms",
)


def _mean_parts(per_rank: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Each part's GPU span, kernel ms, nested forwards and graph replay per cycle
    (:meth:`RankSummary.parts_json`), averaged over the ranks (a part a rank lacks counts as 0 there)."""
    acc: dict[str, dict[str, float]] = {}
    for parts in per_rank:
        for stage, d in parts.items():
            a = acc.setdefault(stage, dict.fromkeys(_PART_FIGURES, 0.0))
            for k in a:
                a[k] += d.get(k, 0.0) / len(per_rank)
    return {k: {kk: round(vv, 4) for kk, vv in v.items()} for k, v in acc.items()}


def _rank_mean(periods: list[float | None]) -> float | None:
    """The ranks' mean of a per-rank figure, a cycle's period or span (None where any rank has none)."""
    if not periods or any(p is None for p in periods):
        return None
    return round(sum(p for p in periods if p is not None) / len(periods), 4)


def step_breakdown(ranks: list[RankSummary]) -> dict[str, Any]:
    """A small, recordable summary of one profile: GPU kernel ms **per decode cycle** by category (draft +
    verify + draft extend of a speculative server, one decode step of a plain one; prefill batches left
    out), averaged over the ranks, plus the rank skew. Where a trace marks no cycle, its whole kernel time
    counts as one step. What the step bars draw and a ``ProfileCaptured`` event carries."""
    if not ranks:
        return {}
    per_rank: list[dict[str, float]] = []
    cycles_seen: list[int] = []
    for r in ranks:
        per = r.per_cycle()
        cycles_seen.append(len(r.decode_cycles))
        per_rank.append(per if per is not None else {c.label: r.ms(c.label) for c in ORDER})
    cats = {c.label: sum(d[c.label] for d in per_rank) / len(per_rank) for c in ORDER}
    parts = _mean_parts([r.parts_json() for r in ranks])
    # the same per batch size, where every rank saw cycles of that size (ranks decode the same batches)
    by_bs: dict[str, dict[str, Any]] = {}
    per_rank_bs = [r.parts_by_bs() for r in ranks]
    for bs in sorted(set.intersection(*(set(p) for p in per_rank_bs))):
        by_bs[str(bs)] = {
            "cycles": min(sum(1 for c in r.decode_cycles if c.bs == bs) for r in ranks),
            **_mean_parts([p[bs] for p in per_rank_bs]),
        }
        period = _rank_mean([r.period_ms([c for c in r.decode_cycles if c.bs == bs]) for r in ranks])
        if period is not None:
            by_bs[str(bs)]["period_ms"] = period
        span = _rank_mean([r.span_ms([c for c in r.decode_cycles if c.bs == bs]) for r in ranks])
        if span is not None:
            by_bs[str(bs)]["cycle_ms"] = span
    sk = skew(ranks)
    return {
        "ranks": len(ranks),
        "steps": min(cycles_seen),  # decode cycles (kept under its old name: recorded sessions have it)
        "unit": "cycle"
        if min(cycles_seen) and any(r.cycles and r.cycles[0].kind == "spec" for r in ranks)
        else "step",
        "step_ms": round(sum(cats.values()), 4),
        "categories": {k: round(v, 4) for k, v in cats.items()},
        "parts": parts,
        "period_ms": _rank_mean([r.period_ms() for r in ranks]),
        # the cycle's span (first part's start to last part's end): what its kernel share is of
        "cycle_ms": _rank_mean([r.span_ms() for r in ranks]),
        "parts_by_bs": by_bs,
        "prefill_batches": min(len(r.prefill) for r in ranks),
        "skew_ms": sk["max_wait_ms"] if sk else 0.0,
    }


def decode_missing(summary: dict[str, Any]) -> str | None:
    """Why a DECODE profile's summary (:func:`step_breakdown`) cannot time a decode cycle: its trace holds
    prefill batches and no decode cycle or step, as when SGLang wrote a restarted profile over the DECODE
    trace (:mod:`eagletui.profiler.stage_lines`); None when it can (or when the trace marks no batches
    at all: its kernels then count as one step)."""
    prefills = summary.get("prefill_batches")
    if summary.get("steps") or not isinstance(prefills, int) or prefills <= 0:
        return None
    return (
        f"the DECODE trace holds no decode cycle, only {prefills} prefill batch(es): SGLang wrote a "
        "later profile over it, or the capture ended before decoding; take the step profile again"
    )
