"""Issue 25: the diagnoses say why, with the line or measurement they rest on, on real excerpts first.

Real text: ``tests/fixtures/real-diagnosis/`` (README there: a 4 × L4 PCIe SGLang 0.4.3 launch, the topology
matrices of a 4 × L40S PCIe host, a partly-NVLinked 4 × A100 host and the 2 × H200 NVLink host with their
NCCL lines), the real sglang 0.5.17 runs of ``real-sglang-0.5.17-run1`` and the public corpus of
``tests/fixtures/real``. Synthetic lines only where no real one exists (their wording is the wheel's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagletui.core import events as ev
from eagletui.core.diagnosis.fold import Diagnoser, Diagnosis
from eagletui.core.host.topology import parse_topo
from eagletui.core.logs.formats.sglang import SGLANG
from eagletui.core.logs.formats.sglang.advice import advice, capture_flags
from eagletui.core.phases.interpreter import LogInterpreter

HERE = Path(__file__).parent / "fixtures"
REAL = HERE / "real-diagnosis"
RUN1 = HERE / "real-sglang-0.5.17-run1" / "logs"


def _events(text: str, bulk: bool) -> list[Any]:
    it = LogInterpreter(launch=1, emit_lines=not bulk)
    out = it.feed_bulk(text) if bulk else it.feed(text)
    return [*out, *it.flush()]


def diagnose(
    text: str,
    *,
    host: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    before: list[ev.Event] = (),  # type: ignore[assignment]
    after: list[ev.Event] = (),  # type: ignore[assignment]
    bulk: bool = False,
) -> list[Diagnosis]:
    d = Diagnoser()
    if host:
        d.add_one(ev.HostFacts(facts=host))
    d.add_one(ev.LaunchStarted(launch=1, target="t", config={"env": env or {}}))
    d.add(before)
    d.add(_events(text, bulk))
    d.add(after)
    return d.diagnoses(1)


def kinds(diags: list[Diagnosis]) -> dict[str, Diagnosis]:
    return {d.kind: d for d in diags}


# ------------------------------------------------------------------------------ all-reduce verdict


def test_pcie_launch_says_nccl_over_pcie_with_custom_allreduce_off_from_the_real_log() -> None:
    text = (REAL / "pcie-l4x4-customar-0434.log").read_text()
    for bulk in (False, True):
        ar = kinds(diagnose(text, bulk=bulk))["allreduce"]
        assert "tp 4" in ar.text and "NCCL" in ar.text and "PCIe" in ar.text
        assert "Custom all-reduce is off: not supported on more than two PCIe-only GPUs." in ar.text
        assert "Custom allreduce is disabled because it's not supported" in ar.evidence
        assert "nccl" in ar.evidence.lower() and "2.21.5" in ar.evidence
        assert ar.level == "warn" and ar.data["custom"] is False and ar.data["custom_reason"] == "pcie"
        # alternatives: NCCL tuning and a smaller tp; no 0.5.21+ variable and no unchecked flag for 0.4.x
        assert "NCCL_ALGO" in ar.hint and "tp 2" in ar.hint
        assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE" not in ar.hint
        assert "fusion" not in ar.hint


def test_pcie_topology_from_a_real_matrix_names_the_worst_path() -> None:
    topo = parse_topo((REAL / "topo-l40s-x4-pcie.txt").read_text())
    assert topo.gpus == [0, 1, 2, 3] and topo.fabric() == "pcie" and topo.worst_pcie() == "SYS"
    assert topo.fabric([0, 1]) == "pcie" and topo.worst_pcie([0, 1]) == "NODE"
    text = (REAL / "pcie-l4x4-customar-0434.log").read_text()
    ar = kinds(diagnose(text, host={"topology": topo.to_json()}))["allreduce"]
    assert ar.data["fabric"] == "pcie"
    assert "SYS paths" in ar.text
    assert "no NVLink between the 4 GPUs" in ar.evidence and "(preflight)" in ar.evidence


def test_partial_nvlink_topology_and_its_real_nccl_lines() -> None:
    topo = parse_topo((REAL / "topo-a100-x4-partial-nvlink.txt").read_text())
    assert topo.fabric() == "partial_nvlink" and topo.fabric([0, 1]) == "nvlink"
    nccl = (REAL / "nccl-a100-x4-partial-nvlink.log").read_text()
    args = "[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', tp_size=4, disable_custom_all_reduce=False)\n"
    warn = (
        "[2026-01-01 00:00:01 TP0] CustomAllreduce is disabled because it's not supported on more than two "
        "PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.\n"
    )
    ar = kinds(diagnose(args + warn + nccl, host={"topology": topo.to_json()}))["allreduce"]
    assert ar.data["fabric"] == "partial_nvlink"
    assert "NVLink between some pairs" in ar.text
    assert "SHM transport" in ar.text  # NCCL's own choice across the pairs, from its INFO lines
    assert "SHM" in ar.data["nccl_transports"] and "P2P" in ar.data["nccl_transports"]


def test_nvlink_host_uses_the_custom_allreduce_with_real_h200_nccl_lines() -> None:
    topo = parse_topo((REAL / "topo-h200x2-nvlink.txt").read_text())
    assert topo.fabric() == "nvlink" and topo.link(0, 1) == "NV18"
    nccl = (REAL / "nccl-h200x2-nvlink.log").read_text()
    args = "[2026-12-01 08:11:37] server_args=ServerArgs(model_path='m', tp_size=2)\n"
    ready = "[2026-12-01 08:12:44] The server is fired up and ready to roll!\n"
    for version_line in ("", "[2026-12-01 08:11:40 TP0] Init torch distributed begin.\n"):
        ar = kinds(diagnose(args + version_line + nccl + ready, host={"topology": topo.to_json()}))[
            "allreduce"
        ]
        assert "the custom all-reduce over NVLink (P2P)" in ar.text
        assert "nothing in the log disabled the custom all-reduce" in ar.evidence
        assert "NCCL 2.28.9" in ar.evidence and "P2P/CUMEM" in ar.evidence
        assert "--enable-nccl-nvls" in ar.hint and ar.level == "info"


def test_single_gpu_has_no_allreduce_line() -> None:
    text = (RUN1 / "20261201-113143-L1-4ed029.log").read_text()
    assert "allreduce" not in kinds(diagnose(text))


def test_communication_share_from_a_step_profile_goes_beside_the_verdict() -> None:
    text = (REAL / "pcie-l4x4-customar-0434.log").read_text()
    prof = ev.ProfileCaptured(
        launch=1,
        summary={"categories": {"communication": {"ms": 24.0}, "gemm": {"ms": 4.0}, "other": {"ms": 2.0}}},
    )
    ar = kinds(diagnose(text, after=[prof]))["allreduce"]
    assert "Communication is 80 % of a decode step." in ar.text and "step profile" in ar.evidence


def test_npu_launch_names_no_cuda_alternatives() -> None:
    text = (HERE / "real" / "ready-ascend-dp-ep16-mtp-serving.log").read_text()
    ar = kinds(diagnose(text, bulk=True))["allreduce"]
    assert "npu collective library" in ar.text and "NCCL" not in ar.text and ar.hint == ""


# ------------------------------------------------------------------------------ launch diagnosis


def test_real_49_shard_multithread_load_is_timed_by_its_bar() -> None:
    text = (HERE / "real" / "died-at-capture-start-0516.log").read_text()
    wl = kinds(diagnose(text, bulk=True))["weight_load"]
    assert "49 shards in 10:07 (12.4 s per shard)" in wl.text and "8 loader threads" in wl.text
    assert "shard bar 49/49 [10:07] (log)" in wl.evidence and "Multi-thread loading shards" in wl.evidence


def _slow_load_log(bar: str, shards: int, seconds: int, end: float, version_line: str = "") -> str:
    mm, ss = divmod(seconds, 60)
    return (
        "[2026-12-01 08:00:00] server_args=ServerArgs(model_path='/ckpt', tp_size=8, "
        "model_loader_extra_config='{}', weight_loader_prefetch_checkpoints=False)\n"
        + version_line
        + "[2026-12-01 08:00:01 TP0] Load weight begin. avail mem=90.00 GB\n"
        + f"{bar}:   0% Completed | 0/{shards} [00:00<?, ?it/s]\n"
        + f"{bar}: 100% Completed | {shards}/{shards} [{mm:02d}:{ss:02d}<00:00, 1.00s/it]\n"
        + f"[2026-12-01 08:30:00 TP0] Load weight end. elapsed={end:.2f} s, type=DeepseekV3ForCausalLM, "
        "avail mem=10.00 GB, mem usage=80.00 GB.\n"
    )


def test_slow_single_thread_load_names_the_read_rate_and_the_loader_flag() -> None:
    text = _slow_load_log("Loading safetensors checkpoint shards", 64, 1486, 1582.0)
    host = {
        "checkpoint": {"bytes": 1_000_000_000_000, "shards": 64, "cached": 0.0},
        "storage": {"mbps": 3000.0, "cached": False},
        "server": {"version": "0.5.17"},
    }
    d = kinds(diagnose(text, host=host))
    wl = d["weight_load"]
    assert wl.level == "warn"
    assert "64 shards in 24:46" in wl.text and "1.0 TB at 672.9 MB/s" in wl.text
    assert "22 % of what the storage gives, loader-bound" in wl.text and "one loader thread" in wl.text
    assert "checkpoint index 1.0 TB (preflight)" in wl.evidence and "read probe 3.0 GB/s" in wl.evidence
    assert '--model-loader-extra-config \'{"enable_multithread_load": true, "num_threads": 16}\'' in wl.hint
    tail = d["load_tail"]
    assert "1:36 more until Load weight end" in tail.text and tail.data["tail_s"] == pytest.approx(96.0)
    cache = d["page_cache"]
    assert cache.text.startswith("cold start: 0 %")


def test_storage_bound_multithread_load_says_so() -> None:
    text = _slow_load_log("Multi-thread loading shards", 64, 400, 410.0)
    host = {"checkpoint": {"bytes": 1_000_000_000_000, "shards": 64}, "storage": {"mbps": 2600.0}}
    wl = kinds(diagnose(text, host=host))["weight_load"]
    assert "storage-bound" in wl.text and "8 loader threads" in wl.text
    assert "the storage is the limit" in wl.hint and "--model-loader-extra-config" not in wl.hint


def test_prefetch_fallback_warning_of_0517_gets_the_prefetch_hint() -> None:
    warn = (
        "[2026-12-01 08:00:01 TP0] --weight-loader-prefetch-checkpoints is enabled; falling back to "
        "single-threaded weight loading to avoid I/O oversubscription with the prefetch threads. Set "
        "enable_multithread_load=true in --model-loader-extra-config to keep multi-threaded loading.\n"
    )
    text = _slow_load_log("Loading safetensors checkpoint shards", 64, 600, 620.0, version_line=warn)
    wl = kinds(diagnose(text, host={"server": {"version": "0.5.17"}}))["weight_load"]
    assert "checkpoint prefetch forced one thread" in wl.text and wl.level == "warn"
    assert "--weight-loader-prefetch-checkpoints" in wl.hint and "enable_multithread_load" in wl.hint


def test_warm_page_cache_is_said_with_its_measurement() -> None:
    text = _slow_load_log("Multi-thread loading shards", 4, 40, 41.0)
    host = {"checkpoint": {"bytes": 2_000_000_000, "cached": 0.97, "sampled_bytes": 2_000_000_000}}
    cache = kinds(diagnose(text, host=host))["page_cache"]
    assert cache.text.startswith("warm start: 97 %") and "mincore over 2.0 GB" in cache.evidence


def _decode(running: int, graph: bool, accept: float = 3.1) -> str:
    return (
        f"[2026-12-01 09:00:00 TP0] Decode batch, #running-req: {running}, #token: 900, token usage: 0.01, "
        f"accept len: {accept:.2f}, accept rate: 0.70, cuda graph: {graph}, gen throughput (token/s): 400.00, "
        "#queue-req: 0\n"
    )


def test_batches_above_the_largest_captured_size_run_eager_in_both_paths() -> None:
    head = (RUN1 / "20261201-113143-L1-4ed029.log").read_text()  # real 0.5.17 launch: bs=[1 … 8]
    serving = "".join(_decode(4, True) for _ in range(30)) + "".join(_decode(12, False) for _ in range(7))
    for bulk in (False, True):
        d = kinds(diagnose(head + serving, bulk=bulk))
        eager = d["cuda_graph_eager"]
        assert "7 of" in eager.text and "running batch 12, above the largest captured size 8" in eager.text
        assert "'cuda graph: False'" in eager.evidence
        assert "--cuda-graph-max-bs-decode 16" in eager.hint and "more capture per launch" in eager.hint
        cap = d["cuda_graph_capture"]
        assert "target 8 sizes (bs 1–8)" in cap.text


def test_capture_flags_follow_the_version() -> None:
    assert capture_flags("0.5.13") == ("--cuda-graph-max-bs", "--cuda-graph-bs")
    assert capture_flags("0.5.14")[0] == "--cuda-graph-max-bs-decode"
    assert capture_flags("0.5.23") == ("--cuda-graph-max-bs-decode", "--cuda-graph-bs-decode")
    assert "0.5.14+" in capture_flags(None)[0]
    pcie = {"fabric": "pcie", "tp": 8, "custom_on": False, "fusion_on": False}
    assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1" in advice("allreduce_alternatives", "0.5.21", pcie)
    assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE" not in advice("allreduce_alternatives", "0.5.20", pcie)
    assert "--flashinfer-allreduce-fusion-backend auto" in advice("allreduce_alternatives", "0.5.17", pcie)
    assert "--enable-flashinfer-allreduce-fusion" in advice("allreduce_alternatives", "0.5.13", pcie)


# ------------------------------------------------------------------------------ draft fit


def test_real_random_weight_draft_gets_accept_one_with_its_causes() -> None:
    text = (RUN1 / "20261201-113648-L1-25eac0.log").read_text()
    for bulk in (False, True):
        one = kinds(diagnose(text, bulk=bulk))["draft_accept_one"]
        assert one.level == "warn" and one.text.startswith("accept 1.00: the drafter is not working")
        assert "over 12 Decode lines (log)" in one.evidence
        assert "--speculative-algorithm EAGLE3" in one.hint


def _bench(
    accept: float, hist: list[int] | None = None, by: dict[str, Any] | None = None
) -> ev.BenchmarkResult:
    kw: dict[str, Any] = {
        "bench": 1,
        "launch": 1,
        "output_throughput": 100.0,
        "accept_length": accept,
        "requests": 24,
    }
    if hist is not None:
        kw["accept"] = {"histogram": hist}
    if by is not None:
        kw["accept_by"] = by
    fields = ev.BenchmarkResult.__dataclass_fields__
    missing = [k for k in kw if k not in fields]
    if missing:
        pytest.skip(f"BenchmarkResult has no {missing} (issue 19's accept detail not merged yet)")
    return ev.BenchmarkResult(**kw)


EAGLE_ARGS = (
    "[2026-12-01 08:00:00] server_args=ServerArgs(model_path='/t', tp_size=1, speculative_algorithm='EAGLE', "
    "speculative_draft_model_path='/d', speculative_num_steps=5, speculative_eagle_topk=1, "
    "speculative_num_draft_tokens=6)\n"
)


def test_eagle3_draft_run_as_eagle_is_named() -> None:
    host = {
        "models": {
            "target": {"arch": "LlamaForCausalLM", "vocab": 128256, "hidden": 4096},
            "draft": {"arch": "LlamaForCausalLMEagle3", "vocab": 128256, "hidden": 4096},
        }
    }
    one = kinds(diagnose(EAGLE_ARGS, host=host, after=[_bench(1.01, hist=[990, 10])]))["draft_accept_one"]
    assert "an EAGLE-3 draft (LlamaForCausalLMEagle3) runs as --speculative-algorithm EAGLE" in one.text
    assert "accept 1.01 over 24 requests (benchmark)" in one.evidence
    assert "first draft token accepted in 1.0 %" in one.evidence


def test_vocab_mismatch_is_named() -> None:
    host = {
        "models": {"target": {"vocab": 151936}, "draft": {"arch": "LlamaForCausalLMEagle3", "vocab": 32000}}
    }
    args = EAGLE_ARGS.replace("'EAGLE'", "'EAGLE3'")
    one = kinds(diagnose(args, host=host, after=[_bench(1.0)]))["draft_accept_one"]
    assert "the vocabularies differ (target 151936, draft 32000)" in one.text


def test_positions_beyond_what_acceptance_supports() -> None:
    # 1000 verifies: 300 kept nothing, 450 one token, 200 two, 40 three, 8 four, 2 five
    hist = [300, 450, 200, 40, 8, 2]
    pos = kinds(diagnose(EAGLE_ARGS, after=[_bench(1.99, hist=hist)]))["draft_positions"]
    assert "70% 25% 5% 1% 0%" in pos.text and "position 3 and deeper" in pos.text
    assert "--speculative-num-steps 2" in pos.hint and pos.level == "warn"


def test_accept_falls_past_the_draft_context() -> None:
    host = {"models": {"draft": {"arch": "LlamaForCausalLMEagle3", "max_position": 2048}}}
    by = {
        "prompt_len": [
            {"lo": 0, "hi": 1024, "accept": 3.2, "n": 10},
            {"lo": 1024, "hi": 2048, "accept": 3.0, "n": 8},
            {"lo": 2048, "hi": 8192, "accept": 1.4, "n": 6},
        ],
        "category": {"chat": {"accept": 3.3, "n": 12}, "long": {"accept": 1.5, "n": 12}},
    }
    d = kinds(diagnose(EAGLE_ARGS, host=host, after=[_bench(2.6, by=by)]))
    ctx = d["draft_context"]
    assert "accept 3.11 for prompts within the draft's 2048 positions, 1.40 past them" in ctx.text
    assert "--speculative-draft-window-size" in ctx.hint
    cat = d["draft_by_category"]
    assert "chat 3.30 (n 12), long 1.50 (n 12)" in cat.text and "fits chat best and long worst" in cat.text


def test_bare_prompts_get_the_prompt_format_note() -> None:
    pf = kinds(diagnose(EAGLE_ARGS, after=[_bench(1.6)]))["prompt_format"]
    assert "bare prompts" in pf.text and "--chat-template" in pf.hint


# ------------------------------------------------------------------------------ adaptive


def test_adaptive_steps_over_time_and_a_collapse() -> None:
    args = EAGLE_ARGS.replace(
        "speculative_num_draft_tokens=6)", "speculative_num_draft_tokens=6, speculative_adaptive=True)"
    )
    init = "[2026-12-01 08:01:00 TP0] AdaptiveSpeculativeParams initialized: steps=5, candidate_steps=[1, 3, 5, 7]\n"
    fast = "".join(
        f"[2026-12-01 08:02:{i:02d} TP0] Decode batch, #running-req: 8, #token: 9, token usage: 0.01, accept len: "
        "3.00, accept rate: 0.50, cuda graph: True, gen throughput (token/s): 800.00, #queue-req: 0\n"
        for i in range(10)
    )
    change = "[2026-12-01 08:02:30 TP0] Adaptive spec params updated: steps 5 -> 1 (ema_accept_len=0.42)\n"
    slow = fast.replace("800.00", "200.00").replace("08:02:", "08:03:")
    for bulk in (False, True):
        d = kinds(diagnose(args + init + fast + change + slow, bulk=bulk))
        steps = d["adaptive_steps"]
        assert "started at steps 5; 5 → 1 at running batch 8" in steps.text and "[1, 3, 5, 7]" in steps.text
        col = d["adaptive_collapse"]
        assert "from steps 5 to 1" in col.text and "100.0 → 25.0 tok/s per request" in col.text
        assert "--speculative-adaptive-config" in col.hint


# ------------------------------------------------------------------------------ the notes themselves


def test_notes_read_the_wheels_wording() -> None:
    def note(msg: str) -> list[Any]:
        return SGLANG.notes(SGLANG.classify("[2026-12-01 08:00:00 TP0] " + msg))

    assert note(
        "CustomAllReduceV2 is disabled because your platform lacks GPU P2P capability or P2P test failed."
    )[0][2] == {
        "on": False,
        "reason": "no_p2p",
        "impl": "CustomAllReduceV2",
    }
    assert (
        note("CustomAllreduce is disabled because this process group spans across nodes.")[0][2]["reason"]
        == "multi_node"
    )
    on = note(
        "FlashInfer AllReduce Fusion enabled and workspace initialized: backend=trtllm, rank=0, world_size=8, "
        "max_token_num=2048, hidden_dim=7168"
    )
    assert on[0][:2] == ("allreduce", "fusion") and on[0][2]["backend"] == "trtllm"
    assert note("Decode batch, #running-req: 1") == []


def test_diagnoses_travel_in_parse_json(tmp_path: Path) -> None:
    from eagletui.commands.parse import parse_path, render

    s = parse_path(str(REAL / "pcie-l4x4-customar-0434.log"))
    assert s["schema"] == 4
    row = next(d for d in s["diagnosis"] if d["kind"] == "allreduce")
    assert set(row) == {"kind", "level", "text", "evidence", "hint", "source", "launch", "data"}
    json.dumps(s)
    text = render("x.log", s)
    assert "why: ⚠ decode all-reduce at tp 4: " in text and "  from: " in text and "  hint: " in text


def test_hostile_notes_and_facts_do_not_break_the_fold() -> None:
    d = Diagnoser()
    d.add_one(
        ev.HostFacts(
            facts={"checkpoint": "x", "storage": [1], "topology": {"links": {"a-b": 3}}, "models": 7}
        )
    )
    d.add_one(ev.LaunchDetected(launch=1, facts={"tp": 4, "spec_algorithm": "EAGLE3"}, server="sglang"))
    for topic, key, value in (
        ("allreduce", "custom", "off"),
        ("load", "bar", {"phase": "load_target", "done": "x", "total": None, "elapsed": float("nan")}),
        ("capture", "sizes", {"bs": ["a", -1, None]}),
        ("adaptive", "update", {"from": None, "to": [], "ema": "bad"}),
        ("nccl", "summary", {"transports": "no", "env": 5}),
    ):
        d.add_one(ev.LaunchNote(launch=1, topic=topic, key=key, value=value))
    d.add_one(ev.DecodeStats(launch=1, gen_throughput=float("inf"), running_req=-3, cuda_graph=False))
    out = d.diagnoses(1)
    assert all(isinstance(x, Diagnosis) for x in out)
    json.dumps([x.to_json() for x in out])


def test_a_format_that_reads_no_allreduce_lines_gets_no_verdict_from_silence() -> None:
    """vLLM's format reads no all-reduce lines: a tp>1 vLLM log gets no "nothing disabled it" verdict."""
    from eagletui.core.logs.registry import get_format

    logs = sorted((HERE / "vllm").glob("*.log"))
    assert logs
    for p in logs:
        it = LogInterpreter(launch=1, emit_lines=False, fmt=get_format("vllm"))
        d = Diagnoser()
        d.add(it.feed_bulk(p.read_text(errors="replace")) + it.flush())
        assert all(x.kind != "allreduce" for x in d.diagnoses(1)), p.name


def test_no_collapse_is_judged_across_a_change_of_load() -> None:
    """Real (device.sh adaptive, 2026-12-02, the H200): a swap at c=1, then the benchmark moved to c=16;
    the decode lines after it ran 16 requests at a lower speed each, and eagletui called that a collapse
    (931.4 → 24.6 tok/s per request) although the load, not the tier, had changed."""
    args = EAGLE_ARGS.replace(
        "speculative_num_draft_tokens=6)", "speculative_num_draft_tokens=6, speculative_adaptive=True)"
    )
    one = "".join(
        f"[2026-12-01 08:02:{i:02d} TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.01, accept len: "
        "8.00, accept rate: 1.00, cuda graph: True, gen throughput (token/s): 931.40, #queue-req: 0\n"
        for i in range(10)
    )
    change = "[2026-12-01 08:02:30 TP0] Adaptive spec params updated: steps 1 -> 3 (ema_accept_len=2.9)\n"
    sixteen = one.replace("#running-req: 1,", "#running-req: 16,").replace("931.40", "394.00").replace("08:02:", "08:03:")
    d = kinds(diagnose(args + one + change + sixteen))
    assert "adaptive_steps" in d and "adaptive_collapse" not in d

