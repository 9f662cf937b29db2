"""Issue 13, the UI part: what a new user hit in the first hour, driven through the real app."""

from __future__ import annotations

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
