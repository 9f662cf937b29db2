"""Fault suite, SSH: the link to the host is cut at random points of a launch and of a benchmark, and
sshd goes away for a while; the session's log must equal the server's log on disk, line for line.

Real parts only: OpenSSH's sshd on 127.0.0.1 (tests/sshd.py), the simulator as the server launched
through it, eagletui's Workspace driving connect/launch/tail/benchmark. Counts and the outage length
are reduced in CI; ``EAGLETUI_FAULTS=long`` runs the issue's (50 cuts each, sshd down 60 s). See
docs/reliability.md for the measured figures.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from eagletui.core.timings import FAST
from eagletui.workspace import Workspace
from tests.conftest_fault import (
    Collector,
    compare_lines,
    fault_profile,
    pick,
    pid_alive,
    reference_lines,
    report,
    ssh_kwargs,
)
from tests.sshd import SSHD, SshdServer, sshd_server_fixture, start_sshd, stop_sshd  # noqa: F401

# SSH cuts timed against the simulator's launch: run last, alone
pytestmark = [
    pytest.mark.sshd,
    pytest.mark.fault,
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.timeout(pick(300, 1200)),
]

TERMINAL = ("failed", "exited", "stopped")


def ssh_workspace(srv: SshdServer, prof, col: Collector) -> Workspace:
    return Workspace(prof, col, preflight=False, **ssh_kwargs(srv), timings=FAST)


async def tail_connected(col: Collector, log_path: str, start: int, timeout: float) -> float:
    """Monotonic time of the tail's next "connected" (its reader runs again on the host)."""
    ev = await col.wait(
        lambda e: e.type == "connection" and e.state == "connected" and e.detail == log_path,
        timeout,
        start,
        "the log tail to reconnect",
    )
    return ev.mono


async def cut_n(srv: SshdServer, col: Collector, log_path: str, n: int, rng: random.Random, until=None):
    """Cut every SSH connection ``n`` times at random moments; returns each cut's reconnect time (s).

    The next cut comes a random 0.02-0.4 s after the tail is back, so cuts land anywhere: inside a
    frame, between a liveness check's request and answer, mid-request of the benchmark."""
    reconnects: list[float] = []
    while len(reconnects) < n and (until is None or not until()):
        await asyncio.sleep(rng.uniform(0.02, 0.4))
        mark = len(col.events)
        t_cut = time.monotonic()
        if not await asyncio.to_thread(srv.kill_connections):
            continue  # nothing was connected at that instant (between a drop and its reconnect)
        back = await tail_connected(col, log_path, mark, timeout=30)
        reconnects.append(back - t_cut)
    return reconnects


async def caught_up(col: Collector, launch: int, log_path: str, timeout: float = 60) -> tuple[list, list]:
    """Wait until the session holds every complete line the file held a moment ago; (live, ref)."""
    data = Path(log_path).read_bytes()
    ref = reference_lines(data, launch)
    deadline = time.monotonic() + timeout
    while len(col.server_lines(launch)) < len(ref) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return col.server_lines(launch), ref


def figures(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "n": len(xs),
        "median_s": round(statistics.median(xs), 3),
        "p95_s": round(xs[max(0, int(len(xs) * 0.95) - 1)], 3),
        "max_s": round(xs[-1], 3),
    }


async def test_ssh_cuts_during_launch_and_benchmark(sshd_server: SshdServer, tmp_path: Path) -> None:
    """Issue 11: SSH cut N× at random points of a launch and of a benchmark: 0 lost / 0 duplicated
    against the server log on disk, each reconnect measured; the server is never signalled."""
    n_launch = pick(8, 50)
    n_bench = pick(6, 50)
    # The launch must outlast the cuts: a reconnect took 1.6-2.4 s on 2 cores busy with other work (the
    # launch's phases are the simulator's virtual time and do not stretch with load; the SSH handshakes
    # do), so 8 cuts need ~20 s of launch
    prof = fault_profile(tmp_path, time_scale=pick(0.035, 0.2))
    prof.bench = dataclasses.replace(
        prof.bench, num_prompts=100000, concurrency=2, max_new_tokens=64, warmup=0, timeout_s=60
    )
    col = Collector()
    ws = ssh_workspace(sshd_server, prof, col)
    rng = random.Random(11)
    await ws.connect()
    try:
        await ws.launch()
        run = ws.run

        def ready() -> bool:
            return bool(col.of("server_ready"))

        launch_cuts = await cut_n(sshd_server, col, run.log_path, n_launch, rng, until=ready)
        assert len(launch_cuts) == n_launch, "the launch ended before all cuts: raise the time scale"
        await col.wait(lambda e: e.type in ("server_ready", "server_failed"), 120, what="ready")
        assert not col.of("server_failed"), col.of("server_failed")

        stop = asyncio.Event()
        bench = asyncio.create_task(ws.benchmark(stop=stop))
        await col.wait(lambda e: e.type == "bench_sample", 60, what="the first benchmark sample")
        bench_cuts = await cut_n(sshd_server, col, run.log_path, n_bench, rng, until=bench.done)
        stop.set()
        result = await asyncio.wait_for(bench, 120)
        assert len(bench_cuts) == n_bench
        # Requests cut mid-flight fail (counted, not hidden); after the last cut the forwarded port
        # works again: a fresh short benchmark through it loses nothing.
        prof.bench = dataclasses.replace(prof.bench, num_prompts=4, max_new_tokens=16)
        after = await asyncio.wait_for(ws.benchmark(), 120)
        assert not after.error and after.failed == 0 and after.requests == 4, after

        live, ref = await caught_up(col, run.launch, run.log_path)
        lost, dup = compare_lines(live, ref)
        assert (lost, dup) == (0, 0), f"lost {lost}, duplicated {dup} of {len(ref)} lines"
        assert len(ref) > 100
        # Nothing of this touched the server: no exit, no failure, the same process, never relaunched.
        assert not col.of("process_exited") and not col.of("server_failed")
        assert len(col.of("launch_started")) == 1
        assert pid_alive(run.pid)
        assert (await ws.control.exit_info(run)) == (None, None)
        cuts = launch_cuts + bench_cuts
        # CI is generous (the figure is published, not asserted); the long variant holds the target.
        assert max(cuts) < pick(30.0, 3.0), sorted(cuts)[-5:]
        report(
            "ssh_cuts",
            lines=len(ref),
            lost=lost,
            duplicated=dup,
            launch_reconnect=figures(launch_cuts),
            bench_reconnect=figures(bench_cuts),
            bench_requests=result.requests,
            bench_failed=result.failed,
        )
    finally:
        await ws.close(stop_server=True)


def _restart_sshd(srv: SshdServer) -> None:
    log = open(srv.dir / "sshd.log", "ab")
    srv.proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(srv.dir / "sshd_config")],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def own_sshd():
    """A private sshd: this test stops it, and the session-wide one must stay up for the others."""
    base = Path(tempfile.mkdtemp(prefix="eagletui-sshd-down-"))
    try:
        srv = start_sshd(base)
    except (FileNotFoundError, RuntimeError, subprocess.CalledProcessError) as exc:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"real sshd unavailable: {exc}")
    try:
        yield srv
    finally:
        stop_sshd(srv)
        shutil.rmtree(base, ignore_errors=True)


async def test_sshd_down_then_back(own_sshd: SshdServer, tmp_path: Path) -> None:
    """Issue 11: sshd down (CI 4 s, long 60 s) during a launch, then back: the session reconnects and
    the log is complete; nothing was signalled or relaunched; the state reads lost/reconnecting, never
    a failed or exited server."""
    from eagletui.core.state.screen import SessionState

    down_s = pick(4.0, 60.0)
    srv = own_sshd
    state = SessionState()
    col = Collector(also=state.apply)
    # The launch is still loading when sshd comes back, so the tail has work to catch up on.
    prof = fault_profile(tmp_path, time_scale=pick(0.02, 0.2))
    ws = ssh_workspace(srv, prof, col)
    await ws.connect()
    try:
        await ws.launch()
        run = ws.run
        await col.wait(lambda e: e.type == "phase_started" and e.phase == "load_target", 60, what="load")
        pid = run.pid
        mark = len(col.events)
        # Freeze the listener (no new connection can be forked), cut the live ones, then end it.
        os.kill(srv.proc.pid, signal.SIGSTOP)
        srv.kill_connections()
        srv.proc.kill()
        srv.proc.wait(5)
        t_down = time.monotonic()
        seen_states: set[str] = set()
        statuses: set[str] = set()
        while time.monotonic() - t_down < down_s:
            seen_states.add(state.connection)
            if state.launch is not None:
                statuses.add(state.launch.status)
            await asyncio.sleep(0.05)
        _restart_sshd(srv)
        t_up = time.monotonic()
        back = await tail_connected(col, run.log_path, mark, timeout=max(60.0, down_s))
        ready = await col.wait(lambda e: e.type in ("server_ready", "server_failed"), 180, what="ready")
        assert ready.type == "server_ready", ready

        live, ref = await caught_up(col, run.launch, run.log_path)
        lost, dup = compare_lines(live, ref)
        assert (lost, dup) == (0, 0), f"lost {lost}, duplicated {dup} of {len(ref)} lines"
        during = col.events[mark:]
        assert not [e for e in during if e.type in ("process_exited", "server_failed", "server_stopped")]
        assert len(col.of("launch_started")) == 1 and ws.run.pid == pid
        assert pid_alive(run.pid)
        assert (await ws.control.exit_info(run)) == (None, None)
        # What the user saw while sshd was down: the link lost / reconnecting, the server still loading.
        assert seen_states & {"lost", "reconnecting", "connecting"}
        assert not statuses & set(TERMINAL), statuses
        report(
            "sshd_down",
            down_s=down_s,
            reconnect_after_up_s=round(back - t_up, 3),
            lines=len(ref),
            lost=lost,
            duplicated=dup,
            states_seen=sorted(seen_states),
            launch_status_seen=sorted(statuses),
        )
    finally:
        await ws.close(stop_server=True)
