"""The UI on a Slurm profile (the connect app on the emulated cluster): the phase panel shows the
queue, then the launch, then every node; a queued job says why it waits; `a` relaunches through
scancel + sbatch."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.config import UserConfig
from eagletui.core import events as ev
from eagletui.core.profile.load import load_profile
from eagletui.core.timings import FAST
from tests.conftest_slurm import SlurmCase, slurm_cluster_fixture, slurm_fixture  # noqa: F401
from tests.test_ui_demo import quit_app, wait_for

pytestmark = pytest.mark.slow

TOGGLE = '[[toggles]]\nenv = "NCCL_ALGO"\nchoices = ["Ring", "Tree"]\n'


def _app(profile_path: Path):
    from eagletui.session.drivers import LiveDriver
    from eagletui.ui.app import EagleApp
    from eagletui.workspace import Workspace

    profile = load_profile(profile_path)

    def factory(emit):
        return Workspace(profile, emit, target="local", preflight=False, timings=FAST)

    return EagleApp(
        profile=profile,
        target="local",
        driver=LiveDriver(factory, autolaunch=True),
        user_config=UserConfig(record=False),
    )


def _panel_text(app) -> str:
    from eagletui.ui.widgets.phases import PhasePanel, PhaseTable

    panel = app.screen.query_one(PhasePanel)
    parts = [panel.query_one(PhaseTable)._text.plain]
    for wid in ("#phase-summary", "#phase-nodes"):
        parts.append(str(panel.query_one(wid).render()))
    return "\n".join(parts)


async def test_queued_then_launch_then_ready_per_node_and_a_relaunches(slurm: SlurmCase) -> None:
    app = _app(slurm.profile(nodes=2, extra=TOGGLE, scale="0.01"))
    events: list[ev.Event] = []
    async with app.run_test(size=(200, 50)) as pilot:
        app.model.subscribe(events.append)
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 60), app.state.server_state
        await pilot.pause(0.3)
        text = _panel_text(app)
        assert "queued" in text.splitlines()[0]  # the queue wait is the first row of a job's launch
        assert "job " in text and "queued " in text
        assert "n1" in text and "n2" in text and text.count("ready") >= 3, text
        la = app.state.launch
        order = [p for p in ("queued", "launch", "ready") if la.phases[p].finished is not None]
        assert order == ["queued", "launch", "ready"]
        assert la.phases["queued"].finished <= la.phases["launch"].started
        first = app.workspace.run.job_id
        # stage a toggle, apply: scancel the job, wait until it has left, sbatch the new one
        assert app.model.staged.stage("env:NCCL_ALGO", "Tree") is None
        await pilot.press("a")
        await pilot.pause(0.2)
        if app.screen.__class__.__name__ == "ConfirmScreen":
            await pilot.press("y")
        assert await wait_for(pilot, lambda: app.state.current == 2, 60)
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 60), app.state.server_state
        second = app.workspace.run.job_id
        assert second != first and [j[0] for j in slurm.jobs()] == [second]
        assert any(isinstance(e, ev.ServerStopped) and e.ended_by == "scancel" for e in events)
        await pilot.press("s")
        await pilot.pause(0.2)
        if app.screen.__class__.__name__ == "ConfirmScreen":
            await pilot.press("y")
        assert await wait_for(pilot, lambda: app.state.server_state == "stopped", 60), app.state.server_state
        await quit_app(pilot)
    slurm.wait_gone(30)


async def test_a_queued_job_says_why_it_waits(slurm: SlurmCase) -> None:
    app = _app(slurm.profile(partition="nofree"))
    async with app.run_test(size=(80, 24)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "queued", 30), app.state.server_state
        assert await wait_for(pilot, lambda: "position 1" in _panel_text(app), 30), _panel_text(app)
        text = _panel_text(app)
        assert "pending" in text and "waiting" in text, text
        assert "ReqNodeNotAvail" in text or "Nodes required" in text, text  # the reason, in Slurm's words
        assert "node down #1" in text, text  # and in two words on the queued row
        await pilot.press("s")
        await pilot.pause(0.2)
        if app.screen.__class__.__name__ == "ConfirmScreen":
            await pilot.press("y")
        assert await wait_for(pilot, lambda: not slurm.jobs(), 30), slurm.jobs()
        await quit_app(pilot)
