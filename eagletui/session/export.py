"""Exports of a session for spreadsheets and write-ups.

Computed from the recorded events, folded by the same :class:`~eagletui.core.runs.book.RunBook` as the
runs table (so an export of a recording made by any eagletui version works, never depends on UI
state, and says what the table says).
"""

from __future__ import annotations

import csv
import datetime as _dt
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagletui.core.diagnosis.fold import Diagnoser
from eagletui.core.events import (
    LOG_PHASES,
    BenchmarkResult,
    ConfigChanged,
    Event,
    LaunchStarted,
)
from eagletui.core.predict.next_launch import explain
from eagletui.core.profile.redact import Redactor
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.frontier import frontiers
from eagletui.core.runs.run import Run, RunVerdict
from eagletui.core.servers.flags import KEY_FLAGS
from eagletui.core.textsafe import escaped

if TYPE_CHECKING:
    from eagletui.session.export_render import (
        EXTERNAL_CSV_COLUMNS as EXTERNAL_CSV_COLUMNS,
    )
    from eagletui.session.export_render import (
        REPORT_CSV_COLUMNS as REPORT_CSV_COLUMNS,
    )


def redact_events(events: list[Event], redactor: Redactor | None = None) -> list[Event]:
    """The events as a recording would hold them: every secret replaced.

    Exports are shared like recordings, and live events (or an old recording) may still carry a key.
    Two passes: everything is learnt first, so a key seen late (``api_key=…`` in a server-args line)
    also disappears from the lines before it."""
    r = redactor or Redactor()
    for ev in events:
        r.learn_event(ev)
    return [Event.from_dict(r.event_dict(ev)) for ev in events]


def summarize_runs(events: list[Event]) -> list[Run]:
    """One run per launch number, in launch order: the run book's fold, so an export says what the
    runs table says. Secrets are already replaced."""
    events = redact_events(events)
    book = RunBook()
    for ev in events:
        book.apply(ev)
    return [book.runs[k] for k in sorted(book.runs)]


def _phase_s(run: Run, phase: str) -> Any:
    secs = run.phases.get(phase)
    return "" if secs is None else round(secs, 3)


def _iso(wall: float | None) -> str:
    if wall is None:
        return ""
    try:
        return _dt.datetime.fromtimestamp(wall).astimezone().isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):  # a clock no calendar holds: say so, never raise
        return f"(bad time {wall!r})"


def _median(stats: dict[str, Any], name: str) -> Any:
    d = stats.get(name)
    return d.get("median") if isinstance(d, dict) else None


def _safe_cell(value: Any) -> Any:
    """Spreadsheets execute cells starting with ``=``/``+``/``-``/``@``; config values are user text.
    Control characters (server text: a failure message, a target name) are written as backslash
    escapes (``\\x1b``), never raw: a CSV is read by other programs and ``cat`` to terminals."""
    if isinstance(value, str):
        if value[:1] in ("=", "+", "-", "@", "\t", "\r"):
            value = "'" + value
        return escaped(value)
    return value


CSV_COLUMNS: tuple[str, ...] = (
    "launch",
    "started",
    "target",
    "model",
    "tp",
    *KEY_FLAGS,
    "env",
    "changes",
    "outcome",
    "failure",
    "ready_after_s",
    *(f"{p}_s" for p in LOG_PHASES if p != "ready"),
    "bench_runs",
    "output_throughput",
    "accept_length",
    "ttft_median_ms",
    "itl_median_ms",
    "requests",
    "failed_requests",
    "bench_duration_s",
)


def export_runs_csv(events: list[Event], path: str | Path) -> int:
    """One row per launch, with its last successful benchmark; returns the number of rows."""
    rows = summarize_runs(events)
    # 0600 like the recording it comes from: run configs and host names are the user's business.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            ok = [b for b in r.results if not b.error]
            b = ok[-1] if ok else None
            args = r.args
            row: list[Any] = [
                r.launch,
                _iso(r.started_wall),
                r.target,
                r.model,
                r.tp if r.tp is not None else "",
                *(_fmt_flag(args.get(f)) for f in KEY_FLAGS),
                " ".join(f"{k}={v}" for k, v in sorted(r.env.items())),
                _fmt_changes(r.diff),
                r.outcome,
                r.failure or "",
                _round(r.ready_after),
                *(_phase_s(r, p) for p in LOG_PHASES if p != "ready"),
                len(r.results),
            ]
            if b is not None:
                row += [
                    b.output_throughput,
                    b.accept_length if b.accept_length is not None else "",
                    _median(b.stats, "ttft_ms") or "",
                    _median(b.stats, "itl_ms") or "",
                    b.requests,
                    b.failed,
                    b.duration_s,
                ]
            else:
                row += [""] * 7
            w.writerow([_safe_cell(c) for c in row])
    return len(rows)


def _round(v: float | None) -> Any:
    return "" if v is None else round(v, 3)


def _fmt_flag(v: Any) -> Any:
    if v is None or v is False:
        return ""
    return "on" if v is True else v


def _fmt_changes(diff: dict[str, Any]) -> str:
    parts = []
    for key, change in diff.items():
        name = key.split(":", 1)[-1]
        if isinstance(change, list | tuple) and len(change) == 2:
            parts.append(f"{name} {change[0]}→{change[1]}")
        else:
            parts.append(f"{name}={change}")
    return " ".join(parts)


def _md(text: Any) -> str:
    """Table-cell safe: pipes and newlines would break the table."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _num(v: Any, digits: int = 1) -> str:
    if v is None or v == "":
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def export_markdown(events: list[Event], title: str = "eagletui session") -> str:
    """A human summary of ``events``: the report of ``eagletui export --format md``."""
    from eagletui.session.export_render import render_markdown

    return render_markdown(build_report(events, title=title))


# ---------------------------------------------------------------------------------------- reports
#
# ``eagletui export``: one record per run with everything a write-up needs — the config diff vs the
# baseline, phase durations, the metrics and their Δ %, the verdict, the speculation economics and the
# exact launch command with its environment — rendered as Markdown, CSV or JSON (docs/export-json.md).

#: The events a report is folded from; log lines, samples and telemetry say nothing a report shows,
#: so a long recording is streamed through without holding its log.
REPORT_TYPES: frozenset[str] = frozenset(
    {
        "launch_started",
        "launch_detected",
        "phase_started",
        "phase_finished",
        "server_ready",
        "server_failed",
        "server_stopped",
        "process_exited",
        "bench_started",
        "bench_result",
        "config_changed",
        # what the diagnoses rest on (core/diagnosis/fold.py): the log's notes, the preflight's host facts and
        # the step profiles; the stats lines stay out (their evidence is in the notes)
        "launch_note",
        "host_facts",
        "profile_captured",
        "baseline_pinned",
        # a link that dropped during a benchmark makes its result invalid
        "connection",
    }
)

FORMATS: tuple[str, ...] = ("md", "csv", "json")

#: The JSON document's ``format``/``version`` (bumped when a field changes meaning or goes away).
JSON_FORMAT = "eagletui-export"
JSON_VERSION = 2  # 2: per-setting numbers, "invalid" verdicts, comparisons, by_concurrency, accept


@dataclass
class RunRecord:
    """One run as a report shows it: the run book's row plus the launch command, the benchmarks'
    concurrency and the economics. Every string in it is already redacted."""

    run: Run
    is_baseline: bool
    baseline_diff: dict[str, Any]
    verdict: str | None
    reasons: list[str]
    alarms: list[str]
    warnings: list[str]
    deltas: dict[str, dict[str, Any]]
    command: list[str]
    concurrency: int | None
    economics: dict[str, Any] | None
    economics_vs: int | None
    benches: list[dict[str, Any]] = field(default_factory=list)
    #: the two comparisons the verdict used, by name: ``vs_baseline`` and ``vs_no_spec`` (run, Δ/speedup,
    #: the setting compared at, the noise band, and for the no-spec one what else differs)
    comparisons: dict[str, Any] = field(default_factory=dict)
    #: the spec run's table per concurrency vs its no-spec reference (never a mean across them)
    by_concurrency: list[dict[str, Any]] = field(default_factory=list)
    #: the accept length by each definition, its formula and source; acceptance per draft position
    accept: dict[str, Any] = field(default_factory=dict)
    #: is there a baseline at all (the first run with valid results, or a pinned one)?
    has_baseline: bool = True
    #: Δ and the like-for-like guard vs a run of another session (``export --baseline``), else None
    vs_external: dict[str, Any] | None = None
    #: the run's diagnoses (docs/diagnosis.md), as ``parse --json`` and ``bench --json`` carry them
    diagnosis: list[dict[str, Any]] = field(default_factory=list)
    #: the config vs the baseline in words, as the runs table says it (``RunBook.diff_text``)
    diff_text: str = ""
    #: the launch failed after this run was measured: the rule in words (``RunBook.failed_after``)
    failed_after: str | None = None
    #: per concurrency: per-request latencies under the ``[slo]``, attainment and goodput (issue 35)
    slo: list[dict[str, Any]] = field(default_factory=list)

    @property
    def launch(self) -> int:
        return self.run.launch

    @property
    def command_line(self) -> str:
        """The launch as one shell line, its environment first: what to paste to run it again."""
        env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in sorted(self.run.env.items()))
        cmd = shlex.join(str(a) for a in self.command)
        return f"{env} {cmd}".strip() if cmd else env


@dataclass
class SessionReport:
    """Runs of one session, with where they came from (header of the recording)."""

    records: list[RunRecord]
    baseline: int | None
    header: dict[str, Any] = field(default_factory=dict)
    config_changes: int = 0
    started_wall: float | None = None
    title: str = "eagletui session"
    #: the run of another session every run is also compared with (``export --baseline``)
    external: dict[str, Any] | None = None
    frontier: list[dict[str, Any]] = field(default_factory=list)  # core/runs/frontier.py, per host


def report_events(events: Iterable[Event]) -> list[Event]:
    """The events of ``events`` a report needs (see :data:`REPORT_TYPES`)."""
    return [ev for ev in events if ev.type in REPORT_TYPES]


def _metric_dict(m: Any) -> dict[str, Any]:
    return {"mean": m.mean, "stdev": m.stdev, "n": m.n}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _economics_for(run: Run, book: RunBook) -> tuple[dict[str, Any] | None, int | None]:
    """The run book's economics of a spec run (the same numbers as the runs table: per-request tok/s
    against its no-spec reference at the headline concurrency), with ``pays``, the crossover across
    concurrencies, the sentence and the reference's differences."""
    econ = book.economics(run.launch)
    ref = book.reference(run.launch)
    if ref is not None and not ref.like_for_like:
        return book.unjudged_json(run.launch), (ref.run.launch if ref.run is not book.external else None)
    if econ is None or ref is None:
        return None, None
    extra = {
        "crossover": book.crossover(run.launch),
        "across": book.across(run.launch),
        "sentence": book.economics_sentence(run.launch),
        "vs": ref.label,
        "like_for_like": ref.like_for_like,
        "differences": list(ref.differences),
    }
    return econ.to_json() | extra, (ref.run.launch if ref.run is not book.external else None)


def _comparisons(run: Run, book: RunBook) -> dict[str, Any]:
    """The two comparisons, named: vs the baseline (Δ tok/s) and vs the no-spec reference (speedup)."""
    out: dict[str, Any] = {}
    base = book.base_run()
    if base is not None and base is not run and run.good_results:
        d = book.deltas(run.launch)["tok_s"]
        head = run.headline()
        out["vs_baseline"] = {
            "run": book.label_of(base),
            "delta_tok_s_pct": d.pct,
            "outside_noise": d.flagged if d.pct is not None else None,
            "noise": d.band.text() if d.band is not None else None,
            "concurrency": head.concurrency if head is not None else None,
        }
    ref = book.reference(run.launch)
    row = book.headline_row(run.launch)
    e = row.economics if row is not None else None
    if ref is not None:
        out["vs_no_spec"] = {
            "run": ref.label,
            "like_for_like": ref.like_for_like,
            "differences": list(ref.differences),
            "unjudged": ref.unjudged() or None,
            "speedup": e.speedup if e is not None else None,
            "call": e.call if e is not None else None,
            "noise": row.gap.text() if row is not None and row.gap is not None else None,
            "concurrency": e.concurrency if e is not None else None,
        }
    return out


def build_report(
    events: Iterable[Event], header: dict[str, Any] | None = None, title: str = ""
) -> SessionReport:
    """Fold a session's events (any iterable: a recording is streamed) into a :class:`SessionReport`.
    Secrets are redacted before anything is folded: two passes over the few report events. The
    verdict thresholds are the ones the recording's launches carry (as the UI's replay judges)."""
    kept = redact_events(report_events(events))
    book = RunBook()
    diag = Diagnoser()
    diag.add(kept)
    commands: dict[int, list[str]] = {}
    changes = 0
    for ev in kept:
        book.apply(ev)
        if isinstance(ev, LaunchStarted):
            commands[ev.launch] = [str(a) for a in ev.command]
        elif isinstance(ev, ConfigChanged):
            changes += 1
    records: list[RunRecord] = []
    for n in sorted(book.runs):
        run = book.runs[n]
        verdict, reasons = book.verdict_for(n)
        deltas = {
            name: {"pct": d.pct, "flagged": d.flagged, "better": d.better}
            for name, d in book.deltas(n).items()
        }
        econ, econ_vs = _economics_for(run, book)
        head = run.headline()
        benches = [_bench_dict(b, run, p) for b, p in run.result_problems()]
        records.append(
            RunRecord(
                run=run,
                is_baseline=n == book.baseline,
                baseline_diff=book.diff(n),
                verdict=None if verdict == RunVerdict.NONE else str(verdict),
                reasons=reasons,
                alarms=book.alarms(n),
                warnings=book.warnings(n),
                deltas=deltas,
                command=commands.get(n, []),
                concurrency=head.concurrency if head is not None else None,
                economics=econ,
                economics_vs=econ_vs,
                benches=benches,
                comparisons=_comparisons(run, book),
                by_concurrency=[r.to_json() for r in book.concurrency_table(n)] if run.is_spec else [],
                accept=book.accept_definitions(n) | {"per_position_delta_pp": book.position_deltas(n)},
                has_baseline=book.base_run() is not None,
                diagnosis=[d.to_json() for d in explain(diag, book, n)],
                diff_text=book.diff_text(n),
                failed_after=book.failed_after(n),
                slo=[{"concurrency": g.concurrency, **book.slo_stats(run, g).to_json()} for g in run.groups()],
            )
        )
    started = min((r.started_wall for r in book.runs.values() if r.started_wall is not None), default=None)
    return SessionReport(
        records=records,
        baseline=book.baseline,
        header=dict(header or {}),
        config_changes=changes,
        started_wall=started,
        title=title or "eagletui session",
        frontier=[f.to_json() for f in frontiers(book)],
    )


def _bench_dict(b: BenchmarkResult, run: Run, problems: tuple[str, ...] = ()) -> dict[str, Any]:
    conc = run.bench_concurrency.get(b.bench)
    return {
        "bench": b.bench,
        "runner": b.runner,
        "tok_s": b.output_throughput,
        "accept_len": b.accept_length,
        "ttft_p50_ms": _median(b.stats, "ttft_ms"),
        "itl_p50_ms": _median(b.stats, "itl_ms"),
        "requests": b.requests,
        "failed": b.failed,
        "duration_s": b.duration_s,
        "concurrency": conc,
        "workload_fingerprint": b.workload_fingerprint,
        "error": b.error or None,
        "valid": not problems,
        "invalid_reasons": list(problems),
        "step_ms": b.step_ms,
    }


def _diff_text(rec: RunRecord) -> str:
    return rec.diff_text


# -- JSON ----------------------------------------------------------------------------------------


def report_json(report: SessionReport) -> dict[str, Any]:
    """The JSON document (docs/export-json.md)."""
    h = report.header
    runs = []
    for rec in report.records:
        r = rec.run
        runs.append(
            {
                "launch": r.launch,
                "baseline": rec.is_baseline,
                "started": _iso(r.started_wall) or None,
                "target": r.target,
                "model": r.model,
                "tp": r.tp,
                "outcome": str(r.outcome),
                "failure": r.failure,
                "failure_kind": r.failure_kind,
                "diff_vs_baseline": rec.baseline_diff,
                "diff_text": _diff_text(rec),
                "failed_after_measurement": rec.failed_after,
                "changes": r.diff,
                "args": dict(r.config.get("args") or {}) if isinstance(r.config, dict) else {},
                "env": r.env,
                "command": rec.command,
                "command_line": rec.command_line,
                "phases_s": dict(r.phases),
                "ready_after_s": r.ready_after,
                "startup": {
                    "before_first_line_s": r.before_first_line,
                    "in_no_phase_s": r.in_no_phase,
                    "gaps": list((r.startup or {}).get("gaps") or []),
                },
                "tok_s": _metric_dict(r.metric("tok_s")),
                "accept_len": _metric_dict(r.metric("accept_len")),
                "ttft_ms": _metric_dict(r.metric("ttft_ms")),
                "delta_pct": {k: v["pct"] for k, v in rec.deltas.items()},
                "delta_significant": {k: v["flagged"] for k, v in rec.deltas.items()},
                "verdict": rec.verdict,
                "reasons": rec.reasons,
                "alarms": rec.alarms,
                "warnings": rec.warnings,
                "concurrency": rec.concurrency,
                "economics": rec.economics,
                "economics_vs": rec.economics_vs,
                "comparisons": rec.comparisons,
                "by_concurrency": rec.by_concurrency,
                "slo_by_concurrency": rec.slo,
                "accept": rec.accept,
                "benchmarks": rec.benches,
                "diagnosis": rec.diagnosis,
                **({"vs_baseline": rec.vs_external} if report.external is not None else {}),
            }
        )
    return {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "session": {
            "title": report.title,
            "target": h.get("target"),
            "profile": h.get("profile"),
            "created": h.get("created"),
            "launches": len(report.records),
            "config_changes": report.config_changes,
        },
        "baseline": report.baseline,
        "runs": runs,
        "frontier": report.frontier,
        **({"external_baseline": report.external} if report.external is not None else {}),
    }


def write_private(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` as 0600 (an existing file is narrowed to 0600 first): exports hold
    run configs and host names, the user's business like the recording they come from."""
    p = Path(path)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fd = -1
            fh.write(text)
    finally:
        if fd >= 0:
            os.close(fd)
    return p


def export_path(directory: str | Path, stem: str, fmt: str) -> Path:
    """A fresh ``<stem>-export.<ext>`` in ``directory`` (``-2``, ``-3`` … rather than overwrite)."""
    d = Path(directory)
    ext = {"md": "md", "csv": "csv", "json": "json"}[fmt]
    p = d / f"{stem}-export.{ext}"
    n = 2
    while p.exists():
        p = d / f"{stem}-export-{n}.{ext}"
        n += 1
    return p


def export_stem(model: object, driver: object) -> str:
    """The name an export from the UI is filed under: the recording's (being written, or replayed),
    else the target and the time."""
    from eagletui.session.catalog import session_name
    from eagletui.session.format import target_slug

    path = getattr(getattr(model, "recorder", None), "path", None)
    if path is None:
        src = getattr(getattr(driver, "source", None), "source", None)  # StreamReplayer → ReplaySource
        path = getattr(src, "path", None)
    if path is not None:
        return session_name(Path(path))
    state = getattr(model, "state", None)
    target = str(getattr(state, "target", "") or "session")
    return f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{target_slug(target)}"
