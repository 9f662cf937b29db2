"""Fault suite, failures: every failure the simulator can inject is shown as ``ServerFailed`` with the
right kind, soon after its line reaches the log file.

The lag is measured from the moment the key line's bytes were on disk (a thread samples the file's
size every 2 ms) to the event's monotonic time, through the whole live path (host-side reader,
framing, classifier, phase machine, Workspace). The issue's target is ≤ 2 s; CI asserts a generous
bound (load on 2 shared cores varies) and docs/reliability.md publishes the measured figures.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from eagletui.core.timings import FAST
from eagletui.workspace import Workspace
from tests.conftest_fault import Collector, FileWatch, fault_profile, pick, report, ssh_kwargs
from tests.sshd import sshd_server_fixture  # noqa: F401

pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.timeout(pick(300, 1200))]

#: EAGLETUI_SIM_FAIL value → the failure kind the user must see.
KINDS = {
    "oom-load": "oom",
    "oom-capture": "oom",
    "nccl": "nccl",
    "hang-capture": "hang",
    "crash-after-ready": "died",
    "port-in-use": "port_in_use",
}


#: Every kind on this host; through sshd all of them in the long run, two in CI (time on 2 cores).
VARIANTS = [(f, "local") for f in KINDS] + [
    (f, "ssh") for f in pick(["oom-capture", "crash-after-ready"], list(KINDS))
]


@pytest.mark.parametrize(("fail", "via"), VARIANTS)
async def test_failure_kind_shown_soon_after_its_line(
    fail: str, via: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Issue 11: every simulated failure kind shown (ServerFailed, right kind) ≤ 2 s after its line,
    on this host and through the real sshd."""
    repeats = pick(1, 5)
    ssh = {}
    if via == "ssh":
        srv = request.getfixturevalue("sshd_server")
        ssh = ssh_kwargs(srv)
    lags = []
    for i in range(repeats):
        prof = fault_profile(tmp_path / str(i), time_scale=0.003, env={"EAGLETUI_SIM_FAIL": fail})
        col = Collector()
        ws = Workspace(prof, col, preflight=False, **(ssh or {"target": "local"}), timings=FAST)
        await ws.connect()
        watch = None
        try:
            await ws.launch()
            watch = FileWatch(ws.run.log_path).start()
            failed = await col.wait(lambda e: e.type == "server_failed", 120, what=f"ServerFailed ({fail})")
            await col.wait(lambda e: e.type == "process_exited", 30, what="the process exit")
            watch.stop()
            assert failed.kind == KINDS[fail], failed
            assert failed.line, failed
            data = Path(ws.run.log_path).read_bytes()
            at = data.find(failed.line.encode())
            assert at >= 0, f"key line not in the log: {failed.line!r}"
            written = watch.written_at(at + len(failed.line.encode()))
            assert written is not None
            lag = failed.mono - written
            lags.append(lag)
            # The target is 2 s (measured: a few ms). CI allows 20 s, which only catches a failure
            # that is not shown in time at all; the long variant holds the target itself.
            assert lag < pick(20.0, 2.0), f"{fail}: shown {lag:.2f} s after its line"
            # A failure is not a reason to signal anything: the server ended by itself.
            assert len(col.of("launch_started")) == 1
            assert not col.of("server_stopped")
        finally:
            if watch is not None:
                watch.stop()
            await ws.close(stop_server=True)
        await asyncio.sleep(0)
    report(
        "failure_kind",
        fail=fail,
        via=via,
        kind=KINDS[fail],
        runs=len(lags),
        lag_max_s=round(max(lags), 3),
        lag_mean_s=round(sum(lags) / len(lags), 3),
    )
