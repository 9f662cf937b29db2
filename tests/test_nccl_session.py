"""NCCL at a glance in the session: NCCL_DEBUG=INFO lines folded per launch by the session state (real
NCCL 2.28 output from a two-H200 run), the simulator printing them when the toggle is on, and the Tune
pane's title line."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.core.events import LaunchStarted, LogLine
from eagletui.core.host.nccl import NcclFold
from eagletui.core.state.screen import SessionState
from tests.conftest_sim import SPEC_ARGS, SimProc

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "gpu" / "nccl-debug-info-tp2.log"
if not FIXTURE.exists():
    FIXTURE = Path("/work/shared/fixtures/gpu/nccl-debug-info-tp2.log")


def test_state_folds_real_nccl_info_lines_per_launch():
    lines = FIXTURE.read_text().splitlines()
    s = SessionState(target="box")
    s.apply(LaunchStarted(launch=1, target="box"))
    assert s.nccl_line() is None
    for line in lines:
        s.apply(LogLine(text=line, launch=1))
    s.apply(LogLine(text="[2026-01-01 00:00:00 TP0] Load weight begin.", launch=1))
    expected = NcclFold()
    for line in lines:
        expected.add(line)
    assert s.nccl_line() == expected.summary.one_line()
    assert "NCCL 2.28.9+cuda13.0" in s.nccl_line() and "24 coll channels" in s.nccl_line()
    assert "NVLS off" in s.nccl_line()
    s.apply(LaunchStarted(launch=2, target="box"))
    assert s.nccl_line() is None  # a relaunch starts over


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "env", "via", "channels"),
    [
        (["--sim-host", "pcie-rtx6000"], {"NCCL_DEBUG": "INFO"}, "SHM/direct/direct", "4 coll channels"),
        (
            ["--sim-host", "pcie-rtx6000"],
            {"NCCL_DEBUG": "INFO", "NCCL_P2P_LEVEL": "SYS", "NCCL_MIN_NCHANNELS": "8"},
            "P2P/CUMEM",
            "8 coll channels",
        ),
        (["--sim-host", "h200-nvlink"], {"NCCL_DEBUG": "INFO"}, "P2P/CUMEM", "16 coll channels"),
    ],
)
def test_simulator_prints_nccl_info_when_asked(extra, env, via, channels):
    with SimProc([*SPEC_ARGS, *extra], env=env) as sim:
        text = sim.wait_for("Load weight begin")
    fold = NcclFold()
    for line in text.splitlines():
        fold.add(line)
    one = fold.summary.one_line()
    assert fold.summary.version == "2.28.9+cuda13.0" and fold.summary.ranks == 8
    assert via in one and channels in one, one


@pytest.mark.slow
def test_simulator_is_quiet_without_nccl_debug():
    with SimProc(SPEC_ARGS) as sim:
        text = sim.wait_for("Load weight begin")
    assert "NCCL INFO" not in text


@pytest.mark.slow
async def test_tune_pane_title_shows_the_nccl_summary(tmp_path: Path) -> None:
    from eagletui.commands.demo import build_app
    from eagletui.config import UserConfig
    from tests.test_ui_demo import fast_profile, wait_for

    prof = fast_profile(tmp_path, NCCL_DEBUG="INFO")
    app = build_app(prof, UserConfig(record=False, history_path=str(tmp_path / "h.jsonl")), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        tuning = app.screen.query_one("#tuning")
        assert await wait_for(pilot, lambda: "NCCL 2.28.9" in str(tuning.border_title or ""), 40)
        assert "coll channels" in str(tuning.border_title)
        app.quit_now()  # the path q takes: the demo's simulator is stopped, not left running
        await pilot.pause(2)
