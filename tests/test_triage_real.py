"""Triage names what happened, on real failures: a native crash and where it was, a bad model path and
the flag that holds it.

Real: the 0.5.17 H200 launch with a draft path that does not exist (``OSError: Repo id must be in the
form …`` while the server args are checked: no ``server_args`` line ever printed), the 0.5.17 launch
that dies building its EAGLE-3 draft, and a scheduler segfault inside NCCL's init posted in sglang
issue #3451. main hinted "read the exception above" for the first two and "likely killed from outside"
for the third. The trace-capture death on the H200 (the torch profiler's destructor, exit code -11) was
not kept as a log; its shape is rebuilt below from the fixtures README and faulthandler's format.
"""

from __future__ import annotations

from pathlib import Path

from eagletui.commands.parse import parse_path

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
REAL17 = Path(__file__).resolve().parent / "fixtures" / "real-0.5.17"


def test_a_bad_draft_path_names_the_flag() -> None:
    f = parse_path(str(REAL17 / "eagletui-baddraft-081526.log"))["failure"]
    assert f["kind"] == "exception" and "Repo id must be in the form" in f["message"]
    assert f["hint"].startswith("--speculative-draft-model-path '/tmp/sgw/tiny/no-such-draft' is neither")
    assert "read the exception above" not in f["hint"]


def test_a_draft_that_fails_to_build_names_the_flag_and_its_value() -> None:
    f = parse_path(str(REAL17 / "crash-draft-model-init.log"))["failure"]
    assert f["phase"] == "load_draft"
    assert "--speculative-draft-model-path ('/tmp/" in f["hint"]
    assert "--speculative-algorithm EAGLE3" in f["hint"]


def test_a_segfault_is_a_native_crash_and_says_where() -> None:
    f = parse_path(str(REAL / "died-native-segfault-nccl-init-issue3451.log"))["failure"]
    assert f["kind"] == "died"
    assert f["message"] == (
        "Segmentation fault in ncclCommInitRank (sglang/srt/distributed/device_communicators/pynccl_wrapper.py:351)"
    )
    assert "native crash" in f["hint"] and "NCCL" in f["hint"]
    assert "killed from outside" not in f["hint"]


# The H200 capture death, rebuilt: the scheduler's faulthandler output after "Profiling done", a native
# frame naming the torch profiler's destructor, then SGLang 0.5.17's own cascade (its real wording, as
# in tests/fixtures/real-0.5.17/eagletui-launch-081115.log).
_CAPTURE_DEATH = """\
[2026-12-01 08:21:01] The server is fired up and ready to roll!
[2026-12-01 08:21:02] Profiling done. Traces are saved to: /tmp/sgw/out/trace
Fatal Python error: Segmentation fault

Thread 0x00007f2e93fff640 (most recent call first):
  File "/tmp/site/sglang/srt/managers/scheduler.py", line 462 in watchdog_thread
  File "/usr/lib/python3.12/threading.py", line 1010 in run

Current thread 0x00007f2ea0870640 (most recent call first):
  File "/tmp/site/torch/profiler/profiler.py", line 811 in stop
  File "/tmp/site/sglang/srt/managers/scheduler_components/profiler_manager.py", line 330 in _stop_profile
#0  0x00007f673afbf86a in torch::autograd::profiler::ProfilerResult::~ProfilerResult() () from /tmp/site/torch/lib/libtorch_cpu.so

Extension modules: numpy._core._multiarray_umath, torch._C, setproctitle (total: 3)
[2026-12-01 08:21:03] Subprocess scheduler_0 (pid=3393) crashed with exit code -11. Triggering SIGQUIT for cleanup...
[2026-12-01 08:21:03] SIGQUIT received. signum=None, frame=None. It usually means one child failed.
[2026-12-01 08:21:03] Sleeping 5 seconds before crash diagnostics to let GPU activity settle.
"""


def test_the_profiler_segfault_after_ready_is_triaged_as_a_native_crash(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(_CAPTURE_DEATH)
    d = parse_path(str(log))
    f = d["failure"]
    assert d["state"] == "failed" and f["kind"] == "died"
    assert f["message"].startswith(
        "Segmentation fault in torch::autograd::profiler::ProfilerResult::~ProfilerResult() (native code), "
        "called from stop (torch/profiler/profiler.py:811)"
    )
    assert "torch profiler crashed" in f["hint"] and "killed from outside" not in f["hint"]


def test_a_child_killed_by_sigsegv_without_a_stack_is_still_a_native_crash(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-12-01 08:21:01] The server is fired up and ready to roll!\n"
        "[2026-12-01 08:21:03] Subprocess scheduler_0 (pid=3393) crashed with exit code -11. "
        "Triggering SIGQUIT for cleanup...\n"
        "[2026-12-01 08:21:03] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"
    )
    f = parse_path(str(log))["failure"]
    assert f["kind"] == "died" and f["message"] == "Segmentation fault in the scheduler_0 process"
    assert "native crash" in f["hint"]
    # a stop's own -15 stays what it was
    log.write_text(_CAPTURE_DEATH.replace("exit code -11", "exit code -15").split("Fatal Python")[0])
    assert parse_path(str(log))["failure"] is None


REAL_RUN2 = Path(__file__).resolve().parent / "fixtures" / "real-sglang-0.5.17-run2" / "logs"


def test_the_real_abort_while_profiling_is_a_native_crash_that_says_where() -> None:
    # a real sglang 0.5.17 log (H200): scheduler 0 aborted on a corrupt heap a second into a DECODE capture
    d = parse_path(str(REAL_RUN2 / "profile-abort-L3.log"))
    f = d["failure"]
    assert d["state"] == "failed" and f["kind"] == "died"
    assert f["message"] == (
        "Aborted in flatten_arrays_to_pinned_cpu (sglang/srt/utils/common.py:1216), in scheduler_0"
    )
    assert f["line"] == "Fatal Python error: Aborted"
    assert "native crash" in f["hint"] and "killed from outside" not in f["hint"]


def test_a_kernel_build_that_fails_while_serving_names_the_jit_and_the_fix() -> None:
    """Real (tools/real-sglang/device.sh stall, 2026-12-02): greedy requests served fine, then the first
    sampled request needed flashinfer's top_k_renorm_probs, whose JIT build failed. main said only "read
    the exception above"."""
    p = parse_path(str(REAL17 / "eagletui-stall-jit-crash-055022.log"))
    f = p["failure"]
    assert f["kind"] == "exception" and "Ninja build failed" in f["message"]
    assert "compiled a kernel on first use" in f["hint"] and "flashinfer-jit-cache" in f["hint"]
    assert "read the exception above" not in f["hint"]


def test_an_adaptive_tier_that_outgrows_the_shared_logits_buffer_is_named_with_its_fix() -> None:
    """Real (tools/real-sglang/device.sh adaptive, 2026-12-02): 0.5.17 with --speculative-adaptive at steps 3
    died capturing the steps-7 tier. eagletui said only "failed (exception): AssertionError: …" and its
    adaptive diagnosis read "steps 3 all along; 2 extra tiers captured" for a server that never served."""
    p = parse_path(str(REAL17 / "eagletui-adaptive-tier-crash-084201.log"))
    f = p["failure"]
    assert f["kind"] == "exception" and "shared logits buffer holds 32 rows" in f["message"]
    assert "sgl-project/sglang#30549" in f["hint"] and "--speculative-num-draft-tokens 8" in f["hint"]
