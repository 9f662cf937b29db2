"""The pure fold of events into what the screen shows: phases, server state, metrics.

Nothing here does I/O or reads a clock: every time comes from an event, so a recording replayed into a
fresh :class:`SessionState` reproduces the live session exactly (the UI passes its own ``now`` when it
wants elapsed times).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from eagletui.core.diagnosis.fold import Diagnoser
from eagletui.core.events import (
    JOB_RUNNING_STATES,
    PHASES,
    BenchmarkResult,
    BenchmarkSample,
    BenchmarkStarted,
    ConnectionState,
    DecodeStats,
    Event,
    GpuStats,
    JobStatus,
    LaunchBlocked,
    LaunchDetected,
    LaunchNote,
    LaunchStarted,
    LogLine,
    LogStale,
    NodeProgress,
    Notice,
    PhaseFinished,
    PhaseProgress,
    PhaseStarted,
    ProcessExited,
    ServerFailed,
    ServerReady,
    ServerStopped,
    TaskFailed,
)
from eagletui.core.phases.failures import exit_failure
from eagletui.core.phases.startup import launch_to_ready, ready_clock, startup_gaps
from eagletui.core.state.launch import JobView, LaunchState, NodeView, PhaseState, PhaseStatus, ServerState
from eagletui.core.wording import pending_reason_short

SERIES_LIMIT = 2000


_OVER = (ServerState.READY, ServerState.FAILED, ServerState.STOPPED, ServerState.EXITED)
_RUNNING = (ServerState.QUEUED, ServerState.LAUNCHING, ServerState.LOADING, ServerState.READY)


@dataclass
class Series:
    """A bounded time series: (wall time, value) pairs."""

    limit: int = SERIES_LIMIT
    points: deque[tuple[float, float]] = field(default_factory=deque)
    version: int = 0

    def add(self, t: float, v: float) -> None:
        self.points.append((t, v))
        if len(self.points) > self.limit:
            self.points.popleft()
        self.version += 1

    def clear(self) -> None:
        self.points.clear()
        self.version += 1


@dataclass
class SessionState:
    """Everything derived from the event stream of one session."""

    target: str = ""
    connection: str = "disconnected"
    connection_detail: str = ""
    retry_in: float | None = None
    launches: dict[int, LaunchState] = field(default_factory=dict)
    current: int = 0
    last_wall: float = 0.0
    gen_throughput: Series = field(default_factory=Series)
    accept_len: Series = field(default_factory=Series)
    bench_tok_s: Series = field(default_factory=Series)
    bench_accept: Series = field(default_factory=Series)
    bench_ttft: Series = field(default_factory=Series)
    bench_tick_tok_s: Series = field(default_factory=Series)
    #: adaptive speculation's active tier (steps) and the Decode lines' running batch, while adaptive is on
    tier: Series = field(default_factory=Series)
    running: Series = field(default_factory=Series)
    last_decode: DecodeStats | None = None
    bench_running: int | None = None
    bench_results: list[BenchmarkResult] = field(default_factory=list)
    gpus: tuple[dict[str, Any], ...] = ()
    #: wall time of the last good GPU sample, and why the newest read failed ("" when it did not)
    gpus_wall: float | None = None
    gpu_stale: str = ""
    #: background tasks that ended with an error and have not run again: name → what happened
    failed_tasks: dict[str, str] = field(default_factory=dict)
    notices: deque[Notice] = field(default_factory=lambda: deque(maxlen=200))
    log_lines: int = 0
    version: int = 0
    #: why the last launch attempt did not happen; cleared when a launch starts
    blocked: LaunchBlocked | None = None
    #: what each launch's log, host, benchmarks and profiles say about why (core/diagnosis/fold.py)
    diagnoser: Diagnoser = field(default_factory=Diagnoser)

    # ------------------------------------------------------------------ queries

    @property
    def launch(self) -> LaunchState | None:
        return self.launches.get(self.current)

    def nccl_line(self) -> str | None:
        """The current launch's NCCL summary in one line; None until it logged ``NCCL INFO`` lines."""
        la = self.launch
        if la is None or not la.nccl.summary.seen:
            return None
        return la.nccl.summary.one_line()

    @property
    def server_state(self) -> ServerState:
        la = self.launch
        return la.status if la else ServerState.IDLE

    # ------------------------------------------------------------------ fold

    def apply(self, ev: Event) -> None:
        self.version += 1
        if ev.wall > self.last_wall:
            self.last_wall = ev.wall
        handler = _HANDLERS.get(type(ev))
        if handler is not None:
            handler(self, ev)
        self.diagnoser.add_one(ev)

    def apply_all(self, events: list[Event]) -> None:
        for ev in events:
            self.apply(ev)

    def _launch_for(self, n: int, wall: float) -> LaunchState:
        """Events from the log carry the launch number; an unknown one starts a timeline (attach/replay)."""
        n = n or self.current or 1
        la = self.launches.get(n)
        if la is None:
            la = LaunchState(launch=n, started=wall)
            self.launches[n] = la
            if n >= self.current:
                self.current = n
        return la


def _on_launch_started(s: SessionState, ev: LaunchStarted) -> None:
    for task in _PER_LAUNCH_TASKS:
        s.failed_tasks.pop(task, None)
    started = ev.wall - (ev.started_ago or 0.0)  # a run found running started before we saw it
    la = LaunchState(
        launch=ev.launch,
        started=started,
        config=dict(ev.config),
        command=tuple(ev.command),
        diff=dict(ev.diff),
        log_path=ev.log_path,
        node_count=max(1, int(ev.nodes or 1)),
    )
    if ev.job_id:
        # a Slurm job: it waits in the queue first; the launch (and its process) starts when the job does
        la.job = JobView(job_id=ev.job_id, submitted=ev.wall)
        la.phases["queued"].status = PhaseStatus.ACTIVE
        la.phases["queued"].started = ev.wall
        la.status = ServerState.QUEUED
    else:
        la.phases["launch"].status = PhaseStatus.ACTIVE
        la.phases["launch"].started = started
    la.launched = True
    la.found_running = ev.started_ago is not None
    s.launches[ev.launch] = la
    s.current = ev.launch
    s.target = ev.target or s.target
    s.gen_throughput.clear()
    s.accept_len.clear()
    s.tier.clear()
    s.running.clear()
    s.last_decode = None
    s.bench_running = None
    s.blocked = None


def _on_blocked(s: SessionState, ev: LaunchBlocked) -> None:
    s.blocked = ev


def _on_launch_detected(s: SessionState, ev: LaunchDetected) -> None:
    la = s.launches.get(ev.launch or s.current)
    if la is None or la.status in _OVER and la.phases["dist_init"].started:
        # A new timeline in the same log (a restart we did not launch, or an attached log).
        n = (max(s.launches) + 1) if s.launches and la is not None else (ev.launch or 1)
        la = LaunchState(launch=n, started=ev.wall)
        la.phases["launch"].status = PhaseStatus.ACTIVE
        la.phases["launch"].started = ev.wall
        s.launches[n] = la
        s.current = n
    if ev.version:
        la.version = ev.version
    if ev.args and not la.config:
        la.config = {"args": dict(ev.args)}


def _phase(s: SessionState, launch: int, name: str, wall: float) -> PhaseState | None:
    if name not in PHASES:
        return None
    return s._launch_for(launch, wall).phases[name]


def _on_phase_started(s: SessionState, ev: PhaseStarted) -> None:
    la = s._launch_for(ev.launch, ev.wall)
    ph = la.phases.get(ev.phase)
    if ph is None:
        return
    if ev.phase == "launch" and la.launched and la.before_first_line is None:
        if ev.since_start is not None:  # the log's own clock from the real start (found running)
            la.before_first_line = round(ev.since_start, 3)
        elif la.started is not None and not la.found_running:
            la.before_first_line = round(max(0.0, ev.wall - la.started), 3)
    # Earlier phases that never reported an end are implicitly over once a later one starts,
    # except in the overlapped orders (draft load while target captures), which report their ends.
    idx = PHASES.index(ev.phase)
    for name in PHASES[:idx]:
        prev = la.phases[name]
        if prev.status == PhaseStatus.ACTIVE and name in ("queued", "launch"):
            prev.status = PhaseStatus.DONE
            prev.finished = ev.wall
            prev.seconds = (ev.wall - prev.started) if prev.started else None
    if ph.status in (PhaseStatus.PENDING, PhaseStatus.SKIPPED):
        ph.status = PhaseStatus.ACTIVE
        ph.started = ev.wall
    if la.status in (ServerState.QUEUED, ServerState.LAUNCHING):
        la.status = ServerState.LOADING


def _on_job_status(s: SessionState, ev: JobStatus) -> None:
    la = s._launch_for(ev.launch, ev.wall)
    job = la.job
    if job is None:
        job = la.job = JobView(job_id=ev.job_id)
    job.job_id = ev.job_id or job.job_id
    job.state, job.reason, job.position, job.source = ev.state, ev.reason, ev.position, ev.source
    if ev.nodes:
        job.nodes = tuple(ev.nodes)
        la.node_count = max(la.node_count, len(ev.nodes))
    queued = la.phases["queued"]
    if queued.status == PhaseStatus.ACTIVE:
        # the row's short text: the pending reason's first word and the queue position
        word = pending_reason_short(ev.reason) if ev.state == "PENDING" else ev.state.lower()[:11]
        queued.label = f"{word} #{ev.position}" if ev.position else word
    if ev.state == "PENDING":
        if queued.status == PhaseStatus.PENDING and la.status in (ServerState.QUEUED, ServerState.LAUNCHING):
            queued.status, queued.started = PhaseStatus.ACTIVE, job.submitted or ev.wall
        return
    if job.started is None and (ev.state in JOB_RUNNING_STATES or ev.nodes):
        job.started = ev.wall
        job.position = None
        if queued.status == PhaseStatus.ACTIVE:
            queued.status, queued.finished = PhaseStatus.DONE, ev.wall
            # Slurm's own count when it gave one (exact, and right for a job reattached while running)
            waited = ev.queued_s if ev.queued_s is not None else ev.wall - (queued.started or ev.wall)
            queued.seconds = max(0.0, waited)
            launch = la.phases["launch"]
            if launch.status == PhaseStatus.PENDING:
                launch.status, launch.started = PhaseStatus.ACTIVE, ev.wall
            la.started = ev.wall  # the launch's clock starts with the job, not with the submit
        if la.status == ServerState.QUEUED:
            la.status = ServerState.LAUNCHING
    if ev.state not in JOB_RUNNING_STATES and ev.state != "PENDING" and ev.state:
        job.ended = job.ended or ev.wall
        job.exit_code, job.signal = ev.exit_code, ev.signal


def _on_node_progress(s: SessionState, ev: NodeProgress) -> None:
    la = s._launch_for(ev.launch, ev.wall)
    node = la.nodes.get(ev.node)
    if node is None:
        node = la.nodes[ev.node] = NodeView(name=ev.node, index=ev.index)
        la.nodes = dict(sorted(la.nodes.items(), key=lambda kv: kv[1].index))
    if ev.phase and ev.phase != node.phase:
        node.since = ev.wall
    if ev.status == "done" and ev.phase:
        node.finished.setdefault(ev.phase, ev.wall)
    node.phase = ev.phase or node.phase
    node.status, node.done, node.total, node.unit = ev.status, ev.done, ev.total, ev.unit


def _on_phase_progress(s: SessionState, ev: PhaseProgress) -> None:
    ph = _phase(s, ev.launch, ev.phase, ev.wall)
    if ph is None:
        return
    if ph.status == PhaseStatus.PENDING:
        ph.status = PhaseStatus.ACTIVE
        ph.started = ev.wall
    ph.done, ph.total, ph.unit, ph.label = ev.done, ev.total, ev.unit, ev.label
    ph.ranks_done, ph.ranks_total, ph.slowest_rank = ev.ranks_done, ev.ranks_total, ev.slowest_rank


def _on_phase_finished(s: SessionState, ev: PhaseFinished) -> None:
    la = s._launch_for(ev.launch, ev.wall)
    ph = la.phases.get(ev.phase)
    if ph is None:
        return
    if ev.phase == "launch" and la.found_running:
        # read back from the log at once: its own seconds, plus the time before its first line
        secs = (ev.seconds or 0.0) + (la.before_first_line or 0.0)
        ev = dataclasses.replace(ev, seconds=round(secs, 3))
    elif ev.phase == "launch" and la.launched and ph.started is not None:
        # the log times launch from its first line; eagletui saw the process start (imports)
        secs = max(ev.seconds or 0.0, ev.wall - ph.started)
        ev = dataclasses.replace(ev, seconds=round(secs, 3))
    if ph.started is None:
        ph.started = ev.wall - (ev.seconds or 0.0)
    ph.status = PhaseStatus.DONE
    ph.finished = ev.wall
    ph.seconds = ev.seconds if ev.seconds is not None else ev.wall - ph.started
    if ph.total and ph.done < ph.total:
        ph.done = ph.total


def _on_ready(s: SessionState, ev: ServerReady) -> None:
    la = s._launch_for(ev.launch, ev.wall)
    for name in PHASES[:-1]:
        ph = la.phases[name]
        if ph.status == PhaseStatus.ACTIVE:
            ph.status = PhaseStatus.DONE
            ph.finished = ev.wall
            ph.seconds = ph.seconds if ph.seconds is not None else ev.wall - (ph.started or ev.wall)
        elif ph.status == PhaseStatus.PENDING:
            ph.status = PhaseStatus.SKIPPED
    la.startup = {"gaps": startup_gaps(ev.gaps)}
    for name, secs in (ev.phase_fixes or {}).items():
        fixed = la.phases.get(name)
        if fixed is None or fixed.status != PhaseStatus.DONE or not isinstance(secs, int | float):
            continue
        # the server's own measure of a finished phase: only its length changes
        fixed.seconds = float(secs)
        if fixed.finished is not None and fixed.started is not None:
            fixed.started = min(fixed.started, fixed.finished - float(secs))
    ready = la.phases["ready"]
    ready.status = PhaseStatus.DONE
    ready.started = ready.finished = ev.wall
    ready.seconds = 0.0
    la.status = ServerState.READY
    la.ready_at = ev.wall
    clock = ready_clock(la.found_running, la.started, ev.wall, ev.since_start)
    la.ready_after = (
        None if la.config.get("external") else launch_to_ready(*clock, la.phase_durations().values())
    )
    la.stale_for = None


def _on_failed(s: SessionState, ev: ServerFailed) -> None:
    la = s._launch_for(ev.launch, ev.wall)
    if la.failure is not None and ev.kind in ("died", "signal", "stale"):
        return  # keep the root cause, not the cascade
    _ended(la, ev.wall)
    la.failure = ev
    la.status = ServerState.FAILED
    name = ev.phase if ev.phase in la.phases else la.current_phase
    for ph in la.phases.values():
        if ph.status == PhaseStatus.ACTIVE:
            ph.status = PhaseStatus.FAILED if ph.name == name or name is None else PhaseStatus.DONE
            ph.finished = ev.wall


def _ended(la: LaunchState, wall: float) -> None:
    """The launch failed, stopped or exited: where it never became ready, its elapsed time ends at the
    first of these (``LaunchState.ended_at``)."""
    if la.ended_at is None and la.ready_at is None:
        la.ended_at = wall


def _nodes_down(la: LaunchState) -> None:
    """The server is gone: no node of it is ready or working any more (a failed one stays failed)."""
    for node in la.nodes.values():
        if node.status != "failed":
            node.status = "stopped"


def _on_stopped(s: SessionState, ev: ServerStopped) -> None:
    la = s._launch_for(ev.launch, ev.wall)
    _nodes_down(la)
    _ended(la, ev.wall)
    if la.status != ServerState.FAILED:
        la.status = ServerState.STOPPED
    for ph in la.phases.values():
        if ph.status == PhaseStatus.ACTIVE:
            ph.status = PhaseStatus.PENDING
            ph.finished = ev.wall


def _on_exited(s: SessionState, ev: ProcessExited) -> None:
    la = s._launch_for(ev.launch, ev.wall)
    la.exit_code, la.exit_signal = ev.code, ev.signal
    _nodes_down(la)
    _ended(la, ev.wall)
    if la.status in _RUNNING and la.failure is None:
        # a recording from before the live triage: the same verdict, from the same place
        fail = exit_failure(
            ev.code, ev.signal, phase=la.current_phase, ready=la.status == ServerState.READY, launch=la.launch
        )
        if fail is not None:
            _on_failed(s, dataclasses.replace(fail, wall=ev.wall, mono=ev.mono))
            return
    if la.status in _RUNNING:
        la.status = ServerState.EXITED
        for ph in la.phases.values():
            if ph.status == PhaseStatus.ACTIVE:
                ph.status = PhaseStatus.FAILED
                ph.finished = ev.wall


def _on_stale(s: SessionState, ev: LogStale) -> None:
    la = s._launch_for(ev.launch, ev.wall)
    la.stale_for = ev.seconds


def _on_log(s: SessionState, ev: LogLine) -> None:
    s.log_lines += 1
    la = s.launches.get(ev.launch or s.current)
    if la is not None and "NCCL INFO" in ev.text:
        la.nccl.add(ev.text)
    if la is not None and la.stale_for is not None:
        la.stale_for = None


def _on_decode(s: SessionState, ev: DecodeStats) -> None:
    s.last_decode = ev
    s.gen_throughput.add(ev.wall, ev.gen_throughput)
    if ev.accept_len is not None:
        s.accept_len.add(ev.wall, ev.accept_len)
    la = s.launch
    if la is not None and la.adaptive.on:  # the tier chart's batch and the tier carried to now
        s.running.add(ev.wall, float(ev.running_req))
        if la.adaptive.active is not None:
            s.tier.add(ev.wall, float(la.adaptive.active))


def _on_note(s: SessionState, ev: LaunchNote) -> None:
    """Adaptive speculation's notes (core/state/adaptive.py); a swap draws a vertical step in the tier."""
    if ev.topic != "adaptive":
        return
    la = s._launch_for(ev.launch, ev.wall)
    before = la.adaptive.active
    if la.adaptive.fold(ev.key, ev.value, ev.wall) and ev.key == "switch" and la.launch == s.current:
        if before is not None:
            s.tier.add(ev.wall, float(before))
        if la.adaptive.active is not None:
            s.tier.add(ev.wall, float(la.adaptive.active))


def _on_connection(s: SessionState, ev: ConnectionState) -> None:
    s.connection = ev.state
    s.connection_detail = ev.detail
    s.retry_in = ev.retry_in
    if ev.target:
        s.target = ev.target


def _on_gpu(s: SessionState, ev: GpuStats) -> None:
    if ev.stale:  # the read failed: the last sample stands, marked stale
        s.gpu_stale = ev.stale
        return
    s.gpus, s.gpus_wall, s.gpu_stale = ev.gpus, ev.wall, ""


def _on_notice(s: SessionState, ev: Notice) -> None:
    s.notices.append(ev)


#: Tasks a new launch starts again (a new live source): their earlier failure is over.
_PER_LAUNCH_TASKS = ("log tail", "process watch", "log source")


def _on_task_failed(s: SessionState, ev: TaskFailed) -> None:
    s.failed_tasks[ev.task] = ev.message
    if ev.task == "bench":  # a benchmark that failed is not running (its result will never come)
        s.bench_running = None


def _on_bench_started(s: SessionState, ev: BenchmarkStarted) -> None:
    s.bench_running = ev.bench
    s.bench_tok_s.clear()
    s.bench_accept.clear()
    s.bench_ttft.clear()
    s.bench_tick_tok_s.clear()


def _on_bench_sample(s: SessionState, ev: BenchmarkSample) -> None:
    if ev.scope == "tick":
        if ev.tok_s is not None:
            s.bench_tick_tok_s.add(ev.wall, ev.tok_s)
        return
    if ev.tok_s is not None:
        s.bench_tok_s.add(ev.wall, ev.tok_s)
    if ev.accept_len is not None:
        s.bench_accept.add(ev.wall, ev.accept_len)
    if ev.ttft_ms is not None:
        s.bench_ttft.add(ev.wall, ev.ttft_ms)


def _on_bench_result(s: SessionState, ev: BenchmarkResult) -> None:
    s.bench_results.append(ev)
    if ev.output_throughput > 0:
        # The run's aggregate ends the per-second line, so even a sub-second burst shows on the chart.
        s.bench_tick_tok_s.add(ev.wall, ev.output_throughput)
    if s.bench_running == ev.bench:
        s.bench_running = None


_HANDLERS: dict[type, Any] = {
    LaunchStarted: _on_launch_started,
    LaunchDetected: _on_launch_detected,
    PhaseStarted: _on_phase_started,
    PhaseProgress: _on_phase_progress,
    PhaseFinished: _on_phase_finished,
    ServerReady: _on_ready,
    JobStatus: _on_job_status,
    NodeProgress: _on_node_progress,
    ServerFailed: _on_failed,
    ServerStopped: _on_stopped,
    ProcessExited: _on_exited,
    LogStale: _on_stale,
    LogLine: _on_log,
    DecodeStats: _on_decode,
    LaunchNote: _on_note,
    ConnectionState: _on_connection,
    GpuStats: _on_gpu,
    Notice: _on_notice,
    TaskFailed: _on_task_failed,
    LaunchBlocked: _on_blocked,
    BenchmarkStarted: _on_bench_started,
    BenchmarkSample: _on_bench_sample,
    BenchmarkResult: _on_bench_result,
}
