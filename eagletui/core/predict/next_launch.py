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
where one exists, else an estimate with its band (:func:`eagletui.core.cycle.fit.nospec_from_cycle`).

**Predicted vs measured**: a later run whose launch equals this one but for the speculative flags (the
reference rule's :func:`~eagletui.core.runs.compare.launch_differences`) and that ran a predicted setting at the
same concurrency and workload is the prediction's check; the error is (predicted − measured) ÷ measured.

The best setting per concurrency is also written in the form SGLang 0.5.23 takes for adaptive
speculation (``--speculative-adaptive-config``: ``{"<batch size>": {"candidate_steps": [steps]}}``; 0 steps
= no drafting at that batch size). Pure: reads a :class:`~eagletui.core.runs.book.RunBook`.
"""

from __future__ import annotations

from typing import Any

from eagletui.core.diagnosis.fold import Diagnosis
from eagletui.core.predict.bases import _label, _reference, timed_groups
from eagletui.core.predict.checks import Check, checks, kind_of
from eagletui.core.predict.forecast import Forecast
from eagletui.core.predict.ranking import adaptive_config, decisions, ranked
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.run import Run


def prediction_diagnoses(book: RunBook, launch: int) -> list[Diagnosis]:
    """``next_launch`` (the ranking, shown as predictions) and ``prediction_check`` (predicted vs measured)."""
    out: list[Diagnosis] = []
    fs, why = ranked(book, launch)
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
    """The ``next_launch`` diagnosis from the one ranking (:func:`~eagletui.core.predict.ranking.decisions`):
    per concurrency what to launch next, keep, or what is undecided and why; the ranking at the lowest
    concurrency; the flags of the largest gain that wins at the low edge of its band. ``adaptive_config``
    in its data is the same decisions in SGLang's form, so the two never disagree."""
    decided = decisions(fs, _label(run.spec_settings))
    low = min(decided)
    ranking = "; ".join(
        f"{f.label} {f.tok_s:.1f}{'' if f.measured else ' (pred.)'}" for f in fs if f.concurrency == low
    )
    # the parts the step-count predictions came from (speculation off's estimate says its own)
    basis = next(
        (f for f in fs if not f.measured and f.settings is not None),
        next((f for f in fs if not f.measured), fs[0]),
    )
    src = basis.source
    built_on, built_on_data = _built_on(book, run, src)
    hint = ""
    wins = [d.winner for d in decided.values() if d.winner is not None]
    if wins:
        w = max(wins, key=lambda f: f.delta_pct)
        hint = " ".join(f"{k} {v}" if v is not None else f"(unset {k})" for k, v in w.flags().items())
    # a CPU-bound profile's step changes move CPU work it cannot show: said where the user reads first
    cpu = "; the profile's cycle is CPU-bound: launch it to know" if basis.cpu_bound else ""
    return Diagnosis(
        kind="next_launch",
        text=f"what to launch next{_by(book)} (predicted from {built_on}): "
        + "; ".join(d.text() for d in decided.values())
        + cpu,
        evidence=f"cycle model from #{launch}'s measurements ({src}); concurrency {low}: {ranking}",
        hint=hint,
        source="model",
        level="info",
        launch=launch,
        data={
            "forecasts": [f.to_json() for f in fs],
            "decisions": {str(c): _decision_json(d) for c, d in decided.items()},
            "adaptive_config": adaptive_config(book, launch),
            "built_on": built_on_data,
            "objective": book.objective.to_json(),
        },
    )


def _by(book: RunBook) -> str:
    """`` by goodput tok/s``: the objective the ranking optimises, said where it is not the default."""
    return "" if book.objective.kind == "tok_s" else f" by {book.objective.unit}"


def _built_on(book: RunBook, run: Run, source: str) -> tuple[str, dict[str, Any]]:
    """The launch and the benchmarks a recommendation rests on, the no-spec run it is measured against
    and the step profile where the parts came from one, said short (the why line names them, so a line
    about an earlier launch says so after a relaunch) and in full for the JSON."""
    benches = sorted({r.bench for g in timed_groups(run) for r in g.results})
    ref = _reference(book, run)
    profile = source.startswith("step profile")
    what = f"#{run.launch} {_label(run.spec_settings)}, {len(benches)} benchmark{'s' if len(benches) != 1 else ''}"
    what += f", no-spec #{ref.launch}" if ref is not None else ""
    what += ", its profile" if profile else ""
    data = {
        "launch": run.launch,
        "benchmarks": benches,
        "nospec_launch": ref.launch if ref is not None else None,
        "step_profile": profile,
    }
    return what, data


def _decision_json(d: Any) -> dict[str, Any]:
    return {
        "decided": "launch" if d.winner is not None else "undecided" if d.open is not None else "keep",
        "setting": (d.winner or d.open).label if (d.winner or d.open) is not None else d.base_label,
        "eager": d.eager,
        "speculation_off": "not ruled out" if d.off_open is not None else None,
        "text": d.text(),
    }


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
    if ck.missed and ck.band is not None:
        # said where the user looks, and counted: the track record widens the next band of this kind
        text += (
            f"; outside its band {ck.band[0]:.1f} … {ck.band[1]:.1f}: the next {kind_of(ck.label)} "
            "prediction on this host is less sure"
        )
    return Diagnosis(
        kind="prediction_check",
        text=text,
        evidence=evidence,
        source="model",
        level="warn" if abs(ck.decisive_error_pct) > 10 or ck.missed else "info",
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
