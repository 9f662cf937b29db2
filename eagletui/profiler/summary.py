"""Fold one rank's trace events into a kernel-time breakdown: per category, per step, and across ranks.

One pass over the events (they arrive in file order, not time order), keeping only compact arrays:
per kernel its start, duration and name category; the launching op's category by torch's
``External id``; the launch call (``cudaLaunchKernel``, ``cuLaunchKernelEx``, …) by ``correlation``;
and the Python/op ranges whose names say something (attention, moe, …). Kernels whose name says
nothing are then resolved through their op, or through the innermost telling range around their launch.
Every kernel lands in exactly one category, so the categories always add up to the plain sum of kernel
durations.

Steps are the GPU-side ranges (``gpu_user_annotation``) whose name says step (``decode_step_3``,
SGLang's ``step[DECODE bs=8 toks=8]``); kernels are assigned by start time. Rank skew: a rank's
communication time beyond the fastest rank's is time spent waiting for the slowest rank, not transfer.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from eagletui.profiler.categories import ORDER, Category, by_kernel_name, by_op_name

SCHEMA = 1
_STEP = re.compile(r"step|forward|decode|extend|verify", re.IGNORECASE)
_RANK_IN_NAME = re.compile(r"-TP-(\d+)")
_LAUNCH = ("launch", "graphlaunch")  # cudaLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch, …
_RANGE_CATS = ("cpu_op", "python_function", "user_annotation")


@dataclass
class CategoryTotal:
    us: float = 0.0
    count: int = 0


@dataclass
class StepSummary:
    name: str
    gpu_ms: float
    kernel_ms: float
    categories: dict[str, float]


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
            "steps": None
            if self.steps is None
            else [
                {
                    "name": s.name,
                    "gpu_ms": round(s.gpu_ms, 4),
                    "kernel_ms": round(s.kernel_ms, 4),
                    "categories": {k: round(v, 4) for k, v in s.categories.items()},
                }
                for s in self.steps
            ],
            "top_kernels": [
                {"name": n, "category": c, "ms": round(ms, 4), "count": k} for n, c, ms, k in self.top_kernels
            ],
        }


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
        # op / Python / annotation ranges per thread: (start, end, category or OTHER)
        self.ranges: dict[int, tuple[array, array, array]] = {}
        # GPU step ranges
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
            return
        if cat == "gpu_user_annotation":
            name = str(ev.get("name", ""))
            ts, dur = _num(ev.get("ts")), _num(ev.get("dur"))
            if ts is not None and dur is not None and dur >= 0 and _STEP.search(name):
                self.steps.append((ts, ts + dur, name))
            elif _STEP.search(name):
                self.skipped += 1

    def result(self) -> RankSummary:
        n = len(self.k_ts)
        cats = self._resolve()
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
        return RankSummary(
            file=self.file,
            rank=self.rank,
            kernel_ms=kernel_us / 1000.0,
            categories=totals,
            steps=self._steps(cats, labels),
            kernels=n,
            events=self.events,
            skipped=self.skipped,
            top_kernels=[(self.name_list[k], labels[c], v[0] / 1000.0, int(v[1])) for (k, c), v in top],
        )

    def _resolve(self) -> array:
        cats = array("b", self.k_cat)
        other = int(Category.OTHER)
        launches: dict[int, int] | None = None
        sorted_ranges: dict[int, tuple[list[float], list[float], list[int]]] | None = None
        for i in range(len(cats)):
            if cats[i] != other:
                continue
            c = self.op_cat.get(self.k_ext[i])
            if c is not None:
                cats[i] = c
                continue
            if launches is None:
                launches = {corr: j for j, corr in enumerate(self.l_corr)}
                sorted_ranges = _sort_ranges(self.ranges)
            j = launches.get(self.k_corr[i])
            if j is None or sorted_ranges is None:
                continue
            r = sorted_ranges.get(self.l_tid[j])
            if r is not None:
                cats[i] = _innermost(r, self.l_ts[j])
        return cats

    def _steps(self, cats: array, labels: dict[int, str]) -> list[StepSummary] | None:
        if not self.steps:
            return None
        steps = sorted(self.steps)
        # keep only the outermost ranges: a step range may contain a named sub-range
        outer: list[tuple[float, float, str]] = []
        for s in steps:
            if outer and s[0] >= outer[-1][0] and s[1] <= outer[-1][1]:
                continue
            outer.append(s)
        starts = [s[0] for s in outer]
        acc = [dict.fromkeys((c.label for c in ORDER), 0.0) for _ in outer]
        for i in range(len(self.k_ts)):
            ts = self.k_ts[i]
            j = bisect_right(starts, ts) - 1
            if j >= 0 and ts <= outer[j][1]:
                acc[j][labels[cats[i]]] += self.k_dur[i] / 1000.0
        return [
            StepSummary(name=s[2], gpu_ms=(s[1] - s[0]) / 1000.0, kernel_ms=sum(a.values()), categories=a)
            for s, a in zip(outer, acc, strict=True)
        ]


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


def step_breakdown(ranks: list[RankSummary]) -> dict[str, Any]:
    """A small, recordable summary of one profile: GPU kernel ms **per decode step** by category,
    averaged over the ranks (per step where the trace marks steps, else over the whole trace as one),
    plus the rank skew. What the step bars draw and a ``ProfileCaptured`` event carries."""
    if not ranks:
        return {}
    per_rank: list[dict[str, float]] = []
    steps_seen: list[int] = []
    for r in ranks:
        n = len(r.steps) if r.steps else 1
        steps_seen.append(len(r.steps) if r.steps else 0)
        per_rank.append({c.label: r.ms(c.label) / n for c in ORDER})
    cats = {c.label: sum(d[c.label] for d in per_rank) / len(per_rank) for c in ORDER}
    sk = skew(ranks)
    return {
        "ranks": len(ranks),
        "steps": min(steps_seen),
        "step_ms": round(sum(cats.values()), 4),
        "categories": {k: round(v, 4) for k, v in cats.items()},
        "skew_ms": sk["max_wait_ms"] if sk else 0.0,
    }
