"""Issue 32 item 1: the grid's steps-3 step profile on the real server (SGLang 0.5.17, H200) came back with
no decode cycle. The trace is not misread: SGLang wrote a restarted profile (two prefill batches) over the
DECODE trace (fixtures/real-sglang-0.5.17-grid/README.md). Its own log says so, the capture now reads that
line after fetching and asks again, a DECODE trace without a decode cycle is said and never used as a
step profile, and the simulator does what the real server did."""

from __future__ import annotations

import time
from pathlib import Path

from eagletui.profiler import summarize_file
from eagletui.profiler.stage_lines import decode_stage
from eagletui.profiler.summary import decode_missing, step_breakdown
from eagletui.sim import perf
from eagletui.sim.profiler import SimProfiler

HERE = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-grid"
TRACE = HERE / "eagletui-1796183090-41b0d0-TP-0-DECODE.trace.json.gz"
LOG = HERE / "profile-overwritten-r1-s3.log"
REAL_ID = "eagletui-1796183090-41b0d0"


def test_the_real_log_says_the_decode_trace_was_overwritten() -> None:
    text = LOG.read_text()
    stage = decode_stage(text, REAL_ID)
    assert stage.started and stage.ended_as == "DECODE" and stage.done and stage.restarted
    # up to the first "Profiling done" the DECODE trace is intact: nothing restarted yet
    first = text[: text.index("Profiling done") + 200].rsplit("\n", 1)[0]
    assert decode_stage(first, REAL_ID).done and not decode_stage(first, REAL_ID).restarted
    assert not decode_stage(text, "another-profile").restarted


def test_the_real_overwritten_trace_is_said_and_not_a_step_profile() -> None:
    rank = summarize_file(str(TRACE))
    assert not rank.decode_cycles and len(rank.prefill) == 2
    summary = step_breakdown([rank])
    why = decode_missing(summary)
    assert why is not None and "no decode cycle" in why and "2 prefill" in why


def test_a_real_decode_trace_with_cycles_is_a_step_profile() -> None:
    real = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-turn4-run2" / "steps3-TP-0-DECODE.trace.json.gz"
    assert decode_missing(step_breakdown([summarize_file(str(real))])) is None


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, msg: str, rank: int | None = None, level: int = 20) -> None:
        self.lines.append(msg)


def test_the_simulator_overwrites_the_decode_trace_as_the_real_one_did(tmp_path: Path) -> None:
    """The real order: decode batches already running, the profile asked for, 6 decode batches, then a
    prefill wave (bs 1, bs 3) and the next decode batch. The log lines and the file's content (two
    prefill batches, no cycle) come out as the real server's."""
    cfg = perf.PerfConfig.from_args(
        {
            "model_path": "meta-llama/Llama-3.1-8B-Instruct",
            "tp_size": 1,
            "speculative_algorithm": "EAGLE3",
            "speculative_num_steps": 3,
        }
    )
    log = _Log()
    prof = SimProfiler(cfg, log, tp=1, ep=1)
    prof.start({"output_dir": str(tmp_path), "num_steps": 5, "profile_by_stage": True, "profile_id": "p"}, {})
    parts = {"DECODE": {"draft": 1.0, "verify": 1.5, "extend": 0.5}, "EXTEND": {"forward": 1.0}}
    for stage, bs in [("DECODE", 4)] * 6 + [("EXTEND", 1), ("EXTEND", 3), ("DECODE", 4)]:
        if prof.begin(stage):
            prof.on_step(stage, bs, 2 * bs if stage == "EXTEND" else bs, time.time(), 0.004, parts[stage])
    real = [
        ln.split("] ", 1)[1].split(".")[0]
        for ln in LOG.read_text().splitlines()
        if "] Profiling " in ln or "] Stop profiling" in ln
    ]
    assert [ln.split(".")[0] for ln in log.lines] == real
    assert decode_stage("\n".join(log.lines), "p").restarted
    (only,) = tmp_path.iterdir()
    assert only.name == "p-TP-0-DECODE.trace.json.gz"
    sim = summarize_file(str(only))
    assert not sim.decode_cycles and len(sim.prefill) == 2
