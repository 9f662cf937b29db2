"""A speculative decode trace read as SGLang runs it: cycles of draft + verify + draft extend, per cycle
and per part, prefill kept out, CUDA-graph-replayed kernels judged by their names.

The main fixture is the real DECODE trace a real SGLang 0.5.17 server wrote on an H200 for
``eagletui trace --capture --steps 5`` (tests/fixtures/traces/README.md): 5 decode cycles, 2 prefill batches
(with their own draft extends), triton attention replayed through ``cudaGraphLaunch``. eagletui at main
8b93f31 read it as "14 steps" with attention in "other" (the recorded report beside it). The simulator's
traces are held to the same structure, with and without CUDA graphs.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from eagletui.commands.trace import main as trace_main
from eagletui.profiler import summarize_file
from eagletui.profiler.categories import Category, by_kernel_name
from eagletui.profiler.cycles import group, outermost, stage_of
from eagletui.profiler.summary import step_breakdown, summarize_events
from eagletui.sim import perf
from eagletui.sim.chrome_trace import Step
from eagletui.sim.profiler import Session, SimProfiler

TRACES = Path(__file__).resolve().parent / "fixtures" / "traces"
REAL = TRACES / "eagle3-graphs-TP-0-DECODE.trace.json.gz"
OLD_REPORT = TRACES / "eagle3-graphs-main-8b93f31-report.json"
TRITON_ATTENTION = ("_fwd_kernel", "_fwd_grouped_kernel_stage1", "_fwd_kernel_stage2")


def _events(path: Path) -> list[dict]:
    return json.load(gzip.open(path))["traceEvents"]


def test_the_real_trace_holds_five_cycles_and_two_prefills() -> None:
    r = summarize_file(REAL)
    old = json.loads(OLD_REPORT.read_text())["ranks"][0]
    assert len(old["steps"]) == 14  # the misreading: draft extends and prefills counted, drafts ignored
    assert [c.complete for c in r.cycles] == [True] * 5 and {c.kind for c in r.cycles} == {"spec"}
    assert [c.bs for c in r.cycles] == [1, 3, 3, 3, 3]
    for c in r.cycles:
        assert [p.stage for p in c.parts if p.stage != "between"] == ["draft", "verify", "draft_extend"]
    assert len(r.prefill) == 2
    assert [p.stage for p in r.prefill[0].parts if p.stage != "between"] == ["prefill", "draft_extend"]
    # every kernel is somewhere: the cycles, the prefills or outside any stage
    decode = sum(c.kernel_ms for c in r.cycles)
    prefill = sum(p.kernel_ms for p in r.prefill)
    assert decode + prefill + r.outside_ms == pytest.approx(r.kernel_ms, rel=1e-9)
    assert prefill > 1.0 and decode < 0.8 * r.kernel_ms
    d = r.to_json()["decode"]
    assert d["cycles"] == 5 and d["partial"] == 0 and d["kind"] == "spec" and d["batch_sizes"] == [1, 3]
    # per cycle = what the five cycles add up to, divided by five (prefill out)
    assert d["kernel_ms_per_cycle"] == pytest.approx(decode / 5, abs=1e-3)
    assert set(d["parts"]) >= {"draft", "verify", "draft_extend"}
    assert d["parts"]["verify"]["count"] == 5
    assert sum(p["kernel_ms"] for p in d["parts"].values()) == pytest.approx(decode / 5, abs=2e-3)
    # steps: every outermost stage range, drafts included, the draft's nested EXTEND forward not
    assert [s["stage"] for s in r.to_json()["steps"]].count("draft") == 5
    assert len(r.to_json()["steps"]) == 19


def test_graph_replayed_triton_attention_is_attention() -> None:
    """Under CUDA graphs the triton attention kernels have no launching op (cudaGraphLaunch replays the
    forward); their own names say attention."""
    events = _events(REAL)
    graph = {e["args"]["correlation"] for e in events if e.get("name") == "cudaGraphLaunch"}
    replayed = [e for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in graph]
    attn_replayed = [e for e in replayed if e["name"] in TRITON_ATTENTION]
    assert attn_replayed and all("External id" not in e["args"] for e in attn_replayed)
    r = summarize_file(REAL)
    assert r.graph_kernels == len(replayed)
    cats = {name: cat for name, cat, _ms, _n in r.top_kernels}
    assert cats["_fwd_kernel"] == "attention"
    attention_ms = sum(e["dur"] for e in events if e.get("cat") == "kernel" and e["name"] in TRITON_ATTENTION)
    # all of them, plus the eager kernels their attention ops launched (KV stores, index building)
    assert r.ms("attention") >= attention_ms / 1000.0 - 1e-9
    assert all(by_kernel_name(n) is Category.ATTENTION for n in TRITON_ATTENTION)
    old = json.loads(OLD_REPORT.read_text())["ranks"][0]["categories"]["attention"]["ms"]
    assert old < attention_ms / 1000.0 / 2  # main left most of them in "other"
    per = r.per_cycle()
    assert per is not None and per["attention"] > 0.1  # was 0.0 in verify on main
    verify = r.parts_json()["verify"]["categories"]
    assert verify["attention"] > 0.05


def test_text_and_json_report_per_cycle(capsys: pytest.CaptureFixture[str]) -> None:
    assert trace_main([str(REAL)]) == 0
    out = capsys.readouterr().out
    assert "5 decode cycles (draft + verify + draft extend)" in out
    assert "kept out: 2 prefill batch(es)" in out
    assert "14 steps" not in out
    for part in ("draft", "verify", "draft extend"):
        assert f"\n    {part} " in out
    assert trace_main(["--json", str(REAL), "--baseline", str(REAL)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["schema"] == 2 and rep["delta_unit"] == "cycle"
    assert rep["delta"]["attention"]["delta_ms"] == 0.0
    assert rep["delta"]["attention"]["ms"] == rep["ranks"][0]["decode"]["categories"]["attention"]


def test_the_recorded_step_profile_is_per_cycle() -> None:
    """What `P` records (ProfileCaptured.summary): the five cycles' mean, not the whole trace over 14."""
    s = step_breakdown([summarize_file(REAL)])
    assert s["steps"] == 5 and s["unit"] == "cycle" and s["prefill_batches"] == 2
    assert s["step_ms"] == pytest.approx(
        summarize_file(REAL).to_json()["decode"]["kernel_ms_per_cycle"], abs=1e-3
    )
    assert set(s["parts"]) >= {"draft", "verify", "draft_extend"}


@pytest.mark.parametrize(
    ("name", "stage"),
    [
        ("step[TARGET_VERIFY bs=3]", "verify"),  # 0.5.17
        ("step[VERIFY bs=3 g_sq=12 g_sqsq=48 g_sqsk=360 g_sk=90 forward_id=7]", "verify"),  # 0.5.23 detailed
        ("step[DRAFT bs=1 toks=41]", "draft_step"),  # 0.5.23: the draft model's forward
        ("step[DRAFT_EXTEND_V2 bs=3]", "draft_extend"),
        ("step[EXTEND bs=1 toks=41]", "prefill"),
        ("step[MIXED bs=4]", "prefill"),
        ("step[DECODE bs=8]", "decode"),
        ("step[IDLE bs=0]", "idle"),
        ("draft", "draft"),
        ("draft_extend", "draft_extend"),
        ("decode_step_3", "decode"),
        ("scheduler.run_batch", None),
        ("copy_result_to_cpu", None),
        ("scheduler.get_next_batch_to_run", None),
    ],
)
def test_stage_names_of_0_5_17_and_0_5_23(name: str, stage: str | None) -> None:
    assert stage_of(name) == stage


def test_eager_ranges_nest_and_a_cut_cycle_is_partial() -> None:
    """0.5.23 eager: draft holds three step[DRAFT] forwards, draft_extend one; a trace that starts inside
    a cycle begins with its verify and draft extend (partial, left out of the means)."""
    ranges = [
        (0, 10, "step[VERIFY bs=2]"),
        (11, 14, "draft_extend"),
        (12, 13, "step[DRAFT bs=2]"),
        (20, 30, "scheduler.run_batch"),
        (21, 24, "draft"),
        (21, 22, "step[DRAFT bs=2]"),
        (22, 23, "step[DRAFT bs=2]"),
        (23, 24, "step[DRAFT bs=2]"),
        (25, 28, "step[VERIFY bs=2]"),
        (28, 29, "draft_extend"),
        (28.2, 28.8, "step[DRAFT bs=2]"),
        (40, 45, "step[EXTEND bs=1 toks=9]"),
        (45, 47, "draft_extend"),
        (45.5, 46.5, "step[DRAFT bs=1 toks=9]"),
    ]
    groups = group(outermost(ranges))
    assert [(g.kind, g.complete, [p.stage for p in g.parts]) for g in groups] == [
        ("spec", False, ["verify", "draft_extend"]),
        ("spec", True, ["draft", "verify", "draft_extend"]),
        ("prefill", True, ["prefill", "draft_extend"]),
    ]
    assert len(groups[1].parts[0].nested) == 3


class _Log:
    def line(self, msg: str, rank: int | None = None, level: int = 20) -> None:
        pass


def _sim_trace(cuda_graph: bool, decode: int = 4) -> tuple[dict, perf.PerfConfig]:
    args = {
        "model_path": "moonshotai/Kimi-K2-Instruct",
        "tp_size": 8,
        "speculative_algorithm": "EAGLE3",
        "speculative_draft_model_path": "x",
        "sim_host": "h200-nvlink",
        "disable_cuda_graph": not cuda_graph,
    }
    cfg = perf.PerfConfig.from_args(args)
    prof = SimProfiler(cfg, _Log(), tp=8, ep=1)
    s = Session(
        output_dir=Path("."), profile_id="x", num_steps=None, by_stage=True, activities=["CPU", "GPU"]
    )
    t = 0.0
    pf = perf.prefill_ms(cfg, 200)
    s.steps.append(Step("EXTEND", 1, 200, t, pf, {"forward": pf}))
    t += pf * 1000 + 50
    for _ in range(decode):
        parts = perf.spec_parts_ms(cfg, 2, 2.5)
        ms = sum(parts.values())
        s.steps.append(Step("DECODE", 2, 8, t, ms, parts))
        t += ms * 1000 + 50
    return prof.trace(s, 0, [0.0] * 8), cfg


@pytest.mark.parametrize("cuda_graph", [True, False], ids=["graphs", "eager"])
def test_the_simulator_writes_what_sglang_writes(cuda_graph: bool) -> None:
    """The simulator's DECODE trace has SGLang's stage ranges and (with CUDA graphs) graph-replayed
    kernels without a launching op; eagletui reads its cycles, parts and attention right."""
    trace, cfg = _sim_trace(cuda_graph)
    events = trace["traceEvents"]
    launches = [e for e in events if e.get("name") == "cudaGraphLaunch"]
    assert bool(launches) == cuda_graph
    r = summarize_events("sim-TP-0-DECODE.trace.json", events, rank=0)
    assert len(r.decode_cycles) == 4 and len(r.prefill) == 1
    assert (r.graph_kernels > 0) == cuda_graph
    # attention per cycle is the cost model's attention share of the cycle, wherever it was launched from
    per = r.per_cycle()
    assert per is not None
    cycle_ms = sum(perf.spec_parts_ms(cfg, 2, 2.5).values())
    want = perf.breakdown(cfg, cycle_ms)
    assert per["attention"] == pytest.approx(want["attention"], rel=0.05)
    assert per["communication"] == pytest.approx(want["communication"], rel=0.05)
    parts = r.parts_json()
    assert set(parts) == {"draft", "verify", "draft_extend"}
    assert parts["verify"]["kernel_ms"] > parts["draft"]["kernel_ms"] > 0


def test_a_cycle_the_gpu_fills_a_fifth_of_is_said_cpu_bound_and_a_big_model_s_is_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 32: on the lent H200 the tiny EAGLE-3 server's kernels fill 24 % of a cycle (0.92 of 3.83 ms);
    the scheduler's CPU work sets it, and the pinned grids measured steps 2 with a shorter cycle than steps
    1 and 3, which no GPU profile predicts. The 2×H200 decode trace of a real model fills 99 %."""
    assert trace_main([str(REAL), "--json"]) == 0
    tiny = json.loads(capsys.readouterr().out)["ranks"][0]["decode"]
    assert tiny["bound"] == "cpu" and tiny["kernel_share"] == pytest.approx(0.92 / 3.83, abs=0.01)
    assert trace_main([str(REAL)]) == 0
    assert "kernels fill 24 % of the cycle: it is bound by the CPU" in capsys.readouterr().out
    big = TRACES / "decode-graph-TP-0.trace.json.gz"
    assert trace_main([str(big), "--json"]) == 0
    dec = json.loads(capsys.readouterr().out)["ranks"][0]["decode"]
    assert dec["bound"] == "gpu" and dec["kernel_share"] > 0.9
    assert trace_main([str(big)]) == 0
    assert "bound by the CPU" not in capsys.readouterr().out


def test_the_cycle_model_and_trace_judge_a_cycle_by_one_kernel_share() -> None:
    """One definition of how much of a cycle its kernels fill (kernels ÷ the cycle's span, gaps between
    parts included): ``eagletui trace`` printed that, while the cycle model divided by the three parts'
    spans alone (16 % against 24 % on the pinned grid's trace). The step profile now records the span
    (``cycle_ms``), the model reads it, and a forecast carries the verdict as a field, not as words
    found in its source text."""
    from eagletui.core.cycle.fit import profile_kernel_share
    from eagletui.core.runs.economics import profile_parts

    r = summarize_file(REAL)
    decode = r.to_json()["decode"]
    s = step_breakdown([r])
    assert s["cycle_ms"] == pytest.approx(decode["gpu_ms_per_cycle"], abs=1e-3)
    parts = profile_parts(s)
    assert parts is not None and parts["cycle_ms"] == pytest.approx(s["cycle_ms"])
    share, of = profile_kernel_share(parts)
    assert of == "the cycle"
    # the model's kernels are the three parts' (the gaps' few kernels left out): within a point of trace's
    assert share == pytest.approx(decode["kernel_share"], abs=0.01) and decode["bound"] == "cpu"
    # a profile recorded before the span was kept: the parts' spans, and it says so
    older = {k: v for k, v in parts.items() if k != "cycle_ms"}
    assert profile_kernel_share(older)[1] == "the draft, verify and extend spans"
