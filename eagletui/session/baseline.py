"""A run of an earlier session as the baseline: ``SESSION:RUN`` resolved, folded and compared.

``SESSION`` is a recording's path or its name in the sessions dirs (resolved exactly as ``eagletui
replay`` does), ``RUN`` the launch number the runs table shows. The recording is opened indexed
(:class:`~eagletui.session.index.ReplaySource`) and only the launch/phase/benchmark events the index
already picked out are folded through the same :class:`~eagletui.core.runs.book.RunBook` as the runs table
(:func:`~eagletui.session.export.summarize_runs`), so a long session's log lines are never decoded.

The comparison itself always carries the like-for-like guard
(:func:`~eagletui.core.runs.compare.comparability`): a baseline from another day is where the model, tp,
GPU or workload drift unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagletui.core.events import GpuStats
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.compare import comparability
from eagletui.core.runs.run import Run
from eagletui.session.catalog import resolve, session_name
from eagletui.session.export import SessionReport, summarize_runs
from eagletui.session.format import SessionError
from eagletui.session.index import ReplaySource

#: How many events from the start are looked through for an ``nvidia-smi`` sample (the GPU type).
GPU_SCAN_EVENTS = 5000


class BaselineError(LookupError):
    """A ``SESSION:RUN`` that cannot serve as a baseline; the message says why, for the user."""


@dataclass
class ForeignRun:
    """A run of another recording: where it came from, the folded run, its GPU type if sampled."""

    session: str
    path: Path
    run: Run
    gpu: str = ""

    @property
    def ref(self) -> str:
        return f"{self.session}:{self.run.launch}"


def parse_ref(text: str) -> tuple[str, int]:
    """``SESSION:RUN`` → (session, launch). The last ``:`` splits, so a path may hold colons."""
    session, sep, num = text.rpartition(":")
    if not sep or not session:
        raise BaselineError(f"a baseline is SESSION:RUN (e.g. demo-eagle3:1), not {text!r}")
    try:
        launch = int(num)
    except ValueError:
        raise BaselineError(f"RUN in {text!r} is a launch number (1, 2, …), not {num!r}") from None
    if launch < 1:
        raise BaselineError(f"RUN in {text!r} is a launch number, 1 or more")
    return session, launch


def gpu_of(source: ReplaySource) -> str:
    """The GPU type of a recording: the first ``nvidia-smi`` sample near its start ("" if none)."""
    for i, (_line, _t, ev) in enumerate(source.events_from(0)):
        if isinstance(ev, GpuStats) and ev.gpus:
            name = ev.gpus[0].get("name") if isinstance(ev.gpus[0], dict) else None
            if isinstance(name, str) and name:
                return name
        if i >= GPU_SCAN_EVENTS:
            break
    return ""


def load_run(text: str, directories: list[Path]) -> ForeignRun:
    """The run ``SESSION:RUN`` names, with benchmark results; raises :class:`BaselineError`."""
    session, launch = parse_ref(text)
    path = resolve(session, directories)  # NotFound/Ambiguous are LookupErrors with their message
    try:
        with ReplaySource.open(path) as source:
            runs = summarize_runs([ev for _line, _t, ev in source.context])
            gpu = gpu_of(source)
    except (SessionError, OSError) as exc:
        raise BaselineError(f"baseline {text}: {exc}") from None
    by_launch = {r.launch: r for r in runs}
    run = by_launch.get(launch)
    name = session_name(path)
    if run is None:
        have = ", ".join(str(n) for n in sorted(by_launch)) or "none"
        raise BaselineError(f"no run {launch} in session {name} (runs: {have})")
    if not run.good_results:
        why = run.failure or (run.results[-1].error if run.results else "") or "it was never benchmarked"
        raise BaselineError(f"run {launch} of session {name} has no benchmark results ({why})")
    return ForeignRun(session=name, path=path, run=run, gpu=gpu)


def compare(current: Run, base: ForeignRun, *, gpu: str = "") -> dict[str, Any]:
    """What ``--baseline`` adds to a report: the baseline's numbers, Δ% of ``current`` vs it (at a
    setting both measured), the like-for-like verdict with its reasons, and the speculation economics
    when the baseline is a no-spec run and ``current`` a spec run (the run book's per-concurrency table,
    with what else differs between the two launches)."""
    b = base.run
    book = RunBook()
    book.runs[current.launch] = current
    book.pin_external(b, base.ref)
    deltas = book.deltas(current.launch)
    reasons = comparability(current, b, gpu_a=gpu, gpu_b=base.gpu)
    out: dict[str, Any] = {
        "session": base.session,
        "run": b.launch,
        "tok_s": b.metric("tok_s").mean,
        "accept_len": b.metric("accept_len").mean,
        "delta_pct": deltas["tok_s"].pct,
        "deltas_pct": {k: d.pct for k, d in deltas.items()},
        "comparable": not reasons,
        "reasons": reasons,
    }
    if current.is_spec and not b.is_spec:
        e = book.economics(current.launch)
        unjudged = book.unjudged_json(current.launch)
        if unjudged is not None:  # another host or config: the pair is shown, never judged
            out["economics"] = unjudged
        elif e is not None:
            out["economics"] = {
                **e.to_json(),
                "sentence": book.economics_sentence(current.launch),
                "by_concurrency": [r.to_json() for r in book.concurrency_table(current.launch)],
            }
    return out


def warning(cmp: dict[str, Any]) -> str | None:
    """The one line printed when the comparison is not like for like (None when it is)."""
    if cmp.get("comparable", True):
        return None
    return f"baseline {cmp['session']}:{cmp['run']} is not like for like: " + "; ".join(cmp["reasons"])


def attach(report: SessionReport, base: ForeignRun, *, gpu: str = "") -> SessionReport:
    """``export --baseline``: every benchmarked run of ``report`` (measured on ``gpu``, when known)
    also compared with ``base``."""
    b = base.run
    report.external = {
        "session": base.session,
        "run": b.launch,
        "file": str(base.path),
        "model": b.model,
        "tp": b.tp,
        "gpu": base.gpu or None,
        "tok_s": b.metric("tok_s").mean,
        "accept_len": b.metric("accept_len").mean,
    }
    for rec in report.records:
        if rec.run.good_results:
            rec.vs_external = compare(rec.run, base, gpu=gpu)
    return report


#: The history view looks through this many recordings at most (newest first).
HISTORY_MAX_SESSIONS = 30


def history(
    directory: Path,
    *,
    target: str,
    model: str,
    exclude: Path | None = None,
    limit: int = HISTORY_MAX_SESSIONS,
) -> list[ForeignRun]:
    """Benchmarked runs of earlier sessions in ``directory`` on the same target and model (an
    unrecorded target or model matches anything), newest session first: what the UI's history view
    offers as baselines. A recording that cannot be read is skipped (``eagletui sessions`` says why)."""
    from eagletui.session.catalog import list_sessions

    out: list[ForeignRun] = []
    skip = exclude.resolve() if exclude is not None else None
    for entry in list_sessions(directory, cache=True, limit=limit):
        s = entry.summary
        if s is None or (skip is not None and entry.path.resolve() == skip):
            continue
        if (target and s.target and s.target != target) or (model and s.model and s.model != model):
            continue
        try:
            with ReplaySource.open(entry.path) as source:
                runs = summarize_runs([ev for _line, _t, ev in source.context])
                gpu = gpu_of(source)
        except (SessionError, OSError):
            continue
        for run in runs:
            if run.good_results and (not model or not run.model or run.model == model):
                out.append(ForeignRun(session=entry.name, path=entry.path, run=run, gpu=gpu))
    return out
