"""The tuning workspace: one screen, keyboard-driven, fed by one event stream.

The app never interprets log text or HTTP itself: a driver (live :class:`~eagletui.workspace.Workspace`
or a replay) produces events, :meth:`EagleApp.dispatch` folds them into :class:`SessionState`, records
them and marks the screen dirty; a 10 Hz timer repaints what changed. That keeps a 20,000 line/s burst
from turning into 20,000 repaints.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.containers import Grid, Vertical
from textual.css.query import NoMatches
from textual.widgets import Input, Static

from eagletui.core.events import (
    PHASES,
    BenchmarkResult,
    Event,
    LaunchStarted,
    LogLine,
    Notice,
    ServerFailed,
    ServerReady,
)
from eagletui.core.profile import Profile, config_diff, format_diff
from eagletui.core.redact import Redactor
from eagletui.core.state import SessionState
from eagletui.ui.gcpolicy import IdleCollector
from eagletui.ui.restyle import StylesheetSpeedups
from eagletui.ui.screens.modals import ConfirmScreen, HelpScreen, TextScreen, diff_text
from eagletui.ui.widgets.keybar import KeyBar
from eagletui.ui.widgets.logview import RANKS, LogView
from eagletui.ui.widgets.phases import PhasePanel, fmt_secs
from eagletui.ui.widgets.runs import RunsTable
from eagletui.ui.widgets.status import GpuStrip, StatusHeader
from eagletui.ui.widgets.tabbar import TabBar
from eagletui.ui.widgets.tuning import TuningPanel

CSS_PATH = Path(__file__).with_name("app.tcss")
NARROW_WIDTH = 140
TABS = [("log", "Log"), ("charts", "Charts"), ("tune", "Tune"), ("runs", "Runs")]
PANES = {"log": "logview", "charts": "charts", "tune": "tuning", "runs": "runs-table"}  # tab → widget id
CHARTS_SHOWN = 4  # in the wide left column or in the Charts tab, never both

ACTIONS: list[tuple[str, str, str, str, str]] = [
    # (binding id, default key, action, footer label, description)
    ("relaunch", "r", "relaunch", "Relaunch", "Relaunch the server with the running config"),
    ("stop", "s", "stop", "Stop", "Stop the server eagletui started"),
    ("bench", "b", "bench", "Bench", "Run a benchmark"),
    ("apply", "a", "apply", "Apply", "Apply pending toggles: preflight, stop, relaunch"),
    ("diff", "d", "diff", "Diff", "Show pending changes (running vs pending)"),
    ("pin", "m", "pin_baseline", "Baseline", "Pin the selected run (or the latest) as baseline"),
    ("search", "slash", "search", "Search", "Search the log"),
    ("search_next", "n", "search_next", "Next hit", "Next search hit"),
    ("search_prev", "N", "search_prev", "Prev hit", "Previous search hit"),
    ("follow", "f", "follow", "Follow", "Follow the log tail"),
    ("errors", "e", "filter('errors')", "Errors", "Log filter: errors and warnings only"),
    ("phase_lines", "p", "filter('phase')", "Phases", "Log filter: phase lines"),
    ("decode_lines", "c", "filter('decode')", "Decode", "Log filter: decode/prefill lines"),
    ("all_lines", "0", "filter('all')", "All lines", "Log filter: everything"),
    ("rank_filter", "k", "rank_filter", "Rank", "Log filter: cycle through ranks (TP0, TP1, …, all)"),
    (
        "copy",
        "y",
        "copy_log",
        "Copy",
        "Copy the log selection (or the search hit, or the visible lines) to the clipboard",
    ),
    ("theme", "t", "cycle_theme", "Theme", "Next theme"),
    ("tab_log", "1", "tab('log')", "Log", "Log tab"),
    ("tab_charts", "2", "tab('charts')", "Charts", "Charts tab (narrow terminals)"),
    ("tab_tune", "3", "tab('tune')", "Tune", "Tune tab"),
    ("tab_runs", "4", "tab('runs')", "Runs", "Runs tab"),
    ("replay_pause", "space", "replay_pause", "Pause", "Replay: pause / resume"),
    ("replay_faster", "right_square_bracket", "replay_speed(2)", "Faster", "Replay: twice as fast"),
    ("replay_slower", "left_square_bracket", "replay_speed(0.5)", "Slower", "Replay: half as fast"),
    ("help", "f1,question_mark", "help", "Help", "Help: all keys"),
    ("quit", "q", "quit_app", "Quit", "Quit (the server keeps running, except in the demo)"),
]

FOOTER_SHOWN = {
    "relaunch",
    "stop",
    "bench",
    "apply",
    "diff",
    "pin",
    "search",
    "follow",
    "theme",
    "help",
    "quit",
}


class EagleCommands(Provider):
    """Every action in the command palette, so nothing needs a key to be reachable."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        app = self.app
        for bid, key, action, _label, desc in ACTIONS:
            score = matcher.match(desc)
            if score > 0:
                yield Hit(score, matcher.highlight(desc), _runner(app, action), help=f"key: {key}  id: {bid}")


def _runner(app: App, action: str):
    async def run() -> None:
        await app.run_action(action)

    return run


class EagleApp(App):
    CSS_PATH = CSS_PATH
    TITLE = "eagletui"
    COMMANDS = App.COMMANDS | {EagleCommands}
    BINDINGS = [
        Binding(key, action, label, id=bid, show=bid in FOOTER_SHOWN, tooltip=desc)
        for bid, key, action, label, desc in ACTIONS
    ]

    def __init__(
        self,
        *,
        profile: Profile | None,
        target: str,
        mode: str = "live",  # live | demo | replay
        workspace_factory: Any = None,
        replay: Any = None,
        recorder: Any = None,
        user_config: Any = None,
        theme_name: str | None = None,
        autolaunch: bool = True,
        history: Any = None,
        clock: Any = None,
    ) -> None:
        super().__init__()
        self.profile = profile
        self.target = target
        self.mode = mode
        self.workspace_factory = workspace_factory
        self.replay = replay
        self.recorder = recorder
        self.user_config = user_config
        self.autolaunch = autolaunch
        self.history = history
        self.clock = clock or time.time
        self.state = SessionState(target=target)
        self.workspace: Any = None
        self._dirty = True
        self._last_chart = 0.0
        self._bench_task: asyncio.Task | None = None
        self._theme_names: list[str] = []
        self._css_speedups = StylesheetSpeedups()
        self.collector = IdleCollector()
        self._requested_theme = theme_name
        self.runbook = _make_runbook(profile)
        self.events_seen = 0
        self._quitting = False
        self._control_busy = False
        self._chart_cursor = -1
        self._chart_rounds = 0
        self._force_charts = False
        self._log: LogView | None = None
        self.replay_done = asyncio.Event()  # set when a replay has fed its last event
        self._apply_keymap()

    # ------------------------------------------------------------------ setup

    def _apply_keymap(self) -> None:
        keymap = getattr(self.user_config, "keymap", None) or {}
        if keymap:
            self.set_keymap(dict(keymap))

    def notify(
        self, message: str, *, title: str = "", severity="information", timeout=None, markup: bool = False
    ) -> None:
        """Toasts carry log text, paths and exception messages: never interpret them as markup, and
        never let a control sequence in them reach the terminal (core.textsafe.inert)."""
        from eagletui.core.textsafe import inert_lines

        super().notify(
            inert_lines(message), title=inert_lines(title), severity=severity, timeout=timeout, markup=markup
        )

    def get_theme_variable_defaults(self) -> dict[str, str]:
        try:
            from eagletui.ui.themes import APP_VARIABLE_DEFAULTS

            return dict(APP_VARIABLE_DEFAULTS)
        except Exception:
            return {}

    def compose(self) -> ComposeResult:
        from eagletui.ui.widgets.charts import AcceptChart, RequestTokSChart, TokSChart, TtftChart

        scrollback = int(getattr(self.user_config, "scrollback", 100_000) or 100_000)
        # Flat on purpose: every container repaints its whole area on a full repaint (a theme switch),
        # even where its children cover it, so each level of nesting here cost ~50 lines of work.
        yield StatusHeader(id="status")
        with Vertical(id="left"):
            yield PhasePanel(id="phases")
            yield GpuStrip(id="gpus")
            yield Static("", id="compare")
            with Grid(id="wide-charts", classes="charts"):
                yield TokSChart(id="chart-toks-wide", classes="chart wide")
                yield AcceptChart(id="chart-accept-wide", classes="chart wide")
                yield RequestTokSChart(id="chart-req-wide", classes="chart")
                yield TtftChart(id="chart-ttft-wide", classes="chart")
        with Vertical(id="tabs"):
            yield TabBar(TABS, active="log", id="tabbar")
            # the panes: one shown at a time (see _show_tab)
            yield LogView(max_lines=scrollback, id="logview", classes="pane")
            with Grid(id="charts", classes="pane charts"):
                yield TokSChart(id="chart-toks", classes="chart")
                yield AcceptChart(id="chart-accept", classes="chart")
                yield RequestTokSChart(id="chart-req", classes="chart")
                yield TtftChart(id="chart-ttft", classes="chart")
            yield TuningPanel(id="tuning", classes="pane")
            yield RunsTable(id="runs-table", classes="pane")
            yield SearchInput(placeholder="search the log (Enter: find, Esc: cancel)", id="search-input")
        yield KeyBar()

    def on_mount(self) -> None:
        self._log = self.query_one(LogView)
        self._load_themes()
        if self.profile is not None:
            self.query_one(TuningPanel).set_profile(self.profile)
        self._layout_for(self.size.width)
        self.set_interval(0.1, self._tick)
        self.call_after_refresh(self.collector.start)
        if self.mode == "replay":
            self.run_replay()
        else:
            self.start_live()

    def _load_themes(self) -> None:
        problems: list[str] = []
        try:
            from eagletui.ui.themes import load_themes

            themes, problems = load_themes()
            for th in themes:
                self.register_theme(th)
                self._theme_names.append(th.name)
        except Exception as exc:  # themes are cosmetic: never fatal
            problems.append(f"themes: {exc}")
        for p in problems:
            self.notify(p, title="theme problem", severity="warning", timeout=8)
        wanted = self._requested_theme or getattr(self.user_config, "theme", None) or "eagletui-dark"
        if wanted in self.available_themes:
            self.theme = wanted
        elif self._requested_theme:
            self.notify(f"unknown theme {wanted!r}", severity="warning")
        if not self._theme_names:
            self._theme_names = ["textual-dark", "textual-light"]

    def on_resize(self, event) -> None:
        self._layout_for(event.size.width)

    @property
    def _narrow(self) -> bool:
        return self.default_screen.has_class("narrow")

    def _layout_for(self, width: int) -> None:
        # default_screen, not screen: a resize while Help (or any modal) is open must still re-lay the
        # main screen out, which is what the app's queries and CSS classes refer to.
        narrow = width < NARROW_WIDTH
        self.default_screen.set_class(narrow, "narrow")
        with contextlib.suppress(NoMatches):
            self.query_one(TabBar).set_hidden("charts", not narrow)
            if not narrow and self.query_one(TabBar).active == "charts":
                self.action_tab("log")
        self._replot_all_soon()

    def _replot_all_soon(self) -> None:
        """Give every visible chart its turn of the coalesced replot, even if no event comes (a theme
        change or a resize while idle would otherwise leave some charts as they were)."""
        self._chart_rounds = max(self._chart_rounds, CHARTS_SHOWN)
        self._dirty = True

    # ------------------------------------------------------------------ the event path

    def dispatch(self, ev: Event) -> None:
        """The single entry for events from any source (live, bench, replay)."""
        self.events_seen += 1
        self._chart_rounds = CHARTS_SHOWN
        self.state.apply(ev)
        if self.runbook is not None:
            with contextlib.suppress(Exception):
                self.runbook.apply(ev)
        if self.recorder is not None:
            try:
                self.recorder.write(ev)
            except Exception as exc:
                self.recorder = None
                self.notify(f"recording stopped: {exc}", severity="error")
            if self.recorder is not None and getattr(self.recorder, "error", None):  # e.g. disk full
                self.notify(str(self.recorder.error), title="recording", severity="error", timeout=30)
                self.recorder = None
        if isinstance(ev, LogLine):
            if self._log is not None:
                self._log.add_events([ev])
        elif isinstance(ev, ServerReady):
            self._announce("ready", "server ready", f"launch #{self.state.current} is ready")
            self._record_history()
        elif isinstance(ev, ServerFailed):
            self._announce("failed", f"server failed: {ev.kind}", ev.hint or ev.message, severity="error")
        elif isinstance(ev, BenchmarkResult):
            msg = f"{ev.output_throughput:.1f} tok/s"
            if ev.accept_length:
                msg += f", accept {ev.accept_length:.2f}"
            if ev.error:
                msg += f" ({ev.error})"
            self._announce("bench_done", "benchmark done", msg)
        elif isinstance(ev, Notice) and ev.level in ("warning", "error"):
            self.notify(ev.message, severity="error" if ev.level == "error" else "warning", timeout=6)
        elif isinstance(ev, LaunchStarted) and self._log is not None:
            self._log.add_marker(f"──────── launch #{ev.launch} ────────")
            self._adopt_verdict(ev.config.get("verdict"))
        self._dirty = True

    def _adopt_verdict(self, recorded: Any) -> None:
        """A replay has no profile: judge its runs with the thresholds the recording carries."""
        if self.profile is not None or not isinstance(recorded, dict) or self.runbook is None:
            return
        from eagletui.core.profile import Verdict

        with contextlib.suppress(TypeError, ValueError):
            self.runbook.verdict = Verdict(**{k: float(v) for k, v in recorded.items()})

    def _announce(self, what: str, title: str, body: str, severity: str = "information") -> None:
        """Toast, bell and desktop notification as the user config's channels for ``what`` say."""
        from eagletui.config import NotifyChannels, NotifyConfig
        from eagletui.ui.notify import notification_output

        if self.mode == "replay" and getattr(self.replay, "speed", None) == "instant":
            return  # the whole history arrives at once: a toast per launch would bury the screen
        config = getattr(self.user_config, "notifications", None) or NotifyConfig()
        channels = getattr(config, what, None) or NotifyChannels()
        if channels.toast:
            self.notify(body, title=title, severity=severity, timeout=6)
        if self.mode == "replay" or self.is_headless or self._driver is None:
            return  # a replay is history: no bells
        out = notification_output(channels, f"eagletui: {title}", body, config.desktop_kind)
        if out:
            self._driver.write(out)

    def _record_history(self) -> None:
        la = self.state.launch
        if self.history is None or la is None or self.mode == "replay":
            return
        with contextlib.suppress(Exception):
            from eagletui.core.history import history_key

            self.history.record(history_key(la.config), la.phase_durations())

    def _estimates(self) -> dict[str, tuple[float, float]]:
        la = self.state.launch
        if self.history is None or la is None:
            return {}
        out: dict[str, tuple[float, float]] = {}
        with contextlib.suppress(Exception):
            from eagletui.core.history import history_key

            key = history_key(la.config)
            for phase in PHASES:
                med = self.history.estimate(key, phase)
                if med is not None:
                    out[phase] = (med, self.history.p95(key, phase) or med * 1.5)
        return out

    def now(self) -> float:
        if self.mode == "replay":
            return self.state.last_wall or self.clock()
        return self.clock()

    def repaint_now(self) -> None:
        """Fold everything pending into the screen at once, charts included (tests, end of a replay)."""
        self._force_charts = True
        self._dirty = True
        self._tick()

    def _tick(self) -> None:
        try:
            self._repaint()
        except NoMatches:
            return  # the screen is being torn down (quit): nothing left to paint
        self.collector.tick()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollUp, events.MouseScrollDown)):
            self.collector.input_seen()
        await super().on_event(event)

    def on_unmount(self) -> None:
        self.collector.stop()

    def _repaint(self) -> None:
        log = self._log
        if self._quitting or log is None or not log.is_attached:
            return
        log.flush()
        log.keep_following()
        la = self.state.launch
        active = la is not None and la.status in ("launching", "loading")
        if not self._dirty and not active:
            return
        self._dirty = False
        now = self.now()
        self.query_one(PhasePanel).show(la, now, self._estimates())
        self.query_one(StatusHeader).show(
            self.state,
            recording=self.recorder is not None,
            mode=self.mode,
            follow=log.follow,
            bench=self.state.bench_running is not None,
        )
        self.query_one(GpuStrip).show(self.state)
        # Charts are the costliest repaint (plotext rebuilds the figure): one chart per slot, each at
        # most about once a second, so a busy second never stalls on all four replots at once.
        due = time.monotonic() - self._last_chart >= 0.25
        if due or self._force_charts:
            self._last_chart = time.monotonic()
            narrow = self._narrow
            charts = [c for c in self.query(".chart") if (not c.id.endswith("-wide")) == narrow]
            if self._force_charts:
                todo = charts
            else:
                self._chart_cursor = (self._chart_cursor + 1) % max(1, len(charts))
                todo = charts[self._chart_cursor : self._chart_cursor + 1]
            for chart in todo:
                chart.sync(self.state, self._chart_baseline(chart.id))
            self._force_charts = False
            self.query_one(RunsTable).show(self.runbook, self.state)
            from eagletui.ui.widgets.phases import set_label

            set_label(self.query_one("#compare", Static), self._compare_text())
            # other charts may still be stale: keep ticking until each had its turn since the last event
            self._chart_rounds -= len(todo)
            if self._chart_rounds > 0:
                self._dirty = True
        else:
            self._dirty = True

    def _compare_text(self) -> Text:
        """Current run vs the baseline in one line, beside the charts."""
        t = Text(no_wrap=True, overflow="ellipsis")
        if self.runbook is None or not self.runbook.runs:
            t.append("no benchmark yet: press b when the server is ready", style="dim")
            return t
        launch = max((n for n, r in self.runbook.runs.items() if r.good_results), default=None)
        if launch is None:
            t.append("no benchmark yet: press b when the server is ready", style="dim")
            return t
        row = self.runbook.row(launch)
        t.append(f"run #{launch}: ", style="bold")
        t.append(f"{row.tok_s.text(1)} tok/s")
        d = row.deltas.get("tok_s")
        if d is not None and d.pct is not None and not row.is_baseline:
            t.append(f" ({d.pct:+.1f}%)", style=("green" if d.better else "red") if d.flagged else "dim")
        t.append(f"  accept {row.accept_len.text(2)}")
        if row.is_baseline:
            t.append("  ★ baseline", style="bold")
        elif self.runbook.baseline is not None:
            t.append(f"  vs #{self.runbook.baseline}", style="dim")
        t.append(f"  {row.verdict}", style={"pass": "bold green", "fail": "bold red"}.get(row.verdict, "dim"))
        if row.alarms:
            t.append(f"  ⚠ {row.alarms[0]}", style="yellow")
        return t

    def _chart_baseline(self, chart_id: str) -> float | None:
        """The pinned baseline's value for a chart's metric (tok/s and accept length have one)."""
        metric = (
            "tok_s"
            if chart_id.startswith("chart-toks")
            else "accept_len"
            if chart_id.startswith("chart-accept")
            else None
        )
        base = self.runbook.base_run() if metric and self.runbook is not None else None
        return base.metric(metric).mean if base is not None else None

    # ------------------------------------------------------------------ drivers

    @work(exclusive=True, group="live", exit_on_error=False)
    async def start_live(self) -> None:
        if self.workspace_factory is None:
            return
        self.workspace = self.workspace_factory(self.dispatch)
        try:
            await self.workspace.connect()
        except Exception as exc:
            self.notify(str(exc), title="connection failed", severity="error", timeout=30)
            self.dispatch(Notice(level="error", message=f"connect failed: {exc}", source="connect"))
            return
        attached = False
        try:
            attached = await self.workspace.attach_newest()
        except Exception as exc:
            # Not knowing whether a server runs is not "no server": launching now could start a second one.
            self.notify(
                f"could not list runs on the host: {exc}", title="attach", severity="error", timeout=20
            )
            return
        if attached:
            self.notify("reattached to the running server", title="attach")
            return
        foreign = await self.workspace.discover_foreign() if self.mode != "demo" else []
        for server in foreign:
            if not server.log_path:
                self.notify(
                    f"SGLang server pid {server.pid} found; its output is not a file, so it can't be followed"
                )
                continue
            cmd = " ".join(server.cmdline)[:160]
            question = (
                f"An SGLang server that eagletui did not start is running:\npid {server.pid}: {cmd}\n"
                f"log: {server.log_path}\n\nFollow its log read-only? It will never be stopped by eagletui. (y/n)"
            )
            if await self.push_screen_wait(ConfirmScreen(question)):
                self.workspace.follow_foreign(server)
                return
        if self.autolaunch:
            await self._do_launch(None)

    async def _do_launch(self, profile: Profile | None) -> bool:
        from eagletui.workspace import WorkspaceError

        ok = False
        try:
            await self.workspace.launch(profile)
            ok = True
        except WorkspaceError as exc:
            self.notify(str(exc), title="launch refused", severity="error", timeout=15)
        except Exception as exc:
            self.notify(f"{type(exc).__name__}: {exc}", title="launch failed", severity="error", timeout=15)
            self.dispatch(Notice(level="error", message=f"launch failed: {exc}", source="launch"))
        self._sync_tuning()
        return ok

    def _sync_tuning(self) -> None:
        if self.workspace is not None:
            tuning = self.query_one(TuningPanel)
            tuning.server_version = self.workspace.server_version
            tuning.set_profile(self.workspace.profile)

    @work(exclusive=True, group="replay", exit_on_error=False)
    async def run_replay(self) -> None:
        bad = 0
        async for ev in self.replay.play():
            try:
                self.dispatch(ev)
            except Exception as exc:  # a damaged event must not end the replay silently
                bad += 1
                if bad == 1:
                    self.notify(f"skipped a damaged event ({type(exc).__name__}: {exc})", severity="warning")
        self.replay_done.set()
        self.repaint_now()
        self.notify("end of recording", title="replay")

    async def ask_host_key(self, host: str, fingerprint: str) -> bool:
        """Unknown host key: show the fingerprint and let the user decide (called from the live worker)."""
        return bool(
            await self.push_screen_wait(
                ConfirmScreen(
                    f"Unknown host {host}\nkey fingerprint {fingerprint}\nTrust it and add to known_hosts? (y/n)"
                )
            )
        )

    # ------------------------------------------------------------------ actions

    def _live_only(self) -> bool:
        if self.mode == "replay" or self.workspace is None:
            self.notify(
                "not available in replay" if self.mode == "replay" else "not connected", severity="warning"
            )
            return False
        return True

    def _control_free(self) -> bool:
        """One launch/stop at a time, and never under a running benchmark: a cancelled launch would
        leave a server nobody tracks, and a relaunch would pull the server from under the benchmark."""
        if self._control_busy:
            self.notify("a launch or stop is already in progress", severity="warning")
            return False
        if self._bench_task is not None and not self._bench_task.done():
            self.notify("a benchmark is running: wait for it to finish", severity="warning")
            return False
        return True

    def action_relaunch(self) -> None:
        if self._live_only() and self._control_free():
            self._launch_worker(None)

    @work(exclusive=False, group="control", exit_on_error=False)
    async def _launch_worker(self, profile: Profile | None, applied: dict[str, Any] | None = None) -> None:
        self._control_busy = True
        try:
            if await self._do_launch(profile) and applied is not None:
                tuning = self.query_one(TuningPanel)
                for key in applied:
                    tuning.pending.pop(key, None)
                tuning.post_message(TuningPanel.PendingChanged(dict(tuning.pending)))
                tuning.set_profile(self.workspace.profile)
        finally:
            self._control_busy = False

    def action_stop(self) -> None:
        if self._live_only() and self._control_free():
            self._stop_worker()

    @work(exclusive=False, group="control", exit_on_error=False)
    async def _stop_worker(self) -> None:
        self._control_busy = True
        try:
            await self.workspace.stop()
            self.notify("server stopped", title="stop")
        except Exception as exc:
            self.notify(str(exc), title="stop", severity="error")
        finally:
            self._control_busy = False

    def action_bench(self) -> None:
        if not self._live_only():
            return
        if self._control_busy:
            self.notify("a launch or stop is in progress", severity="warning")
            return
        if self.state.server_state != "ready":
            self.notify("the server is not ready yet", severity="warning")
            return
        if self._bench_task is not None and not self._bench_task.done():
            self.notify("a benchmark is already running", severity="warning")
            return
        self._bench_worker()

    @work(exclusive=False, group="bench", exit_on_error=False)
    async def _bench_worker(self) -> None:
        self._bench_task = asyncio.current_task()
        try:
            await self.workspace.benchmark()
        except Exception as exc:
            self.notify(f"{exc}", title="benchmark failed", severity="error")
        finally:
            self._bench_task = None
            if self.state.bench_running is not None:
                # The runner died before its result: close the run so the header does not say
                # "benchmarking" forever.
                from eagletui.core.events import BenchmarkResult

                self.dispatch(
                    BenchmarkResult(
                        bench=self.state.bench_running, launch=self.state.current, error="benchmark aborted"
                    )
                )

    def _pending_profile(self) -> tuple[Profile | None, dict[str, Any]]:
        tuning = self.query_one(TuningPanel)
        base = self.workspace.profile if self.workspace is not None else self.profile
        if base is None:
            return None, {}
        new = base.with_values(tuning.pending)
        return new, config_diff(base.snapshot(), new.snapshot())

    def action_diff(self) -> None:
        new, diff = self._pending_profile()
        if new is None:
            self.notify("no profile", severity="warning")
            return
        argv = Redactor.for_profile(new).argv(new.argv()) if diff else None  # shown: no key in clear
        self.push_screen(
            TextScreen("pending changes (running → pending)", diff_text(diff, argv), "diff-screen")
        )

    def action_apply(self) -> None:
        if not self._live_only():
            return
        new, diff = self._pending_profile()
        if not diff:
            self.notify("nothing to apply: no pending changes", severity="warning")
            return
        if not self._control_free():
            return
        self.notify(format_diff(diff), title="applying")
        # Pending changes are cleared only once the relaunch has started: a refused preflight keeps them.
        self._launch_worker(new, dict(self.query_one(TuningPanel).pending))

    def action_pin_baseline(self) -> None:
        if self.runbook is None:
            return
        launch = self.query_one(RunsTable).selected_launch() or self.state.current
        try:
            self.runbook.pin_baseline(launch)
            self.notify(f"launch #{launch} is the baseline", title="baseline")
        except Exception as exc:
            self.notify(str(exc), severity="warning")
        self._dirty = True

    def action_search(self) -> None:
        """An inline search line under the log (like ``less``): no screen push, so it stays instant."""
        self._show_tab("log")
        box = self.query_one("#search-input", Input)
        box.value = self.query_one(LogView).search
        box.display = True
        box.focus()

    @on(Input.Submitted, "#search-input")
    def _search_submitted(self, event: Input.Submitted) -> None:
        log = self.query_one(LogView)
        hits = log.set_search(event.value)
        event.input.display = False
        log.focus()
        self.notify(
            f"{hits} hit{'s' if hits != 1 else ''} for {event.value!r}" if event.value else "search cleared"
        )

    def _search_cancel(self) -> None:
        box = self.query_one("#search-input", Input)
        if box.display:
            box.display = False
            self.query_one(LogView).focus()

    def action_search_next(self) -> None:
        self.query_one(LogView).next_hit(1)

    def action_search_prev(self) -> None:
        self.query_one(LogView).next_hit(-1)

    def action_copy_log(self) -> None:
        log = self.query_one(LogView)
        text = log.selected_text()
        if not text:
            self.notify("nothing to copy", severity="warning")
            return
        self.copy_to_clipboard(text)
        n = text.count("\n") + 1
        self.notify(f"copied {n} line{'s' if n != 1 else ''} to the clipboard (OSC 52)")

    def action_follow(self) -> None:
        self.query_one(LogView).action_follow()
        self._dirty = True

    def action_filter(self, which: str) -> None:
        log = self.query_one(LogView)
        kinds = {
            "errors": {"error", "traceback", "warning"},
            "phase": {"phase", "progress"},
            "decode": {"decode", "prefill"},
            "all": None,
        }[which]
        log.set_filter(kinds, log.filter_rank)
        self._show_tab("log")
        self.notify(f"log filter: {which}")

    def action_replay_pause(self) -> None:
        if self.mode != "replay" or self.replay is None:
            return
        self.replay.toggle_pause()
        self.notify("replay paused" if self.replay.paused else "replay resumed")

    def action_replay_speed(self, factor: float) -> None:
        if self.mode != "replay" or self.replay is None:
            return
        speed = self.replay.speed
        if speed == "instant":
            self.notify("replay speed: instant")
            return
        new = min(1000.0, max(0.125, float(speed) * factor))
        self.replay.set_speed(new)
        self.notify(f"replay speed ×{new:g}")

    def action_rank_filter(self) -> None:
        log = self.query_one(LogView)
        ranks = sorted({r for row in log.rows for r in row[RANKS]})
        if not ranks:
            self.notify("no ranked lines yet")
            return
        order: list[int | None] = [*ranks, None]
        current = log.filter_rank
        nxt = order[(order.index(current) + 1) % len(order)] if current in order else order[0]
        log.set_filter(log.filter_kinds, nxt)
        self.notify(f"log rank filter: {'all' if nxt is None else f'TP{nxt}'}")

    def action_tab(self, tab: str) -> None:
        if tab == "charts" and not self._narrow:
            return
        self._show_tab(tab)
        # Keys go to the pane's content (←/→ step a toggle, Enter opens a run), not to the tab bar.
        target = {"log": LogView, "tune": TuningPanel, "runs": RunsTable}.get(tab)
        if target is not None:
            self.query_one(target).focus()

    def _show_tab(self, tab: str) -> None:
        self.query_one(TabBar).active = tab
        # In a narrow terminal only the Log tab shares the height with the phase panel: charts, toggles
        # and runs need the rows more (the header still names the current phase).
        self.default_screen.set_class(tab != "log", "-full-pane")
        for name, pane in PANES.items():
            self.query_one(f"#{pane}").display = name == tab
        if tab != "log":
            self.query_one("#search-input", Input).display = False  # it belongs to the log

    @on(TabBar.Clicked)
    def _tab_clicked(self, event: TabBar.Clicked) -> None:
        self.action_tab(event.tab)

    def action_cycle_theme(self) -> None:
        names = [n for n in self._theme_names if n in self.available_themes] or ["textual-dark"]
        idx = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(idx + 1) % len(names)]
        self.notify(f"theme: {self.theme}")

    def refresh_css(self, animate: bool = True) -> None:
        """Textual's restyle, with refreshes coalesced and parsed themes reused (see ``restyle``), then
        the colours the app paints itself. Those are read here, not in ``watch_theme``: the theme's
        variables are only computed during the restyle, so reading them earlier got the old theme's."""
        with self._css_speedups.applied(self.stylesheet):
            super().refresh_css(animate)
        with contextlib.suppress(NoMatches):
            self.query_one(LogView).refresh_styles()
        for chart in self.query(".chart"):
            chart.mark_stale()  # replot in the new colours on its next turn
        self._replot_all_soon()

    def action_help(self) -> None:
        rows = []
        keymap = getattr(self.user_config, "keymap", None) or {}
        for bid, key, _action, _label, desc in ACTIONS:
            rows.append((_key_names(keymap.get(bid, key)), desc, bid))
        rows += [
            ("←/→ enter", "Tune tab: step the selected toggle", "tune.next"),
            ("x", "Tune tab: discard pending changes", "tune.discard"),
            ("enter", "Runs tab: run details", ""),
            ("end", "Log: follow the tail", "log.follow"),
            ("ctrl+p", "Command palette", ""),
        ]
        self.push_screen(HelpScreen(rows))

    def action_quit_app(self) -> None:
        if self._bench_task is not None and not self._bench_task.done():

            def answer(yes: bool | None) -> None:
                if yes:
                    self._quit_worker()

            self.push_screen(ConfirmScreen("A benchmark is running. Quit anyway? (y/n)"), answer)
            return
        self._quit_worker()

    def quit_now(self) -> None:
        """Quit without asking (SIGTERM/SIGHUP/SIGINT, see commands._ui.run_app): the path q takes."""
        self._quit_worker()

    @work(exclusive=True, group="quit", exit_on_error=False)
    async def _quit_worker(self) -> None:
        if self._quitting:
            return
        self._quitting = True
        if self._bench_task is not None:
            self._bench_task.cancel()
        for _ in range(300):  # let a launch in flight finish (≤ 30 s) so its server is known
            if not self._control_busy:
                break
            await asyncio.sleep(0.1)
        if self.workspace is not None:
            stop = self.mode == "demo"
            if stop:
                self.notify("stopping the demo server…")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.workspace.close(stop_server=stop), timeout=30)
        if self.recorder is not None:
            with contextlib.suppress(Exception):
                self.recorder.close()
        self.exit()

    @on(TuningPanel.PendingChanged)
    def _pending_changed(self, event: TuningPanel.PendingChanged) -> None:
        n = len(event.pending)
        self.query_one(TabBar).set_label("tune", f"Tune ({n})" if n else "Tune")

    @on(RunsTable.RunSelected)
    def _run_selected(self, event: RunsTable.RunSelected) -> None:
        self.push_screen(
            TextScreen(
                f"run #{event.launch}",
                self.query_one(RunsTable).details(self.runbook, self.state, event.launch),
                "run-details",
            )
        )

    @on(LogView.FollowChanged)
    def _follow_changed(self, event: LogView.FollowChanged) -> None:
        self._dirty = True


class SearchInput(Input):
    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]
    DEFAULT_CSS = "SearchInput { display: none; dock: bottom; }"

    def action_cancel(self) -> None:
        self.app._search_cancel()


_KEY_NAMES = {
    "slash": "/",
    "question_mark": "?",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "space": "Space",
    "f1": "F1",
}


def _key_names(keys: str) -> str:
    """``f1,question_mark`` → ``F1 / ?``: what the user presses, not Textual's key ids."""
    return " / ".join(_KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))


def _make_runbook(profile: Profile | None) -> Any:
    try:
        from eagletui.core.runs import RunBook
    except ImportError:
        return None
    try:
        return RunBook(verdict=profile.verdict if profile else None)
    except TypeError:
        return RunBook()


__all__ = ["EagleApp", "fmt_secs"]
