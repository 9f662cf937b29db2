"""What a headless command (``eagletui bench``, ``eagletui sweep``) shows and waits for in place of the
UI: :class:`PhasePrinter`, the session model's observer that prints the phase lines on stderr, and the
waits on the phase machine for a launch to be ready or to have exited.

Apart from :mod:`eagletui.commands.bench` because the sweep command prints and waits the same way,
and neither needs the other's orchestration to do so.
"""

from __future__ import annotations

import sys

from eagletui.core import events as ev
from eagletui.core.events import Event
from eagletui.core.textsafe import inert_lines
from eagletui.core.timings import Timings
from eagletui.session.model import Problem


def _say(msg: str) -> None:
    # server log lines, HTTP bodies and exception texts pass through here: never raw to the terminal
    print(inert_lines(msg), file=sys.stderr, flush=True)


class PhasePrinter:
    """The headless sink: what the UI would paint, as lines on stderr, in event order."""

    def __init__(
        self, *, samples: bool, timings: Timings, phases: bool = True, progress_every: float | None = None
    ) -> None:
        self.samples = samples  # per-second benchmark lines (not with --json: stdout stays clean)
        #: a line per phase start and end; without, only throttled progress (a sweep's one line per
        #: variant says how long the phases took)
        self.phases = phases
        #: a phase's progress (shards, batch sizes) is printed at most this often (the timings'
        #: ``session.progress_s`` unless the command says: a sweep prints less)
        self.progress_every = timings.session.progress_s if progress_every is None else progress_every
        self.clock = timings.clock
        self._last_progress = 0.0

    def __call__(self, e: Event) -> None:
        if isinstance(e, ev.PhaseStarted):
            if self.phases:
                _say(f"  phase {e.phase} …")
        elif isinstance(e, ev.PhaseFinished) and e.seconds is not None:
            if self.phases:
                _say(f"  phase {e.phase} done in {e.seconds:.1f}s")
        elif isinstance(e, ev.PhaseProgress) and e.total:
            if self.clock.monotonic() - self._last_progress > self.progress_every:
                self._last_progress = self.clock.monotonic()
                _say(f"  {e.phase}: {e.done}/{e.total} {e.unit} {e.label}".rstrip())
        elif isinstance(e, ev.ServerFailed):
            _say(f"  server failed ({e.kind}): {e.message}" + (f"\n  hint: {e.hint}" if e.hint else ""))
        elif isinstance(e, ev.JobStatus):
            _say(f"  {job_line(e)}")
        elif isinstance(e, ev.TaskFailed):
            _say(f"eagletui: {e.task} stopped: {e.message}")
        elif isinstance(e, ev.Notice) and (e.source == "bench" or e.level in ("warning", "error")):
            # the benchmark's waiting/stall lines, and what the UI would toast (a source that stopped)
            _say(f"  {e.message}" if e.source == "bench" else f"eagletui: {e.level}: {e.message}")
        elif isinstance(e, ev.BenchmarkSample) and self.samples and e.scope == "tick" and e.tok_s is not None:
            acc = f", accept {e.accept_len:.2f}" if e.accept_len else ""
            _say(f"  t={e.t:5.1f}s {e.tok_s:9.1f} tok/s{acc}")

    @staticmethod
    def problem(p: Problem) -> None:
        _say(f"eagletui: {p.message}")


def job_line(e: ev.JobStatus) -> str:
    """A Slurm job's state as the headless commands print it: why it waits, where it runs, how it ended."""
    text = f"job {e.job_id} {e.state}"
    if e.reason:
        text += f" ({e.reason})"
    if e.position:
        text += f", position {e.position} in the queue"
    if e.nodes and e.state not in ("PENDING",):
        text += f" on {', '.join(e.nodes)}"
    if e.exit_code is not None or e.signal is not None:
        text += f", exit {e.exit_code}" if e.exit_code is not None else f", signal {e.signal}"
    return text
