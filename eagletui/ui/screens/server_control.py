"""The main screen's actions on the server (:class:`ServerControl`): relaunch, stop, benchmark, apply
the staged changes, show their diff and profile a few decode steps, each through the live driver and
its workspace, guarded so that one stray key never throws away a loading launch or a running benchmark.

Apart from :mod:`eagletui.ui.screens.main` (the layout, the panes, the log and the modals) because
these are the keys that change what runs on the host; the screen mixes them in and keeps the bindings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from textual import work
from textual.screen import Screen

from eagletui.core.profile.redact import Redactor
from eagletui.core.profile.staged import NothingStaged
from eagletui.core.state.launch import ServerState
from eagletui.session.drivers import LiveDriver
from eagletui.ui.screens.modals import ConfirmScreen, DiffScreen, TextScreen, diff_text
from eagletui.ui.widgets.runs import command_line
from eagletui.ui.widgets.stepbars import step_bars
from eagletui.ui.words import phase_label

if TYPE_CHECKING:
    from eagletui.session.drivers import Driver, DriverHost
    from eagletui.session.model import SessionModel
    from eagletui.ui.app import EagleApp


class ServerControl(Screen):
    """Mixed into :class:`~eagletui.ui.screens.main.MainScreen`, which sets ``model`` and ``driver``."""

    app: EagleApp

    model: SessionModel
    driver: Driver

    @property
    def _as_host(self) -> DriverHost:
        """This screen as the driver's host: the main screen, which mixes this in, is one (its
        ``dispatch``, ``notify``, ``ask``, ``config_changed`` and ``settled``)."""
        return cast("DriverHost", self)

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
        """Cancel the benchmark, wait (at most the timings' ``session.cancel_s``) until its run is
        closed, then go on."""
        task = d.bench_task
        if task is not None:
            task.cancel()
            # its outcome is the driver's to report; asyncio.wait raises only a cancellation of this
            # worker (the app quitting), which must not go on to ``then`` (a relaunch, a stop)
            await asyncio.wait({task}, timeout=self.app.timings.session.cancel_s)
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
        await d.launch(profile, self.model, self._as_host, applied)

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
        await d.stop(self._as_host)

    def _bench_ready(self) -> LiveDriver | None:
        """The live driver when a benchmark may start now, else None after saying why not."""
        d = self._live()
        if d is None:
            return None
        if d.control_busy:
            self.app.notify("a launch or stop is in progress", severity="warning")
        elif self.model.state.server_state != ServerState.READY:
            self.app.notify(bench_refusal(self.model.state.server_state), severity="warning")
        elif d.benchmarking:
            self.app.notify("a benchmark is already running", severity="warning")
        else:
            return d
        return None

    def action_bench(self) -> None:
        d = self._bench_ready()
        if d is not None:
            self._bench_worker(d)

    @work(exclusive=False, group="bench", name="benchmark", exit_on_error=False)
    async def _bench_worker(self, d: LiveDriver) -> None:
        await d.benchmark(self.model, self._as_host)

    def action_decide(self) -> None:
        """``D``: repeat the no-spec benchmark until the vs-no-spec comparison leaves its noise, within
        the stated time limit (the loop ``bench --vs-no-spec --decide-within`` runs)."""
        from eagletui.session.decide import spec_launch_for

        d = self._bench_ready()
        if d is None:
            return
        base = self.model.state.current
        spec = spec_launch_for(self.model.runbook, base) if base else None
        if spec is None:
            self.app.notify(
                "nothing to decide: D repeats the no-spec server's benchmark while a spec launch's comparison "
                "with it is within noise and more runs could tell (benchmark a spec launch, then launch "
                "without speculation and benchmark it)",
                severity="warning",
            )
            return
        limit = d.workspace.timings.sweep.decide_s if d.workspace is not None else 0.0
        self.app.notify(
            f"repeating the no-spec benchmark until #{spec}'s comparison leaves its noise (at most {limit:.0f} s)",
            title="repeat until decided",
        )
        self._decide_worker(d, spec)

    @work(exclusive=False, group="bench", name="repeat until decided", exit_on_error=False)
    async def _decide_worker(self, d: LiveDriver, spec: int) -> None:
        await d.decide(self.model, self._as_host, spec)

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


def bench_refusal(state: str) -> str:
    """Why ``b`` cannot benchmark now, with the key that gets there."""
    if state in (ServerState.STOPPED, ServerState.EXITED):
        return f"the server is {state}: press r to launch"
    if state == ServerState.FAILED:
        return "the server failed: press r to relaunch"
    if state == ServerState.IDLE:
        return "no server running: press r to launch"
    return "the server is not ready yet"
