"""The simulator as a multi-node server (--nnodes/--node-rank/--dist-init-addr), two real processes:
node 1 runs the upper half of the TP ranks, prints no bars and serves no HTTP, waits for node 0
at the dist-init address and ends when node 0 does; bad combinations end as SGLang's checks do."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from eagletui.commands.demo import free_port
from tests.conftest_sim import READY, SPEC_ARGS, SimProc

pytestmark = pytest.mark.slow


def _pair(extra: list[str] | None = None) -> tuple[SimProc, SimProc]:
    port, dist = free_port(), free_port()
    common = [*SPEC_ARGS, "--nnodes", "2", "--dist-init-addr", f"127.0.0.1:{dist}", *(extra or [])]
    # node 1 first: it waits for node 0 to listen, as a real rank waits for the TCP store
    n1 = SimProc([*common, "--node-rank", "1"], port=port)
    n0 = SimProc([*common, "--node-rank", "0"], port=port)
    return n0, n1


def test_two_nodes_split_the_ranks_and_node_0_serves() -> None:
    n0, n1 = _pair()
    try:
        n0.wait_for(READY, 60)
        text1 = n1.wait_for("Dummy health check server started in background thread", 30)
        text0 = n0.text()
        for r in range(4):
            assert f"TP{r}]" in text0 and f"TP{r}]" not in text1
        for r in range(4, 8):
            assert f"TP{r}]" in text1 and f"TP{r}]" not in text0
        # global rank 0's bar (0.5.23's multithreaded loader by default: "Multi-thread loading shards")
        assert "Multi-thread loading shards" in text0
        assert "Multi-thread loading shards" not in text1
        assert "Loading safetensors checkpoint shards" not in text1
        assert "Capturing batches" not in text1
        assert "Uvicorn running" in text0 and "Uvicorn running" not in text1
        assert "Engine startup timings" in text0 and "Engine startup timings" not in text1
        assert text1.count("Init parallel ends") == 4 and text0.count("Init parallel ends") == 4
        n0.proc.send_signal(signal.SIGTERM)
        assert n0.wait_exit(30) == 0
        assert n1.wait_exit(30) == 0  # node 0's shutdown reached node 1
    finally:
        n0.stop()
        n1.stop()


def test_sigterm_on_node_1_waits_for_node_0() -> None:
    n0, n1 = _pair()
    try:
        n0.wait_for(READY, 60)
        n1.wait_for("Dummy health check server started", 30)
        n1.proc.send_signal(signal.SIGTERM)
        n1.wait_for("SIGTERM received on node_rank 1; waiting for the rank-0 ShutdownReq broadcast", 10)
        assert n1.proc.poll() is None  # still waiting
        n0.proc.send_signal(signal.SIGTERM)
        assert n1.wait_exit(30) == 0
    finally:
        n0.stop()
        n1.stop()


def test_a_sigterm_arriving_after_node_0_shut_down_still_reaches_node_1s_handler() -> None:
    """scancel signals every node's step at once, but on a loaded host node 1's SIGTERM can land after
    node 0 has already shut down: node 1's schedulers are still tearing down then (as SGLang's do after
    the ShutdownReq), so the handler runs and logs; the two-node Slurm test relies on that line."""
    n0, n1 = _pair()
    try:
        n0.wait_for(READY, 60)
        n1.wait_for("Dummy health check server started", 30)
        n0.proc.send_signal(signal.SIGTERM)
        assert n0.wait_exit(30) == 0
        assert n1.proc.poll() is None  # still tearing down
        n1.proc.send_signal(signal.SIGTERM)
        n1.wait_for("SIGTERM received on node_rank 1; waiting for the rank-0 ShutdownReq broadcast", 10)
        assert n1.wait_exit(30) == 0
    finally:
        n0.stop()
        n1.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--tp", "6", "--nnodes", "4", "--dist-init-addr", "127.0.0.1:1"],
            "tp_size must be divisible by number of nodes",
        ),
        (["--nnodes", "2"], "--dist-init-addr is required when --nnodes > 1"),
        (
            ["--nnodes", "2", "--node-rank", "2", "--dist-init-addr", "h:1"],
            "node_rank 2 must be in [0, nnodes=2)",
        ),
    ],
)
def test_bad_multi_node_flags_end_like_sglang(args: list[str], message: str) -> None:
    base = [a for a in SPEC_ARGS]
    cmd = [sys.executable, "-m", "eagletui.sim", *base, *args, "--port", str(free_port())]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert f"AssertionError: {message}" in res.stderr
