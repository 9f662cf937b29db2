"""The coalesced repaint of the main screen: events only mark it dirty; a 10 Hz tick paints.

That keeps a 20,000 line/s burst from turning into 20,000 repaints. Charts are the costliest repaint
(plotext rebuilds the figure), so they take turns: one chart per 250 ms slot, and after an event each
visible chart gets one turn, so a busy second never stalls on all four replots at once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from eagletui.core.diagnosis.fold import why_line
from eagletui.core.events import Event, LaunchStarted, LogLine
from eagletui.core.predict.next_launch import explain
from eagletui.core.state.launch import LaunchStatus, ServerState
from eagletui.core.textsafe import inert
from eagletui.session.presence import Presence
from eagletui.ui.widgets import charts as charts_registry
from eagletui.ui.widgets.charts import FrontierMiniChart, MetricChart
from eagletui.ui.widgets.logview import LogView
from eagletui.ui.widgets.phases import PhasePanel, set_label
from eagletui.ui.widgets.runs import VERDICT_STYLES, RunsTable
from eagletui.ui.widgets.status import GpuStrip, StatusHeader

if TYPE_CHECKING:
    from eagletui.core.diagnosis.fold import Diagnoser
    from eagletui.core.runs.book import RunBook
    from eagletui.ui.screens.main import MainScreen


def charts_shown() -> int:
    """Charts a repaint round gives turns to: the registry's (the wide left column holds them all, the
    Charts tab those ``in_tab``; never both on screen)."""
    return len(charts_registry.CHARTS)


CHART_SLOT_S = 0.25
#: while another screen covers this one, the log's pending lines are merged this often (bounded memory;
#: the dimmed margin around a dialog is all that shows of it)
COVERED_FLUSH_S = 1.0
_ACTIVE = (LaunchStatus.LAUNCHING, LaunchStatus.LOADING)


class Repainter:
    """What changed since the last frame, and the one method that paints it."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.model = screen.model
        self.dirty = True
        self.force_charts = False
        self._last_chart = 0.0
        self._chart_cursor = -1
        self._chart_rounds = 0
        self.log: LogView | None = None
        self._charts = charts_shown()  # the registry is fixed once the screen is composed
        self._covered_since_flush = 0.0
        self._was_covered = False
        self._nccl = ""
        #: who controls the session, when ``eagletui serve`` started this app behind a browser tab
        self.presence = Presence.from_env()
        self._control: str | None = None

    def attach(self) -> None:
        """Look the widgets up once (a query per tick would cost more than the tick)."""
        q = self.screen.query_one
        self.log = q(LogView)
        self.phases, self.status, self.gpus = q(PhasePanel), q(StatusHeader), q(GpuStrip)
        self.runs, self.compare = q(RunsTable), q("#compare", Static)
        self.tuning = q("#tuning")

    # ------------------------------------------------------------------ marking

    def on_event(self, ev: Event) -> None:
        """The model's observer: the log gets its lines now (cheap), everything else on the tick. Run for
        every event of a burst (~150,000 a second at 100,000 lines/s): no call it can do without."""
        self._chart_rounds = self._charts
        log = self.log
        if log is not None:
            if type(ev) is LogLine:
                log.add_event(ev)
            elif isinstance(ev, LaunchStarted):
                log.add_marker(f"──────── launch #{ev.launch} ────────")
        self.dirty = True

    def replot_all_soon(self) -> None:
        """Give every visible chart its turn of the coalesced replot, even if no event comes (a theme
        change or a resize while idle would otherwise leave some charts as they were)."""
        self._chart_rounds = max(self._chart_rounds, self._charts)
        self.dirty = True

    # ------------------------------------------------------------------ painting

    def covered(self, log: LogView) -> bool:
        """Whether another screen (the frontier view, help, a dialog) is over this one. Behind it nothing
        is painted but the log's lines, once every :data:`COVERED_FLUSH_S`: every region repainted
        under a dialog makes Textual render the whole screen again, tinted, as the dialog's backdrop
        (with the frontier view open during a sweep, about a frame in four was that alone: the log and
        the charts painting under it). The first tick uncovered paints everything, every chart
        included."""
        screen = self.screen
        if screen.app.screen is screen:
            if self._was_covered:
                self._was_covered = False
                self.dirty = self.force_charts = True
            return False
        self._was_covered = True
        now = time.monotonic()
        if now - self._covered_since_flush >= COVERED_FLUSH_S:
            self._covered_since_flush = now
            log.flush()
        return True

    def paint(self) -> None:
        log = self.log
        if log is None or not log.is_attached or self.covered(log):
            return
        log.flush()
        log.keep_following()
        state = self.model.state
        la = state.launch
        active = la is not None and la.status in _ACTIVE
        control = self.presence.label() if self.presence is not None else None
        if control != self._control:  # a tab came or went (eagletui serve)
            self._control = control
            self.dirty = True
        if not self.dirty and not active:
            return
        self.dirty = False
        screen = self.screen
        self.phases.show(
            la, screen.now(), self.model.estimates(), blocked=state.blocked, basis=self.model.eta_basis()
        )
        self.status.show(
            state,
            recording=self.model.recorder is not None,
            recording_paused=self.model.recording_paused,
            replay=screen.driver.is_replay,
            follow=log.follow,
            bench=state.bench_running is not None,
            log_filter=log.filter_label(),
            search=f"/{log.search} {log.hit_label()}" if log.search else None,
            control=control,
            read_only=self.presence is not None and self.presence.read_only,
        )
        self.gpus.show(state, screen.now())
        due = time.monotonic() - self._last_chart >= CHART_SLOT_S
        if not (due or self.force_charts):
            self.dirty = True
            return
        self._last_chart = time.monotonic()
        narrow = screen.narrow
        charts = [c for c in screen.query(MetricChart) if c.has_class("in-tab") == narrow]
        if self.force_charts:
            todo = charts
        else:
            self._chart_cursor = (self._chart_cursor + 1) % max(1, len(charts))
            todo = charts[self._chart_cursor : self._chart_cursor + 1]
        runbook = self.model.runbook
        for chart in todo:
            # the frontier's chart folds what ``v`` folds: a sweep's kept runs, every session's
            book = screen.frontier_book() if isinstance(chart, FrontierMiniChart) else runbook
            chart.sync(state, baseline_value(runbook, chart.baseline_metric), book)
        self.force_charts = False
        self.runs.show(runbook, state)
        set_label(
            self.compare,
            compare_text(
                runbook,
                state.bench_running,
                state.server_state,
                can_bench=screen.driver.can_bench,
                diagnoser=state.diagnoser,
                not_here=screen.driver.no_bench_here(),
            ),
        )
        nccl = state.nccl_line() or "NCCL: toggle NCCL_DEBUG=INFO to see how the ranks talk"
        if nccl != self._nccl:  # the Tune pane's title line
            self._nccl = nccl
            self.tuning.border_title = Text(nccl)
        # other charts may still be stale: keep ticking until each had its turn since the last event
        self._chart_rounds -= len(todo)
        if self._chart_rounds > 0:
            self.dirty = True


def baseline_value(runbook: RunBook, metric: str | None) -> float | None:
    """The pinned baseline's mean for ``metric`` (None: no metric, or no baseline yet)."""
    base = runbook.base_run() if metric else None
    return base.metric(metric).mean if base is not None and metric else None


def no_benchmark_text(server_state: str | None, *, can_bench: bool = True, not_here: str = "") -> str:
    """What the compare line says before any result: what to press, for the state the server is in;
    ``not_here``: what the driver says where ``b`` cannot run (a replay, a read-only view)."""
    if not can_bench:
        return not_here or "no benchmark in this recording yet"
    if server_state == ServerState.READY:
        return "no benchmark yet: press b to run one"
    if server_state in (ServerState.FAILED, ServerState.EXITED, ServerState.STOPPED):
        return f"no benchmark: the server {server_state} (r relaunches it)"
    if server_state in (ServerState.LOADING, ServerState.LAUNCHING):
        return "no benchmark yet: press b when the server is ready"
    return "no benchmark yet: no server (r launches one)"


def compare_text(
    runbook: RunBook,
    bench_running: int | None = None,
    server_state: str | None = ServerState.LOADING,
    *,
    can_bench: bool = True,
    diagnoser: Diagnoser | None = None,
    not_here: str = "",
) -> Text:
    """Current run vs the baseline in one line, beside the charts (and whether a benchmark runs); under
    it the economics, and a "why" line: the run's most important diagnosis (core/diagnosis/fold.py)."""
    t = Text(no_wrap=True, overflow="ellipsis")
    # the newest benchmarked run, valid or not: an invalid one must say so here, not hide behind the last good
    launch = max((n for n, r in runbook.runs.items() if r.results), default=None)
    if launch is None:
        if bench_running is not None:
            t.append(f"benchmark #{bench_running} running: results when it finishes", style="bold")
        else:
            t.append(no_benchmark_text(server_state, can_bench=can_bench, not_here=not_here), style="dim")
        why = why_line(diagnoser.diagnoses(), launch=diagnoser.current or None) if diagnoser is not None else ""
        if why:  # what the launch already says, before any benchmark (the all-reduce path, a slow load)
            t.no_wrap, t.overflow = False, "fold"
            t.append("\n" + inert(why), style="yellow")
        return t
    if bench_running is not None:
        t.append(f"⟳ bench #{bench_running}  ", style="bold")
    row = runbook.row(launch)
    t.append(f"run #{launch}: ", style="bold")
    t.append(f"{row.tok_s.text(1)} tok/s")
    d = row.deltas.get("tok_s")
    if d is not None and d.pct is not None and not row.is_baseline:
        t.append(f" ({d.pct:+.1f}%)", style=("green" if d.better else "red") if d.flagged else "dim")
    t.append(f"  accept {row.accept_len.text(2)}")
    if row.is_baseline:
        t.append("  ★ baseline", style="bold")
    elif runbook.baseline_label:  # #N of this session, or SESSION:RUN pinned from the history view
        t.append(f"  vs baseline {runbook.baseline_label}", style="dim")
    t.append(f"  {row.verdict}", style=VERDICT_STYLES.get(row.verdict, "dim"))
    if row.verdict == "invalid" and row.reasons:
        t.append(f": {inert(row.reasons[0])}", style="yellow")
    econ = (launch, row.economics) if row.economics else runbook.latest_economics()
    if econ is not None:  # a second line, wrapped: the verdict on speculation and what would change it
        t.no_wrap, t.overflow = False, "fold"
        e = runbook.economics(econ[0])
        style = "yellow" if e is None else "bold green" if e.pays else "bold red"  # None: unjudged
        t.append(f"\n#{econ[0]} {inert(econ[1])}", style=style)
    elif row.alarms:
        t.append(f"  ⚠ {row.alarms[0]}", style="yellow")
    # the line explains the run the numbers above are of: named, and stale once a newer launch started
    last = runbook.runs[launch].results[-1].bench
    newer = max(runbook.runs)
    why = (
        why_line(
            explain(diagnoser, runbook, launch),
            launch=launch,
            bench=last,
            newer=newer,
            newer_failed=runbook.runs[newer].failure is not None,
        )
        if diagnoser is not None
        else ""
    )
    if why:
        t.no_wrap, t.overflow = False, "fold"
        t.append("\n" + inert(why), style="yellow")
    return t
