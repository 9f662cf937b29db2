"""The phase panel's elapsed time, for a launch we started and for one we reattached to."""

from __future__ import annotations

import pytest

from eagletui.core.state.launch import LaunchState
from eagletui.ui.widgets.phases import launch_elapsed


def _ready(started: float, ready_at: float, phase_seconds: dict[str, float], status: str) -> LaunchState:
    la = LaunchState(launch=1, started=started, status=status)
    la.ready_at = ready_at
    for name, secs in phase_seconds.items():
        la.phases[name].status, la.phases[name].seconds = "done", secs
    return la


def test_launched_here_counts_from_launch_to_ready() -> None:
    la = _ready(100.0, 110.3, {"load_target": 6.0, "capture_target": 3.0}, "ready")
    assert launch_elapsed(la, now=500.0) == pytest.approx(10.3)  # spawn to ready, not just the sum of phases


def test_reattached_run_keeps_its_log_timed_total_after_a_stop() -> None:
    # attached (and so "started") at 200.0; the backfilled log said ready 0.2 s later
    la = _ready(200.0, 200.2, {"load_target": 14.2, "capture_target": 2.9, "warmup": 0.6}, "stopped")
    assert launch_elapsed(la, now=900.0) == pytest.approx(14.2 + 2.9 + 0.6)


def test_loading_counts_to_now() -> None:
    la = LaunchState(launch=2, started=100.0, status="loading")
    assert launch_elapsed(la, now=104.5) == 4.5
    assert launch_elapsed(LaunchState(launch=3), now=1.0) is None


@pytest.mark.parametrize("end", ["failed", "exited", "stopped"])
def test_a_launch_that_ended_before_ready_stops_counting_where_it_ended(end: str) -> None:
    """Seen in the first hour after round 4: "launch #3  failed  elapsed 20.7s" at the failure read
    "elapsed 3m20s" minutes later (and 4m17s in a replay, where the runs table said "failed after 17.1s")."""
    from eagletui.core import events as ev
    from eagletui.core.state.screen import SessionState

    s = SessionState()
    s.apply(ev.LaunchStarted(launch=1, target="local", config={"args": {}}, wall=1000.0, mono=10.0))
    s.apply(ev.PhaseStarted(phase="load_target", launch=1, wall=1001.0, mono=11.0))
    ended = {
        "failed": ev.ServerFailed(kind="oom", message="CUDA out of memory", launch=1, wall=1020.7, mono=30.7),
        "exited": ev.ProcessExited(launch=1, code=3, wall=1020.7, mono=30.7),
        "stopped": ev.ServerStopped(launch=1, wall=1020.7, mono=30.7),
    }[end]
    s.apply(ended)
    la = s.launches[1]
    assert launch_elapsed(la, now=1200.0) == pytest.approx(20.7)


def test_a_narrow_panel_narrows_the_bar_and_keeps_the_times_whole() -> None:
    """Seen in the first hour after round 4: at 60×20 the active row was cut inside its elapsed time
    ("29/64 shards    4.…"). The bar gives way first; where the row fits it keeps its full width."""
    from rich.text import Text

    from eagletui.ui.widgets.phases import BAR_WIDTH, ROW_WITHOUT_BAR, PhasePanel, bar_width

    la = LaunchState(launch=1, started=100.0, status="loading")
    st = la.phases["load_target"]
    st.status, st.started, st.done, st.total, st.unit = "active", 100.0, 29, 64, "shards"
    for panel in (54, 60, 80):
        out = Text()
        PhasePanel._row(out, "load_target", st, 104.0, {"load_target": (9.0, 20.0)}, {}, "dim", "red", bar_width(panel))
        assert len(out.plain) <= panel, (panel, out.plain)
        assert out.plain.rstrip().endswith(("s", "overdue")) and " 4.0s" in out.plain, out.plain
    assert bar_width(ROW_WITHOUT_BAR + BAR_WIDTH) == BAR_WIDTH and bar_width(0) == BAR_WIDTH
