"""What a spec run gives the cycle model at each concurrency it measured (:class:`Basis`): the measurement,
its parts and how a stream's decode rate becomes the benchmark's aggregate tok/s.

Apart from the ranking so the evidence (which results time cycles truly, which no-spec run is the
reference, what a step profile or the run's own requests say) is read in one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from eagletui.core.cycle.fit import fit_parts, verify_token_slope
from eagletui.core.cycle.model import Measurement, SpecSettings, rates_from_histogram, rates_from_mean
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.compare import launch_differences
from eagletui.core.runs.economics import profile_parts
from eagletui.core.runs.run import Group, Run
from eagletui.core.runs.validity import timed_truly
from eagletui.core.servers.spec import captured_max_bs


def _label(s: SpecSettings | None) -> str:
    if s is None:
        return "speculation off"
    if s.topk == 1:
        return f"steps {s.steps}"
    return f"steps {s.steps}, topk {s.topk}, {s.tokens} draft tokens"


@dataclass(frozen=True)
class Basis:
    """What one concurrency of a spec run gives the model: the measurement and where its parts came from,
    and how a stream's decode rate becomes the benchmark's aggregate tok/s at this concurrency."""

    group: Group
    measurement: Measurement
    tok_s: float  # aggregate, measured
    nospec_tok_s: float | None  # aggregate, the reference's measurement at this setting
    #: a stream: output tokens per request, seconds to its first token (held fixed: prefill does not
    #: change with the draft settings), and the factor that makes the measured setting come out exact
    tokens: float | None = None
    ttft_s: float | None = None
    calib: float = 1.0

    def aggregate(self, stream_tok_s: float) -> float:
        """The benchmark's tok/s for a stream decoding at ``stream_tok_s`` (concurrency × tokens per
        request ÷ (time to first token + decode time), calibrated on the measured setting); without the
        request shape, per-request tok/s × concurrency."""
        c = self.group.concurrency
        if self.tokens and self.ttft_s is not None and stream_tok_s > 0:
            return self.calib * c * self.tokens / (self.ttft_s + self.tokens / stream_tok_s)
        return stream_tok_s * c


def _shape(g: Group) -> tuple[float | None, float | None, float | None]:
    """(decode tok/s of a stream, output tokens per request, seconds to the first token) of a setting,
    from its benchmarks' per-request statistics; Nones where they do not say."""
    from eagletui.core.stats.sample import stat

    rates, toks, ttfts = [], [], []
    for r in g.results:
        v = stat(r.stats, "tok_s", "mean")
        t = stat(r.stats, "ttft_ms", "mean")
        if v and v > 0:
            rates.append(v)
        if t is not None and t >= 0:
            ttfts.append(t / 1000.0)
        if r.requests > 0 and r.duration_s > 0 and r.output_throughput > 0:
            toks.append(r.output_throughput * r.duration_s / r.requests)
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    return mean(rates), mean(toks), mean(ttfts)


def timed_groups(run: Run) -> list[Group]:
    """The run's settings from every result that timed its cycles truly: the valid ones and those the
    gate left out only because the drafter accepted nothing (random weights: accept ≈ 1)."""
    return run.group(
        # a drafter that accepts nothing (the validity gate's repeats_alike cause) cannot count for
        # economics, but its cycles are timed truly, so the model may still read them
        r
        for r, problems in run.result_problems()
        if timed_truly(list(problems))
    )


def _reference(book: RunBook, run: Run) -> Run | None:
    """The no-spec run to read the step from: the run book's reference when it is like for like (a
    no-spec run of another host or config is no step of this launch: never a part of the model), else
    (for a run the gate left out) a valid no-spec run of the same launch but for the speculative flags."""
    ref = book.like_reference(run.launch)
    if ref is not None:
        return ref.run
    for other in sorted(book.runs.values(), key=lambda r: -r.launch):
        if other is run or other.is_spec or not other.good_results or launch_differences(run, other):
            continue
        return other
    return None


def bases(book: RunBook, launch: int) -> tuple[list[Basis], str]:
    """One :class:`Basis` per concurrency the spec run measured, and why there are none when so."""
    run = book.runs.get(launch)
    if run is None or not run.is_spec:
        return [], ""
    groups = timed_groups(run)
    if not groups:
        return [], ""
    settings = run.spec_settings
    if settings is None:
        return [], "the run's steps are unknown (SGLang chose them): set --speculative-num-steps to predict"
    ref_run = _reference(book, run)
    slope = accept_slope_of(groups)
    decoded = [d for g in sorted(groups, key=lambda g: g.concurrency) if (d := _decoded(g)) is not None]
    largest = captured_max_bs(run.args)
    # an eager batch above the largest captured one costs differently: it would bend the slope
    graphs = [(d.group.concurrency, d.cycle) for d in decoded if largest is None or d.group.concurrency <= largest]
    per_token = verify_token_slope(graphs, settings.tokens)
    out: list[Basis] = []
    why = ""
    for g, tok, acc, stream, tokens, ttft, cycle in decoded:
        theirs = ref_run.group_like(g) if ref_run is not None else None
        nospec = theirs.metric("tok_s").mean if theirs is not None else None
        step = None
        if theirs is not None:
            nstream, _, _ = _shape(theirs)
            step = 1000.0 / nstream if nstream else (1000.0 * g.concurrency / nospec if nospec else None)
        parts = fit_parts(
            settings,
            cycle,
            acc,
            step if step is not None else math.nan,
            other=_other(book, run, g),
            profile=profile_parts(run.step_profile, g.concurrency),
            accept_slope=slope,
            verify_token_ms=per_token * g.concurrency if per_token is not None else None,
        )
        if parts is None:
            why = f"{book.missing_reference(launch)} and no step profile: run bench --vs-no-spec or capture a profile"
            continue
        hist = g.histogram()
        rates = rates_from_histogram(hist) if hist else ()
        if not rates:
            rates = rates_from_mean(acc, settings.depth)
        b = Basis(g, Measurement(settings, rates, parts, step, g.concurrency), tok, nospec, tokens, ttft)
        if stream and tokens and ttft is not None:
            b = Basis(b.group, b.measurement, tok, nospec, tokens, ttft, tok / b.aggregate(stream))
        out.append(b)
    return out, why


class _Decoded(NamedTuple):
    """One setting of the spec run as the model reads it: its aggregate tok/s and accept length, a
    stream's shape (:func:`_shape`) and its decode cycle."""

    group: Group
    tok: float
    acc: float
    stream: float | None
    tokens: float | None
    ttft: float | None
    cycle: float


def _decoded(g: Group) -> _Decoded | None:
    """The setting's decode cycle, ms, from a stream's own decode rate (the first token's wait is
    prefill, not a cycle), else from the aggregate per request; None without tok/s or accept length."""
    tok = g.metric("tok_s").mean
    acc = g.metric("accept_len").mean
    if not tok or not acc or tok <= 0 or acc < 1:
        return None
    stream, tokens, ttft = _shape(g)
    return _Decoded(g, tok, acc, stream, tokens, ttft, 1000.0 * acc / (stream if stream else tok / g.concurrency))


def _other(book: RunBook, run: Run, g: Group) -> tuple[float, float] | None:
    fn = getattr(book, "_other_drafter", None)
    return fn(run, g) if fn is not None else None


def accept_slope_of(groups: list[Group]) -> float | None:
    """How much this launch's cycle grows per unit of accept length, read by the benchmark client from
    its own requests at concurrency 1 (``cycle_ms_per_accept``; the mean over such benchmarks), and
    carried to every concurrency: the work per accepted token does not change with the batch."""
    values = [
        float(v)
        for g in groups
        if g.concurrency == 1
        for r in g.results
        if isinstance(r.accept, dict)
        and isinstance(v := r.accept.get("cycle_ms_per_accept"), int | float)
        and not isinstance(v, bool)
        and math.isfinite(v)
        and v >= 0
    ]
    return sum(values) / len(values) if values else None
