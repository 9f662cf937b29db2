
"""Replay goes through the same event path as a live session, so it shows the same state."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eagletui.commands import replay as replay_cmd
from eagletui.core.state.screen import SessionState
from eagletui.session.format import read_session
from eagletui.ui.widgets.logview import LogView
from tests.replay_apps import replay_app

EXAMPLE = Path(__file__).resolve().parent.parent / "sessions" / "example-demo.jsonl"


@pytest.mark.slow
async def test_replay_rebuilds_the_recorded_session() -> None:
    header, events, warnings = read_session(EXAMPLE)
    assert header["format"] == "eagletui-session" and not warnings
    expected = SessionState()
    expected.apply_all(events)
    app = replay_app(events)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause(1.0)
        assert app.events_seen == len(events)
        assert app.state.current == expected.current == 3
        for n, la in expected.launches.items():
            got = app.state.launches[n]
            assert {p: s.status for p, s in got.phases.items()} == {p: s.status for p, s in la.phases.items()}
            assert got.diff == la.diff
        rows = app.runbook.rows()
        assert [r.launch for r in rows] == [1, 2, 3]
        assert rows[0].is_baseline and rows[2].deltas["tok_s"].pct is not None
        assert len(app.query_one(LogView).rows) > 100
        assert app.recorder is None  # a replay is never re-recorded
        await pilot.press("r")  # control keys are refused politely in replay
        await pilot.pause()
        assert app.state.current == 3


@pytest.mark.slow
async def test_truncated_recording_still_replays(tmp_path: Path) -> None:
    damaged = tmp_path / "cut.jsonl"
    shutil.copy(EXAMPLE, damaged)
    data = damaged.read_bytes()
    damaged.write_bytes(data[: len(data) * 2 // 3])  # cut mid-line, as a crash would
    header, events, warnings = read_session(damaged)
    assert any("truncated" in w for w in warnings)
    app = replay_app(events)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        assert app.events_seen == len(events) > 100


def test_replay_command_rejects_a_non_session(tmp_path: Path, capsys) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("hello\n")
    assert replay_cmd.main([str(bogus)]) == 2
    assert str(bogus) in capsys.readouterr().err


@pytest.mark.slow
async def test_untrusted_text_is_never_markup() -> None:
    """Failure messages, notices and confirm prompts carry log text: brackets must not be parsed."""
    from eagletui.core.events import Notice, ServerFailed
    from eagletui.ui.screens.modals import ConfirmScreen

    app = replay_app([])
    async with app.run_test(size=(120, 40)) as pilot:
        app.dispatch(
            ServerFailed(
                kind="nccl",
                message="[/oops] [bold]x",
                hint="[red]lower it[/",
                line="[rank0]:[E ProcessGroupNCCL.cpp:607]",
            )
        )
        app.dispatch(Notice(level="error", message="bad [/x] markup"))
        app.repaint_now()
        await pilot.pause(0.3)
        panel = str(app.query_one("#phase-failure").render())
        assert "[/oops] [bold]x" in panel and "[red]lower it[/" in panel
        app.push_screen(ConfirmScreen("pid 1: python -m sglang.launch_server [/bad] log: /tmp/[x"))
        await pilot.pause(0.3)
        assert "[/bad]" in str(app.screen.query_one("Label").render())


@pytest.mark.slow
async def test_replay_judges_runs_with_the_recorded_thresholds() -> None:
    import dataclasses

    _, events, _ = read_session(EXAMPLE)
    events = [
        dataclasses.replace(e, config={**e.config, "verdict": {"min_accept_len": 2.0, "min_speedup": 1.0}})
        if e.type == "launch_started"
        else e
        for e in events
    ]
    app = replay_app(events)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        rows = app.runbook.rows()
        verdicts = [r.verdict for r in rows]
        # accept 3.2 ≥ 2.0, but its only no-spec run (#3) also differs in fusion: unjudged, not pass
        assert verdicts[0] == "unjudged" and any(r.startswith("accept len 3.21 ≥ 2") for r in rows[0].reasons)
        assert all(v in ("pass", "fail", "unjudged") for v in verdicts)


@pytest.mark.slow
async def test_mouse_selection_in_the_log_is_copyable() -> None:
    from textual.geometry import Offset
    from textual.selection import Selection

    from eagletui.core.events import LogLine

    app = replay_app([])
    async with app.run_test(size=(120, 30)) as pilot:
        for i in range(5):
            app.dispatch(
                LogLine(
                    text=f"[2026-01-01 00:00:0{i} TP0] line number {i} [bold]literal[/]", kind="other", rank=0
                )
            )
        app.repaint_now()
        await pilot.pause(0.2)
        log = app.query_one(LogView)
        app.screen.selections = {log: Selection(Offset(26, 1), Offset(39, 2))}
        await pilot.pause(0.1)
        assert (
            log.selected_text() == "line number 1 [bold]literal[/]\n[2026-01-01 00:00:02 TP0] line number 2"
        )
        assert "line number 1" in app.screen.get_selected_text()
        strip = log.render_line(1 - int(log.scroll_offset.y))
        assert "".join(seg.text for seg in strip).startswith("[2026-01-01 00:00:01 TP0] line number 1 [bold]")
