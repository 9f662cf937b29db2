"""SIGSTOP of the scheduler alone during a benchmark (issue 31 item 9).

On a real SGLang the scheduler is a process of its own (``sglang::scheduler`` on one GPU,
``sglang::scheduler_TP0`` with tp > 1): stopped, it runs no batch while the HTTP front end (the main process) still answers, so nothing dies and no port closes; only
the streams go silent. The simulator's engine now holds its batches while a scheduler child is stopped
(it did not notice before: the benchmark went on). The benchmark must say the stall within the stall
threshold, end the run invalid, and the server must serve again after SIGCONT.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest_sim import sim_profile_toml

from eagletui.commands.demo import free_port
from eagletui.core.profile.load import load_profile
from eagletui.core.timings import FAST
from eagletui.remote.control import ServerControl
from eagletui.remote.local import LocalTransport
from tests.test_headless_signals import Command

#: rank 0's scheduler as SGLang titles it: plain on one GPU, "_TP0" with tp > 1 (scheduler.py)
RANK0_TITLES = (b"sglang::scheduler", b"sglang::scheduler_TP0")

#: the stall thresholds this test runs under (a started stream silent 3 s; no progress at all 5 s)
STALL_S, SERVER_STALL_S = 3.0, 5.0


def _descendants(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def _scheduler(leader: int) -> int:
    for pid in _descendants(leader):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].strip() in RANK0_TITLES:
                return pid
        except OSError:
            continue
    raise AssertionError(f"no rank-0 scheduler ({RANK0_TITLES}) under {leader}")


def _generate(port: int, timeout: float) -> int:
    body = json.dumps({"text": "after", "sampling_params": {"max_new_tokens": 8}}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/generate", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status


@pytest.mark.slow
def test_a_stopped_scheduler_is_said_within_the_stall_threshold_and_the_run_is_invalid(tmp_path) -> None:
    port = free_port()
    rest = "[bench]\nnum_prompts = 400\nconcurrency = 4\nmax_new_tokens = 64\nwarmup = 0"
    prof = sim_profile_toml(tmp_path, port, args="enable-metrics = true\n", rest=rest, speed=2)
    control = ServerControl(LocalTransport(), str(tmp_path / "runs"), python=sys.executable, timings=FAST)
    run = asyncio.run(control.launch(load_profile(prof), launch=1))
    sched = None
    cmd = None
    try:
        log = tmp_path / "runs" / run.run_id / "server.log"
        deadline = time.monotonic() + 60
        while "ready to roll" not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-2000:]
            time.sleep(0.1)
        sched = _scheduler(run.pid)
        timings = f"fast,http.stall_s={STALL_S},http.server_stall_s={SERVER_STALL_S},http.progress_s=1"
        cmd = Command(
            ["bench", "local", "--profile", prof, "--json", "--no-record"], env={"EAGLETUI_TIMINGS": timings}
        )
        served = log.read_text(errors="replace").count("Decode batch")
        deadline = time.monotonic() + 60
        while log.read_text(errors="replace").count("Decode batch") < served + 3:  # the benchmark runs
            assert time.monotonic() < deadline and cmd.proc.poll() is None, "".join(cmd.err)[-2000:]
            time.sleep(0.05)
        os.kill(sched, signal.SIGSTOP)
        stopped_at = time.monotonic()
        # the HTTP front end still answers while the scheduler is stopped, as SGLang's does
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            assert r.status == 200
        cmd.wait_for("stalled", timeout=SERVER_STALL_S + 10)
        said_after = time.monotonic() - stopped_at
        rc, doc, err = cmd.finish(timeout=60)
        os.kill(sched, signal.SIGCONT)
        assert said_after <= SERVER_STALL_S + 1.5, (said_after, err[-2000:])
        assert rc != 0, err[-2000:]
        assert "server stalled" in json.dumps(doc), doc
        assert doc.get("invalid") or doc.get("error"), doc
        # SIGCONT: the same server serves again (nothing restarted, the port never closed)
        assert _generate(port, timeout=30) == 200
        assert log.read_text(errors="replace").count("server_args=") == 1
    finally:
        if sched is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(sched, signal.SIGCONT)
        if cmd is not None:
            cmd.kill()
        asyncio.run(control.stop(run))

