"""The built-in client's request pool: ``concurrency`` streams at a time (an open-loop request rate
when the workload has arrivals), no prompt drawn while the link to the host is down, halted by a
:class:`~eagletui.bench.stall.StallWatch` or the user's stop.

Apart from :mod:`eagletui.bench.client` (which runs the warm-up, the measured run and its summary
through it) because it is the one part that schedules requests: it knows neither the workload nor
the result, only payloads in and :class:`~eagletui.bench.stream.RequestResult` out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from eagletui.bench.httplimits import HttpLimits
from eagletui.bench.stall import StallWatch
from eagletui.bench.stream import RequestResult, _Live, stream_generate
from eagletui.core.events import BenchmarkResult, Event
from eagletui.remote.cancel import cancel_and_wait

#: How a request ends when the link under it is cut (the SSH forward of the server's port).
_LINK_ERRORS = ("connection failed", "ServerDisconnectedError", "ClientOSError", "ClientConnectionError")
# After such a failure a worker waits ``limits.link_settle_s`` before it draws the next prompt, so the
# link's state (which the transport reports a moment later) decides, not a burst of failing requests.


async def _link_up(link: asyncio.Event | None, timeout: float) -> bool:
    """Wait while the link to the host is down (no prompt is drawn meanwhile), at most ``timeout``
    seconds; False when it did not come back (the benchmark ends with what it measured)."""
    if link is None or link.is_set():
        return True
    try:
        # not 3.11's wait_for, which drops a cancellation that lands as the link comes back
        async with asyncio.timeout(timeout):
            await link.wait()
    except TimeoutError:
        return False
    return True


async def _run_pool(
    session: aiohttp.ClientSession,
    url: str,
    payloads: list[bytes],
    concurrency: int,
    live: _Live | None,
    on_done: Callable[[RequestResult], None] | None,
    stop: asyncio.Event | None,
    limits: HttpLimits | None = None,
    link: asyncio.Event | None = None,
    arrivals: tuple[float, ...] = (),
) -> list[RequestResult]:
    """Send ``payloads`` with at most ``concurrency`` in flight; with ``arrivals`` (seconds from now,
    one per payload) none is sent before its time (an open-loop request rate, capped by concurrency)."""
    results: list[RequestResult] = []
    start = time.perf_counter()
    it = iter(enumerate(zip(payloads, arrivals or [0.0] * len(payloads), strict=False)))
    lim = limits or HttpLimits()

    async def worker() -> None:
        for i, (payload, at) in it:
            if stop is not None and stop.is_set():
                return
            wait = start + at - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            if not await _link_up(link, lim.total_s):
                return
            r = await stream_generate(session, url, payload, live, limits)
            r.index = i
            results.append(r)
            if on_done is not None:
                on_done(r)
            if link is not None and not r.ok and r.error.startswith(_LINK_ERRORS):
                await asyncio.sleep(lim.link_settle_s)  # a cut: let the link's state catch up first

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(payloads))))]
    stopper = asyncio.create_task(stop.wait()) if stop is not None else None
    extra = [stopper] if stopper is not None else []
    try:
        pending: set[asyncio.Task[Any]] = set(workers)
        while pending:
            done, _ = await asyncio.wait([*pending, *extra], return_when=asyncio.FIRST_COMPLETED)
            pending -= done
            for w in done:
                if w is not stopper and not w.cancelled() and (exc := w.exception()) is not None:
                    raise exc  # a worker's bug (its on_done): said, not lost in a task nobody awaits
            if stopper in done:
                break
    finally:
        # halted, failed or cancelled (SIGTERM, the UI's stop): no worker draws another prompt, and
        # the caller's own cancellation is not lost while the workers end (:mod:`eagletui.remote.cancel`)
        await cancel_and_wait(*workers, *extra, errors=False)
    return results


# -- stalls (bench/stall.py): the pool under a StallWatch, and the result it leaves -----------------


async def _watched_pool(
    session: aiohttp.ClientSession,
    url: str,
    payloads: list[bytes],
    concurrency: int,
    live: _Live,
    on_done: Callable[[RequestResult], None] | None,
    stop: asyncio.Event | None,
    limits: HttpLimits,
    emit: Callable[[Event], None],
    what: str,
    link: asyncio.Event | None = None,
    arrivals: tuple[float, ...] = (),
) -> tuple[list[RequestResult], StallWatch]:
    """:func:`_run_pool` halted by a :class:`StallWatch` (or the user's ``stop``); while ``link`` is
    clear the pool draws no prompt and the watch does not count the silence as the server's;
    ``arrivals`` as there."""
    watch = StallWatch(
        limits,
        emit=emit,
        total=len(payloads),
        concurrency=concurrency,
        tokens=lambda: live.tokens,
        stop=stop,
        what=what,
        waiting=(lambda: not link.is_set()) if link is not None else None,
    )

    def done(r: RequestResult) -> None:
        watch.finished(r.stalled, refused=not r.ok and r.error.startswith("connection failed"))
        if on_done is not None:
            on_done(r)

    task = asyncio.create_task(watch.run())
    try:
        results = await _run_pool(
            session, url, payloads, concurrency, live, done, watch.halt, limits, link, arrivals
        )
    finally:
        await cancel_and_wait(task)
    return results, watch


def _stalled(result: BenchmarkResult, watch: StallWatch) -> BenchmarkResult:
    """The result of a benchmark the watch halted: "server stalled" (or "server gone") first, the
    abandoned requests counted as failed (they would never have finished). Unchanged when it did
    not stall."""
    if not watch.reason:
        return result
    import dataclasses

    error = f"server {watch.kind}: {watch.reason}" + (f"; {result.error}" if result.error else "")
    return dataclasses.replace(result, failed=result.failed + watch.abandoned, error=error)
