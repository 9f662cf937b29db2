"""The profile's benchmark runner is honoured by the workspace (the `b` key), and its output streams
into the log pane."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

from eagletui.commands.demo import write_demo_profile
from eagletui.core.profile import load_profile
from eagletui.workspace import Workspace


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
    ws = Workspace(prof, events.append, target="local", preflight=False)
    await ws.connect()
    try:
        await ws.launch()
        for _ in range(200):
            if any(e.type == "server_ready" for e in events):
                break
            await asyncio.sleep(0.1)
        result = await ws.benchmark()
        assert result.runner == "command" and not result.error
        assert result.output_throughput == 123.4 and result.accept_length == 2.75
        echoed = [e.text for e in events if e.type == "log" and e.text.startswith("[bench] ")]
        assert "[bench] throughput: 123.4 tok/s" in echoed
    finally:
        await ws.close(stop_server=True)
