"""The next launch, predicted: from one spec run's measurements, the tok/s of the neighbouring settings at
every concurrency it measured, ranked as "what to launch next"; and, once such a setting was launched,
predicted against measured.

A layer on the cycle-time model of :mod:`eagletui.core.cycle.model` (issue 19): a cycle is ``steps × draft +
verify + accept × per_token`` ms and yields ``accept`` tokens; acceptance per draft position comes from
``spec_correct_drafts_histogram`` (:func:`~eagletui.core.cycle.model.rates_from_histogram`). What this module
adds is where the parts come from and what is done with the predictions:

* the cycle's parts are :func:`~eagletui.core.cycle.model.fit_parts`'s, as the economics use them: a step
  profile's kernel and span times at the batch size nearest the concurrency (what a draft step costs in
  one CUDA-graph replay; the rest of the measured cycle fixed), else the fit from the spec run and
  its no-spec reference (the verify costs about a no-spec step; the per-token part from a second drafter
  at the same setting). The cycle is read from a stream's own decode rate (the benchmark's per-request
  ``tok_s``), the first token's wait (prefill) held fixed per request;
* neither: no prediction, and the reason says what to measure (a no-spec run or a step profile).

**Candidates**: the step counts around the run's (:func:`~eagletui.core.cycle.model.neighbours`), a chain
(topk 1) for a tree run, and speculation off. Speculation off is the no-spec reference's own measurement
where one exists, else an estimate (a no-spec step ≈ the verify part, with its forward's gap).

**Predicted vs measured**: a later run whose launch equals this one but for the speculative flags (the
reference rule's :func:`~eagletui.core.runs.compare.launch_differences`) and that ran a predicted setting at the
same concurrency and workload is the prediction's check; the error is (predicted − measured) ÷ measured.

The best setting per concurrency is also written in the form SGLang 0.5.23 takes for adaptive
speculation (``--speculative-adaptive-config``: ``{"<batch size>": {"candidate_steps": [steps]}}``; 0 steps
= no drafting at that batch size). Pure: reads a :class:`~eagletui.core.runs.book.RunBook`.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from eagletui.core.cycle.model import (
    Measurement,
    SpecSettings,
    fit_parts,
    neighbours,
    predict,
    rates_from_histogram,
    rates_from_mean,
)
from eagletui.core.diagnosis.fold import Diagnosis
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.compare import launch_differences
from eagletui.core.runs.economics import profile_parts
from eagletui.core.runs.run import Group, Run
from eagletui.core.runs.validity import timed_truly

#: Predictions within this share of the measured run are not worth a launch.
WORTH = 0.03


@dataclass(frozen=True)
class Forecast:
    """One candidate setting at one concurrency: predicted aggregate tok/s (a measurement where
    ``measured`` is set: the no-spec reference's own number)."""

    label: str
    settings: SpecSettings | None  # None: speculation off
    concurrency: int
    tok_s: float
    base_tok_s: float  # what the spec run measured at this concurrency
    accept: float | None
    source: str
    measured: bool = False

    @property
    def delta_pct(self) -> float:
        return (self.tok_s / self.base_tok_s - 1.0) * 100.0 if self.base_tok_s > 0 else 0.0

    def flags(self) -> dict[str, Any]:
        """The launch flags that make this setting (``None``: remove the flag)."""
        if self.settings is None:
            return {"--speculative-algorithm": None}
        out: dict[str, Any] = {"--speculative-num-steps": self.settings.steps}
        out["--speculative-eagle-topk"] = self.settings.topk
        out["--speculative-num-draft-tokens"] = self.settings.tokens
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "setting": self.label,
            "flags": self.flags(),
            "concurrency": self.concurrency,
            "tok_s": round(self.tok_s, 2),
            "delta_pct": round(self.delta_pct, 2),
            "accept_len": None if self.accept is None else round(self.accept, 3),
            "source": self.source,
            "measured": self.measured,
        }


def _error_pct(predicted: float, measured: float) -> float:
    """(predicted − measured) ÷ measured, in per cent."""
    return (predicted / measured - 1.0) * 100.0 if measured > 0 else math.inf


@dataclass(frozen=True)
class Pooled:
    """The same prediction against the means over every launch of each setting so far: the predicted
    ratio (this setting ÷ the source's, as the model gives it) times the source setting's mean, against
    this setting's mean. What a check can rest on where one setting's tok/s moves from launch to launch
    more than the prediction's margin (the lent H200: ±13-16 %)."""

    predicted: float
    measured: float
    source_launches: tuple[int, ...]
    launches: tuple[int, ...]
    #: (max − min) ÷ mean of each setting's launches: how far one launch of it can be from another
    source_spread_pct: float
    spread_pct: float

    @property
    def error_pct(self) -> float:
        return _error_pct(self.predicted, self.measured)

    def to_json(self) -> dict[str, Any]:
        return {
            "predicted_tok_s": round(self.predicted, 2),
            "measured_tok_s": round(self.measured, 2),
            "error_pct": round(self.error_pct, 2),
            "source_launches": list(self.source_launches),
            "launches": list(self.launches),
            "source_spread_pct": round(self.source_spread_pct, 2),
            "spread_pct": round(self.spread_pct, 2),
        }


@dataclass(frozen=True)
class Check:
    """A prediction made from run ``source_launch`` for the setting run ``launch`` then ran; ``pooled``
    where either setting was launched more than once (then the means decide: see :class:`Pooled`)."""

    label: str
    concurrency: int
    predicted: float
    measured: float
    source_launch: int
    launch: int
    source: str
    pooled: Pooled | None = None

    @property
    def error_pct(self) -> float:
        return _error_pct(self.predicted, self.measured)

    @property
    def decisive_error_pct(self) -> float:
        """The error the check is judged by: against the means where there are several launches."""
        return self.pooled.error_pct if self.pooled is not None else self.error_pct

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "setting": self.label,
            "concurrency": self.concurrency,
            "predicted_tok_s": round(self.predicted, 2),
            "measured_tok_s": round(self.measured, 2),
            "error_pct": round(self.error_pct, 2),
            "predicted_from": self.source_launch,
            "launch": self.launch,
            "parts": self.source,
        }
        if self.pooled is not None:
            out["over_launches"] = self.pooled.to_json()
        return out


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
    out: list[Basis] = []
    why = ""
    for g in sorted(groups, key=lambda g: g.concurrency):
        tok = g.metric("tok_s").mean
        acc = g.metric("accept_len").mean
        if not tok or not acc or tok <= 0 or acc < 1:
            continue
        per = tok / g.concurrency
        stream, tokens, ttft = _shape(g)
        # a decode cycle from a stream's own decode rate (the first token's wait is prefill, not a cycle)
        cycle = 1000.0 * acc / (stream if stream else per)
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


def _other(book: RunBook, run: Run, g: Group) -> tuple[float, float] | None:
    fn = getattr(book, "_other_drafter", None)
    return fn(run, g) if fn is not None else None


def candidates(s: SpecSettings) -> list[SpecSettings]:
    """The settings around ``s`` worth predicting: its step neighbours, a chain for a tree."""
    out = [c for c in neighbours(s) if c.steps != s.steps]
    if s.topk > 1:
        out.append(SpecSettings(steps=s.steps, topk=1))
    return out


def forecasts(book: RunBook, launch: int) -> tuple[list[Forecast], str]:
    """Every candidate at every concurrency of the spec run, best first within each concurrency."""
    bs, why = bases(book, launch)
    out: list[Forecast] = []
    for b in bs:
        m, c = b.measurement, b.group.concurrency
        src = m.parts.source
        rows: list[Forecast] = []
        for s in candidates(m.settings):
            p = predict(m, s)
            rows.append(Forecast(_label(s), s, c, b.aggregate(p.tok_s), b.tok_s, p.accept, src))
        if b.nospec_tok_s:
            rows.append(
                Forecast(
                    _label(None),
                    None,
                    c,
                    b.nospec_tok_s,
                    b.tok_s,
                    None,
                    "the no-spec run's measurement",
                    True,
                )
            )
        else:
            est = m.parts.verify_ms
            if est > 0:
                rows.append(
                    Forecast(
                        _label(None),
                        None,
                        c,
                        b.aggregate(1000.0 / est),
                        b.tok_s,
                        None,
                        "estimate: a no-spec step ≈ the verify part",
                    )
                )
        rows.sort(key=lambda f: -f.tok_s)
        out.extend(rows)
    return out, why


def best_per_concurrency(fs: list[Forecast]) -> dict[int, Forecast]:
    best: dict[int, Forecast] = {}
    for f in fs:
        if f.concurrency not in best or f.tok_s > best[f.concurrency].tok_s:
            best[f.concurrency] = f
    return best


def adaptive_config(book: RunBook, launch: int) -> dict[str, Any] | None:
    """The JSON file ``--speculative-adaptive-config`` of SGLang 0.5.23 reads: per measured concurrency (a
    batch-size key) the step count that is best, the measured one included (0: no drafting at that batch
    size). None without predictions, and when no drafting is best everywhere (then the answer is
    speculation off, not adaptive speculation). SGLang requires the launch's ``--speculative-num-steps``
    to be one of the candidate steps (``_init_adaptive_speculative_params``)."""
    fs, _ = forecasts(book, launch)
    if not fs:
        return None
    run = book.runs[launch]
    s = run.spec_settings
    if s is None or s.topk != 1:
        return None  # adaptive speculation runs topk 1 only (adaptive_unsupported_reason)
    out: dict[str, Any] = {}
    for c, f in sorted(best_per_concurrency(fs).items()):
        steps = 0 if f.settings is None else f.settings.steps
        if f.tok_s <= f.base_tok_s:
            steps = s.steps  # nothing predicted beats what ran
        out[str(c)] = {"candidate_steps": [steps]}
    if all(v["candidate_steps"] == [0] for v in out.values()):
        return None
    return out


def _before(book: RunBook, launch: int) -> RunBook:
    """The book as it stood before ``launch``: what a prediction for it could have known."""
    view = copy.copy(book)
    view.runs = {n: r for n, r in book.runs.items() if n < launch}
    view._cache = {}
    view._cache_key = (-1, 0)
    view.external = None
    return view


def checks(book: RunBook, launch: int) -> list[Check]:
    """Predictions that earlier spec runs of the same launch (but for the speculative flags) made, from
    what was known before ``launch``, for the setting ``launch`` ran, against what it measured, per shared
    concurrency and workload."""
    run = book.runs.get(launch)
    if run is None:
        return []
    groups = timed_groups(run) if run.is_spec else run.groups()
    if not groups:
        return []
    mine = run.spec_settings if run.is_spec else None
    if run.is_spec and mine is None:
        return []
    earlier = [n for n in sorted(book.runs) if n < launch]
    if not earlier:
        return []
    view = _before(book, launch)
    out: list[Check] = []
    done: set[int] = set()  # concurrencies already checked (against the nearest earlier spec run)

    def nearness(n: int) -> tuple[int, int]:
        """The closest setting first (a neighbour is what the model predicts best), then the latest."""
        s = book.runs[n].spec_settings
        far = abs(s.steps - mine.steps) if s is not None and mine is not None else 0
        return far, -n

    for n in sorted(earlier, key=nearness):
        src = book.runs[n]
        if not src.is_spec or src.spec_settings == mine or launch_differences(src, run):
            continue
        fs, _ = forecasts(view, n)
        fs = [f for f in fs if f.concurrency not in done]
        for f in fs:
            if f.measured or _label(f.settings) != _label(mine):
                continue
            g = next((g for g in groups if g.concurrency == f.concurrency), None)
            sg = next((g for g in timed_groups(src) if g.concurrency == f.concurrency), None)
            if g is None or sg is None or not g.matches(sg):
                continue
            tok = g.metric("tok_s").mean
            base = sg.metric("tok_s").mean
            if tok:
                pooled = _pooled(book, src, run, g, f.tok_s / base) if base else None
                out.append(Check(f.label, f.concurrency, f.tok_s, tok, n, launch, f.source, pooled))
        done |= {c.concurrency for c in out}
    return sorted(out, key=lambda c: c.concurrency)


def _same_setting(a: Run, b: Run) -> bool:
    """``b`` is another launch of ``a``'s setting: the same launch but for nothing speculative, and the
    same speculative settings (or both without speculation)."""
    if a.is_spec != b.is_spec or launch_differences(a, b):
        return False
    return not a.is_spec or a.spec_settings == b.spec_settings


def _launch_rates(book: RunBook, like: Run, upto: int, g: Group) -> list[tuple[int, float]]:
    """(launch, tok/s) of every launch up to ``upto`` of ``like``'s setting at ``g``'s concurrency and
    workload."""
    out = []
    for n in sorted(book.runs):
        r = book.runs[n]
        if n > upto or not _same_setting(like, r):
            continue
        groups = timed_groups(r) if r.is_spec else r.groups()
        mine = next((x for x in groups if x.concurrency == g.concurrency and x.matches(g)), None)
        tok = mine.metric("tok_s").mean if mine is not None else None
        if tok:
            out.append((n, tok))
    return out


def _pooled(book: RunBook, src: Run, run: Run, g: Group, ratio: float) -> Pooled | None:
    """The prediction against the means of both settings' launches up to ``run``'s (None when each was
    launched once: then the single check is all there is)."""
    a = _launch_rates(book, src, run.launch, g)
    b = _launch_rates(book, run, run.launch, g)
    if not a or not b or (len(a) < 2 and len(b) < 2):
        return None

    def spread(xs: list[tuple[int, float]]) -> float:
        v = [t for _, t in xs]
        m = sum(v) / len(v)
        return (max(v) - min(v)) / m * 100.0 if m > 0 else 0.0

    mean_a = sum(t for _, t in a) / len(a)
    mean_b = sum(t for _, t in b) / len(b)
    return Pooled(
        ratio * mean_a, mean_b, tuple(n for n, _ in a), tuple(n for n, _ in b), spread(a), spread(b)
    )


def prediction_diagnoses(book: RunBook, launch: int) -> list[Diagnosis]:
    """``next_launch`` (the ranking, shown as predictions) and ``prediction_check`` (predicted vs measured)."""
    out: list[Diagnosis] = []
    fs, why = forecasts(book, launch)
    run = book.runs.get(launch)
    if fs and run is not None:
        out.append(_next_launch(book, launch, run, fs))
    elif why and run is not None and run.is_spec:
        out.append(
            Diagnosis(
                kind="next_launch",
                text="no prediction for the next launch",
                evidence=why,
                source="model",
                launch=launch,
            )
        )
    out += [_prediction_check(ck, launch) for ck in checks(book, launch)]
    return out


def _next_launch(book: RunBook, launch: int, run: Run, fs: list[Forecast]) -> Diagnosis:
    """The ``next_launch`` diagnosis: per concurrency what to launch next (or keep), the ranking at the
    lowest concurrency and the flags of the best predicted gain."""
    best = best_per_concurrency(fs)
    parts = []
    for c, f in sorted(best.items()):
        if f.tok_s > f.base_tok_s * (1 + WORTH):
            kind = "measured" if f.measured else "predicted"
            parts.append(f"at concurrency {c}: {f.label} ({kind} {f.tok_s:.1f} tok/s, {f.delta_pct:+.0f} %)")
        else:
            parts.append(
                f"at concurrency {c}: keep {_label(run.spec_settings)} (nothing predicted beats it by {WORTH * 100:.0f} %)"
            )
    ranked = "; ".join(
        f"{f.label} {f.tok_s:.1f}{'' if f.measured else ' (pred.)'}" for f in fs if f.concurrency == min(best)
    )
    cfg = adaptive_config(book, launch)
    # the parts the step-count predictions came from (speculation off's estimate says its own)
    src = next(
        (f.source for f in fs if not f.measured and f.settings is not None),
        next((f.source for f in fs if not f.measured), fs[0].source),
    )
    hint = ""
    wins = [f for f in best.values() if f.tok_s > f.base_tok_s * (1 + WORTH)]
    if wins:
        w = max(wins, key=lambda f: f.delta_pct)
        hint = " ".join(f"{k} {v}" if v is not None else f"(unset {k})" for k, v in w.flags().items())
    return Diagnosis(
        kind="next_launch",
        text="what to launch next (predicted): " + "; ".join(parts),
        evidence=f"cycle model from #{launch}'s measurements ({src}); concurrency {min(best)}: {ranked}",
        hint=hint,
        source="model",
        level="info",
        launch=launch,
        data={"forecasts": [f.to_json() for f in fs], "adaptive_config": cfg},
    )


def _prediction_check(ck: Check, launch: int) -> Diagnosis:
    """The ``prediction_check`` diagnosis of one check: predicted vs measured, over the launches' means
    where either setting was launched more than once."""
    text = (
        f"{ck.label} at concurrency {ck.concurrency}: predicted {ck.predicted:.1f} tok/s from #{ck.source_launch}, "
        f"measured {ck.measured:.1f} ({ck.error_pct:+.1f} %)"
    )
    evidence = f"#{ck.source_launch}'s cycle model ({ck.source}) vs this run's benchmark"
    pl = ck.pooled
    if pl is not None:
        # one launch of a setting can sit further from another than the prediction's margin: the
        # means over the launches of both settings are what the check rests on
        text += (
            f"; over {len(pl.launches)} launch{'es' if len(pl.launches) != 1 else ''} of it and "
            f"{len(pl.source_launches)} of #{ck.source_launch}'s setting: predicted {pl.predicted:.1f}, "
            f"measured {pl.measured:.1f} ({pl.error_pct:+.1f} %)"
        )
        evidence += (
            f"; launches of one setting spread {max(pl.spread_pct, pl.source_spread_pct):.0f} % "
            f"(max − min ÷ mean) on this host"
        )
    return Diagnosis(
        kind="prediction_check",
        text=text,
        evidence=evidence,
        source="model",
        level="warn" if abs(ck.decisive_error_pct) > 10 else "info",
        launch=launch,
        data=ck.to_json(),
    )


def explain(diagnoser: Any, book: RunBook | None, launch: int) -> list[Diagnosis]:
    """Everything that says why for one run: the diagnoses of its log, host and benchmarks
    (:class:`~eagletui.core.diagnosis.fold.Diagnoser`) and the predictions of the run book, warnings first."""
    out = list(diagnoser.diagnoses(launch)) if diagnoser is not None else []
    if book is not None and launch in book.runs:
        try:
            out += prediction_diagnoses(book, launch)
        except (ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError, IndexError):
            pass  # a recording the model cannot read predicts nothing, and says the rest
    return sorted(out, key=lambda d: 0 if d.level == "warn" else 1)
