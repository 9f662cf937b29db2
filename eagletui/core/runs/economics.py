"""Is speculation worth it: a spec run against its no-spec reference, per concurrency.

The per-concurrency table (spec tok/s, the reference's, accept length and the cycle model's economics
at each setting, never a mean across them), the sentence that sums it up, and :func:`profile_parts`,
which hands a step profile's split of a speculative cycle to the cycle model. Apart from
:mod:`eagletui.core.runs.book` so each part of the run book stays a readable size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeGuard

from eagletui.core.cycle.economics import Economics, crossover_text, economics
from eagletui.core.cycle.model import finite, rates_from_histogram
from eagletui.core.runs.compare import launch_differences
from eagletui.core.runs.reference import _References
from eagletui.core.runs.run import Group, Metric, Run
from eagletui.core.servers import spec as specflags
from eagletui.core.stats.noise import Band, band


@dataclass(frozen=True)
class ConcurrencyRow:
    """One line of a spec run's per-concurrency table against its no-spec reference."""

    concurrency: int
    spec_tok_s: Metric
    nospec_tok_s: Metric | None
    accept_len: Metric
    economics: Economics | None
    band: Band | None

    def to_json(self) -> dict[str, Any]:
        e = self.economics
        return {
            "concurrency": self.concurrency,
            "spec_tok_s": _metric_json(self.spec_tok_s),
            "nospec_tok_s": _metric_json(self.nospec_tok_s) if self.nospec_tok_s is not None else None,
            "accept_len": _metric_json(self.accept_len),
            "speedup": round(e.speedup, 4) if e is not None else None,
            "pays": e.pays if e is not None else None,
            "break_even_accept_len": None
            if e is None or e.break_even_accept_len is None
            else round(e.break_even_accept_len, 3),
            "break_even_reachable": e.reachable if e is not None else None,
            "max_accept": e.max_accept if e is not None else None,
            "noise": self.band.text() if self.band is not None else None,
            "economics": e.to_json() if e is not None else None,
        }


def _metric_json(m: Metric) -> dict[str, Any]:
    return {"mean": m.mean, "stdev": m.stdev, "n": m.n}


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
        accept length and the economics. Never a mean across concurrencies."""
        run = self.runs[launch]
        ref = self.reference(launch)
        out: list[ConcurrencyRow] = []
        settings = run.spec_settings
        for g in sorted(run.groups(), key=lambda g: g.concurrency):
            theirs = ref.run.group_like(g) if ref is not None else None
            acc = g.metric("accept_len")
            econ = None
            b: Band | None = None
            nospec = theirs.metric("tok_s") if theirs is not None else None
            if theirs is not None:
                mine_t = g.metric("tok_s")
                assert nospec is not None
                b = band(mine_t.stdev, mine_t.n, nospec.stdev, nospec.n, base=nospec.mean)
                rates = rates_from_histogram(g.histogram())
                econ = economics(
                    g.metric("tok_s_per_request").mean,
                    acc.mean,
                    theirs.metric("tok_s_per_request").mean,
                    concurrency=g.concurrency,
                    settings=settings,
                    rates=rates,
                    other=self._other_drafter(run, g),
                    profile=profile_parts(run.step_profile, g.concurrency),
                )
            out.append(ConcurrencyRow(g.concurrency, g.metric("tok_s"), nospec, acc, econ, b))
        return out

    def economics_points(self, launch: int) -> list[tuple[int, Economics]]:
        """(concurrency, economics) for every setting both the spec run and its no-spec reference
        measured; tok/s is per request (output throughput ÷ concurrency)."""
        return [
            (r.concurrency, r.economics) for r in self.concurrency_table(launch) if r.economics is not None
        ]

    def economics(self, launch: int) -> Economics | None:
        """The economics at the run's headline setting (else the lowest concurrency known)."""
        points = self.economics_points(launch)
        if not points:
            return None
        head = self.runs[launch].headline()
        return dict(points).get(head.concurrency if head else 0, points[0][1])

    def economics_sentence(self, launch: int) -> str | None:
        """One line: the verdict vs no-spec, what would pay, and where speculation stops paying."""
        e = self.economics(launch)
        ref = self.reference(launch)
        if e is None or ref is None:
            return None
        context = f" vs {ref.phrase()}" + ("" if ref.like_for_like else " (not like for like)")
        if e.concurrency and e.concurrency > 1:
            context += f" at concurrency {e.concurrency}"
        text = e.sentence(context=context)
        across = crossover_text(self.economics_points(launch))
        if across:
            text += f"; {across}"
        return text

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
        fw = parts["draft"].get("forwards")
        out["draft_forwards"] = float(fw) if _ms(fw) else 0.0
    # the graph replays inside each part and the profiled period (profiles from before issue 32 have
    # neither): what a draft forward and the draft runner cost, and how much the profiler inflated
    replay = {}
    for stage in ("draft", "verify", "draft_extend"):
        d = parts[stage]
        figures = {k: float(d[k]) for k in ("replay_ms", "replay_kernels", "lead_ms") if _ms(d.get(k))}
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
