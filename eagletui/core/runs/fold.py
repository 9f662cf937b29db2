"""The run book's fold: events (launches, phases, failures, benchmarks, profiles) into runs.

One handler per event type, each updating the run of the event's launch; a benchmark open when the
server fails, stops or exits, or the link drops, is marked interrupted. A mixin of
:class:`~eagletui.core.runs.book.RunBook`, apart so the fold reads on its own.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

from eagletui.core.events import (
    JOB_RUNNING_STATES,
    BaselinePinned,
    BenchmarkResult,
    BenchmarkStarted,
    ConnectionState,
    DecodeStats,
    Event,
    JobStatus,
    LaunchDetected,
    LaunchNote,
    LaunchStarted,
    PhaseFinished,
    PhaseStarted,
    PrefillStats,
    ProcessExited,
    ProfileCaptured,
    ServerFailed,
    ServerReady,
    ServerStopped,
)
from eagletui.core.phases.failures import exit_failure
from eagletui.core.phases.startup import launch_to_ready, ready_clock, startup_gaps
from eagletui.core.profile.model import Verdict, normalize_flag
from eagletui.core.profile.objective import Objective
from eagletui.core.profile.slo import Slo
from eagletui.core.runs.baseline import _Baseline
from eagletui.core.runs.latency import LatencyRecords
from eagletui.core.runs.run import Run, RunOutcome
from eagletui.core.runs.validity import interruption, result_problems
from eagletui.core.servers import spec as specflags

#: Decode lines kept per benchmark (a long run at a short log interval is thousands: a sample is enough).
MAX_DECODE_LINES = 4096


class _Fold(_Baseline):
    """The event handlers of :class:`~eagletui.core.runs.book.RunBook` (``apply`` dispatches to them)."""

    # ------------------------------------------------------------------ folding

    def _run(self, launch: int) -> Run:
        run = self.runs.get(launch)
        if run is None:
            run = self.runs[launch] = Run(launch=launch)
        return run

    def apply(self, event: Event) -> None:
        handler = _FOLD.get(type(event))  # one dict lookup for the ~all events that are log lines
        if handler is None:
            return
        if handler(self, event) is not False:  # False: the event changed nothing
            self.version += 1

    def _on_launch_started(self, event: LaunchStarted) -> None:
        run = self._run(event.launch)
        cfg = event.config or {}
        run.target = event.target or str(cfg.get("target", ""))
        run.config = dict(cfg)
        run.diff = dict(event.diff or {})
        ago = event.started_ago or 0.0  # a run found running started before we saw it
        run.started_wall, run.started_mono = event.wall - ago, event.mono - ago
        run.launched = True
        run.found_running = event.started_ago is not None
        if self._adopt and isinstance(cfg.get("verdict"), dict):
            # a recording judges its runs with the thresholds its launches carried
            with contextlib.suppress(TypeError, ValueError):
                self.verdict = Verdict(**{k: float(v) for k, v in cfg["verdict"].items()})
        if self._adopt_slo and isinstance(cfg.get("slo"), dict):
            self.slo = Slo.from_dict(cfg["slo"]) or None
        if self._adopt_objective and isinstance(cfg.get("objective"), dict):
            self.objective = Objective.from_json(cfg["objective"])

    def _interrupt(self, launch: int | None, kind: str, detail: str = "") -> None:
        runs = self.runs.values() if launch is None else [r for r in (self.runs.get(launch),) if r]
        for run in runs:
            for reasons in run.open_benches.values():
                why = interruption(kind, detail)
                if why not in reasons:
                    reasons.append(why)

    def _on_baseline_pinned(self, event: BaselinePinned) -> bool | None:
        """A pin from the recording (or a follower's feed): the same rule as :meth:`pin_baseline`; a
        run that cannot count (or is unknown here) leaves the baseline as it was."""
        try:
            self.check_pin(event.launch)
        except (KeyError, ValueError):
            return False
        self._pinned = event.launch
        self.external, self.external_label = None, ""
        return None

    def _on_job_status(self, event: JobStatus) -> None:
        run = self._run(event.launch)
        run.job_id = event.job_id or run.job_id
        if not run.job_started and (event.state in JOB_RUNNING_STATES or event.nodes):
            # the job runs: the launch starts now (the phase panel's clock does the same)
            run.job_started = True
            waited = event.queued_s
            if waited is None and run.started_mono is not None:
                waited = max(0.0, event.mono - run.started_mono)
            run.queued_s = waited
            run.started_wall, run.started_mono = event.wall, event.mono

    def _on_launch_detected(self, event: LaunchDetected) -> None:
        run = self._run(event.launch)
        if run.open_benches and not event.history:
            # a restart is a server-args line written now; the one read back from a log that was
            # already there when the run was found is the launch itself, long before the benchmark
            self._interrupt(event.launch, "launch_detected")
        if run.started_wall is None:
            run.started_wall, run.started_mono = event.wall, event.mono
        for k, v in (event.args or {}).items():
            run.detected_args.setdefault(k, v)
        for k, v in (event.facts or {}).items():
            run.detected_facts.setdefault(k, v)
        if not run.config and event.args:
            run.config = {"args": {normalize_flag(k, strict=False): v for k, v in event.args.items()}}
            if event.server:
                run.config["server"] = event.server

    def _on_phase_started(self, event: PhaseStarted) -> None:
        run = self._run(event.launch)
        run.phase_starts.setdefault(event.phase, event.mono)
        if event.phase == "launch" and run.launched and run.before_first_line is None:
            if event.since_start is not None:  # the log's own clock from the real start (found running)
                run.before_first_line = round(event.since_start, 3)
            elif run.started_mono is not None and not run.found_running:
                run.before_first_line = round(max(0.0, event.mono - run.started_mono), 3)

    def _on_phase_finished(self, event: PhaseFinished) -> None:
        run = self._run(event.launch)
        secs = event.seconds
        if secs is None and event.phase in run.phase_starts:
            secs = event.mono - run.phase_starts[event.phase]  # the log gave no duration: measure it
        if event.phase == "launch" and run.found_running:
            # read back from the log at once: its own seconds, plus the time before its first line
            secs = float(secs or 0.0) + (run.before_first_line or 0.0)
        elif event.phase == "launch" and run.launched and run.started_mono is not None:
            # the log times launch from its first line; the process started earlier (imports)
            secs = max(float(secs or 0.0), event.mono - run.started_mono)
        if secs is not None:
            run.phases[event.phase] = round(float(secs), 3)

    def _on_ready(self, event: ServerReady) -> None:
        run = self._run(event.launch)
        run.outcome = RunOutcome.READY
        for phase, start in run.phase_starts.items():  # still open at ready: it ended there (as on screen)
            if phase not in run.phases and phase != "ready":
                run.phases[phase] = max(0.0, event.mono - start)
        run.startup = {"gaps": startup_gaps(event.gaps)}
        for name, secs in (event.phase_fixes or {}).items():
            if name in run.phases and isinstance(secs, int | float):
                run.phases[name] = round(float(secs), 3)  # the server's own measure (see the event)
        run.ready_after = (
            None  # a server that was already running when benchmarked: its launch was not seen
            if run.config.get("external")
            else launch_to_ready(
                *ready_clock(run.found_running, run.started_mono, event.mono, event.since_start),
                run.phases.values(),
            )
        )

    def _on_failed(self, event: ServerFailed) -> None:
        run = self._run(event.launch)
        self._interrupt(event.launch, "server_failed", event.kind)
        run.outcome = RunOutcome.FAILED
        run.failure_kind = event.kind
        run.failure_phase = event.phase
        run.failure = f"{event.kind}: {event.message}" if event.message else event.kind

    def _on_stopped(self, event: ServerStopped) -> None:
        run = self._run(event.launch)
        self._interrupt(event.launch, "server_stopped")
        if run.outcome != RunOutcome.FAILED:
            run.outcome = RunOutcome.STOPPED

    def _on_exited(self, event: ProcessExited) -> None:
        run = self._run(event.launch)
        self._interrupt(
            event.launch, "process_exited", f"code {event.code}" if event.code is not None else ""
        )
        if run.outcome not in (RunOutcome.RUNNING, RunOutcome.READY):
            return
        # a death no log line explained (the live triage's verdict, for recordings made before it)
        fail = exit_failure(
            event.code, event.signal, phase=None, ready=run.outcome == RunOutcome.READY, launch=event.launch
        )
        if fail is not None:
            run.outcome = RunOutcome.FAILED
            run.failure_kind = run.failure_kind or fail.kind
            plain = event.signal is None and event.code not in (None, 0)
            run.failure = run.failure or (
                f"exited with code {event.code}" if plain else f"{fail.kind}: {fail.message}"
            )

    def _on_connection(self, event: ConnectionState) -> bool:
        if event.state != "lost":
            return False
        self._interrupt(None, "connection", event.detail[:120] if event.detail else "")
        return True

    def _on_decode(self, event: DecodeStats) -> bool:
        run = self.runs.get(event.launch)
        if run is None:
            return False
        clean = not run.prefill_since_decode
        run.prefill_since_decode = False
        changed = False
        running = event.running_req
        if event.cuda_graph is False and isinstance(running, int) and running > 0:
            changed = running not in run.eager_running
            run.eager_running.add(running)
        if not run.open_benches:
            return changed
        gen = event.gen_throughput
        if isinstance(gen, int | float) and math.isfinite(gen) and gen > 0 and running > 0:
            for bench in run.open_benches:
                lines = run.decode_log.setdefault(bench, [])
                if len(lines) < MAX_DECODE_LINES:
                    lines.append((running, float(gen), clean))
        acc = event.accept_len
        if isinstance(acc, int | float) and math.isfinite(acc) and acc > 0:
            for bench in run.open_benches:
                run.log_accepts.setdefault(bench, []).append(float(acc))
        return True

    def _on_prefill(self, event: PrefillStats) -> bool:
        run = self.runs.get(event.launch)
        if run is None:
            return False
        run.prefill_since_decode = True
        changed = not run.prefill_lines
        run.prefill_lines = True
        return changed

    def _on_note(self, event: LaunchNote) -> bool:
        """The CUDA-graph facts the log stated: sizes captured, the launch's settings, eager batches."""
        run = self.runs.get(event.launch)
        if run is None or event.topic != "capture" or not isinstance(event.value, dict):
            return False
        v = event.value
        if event.key == "sizes" and not v.get("draft") and v.get("what") in ("decode", "verify", ""):
            run.graph_sizes.update(b for b in v.get("bs") or () if isinstance(b, int) and b > 0)
        elif event.key == "config":
            run.graph_config = dict(v)
        elif event.key == "eager" and isinstance(v.get("running"), int) and v["running"] > 0:
            run.eager_running.add(v["running"])
        else:
            return False
        return True

    def _on_bench_started(self, event: BenchmarkStarted) -> None:
        run = self._run(event.launch)
        run.prefill_since_decode = True  # the next decode line's interval began before the benchmark
        workload = event.workload if isinstance(event.workload, dict) else {}
        conc = workload.get("concurrency")
        if isinstance(conc, int) and not isinstance(conc, bool) and conc > 0:
            run.bench_concurrency[event.bench] = conc
        run.bench_workload[event.bench] = dict(workload)
        run.open_benches[event.bench] = []

    def _on_bench_result(self, event: BenchmarkResult) -> None:
        run = self._run(event.launch)
        during = run.open_benches.pop(event.bench, [])
        found = result_problems(
            event,
            spec=run.is_spec,
            workload=run.bench_workload.get(event.bench),
            max_accept=specflags.max_accept(run.args) if run.is_spec else None,
        )
        # what happened during the run explains the rest (a cut fails every request): it goes first
        problems = [*during, *(p for p in found if not (during and "requests failed" in p))]
        run.results.append(event)
        run.problems.append(tuple(problems))
        if event.latency:  # the requests' own latencies (bounded by the client; checked again here)
            run.latency[event.bench] = LatencyRecords.from_json(event.latency, seed=event.bench)

    def _on_profile(self, event: ProfileCaptured) -> None:
        if event.summary and not event.error:
            self._run(event.launch).step_profile = dict(event.summary)


_FOLD: dict[type, Callable[[_Fold, Any], bool | None]] = {
    LaunchStarted: _Fold._on_launch_started,
    JobStatus: _Fold._on_job_status,
    LaunchDetected: _Fold._on_launch_detected,
    PhaseStarted: _Fold._on_phase_started,
    PhaseFinished: _Fold._on_phase_finished,
    ServerReady: _Fold._on_ready,
    ServerFailed: _Fold._on_failed,
    ServerStopped: _Fold._on_stopped,
    ProcessExited: _Fold._on_exited,
    ConnectionState: _Fold._on_connection,
    DecodeStats: _Fold._on_decode,
    PrefillStats: _Fold._on_prefill,
    LaunchNote: _Fold._on_note,
    BenchmarkStarted: _Fold._on_bench_started,
    BenchmarkResult: _Fold._on_bench_result,
    ProfileCaptured: _Fold._on_profile,
    BaselinePinned: _Fold._on_baseline_pinned,
}
