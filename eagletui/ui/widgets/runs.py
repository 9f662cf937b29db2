"""The runs table: one row per launch with its diff vs the baseline, Δ% and verdict."""

from __future__ import annotations

import posixpath
import shlex
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from eagletui.core.predict.next_launch import explain
from eagletui.core.profile.redact import Redactor
from eagletui.core.profile.toggles import split_key
from eagletui.core.servers.spec import adaptive_fallback_text
from eagletui.core.state.adaptive import TierView
from eagletui.core.state.launch import PhaseStatus
from eagletui.core.textsafe import inert
from eagletui.ui.widgets.phases import PHASE_LABELS, fmt_secs, startup_gaps
from eagletui.ui.widgets.stepbars import step_bars
from eagletui.ui.words import describe_failure

if TYPE_CHECKING:
    from eagletui.core.diagnosis.fold import Diagnosis
    from eagletui.core.runs.book import RunBook, RunRow
    from eagletui.core.runs.run import Run
    from eagletui.core.state.screen import SessionState

# The numbers first and the free-length config diff last, so a narrow pane still shows what matters.
COLUMNS = (
    "#",
    "tok/s",
    "Δ tok/s",
    "accept",
    "Δ acc",
    "TTFT ms",
    "Δ TTFT",
    "verdict",
    "ready",
    "config vs baseline",
)


#: A verdict's colour in the table, the details and the compare line: ``unjudged`` (a pair not like
#: for like) is neither a pass nor a fail.
VERDICT_STYLES = {"pass": "bold green", "fail": "bold red", "invalid": "bold yellow", "unjudged": "yellow"}


def _delta_cell(d: Any) -> Text:
    if d is None or d.pct is None:
        return Text("—", style="dim")
    text = f"{d.pct:+.1f}%"
    if not d.flagged:
        return Text(text, style="dim")  # inside the noise band: not coloured
    return Text(text, style="bold green" if d.better else "bold red")


#: The config column is capped (the rest is in the run's details): a cut shows as "…".
CONFIG_WIDTH = 44


def ready_cell(row: RunRow) -> str | Text:
    """The ``ready`` column: launch → ready, and only for a launch that became ready. A launch that
    failed first says how far it got ("failed after 3.6s"), so a crash never reads as a start-up time;
    one still starting is blank."""
    if row.ready_s is not None:
        return fmt_secs(row.ready_s)
    if row.failure and row.phase_total_s:
        return Text(f"failed after {fmt_secs(row.phase_total_s).strip()}", style="red")
    return Text("—", style="dim")


class RunsTable(DataTable):
    BINDINGS = [
        # in the key bar while the Runs tab has the focus: the table scrolls sideways, Enter opens a run
        Binding("enter", "select_cursor", "Details", show=True, key_display="Enter"),
        # "l" too: → is also a (priority) replay key, and the key bar lists one binding per key
        Binding("right,l", "cursor_right", "Scroll", show=True, key_display="←/→"),
    ]

    class RunSelected(Message):
        def __init__(self, launch: int) -> None:
            super().__init__()
            self.launch = launch

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._last: Any = None

    def on_mount(self) -> None:
        for c in COLUMNS:
            self.add_column(c, key=c, width=CONFIG_WIDTH if c == COLUMNS[-1] else None)

    def show(self, runbook: RunBook | None, state: SessionState) -> None:
        if runbook is None:
            return
        rows = runbook.rows()
        key = tuple((r.to_dict().__repr__()) for r in rows)
        if key == self._last:
            return
        self._last = key
        cursor = self.cursor_row
        self.clear()
        for r in rows:
            verdict = Text(r.verdict, style=VERDICT_STYLES.get(r.verdict, "dim"))
            if r.alarms:
                verdict.append(" ⚠", style="bold yellow")
            label = Text(f"{r.launch}{'★' if r.is_baseline else ''}")
            failed = self._failure_words(state, r.launch) if r.failure else ""
            diff = Text(
                inert(r.diff if not failed else f"{r.diff}  ✘ {failed}"), no_wrap=True, overflow="ellipsis"
            )
            if r.warnings:
                diff.append(" ≠workload", style="yellow")
            self.add_row(
                label,
                r.tok_s.text(1),
                _delta_cell(r.deltas.get("tok_s")),
                r.accept_len.text(2),
                _delta_cell(r.deltas.get("accept_len")),
                r.ttft_ms.text(0),
                _delta_cell(r.deltas.get("ttft_ms")),
                verdict,
                ready_cell(r),
                diff,
                key=str(r.launch),
            )
        if self.row_count:
            self.move_cursor(row=min(max(cursor, 0), self.row_count - 1))

    @staticmethod
    def _failure_words(state: SessionState, launch: int) -> str:
        la = state.launches.get(launch)
        f = la.failure if la is not None else None
        return describe_failure(str(f.kind), f.phase) if f is not None else "failed"

    def selected_launch(self) -> int | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
            return int(key.value or "")
        except Exception:
            return None

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value is not None:
            self.post_message(self.RunSelected(int(event.row_key.value)))

    def details(self, runbook: RunBook | None, state: SessionState, launch: int) -> Text:
        """What one run was and did, to read (not a JSON dump): results, what differs from the
        baseline, every phase with its duration (a failed run marks where it failed), the command to
        reproduce it (environment included, secrets redacted), where its files are."""
        run = runbook.runs.get(launch) if runbook is not None else None
        la = state.launches.get(launch)
        if run is None and la is None:
            return Text("no data for this run")
        cfg = (run.config if run else None) or (la.config if la else {})
        t = Text()
        row = runbook.row(launch) if runbook is not None and run is not None else None
        if row is not None:
            assert runbook is not None
            t.append_text(result_lines(runbook, run, row, launch))
        if runbook is not None and run is not None:
            t.append_text(accept_lines(runbook, launch))
            t.append_text(concurrency_lines(runbook, launch))
            t.append_text(slo_lines(runbook, run))
        if run is not None and run.step_profile and runbook is not None:
            t.append("\nstep profile\n", style="bold").append_text(step_bars(runbook, launch))
        t.append_text(why_lines(explain(state.diagnoser, runbook, launch)))
        t.append_text(config_lines(runbook, run, launch))
        if la is not None:
            t.append_text(adaptive_lines(la.adaptive, run))
            t.append_text(phase_lines(la))
        if la is not None and la.command:
            t.append("\nlaunch command (secrets redacted)\n", style="bold")
            t.append(inert(command_line(la.command, (cfg or {}).get("env") or {})) + "\n")
        if la is not None and la.log_path:
            t.append("\nrun dir  ", style="bold")
            t.append(inert(posixpath.dirname(la.log_path)) + "\n")
            t.append("log      ", style="bold")
            t.append(inert(la.log_path) + "\n")
        return t


def slo_lines(runbook: RunBook, run: Run) -> Text:
    """Per concurrency, the requests under the ``[slo]``: attainment, goodput and p99s (issue 35); nothing
    without an SLO or per-request records (``v``: the frontier across runs)."""
    t = Text()
    if not runbook.slo:
        return t
    groups = sorted(run.groups(), key=lambda g: g.concurrency)
    # judged, or kept records that could not be (a bound's latency none of them recorded)
    rows = [(g.concurrency, st) for g in groups if (st := runbook.slo_stats(run, g)).attainment is not None or st.sampled]
    if not rows:
        return t
    t.append(f"\nunder the SLO ({inert(runbook.slo.describe())}; v: the frontier)\n", style="bold")
    for c, st in rows:
        mark = {True: "meets", False: "misses", None: "cannot tell"}[st.meets_slo]
        shown = ("ttft_ms", "itl_ms")
        p99 = "  ".join(f"{m[:-3]} p99 {v['p99']:.0f} ms" for m, v in st.percentiles.items() if m in shown)
        if st.attainment is None:  # records, but a bound's latency none of them has
            t.append(f"  c={c:<4} {mark}: no request recorded {', '.join(st.unrecorded)} of {st.requests}  {p99}\n")
            continue
        t.append(
            f"  c={c:<4} {mark:<6} {st.attainment * 100:5.1f} % in SLO of {st.requests}  "
            f"goodput {st.goodput_req_s or 0:.2f} req/s {st.goodput_tok_s or 0:.0f} tok/s  {p99}\n",
            style="red" if st.meets_slo is False else "",
        )
    return t


def result_lines(runbook: RunBook, run: Run | None, row: RunRow, launch: int) -> Text:
    """A run's verdict (why, the economics, the alarms), how it compares, and its results against the
    baseline's with the noise band, the repeats, the requests and each result's distributions."""
    t = Text()
    t.append(f"verdict {row.verdict}", style=VERDICT_STYLES.get(row.verdict, "dim"))
    if row.reasons:
        t.append("  " + inert("; ".join(row.reasons)))
    t.append("\n")
    if row.failed_after:
        t.append(f"✘ {inert(row.failed_after)}\n", style="bold red")
    if row.economics:
        t.append(inert(row.economics) + "\n", style="bold")
    for a in (*row.alarms, *row.warnings):
        t.append(f"⚠ {inert(a)}\n", style="yellow")
    t.append_text(comparison_lines(runbook, launch))
    t.append(f"\nresults{f' at concurrency {row.concurrency}' if row.concurrency else ''}\n", style="bold")
    for name, label, digits in (
        ("tok_s", "tok/s", 1),
        ("accept_len", "accept", 2),
        ("ttft_ms", "TTFT ms", 0),
    ):
        metric = getattr(row, name)
        t.append(f"  {label:9} {metric.text(digits):>14}")
        d = row.deltas.get(name)
        if d is not None and d.pct is not None:
            style = ("green" if d.better else "red") if d.flagged else "dim"
            t.append(f"  {d.pct:+.1f}%", style=style)
            if d.band is not None:
                t.append(f" (noise {inert(d.band.short())})", style="dim")
        t.append("\n")
    t.append(f"  repeats   {row.repeats:>14}\n")
    if run is not None:
        failed = sum(r.failed for r in run.results)
        sent = sum(r.requests + r.failed for r in run.results)
        t.append(f"  requests  {sent:>14}  failed {failed}\n", style="bold red" if failed else "")
    for res in run.results if run else ():
        for name, dist in (res.stats or {}).items():
            if isinstance(dist, dict):
                vals = "  ".join(f"{k} {v:.1f}" for k, v in dist.items() if isinstance(v, int | float))
                t.append(f"  {inert(str(name)):9} {vals}\n", style="dim")
    return t


def adaptive_lines(view: TierView, run: Run | None) -> Text:
    """Adaptive speculation in the run: each benchmark's share of time at each tier (its window is the
    result's duration before it arrived), the startup cost of the extra tiers, a silent fall-back."""
    t = Text()
    if not view.on and view.fallback is None:
        return t
    t.append("\nadaptive speculation\n", style="bold")
    if view.fallback is not None:
        t.append(f"⚠ {inert(adaptive_fallback_text(view.fallback))}\n", style="yellow")
    if view.on:
        cands = f", candidates {list(view.candidates)}" if view.candidates else ""
        swaps = f"{view.swaps} swap{'s' if view.swaps != 1 else ''}"
        t.append(f"  started at steps {view.start if view.start is not None else '?'}{cands}; {swaps}\n")
    for res in run.results if run is not None else ():
        share = view.share_text(res.wall - max(0.0, res.duration_s), res.wall)
        if share:
            at = run.concurrency_of(res) if run is not None else None
            t.append(f"  bench {res.bench}{f' at concurrency {at}' if at else ''}: {inert(share)}\n")
    cost = view.capture_text()
    if cost:
        t.append(f"  startup: {inert(cost)}\n", style="dim")
    return t


def config_lines(runbook: RunBook | None, run: Run | None, launch: int) -> Text:
    """What differs in the run's config from the baseline's (old → new), or why nothing does."""
    t = Text()
    t.append("\nconfig vs baseline", style="bold")
    base = runbook.baseline if runbook is not None else None
    if base == launch:
        t.append("\n  this run is the baseline\n")
    else:
        t.append(f" #{base}\n" if base is not None else "\n")
        diff = runbook.diff(launch) if runbook is not None and run is not None else {}
        if not diff:
            t.append(
                "  same config as the baseline\n" if base is not None else "  no baseline\n", style="dim"
            )
        for key, change in diff.items():
            kind, name = split_key(str(key))
            label = kind.name if kind is not None else name  # "target", "command": no kind
            name = name if kind is not None else ""
            old, new = (
                (list(change) + [None, None])[:2] if isinstance(change, list | tuple) else (None, change)
            )
            t.append(f"  {inert(label):4} {inert(name)}  ")
            t.append(inert(_show(old)), style="red")
            t.append(" → ")
            t.append(inert(_show(new)) + "\n", style="green")
    return t


def why_lines(diags: list[Diagnosis]) -> Text:
    """The run's diagnoses: what, on what evidence, and what to do (docs/diagnosis.md)."""
    t = Text()
    if not diags:
        return t
    t.append("\nwhy\n", style="bold")
    for d in diags:
        warn = d.level == "warn"
        t.append(("⚠ " if warn else "• ") + inert(d.text) + "\n", style="yellow" if warn else "")
        if d.evidence:
            t.append("    " + inert(d.evidence) + "\n", style="dim")
        if d.hint:
            t.append("    → " + inert(d.hint) + "\n", style="cyan")
    return t


def comparison_lines(book: RunBook, launch: int) -> Text:
    """The two comparisons under their two names: vs the baseline (Δ) and vs the no-spec reference
    (speedup), each with the run it used and the noise band of the one rule."""
    t = Text()
    run = book.runs.get(launch)
    if run is None or not run.good_results:
        return t
    base = book.base_run()
    if base is not None and base is not run:
        d = book.deltas(launch)["tok_s"]
        text = f"{d.pct:+.1f} % tok/s" if d.pct is not None else "not comparable (another workload)"
        noise = f"  ({d.band.text()})" if d.band is not None and d.pct is not None else ""
        t.append(f"vs baseline {book.label_of(base)}: {inert(text)}{inert(noise)}\n")
    ref = book.reference(launch)
    e = book.economics(launch)
    if ref is not None and not ref.like_for_like:  # shown with what differs, never judged
        t.append(f"vs no-spec {inert(ref.label)}: unjudged: differs in {inert(ref.listed())}\n", style="yellow")
    elif ref is not None and e is not None:
        t.append(f"vs {inert(ref.phrase())}: speedup {e.speedup:.2f}×\n")
    elif run.is_spec:
        t.append("vs no-spec: no no-spec run of this model on a setting this run measured yet\n", style="dim")
    return t


def accept_lines(book: RunBook, launch: int) -> Text:
    """Which accept length the numbers are (formula, source), the others, and per draft position."""
    t = Text()
    info = book.accept_definitions(launch)
    defs = info.get("definitions") or {}
    if not defs or book.runs[launch].metric("accept_len").mean is None:
        return t
    t.append("\naccept length\n", style="bold")
    for key, d in defs.items():
        label = "shown" if key == "shown" else key.replace("_", " ")
        t.append(f"  {label:16} {d['value']:6.3f}  ", style="" if key == "shown" else "dim")
        t.append(inert(f"{d['formula']} ({d['source']})") + "\n", style="dim")
    if info.get("warning"):
        t.append(f"  ⚠ {inert(str(info['warning']))}\n", style="yellow")
    per_request_lines(t, info)
    pos = info.get("per_position") or []
    if pos:
        deltas = book.position_deltas(launch)
        t.append("  accepted per draft position:")
        for i, p in enumerate(pos):
            d = deltas[i] if i < len(deltas) else None
            t.append(f"  {i + 1}: {p * 100:.0f} %")
            if d is not None:
                t.append(f" ({d:+.1f} pp)", style="green" if d > 0 else "red" if d < 0 else "dim")
        t.append("\n")
    return t


def per_request_lines(t: Text, info: dict[str, Any]) -> None:
    """The requests' own accept lengths: quantiles, two modes when there are two, and by category and
    prompt length (:func:`eagletui.core.runs.accept.per_request`)."""
    d = info.get("per_request")
    if not d:
        return
    t.append(
        f"  per request      n {d['n']}  p10 {d['p10']:.2f}  p50 {d['p50']:.2f}  p90 {d['p90']:.2f}"
        "  (1 + correct drafts ÷ verifies)\n",
        style="dim",
    )
    if info.get("bimodal"):
        t.append(f"  ◆ {inert(str(info['bimodal']))}\n", style="cyan")
    for label, groups in (
        ("by category", list((info.get("by_category") or {}).items())),
        ("by prompt len", [(f"{g['lo']}–{g['hi'] or '…'}", g) for g in info.get("by_prompt_len") or []]),
    ):
        if groups:
            parts = "  ".join(f"{inert(str(k))} {g['p50']:.2f} (n {g['n']})" for k, g in groups[:8])
            t.append(f"  {label:16} {parts}\n", style="dim")


def concurrency_lines(book: RunBook, launch: int) -> Text:
    """A spec run's table per concurrency vs its no-spec reference, and the cycle model's parts."""
    t = Text()
    rows = book.concurrency_table(launch)
    if not rows or not any(r.economics is not None or r.unjudged for r in rows):
        return t
    t.append("\nper concurrency (vs no-spec)\n", style="bold")
    if any(r.unjudged for r in rows):  # the tok/s side by side: no speedup, break-even or cycle model
        t.append(f"  {inert(next(r.unjudged for r in rows if r.unjudged))}\n", style="yellow")
    t.append("  conc  spec tok/s  no-spec tok/s  speedup  accept  break-even\n", style="dim")
    for r in rows:
        e = r.economics
        nospec = r.nospec_tok_s.text(1) if r.nospec_tok_s is not None else "—"
        if e is None:  # unjudged, or no reference here: the accept length is the run's own, shown
            t.append(
                f"  {r.concurrency:>4}  {r.spec_tok_s.text(1):>10}  {nospec:>13}  {'—':>7}  {r.accept_len.text(2):>6}  —\n"
            )
            continue
        if e.break_even_accept_len is None:
            be = "none pays at this cost"
        elif e.reachable is False:
            be = f"{e.break_even_accept_len:.2f} out of reach (≤ {e.max_accept})"
        else:
            be = f"{e.break_even_accept_len:.2f}"
        t.append(
            f"  {r.concurrency:>4}  {r.spec_tok_s.text(1):>10}  {nospec:>13}  {e.speedup:6.2f}×  "
            f"{r.accept_len.text(2):>6}  {be}\n",
            style="green" if e.pays and not r.left_out else "",
        )
        # the call and both bands under the row (as columns they wrapped the table at 80 columns)
        judged = "not judged" if r.left_out else (e.call or "—")
        if r.gap is not None:
            t.append(f"        {judged}: aggregate {inert(r.gap.text())}\n", style="dim")
        if r.steady is not None and r.steady_gap is not None:
            sp = r.steady.speedup
            x = f" {sp:.2f}×:" if sp is not None else ""
            t.append(f"        decode ({inert(r.steady.source)}){x} {inert(r.steady_gap.text())}\n", style="dim")
        for why in r.left_out:
            t.append(f"        not judged: {inert(why)}\n", style="yellow")
    e = book.economics(launch)
    if e is not None and e.parts is not None:
        p = e.parts
        t.append(
            f"  cycle model: {p.draft_step_ms:.2f} ms per draft step"
            + (f" (hidden under the CPU up to {p.hidden_ms:.2f} ms)" if p.regime == "overlap" else "")
            + f" + verify {p.verify_ms:.2f} ms + {p.per_token_ms:.2f} ms per accepted token\n",
            style="dim",
        )
        t.append(f"  ({inert(p.source)})\n", style="dim")
        preds = "  ".join(
            f"steps {x.settings.steps}: {((x.speedup or 0) - 1) * 100:+.0f} %"
            for x in e.predictions
            if x.speedup
        )
        if preds:
            t.append(f"  predicted at concurrency {e.concurrency}: {preds}\n", style="dim")
    return t


def _show(value: Any) -> str:
    return "unset" if value is None else str(value)


def command_line(argv: Any, env: dict[str, Any], redactor: Redactor | None = None) -> str:
    """``K=V … argv`` as one shell line to reproduce a launch: env first, everything quoted, and every
    secret (secret-named env, secret flags, token-shaped values) replaced by ``***``."""
    r = redactor or Redactor()
    red_env = r.env({str(k): v for k, v in env.items()})
    red_argv = r.argv([str(a) for a in argv])
    parts = [f"{k}={shlex.quote(str(v))}" for k, v in sorted(red_env.items())]
    return " ".join([*parts, shlex.join(str(a) for a in red_argv)])


def phase_lines(la: Any) -> Text:
    """Every phase with its duration; for a failed run the phase it failed in is marked and the ones
    after it say they were not reached."""
    t = Text()
    t.append("\nphases\n", style="bold")
    failed_at = la.failure.phase if la.failure is not None else None
    for name in la.shown_phases():
        st = la.phases[name]
        label = f"{PHASE_LABELS.get(name, name):<15}"
        status = st.status
        if status == PhaseStatus.FAILED or (failed_at == name and status != PhaseStatus.DONE):
            t.append(f"  ✘ {label}", style="bold red")
            t.append(f" {fmt_secs(st.seconds) or '':>6}  ← failed here\n", style="bold red")
        elif status == PhaseStatus.DONE:
            t.append(f"  ✔ {label} {fmt_secs(st.seconds) if st.seconds is not None else '':>6}\n")
        elif status == PhaseStatus.SKIPPED:
            t.append(f"  – {label}   skipped\n", style="dim")
        elif status == PhaseStatus.ACTIVE:
            t.append(f"  ▶ {label}   in progress\n")
        else:
            t.append(
                f"  · {label}   {'not reached' if la.failure or la.status != 'loading' else 'pending'}\n",
                style="dim",
            )
    # The seconds no phase row holds: the process's start-up before its first log line (eagletui saw it
    # start) and the stretches between phases.
    if la.before_first_line is not None and la.before_first_line >= 0.5:
        t.append(f"  + {'before 1st line':<15} {fmt_secs(la.before_first_line):>6}  (imports)\n", style="dim")
    for after, before, secs in startup_gaps(la):
        t.append(f"  + {'between phases':<15} {fmt_secs(secs):>6}  {after} → {before}\n", style="dim")
    if la.failure is not None:
        f = la.failure
        t.append(f"\nfailure: {inert(describe_failure(str(f.kind), f.phase))}\n", style="bold red")
        if f.message:
            t.append(f"  {inert(f.message)}\n")
        if f.hint:
            t.append("hint: ", style="bold")
            t.append(inert(f.hint) + "\n")
    return t
