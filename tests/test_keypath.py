"""A key reaches the bindings in one turn of the event loop when no widget on its way looks at keys
(``eagletui/ui/keypath.py``); a path with a key handler (the search line) keeps Textual's way."""

from __future__ import annotations

import asyncio

import pytest
from textual import events, on
from textual.widget import Widget
from textual.widgets import Input

from eagletui.ui import keypath
from eagletui.ui.screens.main import MainScreen
from eagletui.ui.widgets.logview import LogView
from eagletui.ui.widgets.tabbar import TabBar
from tests.replay_apps import replay_app


class _KeyMethod(Widget):
    def key_x(self) -> None:
        pass


class _OwnEntry(Widget):
    async def on_event(self, event: events.Event) -> None:
        await super().on_event(event)


class _OnKey(Widget):
    @on(events.Key)
    def seen(self, event: events.Key) -> None:
        pass


def test_which_nodes_pass_a_key_on() -> None:
    x, three, escape = events.Key("x", "x"), events.Key("3", "3"), events.Key("escape", None)
    assert keypath.passes_on(LogView, x) and keypath.passes_on(MainScreen, three)
    assert not keypath.passes_on(MainScreen, escape)  # Textual's Screen._key_escape clears a selection
    assert not keypath.passes_on(_KeyMethod, x) and keypath.passes_on(_KeyMethod, three)
    assert not keypath.passes_on(_OnKey, three) and not keypath.passes_on(_OwnEntry, three)
    assert not keypath.passes_on(Input, three)  # types the key


async def _turns_until(done, limit: int = 50) -> int:
    for turn in range(1, limit + 1):
        await asyncio.sleep(0)
        if done():
            return turn
    raise AssertionError(f"not done after {limit} turns of the loop")


@pytest.mark.slow
async def test_a_key_acts_within_one_turn_and_the_search_line_still_types() -> None:
    app = replay_app([])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        bar = app.query_one(TabBar)
        assert app.focused is app.query_one(LogView) and bar.active == "log"
        assert keypath.direct_path(app, events.Key("3", "3"))
        app.post_message(events.Key("3", "3"))
        # Textual's way: the app's queue, then the log view's, its container's, the screen's, the app's
        # again (5+ turns); straight to the bindings: the app's queue only
        assert await _turns_until(lambda: bar.active == "tune") <= 2
        await pilot.press("1", "slash", "3")
        assert isinstance(app.focused, Input) and app.focused.value == "3" and bar.active == "log"
        await pilot.press("escape")
        assert app.focused is app.query_one(LogView)
