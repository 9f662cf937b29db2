"""The phase panel: one row per phase of the fixed vocabulary, a bar, a/b units, elapsed and ETA."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from eagletui.core.events import LOG_PHASES, LaunchBlocked
from eagletui.core.phases.history import FIRST_OF_CONFIG, NO_ESTIMATE
from eagletui.core.state.launch import LaunchState, PhaseStatus, ServerState
from eagletui.core.textsafe import inert, inert_lines
from eagletui.ui.widgets.textview import TextView
from eagletui.ui.words import describe_failure

PHASE_LABELS = {
    "queued": "queued",
    "launch": "launch",
    "dist_init": "dist init",
    "load_target": "base weights",
    "load_draft": "draft weights",
    "compile": "compile",
    "kv_cache": "KV cache",
    "capture_prefill": "graphs prefill",
    "capture_target": "graphs target",
    "capture_draft": "graphs draft",
    "warmup": "warmup",
    "ready": "ready",
}

#: The longest label and a space: the bars start in one column whatever the label.
LABEL_WIDTH = max(len(label) for label in PHASE_LABELS.values()) + 1

STATUS_MARK = {
    PhaseStatus.PENDING: "·",
    PhaseStatus.ACTIVE: "▶",
    PhaseStatus.DONE: "✔",
    PhaseStatus.FAILED: "✘",
    PhaseStatus.SKIPPED: "–",
}


def fmt_secs(s: float | None) -> str:
    if s is None:
        return ""
    s = max(0.0, s)
    if s < 60:
        return f"{s:4.1f}s"
    m, sec = divmod(int(s), 60)
    if m < 60:
        return f"{m}m{sec:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def set_label(label: Static, content) -> None:
    """Update only on change: Static.update always asks for a layout, which is costly at 10 Hz."""
    key = content.plain + str(content.spans) if isinstance(content, Text) else content
    if getattr(label, "_eagle_last", None) != key:
        setattr(label, "_eagle_last", key)  # noqa: B010  # a marker on a plain Static, not a field
        label.update(content)


BAR_WIDTH = 16


class PhaseTable(TextView):
    """All phase rows as one renderable: one bar per phase without ~60 widgets to lay out and restyle."""

    DEFAULT_CSS = f"""
    PhaseTable {{ height: {len(LOG_PHASES)}; text-wrap: nowrap; text-overflow: ellipsis; }}
    """


#: a phase row without its bar: the mark (2), the name, two spaces and the units (16), the elapsed (6)
#: and room for an ETA ("  ETA 1m05s", 11)
ROW_WITHOUT_BAR = 2 + LABEL_WIDTH + 16 + 6 + 11
MIN_BAR_WIDTH = 4


def bar_width(panel_width: int) -> int:
    """The bar's width in a panel of ``panel_width`` columns: the full :data:`BAR_WIDTH` where the row
    fits, narrower where it would not, so the elapsed time and the ETA stay whole (at 60×20 the row was
    cut inside the elapsed time: "29/64 shards    4.…")."""
    if panel_width <= 0:
        return BAR_WIDTH
    return max(MIN_BAR_WIDTH, min(BAR_WIDTH, panel_width - ROW_WITHOUT_BAR))


def _bar(fraction: float | None, colour: str, dim: str, now: float, width: int = BAR_WIDTH) -> Text:
    t = Text()
    if fraction is None:  # active, no count: a sliding pulse says "alive, size unknown"
        pos = int(now * 8) % width
        for i in range(width):
            t.append("━", style=colour if abs(i - pos) <= 2 else dim)
        return t
    filled = int(round(max(0.0, min(1.0, fraction)) * width))
    t.append("━" * filled, style=colour)
    t.append("━" * (width - filled), style=dim)
    return t


class PhasePanel(Vertical):
    """Renders a :class:`LaunchState`; ``estimates`` maps phase → (p50 s, p90 s) from history."""

    DEFAULT_CSS = """
    PhasePanel { height: auto; }
    PhasePanel > #phase-summary { height: auto; }
    PhasePanel > #phase-nodes { height: auto; display: none; }
    PhasePanel.nodes > #phase-nodes { display: block; }
    PhasePanel > #phase-failure { height: auto; display: none; }
    PhasePanel.failed > #phase-failure { display: block; }
    """

    def compose(self) -> ComposeResult:
        yield PhaseTable(id="phase-table")
        yield Static("", id="phase-summary")
        yield Static("", id="phase-nodes")
        yield Static("", id="phase-failure")

    def show(
        self,
        la: LaunchState | None,
        now: float,
        estimates: dict[str, tuple[float, float]] | None = None,
        *,
        blocked: LaunchBlocked | None = None,
        basis: str = "",
    ) -> None:
        """``basis`` says what the estimates rest on (which launches, which page cache), beside the ETA."""
        estimates = estimates or {}
        v = self.app.theme_variables
        colours = {
            "done": v.get("phase-done", "green"),
            "active": v.get("phase-active", "cyan"),
            "pending": v.get("phase-pending", "grey50"),
            "failed": v.get("phase-failed", "red"),
            "skipped": v.get("phase-pending", "grey50"),
        }
        dim = v.get("phase-pending", "grey50")
        warn = v.get("warning", "yellow")
        # Narrow terminal: the done and pending phases fold into one line and only the active or
        # failed ones get a bar, so the log below keeps its rows (at 80×24: 2–3 lines, not 9).
        compact = self.screen.has_class("narrow")
        out = Text(no_wrap=True, overflow="ellipsis")
        lines = 0
        # ``queued`` is a Slurm job's row only: a detached process never waits in a queue
        shown = la.shown_phases() if la else LOG_PHASES
        if compact:
            counts: dict[str, int] = {}
            for phase in shown:
                status = la.phases[phase].status if la else PhaseStatus.PENDING
                counts[status] = counts.get(status, 0) + 1
            words = {
                PhaseStatus.DONE: "done",
                PhaseStatus.SKIPPED: "skipped",
                PhaseStatus.PENDING: "to go",
            }
            parts = [(s, f"{STATUS_MARK[s]} {counts[s]} {w}") for s, w in words.items() if counts.get(s)]
            for j, (status, part) in enumerate(parts):
                out.append("  " if j else "", style=dim)
                out.append(part, style=colours.get(status, dim))
            out.append(f"  of {len(shown)} phases", style=dim)
            lines = 1
        bar = bar_width(self.content_size.width)
        for phase in shown:
            st = la.phases[phase] if la else None
            status = st.status if st else PhaseStatus.PENDING
            if compact and status not in (PhaseStatus.ACTIVE, PhaseStatus.FAILED):
                continue
            if lines:
                out.append("\n")
            lines += 1
            self._row(out, phase, st, now, estimates, colours, dim, warn, bar)
        table = self.query_one(PhaseTable)
        height = lines if compact else len(shown)
        if getattr(table, "_eagle_height", None) != height:
            table._eagle_height = height  # type: ignore[attr-defined]
            table.styles.height = height
        self.query_one(PhaseTable).set_text(out)
        self._summary(la, now, estimates, basis)
        self._node_rows(la, now, colours, warn)
        if blocked is not None:
            self._blocked(blocked)

    def _blocked(self, b: LaunchBlocked) -> None:
        """Why the last launch attempt did not happen, until the next one starts (never only a toast)."""
        self.add_class("failed")
        text = Text()
        what = {
            "preflight": "Not launched: the preflight failed",
            "refused": "Not launched: the host refused the launch",
            "stop": "The server could not be stopped",
        }.get(b.stage, "Not launched")
        text.append(f"✘ {what}", style="bold")
        for c in b.checks[:6] or (b.reason,):
            text.append("\n" + _clip(c, 200))
        text.append("\nhint: ", style="bold")
        if b.stage == "stop":
            text.append("the server keeps running; the log tab has the stop's notice")
        else:
            text.append("fix it, then r launches again (3: the toggles)")
        set_label(self.query_one("#phase-failure", Static), text)

    @staticmethod
    def _row(
        out: Text,
        phase: str,
        st: Any,
        now: float,
        estimates: dict[str, tuple[float, float]],
        colours: dict[str, str],
        dim: str,
        warn: str,
        width: int = BAR_WIDTH,
    ) -> None:
        """One phase: mark, name, bar (``width`` columns), units, elapsed, ETA (or overdue) and the slowest
        rank."""
        status = st.status if st else PhaseStatus.PENDING
        colour = colours.get(status, dim)
        out.append(f"{STATUS_MARK.get(status, '?')} ", style=colour)
        out.append(
            f"{PHASE_LABELS[phase]:<{LABEL_WIDTH}}",
            style=f"bold {colour}" if status in (PhaseStatus.ACTIVE, PhaseStatus.FAILED) else colour,
        )
        if st is None or status == PhaseStatus.PENDING:
            out.append_text(_bar(0.0, colour, dim, now, width))
            return
        if st.total:
            frac: float | None = min(st.done, st.total) / st.total
            units = f"{st.done}/{st.total} {st.unit}".strip()
        elif status in (PhaseStatus.DONE, PhaseStatus.SKIPPED):
            frac = 1.0 if status == PhaseStatus.DONE else 0.0
            units = ""
        elif status == PhaseStatus.FAILED:
            frac, units = 0.0, ""
        else:
            frac, units = None, st.label[:13]
        out.append_text(
            _bar(frac, colours[PhaseStatus.DONE] if status == PhaseStatus.DONE else colour, dim, now, width)
        )
        out.append(f"  {units:<14}")
        elapsed = st.elapsed(now)
        if elapsed is not None and phase != "ready":
            out.append(f"{fmt_secs(elapsed):>6}")
        if status != PhaseStatus.ACTIVE:
            return
        est = estimates.get(phase)
        if est is not None:
            remaining = est[0] - (elapsed or 0.0)
            if st.total and st.done and elapsed:
                remaining = elapsed / st.done * (st.total - st.done)
            if elapsed is not None and elapsed > est[1] > 0:
                out.append("  ⚠ overdue", style=f"bold {warn}")
            else:
                out.append(f"  ETA {fmt_secs(max(0.0, remaining))}")
        elif st.total and st.done and elapsed:
            out.append(f"  ETA {fmt_secs(elapsed / st.done * (st.total - st.done))}")
        if st.slowest_rank is not None and st.ranks_total and st.ranks_done < st.ranks_total:
            out.append(f"  slow TP{st.slowest_rank}", style=warn)

    def _summary(
        self, la: LaunchState | None, now: float, estimates: dict[str, tuple[float, float]], basis: str = ""
    ) -> None:
        summary = self.query_one("#phase-summary", Static)
        failure = self.query_one("#phase-failure", Static)
        if la is None:
            set_label(summary, Text("no launch yet", style="dim"))
            self.remove_class("failed")
            return
        total = launch_elapsed(la, now)
        line = Text()
        line.append(f"launch #{la.launch}  ", style="bold")
        line.append(f"{la.status}  ")
        job = la.job
        if job is not None and la.status == ServerState.QUEUED:
            # waiting in the queue: why, where in the queue, for how long (the launch ETA starts later)
            line.append(f"job {inert(job.job_id)} {inert(job.state.lower())}")
            if job.reason:
                line.append(f" ({_clip(job.reason, 60)})")
            if job.position:
                line.append(f", position {job.position}")
            waited = job.waited(now)
            if waited is not None:
                line.append(f", waiting {fmt_secs(waited).strip()}")
            set_label(summary, line)
            self.remove_class("failed")
            return
        if job is not None:
            line.append(f"job {inert(job.job_id)}  ")
            if la.queued_seconds:
                line.append(f"queued {fmt_secs(la.queued_seconds)}  ", style="dim")
        if total is not None:
            line.append(f"elapsed {fmt_secs(total)}")
        note = startup_note(la) if la.status == ServerState.READY else ""
        if note:
            line.append(f"  of which {note}", style="dim")
        if la.status in (ServerState.LOADING, ServerState.LAUNCHING):
            _eta_text(line, la, now, estimates, basis)
        if la.adaptive.fallback is not None:
            line.append(f"  ⚠ adaptive off: {_clip(la.adaptive.fallback, 70)}", style="bold")
        tiers = la.adaptive.capture_text(steps=False)
        if tiers:  # the extra tiers' graphs are in the capture rows' time: say how much of it
            line.append(f"  {tiers}", style="dim")
        if la.stale_for:
            line.append(f"  ⚠ log silent {fmt_secs(la.stale_for)}", style="bold")
        if la.exit_code is not None or la.exit_signal is not None:
            line.append(
                f"  exit {la.exit_code if la.exit_code is not None else 'sig ' + str(la.exit_signal)}"
            )
        set_label(summary, line)
        f = la.failure
        if f is not None:
            self.add_class("failed")
            # kind and phase, the hint, then the evidence: what to do must fit even when space is short
            # (in a narrow terminal this box replaces the phase bars). The log keeps the whole text.
            text = Text()
            what = describe_failure(str(f.kind), f.phase)
            if f.node:
                what += f" on node {f.node}"
            text.append(f"✘ {inert(what[:1].upper() + what[1:])}", style="bold")
            text.append(f"  {_clip(f.message, 160)}")
            if f.hint:
                text.append("\nhint: ", style="bold")
                text.append(inert_lines(f.hint))
            if f.line and f.line.strip() not in f.message and f.message not in f.line:
                text.append("\n" + _clip(f.line, 160), style="dim")
            set_label(failure, text)
        else:
            self.remove_class("failed")

    def _node_rows(self, la: LaunchState | None, now: float, colours: dict[str, str], warn: str) -> None:
        """A multi-node server: where each node is, and the straggler by name."""
        box = self.query_one("#phase-nodes", Static)
        if la is None or len(la.nodes) < 2 and la.node_count < 2:
            self.remove_class("nodes")
            return
        self.add_class("nodes")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("nodes ", style="bold")
        if not la.nodes:
            names = la.job.nodes if la.job is not None else ()
            text.append(", ".join(inert(n) for n in names) or f"{la.node_count} (not started)", style="dim")
        for i, n in enumerate(la.nodes.values()):
            status = {
                "ready": PhaseStatus.DONE,
                "failed": PhaseStatus.FAILED,
                "stopped": PhaseStatus.PENDING,
            }.get(n.status, PhaseStatus.ACTIVE)
            text.append("  " if i else "")
            text.append(f"{STATUS_MARK[status]} {inert(n.name)} ", style=colours.get(status, ""))
            if n.status == "ready":
                text.append("ready", style=colours["done"])
            elif n.status == "stopped":
                text.append("stopped", style=colours["pending"])
            else:
                text.append(PHASE_LABELS.get(n.phase, inert(n.phase)) or "starting")
                if n.total:
                    text.append(f" {n.done}/{n.total}")
                if n.status == "failed":
                    text.append(" failed", style=colours["failed"])
        lag = la.straggler(now)
        if lag is not None and lag[2] >= 1.0:
            name, phase, behind = lag
            text.append(
                f"\n⚠ straggler {inert(name)}: still in {PHASE_LABELS.get(phase, inert(phase))}, "
                f"{fmt_secs(behind).strip()} after the first node finished it",
                style=f"bold {warn}",
            )
        set_label(box, text)


def _eta_text(
    line: Text, la: LaunchState, now: float, estimates: dict[str, tuple[float, float]], basis: str
) -> None:
    """The launch's ETA from the history's p50s of the phases to go, and which launches they are."""
    if estimates:
        remaining = 0.0
        for phase in la.shown_phases():
            st = la.phases[phase]
            est = estimates.get(phase)
            if est is None or st.status in (PhaseStatus.DONE, PhaseStatus.SKIPPED, PhaseStatus.FAILED):
                continue
            remaining += max(0.0, est[0] - (st.elapsed(now) or 0.0))
        line.append(f"  ETA ready {fmt_secs(remaining)}")
        if basis:  # p50s of which launches: a warm ETA for a cold launch is minutes short
            line.append(f" (p50 of {inert(basis)})", style="dim")
    elif any(st.status == PhaseStatus.ACTIVE and st.total and st.done for st in la.phases.values()):
        # the phase row shows an ETA from its own progress: say where it comes from
        line.append(f"  {FIRST_OF_CONFIG}: ETA from progress only", style="dim")
    else:
        line.append(f"  {NO_ESTIMATE}", style="dim")


def startup_gaps(la: LaunchState) -> list[tuple[str, str, float]]:
    """The stretches of the startup no phase covers: (after, before, seconds), phase labels."""
    out = []
    for g in (la.startup or {}).get("gaps") or []:
        secs = g.get("seconds") if isinstance(g, dict) else None
        if isinstance(secs, int | float):
            after, before = str(g.get("after", "?")), str(g.get("before", "?"))
            out.append((PHASE_LABELS.get(after, after), PHASE_LABELS.get(before, before), float(secs)))
    return out


def startup_note(la: LaunchState) -> str:
    """Where the startup's seconds outside the phase rows went: before the first log line (the
    process's imports, eagletui saw it start) and between phases (by the log's clock)."""
    parts = []
    if la.before_first_line is not None and la.before_first_line >= 0.5:
        parts.append(f"{fmt_secs(la.before_first_line).strip()} before the first log line")
    gaps = startup_gaps(la)
    if gaps:
        after, before, _ = max(gaps, key=lambda g: g[2])
        total = sum(g[2] for g in gaps)
        parts.append(f"{fmt_secs(total).strip()} between phases (most: {after} → {before})")
    return "; ".join(parts)


def launch_elapsed(la: LaunchState, now: float) -> float | None:
    """Launch to ready (or to now while loading). A reattached run's ``started`` is when we attached,
    so once it is ready its phases, timed from the log, are the better measure."""
    if la.ready_after is not None:  # the runs table's and the export's number (core.runs.launch_to_ready)
        return la.ready_after
    durations = la.phase_durations()
    if la.ready_at is not None and la.started is not None:
        return max(la.ready_at - la.started, sum(durations.values()))
    if la.status == ServerState.READY and durations:
        return sum(durations.values())
    if la.started and la.ended_at is not None:  # failed, stopped or exited before ready: it ended there
        return max(0.0, la.ended_at - la.started)
    return (now - la.started) if la.started else None


def _clip(text: str, limit: int) -> str:
    text = inert(" ".join(text.split()))  # log text: control sequences must not reach the terminal
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
