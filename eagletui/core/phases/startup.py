"""Start-up arithmetic: seconds from launch to ready, and the gaps between phases where nothing was said.

One definition each, shared by the screen's fold, the run book and ``eagletui parse``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from eagletui.core import events as ev


def launch_to_ready(started: float | None, ready: float, phase_seconds: Iterable[float]) -> float | None:
    """Seconds from launch to ready: the one definition the phase panel, the runs table and the
    export show. The gap between the launch and the ready event, or the phases' own durations when
    they add up to more (a reattached run's launch event is when eagletui attached, and the log's
    timestamps measure a phase better than when its lines were read)."""
    total = math.fsum(phase_seconds)
    if started is None:
        return total or None
    return max(ready - started, total)


def ready_clock(
    found_running: bool, started: float | None, ready: float, since_start: float | None
) -> tuple[float | None, float]:
    """(start, ready) on one clock for :func:`launch_to_ready`. A run found running (a reattach) read its
    ready line back from the log at once: its ``since_start`` (the log's seconds from the process start)
    times it, and without one only its phases do; otherwise when the events came."""
    if since_start is not None:
        return 0.0, since_start
    return (None if found_running else started), ready


def startup_gaps(gaps: Any) -> list[dict[str, Any]]:
    """``ServerReady.gaps`` (phase indices) as ``[{"after", "before", "seconds"}]`` with phase names;
    malformed entries are skipped."""
    out = []
    n = len(ev.PHASES)
    for g in gaps or ():
        if not (isinstance(g, list | tuple) and len(g) == 3):
            continue
        a, b, secs = g
        if (
            isinstance(a, int)
            and isinstance(b, int)
            and 0 <= a < n
            and 0 <= b < n
            and isinstance(secs, int | float)
            and not isinstance(secs, bool)
        ):
            out.append({"after": ev.PHASES[a], "before": ev.PHASES[b], "seconds": float(secs)})
    return out
