"""Capture-stage triage (issue 34): a failure during CUDA-graph capture names the stage its traceback's
runner captures (target prefill, target decode/verify, draft decode, draft extend) and that stage's own
remedy for the version. Real excerpts from public issues (tests/fixtures/real/h34-*, whose expect.json
carries the collector's ``capture_stage``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagletui.commands.parse import parse_path
from eagletui.core.logs.formats.sglang.capture_stage import more_specific, stage_of
from eagletui.core.logs.formats.sglang.failures import capture_hint

REAL = Path(__file__).parent / "fixtures" / "real"
STAGED = sorted(p for p in (*REAL.glob("h34-*.log"), *REAL.glob("p34-*.log")) if "capture_stage" in json.loads(p.with_suffix(".expect.json").read_text()))
#: an excerpt whose traceback was cut before any runner's frame: the stage cannot be read from it
NO_RUNNER_FRAME = {"h34-compose-service-1-prefix-torch-compile-dp-capture"}


@pytest.mark.parametrize("log", [p for p in STAGED if p.stem not in NO_RUNNER_FRAME], ids=lambda p: p.stem)
def test_the_hint_names_the_stage_the_traceback_names(log: Path) -> None:
    want = json.loads(log.with_suffix(".expect.json").read_text())["capture_stage"]
    f = parse_path(str(log))["failure"]
    stage = {"target_decode": "target decode/verify", "draft_decode": "draft decode", "draft_extend": "draft extend"}[want]
    assert f["phase"] == ("capture_draft" if want.startswith("draft") else "capture_target")
    assert f"capturing the {stage} CUDA graphs" in f["hint"]


def test_draft_extend_names_its_kill_switch_only_where_the_version_has_it() -> None:
    """sgl-project/sglang#7011 (mid-2025, before the switch): the draft-extend runner's frames under the
    base class's; the remedy for a version without SGLANG_DISABLE_DRAFT_EXTEND_CUDA_GRAPH is the upgrade."""
    f = parse_path(str(REAL / "h34-eagle3-draft-extend-capture-exception-llama70b.log"))["failure"]
    assert "draft extend" in f["hint"] and "SGLANG_DISABLE_DRAFT_EXTEND_CUDA_GRAPH" in f["hint"]
    assert "set SGLANG_DISABLE_DRAFT_EXTEND_CUDA_GRAPH=1" in capture_hint("draft extend", "oom", "0.5.17")
    assert "upgrade to sglang ≥ 0.5.17" in capture_hint("draft extend", "oom", "0.4.7")
    assert "--cuda-graph-max-bs-decode" in capture_hint("target decode/verify", "oom", ">=0.5.21")
    assert capture_hint("target prefill", "exception", None).startswith("CUDA graph capture failed while capturing the target prefill")


def test_a_subclass_runner_wins_over_its_base_class() -> None:
    base = '  File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 389, in capture'
    extend = '  File "/x/sglang/srt/speculative/eagle_draft_extend_cuda_graph_runner.py", line 113, in capture'
    draft = '  File "/x/sglang/srt/speculative/eagle_draft_cuda_graph_runner.py", line 446, in run_once'
    assert stage_of(base) == "target decode/verify" and stage_of(extend) == "draft extend"
    assert stage_of('  File "/x/sglang/srt/managers/scheduler.py", line 1, in f') is None
    assert more_specific(stage_of(base), stage_of(extend)) == "draft extend"
    assert more_specific(stage_of(draft), stage_of(base)) == "draft decode"
