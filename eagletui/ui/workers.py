"""The one route for a Textual worker's failure (Harlequin's model: one ``Worker.StateChanged``
handler). Textual posts ``Worker.StateChanged`` to the node that started the worker and it does not
bubble, so every node that starts workers (the app, the main screen, the queue pane, the history
screen) mixes in :class:`WorkerFailures`: the handler is written once, here.

Every worker is named and runs with ``exit_on_error=False`` (one failure must not end the app); when
one ends in ``ERROR`` its exception becomes a :class:`~eagletui.core.events.TaskFailed` in the session
model: recorded, toasted by the announcer, and named in the status line ("⚠ stopped: driver").
"""

from __future__ import annotations

from typing import Any

from textual.worker import Worker, WorkerState


class WorkerFailures:
    """Mix into a Textual node (App, Screen, Widget) that starts workers."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # by name, not @on: Textual collects @on handlers only from message-pump classes themselves
        worker = event.worker
        if event.state != WorkerState.ERROR or worker.error is None:
            return
        report_worker_failure(getattr(self, "app", self), worker)


def report_worker_failure(app: Any, worker: Worker[Any]) -> None:
    from eagletui.core.events import TaskFailed
    from eagletui.remote.tasks import failure_text

    model = getattr(app, "model", None)
    name = worker.name or worker.group or "background task"
    message = failure_text(worker.error) if worker.error is not None else "failed"
    if model is None:  # not the eagletui app (a test harness): still never silent
        app.notify(message, title=f"{name} stopped", severity="error", timeout=30)
        return
    model.dispatch(TaskFailed(task=name, message=message, launch=model.state.current or 0))
