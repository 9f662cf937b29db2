"""The renderers of ``eagletui export``: a :class:`~eagletui.session.export.SessionReport` as JSON,
CSV or Markdown.

Kept apart from :mod:`eagletui.session.export`, which folds a recording into the report (runs,
baseline, economics, redaction): the fold is what the runs table agrees with, the rendering is only
layout, and each stays a readable size. ``eagletui.session.export`` re-exports these names.
"""

from __future__ import annotations

import csv
import io
import json
import shlex
from typing import Any

from eagletui.core.events import LOG_PHASES, PHASES
from eagletui.core.profile.model import format_diff
from eagletui.core.runs.frontier_text import frontier_lines
from eagletui.core.runs.run import Run
from eagletui.core.textsafe import inert_lines, json_inert
from eagletui.session.export import (
    FORMATS,
    RunRecord,
    SessionReport,
    _diff_text,
    _iso,
    _md,
    _num,
    _phase_s,
    _round,
    _safe_cell,
    report_json,
)


def render_json(report: SessionReport) -> str:
    # ensure_ascii=False leaves DEL, C1 and bidi controls raw: written as \\uXXXX instead
    return json_inert(json.dumps(report_json(report), indent=2, ensure_ascii=False, default=str)) + "\n"


# -- CSV -----------------------------------------------------------------------------------------

REPORT_CSV_COLUMNS: tuple[str, ...] = (
    "launch",
    "baseline",
    "started",
    "target",
    "model",
    "tp",
    "diff_vs_baseline",
    "outcome",
    "failure",
    "ready_after_s",
    *(f"{p}_s" for p in LOG_PHASES if p != "ready"),
    "before_first_line_s",
    "in_no_phase_s",
    "repeats",
    "tok_s",
    "tok_s_stdev",
    "accept_len",
    "ttft_p50_ms",
    "delta_tok_s_pct",
    "delta_accept_len_pct",
    "delta_ttft_ms_pct",
    "verdict",
    "reasons",
    "alarms",
    "vs_baseline",
    "vs_baseline_noise",
    "concurrency",
    "speedup",
    "break_even_accept_len",
    "break_even_reachable",
    "max_accept",
    "cycle_ms",
    "needed_cycle_ms",
    "economics_vs",
    "economics_like_for_like",
    "economics_differences",
    "speedup_by_concurrency",
    "accept_formula",
    "accept_per_position",
    "slo_attainment",
    "goodput_req_s",
    "goodput_tok_s",
    "meets_slo",
    "on_frontier",
    "env",
    "command",
    "why",
)


#: Appended to the CSV with ``export --baseline SESSION:RUN``.
EXTERNAL_CSV_COLUMNS: tuple[str, ...] = (
    "vs_baseline_delta_tok_s_pct",
    "vs_baseline_comparable",
    "vs_baseline_reasons",
)


def render_csv(report: SessionReport) -> str:

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    ext = report.external is not None
    w.writerow(REPORT_CSV_COLUMNS + (EXTERNAL_CSV_COLUMNS if ext else ()))
    for rec in report.records:
        r = rec.run
        e = rec.economics or {}
        vb = rec.comparisons.get("vs_baseline") or {}
        tok = r.metric("tok_s")
        row: list[Any] = [
            r.launch,
            "yes" if rec.is_baseline else "",
            _iso(r.started_wall),
            r.target,
            r.model,
            r.tp if r.tp is not None else "",
            _diff_text(rec),
            str(r.outcome),
            r.failure or "",
            _round(r.ready_after),
            *(_phase_s(r, p) for p in LOG_PHASES if p != "ready"),
            _round(r.before_first_line),
            _round(r.in_no_phase),
            len(r.good_results),
            _round(tok.mean),
            _round(tok.stdev),
            _round(r.metric("accept_len").mean),
            _round(r.metric("ttft_ms").mean),
            *(_round(rec.deltas[k]["pct"]) for k in ("tok_s", "accept_len", "ttft_ms")),
            rec.verdict or "",
            "; ".join(rec.reasons),
            "; ".join(rec.alarms),
            vb.get("run", ""),
            vb.get("noise") or "",
            rec.concurrency if rec.concurrency is not None else "",
            e.get("speedup", ""),
            _blank(e.get("break_even_accept_len")),
            _yes_no(e.get("break_even_reachable")),
            _blank(e.get("max_accept")),
            e.get("cycle_ms", ""),
            e.get("needed_cycle_ms", ""),
            rec.economics_vs if rec.economics_vs is not None else (e.get("vs", "") if rec.economics else ""),
            _yes_no(e.get("like_for_like")),
            "; ".join(e.get("differences") or []),
            " ".join(
                f"c{c['concurrency']}:{c['speedup']:.3f}"
                for c in rec.by_concurrency
                if c.get("speedup") is not None
            ),
            ((rec.accept.get("definitions") or {}).get("shown") or {}).get("formula", ""),
            " ".join(f"{x:.3f}" for x in rec.accept.get("per_position") or []),
            *_slo_cells(rec, report.frontier),
            " ".join(f"{k}={v}" for k, v in sorted(r.env.items())),
            shlex.join(rec.command),
            " | ".join(str(d.get("text", "")) for d in rec.diagnosis),
        ]
        if ext:
            v = rec.vs_external or {}
            row += [
                _round(v.get("delta_pct")),
                "" if not v else ("yes" if v.get("comparable") else "no"),
                "; ".join(v.get("reasons") or []),
            ]
        w.writerow([_safe_cell(c) for c in row])
    return buf.getvalue()


def _slo_cells(rec: RunRecord, frontier: list[dict[str, Any]]) -> list[Any]:
    """At the run's headline concurrency: attainment, goodput req/s and tok/s, whether it meets the SLO;
    then the concurrencies of this run on its frontier (``c16 c64``)."""
    head = next((c for c in rec.slo if c["concurrency"] == rec.concurrency), {})
    gp = head.get("goodput") or {}
    on = sorted(
        p["concurrency"]
        for f in frontier
        for c in f.get("curves") or []
        if rec.launch in (c.get("launches") or [])
        for p in c.get("points") or []
        if p.get("on_frontier")
    )
    return [
        _round(head.get("slo_attainment")),
        _round(gp.get("req_s")),
        _round(gp.get("tok_s")),
        _yes_no(head.get("meets_slo")),
        " ".join(f"c{c}" for c in on),
    ]


def _blank(v: Any) -> Any:
    return "" if v is None else v


def _yes_no(v: Any) -> str:
    return "" if v is None else ("yes" if v else "no")


# -- Markdown ------------------------------------------------------------------------------------


def _pct(d: dict[str, Any]) -> str:
    pct = d.get("pct")
    if pct is None:
        return "–"
    mark = "" if d.get("flagged") else " ~"  # ~: inside the noise band
    return f"{pct:+.1f}%{mark}"


def _secs(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}s"


def _fence(text: str) -> str:
    """A fenced block that no backtick run inside ``text`` can close."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}sh\n{text}\n{fence}"


def render_markdown(report: SessionReport) -> str:
    """Ready to paste into a report: an overview table, then one section per run with its command.
    Read by people, in a terminal as often as not: every control character from the server's text
    (a failure message, a target name) is shown inert, as the UI shows it (``core.textsafe``)."""
    return inert_lines(_markdown(report))


def _markdown(report: SessionReport) -> str:
    out = [f"# {_md(report.title)}", ""]
    h = report.header
    facts = []
    if h.get("target"):
        facts.append(f"target `{_md(h['target'])}`")
    if report.started_wall is not None:
        facts.append(f"from {_iso(report.started_wall)}")
    facts.append(f"{len(report.records)} launch(es), {report.config_changes} config change(s)")
    if report.baseline is not None:
        facts.append(f"baseline #{report.baseline}")
    out += [", ".join(facts) + ".", ""]
    if not report.records:
        out.append("No launches recorded.")
        return "\n".join(out) + "\n"
    out += [
        "## Runs",
        "",
        "| # | change vs baseline | outcome | ready | tok/s | Δ tok/s | accept | Δ accept | TTFT p50 ms | verdict | speedup |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for rec in report.records:
        r = rec.run
        sp = (rec.economics or {}).get("speedup")
        out.append(
            f"| {r.launch}{' ★' if rec.is_baseline else ''} | {_md(_diff_text(rec))} | {_md(r.outcome)} | "
            f"{_secs(r.ready_after)} | {_md(r.metric('tok_s').text(1))} | {_pct(rec.deltas['tok_s'])} | "
            f"{_md(r.metric('accept_len').text(2))} | {_pct(rec.deltas['accept_len'])} | "
            f"{_md(r.metric('ttft_ms').text(1))} | {_md(rec.verdict or '–')} | "
            f"{f'{sp:.2f}×' if isinstance(sp, int | float) else '–'} |"
        )
    out += ["", "★ baseline; Δ vs the baseline, `~` = within the run-to-run noise.", ""]
    if report.external is not None:
        out += _md_external(report)
    for f in report.frontier:  # per host: every point, the frontier marked (*), SLO misses (x)
        out += ["## Frontier", "", "```", *frontier_lines(f, all_points=True), "```", ""]
        out += ["`*` on the frontier, `x` misses the SLO, `·` another point does better on both axes.", ""]
    for rec in report.records:
        out += _md_run(rec)
    return "\n".join(out)


def _md_external(report: SessionReport) -> list[str]:
    """The runs against the run of another session given with ``--baseline``, with the guard."""
    x = report.external or {}
    ref = f"{x.get('session')}:{x.get('run')}"
    out = [
        f"## vs {_md(ref)}",
        "",
        f"Baseline: run {_md(x.get('run'))} of session `{_md(x.get('session'))}`, "
        f"{_num(x.get('tok_s'))} tok/s.",
        "",
        "| # | tok/s | Δ tok/s | Δ accept | like for like |",
        "|---:|---:|---:|---:|---|",
    ]
    for rec in report.records:
        v = rec.vs_external
        if not v:
            continue
        d = v.get("deltas_pct") or {}
        like = "yes" if v.get("comparable") else "no: " + "; ".join(v.get("reasons") or [])
        out.append(
            f"| {rec.launch} | {_md(rec.run.metric('tok_s').text(1))} | {_pct({'pct': d.get('tok_s'), 'flagged': True})} | "
            f"{_pct({'pct': d.get('accept_len'), 'flagged': True})} | {_md(like)} |"
        )
    return [*out, ""]


def _md_run(rec: RunRecord) -> list[str]:
    r = rec.run
    out = [
        f"## Launch {r.launch}"
        + (f" on `{_md(r.target)}`" if r.target else "")
        + (" (baseline)" if rec.is_baseline else ""),
        "",
    ]
    out += _md_facts(rec)
    out += _md_comparisons(rec)
    out += _md_accept(rec)
    out += _md_by_concurrency(rec)
    out.append("")
    out += _md_diagnosis(rec)
    if rec.command or r.env:
        out += ["Launch command (secrets redacted):", "", _fence(rec.command_line), ""]
    out += _md_phases(r)
    out += _md_benches(rec)
    return out


def _md_facts(rec: RunRecord) -> list[str]:
    """A run's bullets: when, which model, how it ended, what changed, its verdict, alarms and notes."""
    r = rec.run
    out: list[str] = []
    if r.started_wall is not None:
        out.append(f"- started: {_iso(r.started_wall)}")
    if r.model:
        out.append(f"- model: `{_md(r.model)}`" + (f", tp {r.tp}" if r.tp is not None else ""))
    out.append(f"- outcome: **{_md(r.outcome)}**" + (f" ({_md(r.failure)})" if r.failure else ""))
    if not rec.is_baseline:
        out.append(f"- vs baseline: {_md(_diff_text(rec))}")
    if r.diff:
        out.append(f"- changed from the launch before: {_md(format_diff(r.diff))}")
    if r.env:
        out.append("- env: " + " ".join(f"`{_md(k)}={_md(v)}`" for k, v in sorted(r.env.items())))
    if rec.verdict and r.failure and not rec.failed_after:
        out.append(f"- verdict: **{rec.verdict}** (the launch failed)")  # the reason is the outcome above
    elif rec.verdict:
        out.append(
            f"- verdict: **{rec.verdict}**" + (f": {_md('; '.join(rec.reasons))}" if rec.reasons else "")
        )
    if rec.failed_after:
        out.append(f"- ✘ {_md(rec.failed_after)}")
    for a in rec.alarms:
        out.append(f"- ⚠ {_md(a)}")
    for w in rec.warnings:
        out.append(f"- note: {_md(w)}")
    return out


def _md_comparisons(rec: RunRecord) -> list[str]:
    """The run against the baseline and its no-spec reference, and the economics of speculation."""
    out: list[str] = []
    for name, label in (("vs_baseline", "vs baseline"), ("vs_no_spec", "vs no-spec")):
        c = rec.comparisons.get(name)
        if not c:
            continue
        if name == "vs_baseline":
            pct = c.get("delta_tok_s_pct")
            what = "Δ tok/s " + (f"{pct:+.1f} %" if isinstance(pct, int | float) else "–")
        elif rec.economics:
            continue  # said by the economics line below
        else:
            sp = c.get("speedup")
            what = "speedup " + (f"{sp:.2f}×" if isinstance(sp, int | float) else "–")
        at = f" at concurrency {c['concurrency']}" if c.get("concurrency") else ""
        noise = f" (noise: {c['noise']})" if c.get("noise") else ""
        out.append(f"- {label} {_md(c['run'])}{at}: {_md(what)}{_md(noise)}")
    if rec.economics and rec.economics.get("unjudged"):  # shown with what differs, never judged
        out.append(f"- {_md(rec.economics.get('sentence') or rec.economics['unjudged'])}")
    elif rec.economics:
        e = rec.economics
        verdict = "pays" if e.get("pays") else "does not pay"
        conc = f" at concurrency {e['concurrency']}" if e.get("concurrency") else ""
        be = e.get("break_even_accept_len")
        if be is None:
            be_text = "no accept length pays"
        elif e.get("break_even_reachable") is False:
            be_text = f"break-even {be:.2f} out of reach (at most {e.get('max_accept')} per verify)"
        else:
            be_text = f"break-even {be:.2f}"
        vs = e.get("vs") or (f"#{rec.economics_vs}" if rec.economics_vs is not None else "?")
        out.append(
            f"- economics vs no-spec {_md(vs)}{conc}: speedup {e['speedup']:.2f}× ({verdict}); "
            f"accept {e['accept_len']:.2f} vs {be_text}; "
            f"cycle {e['cycle_ms']:.1f} ms vs needed ≤ {e['needed_cycle_ms']:.1f} ms"
            + (
                ""
                if e.get("like_for_like", True)
                else " — not like for like: " + _md("; ".join(e.get("differences") or []))
            )
        )
        if e.get("sentence"):
            out.append(f"  - {_md(e['sentence'])}")
    return out


def _md_accept(rec: RunRecord) -> list[str]:
    """The accept length by each definition, its warning, and the acceptance per draft position."""
    out: list[str] = []
    defs = (rec.accept or {}).get("definitions") or {}
    if "shown" in defs:
        d = defs["shown"]
        out.append(f"- accept length {d['value']:.3f}: {_md(d['formula'])} ({_md(d['source'])})")
        for key, d in defs.items():
            if key != "shown":
                out.append(f"  - by {_md(key)}: {d['value']:.3f} = {_md(d['formula'])} ({_md(d['source'])})")
    if (rec.accept or {}).get("warning"):
        out.append(f"- ⚠ {_md(rec.accept['warning'])}")
    pos = (rec.accept or {}).get("per_position") or []
    if pos:
        dl = (rec.accept or {}).get("per_position_delta_pp") or []
        cells = []
        for i, p in enumerate(pos):
            d = dl[i] if i < len(dl) else None
            cells.append(
                f"{i + 1}: {p * 100:.1f} %" + (f" ({d:+.1f} pp vs baseline)" if d is not None else "")
            )
        out.append("- acceptance per draft position: " + "; ".join(cells))
    return out


def _md_by_concurrency(rec: RunRecord) -> list[str]:
    """The spec-vs-no-spec table per concurrency and where speculation stops paying."""
    out: list[str] = []
    if rec.by_concurrency:
        out += [
            "",
            "| conc | spec tok/s | no-spec tok/s | speedup | accept | break-even accept | noise |",
            "|---:|---:|---:|---:|---:|---|---|",
        ]
        for c in rec.by_concurrency:
            out.append(
                f"| {c['concurrency']} | {_mtext(c['spec_tok_s'])} | {_mtext(c['nospec_tok_s'])} | "
                f"{_x(c['speedup'])} | {_mtext(c['accept_len'], 2)} | {_md(_break_even_cell(c))} | "
                f"{_md(c.get('noise') or ('unjudged' if c.get('unjudged') else '–'))} |"
            )
        x = (rec.economics or {}).get("crossover")
        if x is not None:
            out.append(f"\nSpeculation stops paying at concurrency {x}.")
    return out


def _md_diagnosis(rec: RunRecord) -> list[str]:
    """Why (docs/diagnosis.md): each diagnosis with its evidence and hint."""
    out: list[str] = []
    if rec.diagnosis:
        out += ["Why (docs/diagnosis.md):", ""]
        for d in rec.diagnosis:
            mark = "⚠ " if d.get("level") == "warn" else ""
            line = f"- {mark}{_md(str(d.get('text', '')))}"
            if d.get("evidence"):
                line += f" — from {_md(str(d['evidence']))}"
            if d.get("hint"):
                line += f" — hint: {_md(str(d['hint']))}"
            out.append(line)
        out.append("")
    return out


def _md_phases(r: Run) -> list[str]:
    """The launch's phases with their seconds, the time before the first log line and the gaps."""
    out: list[str] = []
    if r.phases:
        out += ["| phase | seconds |", "|---|---:|"]
        ordered = [p for p in PHASES if p in r.phases] + [p for p in r.phases if p not in PHASES]
        out += [f"| {_md(p)} | {_num(_phase_s(r, p))} |" for p in ordered]
        if r.before_first_line is not None:
            out.append(f"| (before the first log line: imports) | {_num(r.before_first_line)} |")
        for g in (r.startup or {}).get("gaps") or []:
            out.append(
                f"| (between {_md(str(g.get('after')))} and {_md(str(g.get('before')))}) | {_num(g.get('seconds'))} |"
            )
        out.append("")
    return out


def _md_benches(rec: RunRecord) -> list[str]:
    """One table row per benchmark of the run."""
    out: list[str] = []
    if rec.benches:
        out += [
            "| bench | runner | conc | tok/s | accept len | TTFT p50 | ITL p50 | requests | failed | duration |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for b in rec.benches:
            out.append(
                f"| {b['bench']} | {_md(b['runner'])} | {_num(b['concurrency'])} | {_num(b['tok_s'])} | "
                f"{_num(b['accept_len'], 2)} | {_num(b['ttft_p50_ms'])} | {_num(b['itl_p50_ms'])} | "
                f"{b['requests']} | {b['failed']} | {_num(b['duration_s'])}s |"
                + (f" error: {_md(b['error'])}" if b["error"] else "")
            )
        out.append("")
    return out


def _mtext(m: dict[str, Any] | None, digits: int = 1) -> str:
    if not m or m.get("mean") is None:
        return "–"
    sd = m.get("stdev")
    return (
        f"{m['mean']:.{digits}f}" + (f" ± {sd:.{digits}f}" if sd is not None else "") + f" (n={m.get('n')})"
    )


def _x(v: Any) -> str:
    return f"{v:.2f}×" if isinstance(v, int | float) else "–"


def _break_even_cell(c: dict[str, Any]) -> str:
    be, most = c.get("break_even_accept_len"), c.get("max_accept")
    if c.get("speedup") is None:
        return "–"
    if be is None:
        return "none pays"
    if c.get("break_even_reachable") is False:
        return f"{be:.2f}: out of reach (at most {most})"
    return f"{be:.2f}" + (f" (at most {most})" if most else "")


def render(report: SessionReport, fmt: str) -> str:
    if fmt == "md":
        return render_markdown(report)
    if fmt == "csv":
        return render_csv(report)
    if fmt == "json":
        return render_json(report)
    raise ValueError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")
