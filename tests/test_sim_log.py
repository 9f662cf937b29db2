"""Real-process tests of the simulator's startup log, argv handling and failure injection."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest_sim import READY, REPO, SPEC_ARGS, SimProc

PREFIX = re.compile(r"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{3})?)((?: TP\d+)*)\] (.*)")


def _run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "eagletui.sim", *args],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=str(REPO),
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def test_help_is_fast() -> None:
    t = time.monotonic()
    r = _run_cli("--help")
    assert r.returncode == 0
    assert "--sim-time-scale" in r.stdout and "--speculative-draft-model-path" in r.stdout
    assert time.monotonic() - t < 3.0


def test_unknown_flag_exits_2_like_argparse() -> None:
    r = _run_cli("--model-path", "m", "--foo")
    assert r.returncode == 2
    assert "usage: launch_server.py" in r.stderr
    assert "launch_server.py: error: unrecognized arguments: --foo" in r.stderr


def test_no_abbreviations() -> None:
    r = _run_cli("--model-path", "m", "--speculative-num-step", "3")
    assert r.returncode == 2
    assert "unrecognized arguments: --speculative-num-step" in r.stderr


def _records(text: str) -> list[tuple[str, str]]:
    """(ranks, message) for every prefixed record, including ones glued after a tqdm frame."""
    out = []
    for physical in text.split("\n"):
        for frame in physical.split("\r"):
            idx = frame.find("[20")
            if idx < 0:
                continue
            m = PREFIX.match(frame[idx:])
            if m:
                out.append((m.group(2).strip(), m.group(3)))
    return out


def test_startup_log_phases_in_order_and_sigterm() -> None:
    with SimProc(SPEC_ARGS + ["--sim-shards", "12"], env={"SGLANG_LOG_MS": "1"}) as sim:
        text = sim.wait_for(READY)
        recs = _records(text)
        msgs = [m for _, m in recs]

        def first(sub: str, start: int = 0) -> int:
            for i in range(start, len(msgs)):
                if sub in msgs[i]:
                    return i
            raise AssertionError(f"missing {sub!r}")

        order = [
            "Max running requests is reset to 48",
            "server_args={",
            "Init parallel begin.",
            "Init parallel ends. elapsed=",
            "Memory baseline taken. mem usage=",
            "Load weight begin. avail mem=",
            "Load weight end. elapsed=",
            "type=LlamaForCausalLMEagle3",
            "KV Cache is allocated. dtype: torch.bfloat16, #tokens:",
            "Memory pool end. avail mem=",
            "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail mem=",
            "Capture target verify CUDA graph end. bs=[",
            "Capture draft decode CUDA graph begin. backend=full, num_tokens_per_req=1",
            "Capture draft decode CUDA graph end. elapsed=",
            "Capture draft extend CUDA graph begin. backend=full, num_tokens_per_req=4",
            "Capture draft extend CUDA graph end. elapsed=",
            "max_total_num_tokens=",
            "Engine startup timings (s): load_weight=",
            "Prefill batch, #new-seq: 1,",
            READY,
        ]
        pos = 0
        for sub in order:
            pos = first(sub, pos)
        # every rank logs the per-rank lines; draft captures only on TP0; main lines have no rank
        for sub in ("Init parallel begin.", "Load weight begin.", "Capture target verify CUDA graph end."):
            ranks = {r for r, m in recs if sub in m}
            assert ranks == {f"TP{i}" for i in range(8)}, sub
        assert {r for r, m in recs if "Capture draft" in m} == {"TP0"}
        assert {r for r, m in recs if "server_args=" in m or READY in m} == {""}
        assert re.search(r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} TP0\]", text)
        # tqdm bars: \r frames on one physical line
        shard_lines = [ln for ln in text.split("\n") if "Loading safetensors checkpoint shards" in ln]
        assert any(
            ln.startswith("\rLoading safetensors checkpoint shards:   0% Completed | 0/12 [")
            for ln in shard_lines
        )
        assert any("100% Completed | 12/12 [" in ln for ln in shard_lines)
        cap = [ln for ln in text.split("\n") if "Capturing batches (bs=48 avail_mem=" in ln]
        assert cap and cap[0].startswith(
            "\r  0%|          | 0/10 [00:00<?, ?it/s]\rCapturing batches (bs=48 "
        )
        assert re.search(
            r"Capturing batches \(bs=\d+ avail_mem=\d+\.\d\d GB\): +\d+%\|[█▏▎▍▌▋▊▉ ]{10}\| \d+/10 \[", text
        )
        assert "100%|██████████| 10/10 [" in text
        # uvicorn lifecycle and warmup access lines
        lines = text.split("\n")
        for ln in (
            "INFO:     Waiting for application startup.",
            "INFO:     Application startup complete.",
            f"INFO:     Uvicorn running on http://127.0.0.1:{sim.port} (Press CTRL+C to quit)",
        ):
            assert ln in lines
        assert re.search(r'^INFO:     127\.0\.0\.1:\d+ - "GET /model_info HTTP/1\.1" 200 OK$', text, re.M)
        assert re.search(r'^INFO:     127\.0\.0\.1:\d+ - "POST /generate HTTP/1\.1" 200 OK$', text, re.M)
        assert text.index("Uvicorn running on") > text.index("max_total_num_tokens=")
        assert "Decode batch" not in text
        sim.proc.send_signal(signal.SIGTERM)
        assert sim.wait_exit(10) in (0, -15)
        assert "INFO:     Shutting down" in sim.text()


def test_no_spec_and_disable_cuda_graph() -> None:
    base = ["--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--tp", "8", "--skip-server-warmup"]
    with SimProc(base) as sim:
        text = sim.wait_for(READY)
        assert "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1," in text
        assert "Capture draft" not in text and "LlamaForCausalLMEagle3" not in text
        assert "type=LlamaForCausalLM, " in text
        assert "POST /generate" not in text
    with SimProc(base + ["--disable-cuda-graph"]) as sim:
        text = sim.wait_for(READY)
        assert "Capture" not in text and "Capturing batches" not in text


def test_tp1_has_no_rank_prefix() -> None:
    with SimProc(["--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--skip-server-warmup"]) as sim:
        text = sim.wait_for(READY)
        assert re.search(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\] Load weight begin", text, re.M)
        assert " TP0]" not in text
        sim.proc.send_signal(signal.SIGINT)
        assert sim.wait_exit(10) in (0, -15)
        assert "INFO:     Finished server process [" in sim.text()


FAIL_CASES = {
    "oom-load": (
        "Scheduler hit an exception: Traceback (most recent call last):",
        "\ntorch.OutOfMemoryError: CUDA out of memory.",
    ),
    "oom-capture": (
        "\nException: Capture cuda graph failed: CUDA out of memory.",
        "\nPossible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
        "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)",
    ),
    "nccl": ("\ntorch.distributed.DistBackendError: NCCL error in:", "Scheduler hit an exception:"),
    "hang-capture": (
        "Scheduler watchdog timeout (self.watchdog_timeout=100, self.soft=False)",
        "Capturing batches (bs=",
    ),
    "crash-after-ready": (
        "Subprocess scheduler_3 (pid=",
        "crashed with exit code -9. Triggering SIGQUIT for cleanup...",
    ),
}


@pytest.mark.parametrize("mode", sorted(FAIL_CASES))
def test_failure_injection_kills_like_kill_process_tree(mode: str) -> None:
    args = SPEC_ARGS + ["--sim-shards", "8", "--watchdog-timeout", "100"]
    with SimProc(args, env={"EAGLETUI_SIM_FAIL": mode, "EAGLETUI_SIM_FAIL_DELAY": "0.3"}) as sim:
        rc = sim.wait_exit(30)
        text = sim.text()
        assert rc == -signal.SIGKILL, text[-2000:]
        for needle in FAIL_CASES[mode]:
            assert needle in text, needle
        assert "Received sigquit from a child process. It usually means the child failed." in text or (
            "SIGQUIT received. signum=3" in text
        )
        assert re.search(r"kill_process_tree called: parent_pid=(\d+), include_parent=True, pid=\1", text)
        if mode != "crash-after-ready":
            assert READY not in text
        else:
            assert text.index(READY) < text.index("crashed with exit code")
        if mode.startswith("oom") or mode == "nccl":
            # traceback lines after the first are unprefixed
            tb = text[text.index("Scheduler hit an exception") :]
            assert '\n  File "' in tb


def test_port_in_use_forced_and_real() -> None:
    with SimProc(SPEC_ARGS + ["--sim-shards", "4"], env={"EAGLETUI_SIM_FAIL": "port-in-use"}) as sim:
        assert sim.wait_exit(30) == 1
        assert (
            f"ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {sim.port}): "
            "address already in use"
        ) in sim.text()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with SimProc(["--model-path", "m-8b", "--sim-shards", "2"], port=port) as sim:
            assert sim.wait_exit(30) == 1
            text = sim.text()
            assert "[Errno 98]" in text and "address already in use" in text
            assert "INFO:     Application shutdown complete." in text
            assert READY not in text
