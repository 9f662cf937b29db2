"""Triage of issue 34's second round, on real excerpts (tests/fixtures/real/p34-*, tests/fixtures/vllm/p34-*).

A log that shows one of the crashes the spec-config preflight prevents names that check and its issue
(eagletui/core/logs/formats/sglang/spec_crashes.py), checked on the preflight's cases
(tests/fixtures/spec-preflight, each with the crash its thread reports) and the real excerpts; and the
classes the held-out excerpts showed wrong before this round (each test failed on main b7050fe)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagletui.commands.parse import parse_path
from eagletui.core.logs.formats.sglang.capture_stage import stage_of
from eagletui.core.logs.formats.sglang.spec_crashes import crash_check, launch_finding
from eagletui.core.logs.formats.vllm import VLLM

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "real"
VLLM_DIR = ROOT / "tests" / "fixtures" / "vllm"
CASES = json.loads((ROOT / "tests/fixtures/spec-preflight/cases.json").read_text())
#: the preflight cases whose crash is an exception a log shows in its own words
WORDED = {"no-draft-path": "draft path", "multi-layer-llama": "multi-layer eagle", "kimi-k26-gb300": "draft attention"}


@pytest.mark.parametrize("name", sorted(WORDED))
def test_the_crash_each_preflight_case_ends_in_names_its_check_and_issue(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    assert crash_check(case["crash"]) == WORDED[name]
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-08-26 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process\n'
        "    scheduler = Scheduler(\n"
        f"{case['crash']}\n"
    )
    f = parse_path(str(log))["failure"]
    issue = case["source"].removeprefix("https://github.com/").replace("/issues/", "#")
    assert f["kind"] == "exception" and f["message"] == case["crash"]
    assert f["hint"].startswith(issue + ": ") and "read the exception above" not in f["hint"]


def test_the_real_multi_layer_assertion_alone_is_sglangs_and_names_36536() -> None:
    """sgl-project/sglang#36536 quotes only the final line: main read it as "unknown" (no SGLang prefix)."""
    p = parse_path(str(REAL / "p34-multi-layer-eagle-llama-assert-0518-issue36536.log"))
    assert p["state"] == "failed"
    assert p["failure"]["hint"].startswith("sgl-project/sglang#36536: --enable-multi-layer-eagle needs a target")


def test_with_the_launchs_own_flags_the_hint_is_the_preflights_refusal(tmp_path: Path) -> None:
    """The server_args line gives the flags: a draft-less EAGLE3 launch on a target the log names is the
    preflight's own 'draft path' finding; flags that trigger nothing fall back to the signature's remedy."""
    assert launch_finding({"speculative_algorithm": "EAGLE3", "enable_expert_distribution_metrics": True,
                           "speculative_num_steps": 3}, "0.5.15").startswith("sgl-project/sglang#32105: ")
    assert launch_finding({"speculative_algorithm": "EAGLE3"}, "0.5.17", check="expert metrics") is None
    assert launch_finding(None, "0.5.17") is None


def test_a_runner_built_in_a_cut_traceback_names_its_stage() -> None:
    """sgl-project/sglang#12421's excerpt ends at the line that builds the draft-extend runner."""
    assert stage_of("    self.cuda_graph_runner_for_draft_extend = EAGLEDraftExtendCudaGraphRunner(") == "draft extend"
    assert stage_of("    self.cuda_graph_runner = CudaGraphRunner(self)") == "target decode/verify"
    assert stage_of("    self.draft_cuda_graph_runner = EAGLEDraftCudaGraphRunner(self)") == "draft decode"
    assert stage_of("    self.init_cuda_graphs()") is None


def test_a_cuda_device_assert_in_front_is_no_markdown() -> None:
    """sgl-project/sglang#7139: CUDA's assert quotes its condition in backticks; main took the file for
    prose (inline code) and read nothing."""
    p = parse_path(str(REAL / "p34-eagle3-index-assert-while-serving-0470-issue7139.log"))
    assert p["state"] == "failed" and p["failure"]["kind"] == "exception"


def test_a_workers_reported_error_outranks_its_death() -> None:
    """vllm-project/vllm-ascend#6842: 'Worker failed with error …, please check the stack trace above for
    the root cause' and then the monitor's 'Worker proc VllmWorker-0 died unexpectedly': main said died."""
    f = parse_path(str(VLLM_DIR / "p34-ascend-310p-worker-died-enginecore-process-traceback.log"), fmt=VLLM)["failure"]
    assert f["kind"] == "exception" and "root cause" in f["line"]


def test_the_torch_compile_wrapper_of_every_forward_is_not_the_compile_phase() -> None:
    """intel/llm-scaler#386: an MTP forward's traceback passes compilation/decorators.py's __call__, as
    every forward does; main blamed torch.compile and suggested --enforce-eager."""
    f = parse_path(str(VLLM_DIR / "p34-intel-xpu-qwen35-mtp-enginecore-traceback-middle.log"), fmt=VLLM)["failure"]
    assert f["phase"] != "compile" and "--enforce-eager" not in f["hint"]


def test_a_native_crash_in_nccls_own_code_is_nccl() -> None:
    """sgl-project/sglang#2803: UCX's segfault inside NCCL's uploadProxyOps; main said died."""
    f = parse_path(str(REAL / "h34-nccl-sigsegv-fatal-python-error-deepseek-v3.log"))["failure"]
    assert f["kind"] == "nccl" and "nccl/enqueue.cc" in f["message"] and "native crash" in f["hint"]


def test_a_structured_loggers_records_are_sglangs_when_the_message_is() -> None:
    """ai-dynamo/dynamo#4121: '<time>Z  INFO model_runner.init_device_graphs: Capture cuda graph end.'; main
    read nothing. A dotted exception name in front of its message is no logger location."""
    from eagletui.core.logs.formats.sglang.lines import classify

    p = parse_path(str(REAL / "h34-dynamo-structured-wrapper-capture-end-scheduler-init.log"))
    assert p["state"] == "loading" and "capture_target" in [x["name"] for x in p["phases"]]
    assert not classify("torch.distributed.DistBackendError: NCCL error in: x").prefixed
    assert not classify("2025-11-05T01:56:54Z  INFO dynamo_runtime.worker: started").prefixed


def test_a_clients_openai_request_answered_is_serving(tmp_path: Path) -> None:
    """sgl-project/sglang#14368: cache flushes and a chat completion answered 200, no ready line in the
    excerpt: main said loading. SGLang's own warmup (/get_model_info, /generate) is still no sign of it,
    nor is an access line in a text not known to be SGLang's."""
    p = parse_path(str(REAL / "p34-pd-spec-serving-flush-cache-tp8-issue14368.log"))
    assert p["state"] == "ready"
    warmup = tmp_path / "warmup.log"
    warmup.write_text(
        "[2026-01-01 10:00:00 TP0] Load weight end. type=LlamaForCausalLM, avail mem=60.00 GB\n"
        '[2026-01-01 10:00:05] INFO:     127.0.0.1:40000 - "GET /get_model_info HTTP/1.1" 200 OK\n'
        '[2026-01-01 10:00:06] INFO:     127.0.0.1:40002 - "POST /generate HTTP/1.1" 200 OK\n'
    )
    assert parse_path(str(warmup))["state"] == "loading"
    bare = tmp_path / "access.log"
    bare.write_text('INFO:     10.0.0.7:51000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    assert parse_path(str(bare))["state"] == "unknown"


def test_a_vllm_traceback_pasted_without_indentation_stays_one_traceback() -> None:
    """vllm-project/vllm#14095: a worker's ERROR-level traceback whose frames' source lines lost their
    indentation (``self.qkv_proj = QKVParallelLinear(``); main closed the traceback at the first of them
    and read the log as still loading. A log message is no source line."""
    from eagletui.core.logs.formats.vllm.lines import classify as vclassify

    p = parse_path(str(VLLM_DIR / "p34-v0-worker-traceback-no-indent-llama-attention-init.log"), fmt=VLLM)
    assert p["state"] == "failed" and p["failure"]["kind"] == "exception"
    rec = vclassify("(EngineCore_DP0 pid=1) ERROR 04-27 04:09:36 [core.py:938] Error in preprocessing prompt inputs")
    assert not rec.cont
