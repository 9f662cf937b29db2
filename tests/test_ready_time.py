"""Issue 20 item 16: one ready time. The phase panel said 17.8 s, the Runs tab and the export 17.3 s:
each summed a different thing. Now all three show core.runs.launch_to_ready."""

from __future__ import annotations

import json

from eagletui.core import events as ev
from eagletui.session.export import build_report
from eagletui.session.export_render import render
from eagletui.ui.widgets.phases import fmt_secs
from eagletui.ui.widgets.runs import RunsTable
from tests.replay_apps import replay_app

T, M = 1_795_000_000.0, 100.0


def _events() -> list[ev.Event]:
    """The log's own durations (17.8 s in all) are longer than the gap between the launch event and
    the ready event (17.3 s): the lines were read a little late, and one phase is still open at ready."""
    out: list[ev.Event] = [ev.LaunchStarted(launch=1, target="local", config={"args": {}}, wall=T, mono=M)]
    at = 0.0
    for phase, secs in (("launch", 1.5), ("load_target", 9.0), ("capture_target", 5.0)):
        out.append(ev.PhaseStarted(phase=phase, launch=1, wall=T + at, mono=M + at))
        at += secs
        out.append(
            ev.PhaseFinished(phase=phase, launch=1, seconds=secs, wall=T + at - 0.3, mono=M + at - 0.3)
        )
    out.append(ev.PhaseStarted(phase="warmup", launch=1, wall=T + at - 0.3, mono=M + at - 0.3))
    out.append(ev.ServerReady(launch=1, wall=T + 17.3, mono=M + 17.3))
    return out


async def test_panel_runs_table_and_export_show_the_same_ready_time() -> None:
    events = _events()
    app = replay_app(events)
    async with app.run_test(size=(200, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        app.repaint_now()
        await pilot.pause()
        la = app.state.launch
        assert la is not None
        panel = la.ready_after
        run = app.runbook.runs[1]
        assert panel is not None and run.ready_after is not None
        assert abs(panel - run.ready_after) < 1e-6, (panel, run.ready_after)
        shown = fmt_secs(panel)
        assert f"elapsed {shown}" in str(app.query_one("#phase-summary").render())
        table = app.query_one(RunsTable)
        assert table.get_row_at(0)[8] == shown  # the "ready" column
    report = build_report(events, header={"target": "local"})
    doc = json.loads(render(report, "json"))
    assert abs(doc["runs"][0]["ready_after_s"] - panel) < 1e-6
    assert f"| {panel:.1f}s |" in render(report, "md")
