"""``n``: stage the launch the one ranking puts first, show it with its prediction, band and the diff, and
on ``a`` apply it and benchmark it once it serves (:class:`AutopilotControl`, mixed into the main screen).

While a log search is active ``n`` keeps its old meaning (the next hit, like ``less``). What to stage is
:func:`eagletui.core.predict.autopilot.propose`'s; after the benchmark the run details list predicted
vs measured (``prediction_check``) and the ranking is recomputed from the new run, with a miss beyond
its band widening the next band of its kind (:func:`eagletui.core.predict.checks.track_record`: the one
place ``n`` and ``eagletui tune`` read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.screen import Screen

from eagletui.core.events import Event, ServerFailed, ServerReady
from eagletui.core.predict.autopilot import propose
from eagletui.core.profile.redact import Redactor
from eagletui.ui.screens.modals import DiffScreen, diff_text
from eagletui.ui.widgets.runs import command_line

if TYPE_CHECKING:
    from eagletui.session.model import SessionModel


class NextLaunchScreen(DiffScreen):
    """The staged next launch: ``a`` applies it (and benchmarks it once ready), Escape keeps it staged."""

    BINDINGS = [Binding("a", "apply", "Apply")]

    def action_apply(self) -> None:
        self.dismiss(True)


class AutopilotControl(Screen):
    """Mixed into :class:`~eagletui.ui.screens.main.MainScreen` (its ``model``, ``action_apply`` and
    ``action_bench``)."""

    model: SessionModel
    _bench_when_ready = False
    _autopilot_unsub: object = None

    def action_next_launch(self) -> None:
        from eagletui.ui.widgets.logview import LogView

        log = self.query_one(LogView)
        if log.search:
            self.action_search_next()  # type: ignore[attr-defined]  # the main screen's
            return
        p = propose(self.model.runbook, self.model.state.current)
        if not p.flags:
            self.app.notify(p.text(), title="next launch: none", timeout=12)
            return
        staged = self.model.staged
        replaced = bool(staged.pending)
        staged.discard()
        for flag, value in p.flags.items():
            refused = staged.stage(f"arg:{flag}", value)
            if refused is not None:
                staged.discard()
                self.app.notify(f"cannot stage {p.label}: {refused}", title="next launch", severity="warning")
                return
        self.config_changed()  # type: ignore[attr-defined]  # the Tune tab shows what is staged
        new = staged.preview()
        diff = staged.diff()
        command = command_line(new.argv(), new.env, Redactor.for_profile(new)) if diff and new else None
        body = Text(p.text() + "\n", style="bold")
        if replaced:
            body.append("(the changes staged before were replaced)\n", style="dim")
        body.append("\n")
        body.append_text(
            diff_text(diff, command, "a applies (preflight, stop, relaunch) and benchmarks it once ready")
        )
        self.app.push_screen(NextLaunchScreen("next launch (n): running → staged", body), self._next_answer)

    def _next_answer(self, apply: bool | None) -> None:
        if not apply:
            return
        self._watch_ready()
        self._bench_when_ready = True
        self.action_apply()  # type: ignore[attr-defined]  # ServerControl's: preflight, stop, relaunch

    def _watch_ready(self) -> None:
        if self._autopilot_unsub is None:
            self._autopilot_unsub = self.model.subscribe(self._on_autopilot_event)

    def _on_autopilot_event(self, ev: Event) -> None:
        """Benchmark the launch ``n`` applied once it serves (its prediction is then checked)."""
        if not self._bench_when_ready:
            return
        if isinstance(ev, ServerFailed):
            self._bench_when_ready = False
        elif isinstance(ev, ServerReady):
            self._bench_when_ready = False
            self.app.call_later(self.action_bench)  # type: ignore[attr-defined]
