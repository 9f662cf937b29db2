"""The Textual speed-ups run only on a tested Textual and can be switched off; the app works either way."""

from __future__ import annotations

import gc

import pytest

from eagletui.ui import textual_patches
from tests.replay_apps import replay_app


def test_tested_version_enables_and_the_switch_disables(monkeypatch: pytest.MonkeyPatch) -> None:
    textual_patches.enabled.cache_clear()
    monkeypatch.delenv(textual_patches.ENV, raising=False)
    assert textual_patches.enabled() == (textual_patches.textual_version() in textual_patches.TESTED)
    textual_patches.enabled.cache_clear()
    monkeypatch.setenv(textual_patches.ENV, "0")
    assert textual_patches.enabled() is False
    textual_patches.enabled.cache_clear()


async def test_app_on_plain_textual(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the switch off: no stylesheet patch, Python's GC thresholds untouched, themes still switch."""
    textual_patches.enabled.cache_clear()
    monkeypatch.setenv(textual_patches.ENV, "0")
    try:
        before = gc.get_threshold()
        app = replay_app([])
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert app._css_speedups is None and not app.collector.active
            assert gc.get_threshold() == before
            first = app.theme
            await pilot.press("t")
            await pilot.pause()
            assert app.theme != first
    finally:
        textual_patches.enabled.cache_clear()
