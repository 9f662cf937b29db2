"""SVG snapshots of the main screens, built from recordings and never from a wall clock.

Every app here is a replay at instant speed: its clock is the last replayed event's wall time
(``EagleApp.now`` in replay mode), so elapsed times, ETAs and charts are the same on every run and
every machine. The recordings are ``sessions/example-demo.jsonl`` (3 launches, 3 benchmarks) and
``tests/fixtures/sessions/crash-oom-capture.jsonl`` (the demo simulator dying with an OOM while
capturing CUDA graphs; regenerate with ``tests/fixtures/sessions/make_recordings.py``).

Update after an intended UI change with ``pytest tests/test_ui_snapshots.py --snapshot-update`` and
look at the SVGs in ``tests/__snapshots__/test_ui_snapshots/`` before committing them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from eagletui.core.events import Event
from eagletui.core.profile.load import load_profile
from eagletui.core.profile.model import Profile
from eagletui.session.format import read_session
from eagletui.ui.app import EagleApp
from tests.replay_apps import replay_app as _replay_app

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "sessions" / "example-demo.jsonl"
CRASH = REPO / "tests" / "fixtures" / "sessions" / "crash-oom-capture.jsonl"

WIDE = (160, 50)
NARROW = (80, 24)  # below NARROW_WIDTH: phases on top, tabs (with Charts) below
THEME = "eagletui-dark"  # explicit: the user's configured theme must not leak into the snapshots


@cache
def _events(path: Path) -> tuple[Event, ...]:
    _header, events, warnings = read_session(path)
    assert not warnings, warnings
    return tuple(events)


def _cut_mid_load_target(events: tuple[Event, ...], done: int = 32) -> list[Event]:
    """Launch 1's events up to the shard-progress event that reports ``done``/64 base-weight shards."""
    for i, ev in enumerate(events):
        d = ev.to_dict()
        if (
            d["type"] == "phase_progress"
            and d.get("launch") == 1
            and d.get("phase") == "load_target"
            and d.get("done") == done
        ):
            return list(events[: i + 1])
    raise AssertionError(f"no load_target progress {done} in launch 1 of the recording")


def _demo_profile(tmp_path: Path) -> Profile:
    """The packaged demo profile with nothing machine-specific in what the diff screen shows."""
    from eagletui.commands.demo import write_demo_profile

    prof = load_profile(write_demo_profile(tmp_path, port=30000))
    prof.python = "python3"  # not sys.executable: the new command line is on screen
    return prof


def replay_app(events, profile: Profile | None = None) -> EagleApp:
    return _replay_app(events, profile=profile, theme=THEME)


async def settle(pilot) -> None:
    """Wait for the whole (instant) replay to be folded in, then paint the final state once.

    The app throttles chart/runs repaints to one per *monotonic* second; waiting that out would be
    slow and timing-dependent, so ``repaint_now`` is called (twice: a flush before layout leaves the
    log's follow-the-tail to the following tick). Toasts ("end of recording", "server ready", ...) are
    cleared: they would cover the screen and they expire on a timer."""
    app: EagleApp = pilot.app
    await app.replay_done.wait()
    assert app.replay.finished
    await pilot.pause()
    app.clear_notifications()
    app.repaint_now()  # flushes the log and repaints everything, charts and runs included
    await pilot.pause()  # layout: the log view now knows its height
    app.repaint_now()  # what the next timer tick would do: LogView.keep_following snaps to the tail
    await pilot.pause()
    await stable(pilot)


async def stable(pilot) -> None:
    """Paint again until two screenshots in a row are the same (at most 30 rounds): on a loaded machine one
    round could leave the log pane before its first layout, or a tab switch before its first paint (two
    snapshot tests failed so while another suite ran beside this one)."""
    app: EagleApp = pilot.app
    last = None
    for _ in range(30):
        app.repaint_now()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        shot = app.export_screenshot()
        if shot == last:
            return
        last = shot


async def settle_on_runs(pilot) -> None:
    """:func:`settle`, then the Runs tab (``4``) and :func:`stable` again before the screenshot."""
    await settle(pilot)
    await pilot.press("4")
    await stable(pilot)


# ---------------------------------------------------------------------------------- the states


@pytest.mark.slow
def test_loading_with_bars(snap_compare) -> None:
    """Launch 1 halfway through the base weights: 32/64 shards, earlier phases done, ETA."""
    app = replay_app(_cut_mid_load_target(_events(EXAMPLE)))
    assert snap_compare(app, terminal_size=WIDE, run_before=settle)


@pytest.mark.slow
def test_ready_runs_tab(snap_compare) -> None:
    """The whole example session: launch 3 ready, charts on the left, the runs table with deltas."""
    assert snap_compare(replay_app(_events(EXAMPLE)), terminal_size=WIDE, run_before=settle_on_runs)


@pytest.mark.slow
def test_ready_log_tab(snap_compare) -> None:
    """Same state, Log tab (the default) following the tail."""
    assert snap_compare(replay_app(_events(EXAMPLE)), terminal_size=WIDE, run_before=settle)


@pytest.mark.slow
def test_ready_narrow(snap_compare) -> None:
    """80×24: the narrow layout, phases on top and the tabs (Charts included) below."""
    assert snap_compare(replay_app(_events(EXAMPLE)), terminal_size=NARROW, run_before=settle)


@pytest.mark.slow
def test_crashed_with_hint(snap_compare) -> None:
    """OOM while capturing CUDA graphs: the failed phase, the error line and the hint."""
    assert snap_compare(replay_app(_events(CRASH)), terminal_size=WIDE, run_before=settle)


@pytest.mark.slow
def test_diff_view(snap_compare, tmp_path: Path) -> None:
    """Pending toggles staged in the Tune panel, then ``d``: running → pending and the new command."""
    prof = _demo_profile(tmp_path)
    app = replay_app(_events(EXAMPLE), profile=prof)

    async def stage(pilot) -> None:
        await settle(pilot)
        from eagletui.ui.widgets.tuning import TuningPanel

        tuning = app.query_one(TuningPanel)
        for key, value in [
            ("arg:--speculative-num-steps", 5),
            ("arg:--mem-fraction-static", 0.8),
            ("env:NCCL_ALGO", "Tree"),
        ]:
            toggle = prof.toggle(key)
            assert toggle is not None, key
            assert tuning.set_pending(toggle, value), tuning.error
        await pilot.pause()

    assert snap_compare(app, press=["d"], terminal_size=WIDE, run_before=stage)


@pytest.mark.slow
def test_help(snap_compare) -> None:
    """F1 over the ready session: every key, with its binding id."""
    assert snap_compare(replay_app(_events(EXAMPLE)), press=["f1"], terminal_size=WIDE, run_before=settle)


# ---------------------------------------------------------------------------------- guards


def test_recordings_are_what_the_snapshots_claim() -> None:
    """Cheap checks that the fixtures still hold the states the snapshots are named after."""
    ex = _events(EXAMPLE)
    assert sum(e.type == "launch_started" for e in ex) == 3
    assert sum(e.type == "bench_result" for e in ex) == 3
    crash = _events(CRASH)
    failed = [e for e in crash if e.type == "server_failed"]
    assert len(failed) == 1 and failed[0].kind == "oom" and failed[0].hint
    assert not any(e.type == "server_ready" for e in crash)


@pytest.mark.parametrize("path", [EXAMPLE, CRASH], ids=["example", "crash"])
def test_replay_clock_is_the_recording(path: Path) -> None:
    """The snapshots rely on replay time being the recording's, not the machine's."""
    events = _events(path)
    app = replay_app(events)
    for ev in events:
        app.state.apply(ev)
    assert app.now() == max(e.wall for e in events)


@pytest.mark.slow
async def test_a_short_chart_gets_no_more_y_labels_than_rows() -> None:
    """Beside the frontier chart the per-request chart has 2 plot rows; its 3 labels (80/90/100) shared a
    row and plotext drew one or the other by hash order, so the snapshots above differed run to run."""
    from eagletui.ui.widgets.charts import RequestTokSChart

    app = replay_app(_events(EXAMPLE))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        chart = next(c for c in app.screen.query(RequestTokSChart) if c.size.height)
        rows = chart.size.height - 5
        assert 2 <= len(chart.y_labels) <= max(2, rows), (chart.size, chart.y_labels)
