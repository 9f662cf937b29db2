"""The frontier: which launch serves the most users at the latency promised them.

Every tool a tuner would otherwise pick plots one shape (vLLM ``bench sweep plot_pareto``, AIPerf's
pareto sweep): per launch config, one point per load (concurrency), x = output tok/s per GPU (what the
hardware earns), y = what a user feels. Here y is the **decode tok/s per user**: 1000 ÷ the run's
per-token latency at the percentile its ``[slo]`` names (TPOT, else ITL; the median request's TPOT
without a per-token bound: :mod:`eagletui.core.runs.decode_axis` says why). It is the speed a TPOT or ITL
bound constrains, so the SLO is drawn as a line at 1000 ÷ the bound and a point under it is exactly a
point whose decode misses that bound. Output tok/s ÷ concurrency (``tok_s_per_user``, kept in the JSON)
is not the axis: it includes each request's time to first token and its queueing, so a per-token bound
is no floor on it. TTFT and e2e bounds have no line on this axis; the points missing them are greyed.

A point is on the **Pareto frontier** when no other point of the same host and workload is at least as
good on both axes and better on one; with an ``[slo]``, only points that meet it can be on the frontier,
and those that miss it are greyed. Speculation is the case where the answer flips along the curve: it
wins per user at low load and can lose per GPU at high load, so the spec settings and no-spec are
separate curves.

Like for like: one :class:`Frontier` per host, model, GPUs and workload (the prompts, lengths and
sampling; only the concurrency may differ); launches of the same config on it are one curve, their
repeats pooled (the percentile is over the pooled requests, as the SLO's judgement). x is output tok/s ÷
the launch's tensor-parallel GPUs. ``tok_s_per_user`` is Σ output tok/s ÷ concurrency (the per-request
tok/s the economics compare, :mod:`eagletui.core.runs.economics`); at a request rate (Poisson arrivals,
where the concurrency is only the client's cap) the output tokens ÷ the seconds requests were in flight.

:func:`frontiers` is the one function every view reads (the frontier view, ``sweep --json``'s
``frontier``, every export, the browser); :func:`slo_answer` is its sentence.

Pure: reads a :class:`~eagletui.core.runs.book.RunBook`, no I/O.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from eagletui.core.profile.slo import Slo
from eagletui.core.runs.decode_axis import DecodeAxis
from eagletui.core.runs.latency import LatencyRecords, SloStats, slo_stats
from eagletui.core.runs.max_rate import MaxRate, Trial, near_bound, sustainable
from eagletui.core.runs.run import Group, Run
from eagletui.core.stats.noise import band, outside
from eagletui.core.stats.sample import mean_stdev

if TYPE_CHECKING:
    from eagletui.core.runs.book import RunBook

#: workload keys that may differ between the points of one frontier (they are its x axis or its size)
_LOAD_KEYS = frozenset({"concurrency", "num_prompts", "warmup", "request_rate"})
#: config keys that say nothing about what was launched (thresholds travel in the snapshot)
_NOT_LAUNCH = frozenset({"verdict", "slo", "port"})


@dataclass(frozen=True)
class Point:
    """One load of one curve: its axes (means over the pooled repeats), its SLO numbers and marks."""

    concurrency: int
    tok_s_per_gpu: float
    tok_s_per_user: float
    runs: int
    req_s: float | None
    slo: SloStats
    on_frontier: bool = False
    #: the stdev of :attr:`served` over the repeats (None below two): the noise rule's input
    served_sd: float | None = None
    #: the request rate of Poisson arrivals (req/s; None: a closed loop at the concurrency), and whether
    #: a bound's percentile lay within the noise of it there (``[sweep.max_rate]``'s steps)
    rate: float | None = None
    near: bool = False
    #: the y axis: 1000 ÷ the per-token latency at the axis's percentile (None: not measured, not drawn)
    decode_tok_s_per_user: float | None = None

    @property
    def meets_slo(self) -> bool | None:
        return self.slo.meets_slo

    @property
    def served(self) -> float:
        """Requests/s served: goodput under the SLO when there is one and records to judge by, else all."""
        if self.slo.goodput_req_s is not None:
            return self.slo.goodput_req_s
        return self.req_s or 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "tok_s_per_gpu": self.tok_s_per_gpu,
            "decode_tok_s_per_user": self.decode_tok_s_per_user,
            "tok_s_per_user": self.tok_s_per_user,
            "runs": self.runs,
            "req_s": self.req_s,
            "on_frontier": self.on_frontier,
            "served_req_s": self.served,
            "served_req_s_stdev": self.served_sd,
            "request_rate": self.rate,
            **self.slo.to_json(),
        }


@dataclass(frozen=True)
class Curve:
    """One launch config's points over load, by concurrency."""

    label: str
    spec: bool
    launches: tuple[int, ...]
    points: tuple[Point, ...]
    #: the concurrency at which its speculation stops paying vs like-for-like no-spec, by the noise rule
    #: (the run book's economics); None: not a spec curve, or it pays everywhere measured
    crossover: int | None = None
    #: the economics' calls across concurrencies in words, by the noise rule (``within noise at 1 and 4``)
    across: str = ""
    #: the highest request rate meeting the SLO among its rate points (None: none measured, or no SLO)
    max_rate: MaxRate | None = None
    #: what sets it apart from the curves of the same speculation (``NCCL_ALGO=Tree``): its label then
    #: ends ``(#3)`` and the table's legend and the answer say this (""; one curve of its label)
    differs: str = ""

    @property
    def named(self) -> str:
        """The label with what sets it apart: ``EAGLE3 steps 3 (#3: NCCL_ALGO=Tree)``."""
        return (
            f"{self.label[:-1]}: {self.differs})" if self.differs and self.label.endswith(")") else self.label
        )

    def best_under_slo(self) -> Point | None:
        """The point serving the most requests/s (goodput with an SLO) among those meeting it: of the
        closed-loop points where there are any (a rate point's answer is :attr:`max_rate`'s)."""
        loads = [p for p in self.points if p.rate is None] or list(self.points)
        ok = [p for p in loads if p.meets_slo is not False and p.req_s is not None]
        return max(ok, key=lambda p: (p.served, p.concurrency), default=None)

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "spec": self.spec,
            "launches": list(self.launches),
            "crossover": self.crossover,
            "across": self.across,
            "max_rate": None if self.max_rate is None else self.max_rate.to_json(),
            "differs": self.differs,
            "points": [p.to_json() for p in self.points],
        }


@dataclass(frozen=True)
class Frontier:
    """The curves of one host and workload, with the frontier marked and the answer under the SLO."""

    target: str
    workload: dict[str, Any]
    slo: Slo | None
    curves: tuple[Curve, ...] = ()
    answer: str = ""
    #: the y axis (its SLO line, its name)
    axis: DecodeAxis = DecodeAxis()

    def frontier_points(self) -> list[tuple[Curve, Point]]:
        """The frontier, by tok/s per GPU (the way a table of it reads)."""
        pts = [(c, p) for c in self.curves for p in c.points if p.on_frontier]
        return sorted(pts, key=lambda cp: cp[1].tok_s_per_gpu)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "workload": self.workload,
            "slo": self.slo.to_dict() if self.slo else None,
            "slo_text": self.slo.describe() if self.slo else "",
            "y_axis": self.axis.to_json(),
            "slo_caption": self.axis.caption(self.slo),
            "answer": self.answer,
            "curves": [c.to_json() for c in self.curves],
        }


def _launch_key(run: Run) -> str:
    cfg = {k: v for k, v in run.config.items() if k not in _NOT_LAUNCH}
    return json.dumps(cfg or {"launch": run.launch}, sort_keys=True, default=str)


def _workload_key(run: Run, group: Group) -> dict[str, Any]:
    bench = next((r.bench for r in group.results), None)
    wl = run.bench_workload.get(bench, {}) if bench is not None else {}
    return {k: v for k, v in sorted(wl.items()) if k not in _LOAD_KEYS}


def _label(run: Run) -> str:
    if not run.is_spec:
        return "no-spec"
    algo = str(run.args.get("--speculative-algorithm") or "spec")
    s = run.spec_settings
    if s is None:
        return algo
    return f"{algo} steps {s.steps}" + ("" if s.topk == 1 else f" topk {s.topk} draft {s.tokens}")


def _labels(firsts: list[Run], launches: list[list[int]]) -> list[tuple[str, str]]:
    """Each curve's label and what sets it apart: its speculation (:func:`_label`), and where two
    curves share that, its first launch's number (``EAGLE3 steps 3 (#3)``: a table row fits 80 columns)
    with the flags and environment that differ (``NCCL_ALGO=Tree``,
    :func:`~eagletui.core.runs.compare.distinguishing`; before, ``(#3)`` alone sent the reader to look
    the launch up)."""
    from eagletui.core.runs.compare import distinguishing

    labels = [_label(r) for r in firsts]
    differs = [""] * len(firsts)
    for base in {lb for lb in labels if labels.count(lb) > 1}:
        idx = [i for i, lb in enumerate(labels) if lb == base]
        for i, extra in zip(idx, distinguishing([firsts[i] for i in idx]), strict=True):
            labels[i], differs[i] = f"{base} (#{launches[i][0]})", extra
    return list(zip(labels, differs, strict=True))


def _gpus(run: Run) -> int:
    tp = run.tp
    return tp if isinstance(tp, int) and not isinstance(tp, bool) and tp > 0 else 1


def _open_loop_per_user(recs: list[LatencyRecords]) -> float | None:
    """tok/s per user of Poisson arrivals: output tokens ÷ seconds in flight over the requests (Little's
    law: the mean number in flight is Σ e2e ÷ the duration, so this is the aggregate tok/s ÷ it)."""
    tokens = seconds = 0.0
    for rec in recs:
        for tok, e2e in zip(rec.tokens, rec.column("e2e_ms"), strict=True):
            if tok > 0 and e2e > 0 and math.isfinite(e2e):
                tokens, seconds = tokens + tok, seconds + e2e / 1000.0
    return tokens / seconds if seconds > 0 else None


def _max_rate(book: RunBook, pts: list[Point]) -> MaxRate | None:
    """``[sweep.max_rate]``'s answer from a curve's rate points (None without an SLO or rate points)."""
    rated = [p for p in pts if p.rate is not None]
    if not book.slo or not rated:
        return None
    return sustainable(Trial(p.rate, p.meets_slo, p.near) for p in rated if p.rate is not None)


def _point(book: RunBook, axis: DecodeAxis, members: list[tuple[Run, Group]]) -> Point:
    """One load of a curve: the repeats of every launch of the config at that concurrency (and request
    rate), pooled."""
    results = [(run, r) for run, g in members for r in g.results]
    conc = members[0][1].concurrency
    per_gpu, _, n = mean_stdev([r.output_throughput / _gpus(run) for run, r in results])
    per_user, _, _ = mean_stdev([r.output_throughput / conc for _, r in results])
    duration = sum(r.duration_s for _, r in results)
    req_s = sum(r.requests for _, r in results) / duration if duration > 0 else None
    slo = slo_stats(((r, run.latency.get(r.bench)) for run, r in results), book.slo)
    # each repeat's own requests/s served, for the noise band of a comparison between two points
    each = [slo_stats([(r, run.latency.get(r.bench))], book.slo).goodput_req_s for run, r in results]
    if any(v is None for v in each):
        each = [r.requests / r.duration_s if r.duration_s > 0 else None for _, r in results]
    _, sd, _ = mean_stdev(each)
    rate = members[0][0].rate_of(members[0][1])
    recs = [rec for run, r in results if (rec := run.latency.get(r.bench)) is not None]
    if rate is not None:
        # open loop: the concurrency is only a cap, not how many users share the tokens
        per_user = _open_loop_per_user(recs) or per_user
    near = rate is not None and book.slo is not None and bool(recs) and near_bound(recs, book.slo)
    decode = axis.value(slo, (r for _, r in results))
    return Point(
        conc,
        per_gpu or 0.0,
        per_user or 0.0,
        n,
        req_s,
        slo,
        served_sd=sd,
        rate=rate,
        near=near,
        decode_tok_s_per_user=decode,
    )


def _mark(points: list[Point]) -> set[int]:
    """ids of the points no other dominates (at least as good on both axes, better on one) among those
    on the chart (a decode speed measured) and not known to miss the SLO."""
    eligible = [(p, p.decode_tok_s_per_user) for p in points if p.meets_slo is not False]
    out = set()
    for p, y in eligible:
        if y is not None and not any(
            q is not p
            and qy is not None
            and q.tok_s_per_gpu >= p.tok_s_per_gpu
            and qy >= y
            and (q.tok_s_per_gpu > p.tok_s_per_gpu or qy > y)
            for q, qy in eligible
        ):
            out.add(id(p))
    return out


def frontiers(book: RunBook) -> tuple[Frontier, ...]:
    """Every host and workload's frontier from the run book's valid results (one view, every view);
    folded once per book version (a tuple: every caller shares it)."""
    return book.memo("frontiers", lambda: tuple(_fold(book)))  # type: ignore[no-any-return]


def _fold(book: RunBook) -> list[Frontier]:
    by_set: dict[str, dict[str, list[tuple[Run, Group]]]] = {}
    workloads: dict[str, tuple[str, dict[str, Any]]] = {}
    for n in sorted(book.runs):
        run = book.runs[n]
        for g in run.groups():
            wl = _workload_key(run, g)
            model = {k: run.config.get(k) for k in ("server", "model", "tp")}
            set_key = json.dumps([run.target, model, wl], sort_keys=True, default=str)
            workloads.setdefault(set_key, (run.target, wl))
            by_set.setdefault(set_key, {}).setdefault(_launch_key(run), []).append((run, g))
    out = []
    axis = DecodeAxis.for_slo(book.slo)
    for set_key, configs in by_set.items():
        curves_raw = []
        for members in configs.values():
            # a load is a concurrency, and a request rate where arrivals were Poisson (rate points of
            # [sweep.max_rate] are points of their own, never pooled with the closed loop)
            by_load: dict[tuple[int, float], list[tuple[Run, Group]]] = {}
            for run, g in members:
                by_load.setdefault((g.concurrency, run.rate_of(g) or 0.0), []).append((run, g))
            pts = [_point(book, axis, by_load[k]) for k in sorted(by_load)]
            runs = sorted({run.launch for run, _ in members})
            curves_raw.append((book.runs[runs[0]], runs, pts))
        marked = _mark([p for _, _, pts in curves_raw for p in pts])
        labels = _labels([first for first, _, _ in curves_raw], [runs for _, runs, _ in curves_raw])
        curves = []
        for (first, runs, pts), (label, differs) in zip(curves_raw, labels, strict=True):
            pts = [replace(p, on_frontier=id(p) in marked) for p in pts]
            spec = first.is_spec
            cross = book.crossover(first.launch) if spec else None
            across = book.across(first.launch) if spec else ""
            curves.append(
                Curve(label, spec, tuple(runs), tuple(pts), cross, across, _max_rate(book, pts), differs)
            )
        target, wl = workloads[set_key]
        f = Frontier(target, wl, book.slo, tuple(curves), axis=axis)
        out.append(replace(f, answer=slo_answer(f)))
    return out


def slo_answer(f: Frontier) -> str:
    """``at ttft p99 ≤ 2 s and itl p99 ≤ 50 ms: EAGLE3 steps 3 serves up to 6.1 req/s (concurrency ≤ 8);
    no-spec serves more beyond: 9.0 req/s (concurrency ≤ 16); per request vs no-spec it stops paying at
    concurrency 16`` — the best spec curve against the best no-spec one on one host and workload, the
    calls by the noise rule (the run book's economics); "" when nothing was measured."""
    bests = [(c, p) for c in f.curves for p in (c.best_under_slo(),) if p is not None]
    head = f"at {f.slo.describe()}: " if f.slo else "without an [slo]: "
    if not bests:
        return head + "no measured load meets it" if f.slo else ""
    spec = max((b for b in bests if b[0].spec), key=lambda b: b[1].served, default=None)
    nospec = max((b for b in bests if not b[0].spec), key=lambda b: b[1].served, default=None)
    if spec is None or nospec is None:
        return head + _one_side(f, bests, spec is not None) + _rates(f)
    (sc, sp), (_, np_) = spec, nospec
    text = head + f"{sc.named} serves up to {sp.served:.1f} req/s (concurrency ≤ {sp.concurrency})"
    # how sure: the one noise rule on the two points' repeats (assumed ±5 % where a side ran once)
    b = band(np_.served_sd, np_.runs, sp.served_sd, sp.runs, base=sp.served)
    sure = outside(np_.served - sp.served, b)
    np_text = f"{np_.served:.1f} req/s (concurrency ≤ {np_.concurrency})"
    if not sure:
        text += f"; no-spec {np_text}: within noise of it ({b.text()})"
    elif np_.served > sp.served:
        beyond = " beyond" if np_.concurrency > sp.concurrency else ""
        text += f"; no-spec serves more{beyond}: {np_text}, outside noise ({b.text()})"
    else:
        text += f"; no-spec only {np_text}, outside noise ({b.text()})"
    if sc.across:
        text += f"; per request vs no-spec it {sc.across}"
    return text + _unjudged(f, sp, np_) + _rates(f)


def _one_side(f: Frontier, bests: list[tuple[Curve, Point]], spec: bool) -> str:
    """The answer where only speculative or only no-spec launches were measured: the curve serving the
    most and, by the same noise rule, how it stands against the next one (a list of every curve's best
    left the reader to pick the winner and guess how sure it was)."""
    ranked = sorted(bests, key=lambda b: -b[1].served)
    (bc, bp), others = ranked[0], ranked[1:]
    text = f"{bc.named} serves up to {bp.served:.1f} req/s (concurrency ≤ {bp.concurrency})"
    points = [bp]
    if others:
        oc, op = others[0]
        b = band(op.served_sd, op.runs, bp.served_sd, bp.runs, base=bp.served)
        how = "outside noise" if outside(bp.served - op.served, b) else "within noise of it"
        more = f"; {len(others) - 1} more below it" if len(others) > 1 else ""
        text += f", the most; then {oc.named} {op.served:.1f} req/s (concurrency ≤ {op.concurrency}): {how} ({b.text()}){more}"
        points.append(op)
    text += (
        "; no no-spec launch here to compare with" if spec else "; no speculative launch here to compare with"
    )
    return text + _unjudged(f, *points)


def _rates(f: Frontier) -> str:
    """``; EAGLE3 steps 3 sustains 4.2 req/s under the SLO (…); no-spec …``: each curve's max rate."""
    said = [f"{c.label} {c.max_rate.text()}" for c in f.curves if c.max_rate is not None]
    return "; " + "; ".join(said) if said else ""


def _unjudged(f: Frontier, *points: Point) -> str:
    """An SLO the answer's points could not be judged by (a runner without per-request records, or
    records without a bound's latency)."""
    unjudged = [p for p in points if p.slo.attainment is None]
    if not f.slo or not unjudged:
        return ""
    unrecorded = sorted({m for p in unjudged if p.slo.sampled for m in p.slo.unrecorded})
    if unrecorded:
        return f" (req/s of all requests: the SLO not judged, no request recorded {', '.join(unrecorded)})"
    return " (req/s of all requests: the SLO not judged, no per-request records)"
