"""The simulator's ``/start_profile``/``/stop_profile`` (0.5.23 semantics) and the traces it writes."""

from __future__ import annotations

import gzip
import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest_sim import READY, SPEC_ARGS, SimProc

from eagletui.sim import perf
from eagletui.sim.chrome_trace import FUSED_AR, Step
from eagletui.sim.profiler import Session, SimProfiler


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, msg: str, rank: int | None = None, level: int = 20) -> None:
        self.lines.append(msg)


def _post(base: str, path: str, body: Any = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _kernel_ms(path: Path) -> dict[str, float]:
    """Summed kernel time by category: names as the real traces have them."""
    out = {"communication": 0.0, "gemm": 0.0, "attention": 0.0, "moe": 0.0, "other": 0.0}
    for e in json.load(gzip.open(path))["traceEvents"]:
        if e.get("cat") != "kernel":
            continue
        n = e["name"]
        if "AllReduce" in n or "allreduce" in n or "cross_device_reduce" in n:
            k = "communication"
        elif n.startswith("nvjet") or "gemm" in n:
            k = "gemm"
        elif n in ("_fwd_kernel", "_fwd_grouped_kernel_stage1", "_fwd_kernel_stage2"):
            k = "attention"
        elif "moe" in n:
            k = "moe"
        else:
            k = "other"
        out[k] += e["dur"] / 1000.0
    return out


@pytest.mark.slow
def test_profile_by_stage_writes_rank_traces(tmp_path: Path) -> None:
    args = SPEC_ARGS + ["--sim-shards", "2", "--sim-draft-quality", str(perf.POOR_DRAFT_P), "--ep", "2"]
    with SimProc(args) as sim:
        sim.wait_for(READY)
        status, body = _post(sim.base, "/stop_profile")
        assert status == 500
        req = {"output_dir": str(tmp_path), "num_steps": 2, "profile_by_stage": True, "profile_id": "p1"}
        assert _post(sim.base, "/start_profile", req) == (200, "Start profiling.\n")
        for i in range(3):
            sp = {"max_new_tokens": 16, "ignore_eos": True}
            assert _post(sim.base, "/generate", {"text": f"q{i}", "sampling_params": sp})[0] == 200
        # a profile not by stage starts at once; a second start meanwhile is refused, as SGLang does
        manual = {"output_dir": str(tmp_path / "manual"), "profile_id": "p2"}
        assert _post(sim.base, "/start_profile", manual) == (200, "Start profiling.\n")
        assert _post(sim.base, "/start_profile", {"output_dir": str(tmp_path)})[0] == 500
        assert _post(sim.base, "/stop_profile")[0] == 200
        text = sim.text()
    assert "\nRuntimeError: Profiling is not in progress. Call /start_profile first.\n" in text
    assert "\nRuntimeError: Profiling is already in progress. Call /stop_profile first.\n" in text
    assert re.search(r"\] ERROR:    Exception in ASGI application\n", text)
    tp0 = [ln.split("] ", 1)[1] for ln in text.splitlines() if " TP0 EP0] " in ln and "rofil" in ln]
    assert tp0 == [
        f"Profiling starts for EXTEND. Traces will be saved to: {tmp_path} (with profile id: p1)",
        "Stop profiling-EXTEND...",
        f"Profiling done. Traces are saved to: {tmp_path}",
        f"Profiling starts for DECODE. Traces will be saved to: {tmp_path} (with profile id: p1)",
        "Stop profiling-DECODE...",
        f"Profiling done. Traces are saved to: {tmp_path}",
        f"Profiling starts. Traces will be saved to: {tmp_path / 'manual'} (with profile id: p2)",
        "Stop profiling...",
        f"Profiling done. Traces are saved to: {tmp_path / 'manual'}",
    ]
    assert sorted(p.name for p in (tmp_path / "manual").iterdir())[0] == "p2-TP-0-EP-0.trace.json.gz"
    names = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
    assert names == sorted(
        f"p1-TP-{r}-EP-{r // 4}-{stage}.trace.json.gz" for r in range(8) for stage in ("EXTEND", "DECODE")
    )
    trace = json.load(gzip.open(tmp_path / "p1-TP-0-EP-0-DECODE.trace.json.gz"))
    steps = sorted(
        (e for e in trace["traceEvents"] if e.get("cat") == "gpu_user_annotation"), key=lambda e: e["ts"]
    )
    # SGLang 0.5.23's ranges of two speculative decode batches (as in the real 0.5.17 H200 trace, with
    # 0.5.23's VERIFY label): each batch is draft → verify → draft extend inside scheduler.run_batch
    cycle = ["scheduler.run_batch", "draft", "step[VERIFY", "draft_extend", "copy_result_to_cpu"]
    assert [e["name"].split(" ")[0] for e in steps] == cycle * 2
    assert "verify" not in {e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation"}
    # PCIe host (default): NCCL all-reduce dominates the step
    cats = _kernel_ms(tmp_path / "p1-TP-0-EP-0-DECODE.trace.json.gz")
    assert cats["communication"] > 0.6 * sum(cats.values())
    assert all(cats[k] > 0 for k in cats)


def _one_trace(host: str, fusion: bool, rank: int = 3) -> tuple[dict[str, float], dict[str, Any]]:
    cfg = perf.PerfConfig.from_args(
        {
            "model_path": "moonshotai/Kimi-K2-Instruct",
            "tp_size": 8,
            "speculative_algorithm": "EAGLE3",
            "speculative_draft_model_path": "x",
            "sim_host": host,
            "enable_flashinfer_allreduce_fusion": fusion,
        }
    )
    prof = SimProfiler(cfg, _Log(), tp=8, ep=1)
    parts = perf.spec_parts_ms(cfg, 1, 3.2)
    s = Session(
        output_dir=Path("."), profile_id="x", num_steps=None, by_stage=False, activities=["CPU", "GPU"]
    )
    s.steps.append(Step("DECODE", 1, 4, 0.0, sum(parts.values()), parts))
    trace = prof.trace(s, rank, [0.0, 0.01, 0.02, 0.03, 0.0, 0.0, 0.0, 0.0])
    cats: dict[str, float] = {}
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel":
            cats[e["name"]] = cats.get(e["name"], 0.0) + e["dur"] / 1000.0
    return cats, trace


def test_trace_kernels_follow_the_cost_model() -> None:
    pcie, _ = _one_trace("pcie-rtx6000", False)
    comm = sum(v for k, v in pcie.items() if "AllReduce" in k)
    assert "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)" in pcie
    # rank skew: the fastest rank (0) waits for the slowest (3) inside its all-reduce
    fastest, _ = _one_trace("pcie-rtx6000", False, rank=0)
    assert sum(v for k, v in fastest.items() if "AllReduce" in k) > comm
    assert sum(fastest.values()) == pytest.approx(sum(pcie.values()), rel=0.01)
    fused, _ = _one_trace("pcie-rtx6000", True)
    assert FUSED_AR in fused and fused[FUSED_AR] < comm
    h200, trace = _one_trace("h200-nvlink", False)
    assert any("cross_device_reduce_1stage" in k for k in h200)
    assert sum(v for k, v in h200.items() if "cross_device" in k) < 0.3 * sum(h200.values())
    # every kernel has its launching cpu_op (same External id), as torch writes them, or (CUDA graphs,
    # the default) only the correlation of the cudaGraphLaunch that replayed it, and no op
    ops = {e["args"]["External id"] for e in trace["traceEvents"] if e.get("cat") == "cpu_op"}
    graphs = {
        e["args"]["correlation"]
        for e in trace["traceEvents"]
        if e.get("cat") == "cuda_runtime" and e["name"] == "cudaGraphLaunch"
    }
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert graphs and kernels
    for k in kernels:
        if "External id" in k["args"]:
            assert k["args"]["External id"] in ops
        else:
            assert k["args"]["correlation"] in graphs
