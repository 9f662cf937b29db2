"""The tuning workspace: one screen, keyboard-driven, over one session model.

The screen owns the layout, the panes and the actions on the session (relaunch, stop, bench, apply,
diff, baseline, search, filters, tabs). It never interprets log text or HTTP: the driver feeds the
:class:`~eagletui.session.model.SessionModel`, the model tells the screen what happened
(:meth:`Repainter.on_event`) and a 10 Hz tick paints what changed (:mod:`eagletui.ui.repaint`).
It is also the driver's :class:`~eagletui.session.drivers.DriverHost`: events, messages and yes/no
questions from the driver come through :meth:`dispatch`, :meth:`notify` and :meth:`ask`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Static

from eagletui.core.events import BaselinePinned, Event
from eagletui.core.profile.redact import Redactor
from eagletui.core.profile.staged import NothingStaged
from eagletui.core.state.launch import ServerState
from eagletui.core.textsafe import inert
from eagletui.session.drivers import LiveDriver, ReplayDriver
from eagletui.ui import actions
from eagletui.ui.repaint import Repainter
from eagletui.ui.screens.modals import ConfirmScreen, DiffScreen, HelpScreen, TextScreen, diff_text
from eagletui.ui.widgets.charts import MetricChart, tab_charts, tab_grid_rows, wide_charts, wide_grid_rows
from eagletui.ui.widgets.keybar import KeyBar
from eagletui.ui.widgets.logview import FILTER_NAMES, RANKS, LogView
from eagletui.ui.widgets.phases import PhasePanel
from eagletui.ui.widgets.queue import SweepQueueView
from eagletui.ui.widgets.runs import RunsTable, command_line
from eagletui.ui.widgets.status import GpuStrip, StatusHeader
from eagletui.ui.widgets.stepbars import step_bars
from eagletui.ui.widgets.tabbar import TabBar
from eagletui.ui.widgets.timeline import Timeline, clock
from eagletui.ui.widgets.tuning import TuningPanel
from eagletui.ui.words import phase_label
from eagletui.ui.workers import WorkerFailures

if TYPE_CHECKING:
    from eagletui.session.drivers import Driver
    from eagletui.session.model import SessionModel
    from eagletui.ui.app import EagleApp

NARROW_WIDTH = 140
TABS = [("log", "Log"), ("charts", "Charts"), ("tune", "Tune"), ("runs", "Runs"), ("queue", "Queue")]
PANES = {"log": "logview", "charts": "charts", "tune": "tuning", "runs": "runs-table", "queue": "sweep-queue"}
FILTERS = FILTER_NAMES


class MainScreen(WorkerFailures, Screen):
    BINDINGS: ClassVar[list[BindingType]] = [
        *actions.bindings(),
        # the README's "ctrl+c copies" (Textual binds ctrl+c to a "press ctrl+q to quit" hint)
        Binding("ctrl+c", "copy_log", "Copy", show=False),
    ]
    app: EagleApp

    def __init__(self, model: SessionModel, driver: Driver, *, scrollback: int = 100_000) -> None:
        super().__init__(id="_default")
        self.model = model
        self.driver = driver
        self.scrollback = scrollback
        self.painter = Repainter(self)
        #: keys the key bar leaves out: they would only answer "not available" with this driver
        self.hidden_actions = actions.hidden_actions(
            can_launch=driver.can_launch, can_bench=driver.can_bench, is_replay=driver.is_replay
        )

    def compose(self) -> ComposeResult:
        # Flat on purpose: every container repaints its whole area on a full repaint (a theme switch),
        # even where its children cover it, so each level of nesting here cost ~50 lines of work.
        yield StatusHeader(id="status")
        with Vertical(id="left"):
            yield PhasePanel(id="phases")
            yield GpuStrip(id="gpus")
            yield Static("", id="compare")
            with Grid(id="wide-charts", classes="charts") as wide:
                wide.styles.grid_rows = wide_grid_rows()
                yield from wide_charts()
        with Vertical(id="tabs"):
            yield TabBar(TABS, active="log", id="tabbar")
            # the panes: one shown at a time (see _show_tab)
            yield LogView(max_lines=self.scrollback, id="logview", classes="pane")
            with Grid(id="charts", classes="pane charts") as tab:
                tab.styles.grid_rows = tab_grid_rows()
                yield from tab_charts()
            yield TuningPanel(staged=self.model.staged, id="tuning", classes="pane")
            yield Static("", id="tune-help", classes="tab-extra")
            yield RunsTable(id="runs-table", classes="pane")
            yield SweepQueueView(id="sweep-queue", classes="pane")
            yield SearchInput(placeholder="search the log (Enter: find, Esc: cancel)", id="search-input")
        yield KeyBar()

    def on_mount(self) -> None:
        self.painter.attach()
        self.model.subscribe(self.painter.on_event)
        self.query_one(TuningPanel).refresh_rows()
        self.layout_for(self.app.size.width)
        self._mount_replay_seeking()
        self._run_driver()

    # ------------------------------------------------------------------ the driver's host

    def dispatch(self, ev: Event) -> None:
        self.model.dispatch(ev)

    def notify(  # type: ignore[override]  # the driver's keyword form of App.notify
        self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None
    ) -> None:
        self.app.notify(message, title=title, severity=severity, timeout=timeout)

    async def ask(self, question: str) -> bool:
        return bool(await self.app.push_screen_wait(ConfirmScreen(question)))

    def config_changed(self) -> None:
        self.query_one(TuningPanel).refresh_rows()

    def settled(self) -> None:
        self.repaint_now()

    @work(exclusive=True, group="driver", name="driver", exit_on_error=False)
    async def _run_driver(self) -> None:
        await self.driver.run(self.model, self)

    # ------------------------------------------------------------------ painting

    def now(self) -> float:
        return self.driver.now(self.model, self.app.clock)

    def repaint(self) -> None:
        with contextlib.suppress(NoMatches):  # the screen is being torn down (quit): nothing to paint
            self.painter.paint()

    def repaint_now(self) -> None:
        """Fold everything pending into the screen at once, charts included (tests, end of a replay)."""
        self.painter.force_charts = True
        self.painter.dirty = True
        self.app._tick()

    # ------------------------------------------------------------------ layout

    @property
    def narrow(self) -> bool:
        return self.has_class("narrow")

    def layout_for(self, width: int) -> None:
        narrow = width < NARROW_WIDTH
        self.set_class(narrow, "narrow")
        with contextlib.suppress(NoMatches):
            self.query_one(TabBar).set_hidden("charts", not narrow)
            if not narrow and self.query_one(TabBar).active == "charts":
                self.action_tab("log")
        self.painter.replot_all_soon()

    def action_tab(self, tab: str) -> None:
        if tab == "charts" and not self.narrow:
            return
        self._show_tab(tab)
        # Keys go to the pane's content (←/→ step a toggle, Enter opens a run), not to the tab bar.
        panes: dict[str, type[Widget]] = {
            "log": LogView,
            "tune": TuningPanel,
            "runs": RunsTable,
            "queue": SweepQueueView,
        }
        target = panes.get(tab)
        if target is not None:
            self.query_one(target).focus()

    def _show_tab(self, tab: str) -> None:
        self.query_one(TabBar).active = tab
        # In a narrow terminal only the Log tab shares the height with the phase panel: charts, toggles
        # and runs need the rows more (the header still names the current phase).
        self.set_class(tab != "log", "-full-pane")
        for name, pane in PANES.items():
            self.query_one(f"#{pane}").display = name == tab
        self.query_one("#tune-help").display = tab == "tune"
        if tab == "tune":
            from eagletui.ui.widgets.tuning import help_line

            self.query_one("#tune-help", Static).update(help_line(self.query_one(TuningPanel).current_toggle))
        if tab != "log":
            self.query_one("#search-input", Input).display = False  # it belongs to the log

    @on(TabBar.Clicked)
    def _tab_clicked(self, event: TabBar.Clicked) -> None:
        self.action_tab(event.tab)

    # ------------------------------------------------------------------ server control

    def _live(self) -> LiveDriver | None:
        """The live driver with a workspace, or None after telling the user why not."""
        d = self.driver
        if isinstance(d, LiveDriver) and d.can_launch and d.workspace is not None:
            return d
        self.app.notify(d.refusal(), severity="warning")
        return None

    def _control_free(self, d: LiveDriver) -> bool:
        """One launch/stop at a time, and never under a running benchmark: a cancelled launch would
        leave a server nobody tracks, and a relaunch would pull the server from under the benchmark."""
        if d.control_busy:
            self.app.notify("a launch or stop is already in progress", severity="warning")
            return False
        if d.benchmarking:
            self.app.notify("a benchmark is running: wait for it to finish", severity="warning")
            return False
        return True

    def _loading_question(self, doing: str) -> str | None:
        """A question when ``doing`` would throw away a launch still loading (a real one takes ~10
        minutes: one stray key must not cost that); None when nothing is in progress."""
        la = self.model.state.launch
        if la is None or la.status not in (ServerState.LAUNCHING, ServerState.LOADING):
            return None
        active = next((p for p in la.phases.values() if p.status == "active"), None)
        where = f" ({phase_label(active.name)})" if active is not None else ""
        return f"Launch #{self.model.state.current} is still loading{where}.\n{doing} anyway? (y/n)"

    def _guarded(self, d: LiveDriver, doing: str, then: Callable[[], None]) -> None:
        """Run ``then`` (a relaunch, stop or apply) now, or after a yes when it would throw work away:
        a launch still loading, or a running benchmark (cancelled first, then ``then`` runs)."""
        if d.control_busy:
            self.app.notify("a launch or stop is already in progress", severity="warning")
            return
        if d.benchmarking:
            bench = self.model.state.bench_running
            running = (
                f"Benchmark{f' #{bench}' if bench is not None else ''} is running.\n"
                f"Cancel it and {doing[:1].lower() + doing[1:]}? (y/n)"
            )

            def cancel_then(yes: bool | None) -> None:
                if yes:
                    self._after_benchmark(d, then)

            self.app.push_screen(ConfirmScreen(running), cancel_then)
            return
        question = self._loading_question(doing)
        if question is None:
            then()
            return

        def answer(yes: bool | None) -> None:
            if yes:
                then()

        self.app.push_screen(ConfirmScreen(question), answer)

    @work(exclusive=False, group="control", name="cancel benchmark", exit_on_error=False)
    async def _after_benchmark(self, d: LiveDriver, then: Callable[[], None]) -> None:
        """Cancel the benchmark, wait (≤ 15 s) until its run is closed, then go on."""
        task = d.bench_task
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(task), timeout=15)
        if d.benchmarking:
            self.app.notify("the benchmark did not stop: try again", severity="warning")
            return
        then()

    def action_relaunch(self) -> None:
        d = self._live()
        if d is not None:

            def relaunch() -> None:
                if self._control_free(d):
                    self._launch_worker(d, None, None)

            self._guarded(d, "Relaunch", relaunch)

    @work(exclusive=False, group="control", name="launch", exit_on_error=False)
    async def _launch_worker(self, d: LiveDriver, profile: Any, applied: dict[str, Any] | None) -> None:
        await d.launch(profile, self.model, self, applied)

    def action_stop(self) -> None:
        d = self._live()
        if d is not None:

            def stop() -> None:
                if self._control_free(d):
                    d.control_busy = True  # taken now: a second key press before the worker starts is refused
                    self._stop_worker(d)

            self._guarded(d, "Stop the server", stop)

    @work(exclusive=False, group="control", name="stop", exit_on_error=False)
    async def _stop_worker(self, d: LiveDriver) -> None:
        await d.stop(self)

    def action_bench(self) -> None:
        d = self._live()
        if d is None:
            return
        if d.control_busy:
            self.app.notify("a launch or stop is in progress", severity="warning")
        elif self.model.state.server_state != ServerState.READY:
            self.app.notify(bench_refusal(self.model.state.server_state), severity="warning")
        elif d.benchmarking:
            self.app.notify("a benchmark is already running", severity="warning")
        else:
            self._bench_worker(d)

    @work(exclusive=False, group="bench", name="benchmark", exit_on_error=False)
    async def _bench_worker(self, d: LiveDriver) -> None:
        await d.benchmark(self.model, self)

    def action_diff(self) -> None:
        staged = self.model.staged
        new = staged.preview()
        if new is None:
            self.app.notify("no profile", severity="warning")
            return
        diff = staged.diff()
        # the whole command, its environment first (env toggles are changes too); no key in clear
        command = command_line(new.argv(), new.env, Redactor.for_profile(new)) if diff else None
        self.app.push_screen(DiffScreen("pending changes (running → pending)", diff_text(diff, command)))

    def action_apply(self) -> None:
        d = self._live()
        if d is None:
            return
        staged = self.model.staged
        try:
            new = staged.apply()
        except NothingStaged:
            self.app.notify("nothing to apply: no pending changes", severity="warning")
            return
        from eagletui.core.profile.model import format_diff

        def apply() -> None:
            if not self._control_free(d):
                return
            self.app.notify(format_diff(staged.diff()), title="applying")
            # Staged changes are cleared only once the relaunch has started: a refused preflight keeps them.
            self._launch_worker(d, new, staged.pending)

        self._guarded(d, "Relaunch with the pending changes", apply)

    def action_pin_baseline(self) -> None:
        launch = self.query_one(RunsTable).selected_launch() or self.model.state.current
        try:
            self.model.runbook.check_pin(launch)  # refuses a run that cannot count, saying why
            # the fold pins it; recorded, so replays, exports and followers in the browser pin it too
            self.model.dispatch(BaselinePinned(launch=launch))
            self.app.notify(f"launch #{launch} is the baseline", title="baseline")
        except (KeyError, ValueError) as exc:  # no such run, or one whose results cannot count
            self.app.notify(inert(str(exc.args[0] if exc.args else exc)), severity="warning")
        self.painter.dirty = True

    def action_history(self) -> None:
        """Runs of earlier sessions on this target and model; the chosen one becomes the baseline."""
        from eagletui.config import default_sessions_dir
        from eagletui.ui.screens.history import HistoryScreen

        cfg = self.app.user_config
        directory = Path(getattr(cfg, "sessions_dir", "") or default_sessions_dir()).expanduser()
        book = self.model.runbook
        current = book.runs.get(self.query_one(RunsTable).selected_launch() or self.model.state.current)
        # the recording being written (or replayed) is this session, not an earlier one
        here = getattr(self.model.recorder, "path", None) or getattr(
            getattr(self.driver, "source", None), "path", None
        )

        def pin(chosen: Any) -> None:
            if chosen is None:
                return
            book.pin_external(chosen.run, chosen.ref)
            self.painter.dirty = True
            from eagletui.core.runs.compare import comparability

            why = comparability(current, chosen.run, gpu_b=chosen.gpu) if current is not None else []
            if why:
                self.app.notify(
                    inert(f"{chosen.ref} is the baseline — not like for like: " + "; ".join(why)),
                    title="baseline",
                    severity="warning",
                    timeout=15,
                )
            else:
                self.app.notify(inert(f"{chosen.ref} is the baseline"), title="baseline")

        screen = HistoryScreen(
            directory,
            target=str(self.model.state.target or ""),
            model=current.model if current is not None else "",
            exclude=Path(str(here)) if here else None,
            current=current,
        )
        self.app.push_screen(screen, pin)

    def action_profile_step(self) -> None:
        d = self._live()
        if d is None or not self._control_free(d):
            return
        if self.model.state.server_state != ServerState.READY:
            self.app.notify("the server is not ready yet", severity="warning")
            return
        self.app.notify("profiling a few decode steps (/start_profile) …", title="profile")
        self._profile_worker(d)

    @work(exclusive=True, group="profile", name="step profile", exit_on_error=False)
    async def _profile_worker(self, d: LiveDriver) -> None:
        try:
            ev = await d.workspace.profile_step()  # type: ignore[union-attr]  # _live() checked it
        except Exception as exc:
            ev = None
            self.app.notify(str(exc), title="profile failed", severity="error")
        if ev is not None and ev.error:
            self.app.notify(ev.error, title="profile failed", severity="error", timeout=15)
        elif ev is not None:
            body = step_bars(self.model.runbook, ev.launch)
            self.app.push_screen(TextScreen(f"step profile of run #{ev.launch}", body, "step-profile"))

    # ------------------------------------------------------------------ the log

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
        log.set_search(event.value)
        event.input.display = False
        log.focus()
        self.painter.dirty = True
        self.app.notify(
            f"{log.hit_label()} for {event.value!r}  (n / N: next / previous)"
            if event.value
            else "search cleared"
        )

    def search_cancel(self) -> None:
        box = self.query_one("#search-input", Input)
        if box.display:
            box.display = False
            self.query_one(LogView).focus()

    def action_search_next(self) -> None:
        self._step_hit(1)

    def action_search_prev(self) -> None:
        self._step_hit(-1)

    def _step_hit(self, step: int) -> None:
        log = self.query_one(LogView)
        log.next_hit(step)
        self.painter.dirty = True
        if log.search:
            self.app.notify(f"{log.hit_label()} for {log.search!r}", timeout=1.5)

    def action_copy_log(self) -> None:
        text = self.query_one(LogView).selected_text()
        if not text:
            self.app.notify("nothing to copy", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        n = text.count("\n") + 1
        self.app.notify(f"copied {n} line{'s' if n != 1 else ''} to the clipboard (OSC 52)")

    def action_follow(self) -> None:
        self.query_one(LogView).action_follow()
        self.painter.dirty = True

    def action_filter(self, which: str) -> None:
        log = self.query_one(LogView)
        # 0 ("all") shows every line: the rank filter goes too, or "all" would hide TP0's lines
        log.set_filter(FILTERS[which], None if which == "all" else log.filter_rank)
        self._show_tab("log")
        self._filter_shown(log)
        self.app.notify(f"log filter: {log.filter_label() or 'all'}", timeout=2)

    def _filter_shown(self, log: LogView) -> None:
        """The active filter stays in sight: on the Log tab's label and in the status line."""
        label = log.filter_label()
        self.query_one(TabBar).set_label("log", f"Log ⧩ {label}" if label else "Log")
        self.painter.dirty = True

    def action_rank_filter(self) -> None:
        log = self.query_one(LogView)
        ranks = sorted({r for row in log.rows for r in row[RANKS]})
        if not ranks:
            self.app.notify("no ranked lines yet")
            return
        order: list[int | None] = [*ranks, None]
        current = log.filter_rank
        nxt = order[(order.index(current) + 1) % len(order)] if current in order else order[0]
        log.set_filter(log.filter_kinds, nxt)
        self._filter_shown(log)
        self.app.notify(f"log rank filter: {'all' if nxt is None else f'TP{nxt}'}", timeout=2)

    @on(LogView.FollowChanged)
    def _follow_changed(self, event: LogView.FollowChanged) -> None:
        self.painter.dirty = True

    # ------------------------------------------------------------------ replay

    def action_replay_pause(self) -> None:
        source = getattr(self.driver, "source", None)
        if not self.driver.is_replay or source is None:
            return
        source.toggle_pause()
        self.app.notify("replay paused" if source.paused else "replay resumed")

    def action_replay_speed(self, factor: float) -> None:
        source = getattr(self.driver, "source", None)
        if not self.driver.is_replay or source is None:
            return
        speed = source.speed
        if speed == "instant":
            self.app.notify("replay speed: instant")
            return
        new = min(1000.0, max(0.125, float(speed) * factor))
        source.set_speed(new)
        self.app.notify(f"replay speed ×{new:g}")

    # ------------------------------------------------------------------ replay seeking

    def _mount_replay_seeking(self) -> None:
        """A seekable replay gets the timeline; a model reset (a seek) clears what the panes show."""
        self.model.on_reset(self._model_reset)
        d = self.driver
        if isinstance(d, ReplayDriver) and d.can_seek:
            self.mount(Timeline(d.source, id="timeline"), after=self.query_one(StatusHeader))

    def _model_reset(self) -> None:
        """The model starts over (a replay seek): the log empties and the charts and the runs table
        forget what they last drew, so the catch-up events refill them from scratch."""
        with contextlib.suppress(NoMatches):
            self.query_one(LogView).clear()
            for chart in self.query(MetricChart):
                chart._seen = ()
            self.query_one(RunsTable)._last = None
        self.painter.force_charts = True
        self.painter.dirty = True

    def _seekable(self) -> ReplayDriver:
        """The replay driver, or SkipAction: outside a replay (or in a text box) the key is the pane's.

        At ``instant`` speed a seek pauses the replay first: playing on from the target would race to
        the end again at once, and the key would seem to do nothing."""
        d = self.driver
        if not isinstance(d, ReplayDriver) or not d.can_seek or isinstance(self.app.focused, Input):
            raise SkipAction()
        src: Any = d.source
        if getattr(src, "speed", None) == "instant" and not src.paused:
            src.pause()
            self._paused_for_seek = True
        return d

    def _say_paused_for_seek(self) -> None:
        if getattr(self, "_paused_for_seek", False):
            self._paused_for_seek = False
            src: Any = getattr(self.driver, "source", None)
            where = clock(src.position) if src is not None else ""
            self.app.notify(f"paused at {where} to seek (instant speed): Space plays on", title="replay")

    def _replay_moved(self) -> None:
        with contextlib.suppress(NoMatches):
            self.query_one(Timeline).update_now()

    def action_replay_seek(self, seconds: float) -> None:
        d = self._seekable()
        d.seek_by(self.model, self, float(seconds))
        self._replay_moved()
        self._say_paused_for_seek()

    def action_replay_step(self, step: int) -> None:
        d = self._seekable()
        if not d.seek(self.model, self, step=int(step)):
            where = "later" if step > 0 else "earlier"
            self.app.notify(f"no {where} launch or config change", title="replay")
            return
        self._replay_moved()
        src: Any = d.source
        at = [m for m in src.marks if m.kind in d.STEP_KINDS and abs(m.t - src.position) < 1e-6]
        label = at[-1].label if at else "moved"
        self.app.notify(f"{label} at {clock(src.position)}", title="replay")
        self._say_paused_for_seek()

    def action_replay_to_end(self, end: int) -> None:
        d = self._seekable()
        src: Any = d.source
        d.seek(self.model, self, time=src.duration if end else 0.0)
        self._replay_moved()
        self._say_paused_for_seek()

    # ------------------------------------------------------------------ export

    def action_export(self) -> None:
        """The runs table as a Markdown report (secrets redacted, 0600) in the sessions dir."""
        from eagletui.config import default_sessions_dir, private_app_dir
        from eagletui.session.export import build_report, export_path, export_stem, write_private
        from eagletui.session.export_render import render

        cfg = self.app.user_config
        directory = Path(getattr(cfg, "sessions_dir", "") or default_sessions_dir()).expanduser()
        profile = self.model.profile
        header = {"target": self.model.state.target, "profile": getattr(profile, "name", None)}
        stem = export_stem(self.model, self.driver)
        try:
            private_app_dir(directory)
            report = build_report(self.model.report_events, header=header, title=f"eagletui session {stem}")
            path = write_private(export_path(directory, stem, "md"), render(report, "md"))
        except OSError as exc:
            self.app.notify(f"export failed: {exc}", title="export", severity="error")
            return
        n = len(report.records)
        self.app.notify(f"{n} run{'s' if n != 1 else ''} → {path}", title="exported", timeout=15)

    # ------------------------------------------------------------------ panes and modals

    def action_help(self) -> None:
        keymap = self.app.keymap_config()
        # the file the config was read from (a config built in code has none: plain "config.toml")
        path = getattr(self.app.user_config, "path", None) or ""
        self.app.push_screen(HelpScreen(actions.help_rows(keymap), inert(path)))

    @on(TuningPanel.Selected)
    def _toggle_selected(self, event: TuningPanel.Selected) -> None:
        from eagletui.ui.widgets.tuning import help_line

        self.query_one("#tune-help", Static).update(help_line(event.toggle))

    @on(TuningPanel.PendingChanged)
    def _pending_changed(self, event: TuningPanel.PendingChanged) -> None:
        n = len(event.pending)
        self.query_one(TabBar).set_label("tune", f"Tune ({n})" if n else "Tune")

    @on(RunsTable.RunSelected)
    def _run_selected(self, event: RunsTable.RunSelected) -> None:
        body = self.query_one(RunsTable).details(self.model.runbook, self.model.state, event.launch)
        self.app.push_screen(TextScreen(f"run #{event.launch}", body, "run-details"))


def bench_refusal(state: str) -> str:
    """Why ``b`` cannot benchmark now, with the key that gets there."""
    if state in (ServerState.STOPPED, ServerState.EXITED):
        return f"the server is {state}: press r to launch"
    if state == ServerState.FAILED:
        return "the server failed: press r to relaunch"
    if state == ServerState.IDLE:
        return "no server running: press r to launch"
    return "the server is not ready yet"


class SearchInput(Input):
    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]
    DEFAULT_CSS = "SearchInput { display: none; dock: bottom; }"

    def action_cancel(self) -> None:
        screen = self.screen
        if isinstance(screen, MainScreen):
            screen.search_cancel()
