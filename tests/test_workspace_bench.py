
"""The profile's benchmark runner is honoured by the workspace (the `b` key), and its output streams
into the log pane."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
from pathlib import Path

import pytest

from eagletui.commands.demo import write_demo_profile
from eagletui.core.profile.load import load_profile
from eagletui.core.timings import FAST
from eagletui.workspace import Workspace


@contextlib.asynccontextmanager
async def ready_workspace(prof, events: list, also=None):
    """A workspace whose demo server has launched and said it is ready; the server is stopped after.
    Every event lands in ``events`` (and goes to ``also`` when given)."""

    def emit(ev):
        events.append(ev)
        if also is not None:
            also(ev)

    ws = Workspace(prof, emit, target="local", preflight=False, timings=FAST)
    await ws.connect()
    try:
        await ws.launch()
        for _ in range(200):
            if any(e.type == "server_ready" for e in events):
                break
            await asyncio.sleep(0.1)
        yield ws
    finally:
        await ws.close(stop_server=True)


@pytest.mark.slow
async def test_custom_command_runner_through_the_workspace(tmp_path: Path) -> None:
    prof = load_profile(write_demo_profile(tmp_path, time_scale=0.004))
    script = "print('warming up'); print('throughput: 123.4 tok/s'); print('mean accept length 2.75')"
    prof.bench = dataclasses.replace(
        prof.bench,
        runner="command",
        command=f'{sys.executable} -c "{script}"',
        tok_s_regex=r"throughput: ([\d.]+)",
        accept_len_regex=r"accept length ([\d.]+)",
    )
    events = []
    async with ready_workspace(prof, events) as ws:
        result = await ws.benchmark()
        assert result.runner == "command" and not result.error
        assert result.output_throughput == 123.4 and result.accept_length == 2.75
        echoed = [e.text for e in events if e.type == "log" and e.text.startswith("[bench] ")]
        assert "[bench] throughput: 123.4 tok/s" in echoed


@pytest.mark.slow
async def test_repeats_give_mean_and_stdev(tmp_path: Path) -> None:
    from eagletui.core.runs.book import RunBook

    prof = load_profile(write_demo_profile(tmp_path, time_scale=0.004))
    prof.args["--sim-speed"] = 4
    prof.bench = dataclasses.replace(prof.bench, num_prompts=4, concurrency=2, max_new_tokens=16, repeats=3)
    events = []
    book = RunBook()
    async with ready_workspace(prof, events, also=book.apply) as ws:
        await ws.benchmark()
        assert sum(e.type == "bench_result" for e in events) == 3
        row = book.row(1)
        assert row.repeats == 3 and row.tok_s.stdev is not None and "±" in row.tok_s.text(1)


@pytest.mark.slow
async def test_builtin_client_sends_the_api_key(tmp_path: Path) -> None:
    """A server started with --api-key refuses requests without it (the simulator does, like sglang)."""
    import aiohttp

    prof = load_profile(write_demo_profile(tmp_path, time_scale=0.004))
    prof.args["--api-key"] = "sk-test-key-123"
    prof.args["--sim-speed"] = 4
    prof.bench = dataclasses.replace(prof.bench, num_prompts=2, concurrency=2, max_new_tokens=8)
    events = []
    async with ready_workspace(prof, events) as ws:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"http://127.0.0.1:{prof.port}/generate", json={"text": "x"}) as r:
                assert r.status == 401
        result = await ws.benchmark()
        assert not result.error and result.requests == 2 and result.failed == 0
        started = next(e for e in events if e.type == "launch_started")
        assert "sk-test-key-123" not in str(started.config)  # the snapshot is redacted
        assert "sk-test-key-123" not in str(started.command)  # and so is the command the runs table shows
