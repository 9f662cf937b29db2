"""Real-process tests of the simulator's startup log, argv handling and failure injection."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys

import pytest
from conftest_sim import READY, REPO, SPEC_ARGS, SimProc

PREFIX = re.compile(r"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{3})?)((?: (?:TP|EP)\d+)*)\] (.*)")
UVICORN_TS = r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\] "


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
    # the child's own CPU seconds, not the wall clock: 3.8 s of wall while CI and another suite ran
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = _run_cli("--help")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert r.returncode == 0
    assert "--sim-time-scale" in r.stdout and "--speculative-draft-model-path" in r.stdout
    assert (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) < 3.0


def test_unknown_flag_exits_2_like_argparse() -> None:
    r = _run_cli("--model-path", "m", "--foo")
    assert r.returncode == 2
    assert "usage: sglang serve [-h] --model-path MODEL_PATH" in r.stderr
    assert r.stderr.rstrip("\n").endswith("sglang serve: error: unrecognized arguments: --foo")
    # the real launcher warns about `python -m sglang.launch_server` before parsing (launch_server.py:71)
    assert r.stderr.startswith(
        "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py:71: UserWarning:"
    )


def test_ambiguous_prefix_refused_like_sglang() -> None:
    """0.5.23's parser is argparse with allow_abbrev=True: `--pp` is ambiguous (the real 0.5.17 output is
    shared/fixtures/sglang-0.5.17-h200/ambiguous-flag-pp.txt), and so is `--cuda-graph-max-bs` in 0.5.23."""
    r = _run_cli("--model-path", "m", "--pp", "2")
    assert r.returncode == 2
    real = (
        (REPO / "tests/fixtures/real-0.5.17/ambiguous-flag-pp.txt").read_text().rstrip("\n").splitlines()[-1]
    )
    assert r.stderr.rstrip("\n").splitlines()[-1] == real
    r = _run_cli("--model-path", "m", "--cuda-graph-max-bs", "8")
    assert r.returncode == 2
    assert r.stderr.rstrip("\n").endswith(
        "sglang serve: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
        "--cuda-graph-max-bs-prefill"
    )
    r = _run_cli("--model-path", "m", "--attention-backend", "nope")
    assert r.returncode == 2
    assert (
        "sglang serve: error: argument --attention-backend: invalid choice: 'nope' (choose from" in r.stderr
    )
    r = _run_cli("--model-path", "m", "--stream-output")
    assert r.returncode == 2
    assert r.stderr.rstrip("\n").endswith("sglang serve: error: unrecognized arguments: --stream-output")


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


@pytest.mark.slow
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
            "Capture target prefill CUDA graph begin. backend=breakable, num_tokens=[4, 8, 12,",
            "Capture target prefill CUDA graph end. elapsed=",
            "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail mem=",
            "Capture target verify CUDA graph end. bs=[",
            "Capture draft prefill CUDA graph begin. backend=breakable, num_tokens=[4,",
            "Capture draft prefill CUDA graph end. elapsed=",
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
        assert {r for r, m in recs if "Capture draft decode" in m or "Capture draft extend" in m} == {"TP0"}
        assert {r for r, m in recs if "Capture draft prefill" in m} == {f"TP{i}" for i in range(8)}
        timings = next(m for m in msgs if m.startswith("Engine startup timings (s):"))
        assert re.search(
            r"cuda_graph=\{prefill=\d+\.\d\d, decode=0\.00, target_verify=\d+\.\d\d, draft_prefill=\d+\.\d\d, "
            r"draft_decode=\d+\.\d\d, draft_extend=\d+\.\d\d\}, tokenizer_e2e=\d+\.\d\d$",
            timings,
        )
        assert re.search(r"Prefill batch, .*cuda graph: True, input throughput", text)
        # 0.5.23's prefill-graph tqdm description (runner/prefill_cuda_graph_runner.py)
        assert re.search(
            r"\rCapturing prefill shape \(num_tokens=8192 avail_mem=\d+\.\d\d GB\):   0%\|", text
        )
        assert {r for r, m in recs if "server_args=" in m or READY in m} == {""}
        assert re.search(r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} TP0\]", text)
        # tqdm bars: \r frames on one physical line; the default loader is the multithreaded one
        # (model_loader/loader.py: enable_multithread_load defaults to True; the real 0.5.17 logs of
        # tests/fixtures/real-sglang-0.5.17-run1 print "Multi-thread loading shards")
        shard_lines = [ln for ln in text.split("\n") if "Multi-thread loading shards" in ln]
        assert any(
            ln.startswith("\rMulti-thread loading shards:   0% Completed | 0/12 [") for ln in shard_lines
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
        # uvicorn lifecycle and warmup access lines carry SGLang's timestamp (no milliseconds)
        for ln in (
            r"INFO:     Waiting for application startup\.",
            r"INFO:     Application startup complete\.",
            rf"INFO:     Uvicorn running on http://127\.0\.0\.1:{sim.port} \(Press CTRL\+C to quit\)",
            r'INFO:     127\.0\.0\.1:\d+ - "GET /model_info HTTP/1\.1" 200 OK',
            r'INFO:     127\.0\.0\.1:\d+ - "POST /generate HTTP/1\.1" 200 OK',
            r'INFO:     127\.0\.0\.1:\d+ - "POST /freeze_gc HTTP/1\.1" 200 OK',
        ):
            assert re.search(UVICORN_TS + ln + "$", text, re.M), ln
        assert text.index("Uvicorn running on") > text.index("max_total_num_tokens=")
        assert text.index("POST /freeze_gc") < text.index(READY)
        assert "Decode batch" not in text
        sim.proc.send_signal(signal.SIGTERM)
        assert sim.wait_exit(10) == 0
        text = sim.text()
        tail = text[text.index("SIGTERM received") - 30 :]
        seq = [
            "] SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
            "] Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].",
            "include_parent=False",
            "] INFO:     Shutting down",
            "] INFO:     Waiting for application shutdown.",
            "] INFO:     Application shutdown complete.",
            "] INFO:     Finished server process [",
        ]
        pos = 0
        for needle in seq:
            pos = tail.index(needle, pos)


@pytest.mark.slow
def test_ep_rank_prefix_and_deprecation_warning() -> None:
    """` EP{n}` after ` TP{n}` when expert parallelism > 1 (scheduler.py logger prefix); a deprecated flag
    warns in argparse_actions.py's words, bold yellow, before logging is configured (no timestamp)."""
    args = ["--model-path", "deepseek-ai/DeepSeek-V3", "--tp", "4", "--ep", "4", "--skip-server-warmup"]
    args += ["--sim-host", "h200-nvlink"]  # 671B at tp 4 needs 97 GB a GPU: more than an RTX PRO 6000 has
    with SimProc(args + ["--disable-cuda-graph"]) as sim:
        text = sim.wait_for(READY)
        assert re.search(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} TP3 EP3\] Load weight begin", text, re.M)
        assert (
            "\n\x1b[1;33m'--disable-cuda-graph' is deprecated and will be removed in a future release. "
            "Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.\x1b[0m\n"
        ) in text
        assert "Capture" not in text
        assert "cuda_graph={prefill=0.00, decode=0.00, target_verify=0.00, draft_prefill=0.00" in text


@pytest.mark.slow
def test_running_phase_sigquit_like_add_signal_handler() -> None:
    with SimProc(["--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--skip-server-warmup"]) as sim:
        sim.wait_for(READY)
        sim.proc.send_signal(signal.SIGQUIT)
        assert sim.wait_exit(10) == -signal.SIGKILL
        text = sim.text()
        assert "] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n" in text
        assert re.search(r"kill_process_tree called: parent_pid=(\d+), include_parent=True, pid=\1", text)


@pytest.mark.slow
def test_no_spec_and_disable_cuda_graph() -> None:
    base = ["--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--tp", "8", "--skip-server-warmup"]
    with SimProc(base) as sim:
        text = sim.wait_for(READY)
        assert "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1," in text
        assert text.index("Capture target prefill CUDA graph end.") < text.index("Capture target decode CUDA")
        assert "cuda_graph={prefill=" in text and ", decode=0.00," not in text
        assert "Capture draft" not in text and "LlamaForCausalLMEagle3" not in text
        assert "type=LlamaForCausalLM, " in text
        assert "POST /generate" not in text
    with SimProc(base + ["--disable-cuda-graph"]) as sim:
        text = sim.wait_for(READY)
        assert "Capture" not in text and "Capturing batches" not in text
        assert "is deprecated and will be removed in a future release." in text
    with SimProc(base + ["--cuda-graph-backend-prefill", "disabled"]) as sim:
        text = sim.wait_for(READY)
        assert "Capture target prefill" not in text and "Capture target decode CUDA graph end." in text


@pytest.mark.slow
def test_tp1_has_no_rank_prefix() -> None:
    with SimProc(["--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--skip-server-warmup"]) as sim:
        text = sim.wait_for(READY)
        assert re.search(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\] Load weight begin", text, re.M)
        assert " TP0]" not in text
        sim.proc.send_signal(signal.SIGINT)
        assert sim.wait_exit(10) in (0, -15)
        assert re.search(UVICORN_TS + r"INFO:     Finished server process \[\d+\]$", sim.text(), re.M)


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


@pytest.mark.slow
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
            "SIGQUIT received. signum=None, frame=None. It usually means one child failed." in text
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


@pytest.mark.slow
def test_port_in_use_forced_and_real() -> None:
    with SimProc(SPEC_ARGS + ["--sim-shards", "4"], env={"EAGLETUI_SIM_FAIL": "port-in-use"}) as sim:
        assert sim.wait_exit(30) == 1
        assert (
            f"] ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {sim.port}): "
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
