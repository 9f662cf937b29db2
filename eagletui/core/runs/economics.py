"""Is speculation worth it: a spec run against its no-spec reference, per concurrency.

The per-concurrency table (spec tok/s, the reference's, accept length and the cycle model's economics
at each setting, never a mean across them), the sentence that sums it up, and :func:`profile_parts`,
which hands a step profile's split of a speculative cycle to the cycle model. Apart from
:mod:`eagletui.core.runs.book` so each part of the run book stays a readable size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from eagletui.core.cycle.economics import Economics, as_sentence, crossover, crossover_text, economics
from eagletui.core.cycle.model import finite, rates_from_histogram
from eagletui.core.runs.call import WITHIN, Gap, call, gap, noise_of
from eagletui.core.runs.compare import launch_differences
from eagletui.core.runs.reference import Reference, _References
from eagletui.core.runs.run import Group, Metric, Run
from eagletui.core.runs.steady import Steady, eager_at, steady
from eagletui.core.servers import spec as specflags
from eagletui.core.stats.confidence import Noise


@dataclass(frozen=True)
class ConcurrencyRow:
    """One line of a spec run's per-concurrency table against its no-spec reference: the aggregate, the
    steady-state decode, the call and, when the point cannot be judged, why (``left_out``)."""

    concurrency: int
    spec_tok_s: Metric
    nospec_tok_s: Metric | None
    accept_len: Metric
    economics: Economics | None
    gap: Gap | None = None
    steady: Steady | None = None
    steady_gap: Gap | None = None
    left_out: tuple[str, ...] = ()
    #: runs per side at which this point's difference would leave its band (None: it has, or never)
    runs_needed: int | None = None
    #: the per-request tok/s of each run of both sides, and the run-to-run noise they were judged with
    sides: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    noise: Noise | None = None

    @property
    def call(self) -> str | None:
        return self.economics.call if self.economics is not None else None

    @property
    def judged(self) -> bool:
        """The point can carry the verdict: measured on both sides, like for like, nobody eager."""
        return self.economics is not None and not self.left_out
    #: why the pair is shown but not judged ("" when like for like): no speedup, band or economics then
    unjudged: str = ""

    def to_json(self) -> dict[str, Any]:
        e = self.economics
        steady = None
        if self.steady is not None:
            steady = self.steady.to_json() | {
                "band": self.steady_gap.text() if self.steady_gap is not None else None,
                "agrees": None if self.steady_gap is None else _same_side(self.gap, self.steady_gap),
            }
        return {
            "concurrency": self.concurrency,
            "unjudged": self.unjudged or None,
            "spec_tok_s": _metric_json(self.spec_tok_s),
            "nospec_tok_s": _metric_json(self.nospec_tok_s) if self.nospec_tok_s is not None else None,
            "accept_len": _metric_json(self.accept_len),
            "speedup": round(e.speedup, 4) if e is not None else None,
            "pays": e.pays if e is not None else None,
            "call": self.call,
            "break_even_accept_len": None
            if e is None or e.break_even_accept_len is None
            else round(e.break_even_accept_len, 3),
            "break_even_reachable": e.reachable if e is not None else None,
            "max_accept": e.max_accept if e is not None else None,
            "noise": self.gap.text() if self.gap is not None else None,
            "steady": steady,
            "left_out": list(self.left_out),
            "runs_needed": self.runs_needed,
            "economics": e.to_json() if e is not None else None,
        }


def _metric_json(m: Metric) -> dict[str, Any]:
    return {"mean": m.mean, "stdev": m.stdev, "n": m.n}


def _same_side(aggregate: Gap | None, steady: Gap) -> bool:
    """Both faster, both slower or both within their noise."""
    if aggregate is None:
        return True
    return (aggregate.faster, aggregate.slower) == (steady.faster, steady.slower)


def _per_request(g: Group) -> list[float]:
    return [r.output_throughput / g.concurrency for r in g.results if r.output_throughput > 0]


class _Economics(_References):
    """The economics of each spec run of :class:`~eagletui.core.runs.book.RunBook`."""

    def _other_drafter(self, run: Run, group: Group) -> tuple[float, float] | None:
        """(cycle ms, accept) of another spec run that differs from ``run`` only in the draft model, at
        the same setting: the second point of the cycle model's per-token fit."""
        for other in self.runs.values():
            if other is run or not other.is_spec or not other.good_results:
                continue
            if launch_differences(run, other):
                continue
            a, b = run.args, other.args
            if specflags.settings(a) != specflags.settings(b) or a.get(specflags.DRAFT_MODEL) == b.get(
                specflags.DRAFT_MODEL
            ):
                continue
            g = other.group_like(group)
            if g is None:
                continue
            tok, acc = g.metric("tok_s_per_request").mean, g.metric("accept_len").mean
            if tok and acc:
                return 1000.0 * acc / tok, acc
        return None

    def concurrency_table(self, launch: int) -> list[ConcurrencyRow]:
        return self._cached("table", launch, lambda: self._concurrency_table(launch))  # type: ignore[no-any-return]

    def _concurrency_table(self, launch: int) -> list[ConcurrencyRow]:
        """Per concurrency the spec run measured: its tok/s, the reference's at the same setting, the
        accept length, the economics with their call, the steady-state decode, and why a point cannot be
        judged. Never a mean across concurrencies. A reference that is not like for like is shown (its tok/s,
        what differs) and never judged: no speedup, band or economics."""
        run = self.runs[launch]
        ref = self.reference(launch)
        # closed loops only: a max-rate search's Poisson steps (request_rate) are no concurrency's point
        # (their "concurrency" is the prompt count), and four of them once read "not judged at 48" four times
        groups = sorted((g for g in run.groups() if run.rate_of(g) is None), key=lambda g: g.concurrency)
        pairs = [(g, ref.run.group_like(g) if ref is not None else None) for g in groups]
        both = [(g, h) for g, h in pairs if h is not None]
        # run-to-run noise pooled over every setting both runs measured (the sweep's rule)
        cells = [_per_request(x) for g, h in both for x in (g, h)]
        steadies = {g.concurrency: steady(run, g, ref.run, h) for g, h in both if ref is not None}
        steady_cells = [list(xs) for st in steadies.values() if st is not None for xs in (st.spec, st.nospec)]
        unjudged = ref.unjudged() if ref is not None else ""
        out: list[ConcurrencyRow] = []
        for g, theirs in pairs:
            acc = g.metric("accept_len")
            if theirs is None or ref is None:
                why = self._unmeasured(ref.run, g) if ref is not None else ()
                out.append(ConcurrencyRow(g.concurrency, g.metric("tok_s"), None, acc, None, left_out=why))
                continue
            if unjudged:
                out.append(
                    ConcurrencyRow(g.concurrency, g.metric("tok_s"), theirs.metric("tok_s"), acc, None, unjudged=unjudged)
                )
                continue
            mine, base = _per_request(g), _per_request(theirs)
            noise = noise_of(cells, [mine, base])
            agg = gap(mine, base, noise)
            st = steadies.get(g.concurrency)
            st_gap = None
            if st is not None:
                st_gap = gap(st.spec, st.nospec, noise_of(steady_cells, [st.spec, st.nospec]))
            econ = economics(
                g.metric("tok_s_per_request").mean,
                acc.mean,
                theirs.metric("tok_s_per_request").mean,
                concurrency=g.concurrency,
                settings=run.spec_settings,
                rates=rates_from_histogram(g.histogram()),
                other=self._other_drafter(run, g),
                profile=profile_parts(run.step_profile, g.concurrency),
            )
            if econ is not None and agg is not None:
                econ = replace(econ, call=call(agg, st_gap), band_pct=agg.half_pct)
            needed = None
            if agg is not None and not agg.outside and noise is not None:
                needed = agg.runs_needed(noise.cv)
            out.append(
                ConcurrencyRow(
                    g.concurrency,
                    g.metric("tok_s"),
                    theirs.metric("tok_s"),
                    acc,
                    econ,
                    agg,
                    st,
                    st_gap,
                    self._left_out(run, ref, g.concurrency),
                    needed,
                    (tuple(mine), tuple(base)),
                    noise,
                )
            )
        return out

    def _left_out(self, run: Run, ref: Reference, concurrency: int) -> tuple[str, ...]:
        """Why the point at ``concurrency`` cannot carry a verdict: a side decoded eagerly, or the pair is
        not like for like."""
        why: list[str] = []
        mine, theirs = eager_at(run, concurrency), eager_at(ref.run, concurrency)
        if mine is not None and theirs is not None:
            sizes = f"{mine}" if mine == theirs else f"{mine} and {theirs}"
            why.append(f"both sides decoded eagerly, above their largest CUDA graph batch of {sizes}")
        elif mine is not None or theirs is not None:
            side, size = ("the spec run", mine) if mine is not None else (f"no-spec {ref.label}", theirs)
            why.append(f"{side} decoded eagerly, above its largest CUDA graph batch of {size}")
        if not ref.like_for_like:
            why.append("not like for like: " + "; ".join(ref.differences[:3]))
        return tuple(why)

    @staticmethod
    def _unmeasured(nospec: Run, g: Group) -> tuple[str, ...]:
        """Why the reference has no number at ``g``'s setting when it benchmarked it: its runs there are
        invalid."""
        bad = [p for r, p in nospec.result_problems() if p and nospec.concurrency_of(r) == g.concurrency]
        return (f"the no-spec runs at this concurrency are invalid ({bad[-1][0]})",) if bad else ()

    def economics_points(self, launch: int) -> list[tuple[int, Economics]]:
        """(concurrency, economics) for every setting both the spec run and its no-spec reference
        measured; tok/s is per request (output throughput ÷ concurrency)."""
        return [
            (r.concurrency, r.economics) for r in self.concurrency_table(launch) if r.economics is not None
        ]

    def judged_points(self, launch: int) -> list[tuple[int, Economics]]:
        """The points that can carry the verdict (:attr:`ConcurrencyRow.judged`)."""
        return [(r.concurrency, r.economics) for r in self.concurrency_table(launch) if r.judged and r.economics]

    def headline_row(self, launch: int) -> ConcurrencyRow | None:
        """The point the economics speak of: the run's headline setting when it can be judged, else the
        judged point nearest it (a point where a side decoded eagerly, or that is not like for like, is
        never the headline), else the headline setting itself, said as not judged."""
        rows = [r for r in self.concurrency_table(launch) if r.economics is not None]
        if not rows:
            return None
        head = self.runs[launch].headline()
        c = head.concurrency if head is not None else rows[0].concurrency
        judged = [r for r in rows if r.judged]
        pool = judged or rows

        def distance(r: ConcurrencyRow) -> tuple[float, int]:
            return (abs(math.log(max(r.concurrency, 1) / max(c, 1))), r.concurrency)

        return min(pool, key=distance)

    def economics(self, launch: int) -> Economics | None:
        """The economics at the headline point (:meth:`headline_row`)."""
        row = self.headline_row(launch)
        return row.economics if row is not None else None

    def economics_sentence(self, launch: int) -> str | None:
        """One line: the call vs no-spec with its band, the steady-state decode beside it, what would pay,
        the calls across concurrencies and the points not judged; for a reference that is not like for
        like, the two tok/s and what differs, unjudged."""
        ref = self.reference(launch)
        if ref is not None and not ref.like_for_like:
            return self._unjudged_sentence(launch, ref)
        row = self.headline_row(launch)
        if row is None or row.economics is None or ref is None:
            return None
        e = row.economics
        context = f" vs {ref.phrase()}" + ("" if ref.like_for_like else " (not like for like)")
        if e.concurrency and e.concurrency > 1:
            context += f" at concurrency {e.concurrency}"
        parts = [e.sentence(context=context)]
        if row.left_out:
            parts.append(as_sentence(f"not judged at {row.concurrency}: " + "; ".join(row.left_out)))
        if row.steady is not None and row.steady_gap is not None:
            parts.append(f"Steady-state decode from {row.steady.source}: {row.steady_gap.short()}.")
            if not _same_side(row.gap, row.steady_gap):
                parts.append("The aggregate and the decode disagree.")
                parts.append("The aggregate carries each request's TTFT, its prefill and the batch's ramp.")
        if row.runs_needed is not None and e.call == WITHIN:
            parts.append(f"About {row.runs_needed} runs a side would tell a difference this large from the noise.")
        parts.append(as_sentence(self.across(launch, but=row.concurrency)))
        return " ".join(p for p in parts if p)

    def across(self, launch: int, but: int | None = None) -> str:
        """The calls across the judged concurrencies (:func:`~eagletui.core.cycle.economics.crossover_text`)
        and each point not judged with why (except ``but``, the headline, which says it itself)."""
        left = tuple(
            f"{r.concurrency}: {'; '.join(r.left_out)}"
            for r in self.concurrency_table(launch)
            if r.economics is not None and r.left_out and r.concurrency != but
        )
        return crossover_text(self.judged_points(launch), left)

    def crossover(self, launch: int) -> int | None:
        """The lowest judged concurrency at which speculation stops paying (None: several judged points
        are needed, and it pays at all of them)."""
        points = self.judged_points(launch)
        return crossover(points) if len(points) > 1 else None

    def _unjudged_sentence(self, launch: int, ref: Reference) -> str | None:
        """``EAGLE-3 1957.6 vs 307.7 tok/s of no-spec #3 at concurrency 4 — unjudged: differs in
        --sim-host (h200-nvlink vs unset) (…)``: the numbers side by side, no ratio, no verdict (a
        speedup across hosts or configs is nobody's answer to "does speculation pay here")."""
        rows = [r for r in self.concurrency_table(launch) if r.nospec_tok_s is not None]
        if not rows:
            return None
        head = self.runs[launch].headline()
        row = next((r for r in rows if head is not None and r.concurrency == head.concurrency), rows[-1])
        at = f" at concurrency {row.concurrency}" if row.concurrency > 1 else ""
        assert row.nospec_tok_s is not None
        return (
            f"EAGLE-3 {row.spec_tok_s.text(1)} vs {row.nospec_tok_s.text(1)} tok/s of no-spec {ref.label}{at}"
            f" — unjudged: differs in {ref.listed()}. No verdict, break-even or prediction on such a pair."
        )

    def unjudged_json(self, launch: int) -> dict[str, Any] | None:
        """The ``economics`` block every JSON view (``bench --json``, ``--baseline``, exports) gives a spec
        run whose no-spec reference is not like for like: the pair, what differs and why it is unjudged;
        speedup, pays, break-even and the cycle model null (None: no reference, or a like-for-like one)."""
        ref = self.reference(launch)
        if ref is None or ref.like_for_like:
            return None
        return {
            "vs": ref.label,
            "like_for_like": False,
            "differences": list(ref.differences),
            "unjudged": ref.unjudged(),
            "sentence": self.economics_sentence(launch),
            "speedup": None,
            "pays": None,
            "break_even_accept_len": None,
            "cycle_parts": None,
            "predictions": [],
            "by_concurrency": [r.to_json() for r in self.concurrency_table(launch)],
        }

    def latest_economics(self) -> tuple[int, str] | None:
        """(launch, sentence) of the newest spec run whose economics are known: after benchmarking the
        no-spec run, the comparison line still says what it means for the spec run."""
        for n in sorted(self.runs, reverse=True):
            if self.runs[n].is_spec and self.runs[n].good_results:
                sentence = self.economics_sentence(n)
                if sentence:
                    return n, sentence
        return None


def profile_parts(profile: dict[str, Any] | None, bs: int | None = None) -> dict[str, Any] | None:
    """A step profile's split of a speculative cycle (:func:`eagletui.profiler.summary.step_breakdown`:
    ``parts`` draft / verify / draft_extend, GPU ms per cycle, each with its kernel ms and the forwards
    nested in it) for the cycle model: ``shares`` (the spans), ``kernels`` and ``draft_forwards`` where the
    profile has them (recordings made before issue 25 do not); None when the profile has no complete
    speculative cycle. With ``bs``, the parts of the cycles at the batch size nearest it where the profile
    splits them by batch size (``parts_by_bs``): a cycle at batch 1 is not one at batch 4."""
    if not isinstance(profile, dict) or profile.get("unit") != "cycle":
        return None
    parts = profile.get("parts")
    cycle = profile.get("cycle_ms")
    by_bs = profile.get("parts_by_bs")
    if bs is not None and isinstance(by_bs, dict):
        sizes = [
            (int(k), v)
            for k, v in by_bs.items()
            if isinstance(k, str) and k.isdigit() and isinstance(v, dict)
        ]
        if sizes:
            # nearest by ratio (batch 3 is nearer 4 than batch 8 is), a larger one on a tie
            _, parts = min(sizes, key=lambda kv: (abs(math.log(max(kv[0], 1) / max(bs, 1))), -kv[0]))
            cycle = parts.get("cycle_ms")
    if not isinstance(parts, dict):
        return None
    shares: dict[str, float] = {}
    kernels: dict[str, float] = {}
    for stage in ("draft", "verify", "draft_extend"):
        d = parts.get(stage)
        ms = d.get("gpu_ms") if isinstance(d, dict) else None
        if not _ms(ms):
            return None
        shares[stage] = float(ms)
        k = d.get("kernel_ms") if isinstance(d, dict) else None
        if _ms(k):
            kernels[stage] = float(k)
    if shares["verify"] <= 0:
        return None
    out: dict[str, Any] = {"shares": shares}
    if "draft" in kernels and "draft_extend" in kernels:
        out["kernels"] = kernels
        if _ms(cycle) and cycle > 0:  # the cycle's span, gaps between parts included (recorded since 2026-12-03)
            out["cycle_ms"] = float(cycle)
        fw = parts["draft"].get("forwards")
        out["draft_forwards"] = float(fw) if _ms(fw) else 0.0
    # the graph replays inside each part and the profiled period (profiles from before issue 32 have
    # neither): what a draft forward and the draft runner cost, and how much the profiler inflated
    replay = {}
    for stage in ("draft", "verify", "draft_extend"):
        d = parts[stage]
        keys = ("replay_ms", "replay_kernels", "lead_ms", "idle_after_ms", "gemm_ms", "comm_ms")
        figures = {k: float(d[k]) for k in keys if _ms(d.get(k))}
        if figures.get("replay_kernels"):
            replay[stage] = figures
    if replay:
        out["replay"] = replay
        period = parts.get("period_ms") if _ms(parts.get("period_ms")) else profile.get("period_ms")
        if _ms(period):
            out["period_ms"] = float(period)
    return out


def _ms(v: Any) -> TypeGuard[float]:
    return finite(v) and v >= 0
