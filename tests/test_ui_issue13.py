"""Issue 13, the UI part: what a new user hit in the first hour, driven through the real app."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from eagletui.commands.demo import write_demo_profile
from eagletui.core.profile import load_profile
from eagletui.ui.screens.modals import DiffScreen
from tests.replay_apps import replayed

WIDE, NARROW = (160, 50), (80, 24)


def _toasts(app) -> list[str]:
    return [n.message for n in app._notifications]


def demo_profile(tmp_path: Path):
    return load_profile(write_demo_profile(tmp_path))


async def test_a_in_the_diff_window_applies(tmp_path: Path) -> None:
    """The diff window says "a applies": ``a`` there runs apply (a replay refuses it, visibly)."""
    async with replayed(WIDE, profile=demo_profile(tmp_path)) as (app, pilot):
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DiffScreen)
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, DiffScreen)
        assert any("not available in replay" in m for m in _toasts(app)), _toasts(app)


async def _step_toggle(app, pilot, key: str, presses: list[str]) -> list:
    from eagletui.ui.widgets.tuning import TuningPanel

    await pilot.press("3")
    tuning = app.query_one(TuningPanel)
    tuning.move_cursor(row=[t.key for t in tuning.profile.toggles].index(key))
    seen = []
    for p in presses:
        await pilot.press(p)
        await pilot.pause()
        seen.append(tuning.pending.get(key))
        await pilot.press("x")  # discard: each press starts from the running value
        await pilot.pause()
    return seen


async def test_a_number_off_its_grid_snaps_instead_of_jumping_to_the_ends(tmp_path: Path) -> None:
    prof = demo_profile(tmp_path)
    key = "arg:--cuda-graph-max-bs-decode"
    toggle = next(t for t in prof.toggles if t.key == key)
    assert prof.args["--cuda-graph-max-bs-decode"] == 48
    assert 48 in toggle.options()  # the demo's grid offers the value it runs with
    async with replayed(WIDE, profile=prof) as (app, pilot):
        assert await _step_toggle(app, pilot, key, ["right", "left"]) == [56, 40]
    # a grid that does not contain the value: the nearest grid value in the step's direction
    prof.toggles = tuple(dataclasses.replace(t, min=1) if t is toggle else t for t in prof.toggles)
    async with replayed(WIDE, profile=prof) as (app, pilot):
        assert await _step_toggle(app, pilot, key, ["right", "left"]) == [49, 41]


def test_the_compare_line_says_a_first_benchmark_is_running() -> None:
    from eagletui.core.events import BenchmarkStarted, LaunchStarted
    from eagletui.core.runs import RunBook
    from eagletui.ui.repaint import compare_text

    book = RunBook()
    book.apply(LaunchStarted(launch=1, target="local", config={}))
    assert "no benchmark yet" in compare_text(book).plain
    book.apply(BenchmarkStarted(bench=1, launch=1, workload_fingerprint="w"))
    line = compare_text(book, 1).plain
    assert "no benchmark yet" not in line and "running" in line


async def test_ctrl_c_copies_and_never_shows_raw_markup() -> None:
    from eagletui.ui.screens.modals import HelpScreen

    async with replayed(WIDE) as (app, pilot):
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.clipboard, "ctrl+c copied nothing"
        assert any(m.startswith("copied ") for m in _toasts(app)), _toasts(app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not any("[b]" in m or "[/b]" in m for m in _toasts(app)), _toasts(app)


async def test_zero_resets_the_rank_filter_and_the_filter_stays_in_sight() -> None:
    from eagletui.ui.widgets.logview import LogView
    from eagletui.ui.widgets.status import StatusHeader
    from eagletui.ui.widgets.tabbar import TabBar

    async with replayed(NARROW) as (app, pilot):
        log = app.query_one(LogView)
        every = len(log.view_rows)
        await pilot.press("k")  # TP0 only
        await pilot.press("e")
        await pilot.pause(0.3)
        assert log.filter_rank is not None
        bar = app.query_one(TabBar)
        assert f"TP{log.filter_rank}" in bar.label("log") and "errors" in bar.label("log")
        app.repaint_now()
        assert "log filter: errors" in app.query_one(StatusHeader).render().plain
        await pilot.press("0")
        await pilot.pause(0.3)
        assert log.filter_rank is None and log.filter_kinds is None and len(log.view_rows) == every
        assert bar.label("log") == "Log"
        # a filter nothing matches says so instead of leaving the pane blank
        log.set_filter(None, 99)
        log.set_filter({"no-such-kind"}, None)
        assert not log.view_rows
        first = "".join(seg.text for seg in log.render_line(0))
        assert "no lines match filter" in first and "(0 resets)" in first
