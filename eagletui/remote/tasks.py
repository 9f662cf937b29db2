"""One route for the failure of a background asyncio task (the live source's log tail and process
watch, the workspace's GPU poll and log pump): a named task whose unexpected exception becomes a
:class:`~eagletui.core.events.TaskFailed` event, which is recorded, toasted and shown in the status
line like every other event. A task that was cancelled (stopped on purpose) reports nothing.

The UI's Textual workers take the same route through the app's one ``Worker.StateChanged`` handler.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from eagletui.core.events import TaskFailed


def failure_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def start(
    coro: Coroutine[Any, Any, Any],
    name: str,
    report: Callable[[TaskFailed], None],
    *,
    launch: int = 0,
) -> asyncio.Task[Any]:
    """``asyncio.create_task(coro, name=name)`` whose failure is ``report``-ed as a ``TaskFailed``."""
    task = asyncio.create_task(coro, name=name)

    def done(t: asyncio.Task[Any]) -> None:
        if t.cancelled():
            return
        exc = t.exception()
        if exc is not None:
            report(TaskFailed(task=name, message=failure_text(exc), launch=launch))

    task.add_done_callback(done)
    return task
