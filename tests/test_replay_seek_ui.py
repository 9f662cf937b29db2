
"""Seeking a replay from the keyboard: ``[``/``]`` between launches and config changes, ←/→ by 10 s,
Home/End, the timeline and the position; the screen is rebuilt from the events before the target."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eagletui.commands import replay as replay_cmd
from eagletui.config import UserConfig
from eagletui.core import events as ev
from eagletui.session.drivers import ReplayDriver
from eagletui.session.format import write_session
from eagletui.ui.app import EagleApp
from eagletui.ui.widgets.logview import LogView
from eagletui.ui.widgets.status import StatusHeader
from eagletui.ui.widgets.timeline import Timeline

EXAMPLE = Path(__file__).resolve().parent.parent / "sessions" / "example-demo.jsonl"


def _app(argv: list[str], cfg: UserConfig) -> EagleApp:
    """What ``eagletui replay ARGV`` builds (name lookup, --at/--launch), minus the terminal."""
    opened = replay_cmd.open_replay(replay_cmd.build_parser().parse_args(argv), cfg)
    assert not isinstance(opened, str), opened
    source, replayer = opened
    return EagleApp(
        profile=None, target="replay", driver=ReplayDriver(replayer), user_config=cfg, theme_name=None
    )


def _header(app: EagleApp) -> str:
    return app.query_one(StatusHeader)._text.plain


def _timeline(app: EagleApp) -> str:
    return app.query_one(Timeline)._text.plain


def _five_launches(directory: Path) -> Path:
    """Launch 1 (baseline), a config change, launches 2 and 3, then 4 a plain relaunch (no change)
    and 5 after another change: 40 s apart, each with a log line and a benchmark."""
    t0 = 1_800_000_000.0
    out: list[ev.Event] = []
    cfg = {"target": "box", "model": "m", "args": {"--speculative-num-steps": 3}, "env": {}}
    for n in range(1, 6):
        t = (n - 1) * 40.0
        if n in (2, 5):
            out.append(
                ev.ConfigChanged(
                    changes={"arg:--speculative-num-steps": [n, n + 1]}, wall=t0 + t - 3, mono=t - 3
                )
            )
        out.append(ev.LaunchStarted(launch=n, target="box", config=cfg, wall=t0 + t + 1, mono=t + 1))
        out.append(ev.LogLine(text=f"server {n} starting", launch=n, wall=t0 + t + 2, mono=t + 2))
        out.append(ev.ServerReady(url="http://x", launch=n, wall=t0 + t + 10, mono=t + 10))
        out.append(
            ev.BenchmarkResult(
                bench=n, launch=n, output_throughput=100.0 + n, requests=8, wall=t0 + t + 30, mono=t + 30
            )
        )
        out.append(ev.ServerStopped(launch=n, wall=t0 + t + 35, mono=t + 35))
    header = {
        "format": "eagletui-session",
        "version": 1,
        "created": "2027-01-15T10:00:00+00:00",
        "target": "box",
    }
    return write_session(directory / "20270115-1000-box.jsonl", header, out)


@pytest.mark.slow
async def test_brackets_step_between_launches_and_arrows_move_ten_seconds(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / "example-demo.jsonl")
    app = _app(["example-demo", "--at", "0"], UserConfig(record=False, sessions_dir=str(tmp_path)))
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        src = app.driver.source
        assert src.paused and src.position == 0.0
        line = _timeline(app)
        assert line.startswith("⏸ 0:00 / 1:0")  # the example is about a minute long
        assert line.count("▲") == 3 and line.count("●") == 3  # launches and benchmark results

        await pilot.press("right_square_bracket")  # → launch 1
        await pilot.pause()
        assert "launch #1" in _header(app)
        await pilot.press("right_square_bracket", "right_square_bracket")  # → config change → launch 2
        await pilot.pause()
        assert "launch #2" in _header(app) and app.state.current == 2
        assert src.paused  # seeking does not start a paused replay
        pos = src.position
        assert _timeline(app).startswith("⏸ 0:23")
        log_rows = len(app.query_one(LogView).rows)
        assert set(app.runbook.runs) == {1, 2}  # launch 3 is in the future: not in the table

        await pilot.press("left")  # back 10 s: before launch 2, the state rebuilt from scratch
        await pilot.pause()
        assert abs(src.position - (pos - 10.0)) < 1e-6
        assert app.state.current == 1 and "launch #1" in _header(app)
        assert set(app.runbook.runs) == {1}
        assert 0 < len(app.query_one(LogView).rows) < log_rows
        assert not any("launch #2" in str(r) for r in app.query_one(LogView).rows)

        await pilot.press("right")
        await pilot.pause()
        assert abs(src.position - pos) < 1e-6 and app.state.current == 2

        await pilot.press("end")
        await pilot.pause()
        assert app.state.current == 3 and set(app.runbook.runs) == {1, 2, 3}
        await pilot.press("home")
        await pilot.pause()
        assert src.position == 0.0 and app.state.current == 0 and not app.runbook.runs
        await pilot.press("left_square_bracket")  # nothing before the start: stays, says so
        await pilot.pause()
        assert src.position == 0.0


@pytest.mark.slow
async def test_replay_by_name_from_launch_3_then_next_goes_to_4(tmp_path: Path) -> None:
    _five_launches(tmp_path)
    app = _app(["20270115", "--launch", "3"], UserConfig(record=False, sessions_dir=str(tmp_path)))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert "launch #3" in _header(app)
        assert set(app.runbook.runs) == {1, 2, 3}
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert "launch #4" in _header(app) and app.state.current == 4
        await pilot.press("right_square_bracket")  # the config change before launch 5
        await pilot.pause()
        # 156 s: the change at mono 157, times counted from the first event (mono 1)
        assert app.state.current == 4 and app.driver.source.position == 156.0
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert app.state.current == 5
        await pilot.press("left_square_bracket", "left_square_bracket")  # back past the change
        await pilot.pause()
        assert app.state.current == 4
        line = _timeline(app)
        assert line.count("▲") == 5 and line.count("◆") == 2 and line.count("●") == 5


@pytest.mark.slow
async def test_seek_back_after_the_end_plays_on(tmp_path: Path) -> None:
    path = _five_launches(tmp_path)
    app = _app([str(path), "--speed", "instant"], UserConfig(record=False, sessions_dir=str(tmp_path)))
    async with app.run_test(size=(160, 40)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        assert app.state.current == 5
        await pilot.press("home")
        await pilot.pause()
        # issue 20 item 13: at instant speed a seek pauses there (it would race to the end at once)
        src = app.driver.source
        assert src.paused and src.position == 0.0 and app.state.current <= 1
        await pilot.press("space")
        await pilot.pause()
        await app.replay_done.wait()  # it played again from the start to the end
        await pilot.pause()
        assert app.state.current == 5 and set(app.runbook.runs) == {1, 2, 3, 4, 5}
        assert len(app.runbook.runs[1].results) == 1  # folded once, not twice


@pytest.mark.slow
async def test_arrows_stay_with_the_panes_outside_a_replay_seek(tmp_path: Path) -> None:
    """Without a seekable replay (an unindexed Replayer here; a live host likewise) ← and → are still
    the Tune tab's keys: the priority seek bindings step aside."""
    from eagletui.commands.demo import write_demo_profile
    from eagletui.core.profile.load import load_profile
    from eagletui.ui.widgets.tuning import TuningPanel
    from tests.replay_apps import replay_app

    prof = load_profile(write_demo_profile(tmp_path, port=30000))
    app = replay_app(profile=prof)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        assert not app.query(Timeline)
        await pilot.press("3")
        tuning = app.query_one(TuningPanel)
        tuning.move_cursor(row=[t.key for t in prof.toggles].index("arg:--speculative-num-draft-tokens"))
        await pilot.press("right")
        await pilot.pause()
        assert tuning.pending == {"arg:--speculative-num-draft-tokens": 5}


@pytest.mark.slow
async def test_at_instant_speed_seeking_pauses_and_works_from_the_runs_tab(tmp_path: Path) -> None:
    """Issue 20 item 13: at --speed instant the seek keys seemed to do nothing (the replay raced back
    to the end), and on the Runs tab the table was said to swallow them."""
    path = _five_launches(tmp_path)
    app = _app([str(path), "--speed", "instant"], UserConfig(record=False, sessions_dir=str(tmp_path)))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        src = app.driver.source
        await pilot.press("4")  # the Runs tab: its table has the focus
        await pilot.pause()
        assert type(app.focused).__name__ == "RunsTable" and not src.paused
        await pilot.press("left")
        await pilot.pause(0.2)
        assert src.paused and abs(src.position - (src.duration - 10.0)) < 1e-6  # stayed where it went
        shown = [n.message for n in app._notifications]
        assert any("to seek (instant speed): Space plays on" in m for m in shown), shown
        for key, check in (
            ("left_square_bracket", lambda: app.state.current == 5 and src.position < src.duration - 10),
            ("home", lambda: src.position == 0.0),
            ("right", lambda: src.position == 10.0),
            ("end", lambda: app.state.current == 5),
        ):
            await pilot.press(key)
            await pilot.pause()
            assert check() and src.paused, (key, src.position)
