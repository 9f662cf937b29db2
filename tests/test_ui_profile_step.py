"""Pilot test of the real app on the real simulator: P takes a step profile of the running server and
shows the step bars, with communication dominating on the default PCIe preset."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.commands.demo import build_app
from eagletui.config import UserConfig
from tests.test_ui_demo import fast_profile, wait_for

pytestmark = pytest.mark.slow


async def test_P_profiles_the_running_server_and_shows_step_bars(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(tmp_path / "data"))
    prof = fast_profile(tmp_path)
    app = build_app(prof, UserConfig(record=False, history_path=str(tmp_path / "h.jsonl")), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state
        await pilot.press("P")
        book = app.runbook
        launch = app.state.current
        assert await wait_for(pilot, lambda: book.runs[launch].step_profile is not None, 60)
        cats = book.runs[launch].step_profile["categories"]
        assert cats["communication"] == max(cats.values())
        assert await wait_for(pilot, lambda: app.screen.id == "step-profile", 5), app.screen
        from textual.widgets import Static

        await pilot.pause(0.2)
        body = app.screen.query_one("#text-body", Static).render()
        text = body.plain if hasattr(body, "plain") else str(body)
        # a speculative server: the bar is one decode cycle (draft + verify + draft extend)
        assert "communication" in text and "ms/cycle" in text and f"#{launch}" in text
        assert "decode cycle(s) (draft + verify + draft extend)" in text
        assert (tmp_path / "data" / "profiles").is_dir()  # traces kept under the data dir
        app.quit_now()  # the path q takes: the demo's simulator is stopped, not left running
        assert await wait_for(pilot, lambda: app.driver.workspace.run is None or not app.driver.control_busy, 30)
        await pilot.pause(1)


async def test_P_on_a_server_that_dies_while_profiled_says_so_soon(tmp_path: Path, monkeypatch) -> None:
    # sglang 0.5.17's scheduler aborted one second into a capture and wrote no trace: the capture must
    # not wait out its timeout (180 s in the UI) for traces that cannot come
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(tmp_path / "data"))
    prof = fast_profile(tmp_path, EAGLETUI_SIM_FAIL="abort-during-profile")
    app = build_app(prof, UserConfig(record=False, history_path=str(tmp_path / "h.jsonl")), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state
        from eagletui.core.events import ProfileCaptured

        errors: list[str] = []
        app.model.subscribe(lambda ev: isinstance(ev, ProfileCaptured) and errors.append(ev.error))
        await pilot.press("P")
        assert await wait_for(pilot, lambda: errors, 45), "no profile result in 45 s"
        assert "the server died during the capture" in errors[0], errors
        assert await wait_for(pilot, lambda: app.state.launch is not None and app.state.launch.failure, 20)
        app.quit_now()
        await pilot.pause(1)
