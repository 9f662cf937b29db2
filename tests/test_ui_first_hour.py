
"""What a new user hit in the first hour of the UI (issue 13), driven through the real app: the diff
window, toggle steps, copy, filters, toasts, the key bar, run details, the palette, themes, search, charts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from eagletui.commands.demo import write_demo_profile
from eagletui.core.events import LOG_PHASES
from eagletui.core.profile.load import load_profile
from eagletui.ui.screens.modals import DiffScreen
from tests.replay_apps import replayed

WIDE, NARROW = (160, 50), (80, 24)


def _toasts(app) -> list[str]:
    return [n.message for n in app._notifications]


def demo_profile(tmp_path: Path):
    return load_profile(write_demo_profile(tmp_path))


@pytest.mark.slow
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


@pytest.mark.slow
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
    from eagletui.core.runs.book import RunBook
    from eagletui.ui.repaint import compare_text

    book = RunBook()
    book.apply(LaunchStarted(launch=1, target="local", config={}))
    assert "no benchmark yet" in compare_text(book).plain
    book.apply(BenchmarkStarted(bench=1, launch=1, workload_fingerprint="w"))
    line = compare_text(book, 1).plain
    assert "no benchmark yet" not in line and "running" in line


@pytest.mark.slow
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


@pytest.mark.slow
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


def _hostless_app(tmp_path: Path):
    """The demo app with no server behind it: events are dispatched by hand."""
    from eagletui.commands.demo import build_app
    from eagletui.config import UserConfig

    app = build_app(demo_profile(tmp_path), UserConfig(record=False), preflight=False)
    app.workspace_factory = None
    return app


@pytest.mark.slow
async def test_toasts_are_short_few_and_do_not_repeat_the_failure_box(tmp_path: Path) -> None:
    from eagletui.core.events import LaunchStarted, ServerFailed

    app = _hostless_app(tmp_path)
    async with app.run_test(size=NARROW) as pilot:
        for i in range(4):
            app.notify(f"note {i}", timeout=10)
        await pilot.pause()
        shown = list(app._notifications)
        assert [n.message for n in shown] == ["note 2", "note 3"]
        assert all(n.timeout <= 4 for n in shown)
        app.dispatch(LaunchStarted(launch=1, target="local", config={}))
        hint = "another server holds the port: stop it or pick another --port"
        app.dispatch(
            ServerFailed(
                kind="port_in_use", message="address already in use", hint=hint, phase="warmup", launch=1
            )
        )
        app.repaint_now()
        await pilot.pause()
        toasts = [f"{n.title} {n.message}" for n in app._notifications]
        assert not any(hint in t for t in toasts), toasts  # the hint is in the failure box only
        assert not any("port_in_use" in t or "PORT_IN_USE" in t for t in toasts), toasts
        assert any("already in use during warmup" in t.lower() for t in toasts), toasts
        box = app.query_one("#phase-failure").render()
        box_text = box.plain if hasattr(box, "plain") else str(box)
        assert hint in box_text and "PORT_IN_USE" not in box_text and "in warmup" not in box_text


@pytest.mark.slow
async def test_at_80x24_the_log_keeps_at_least_12_rows_while_loading() -> None:
    from eagletui.ui.widgets.logview import LogView
    from eagletui.ui.widgets.phases import PhaseTable
    from tests.test_ui_snapshots import EXAMPLE, _cut_mid_load_target, _events

    async with replayed(NARROW, events=_cut_mid_load_target(_events(EXAMPLE))) as (app, pilot):
        app.repaint_now()
        await pilot.pause()
        assert app.state.server_state == "loading"
        assert app.query_one(LogView).region.height >= 12, app.query_one(LogView).region
        table = str(app.query_one(PhaseTable).render())
        assert "base weights" in table and "32/64" in table  # the active phase keeps its bar
        assert "to go" in table and "done" in table  # the rest, folded into one line


@pytest.mark.slow
async def test_key_bar_follows_the_tab_and_the_driver(tmp_path: Path) -> None:
    from eagletui.ui.widgets.keybar import KeyBar

    def shown(app) -> list[str]:
        return [h.description for h in app.query_one(KeyBar).hints]

    async with replayed(WIDE, profile=demo_profile(tmp_path)) as (app, pilot):
        keys = shown(app)
        assert "Pause" in keys and "Faster" in keys  # the replay's own keys
        assert not {"Relaunch", "Stop", "Bench", "Apply"} & set(keys), keys  # "not available" in replay
        await pilot.press("3")
        await pilot.pause()
        keys = shown(app)
        assert {"Step", "Cycle", "Discard"} <= set(keys), keys
        await pilot.press("1")
        await pilot.pause()
        assert "Step" not in shown(app)
    app = _hostless_app(tmp_path)
    async with app.run_test(size=WIDE) as pilot:
        await pilot.pause()
        keys = shown(app)
        assert {"Relaunch", "Stop", "Bench", "Apply"} <= set(keys) and "Pause" not in keys, keys


@pytest.mark.slow
async def test_run_details_are_readable_and_a_failed_run_lists_every_phase() -> None:
    from eagletui.ui.widgets.runs import RunsTable
    from tests.test_ui_snapshots import CRASH, _events

    async with replayed(WIDE, events=list(_events(CRASH))) as (app, pilot):
        table = app.query_one(RunsTable)
        launch = app.state.current
        body = table.details(app.runbook, app.state, launch).plain
        assert not body.lstrip().startswith("{") and '"args": {' not in body  # not a JSON dump
        lines = body.splitlines()
        phase_rows = [ln for ln in lines if ln.startswith("  ") and ln.strip()[:1] in "✔✘·–▶"]
        # every phase, not only the completed ones (queued is a Slurm job's: not for a process launch)
        assert len(phase_rows) == len(LOG_PHASES), phase_rows
        failed = [ln for ln in phase_rows if "failed here" in ln]
        assert len(failed) == 1 and "graphs target" in failed[0], phase_rows
        assert any("not reached" in ln for ln in phase_rows)
        assert "out of GPU memory during CUDA graph capture (target)" in body
        la = app.state.launches[launch]
        assert f"log      {la.log_path}" in body and "run dir  " in body
        command = body.split("launch command (secrets redacted)\n", 1)[1].splitlines()[0]
        assert "NCCL_ALGO=" in command and "-m eagletui.sim" in command  # environment first, then argv


@pytest.mark.slow
async def test_diff_window_command_carries_env_changes_and_no_secret(tmp_path: Path) -> None:
    prof = demo_profile(tmp_path)
    prof.env["HF_TOKEN"] = "hf_abcdefghijklmnopqrstuvwxyz0123"
    async with replayed(WIDE, profile=prof) as (app, pilot):
        toggle = next(t for t in prof.toggles if t.key == "env:NCCL_ALGO")
        app.model.staged.stage(toggle, "Tree")
        await pilot.press("d")
        await pilot.pause()
        body = str(app.screen.query_one("#text-body").render())
        command = body.split("new command:\n", 1)[1]
        assert "NCCL_ALGO=Tree" in command
        assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in body and "HF_TOKEN='***'" in command


@pytest.mark.slow
async def test_the_config_column_ends_in_an_ellipsis_and_says_it_scrolls(tmp_path: Path) -> None:
    from eagletui.ui.widgets.keybar import KeyBar
    from eagletui.ui.widgets.runs import CONFIG_WIDTH, RunsTable

    app = _hostless_app(tmp_path)  # live: in a replay ←/→ seek the replay instead
    async with app.run_test(size=NARROW) as pilot:
        await pilot.press("4")
        await pilot.pause()
        table = app.query_one(RunsTable)
        assert table.columns[table.ordered_columns[-1].key].width == CONFIG_WIDTH
        hints = {h.description: h.display for h in app.query_one(KeyBar).hints}
        assert hints.get("Scroll") == "←/→" and "Details" in hints, hints


@pytest.mark.slow
async def test_palette_lists_our_actions_when_empty_and_has_no_theme_picker() -> None:
    from textual.command import CommandList, CommandPalette

    async with replayed(WIDE) as (app, pilot):
        await pilot.press("ctrl+p")
        await pilot.pause(0.5)
        assert isinstance(app.screen, CommandPalette)
        listed = app.screen.query_one(CommandList)
        prompts = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        text = "\n".join(prompts)
        assert "Run a benchmark" in text and "Show pending changes" in text, text
        assert not any(p.splitlines()[0].strip() in ("Theme", "Quit") for p in prompts), text
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Theme" not in titles and "Quit" not in titles


def test_save_theme_keeps_the_file_and_writes_it_private(tmp_path: Path) -> None:
    import stat

    from eagletui.config import ConfigWriteError, load_user_config, save_theme

    cfg = tmp_path / "config.toml"
    cfg.write_text('# mine\ntheme = "eagletui-dark"\nscrollback = 5000\n\n[keymap]\nbench = "f5"\n')
    cfg.chmod(0o644)
    save_theme("eagletui-light", cfg)
    loaded, problems = load_user_config(cfg)
    assert not problems and loaded.theme == "eagletui-light" and loaded.scrollback == 5000
    assert loaded.keymap == {"bench": "f5"} and cfg.read_text().startswith("# mine\n")
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    assert loaded.path == str(cfg)
    fresh = tmp_path / "new" / "config.toml"
    save_theme("eagletui-high-contrast", fresh)  # no file yet: the commented default, with the theme
    assert load_user_config(fresh)[0].theme == "eagletui-high-contrast"
    bad = tmp_path / "bad.toml"
    bad.write_text("theme = [\n")
    try:
        save_theme("x", bad)
    except ConfigWriteError as exc:
        assert "bad.toml:" in str(exc)
    else:
        raise AssertionError("a malformed config was overwritten")
    assert bad.read_text() == "theme = [\n"
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
async def test_t_saves_the_theme_and_help_names_the_config_path(tmp_path: Path) -> None:
    from eagletui.config import load_user_config
    from eagletui.ui.screens.modals import HelpScreen

    path = tmp_path / "config.toml"
    cfg, _ = load_user_config(path)
    cfg.record = False
    async with replayed(WIDE, user_config=cfg) as (app, pilot):
        await pilot.press("t")
        await pilot.pause()
        assert load_user_config(path)[0].theme == app.theme
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert str(path) in str(app.screen.query_one("#help-text").render())


@pytest.mark.slow
async def test_search_says_which_hit_is_shown() -> None:
    from eagletui.ui.widgets.logview import LogView
    from eagletui.ui.widgets.status import StatusHeader

    async with replayed(WIDE) as (app, pilot):
        await pilot.press("slash")
        await pilot.press(*"launch")
        await pilot.press("enter")
        await pilot.pause()
        log = app.query_one(LogView)
        n = len(log.hits)
        assert n > 2
        assert any(m.startswith(f"hit {n}/{n} for 'launch'") for m in _toasts(app)), _toasts(app)
        await pilot.press("N")
        await pilot.pause()
        app.repaint_now()
        assert f"hit {n - 1}/{n}" in app.query_one(StatusHeader).render().plain


def _chart_lines(chart) -> list[str]:
    return ["".join(seg.text for seg in chart.render_line(y)) for y in range(chart.size.height)]


@pytest.mark.slow
async def test_charts_start_at_zero_label_every_tick_and_keep_legends_off_the_data() -> None:
    from eagletui.core.state.screen import Series, SessionState
    from eagletui.ui.widgets.charts import TokSChart

    async with replayed(WIDE) as (app, pilot):
        chart = app.query_one("#chart-toks-wide", TokSChart)
        # the first second of a benchmark: one point
        state = SessionState(target="local")
        state.bench_tick_tok_s = Series()
        state.bench_tick_tok_s.add(1000.0, 512.0)
        chart._replot(None, state.bench_tick_tok_s, None, state)
        lines = _chart_lines(chart)
        axis = next(ln for ln in reversed(lines) if any(ch.isdigit() for ch in ln))
        assert "-1" not in axis and "−1" not in axis, lines
        # a full session: legends only in the title line, every y tick labelled
        app.repaint_now()
        for chart in app.query(TokSChart):
            chart.mark_stale()
        app.repaint_now()
        chart = app.query_one("#chart-toks-wide", TokSChart)
        lines = _chart_lines(chart)
        assert "per second" in lines[0], lines[:2]
        assert not any("per second" in ln or "server" in ln for ln in lines[1:]), lines
        assert len(chart.y_labels) >= 2
        for label in chart.y_labels:
            assert any(ln.lstrip().startswith(label) for ln in lines), (label, lines)
