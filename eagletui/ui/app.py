"""The Textual application: themes, keymap, notifications, quit, and the 10 Hz repaint tick.

Everything about *the session* lives elsewhere: the :class:`~eagletui.session.model.SessionModel` folds
events (state, runs, recording, phase history, staged config); a driver
(:mod:`eagletui.session.drivers`: live, demo or replay) feeds it; the
:class:`~eagletui.ui.screens.main.MainScreen` lays the panes out and holds the actions. The app
subscribes to the model only to turn milestones (ready, failed, benchmark done, warnings) and the
model's problems (recording stopped, ...) into toasts, bells and desktop notifications.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, work
from textual.app import App, SystemCommand
from textual.css.query import NoMatches
from textual.notifications import Notify
from textual.screen import Screen

from eagletui.core.events import Event
from eagletui.core.timings import Timings
from eagletui.session.drivers import Driver, LiveDriver, ReplayDriver, make_driver
from eagletui.session.model import SessionModel
from eagletui.ui import keypath, scrollbars, textual_patches
from eagletui.ui.actions import EagleCommands
from eagletui.ui.gcpolicy import IdleCollector
from eagletui.ui.notify import MAX_TOASTS, TOAST_TIMEOUT, Announcer
from eagletui.ui.restyle import StylesheetSpeedups
from eagletui.ui.screens.main import MainScreen
from eagletui.ui.screens.modals import ConfirmScreen
from eagletui.ui.widgets.charts import MetricChart
from eagletui.ui.widgets.logview import LogView
from eagletui.ui.widgets.phases import fmt_secs
from eagletui.ui.workers import WorkerFailures

if TYPE_CHECKING:
    from eagletui.config import UserConfig
    from eagletui.core.profile.model import Profile
    from eagletui.session.model import EventWriter, PhaseHistoryStore

CSS_PATH = Path(__file__).with_name("app.tcss")


class EagleApp(WorkerFailures, App):
    CSS_PATH = CSS_PATH
    TITLE = "eagletui"
    COMMANDS = App.COMMANDS | {EagleCommands}

    def __init__(
        self,
        *,
        profile: Profile | None,
        target: str,
        mode: str = "live",  # live | demo | replay: shorthand for ``driver``
        driver: Driver | None = None,
        workspace_factory: Any = None,
        replay: Any = None,
        recorder: EventWriter | None = None,
        user_config: UserConfig | None = None,
        theme_name: str | None = None,
        autolaunch: bool = True,
        history: PhaseHistoryStore | None = None,
        clock: Callable[[], float] | None = None,
        timings: Timings | None = None,
    ) -> None:
        super().__init__()
        #: the command's timings (``EAGLETUI_TIMINGS`` when the app is built without one): the waits of
        #: the session around the screen (a benchmark's cancel, a forced quit)
        self.timings = timings or Timings.from_env()
        self.profile = profile
        self.target = target
        self.driver = driver or make_driver(
            mode, workspace_factory=workspace_factory, replay=replay, autolaunch=autolaunch
        )
        self.user_config = user_config
        self.clock = clock or time.time
        self.model = SessionModel(
            target=target,
            profile=profile,
            recorder=recorder,
            history=history,
            learn_history=self.driver.learns_history,
        )
        self.announcer = Announcer(self)
        self.model.subscribe(self.announcer.on_event)
        self.model.on_problem(self.announcer.on_problem)
        self._theme_names: list[str] = []
        # Textual internals and the GC policy: one switch, tested Textual versions only.
        self._css_speedups = StylesheetSpeedups() if textual_patches.enabled() else None
        if textual_patches.enabled():
            scrollbars.install()
        self.collector = IdleCollector(active=textual_patches.enabled())
        self._events_at_tick = 0  # the model's event count at the last tick (see _tick)
        self._themes_to_warm: list[str] = []  # themes whose rules are parsed ahead when idle (see _tick)
        self._warm_sources = -1  # how many CSS sources there were when they were queued
        self._direct_keys = textual_patches.enabled()
        self._requested_theme = theme_name
        self._quitting = False
        keymap = self.keymap_config()
        if keymap:
            self.set_keymap(dict(keymap))

    # ------------------------------------------------------------------ the session, for callers

    @property
    def main(self) -> MainScreen:
        screen = self.default_screen
        assert isinstance(screen, MainScreen)
        return screen

    state = property(lambda self: self.model.state)
    runbook = property(lambda self: self.model.runbook)
    recorder = property(lambda self: self.model.recorder)
    history = property(lambda self: self.model.history)
    events_seen = property(lambda self: self.model.events_seen)
    workspace = property(lambda self: self.driver.workspace)
    replay = property(lambda self: getattr(self.driver, "source", None))
    replay_done = property(lambda self: self.driver.done if isinstance(self.driver, ReplayDriver) else None)

    @property
    def workspace_factory(self) -> Any:
        return getattr(self.driver, "workspace_factory", None)

    @workspace_factory.setter
    def workspace_factory(self, factory: Any) -> None:
        if isinstance(self.driver, LiveDriver):
            self.driver.workspace_factory = factory

    def dispatch(self, ev: Event) -> None:
        """The single entry for events from any source (live, bench, replay)."""
        self.model.dispatch(ev)

    def now(self) -> float:
        return self.driver.now(self.model, self.clock)

    def repaint_now(self) -> None:
        self.main.repaint_now()

    def _estimates(self) -> dict[str, tuple[float, float]]:
        return self.model.estimates()

    def keymap_config(self) -> dict[str, str]:
        return dict(getattr(self.user_config, "keymap", None) or {})

    # ------------------------------------------------------------------ setup

    def get_default_screen(self) -> MainScreen:
        scrollback = int(getattr(self.user_config, "scrollback", 100_000) or 100_000)
        return MainScreen(self.model, self.driver, scrollback=scrollback)

    def notify(
        self, message: str, *, title: str = "", severity="information", timeout=None, markup: bool = False
    ) -> None:
        """Toasts carry log text, paths and exception messages: never interpret them as markup, and
        never let a control sequence in them reach the terminal (core.textsafe.inert)."""
        from eagletui.core.textsafe import inert_lines

        default = TOAST_TIMEOUT.get(severity, 4.0)
        # information is glanced at: never longer than 4 s, whatever the caller asked
        timeout = min(4.0, timeout or default) if severity == "information" else (timeout or default)
        super().notify(
            inert_lines(message), title=inert_lines(title), severity=severity, timeout=timeout, markup=markup
        )

    def _on_notify(self, event: Notify) -> None:
        """At most :data:`MAX_TOASTS` on screen: a new toast pushes the oldest out."""
        self._notifications.add(event.notification)
        shown = list(self._notifications)
        for old in shown[: max(0, len(shown) - MAX_TOASTS)]:
            del self._notifications[old]
        self._refresh_notifications()

    def get_theme_variable_defaults(self) -> dict[str, str]:
        from eagletui.ui.themes import APP_VARIABLE_DEFAULTS

        return dict(APP_VARIABLE_DEFAULTS)

    def on_mount(self) -> None:
        self._load_themes()
        self.set_interval(0.1, self._tick)
        self.call_after_refresh(self.collector.start)

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

    def on_resize(self, event: events.Resize) -> None:
        # the main screen, not app.screen: a resize while Help is open must still re-lay it out
        self.main.layout_for(event.size.width)

    def action_cycle_theme(self) -> None:
        names = [n for n in self._theme_names if n in self.available_themes] or ["textual-dark"]
        idx = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(idx + 1) % len(names)]
        saved = self.save_theme(self.theme)
        self.notify(f"theme: {self.theme}" + (f" (saved to {saved})" if saved else ""))

    def save_theme(self, name: str) -> str | None:
        """Remember the theme in the user's config file (the one it was read from); a config built in
        code (tests) has no file and nothing is written. Returns the path written, if any."""
        from eagletui.config import ConfigWriteError, save_theme

        path = getattr(self.user_config, "path", None)
        if not path:
            return None
        try:
            written = str(save_theme(name, path))
        except ConfigWriteError as exc:
            self.notify(str(exc), title="theme not saved", severity="warning")
            return None
        if self.user_config is not None:
            self.user_config.theme = name
        return written

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Textual's palette commands without its Theme picker (``t`` and our palette entry cycle the
        themes and save the choice; two theme switches that disagree confuse) nor its Quit."""
        for command in super().get_system_commands(screen):
            # Textual's Quit exits at once: ours (in the palette as "Quit") closes the driver first
            if command.title.lower() not in ("theme", "change theme", "quit"):
                yield command

    def refresh_css(self, animate: bool = True) -> None:
        """Textual's restyle, with refreshes coalesced and parsed themes reused (see ``restyle``), then
        the colours the app paints itself. Those are read here, not in ``watch_theme``: the theme's
        variables are only computed during the restyle, so reading them earlier got the old theme's."""
        if self._css_speedups is None:
            super().refresh_css(animate)
        else:
            with self._css_speedups.applied(self.stylesheet):
                super().refresh_css(animate)
        with contextlib.suppress(NoMatches):
            self.main.query_one(LogView).refresh_styles()
            for chart in self.main.query(MetricChart):
                chart.mark_stale()  # replot in the new colours on its next turn
            self.main.painter.replot_all_soon()

    # ------------------------------------------------------------------ the tick

    def _tick(self) -> None:
        seen = self.model.events_seen
        if seen != self._events_at_tick:  # a log burst: no full collection while it keeps the loop busy
            self._events_at_tick = seen
            self.collector.input_seen()
        elif self._css_speedups is not None:  # no log burst: parse a theme ahead if one is due
            self._warm_themes()
        if not self._quitting:
            self.main.repaint()
        self.collector.tick()

    def _warm_themes(self) -> None:
        """Parse the themes' rules ahead, one per tick without session events (~30 ms each, three
        ticks), so ``t`` skips the parser. The rules depend on every CSS source, and a widget class adds
        its own the first time one is mounted (the first toast, the first dialog): then what was parsed
        ahead is stale and the themes are parsed again, once per new source set."""
        sources = len(self.stylesheet.source)
        if sources != self._warm_sources:
            self._warm_sources = sources
            self._themes_to_warm = list(self._theme_names)  # (the current one is parsed already: skipped)
        if self._themes_to_warm:
            self._warm_theme(self._themes_to_warm.pop())

    def _warm_theme(self, name: str) -> None:
        theme = self.get_theme(name)
        if theme is None or self._css_speedups is None:
            return
        # what App.get_css_variables() gives once the theme is current
        variables = {**theme.to_color_system().generate(), **theme.variables}
        self._css_speedups.warm(self.stylesheet, {**self.get_theme_variable_defaults(), **variables})

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollUp, events.MouseScrollDown)):
            self.collector.input_seen()
        if (
            self._direct_keys
            and isinstance(event, events.Key)
            and not event.is_forwarded
            and keypath.direct_path(self, event)
        ):
            await keypath.deliver(self, event)  # no hop per widget under a burst (see keypath)
            return
        await super().on_event(event)

    def on_unmount(self) -> None:
        self.collector.stop()

    # ------------------------------------------------------------------ host keys

    async def ask_host_key(self, host: str, fingerprint: str) -> bool:
        """Unknown host key: show the fingerprint and let the user decide (called from the live worker)."""
        question = (
            f"Unknown host {host}\nkey fingerprint {fingerprint}\nTrust it and add to known_hosts? (y/n)"
        )
        return bool(await self.push_screen_wait(ConfirmScreen(question)))

    # ------------------------------------------------------------------ quit

    def action_quit_app(self) -> None:
        driver = self.driver
        if isinstance(driver, LiveDriver) and driver.benchmarking:

            def answer(yes: bool | None) -> None:
                if yes:
                    self._quit_worker()

            self.push_screen(ConfirmScreen("A benchmark is running. Quit anyway? (y/n)"), answer)
            return
        self._quit_worker()

    async def action_quit(self) -> None:
        """ctrl+q (Textual's own quit binding) takes the same path as q: the driver is closed (the demo
        server stopped, the transport and its child processes let go) before the event loop ends."""
        self.action_quit_app()

    def action_help_quit(self) -> None:
        """ctrl+c copies on the main screen; elsewhere Textual's hint, in plain text (our notify shows
        no markup, so Textual's own "[b]ctrl+q[/b]" would reach the user raw)."""
        for key, active in self.active_bindings.items():
            if active.binding.action in ("quit", "app.quit", "app.quit_app"):
                self.notify(f"Press {key} to quit the app", title="Do you want to quit?", timeout=3)
                return

    def quit_now(self) -> None:
        """Quit without asking (SIGTERM/SIGHUP/SIGINT, see commands._ui.run_app): the path q takes."""
        self._quit_worker()

    @work(exclusive=True, group="quit", name="quit", exit_on_error=False)
    async def _quit_worker(self) -> None:
        if self._quitting:
            return
        self._quitting = True
        if self.driver.stops_server_on_quit and self.driver.workspace is not None:
            self.notify("stopping the demo server…")
        await self.driver.close()
        self.model.close()
        self.exit()


__all__ = ["EagleApp", "fmt_secs"]
