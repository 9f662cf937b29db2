"""Ending a helper task without losing our own cancellation.

A headless command stops on SIGTERM, SIGHUP or Ctrl-C by cancelling its main task
(:mod:`eagletui.commands._signals`), and the UI stops a benchmark the same way: that works only if every
``await`` on the way lets the ``CancelledError`` through. Two idioms did not:

* ``task.cancel(); with suppress(CancelledError): await task``: a cancellation of the *caller* that
  lands while it waits is forwarded into ``task`` and comes back as ``task``'s own ``CancelledError``,
  which the ``suppress`` then drops (a loaded CI rehearsal benchmarked 45 repeats on after
  "SIGTERM: stopping"). A helper that ignores its cancel loses the caller's with it.
* Python 3.11's ``asyncio.wait_for``: a cancellation that lands as the awaited thing completes is
  dropped and the result returned (gh-86296, fixed in 3.12 only). ``asyncio.timeout`` counts
  cancellations (``Task.cancelling``) and tells its own from the caller's.

:func:`cancel_and_wait` is the first idiom done right. In place of ``wait_for`` the engine uses
``async with asyncio.timeout(seconds)``, or ``asyncio.wait({task}, timeout=seconds)`` to wait for a
task without taking on its outcome. ``tests/test_house_rules.py`` looks for both idioms.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Future[Any], errors: bool = True) -> None:
    """Cancel ``tasks`` and wait until each has ended. A cancellation of the caller meanwhile is raised
    (``asyncio.wait`` does not forward it into the tasks, so it cannot come back as theirs); the
    first exception a task ended with (other than its cancellation) is raised when ``errors``, else
    retrieved and dropped (the caller had said it does not care)."""
    live = [t for t in tasks if not t.done()]
    for t in live:
        t.cancel()
    if live:
        await asyncio.wait(live)
    first: BaseException | None = None
    for t in tasks:
        if not t.cancelled() and (exc := t.exception()) is not None and first is None:
            first = exc
    if first is not None and errors:
        raise first
