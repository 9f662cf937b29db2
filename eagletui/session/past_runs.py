"""What an earlier session measured on the server a reattach finds running.

A reattach follows a server another session launched and benchmarked; without this the runs table
started empty and the baseline, the comparison and the economics had to be measured again, a
relaunch's worth of the user's time (issue 33 item 19). The earlier sessions' recordings know those
benchmarks: the newest recording whose ``LaunchStarted`` names the same run dir on the same target
holds every benchmark of that server (a session that reattached recorded the ones it was given), and
only its launch, benchmark and pin events are read (the index's context: no log line is decoded).

The events come back stamped now (the recording's clocks are another process's) and in their order, so
the run book folds them as it folded them then: the same verdicts, the same benchmark numbers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from eagletui.core.events import BenchmarkResult, BenchmarkStarted, Event, LaunchStarted
from eagletui.session.catalog import LIST_MAX_BYTES, recordings_newest_first, session_name
from eagletui.session.format import SessionError
from eagletui.session.index import ReplaySource

#: The newest recordings looked through for the run (a session dir of a year's work is not read whole).
MAX_FILES = 20

_KEPT = (BenchmarkStarted, BenchmarkResult)


@dataclass
class PastRun:
    """The benchmarks an earlier session recorded for one live server, and where they came from."""

    session: str = ""
    events: list[Event] = field(default_factory=list)
    #: recordings that could not be read (name: why): said, never silently skipped
    unreadable: list[str] = field(default_factory=list)

    @property
    def benchmarks(self) -> int:
        return sum(isinstance(e, BenchmarkStarted) for e in self.events)

    @property
    def last_bench(self) -> int:
        return max((e.bench for e in self.events if isinstance(e, BenchmarkStarted)), default=0)


def earlier_benchmarks(
    directory: Path, *, target: str, run_dir: str, launch: int, exclude: Path | None = None
) -> PastRun:
    """The benchmark events of launch ``launch`` (run dir ``run_dir`` on ``target``) from the newest
    recording in ``directory`` that launched or reattached it; ``exclude``: this session's own file."""
    out = PastRun()
    if not run_dir:
        return out
    for path in recordings_newest_first(directory)[:MAX_FILES]:
        if exclude is not None and path.resolve() == exclude.resolve():
            continue
        try:
            with ReplaySource.open(path, max_bytes=LIST_MAX_BYTES) as source:
                context = [ev for _line, _t, ev in source.context]
        except (SessionError, OSError) as exc:
            out.unreadable.append(f"{session_name(path)}: {exc}")
            continue
        if not any(_same_server(e, target, run_dir, launch) for e in context):
            continue
        stamp = Event()  # now, in this process's clocks
        mine = [e for e in context if isinstance(e, _KEPT) and e.launch == launch]
        # a benchmark that session never finished (it quit mid-run) would show as running here forever
        finished = {e.bench for e in mine if isinstance(e, BenchmarkResult)}
        out.session = session_name(path)
        out.events = [dataclasses.replace(e, wall=stamp.wall, mono=stamp.mono) for e in mine if e.bench in finished]
        return out
    return out


def _same_server(e: Event, target: str, run_dir: str, launch: int) -> bool:
    return isinstance(e, LaunchStarted) and e.launch == launch and e.run_dir == run_dir and e.target == target
