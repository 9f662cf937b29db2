
"""Terminal escape injection (issue 11.6): log-derived text reaches the terminal only inert."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eagletui.config import UserConfig
from eagletui.core.events import LaunchDetected, ServerFailed
from eagletui.core.textsafe import inert, inert_lines
from eagletui.session.replay import Replayer
from eagletui.ui.app import EagleApp
from eagletui.ui.notify import desktop_notify_sequence

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
OSC0 = "\x1b]0;pwned title\x1b\\"
C1_CSI = "\x9b2J"
HOSTILE = f"boom {OSC52} then {OSC0} and {C1_CSI} end\x7f"
RAW = ("\x1b", "\x07", "\x9b", "\x9c", "\x9d", "\x7f")


def _raw_free(text: str) -> bool:
    return not any(c in text for c in RAW)


def test_inert_makes_every_control_visible_and_keeps_tab() -> None:
    out = inert(HOSTILE + "\tx\r\n\x00\x85")
    assert _raw_free(out) and "\r" not in out and "\n" not in out and "\x00" not in out and "\x85" not in out
    assert "␛]52;c;ZWNobyBwd25lZA==␇" in out  # visible, same stand-ins as the log pane
    assert "\\x9b2J" in out and out.endswith("\tx␍␊␀\\x85")
    assert inert("plain [bold]markup[/] ünïcödé") == "plain [bold]markup[/] ünïcödé"  # text, not markup
    assert inert_lines("a\x1b[31m\nb") == "a␛[31m\nb"


def test_desktop_notification_body_cannot_end_the_osc_sequence() -> None:
    for kind in ("osc9", "osc777"):
        seq = desktop_notify_sequence("title\x1b\\", HOSTILE + "\x9c\x07", kind)
        body = seq[len("\x1b]") : -1]
        assert seq.endswith("\x07") and _raw_free(body), repr(seq)


def _failure_app() -> EagleApp:
    events = [
        LaunchDetected(launch=1, wall=1.0, mono=1.0),
        ServerFailed(
            launch=1,
            kind="exception",
            message=HOSTILE,
            hint=f"hint {OSC52}",
            line=f"RuntimeError: {OSC0} {C1_CSI}",
            wall=1.1,
            mono=1.1,
        ),
    ]
    replayer = Replayer(events)
    replayer.set_speed(50.0)  # paced (not instant): the failure is announced with a toast
    return EagleApp(
        profile=None,
        target=f"host{OSC0}",
        mode="replay",
        replay=replayer,
        user_config=UserConfig(record=False),
    )


async def test_failure_box_and_toast_show_osc52_inert() -> None:
    app = _failure_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.wait_for(app.replay_done.wait(), 30)
        await pilot.pause()
        box = app.query_one("#phase-failure")
        shown = str(box.render())
        assert "raised an exception" in shown and "␛]52;c;" in shown and "\\x9b2J" in shown, shown
        assert _raw_free(shown), repr(shown)
        toasts = [(n.title, n.message) for n in app._notifications]
        failed = [m for t, m in toasts if "failed" in t]
        assert failed, toasts  # it points to the failure box; the log text is shown (inert) there
        assert all(_raw_free(t + m) for t, m in toasts), toasts
        from eagletui.ui.widgets.runs import RunsTable

        details = app.query_one(RunsTable).details(app.runbook, app.state, 1).plain  # the run details modal
        assert "␛]52;c;" in details and _raw_free(details), repr(details)
        # the screen as painted: no raw control character in any segment (the pane title is the tell)
        strips = app.screen._compositor.render_strips()
        painted = "\n".join("".join(seg.text for seg in strip) for strip in strips)
        assert "␛]52;c;" in painted and _raw_free(painted)


@pytest.mark.slow
def test_bench_stderr_last_log_lines_are_inert(tmp_path: Path) -> None:
    """A server that dies printing an OSC 52 line: `bench --launch` shows its log tail, inert."""
    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.stdout.write({("RuntimeError: " + OSC52 + " " + OSC0 + " " + C1_CSI + chr(10))!r})
            sys.stdout.flush()
            sys.exit(1)
            """
        ),
        encoding="utf-8",
    )
    profile = tmp_path / "p.toml"
    profile.write_text(
        textwrap.dedent(
            f"""
            name = "hostile"
            target = "local"
            [server]
            command = ["{sys.executable}", "{script}"]
            port = 1
            runs_dir = "{tmp_path / "runs"}"
            ready_timeout_s = 30
            """
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run(
        [sys.executable, "-m", "eagletui", "bench", "local", "--profile", str(profile), "--launch"],
        capture_output=True,
        timeout=120,
        env=env,
    )
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 3, err
    assert "last log lines" in err and "␛]52;c;" in err and "\\x9b2J" in err, err
    assert not any(b in proc.stderr for b in (b"\x1b", b"\x07", b"\xc2\x9b")), err
