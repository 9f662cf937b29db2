"""On the real simulator: keys that would throw a loading launch or a running benchmark away ask first,
quit closes the driver and the run; the log says what a stopped server needs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from eagletui.commands.demo import build_app, write_demo_profile
from eagletui.config import UserConfig
from eagletui.core.profile.load import load_profile
from eagletui.ui.screens.modals import ConfirmScreen
from tests.test_ui_demo import quit_app, wait_for, wait_quit

pytestmark = pytest.mark.slow


def slow_profile(tmp_path: Path, time_scale: float = 0.1):
    prof = load_profile(write_demo_profile(tmp_path, time_scale=time_scale))
    prof.bench = dataclasses.replace(prof.bench, num_prompts=6, concurrency=3, max_new_tokens=24, warmup=1)
    return prof


async def test_stop_and_relaunch_ask_while_a_launch_is_loading(tmp_path: Path) -> None:
    app = build_app(slow_profile(tmp_path), UserConfig(record=False), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "loading", 40), app.state.server_state
        for key in ("s", "r"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen), key
            assert "still loading" in app.screen.question
            await pilot.press("n")
            await pilot.pause(0.3)
            assert app.state.server_state == "loading" and app.state.current == 1
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("y")
        assert await wait_for(pilot, lambda: app.state.server_state == "stopped", 20), app.state.server_state
        await pilot.press("b")
        await pilot.pause()
        toasts = [n.message for n in app._notifications]
        assert any("the server is stopped: press r to launch" in m for m in toasts), toasts
        await quit_app(pilot)


async def test_ctrl_q_closes_the_driver_like_q(tmp_path: Path) -> None:
    """ctrl+q went straight to Textual's exit: the demo server and the log tail outlived the loop
    ("Loop ... that handles pid ... is closed" on exit). It takes q's path now."""
    from tests.test_ui_demo import pid_alive

    app = build_app(slow_profile(tmp_path, 0.004), UserConfig(record=False), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state
        pid = app.workspace.run.pid
        await pilot.press("ctrl+q")
        await wait_quit(app)
    assert not pid_alive(pid), "ctrl+q left the demo server running"


async def test_stop_during_a_benchmark_asks_then_cancels_it_and_stops(tmp_path: Path) -> None:
    prof = slow_profile(tmp_path, 0.004)
    prof.bench = dataclasses.replace(prof.bench, num_prompts=400, concurrency=1, max_new_tokens=256)
    app = build_app(prof, UserConfig(record=False), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state
        await pilot.press("b")
        assert await wait_for(
            pilot, lambda: app.driver.benchmarking and app.state.bench_running is not None, 10
        )
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "Benchmark" in app.screen.question
        await pilot.press("n")
        await pilot.pause(0.3)
        assert app.driver.benchmarking and app.state.server_state == "ready"
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("y")
        assert await wait_for(pilot, lambda: app.state.server_state == "stopped", 30), app.state.server_state
        assert not app.driver.benchmarking
        assert app.state.bench_results and app.state.bench_results[-1].error  # the run was closed, aborted
        await quit_app(pilot)


async def test_quit_during_a_benchmark_closes_its_run_before_the_loop_ends(tmp_path: Path) -> None:
    """q (after its question) during a benchmark: the cancelled benchmark unwinds while the app still
    runs, so its aborted result reaches the recording and no task is left behind at exit."""
    from eagletui.session.format import read_session
    from eagletui.session.record import Recorder

    prof = slow_profile(tmp_path, 0.004)
    prof.bench = dataclasses.replace(prof.bench, num_prompts=400, concurrency=1, max_new_tokens=256)
    rec = Recorder(tmp_path / "s.jsonl", target="local", profile_name="demo")
    app = build_app(prof, UserConfig(record=False), recorder=rec, preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state
        await pilot.press("b")
        assert await wait_for(pilot, lambda: app.driver.benchmarking, 10)
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("y")
        await wait_quit(app)
    assert app.driver.bench_task is None
    _header, events, _warnings = read_session(tmp_path / "s.jsonl")
    results = [e for e in events if e.type == "bench_result"]
    assert results and results[-1].error == "benchmark aborted", results


async def test_a_failed_preflight_stays_on_screen_until_the_next_launch(tmp_path: Path) -> None:
    """On the real server a preflight that failed left a toast, and the phase panel said "no launch yet"
    for minutes. Why nothing launched now stays in the phase panel until the user acts."""
    from textual.widgets import Static

    prof = slow_profile(tmp_path)
    prof.args["--model-path"] = str(tmp_path / "no-such-model")
    app = build_app(prof, UserConfig(record=False), preflight=True)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.blocked is not None, 40)
        assert app.state.blocked.stage == "preflight"
        assert any("no-such-model" in c and c.startswith("model:") for c in app.state.blocked.checks)
        await pilot.pause(16)  # the toast is gone by now (15 s); the reason is not
        box = str(app.screen.query_one("#phase-failure", Static).render())
        assert "Not launched: the preflight failed" in box and "no-such-model" in box, box
        assert app.state.launch is None  # nothing was started
        await quit_app(pilot)


async def test_a_declined_stop_of_a_reattached_server_changes_nothing(tmp_path: Path) -> None:
    """Issue 33 item 12: on a server this session did not launch, ``s`` then ``n`` at "Stop it?" left
    ``b``, ``s``, ``r``, ``a`` refused ("a launch or stop is in progress") for the rest of the
    session, and ``q`` waited the whole close bound (30 s) for a stop that never ran. The real demo
    server; the run is marked as not launched here, as a reattach marks it."""
    import time

    app = build_app(slow_profile(tmp_path, 0.004), UserConfig(record=False), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state
        app.workspace.run.launched_here = False  # what attach_newest leaves: another session's run
        await pilot.press("s")
        assert await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10)
        assert "Stop it?" in app.screen.question
        await pilot.press("n")
        await pilot.pause(0.5)
        assert not app.driver.control_busy
        assert app.state.server_state == "ready"
        await pilot.press("b")
        assert await wait_for(pilot, lambda: app.driver.benchmarking or bool(app.state.bench_results), 10)
        refused = [n.message for n in app._notifications if "in progress" in n.message]
        assert not refused, refused
        app.workspace.run.launched_here = True  # the demo's own server: q stops it without asking
        started = time.monotonic()
        await pilot.press("q")
        await pilot.pause()
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("y")
        assert await wait_for(pilot, lambda: not app.is_running, 15)
        assert time.monotonic() - started < 10
