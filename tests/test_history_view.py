
"""The history view (``H``): earlier sessions' runs on the same target and model in a real app; Enter
pins one as the baseline in the run book, and a not-like-for-like pick is called out."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from eagletui.config import UserConfig
from eagletui.core import events as ev
from eagletui.session.record import Recorder
from eagletui.ui.screens.history import HistoryScreen
from tests.replay_apps import EXAMPLE, replayed


def _tp4(path: Path, model: str = "moonshotai/Kimi-K2.5") -> Path:
    cfg = {"target": "local", "model": model, "tp": 4, "args": {}}
    with Recorder(path, target="local", profile_name="old") as rec:
        rec.write(ev.LaunchStarted(launch=1, target="local", config=cfg, wall=1.8e9, mono=1.0))
        rec.write(
            ev.BenchmarkResult(bench=1, launch=1, output_throughput=200.0, requests=6, wall=1.8e9, mono=2.0)
        )
    return path


async def _open_history(app, pilot) -> HistoryScreen:
    await pilot.press("H")
    screen = app.screen
    assert isinstance(screen, HistoryScreen)
    for _ in range(200):  # the recordings are read in a worker thread
        await pilot.pause(0.05)
        if screen.runs:
            break
    await asyncio.sleep(0)
    return screen


@pytest.mark.slow
async def test_history_lists_earlier_runs_and_enter_pins_one(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copy(EXAMPLE, sessions / "earlier.jsonl")
    _tp4(sessions / "tp4.jsonl")
    _tp4(sessions / "other-model.jsonl", model="meta/Llama-3.1-8B")  # not this model: not listed
    cfg = UserConfig(record=False, sessions_dir=str(sessions))
    async with replayed((140, 40), user_config=cfg) as (app, pilot):
        screen = await _open_history(app, pilot)
        refs = [fr.ref for fr in screen.runs]
        assert "earlier:1" in refs and "tp4:1" in refs
        assert not any(r.startswith("other-model") for r in refs)
        book = app.model.runbook
        target = refs.index("tp4:1")
        screen.query_one("OptionList").highlighted = target
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, HistoryScreen)
        assert book.external is not None and book.baseline_label == "tp4:1" and book.baseline is None
        warned = [w for n in book.runs for w in book.row(n).warnings]
        assert any("not like for like vs tp4:1: different tp (8 vs 4)" in w for w in warned)
        from eagletui.ui.repaint import compare_text

        line = compare_text(book).plain
        assert "vs baseline tp4:1" in line, line  # the comparison line names the pinned run of the other session
        # m goes back to a run of this session
        book.pin_baseline(1)
        assert book.external is None


@pytest.mark.slow
async def test_history_with_no_earlier_sessions_says_so_and_escape_pins_nothing(tmp_path: Path) -> None:
    cfg = UserConfig(record=False, sessions_dir=str(tmp_path / "empty"))
    async with replayed((140, 40), user_config=cfg) as (app, pilot):
        await pilot.press("H")
        for _ in range(100):
            await pilot.pause(0.05)
            status = str(app.screen.query_one("#history-status").render())
            if "no benchmarked runs" in status:
                break
        assert "no benchmarked runs" in status
        await pilot.press("escape")
        assert app.model.runbook.external is None and app.model.runbook.baseline == 1
