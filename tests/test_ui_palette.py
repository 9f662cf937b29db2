
"""The command palette reaches the main screen's actions (they live on the screen, not on the app)."""

from __future__ import annotations

import pytest
from textual.command import CommandPalette

from eagletui.ui.widgets.tabbar import TabBar
from tests.replay_apps import replayed


@pytest.mark.slow
async def test_palette_runs_a_screen_action_and_an_app_action() -> None:
    async with replayed((160, 50)) as (app, pilot):
        theme = app.theme
        for query, check in (
            ("Runs tab", lambda: app.query_one(TabBar).active == "runs"),
            ("Next theme", lambda: app.theme != theme),
        ):
            await pilot.press("ctrl+p")
            await pilot.pause()
            assert isinstance(app.screen, CommandPalette)
            await pilot.press(*query)
            await pilot.pause(0.5)
            await pilot.press("enter")
            await pilot.pause(0.3)
            assert check(), query
