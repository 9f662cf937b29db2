"""In the real app: a staged change of --speculative-num-draft-tokens is a pending change that applies
(it read "no pending changes" while TOKEN-named flags were redacted), and the relaunch, its recording
and the runs table keep the numbers but never the API key."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.commands._ui import make_recorder
from eagletui.commands.demo import build_app
from eagletui.config import UserConfig
from eagletui.session.format import read_session
from eagletui.ui.widgets.tuning import TuningPanel
from tests.test_ui_demo import fast_profile, pid_alive, quit_app, wait_for

pytestmark = pytest.mark.slow

KEY = "uiKey-5150-secret"


async def test_num_draft_tokens_change_applies_and_key_stays_hidden(tmp_path: Path) -> None:
    prof = fast_profile(tmp_path)
    prof.args["--api-key"] = KEY
    cfg = UserConfig(
        record=True, sessions_dir=str(tmp_path / "sessions"), history_path=str(tmp_path / "h.jsonl")
    )
    rec = make_recorder(cfg, "local", prof)
    app = build_app(prof, cfg, recorder=rec, preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40), app.state.server_state
        await pilot.press("3")  # Tune tab
        tuning = app.query_one(TuningPanel)
        tuning.focus()
        await pilot.pause()
        row = [t.key for t in prof.toggles].index("arg:--speculative-num-draft-tokens")
        tuning.move_cursor(row=row)
        await pilot.press("right")  # 4 → 5
        await pilot.pause()
        assert tuning.pending == {"arg:--speculative-num-draft-tokens": 5}

        await pilot.press("d")
        await pilot.pause()
        body = str(app.screen.query_one("#text-body").render())
        assert "--speculative-num-draft-tokens" in body and "4" in body and "5" in body
        assert KEY not in body
        await pilot.press("escape")
        await pilot.pause()

        await pilot.press("a")
        assert await wait_for(pilot, lambda: app.state.current == 2, 20), "the staged change was not applied"
        la = app.state.launch
        assert la.diff == {"arg:--speculative-num-draft-tokens": [4, 5]}
        cmd = list(la.command)
        assert cmd[cmd.index("--speculative-num-draft-tokens") + 1] == "5"
        assert KEY not in " ".join(cmd)
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40)
        pid = app.workspace.run.pid
        await quit_app(pilot)
    assert not pid_alive(pid)
    raw = rec.path.read_text()
    assert KEY not in raw
    _, events, warnings = read_session(rec.path)
    assert not warnings
    changed = [e for e in events if e.type == "config_changed"]
    assert changed and changed[-1].changes == {"arg:--speculative-num-draft-tokens": [4, 5]}
