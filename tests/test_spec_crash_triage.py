"""A log that shows one of the crashes the spec-config preflight prevents names that check and its issue
(eagletui/core/logs/formats/sglang/spec_crashes.py): the preflight's cases (tests/fixtures/spec-preflight,
each with the crash its thread reports) and the real excerpts of issue 34's second round."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagletui.commands.parse import parse_path
from eagletui.core.logs.formats.sglang.capture_stage import stage_of
from eagletui.core.logs.formats.sglang.spec_crashes import crash_check, launch_finding

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "real"
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
