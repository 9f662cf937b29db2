"""What a sweep's GPU gate waits for: the reading from right before the last launch, kept in the queue.

The gate between two launches (:func:`eagletui.remote.gpu.wait_released`) waits until every GPU is back
to where it was before the previous launch. That reading is kept per worker in the sweep's queue, so
a ``--resume`` after a pause waits for the same thing the gate mid-sweep waited for, instead of taking
whatever the GPUs hold now as "clean". A resume without one (a queue from before it was kept) asks for
GPUs free of every process's memory: it waits and pauses, never launches onto held memory. Apart from
the runner because it is state of its own (the queue's record) and one read of the host.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from eagletui.core.host.gpu_memory import Reading

if TYPE_CHECKING:
    from eagletui.session.sweep.queue import SweepQueue
    from eagletui.workspace import Workspace


class GateReference:
    """One worker's gate reading, read from and written to its queue (``gpu_reference``)."""

    def __init__(self, queue: SweepQueue, worker: str) -> None:
        self.queue = queue
        self.worker = worker
        #: GPU memory right before the last launch: what a stop must give back before the next
        self.reading: Reading | None = Reading.from_dict(queue.gpu_reference.get(worker))

    def keep(self, reading: Reading) -> None:
        self.reading = reading
        self.queue.gpu_reference[self.worker] = reading.to_dict()

    def for_gate(self, label: str, *, resumed: bool) -> tuple[Reading | None, str]:
        """(what the gate waits for, how its message names it). A resumed sweep with no reading from
        before its last launch waits for GPUs free of every process (its own server is stopped by then)."""
        if self.reading is None and resumed:
            return Reading({}), "processes other than this sweep (no reading from before the pause)"
        return self.reading, label


async def reading_without(ws: Workspace, run: Any, timeout: float) -> Reading | None:
    """The GPUs' reading now, less the memory of ``run``'s own processes (which the sweep stops next):
    the reference of a resumed sweep that finds its server still running. None without telemetry."""
    from eagletui.remote.gpu import read_memory

    if ws.transport is None:
        return None
    now = await read_memory(ws.transport, timeout)
    if now is None:
        return None
    pids: set[int] = set()
    with contextlib.suppress(Exception):
        if ws.control is not None:
            pids = {int(m["pid"]) for m in await ws.control.members(run) if "pid" in m}
    used = dict(now.used)
    for h in now.holders:
        if h.pid in pids and h.gpu is not None:
            used[h.gpu] = max(0.0, used.get(h.gpu, 0.0) - h.mib)
    return Reading(used, now.total, tuple(h for h in now.holders if h.pid not in pids))
