"""The main screen's replay keys (:class:`ReplayControl`): pause, speed, and seeking a seekable replay
(by seconds, to the next or previous launch or config change, to either end), with the timeline under
the status line and the panes cleared when the model starts over at a seek.

Apart from :mod:`eagletui.ui.screens.main` because they only apply to a replay's driver and its
source; the screen mixes them in and keeps the bindings.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, cast

from textual.actions import SkipAction
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Input

from eagletui.session.drivers import ReplayDriver
from eagletui.ui.widgets.charts import MetricChart
from eagletui.ui.widgets.logview import LogView
from eagletui.ui.widgets.runs import RunsTable
from eagletui.ui.widgets.status import StatusHeader
from eagletui.ui.widgets.timeline import Timeline, clock

if TYPE_CHECKING:
    from eagletui.session.drivers import Driver, DriverHost
    from eagletui.session.model import SessionModel
    from eagletui.ui.repaint import Repainter


class ReplayControl(Screen):
    """Mixed into :class:`~eagletui.ui.screens.main.MainScreen`, which sets ``model``, ``driver`` and
    ``painter``."""

    model: SessionModel
    driver: Driver
    painter: Repainter

    @property
    def _as_host(self) -> DriverHost:
        """This screen as the driver's host: the main screen, which mixes this in, is one (its
        ``dispatch``, ``notify``, ``ask``, ``config_changed`` and ``settled``)."""
        return cast("DriverHost", self)

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
        d.seek_by(self.model, self._as_host, float(seconds))
        self._replay_moved()
        self._say_paused_for_seek()

    def action_replay_step(self, step: int) -> None:
        d = self._seekable()
        if not d.seek(self.model, self._as_host, step=int(step)):
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
        d.seek(self.model, self._as_host, time=src.duration if end else 0.0)
        self._replay_moved()
        self._say_paused_for_seek()
