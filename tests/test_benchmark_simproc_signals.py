"""A benchmark ended by SIGTERM (``timeout``) or SIGHUP stops the simulators it started
(benchmarks/_simproc.py): before, the default action ended the benchmark and left them running in their own
sessions, still serving, after it was gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest_fault import pid_alive as _alive

ROOT = Path(__file__).resolve().parent.parent
# the benchmark as a shell starts it: SIGTERM and SIGHUP at their default (CI's runner hands its children
# SIGTERM ignored, and a process that ignores it is not the case here: nothing ends it, nothing leaks)
SCRIPT = """
import asyncio, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
sys.path.insert(0, {root!r})
from benchmarks._simproc import SimProcess
sim = SimProcess(["--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--tp", "1", "--sim-time-scale", "0.01"])
asyncio.run(sim.wait_ready(60))
print(sim.proc.pid, flush=True)
time.sleep(120)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signalled_benchmark_stops_its_simulator(sig: signal.Signals) -> None:
    bench = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(root=str(ROOT))], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    sim_pid = None
    try:
        assert bench.stdout is not None
        sim_pid = int(bench.stdout.readline())
        assert _alive(sim_pid)
        bench.send_signal(sig)
        assert bench.wait(30) == 128 + sig
        deadline = time.monotonic() + 15
        while _alive(sim_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(sim_pid), "the simulator outlived the benchmark"
    finally:
        if bench.poll() is None:
            bench.kill()
        if sim_pid is not None and _alive(sim_pid):
            os.killpg(sim_pid, signal.SIGKILL)
