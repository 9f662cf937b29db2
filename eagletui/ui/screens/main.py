"""The tuning workspace: one screen, keyboard-driven, over one session model.

The screen owns the layout, the panes and the actions on the session (relaunch, stop, bench, apply,
diff, baseline, search, filters, tabs). It never interprets log text or HTTP: the driver feeds the
:class:`~eagletui.session.model.SessionModel`, the model tells the screen what happened
(:meth:`Repainter.on_event`) and a 10 Hz tick paints what changed (:mod:`eagletui.ui.repaint`).
It is also the driver's :class:`~eagletui.session.drivers.DriverHost`: events, messages and yes/no
questions from the driver come through :meth:`dispatch`, :meth:`notify` and :meth:`ask`.

The actions on the server (relaunch, stop, bench, apply, diff, step profile) are mixed in from
:class:`~eagletui.ui.screens.server_control.ServerControl`, the replay keys from
:class:`~eagletui.ui.screens.replay_control.ReplayControl`; the bindings stay here.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical
from textual.css.query import NoMatches
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Static

from eagletui.core.events import BaselinePinned, Event
from eagletui.core.textsafe import inert
from eagletui.session.sweep.kept_runs import SweepBook
from eagletui.ui import actions
from eagletui.ui.repaint import Repainter
from eagletui.ui.screens.autopilot import AutopilotControl
from eagletui.ui.screens.modals import ConfirmScreen, HelpScreen, TextScreen
from eagletui.ui.screens.replay_control import ReplayControl
from eagletui.ui.screens.server_control import ServerControl
from eagletui.ui.widgets.charts import tab_charts, tab_grid_rows, wide_charts, wide_grid_rows
from eagletui.ui.widgets.keybar import KeyBar
from eagletui.ui.widgets.logview import FILTER_NAMES, RANKS, LogView
from eagletui.ui.widgets.phases import PhasePanel
from eagletui.ui.widgets.queue import SweepQueueView
from eagletui.ui.widgets.runs import RunsTable
from eagletui.ui.widgets.status import GpuStrip, StatusHeader
from eagletui.ui.widgets.tabbar import TabBar
from eagletui.ui.widgets.tuning import TuningPanel
from eagletui.ui.workers import WorkerFailures

if TYPE_CHECKING:
    from eagletui.session.drivers import Driver
    from eagletui.session.model import SessionModel
    from eagletui.ui.app import EagleApp

NARROW_WIDTH = 140
TABS = [("log", "Log"), ("charts", "Charts"), ("tune", "Tune"), ("runs", "Runs"), ("queue", "Queue")]
PANES = {"log": "logview", "charts": "charts", "tune": "tuning", "runs": "runs-table", "queue": "sweep-queue"}
FILTERS = FILTER_NAMES


class MainScreen(WorkerFailures, AutopilotControl, ServerControl, ReplayControl, Screen):
    BINDINGS: ClassVar[list[BindingType]] = [
        *actions.bindings(),
        # the README's "ctrl+c copies" (Textual binds ctrl+c to a "press ctrl+q to quit" hint)
        Binding("ctrl+c", "copy_log", "Copy", show=False),
    ]
    app: EagleApp
    #: Textual repaints the whole screen when the focus moves; the widgets whose look depends on the focus
    #: are restyled (and so repainted) on their own, so that repaint only composed every widget again: a
    #: second full frame after each tab switch or search line (~7 ms of a tab key's ~60, 2-core machine).
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    def __init__(self, model: SessionModel, driver: Driver, *, scrollback: int = 100_000) -> None:
        super().__init__(id="_default")
        self.model = model
        self.driver = driver
        self.scrollback = scrollback
        self.painter = Repainter(self)
        self._sweep_book = SweepBook()  # the frontiers' book: read again only when the sweep's runs change
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
        panel = self.query_one(TuningPanel)
        panel.refresh_rows()
        self._tune_footer(panel.current_toggle)

    def _tune_footer(self, toggle: Any) -> None:
        """The Tune tab's footer: the profile file's difference after a reattach, the toggle's help."""
        from eagletui.ui.widgets.tuning import tune_footer

        self.query_one("#tune-help", Static).update(tune_footer(self.model.staged, toggle))

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
            self.set_class(narrow and self.query_one(TabBar).active != "log", "-full-pane")
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
        # Only a narrow screen has a use for the class: a class on the screen restyles every widget
        # under it (~35 ms a tab key under a log burst), so a wide one never changes it.
        self.set_class(self.narrow and tab != "log", "-full-pane")
        for name, pane in PANES.items():
            self.query_one(f"#{pane}").display = name == tab
        self.query_one("#tune-help").display = tab == "tune"
        if tab == "tune":
            self._tune_footer(self.query_one(TuningPanel).current_toggle)
        if tab != "log":
            self.query_one("#search-input", Input).display = False  # it belongs to the log

    @on(TabBar.Clicked)
    def _tab_clicked(self, event: TabBar.Clicked) -> None:
        self.action_tab(event.tab)

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

    def frontier_book(self) -> Any:
        """The run book every frontier on this screen folds (``v`` and the charts column's chart): with a
        sweep queue that counted runs (a resumed one: earlier sessions' too) those, the runs its decisions
        rank, as ``sweep``'s report does (``kept_runs.SweepBook``); else the session's run book (a
        replay's seek replaces it: asked each time)."""
        got, problems = self._sweep_book.book(
            self.query_one(SweepQueueView).queue, self.model.profile, self.model.runbook
        )
        for problem in problems:  # a damaged or missing file of kept runs: said, never silent
            self.app.notify(inert(f"frontier: {problem}"), severity="warning")
        return got

    def action_frontier(self) -> None:
        """The frontier view, following :meth:`frontier_book`."""
        from eagletui.ui.screens.frontier import FrontierScreen

        self.app.push_screen(FrontierScreen(self.frontier_book))

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
        log = self.query_one(LogView)
        text = log.selected_text()
        if not text:
            # ctrl+c quits in most terminal programs: say what it does here, and how to quit. A log that
            # has lines but is off screen (the Charts or Runs tab of a narrow terminal) is not empty.
            why = "the log is not on this tab: 1 shows it" if log.view_rows else "nothing to copy: the log is empty"
            self.app.notify(f"{why}. ctrl+c copies log lines here; q quits", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        n = text.count("\n") + 1
        self.app.notify(f"copied {n} line{'s' if n != 1 else ''} to the clipboard (OSC 52); q quits")

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
        self._tune_footer(event.toggle)

    @on(TuningPanel.PendingChanged)
    def _pending_changed(self, event: TuningPanel.PendingChanged) -> None:
        n = len(event.pending)
        self.query_one(TabBar).set_label("tune", f"Tune ({n})" if n else "Tune")

    @on(RunsTable.RunSelected)
    def _run_selected(self, event: RunsTable.RunSelected) -> None:
        body = self.query_one(RunsTable).details(self.model.runbook, self.model.state, event.launch)
        self.app.push_screen(TextScreen(f"run #{event.launch}", body, "run-details"))


class SearchInput(Input):
    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]
    DEFAULT_CSS = "SearchInput { display: none; dock: bottom; }"

    def action_cancel(self) -> None:
        screen = self.screen
        if isinstance(screen, MainScreen):
            screen.search_cancel()
