"""A cancellation (SIGTERM, SIGHUP and Ctrl-C cancel a headless command's main task; the UI's stop cancels
its benchmark) reaches the benchmark client's every wait and stops it at once.

Real: a loaded CI rehearsal benchmarked 45 repeats on after "SIGTERM: stopping": the cancel was dropped
on its way. Each test makes the one interleaving that dropped it happen on purpose (no sleeps, no
timing): a cancel that lands while a helper task ends, as the awaited event comes, or while the request
pool runs against a real HTTP server (whose workers went on drawing prompts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from eagletui.bench.httplimits import HttpLimits
from eagletui.bench.pool import _link_up, _run_pool
from eagletui.bench.stall import StallWatch
from eagletui.core.profile.model import BenchSettings
from eagletui.core.timings import FAST
from eagletui.remote.cancel import cancel_and_wait
from tests.http_app import serve_app


async def _slow_to_end(stopping: asyncio.Event) -> None:
    """A helper task that takes a few turns of the loop to end once cancelled (a watch, a ticker)."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        stopping.set()
        for _ in range(3):
            await asyncio.sleep(0)
        raise


def test_a_cancel_that_lands_while_a_helper_task_ends_is_raised() -> None:
    """``task.cancel(); with suppress(CancelledError): await task`` (the pool's watch, the ticker) took
    the caller's cancel, forwarded into the helper, for the helper's own and dropped it."""

    async def main() -> tuple[bool, bool]:
        stopping = asyncio.Event()
        helper = asyncio.create_task(_slow_to_end(stopping))
        await asyncio.sleep(0)

        async def caller() -> None:
            await cancel_and_wait(helper)

        outer = asyncio.create_task(caller())
        await stopping.wait()  # the caller now waits for the helper to end
        outer.cancel()  # the SIGTERM
        with pytest.raises(asyncio.CancelledError):
            await outer
        await asyncio.wait({helper})  # cancelled too: it ends on its own time
        return outer.cancelled(), helper.cancelled()

    assert asyncio.run(main()) == (True, True)


def test_cancel_and_wait_raises_what_a_helper_failed_with_unless_told_not_to() -> None:
    async def boom() -> None:
        raise ValueError("the ticker broke")

    async def main() -> None:
        t = asyncio.create_task(boom())
        await asyncio.sleep(0)
        with pytest.raises(ValueError, match="ticker broke"):
            await cancel_and_wait(t)
        await cancel_and_wait(t, errors=False)

    asyncio.run(main())


async def _lands_as_it_comes(wait: Coroutine[Any, Any, object], event: asyncio.Event) -> object:
    """Run ``wait`` in a task, then set ``event`` and cancel the task in the same turn of the loop: how
    the task ended. Python 3.11's ``asyncio.wait_for`` returned the result and dropped the cancel
    (gh-86296)."""
    task = asyncio.create_task(wait)
    for _ in range(3):
        await asyncio.sleep(0)
    event.set()
    task.cancel()
    (outcome,) = await asyncio.gather(task, return_exceptions=True)
    return outcome


def test_a_cancel_as_the_link_comes_back_is_not_dropped() -> None:
    """A request worker waiting for the SSH link drew its next prompt after the stop."""

    async def main() -> object:
        link = asyncio.Event()
        return await _lands_as_it_comes(_link_up(link, 30), link)

    assert isinstance(asyncio.run(main()), asyncio.CancelledError)


def test_a_cancel_as_the_users_stop_comes_is_not_dropped_by_the_stall_watch() -> None:
    """The watch returned as if the user had halted it (a watch without the user's stop waited the same
    way, and one that went on looking kept the pool's end waiting for it for ever)."""

    async def main() -> object:
        stop = asyncio.Event()
        lim = HttpLimits.for_settings(BenchSettings(), FAST)
        watch = StallWatch(lim, emit=lambda e: None, total=1, concurrency=1, tokens=lambda: 0, stop=stop)
        return await _lands_as_it_comes(watch.run(), stop)

    assert isinstance(asyncio.run(main()), asyncio.CancelledError)


def test_a_cancelled_pool_sends_no_request_after_the_stop() -> None:
    """The request pool cancelled (SIGTERM during a benchmark): its workers end with it. They were left
    running and drew the rest of the prompts after the command said it was stopping."""

    async def main() -> tuple[int, list[str]]:
        started: list[int] = []
        first_two, release = asyncio.Event(), asyncio.Event()

        async def generate(request: web.Request) -> web.StreamResponse:
            started.append(1)
            if len(started) == 2:
                first_two.set()
            resp = web.StreamResponse()
            await resp.prepare(request)
            await resp.write(b'data: {"text": "a", "meta_info": {"completion_tokens": 1}}\n\n')
            await release.wait()  # streams until the test ends
            return resp

        app = web.Application()
        app.router.add_post("/generate", generate)
        runner, url = await serve_app(app)
        try:
            async with aiohttp.ClientSession() as session:
                pool = asyncio.create_task(
                    _run_pool(
                        session,
                        url + "/generate",
                        [b"{}"] * 10,
                        2,
                        None,
                        None,
                        asyncio.Event(),
                        HttpLimits.for_settings(BenchSettings(), FAST),
                    )
                )
                await first_two.wait()
                pool.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await pool
                # every worker ended with the pool: none is left to draw the next prompt
                left = [
                    t.get_coro().__qualname__ for t in asyncio.all_tasks() if "worker" in repr(t.get_coro())
                ]
        finally:
            release.set()
            await runner.cleanup()
        return len(started), left

    started, left = asyncio.run(main())
    assert left == [] and started == 2
