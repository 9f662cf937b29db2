
"""The screen's chrome, driven through the real app: the tab strip, the key bar, the wide layout, a
theme switch restyling exactly as a fresh start would, and the app's garbage-collection policy."""

from __future__ import annotations

import gc
import re
import time
from pathlib import Path

import pytest
from textual.css.stylesheet import Stylesheet

from eagletui.commands.demo import write_demo_profile
from eagletui.config import UserConfig
from eagletui.core.events import LogLine
from eagletui.core.profile.load import load_profile
from eagletui.ui.app import EagleApp
from eagletui.ui.gcpolicy import IdleCollector
from eagletui.ui.screens.modals import HelpScreen
from eagletui.ui.widgets.keybar import KeyBar
from eagletui.ui.widgets.logview import LogView
from eagletui.ui.widgets.runs import RunsTable
from eagletui.ui.widgets.tabbar import TabBar
from eagletui.ui.widgets.tuning import TuningPanel
from tests.replay_apps import replayed

WIDE, NARROW = (160, 50), (80, 24)


def _hint_x(bar: KeyBar, description: str) -> int:
    for start, _end, hint in bar._spans:
        if hint.description == description:
            return start + 1
    raise AssertionError(f"{description!r} not in the key bar: {[h.description for *_, h in bar._spans]}")


@pytest.mark.slow
async def test_wide_layout_keeps_the_log_on_screen() -> None:
    """The tab column takes what the left column leaves, so the log and its scrollbar are visible."""
    async with replayed(WIDE) as (app, pilot):
        screen_w = app.screen.size.width
        for widget in (app.query_one("#tabs"), app.query_one(LogView), app.query_one(TabBar)):
            assert widget.region.right <= screen_w, (widget, widget.region)
        assert app.query_one(LogView).region.width >= 70


async def test_instant_replay_does_not_bury_the_screen_in_toasts() -> None:
    async with replayed(NARROW) as (app, pilot):
        shown = [(n.title, n.message) for n in app._notifications]
        assert app.state.current == 3 and len(app.state.bench_results) == 3
        assert not any("ready" in f"{t} {m}" or "benchmark" in f"{t} {m}" for t, m in shown), shown
        assert any("end of recording" in m for _t, m in shown), shown


@pytest.mark.slow
async def test_tab_strip_click_switches_and_focuses_the_pane() -> None:
    async with replayed(WIDE) as (app, pilot):
        bar = app.query_one(TabBar)
        assert bar.visible_tabs() == [
            "log",
            "tune",
            "runs",
            "queue",
        ]  # Charts has no tab when charts fit beside
        x = next(start for start, _end, tab in bar._spans if tab == "runs")
        await pilot.click(TabBar, offset=(x + 1, 0))
        await pilot.pause()
        assert bar.active == "runs"
        assert app.query_one(RunsTable).display and not app.query_one(LogView).display
        assert app.focused is app.query_one(RunsTable)
        await pilot.press("1")
        assert bar.active == "log" and app.focused is app.query_one(LogView)
        # issue 33.21: a focus move repaints the widgets its focus changes, not the whole screen (a
        # second full frame after every tab key, search line and Esc)
        app.main.set_focus(None)
        assert app.focused is None and not app.main._repaint_required


@pytest.mark.slow
async def test_narrow_terminal_has_a_charts_tab_and_the_essential_keys() -> None:
    async with replayed(NARROW) as (app, pilot):
        bar = app.query_one(TabBar)
        assert bar.visible_tabs() == ["log", "charts", "tune", "runs", "queue"]
        await pilot.press("2")
        charts = app.query_one("#charts")
        assert charts.display and charts.region.height > 10 and not app.query_one(LogView).display
        keys = app.query_one(KeyBar)
        shown = [hint.description for *_, hint in keys._spans]
        assert shown[-2:] == ["Help", "Quit"] and "Diff" in shown  # dropped from the middle, not the ends
        assert keys.render().cell_len <= NARROW[0]


@pytest.mark.slow
async def test_key_bar_follows_focus_and_a_click_presses_the_key() -> None:
    async with replayed(WIDE) as (app, pilot):
        bar = app.query_one(KeyBar)
        shown = {hint.description for hint in bar.hints}
        assert {"Diff", "Pause", "Follow", "Help", "Quit"} <= shown  # a replay: no Relaunch/Bench
        assert bar.palette is not None and bar.palette.key == "ctrl+p"
        await pilot.click(KeyBar, offset=(_hint_x(bar, "Help"), 0))
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


@pytest.mark.slow
async def test_key_bar_shows_remapped_keys() -> None:
    cfg = UserConfig(record=False, keymap={"diff": "f5", "help": "f2"})
    async with replayed(WIDE, user_config=cfg) as (app, pilot):
        bar = app.query_one(KeyBar)
        keys = {hint.description: hint.key for hint in bar.hints}
        assert keys["Diff"] == "f5" and keys["Help"] == "f2"
        await pilot.click(KeyBar, offset=(_hint_x(bar, "Help"), 0))  # the click presses the new key
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


@pytest.mark.slow
async def test_pending_toggles_count_on_the_tune_tab(tmp_path: Path) -> None:
    prof = load_profile(write_demo_profile(tmp_path, port=30000))
    async with replayed(WIDE, profile=prof) as (app, pilot):
        tuning = app.query_one(TuningPanel)
        for key, value in [("arg:--speculative-num-steps", 5), ("env:NCCL_ALGO", "Tree")]:
            toggle = prof.toggle(key)
            assert toggle is not None and tuning.set_pending(toggle, value), tuning.error
        await pilot.pause()
        assert app.query_one(TabBar).label("tune") == "Tune (2)"


def _styles_by_path(app: EagleApp) -> dict[str, dict]:
    out: dict[str, dict] = {}

    def walk(node, path: str) -> None:
        out[path] = {k: repr(v) for k, v in node.styles.base.get_rules().items()}  # layouts lack __eq__
        for i, child in enumerate(node.children):
            walk(child, f"{path}/{type(child).__name__}#{child.id or i}")

    walk(app.screen, "screen")
    return out


@pytest.mark.slow
async def test_theme_switch_restyles_exactly_like_a_fresh_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The coalesced, cached restyle must leave every node with the rules a fresh start computes."""
    fresh: dict[str, dict[str, dict]] = {}
    names = ["eagletui-light", "eagletui-high-contrast", "eagletui-dark", "eagletui-light"]
    for name in set(names):
        async with replayed(WIDE, theme=name) as (app, pilot):
            fresh[name] = _styles_by_path(app)
    async with replayed(WIDE, theme="eagletui-dark") as (app, pilot):
        # issue 33.21: the themes are parsed ahead in quiet ticks; a switch then never runs the parser
        # and styles every node as a fresh start does
        for _ in range(5):
            app._warm_themes()
        assert not app._themes_to_warm
        parses: list[object] = []
        original = Stylesheet.reparse
        monkeypatch.setattr(Stylesheet, "reparse", lambda sheet: parses.append(sheet) or original(sheet))
        for name in names:
            app.theme = name
            await pilot.pause()
            got = _styles_by_path(app)
            assert got.keys() == fresh[name].keys()
            wrong = [p for p in got if got[p] != fresh[name][p]]
            assert not wrong, (name, wrong[:3])
        assert not parses


async def _screenshot(app: EagleApp, pilot) -> str:
    app.clear_notifications()
    app.repaint_now()  # charts replot in the new colours on their next turn; take that turn now
    await pilot.pause()
    app.repaint_now()
    await pilot.pause()
    return re.sub(r"terminal-\d+", "terminal", app.export_screenshot())  # ids hash the whole frame


def _plot_versions(app: EagleApp) -> dict[str, int]:
    return {c.id: c._plot_version for c in app.query(".chart") if c.id.endswith("-wide")}


@pytest.mark.slow
async def test_theme_switch_paints_what_a_fresh_start_paints() -> None:
    """Coalescing the refreshes must not leave a stale line anywhere on screen, and with no event
    coming (the replay is over) every chart still gets replotted in the new colours."""
    async with replayed(WIDE, theme="eagletui-light") as (app, pilot):
        fresh = await _screenshot(app, pilot)
    async with replayed(WIDE, theme="eagletui-dark") as (app, pilot):
        dark = await _screenshot(app, pilot)
        before = _plot_versions(app)
        await pilot.press("t", "t")  # dark → high contrast → light
        assert app.theme == "eagletui-light"
        for _ in range(50):  # the coalesced replot: one chart per 250 ms slot
            if all(v > before[k] for k, v in _plot_versions(app).items()):
                break
            await pilot.pause(0.1)
        assert all(v > before[k] for k, v in _plot_versions(app).items()), _plot_versions(app)
        app.clear_notifications()
        # the coalesced restyle lands within a few refreshes; on a busy machine those come later, so
        # wait (bounded) for the frame to reach the fresh start's rather than take the first one
        switched = ""
        deadline = time.monotonic() + 30  # beside another suite 100 x 0.05 s was not enough
        while time.monotonic() < deadline:
            await pilot.pause(0.05)
            switched = re.sub(r"terminal-\d+", "terminal", app.export_screenshot())
            if switched == fresh:
                break
    assert switched != dark
    assert switched == fresh


@pytest.mark.slow
async def test_search_line_belongs_to_the_log_tab() -> None:
    async with replayed(WIDE) as (app, pilot):
        await pilot.press("slash")
        box = app.query_one("#search-input")
        assert box.display and app.focused is box
        bar = app.query_one(TabBar)
        x = next(start for start, _end, tab in bar._spans if tab == "runs")
        await pilot.click(TabBar, offset=(x + 1, 0))
        await pilot.pause()
        assert not box.display and app.focused is app.query_one(RunsTable)


@pytest.mark.slow
async def test_resize_with_a_modal_open_relays_the_main_screen() -> None:
    async with replayed(WIDE) as (app, pilot):
        await pilot.press("f1")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        await pilot.resize_terminal(*NARROW)
        await pilot.pause()
        assert app.default_screen.has_class("narrow") and not help_screen.has_class("narrow")
        await pilot.press("escape")
        await pilot.pause()
        assert app.query_one("#tabs").region.width == NARROW[0]
        await pilot.press("2")
        assert app.query_one(TabBar).active == "charts"
        # back to wide while on the Charts tab: the charts move beside the log, the log has the focus
        await pilot.resize_terminal(*WIDE)
        await pilot.pause()
        assert app.query_one(TabBar).active == "log" and app.focused is app.query_one(LogView)
        assert "charts" not in app.query_one(TabBar).visible_tabs()


@pytest.mark.slow
def test_idle_collector_defers_full_collections_until_input_pauses() -> None:
    before = gc.get_threshold()
    col = IdleCollector(quiet=60.0, min_gap=0.0, max_gap=3600.0)
    try:
        col.start()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[2] > 10**6  # no automatic full collection
        col.input_seen()
        col.tick()
        assert col.collections == 0  # the user is typing
        col.quiet = 0.0
        col.tick()
        assert col.collections == 1  # quiet again: collected now
    finally:
        col.stop()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


@pytest.mark.slow
def test_only_one_collector_takes_charge_and_foreign_freezes_are_left_alone() -> None:
    before = gc.get_threshold()
    first, second = IdleCollector(), IdleCollector()
    first.start()
    second.start()
    assert first.active and not second.active
    second.stop()  # not in charge: changes nothing
    assert gc.get_threshold()[2] > 10**6
    first.stop()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    keep = [object() for _ in range(3)]
    gc.freeze()  # somebody else's freeze
    frozen = gc.get_freeze_count()
    try:
        col = IdleCollector()
        col.start()
        col.stop()
        assert gc.get_freeze_count() >= frozen and gc.get_threshold() == before
    finally:
        gc.unfreeze()
    assert keep


@pytest.mark.slow
async def test_app_restores_the_collector_settings_when_it_closes() -> None:
    before = gc.get_threshold()
    async with replayed(WIDE) as (app, pilot):
        assert app.collector.active
        # issue 33.21: a session event counts as activity, like a key: no full collection while a log
        # burst keeps the loop busy (a key waiting behind the burst is not seen as input yet)
        col = app.collector
        col.quiet, col.min_gap, col._last_input = 60.0, 0.0, 0.0
        done = col.collections
        app.dispatch(LogLine(text="INFO: a burst", kind="other", wall=1.0, mono=1.0))
        app._tick()
        assert col.collections == done
        col.quiet = 0.0
        app._tick()
        assert col.collections == done + 1
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


@pytest.mark.slow
async def test_queue_tab_is_shown_without_a_sweep_and_says_how_to_get_one() -> None:
    """Issue 20 item 23: key 5 led to a tab that was not in the bar (hidden without [sweep])."""
    async with replayed(WIDE) as (app, pilot):
        await pilot.press("5")
        await pilot.pause()
        assert app.query_one(TabBar).active == "queue"
        text = app.query_one("#sweep-queue").render().plain
        assert "no [sweep] table" in text and "--example demo-sweep" in text


def test_readme_key_table_names_the_queue_tab() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "`1`–`5`" in readme and "Queue" in readme
