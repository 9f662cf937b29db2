"""Exports of a session for spreadsheets and write-ups.

Computed from the recorded events, folded by the same :class:`~eagletui.core.runs.RunBook` as the
runs table (so an export of a recording made by any eagletui version works, never depends on UI
state, and says what the table says).
"""

from __future__ import annotations

import csv
import datetime as _dt
import os
from pathlib import Path
from typing import Any

from eagletui.core.economics import crossover
from eagletui.core.events import PHASES, ConfigChanged, Event
from eagletui.core.redact import Redactor
from eagletui.core.runs import KEY_FLAGS, Run, RunBook


def redact_events(events: list[Event], redactor: Redactor | None = None) -> list[Event]:
    """The events as a recording would hold them: every secret replaced.

    Exports are shared like recordings, and live events (or an old recording) may still carry a key.
    Two passes: everything is learnt first, so a key seen late (``api_key=…`` in a server-args line)
    also disappears from the lines before it."""
    r = redactor or Redactor()
    for ev in events:
        r.learn_event(ev)
    return [Event.from_dict(r.event_dict(ev)) for ev in events]


def summarize_book(events: list[Event]) -> RunBook:
    """The run book's fold of the (redacted) events, so an export says what the runs table says."""
    book = RunBook()
    for ev in redact_events(events):
        book.apply(ev)
    return book


def summarize_runs(events: list[Event]) -> list[Run]:
    """One run per launch number, in launch order. Secrets are already replaced."""
    book = summarize_book(events)
    return [book.runs[k] for k in sorted(book.runs)]


#: Speculation economics vs the no-spec reference run (empty for no-spec runs or without one).
ECONOMICS_COLUMNS: tuple[str, ...] = (
    "vs_no_spec",
    "speedup",
    "econ_concurrency",
    "cycle_ms",
    "baseline_step_ms",
    "break_even_accept_len",
    "needed_cycle_ms",
    "crossover_concurrency",
    "economics",
)


def economics_cells(book: RunBook, launch: int) -> list[Any]:
    """The :data:`ECONOMICS_COLUMNS` of one run."""
    e = book.economics(launch)
    ref = book.nospec_reference(launch)
    if e is None or ref is None:
        return [""] * len(ECONOMICS_COLUMNS)
    points = book.economics_points(launch)
    cross = crossover(points) if len(points) > 1 else None
    return [
        ref.launch,
        round(e.speedup, 4),
        e.concurrency or "",
        round(e.cycle_ms, 3),
        round(e.baseline_step_ms, 3),
        round(e.break_even_accept_len, 3),
        round(e.needed_cycle_ms, 3),
        "" if cross is None else cross,
        book.economics_sentence(launch) or "",
    ]


def economics_json(book: RunBook, launch: int) -> dict[str, Any] | None:
    """``{"vs", "speedup", …, "points": [...], "crossover", "sentence"}`` or None (no reference)."""
    e = book.economics(launch)
    ref = book.nospec_reference(launch)
    if e is None or ref is None:
        return None
    points = book.economics_points(launch)
    return {
        "vs": ref.launch,
        **e.to_json(),
        "points": [p.to_json() for _, p in points],
        "crossover": crossover(points) if len(points) > 1 else None,
        "sentence": book.economics_sentence(launch),
    }


def _phase_s(run: Run, phase: str) -> Any:
    secs = run.phases.get(phase)
    return "" if secs is None else round(secs, 3)


def _iso(wall: float | None) -> str:
    if wall is None:
        return ""
    return _dt.datetime.fromtimestamp(wall).astimezone().isoformat(timespec="seconds")


def _median(stats: dict[str, Any], name: str) -> Any:
    d = stats.get(name)
    return d.get("median") if isinstance(d, dict) else None


def _safe_cell(value: Any) -> Any:
    """Spreadsheets execute cells starting with ``=``/``+``/``-``/``@``; config values are user text."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
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
    *(f"{p}_s" for p in PHASES if p != "ready"),
    "bench_runs",
    "output_throughput",
    "accept_length",
    "ttft_median_ms",
    "itl_median_ms",
    "requests",
    "failed_requests",
    "bench_duration_s",
    *ECONOMICS_COLUMNS,
)


def export_runs_csv(events: list[Event], path: str | Path) -> int:
    """One row per launch, with its last successful benchmark; returns the number of rows."""
    book = summarize_book(events)
    rows = [book.runs[k] for k in sorted(book.runs)]
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
                *(_phase_s(r, p) for p in PHASES if p != "ready"),
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
            row += economics_cells(book, r.launch)
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
    """A human summary: every launch with its config, phase durations and benchmark results."""
    book = summarize_book(events)
    runs = [book.runs[k] for k in sorted(book.runs)]
    changes = [e for e in events if isinstance(e, ConfigChanged)]
    out = [f"# {title}", ""]
    if events:
        out.append(f"{len(runs)} launch(es), {len(changes)} config change(s), from {_iso(events[0].wall)}.")
        out.append("")
    if not runs:
        out.append("No launches recorded.")
        return "\n".join(out) + "\n"

    out += ["## Overview", "", "| launch | outcome | ready after | tok/s | accept len | TTFT p50 (ms) |"]
    out.append("|---:|---|---:|---:|---:|---:|")
    for r in runs:
        ok = [b for b in r.results if not b.error]
        b = ok[-1] if ok else None
        out.append(
            f"| {r.launch} | {_md(r.outcome)} | {_num(_round(r.ready_after))}s | "
            f"{_num(b.output_throughput if b else None)} | {_num(b.accept_length if b else None, 2)} | "
            f"{_num(_median(b.stats, 'ttft_ms') if b else None)} |"
        )
    out.append("")

    for r in runs:
        out += [f"## Launch {r.launch}" + (f" on `{_md(r.target)}`" if r.target else ""), ""]
        args = r.args
        if r.started_wall is not None:
            out.append(f"- started: {_iso(r.started_wall)}")
        if r.model:
            out.append(f"- model: `{_md(r.model)}`" + (f", tp {r.tp}" if r.tp is not None else ""))
        out.append(f"- outcome: **{_md(r.outcome)}**" + (f" ({_md(r.failure)})" if r.failure else ""))
        if r.diff:
            out.append(f"- changes: {_md(_fmt_changes(r.diff))}")
        if args:
            out.append(
                "- args: " + " ".join(f"`{_md(k)}={_md(_fmt_flag(v))}`" for k, v in sorted(args.items()))
            )
        if r.env:
            out.append("- env: " + " ".join(f"`{_md(k)}={_md(v)}`" for k, v in sorted(r.env.items())))
        sentence = book.economics_sentence(r.launch)
        if sentence:
            out.append(f"- economics: {_md(sentence)}")
        out.append("")
        if r.phases:
            out += ["| phase | seconds |", "|---|---:|"]
            ordered = [p for p in PHASES if p in r.phases] + [p for p in r.phases if p not in PHASES]
            out += [f"| {_md(p)} | {_num(_phase_s(r, p))} |" for p in ordered]
            out.append("")
        if r.results:
            out += [
                "| bench | runner | tok/s | accept len | TTFT p50 | ITL p50 | requests | failed | duration |",
                "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
            ]
            for b in r.results:
                out.append(
                    f"| {b.bench} | {_md(b.runner)} | {_num(b.output_throughput)} | {_num(b.accept_length, 2)} | "
                    f"{_num(_median(b.stats, 'ttft_ms'))} | {_num(_median(b.stats, 'itl_ms'))} | {b.requests} | "
                    f"{b.failed} | {_num(b.duration_s)}s |" + (f" error: {_md(b.error)}" if b.error else "")
                )
            out.append("")
    return "\n".join(out)


def export_runs_json(events: list[Event]) -> dict[str, Any]:
    """``{"schema": 1, "runs": [{"launch", "outcome", "tok_s", "accept_len", "economics"}]}``: the run
    book for scripts, with each spec run's economics vs its no-spec reference (null when none)."""
    book = summarize_book(events)
    runs = []
    for k in sorted(book.runs):
        r = book.runs[k]
        runs.append(
            {
                "launch": k,
                "target": r.target,
                "model": r.model,
                "spec": r.is_spec,
                "outcome": str(r.outcome),
                "failure": r.failure,
                "tok_s": r.metric("tok_s").mean,
                "accept_len": r.metric("accept_len").mean,
                "ttft_ms": r.metric("ttft_ms").mean,
                "repeats": len(r.good_results),
                "economics": economics_json(book, k),
            }
        )
    return {"schema": 1, "baseline": book.baseline, "runs": runs}
