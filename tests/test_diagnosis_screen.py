"""Issue 25's "done when", tried as a new user would: the demo on the simulator's PCIe preset (8 GPUs, no
NVLink) says on screen, under the comparison, that decode's all-reduce is NCCL over PCIe with the custom
all-reduce off, before any benchmark."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.commands.demo import build_app
from eagletui.config import UserConfig
from tests.test_ui_demo import fast_profile, pid_alive, quit_app, wait_for

pytestmark = pytest.mark.slow


async def test_pcie_demo_screen_says_nccl_over_pcie_with_custom_allreduce_off(tmp_path: Path) -> None:
    prof = fast_profile(tmp_path)
    app = build_app(prof, UserConfig(record=False, history_path=str(tmp_path / "h.jsonl")), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state

        def why() -> str:
            text = str(app.query_one("#compare").render())
            return next((ln for ln in text.splitlines() if ln.startswith("why")), "")

        assert await wait_for(pilot, lambda: "NCCL" in why(), 10), str(app.query_one("#compare").render())
        line = why()
        assert "decode all-reduce at tp 8: NCCL" in line and "over PCIe" in line, line
        assert "Custom all-reduce is off" in line, line
        pid = app.workspace.run.pid
        await quit_app(pilot)
    assert not pid_alive(pid), "the demo server outlived the demo"
