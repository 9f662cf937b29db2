"""Issue 20 item 17: the Tune tab's help texts were cut at every width (at 200 columns --sim-host's
never named the NVLink option; at 80 columns every help was 8 characters). The selected toggle's
whole help is shown, wrapped, under the table."""

from __future__ import annotations

import pytest

from eagletui.commands.demo import write_demo_profile
from eagletui.core.profile.load import load_profile
from eagletui.ui.widgets.tuning import TuningPanel
from tests.replay_apps import replay_app


@pytest.mark.slow
@pytest.mark.parametrize("size", [(200, 50), (80, 24)])
async def test_the_selected_toggles_whole_help_is_on_screen(tmp_path, size) -> None:
    prof = load_profile(write_demo_profile(tmp_path))
    app = replay_app(profile=prof)
    async with app.run_test(size=size) as pilot:
        await app.replay_done.wait()
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one(TuningPanel)
        row = next(i for i, t in enumerate(prof.toggles) if t.name.endswith("sim-host"))
        table.move_cursor(row=row)
        await pilot.pause()
        await pilot.pause()
        screen = _screen_text(app)
        flat = " ".join(screen.split())
        assert "8 × H200 with NVLink" in flat, screen  # the end of the help, not cut
        assert "h200-nvlink" in flat


def _screen_text(app) -> str:
    """What the terminal shows, line by line (the compositor's output, no styles)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())
