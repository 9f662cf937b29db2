"""The classes issue 34's third held-out set (``q34-*``, read before any fix) found misread.

Each test names the class and the real excerpt that showed it (tests/fixtures/real, tests/fixtures/vllm);
the excerpts themselves are read right by tests/test_real_corpus.py and tests/test_vllm_format.py. Pure
classifier and parse calls: milliseconds.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from eagletui.commands.parse import parse_path, parse_stream
from eagletui.core.logs.formats.sglang import SGLANG
from eagletui.core.logs.formats.sglang.failures import match_failure as sglang_failure
from eagletui.core.logs.formats.vllm import VLLM
from eagletui.core.logs.formats.vllm.failures import match_failure as vllm_failure
from eagletui.core.logs.formats.vllm.lines import classify
from eagletui.core.logs.outer_prefix import learn, tokens

FIX = Path(__file__).parent / "fixtures"


def _parse_text(text: str, fmt: Any) -> dict[str, Any]:
    return parse_stream(io.BytesIO(text.encode("utf-8")), fmt=fmt)


def test_the_cuda_drivers_out_of_memory_is_an_oom_in_both_formats() -> None:
    """``RuntimeError: CUDA driver error: out of memory`` (a cuMem* call outside torch's allocator: vLLM's
    GPTQ-Marlin repack, noonghunna/club-3090#60) was read as a plain exception."""
    line = "RuntimeError: CUDA driver error: out of memory"
    assert vllm_failure(line) == ("oom", 90, "cuda_oom")
    assert sglang_failure(line) == ("oom", 90, "cuda_oom")
    got = parse_path(str(FIX / "vllm" / "q34-oom-cuda-driver-marlin-repack-enginecore-club3090-60.log"), fmt=VLLM)
    assert (got["state"], got["failure"]["kind"]) == ("failed", "oom")
    # a CUDA kernel fault stays an exception: only the memory wording is an OOM
    assert vllm_failure("RuntimeError: CUDA error: an illegal memory access was encountered")[0] == "exception"


def test_v0s_memory_profile_and_block_count_lines_are_the_kv_cache_phase() -> None:
    """vLLM V0 (≤ 0.10) sizes the KV cache with ``Memory profiling takes …`` and logs
    ``# cuda blocks: N, # CPU blocks: M`` (the platform's device name, ``executor_base.py``): no phase
    was read from them (a k9s pane of a 0.8 pod, kubernetes-sigs/gateway-api-inference-extension#550)."""
    prof = classify("INFO 03-21 20:15:45 [worker.py:267] Memory profiling takes 34.26 seconds")
    blocks = classify("INFO 03-21 20:15:46 [executor_base.py:111] # cuda blocks: 7191, # CPU blocks: 512")
    rocm = classify("INFO 03-21 20:15:46 [executor_base.py:111] # rocm blocks: 7191, # CPU blocks: 512")
    assert (prof.tag, blocks.tag, rocm.tag) == ("kv_alloc", "pool_end", "pool_end")
    got = parse_path(str(FIX / "vllm" / "q34-loading-k9s-box-border-v0-memory-profiling-gateway-api-550.log"), fmt=VLLM)
    kv = next(p for p in got["phases"] if p["name"] == "kv_cache")
    # from the compile's end (20:15:44) to the block count (20:15:46): never longer than the lines show
    assert (kv["start"], kv["end"], kv["seconds"]) == ("03-21 20:15:44", "03-21 20:15:46", 2.0)


def test_the_engine_cores_own_traceback_outranks_the_api_servers_engine_dead_error() -> None:
    """The API server's EngineDeadError printed before the engine core's ``Process EngineCore:``
    traceback (two processes' lines interleave, noonghunna/club-3090#58): the core raised, an exception,
    not a silent death. EngineDeadError alone (the core killed, no traceback of its own) stays a death."""
    path = FIX / "vllm" / "q34-engine-dead-busy-loop-traceback-club3090-58.log"
    got = parse_path(str(path), fmt=VLLM)
    assert (got["state"], got["failure"]["kind"]) == ("failed", "exception")
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert "EngineDeadError" in first
    alone = _parse_text(first + "\n", VLLM)
    assert (alone["state"], alone["failure"]["kind"]) == ("failed", "died")


def test_a_log_viewers_pane_border_is_learned_as_the_outer_prefix() -> None:
    """``│ │ `` down the left of every line (a k8s/TUI pane, sgl-project/sglang#6523) names nothing, so it
    was not taken for a wrapper's prefix and a tokenizer traceback behind it read as unknown."""
    assert learn([tokens("│ │   "), tokens("│ │     "), tokens("│ │   ")], 3) is not None
    assert learn([tokens("│ "), tokens("│ ")], 2) is not None
    # punctuation that is no pane's border is still no wrapper
    assert learn([tokens("- "), tokens("- "), tokens("- ")], 3) is None
    got = parse_path(str(FIX / "real" / "q34-exception-tokenizer-load-boxed-traceback-devstral-050rc2-issue6523.log"))
    assert (got["state"], got["failure"]["kind"]) == ("failed", "exception")
    # a real SGLang crash framed the same way reads as it does bare
    bare = (FIX / "real" / "q34-exception-capture-b200-llama-forward-issue8826.log").read_text(encoding="utf-8")
    framed = "".join("│ │ " + line for line in bare.splitlines(keepends=True))
    want, wrapped = _parse_text(bare, SGLANG), _parse_text(framed, SGLANG)
    for key in ("state", "phase", "phases"):
        assert wrapped[key] == want[key], key
    # the key line is shown whole, the border in it; the rest of the failure is the same
    assert {k: v for k, v in wrapped["failure"].items() if k != "line"} == {
        k: v for k, v in want["failure"].items() if k != "line"
    }
    assert wrapped["failure"]["line"] == "│ │ " + want["failure"]["line"]


def test_without_format_a_file_of_vllm_records_is_read_as_vllm_though_sglang_knows_its_failure(
    capsys: Any,
) -> None:
    """SGLang is the default and knows torch's OOM wordings: a vLLM excerpt of ``(EngineCore pid=N) ERROR
    MM-DD …`` records around one was read as a failed SGLang server with SGLang's flags in its hint
    (noonghunna/club-3090#16). Its lines are vLLM's records and none is SGLang's: vLLM reads it. A file
    with one SGLang record of its own stays SGLang's, and so does a bare traceback."""
    from eagletui.commands.parse import main as parse_main

    vllm_oom = FIX / "vllm" / "q34-oom-step-enginecore-then-asyncllm-output-handler-club3090-16.log"
    sglang_tb = FIX / "real" / "q34-exception-capture-b200-llama-forward-issue8826.log"
    sglang_with_vllm_lines = FIX / "real" / "ready-docs-ci-2024-11-vllm-weightutils.log"
    assert parse_main(["--json", str(vllm_oom), str(sglang_tb), str(sglang_with_vllm_lines)]) == 0
    out = capsys.readouterr()
    oom, tb, ready = json.loads(out.out)
    assert oom["failure"]["kind"] == "oom" and "--gpu-memory-utilization" in oom["failure"]["hint"]
    assert "--mem-fraction-static" not in oom["failure"]["hint"]
    assert tb["failure"]["kind"] == "exception" and ready["state"] == "ready"
    assert out.err.count("read as vllm") == 1 and vllm_oom.name in out.err


def test_a_pane_framed_on_both_sides_reads_as_the_bare_log() -> None:
    """k9s frames a pod's log on both sides and pads each line to the pane's width (``│ INFO … text      │``,
    kubernetes-sigs/gateway-api-inference-extension#550): the right border is cut off as the left one is,
    so a failure's message is the exception's, not the padding and the stroke; the line is shown whole."""
    for name, fmt in (
        ("vllm/q34-oom-cuda-driver-marlin-repack-enginecore-club3090-60.log", VLLM),
        ("real/q34-exception-capture-no-kernel-image-sm75-controller-issue748.log", SGLANG),
        ("real/q34-ready-moore-threads-indented-serving-pr10023.log", SGLANG),
    ):
        bare = (FIX / name).read_text(encoding="utf-8")
        framed = "".join("│ " + line.ljust(200) + " │\n" for line in bare.splitlines())
        want, got = _parse_text(bare, fmt), _parse_text(framed, fmt)
        for key in ("state", "phase", "phases", "decode"):
            assert got[key] == want[key], (name, key)
        if want["failure"] is not None:
            assert got["failure"]["message"] == want["failure"]["message"], name
            assert got["failure"]["line"].startswith("│ ") and got["failure"]["line"].endswith("│"), name
