"""Typed, immutable events: the only currency between sources, the core, the recorder and the UI.

Every source (a live log tail, the process watcher, a benchmark client, a replay file) emits these and
nothing else, so a recording replayed through :mod:`eagletui.core.state.screen` rebuilds exactly what the user
saw. Each event carries a wall-clock time (for humans and recordings) and a monotonic time (for
durations that must not jump when the clock is adjusted).

Round-trip contract: ``Event.from_dict(e.to_dict()) == e`` for every event, and ``to_dict`` is plain
JSON (str, int, float, bool, None, lists, dicts).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

#: The fixed phase vocabulary, in launch order. Used by the UI, JSON output and recordings.
#: ``queued`` is a Slurm job's wait in the queue (``sbatch`` to the job's start); a detached process
#: never has it (it is skipped) and it never counts as launch time: the launch starts with the job.
PHASES: tuple[str, ...] = (
    "queued",
    "launch",
    "dist_init",
    "load_target",
    "load_draft",
    "compile",
    "kv_cache",
    "capture_prefill",
    "capture_target",
    "capture_draft",
    "warmup",
    "ready",
)
#: The phases a server's log can show (all but the scheduler's ``queued``).
LOG_PHASES: tuple[str, ...] = tuple(p for p in PHASES if p != "queued")

#: Failure kinds the classifier assigns (see issue 3). ``stopped`` is a clean shutdown, not a crash.
FAILURE_KINDS: tuple[str, ...] = (
    "oom",
    "nccl",
    "exception",
    "port_in_use",
    "bad_args",
    "hang",
    "died",
    "signal",
    "stale",
)

_REGISTRY: dict[str, type[Event]] = {}


_now_wall = time.time  # an event's clocks (the default factories below; event_builders calls them too)
_now_mono = time.monotonic


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of all events. Subclasses register themselves under their ``type`` name."""

    type: ClassVar[str] = "event"
    wall: float = field(default_factory=_now_wall)
    mono: float = field(default_factory=_now_mono)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # No super() call: slots dataclasses are re-created, which breaks zero-argument super().
        name = cls.__dict__.get("type")
        if isinstance(name, str):
            _REGISTRY[name] = cls

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            out[f.name] = _jsonable(getattr(self, f.name))
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Event:
        """Rebuild an event; unknown keys are ignored so newer recordings still load."""
        try:
            cls = _REGISTRY[data["type"]]
        except KeyError as exc:
            raise ValueError(f"unknown event type: {data.get('type')!r}") from exc
        names = {f.name: f for f in dataclasses.fields(cls)}
        kwargs = {}
        for key, value in data.items():
            f = names.get(key)
            if f is None:
                continue
            if isinstance(value, list) and str(f.type).startswith("tuple"):
                value = tuple(value)
            kwargs[key] = value
        return cls(**kwargs)


def _jsonable(value: Any) -> Any:
    """Top-level tuples become lists; nested values are left as they are (they are already JSON)."""
    if isinstance(value, tuple):
        return list(value)
    return value


def event_type(name: str) -> type[Event]:
    return _REGISTRY[name]


# --------------------------------------------------------------------------------------------- log


@dataclass(frozen=True, slots=True, kw_only=True)
class LogLine(Event):
    """One logical log line (a ``\\r`` tqdm frame counts as its own line, flagged ``frame=True``).

    ``kind`` is the classifier's tag: ``phase``, ``progress``, ``decode``, ``prefill``, ``error``,
    ``warning``, ``http``, ``traceback``, ``other``. ``rank`` is the writer's rank number (None: the line
    is not a rank's, or has no prefix).
    ``seq`` numbers lines from the start of the launch's log, so the UI can tell gaps and duplicates.
    """

    type: ClassVar[str] = "log"
    text: str
    kind: str = "other"
    rank: int | None = None
    seq: int = 0
    frame: bool = False
    launch: int = 0
    #: where the server's record prefix ends in ``text`` (0: none) and where its rank label sits
    #: (``text[rank_start:rank_end]``; both 0: none), as the log format parsed them: the log view
    #: collapses ranks with these
    prefix_end: int = 0
    rank_start: int = 0
    rank_end: int = 0


# ------------------------------------------------------------------------------------------ phases


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseStarted(Event):
    type: ClassVar[str] = "phase_started"
    phase: str
    rank: int | None = None
    launch: int = 0
    #: The log's own timestamp text of the first line of the phase ("" if the line had none).
    log_time: str = ""
    #: that line's seconds after the process start, by the log's clock (a run found running only)
    since_start: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseProgress(Event):
    """Progress inside a phase: ``done``/``total`` in ``unit`` (``shards``, ``bs``, or ``shapes`` for a capture of token counts).

    ``rank`` is the reporting rank (tqdm bars come from rank 0 only); ``ranks_done``/``ranks_total``
    count ranks that finished the phase, and ``slowest_rank`` names the straggler once some have.
    ``label`` is a short free text such as ``bs=48`` or ``avail_mem=61.2 GB``.
    """

    type: ClassVar[str] = "phase_progress"
    phase: str
    done: int = 0
    total: int = 0
    unit: str = ""
    label: str = ""
    rank: int | None = None
    ranks_done: int = 0
    ranks_total: int = 0
    slowest_rank: int | None = None
    launch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseFinished(Event):
    type: ClassVar[str] = "phase_finished"
    phase: str
    seconds: float | None = None
    launch: int = 0
    #: Log timestamp texts of the phase's first and last line; ``seconds`` is computed from them.
    log_time: str = ""
    start_log_time: str = ""
    #: Seconds between the first and the last rank finishing, and who finished last (multi-rank).
    spread: float | None = None
    slowest_rank: int | None = None
    #: Last progress seen in the phase (tqdm ``n/total``), 0/0 if none.
    done: int = 0
    total: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerReady(Event):
    type: ClassVar[str] = "server_ready"
    url: str = ""
    launch: int = 0
    #: Where the startup's seconds that no phase holds went, by the log's clock: every stretch between
    #: the first server line and ready that no phase covers and that is longer than the timestamps'
    #: resolution, as ``(after, before, seconds)``, ``after``/``before`` the neighbouring phases'
    #: indices in :data:`PHASES`, in order (the model's construction between dist_init and
    #: load_target). The time before the first line (imports) is not in the log: the folds that saw
    #: the process start (LaunchStarted) add it.
    gaps: tuple[tuple[int, int, float], ...] = ()
    #: Phases whose length the server measured itself and the log's span missed by more than its
    #: timestamps' resolution (SGLang ≥ 0.5.17's ``Engine startup timings``): folds take these seconds.
    #: Both fields stay small: a ready event is in every recording.
    phase_fixes: dict[str, float] = field(default_factory=dict)
    #: the ready line's seconds after the process start, by the log's clock (a run found running only)
    since_start: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerFailed(Event):
    """The server failed. ``kind`` is one of :data:`FAILURE_KINDS`; ``line`` is the key log line."""

    type: ClassVar[str] = "server_failed"
    kind: str
    message: str
    hint: str = ""
    line: str = ""
    phase: str | None = None
    launch: int = 0
    #: a multi-node server: the node whose log holds the root cause ("" on one host)
    node: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerStopped(Event):
    """A clean shutdown (SIGTERM after serving, or stopped by eagletui): not a crash."""

    type: ClassVar[str] = "server_stopped"
    reason: str = ""
    launch: int = 0
    #: which step of eagletui's stop ended it: ``leader`` (SIGTERM to the main process), ``group``,
    #: ``kill``; empty when the server stopped by itself
    ended_by: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchDetected(Event):
    """The log shows a new server start (server-args line, or dist init after a terminal state).

    Emitted by the classifier; it starts a new phase timeline. ``args`` is what the server-args line
    said in the server's own names (flag name with underscores → value), ``facts`` the same launch in
    eagletui's words (:class:`~eagletui.core.logs.seam.LaunchFacts`: ``model``, ``tp``,
    ``spec_algorithm``, …), ``version`` the server's version when it can be told and ``server`` the
    log format that read it.
    """

    type: ClassVar[str] = "launch_detected"
    args: dict[str, Any] = field(default_factory=dict)
    version: str | None = None
    launch: int = 0
    facts: dict[str, Any] = field(default_factory=dict)
    server: str = ""
    #: read from what the log held when eagletui found the run running: history, never a restart now
    history: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchNote(Event):
    """A fact the server's log (or its launch arguments) stated that is no phase: which all-reduce it set
    up and why not another, which weight loader it used, which batch sizes it captured, a step change of
    adaptive speculation, a progress bar's count with its elapsed time. ``topic``/``key``/``value`` are the
    note vocabulary of :mod:`eagletui.core.logs.seam` (``value`` plain JSON); ``line`` is the line it came
    from (cut), ``log_time`` that line's timestamp text. Emitted once per distinct fact and launch."""

    type: ClassVar[str] = "launch_note"
    topic: str
    key: str
    value: Any = None
    line: str = ""
    log_time: str = ""
    launch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class HostFacts(Event):
    """What the preflight measured on the host for the launch that follows it: ``facts`` holds
    ``checkpoint`` (the weights' bytes and shard count from the checkpoint's safetensors index, the share
    already in the page cache), ``storage`` (a bounded read probe: MB read, seconds, MB/s, whether the
    pages were cached) and ``topology`` (``nvidia-smi topo -m``: the link between each pair of GPUs), each
    absent when it could not be measured, with a ``why`` when known."""

    type: ClassVar[str] = "host_facts"
    facts: dict[str, Any] = field(default_factory=dict)
    target: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchBlocked(Event):
    """A launch (or relaunch) that did not happen, and why: a failed preflight, a refused lock, a stop
    that failed, a run of another profile on the port. It stays on screen until the next launch
    starts, so the reason is never a toast that vanished while the user looked away."""

    type: ClassVar[str] = "launch_blocked"
    reason: str = ""
    #: what stopped it: ``preflight``, ``refused``, ``stop``, ``other``
    stage: str = "other"
    #: the failed preflight checks, one ``name: message`` each, when ``stage`` is ``preflight``
    checks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselinePinned(Event):
    """The user pinned run ``launch`` of this session as the baseline (``m``). An event, not only a
    change to the run book, so the recording keeps it: a replay, an export and every read-only browser
    tab that follows the session judge the runs against the same baseline as the screen did."""

    type: ClassVar[str] = "baseline_pinned"
    launch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessExited(Event):
    type: ClassVar[str] = "process_exited"
    code: int | None = None
    signal: int | None = None
    pid: int | None = None
    launch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LogStale(Event):
    """No log output for ``seconds`` while the server should be busy (``phase``)."""

    type: ClassVar[str] = "log_stale"
    seconds: float
    phase: str | None = None
    launch: int = 0


# ------------------------------------------------------------------------------------------- jobs


#: Slurm job states in which the job's code runs (or is being killed: COMPLETING).
JOB_RUNNING_STATES: tuple[str, ...] = ("CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED")
#: Final states that are the job's own failure (CANCELLED is a stop; COMPLETED, an exit).
JOB_FAILED_STATES: tuple[str, ...] = (
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class JobStatus(Event):
    """What Slurm says about the launch's job, emitted when it changes (``scontrol show job``, ``squeue``).

    ``state`` is Slurm's (``PENDING``, ``RUNNING``, ``COMPLETED``, ``FAILED``, ``CANCELLED``,
    ``TIMEOUT``, ``NODE_FAIL``…); ``reason`` the pending reason (``Resources``, ``Priority``,
    ``ReqNodeNotAvail…``) or why it ended; ``position`` the job's place among its partition's pending
    jobs; ``nodes`` its nodes in rank order once it runs; ``exit_code``/``signal`` its ``ExitCode``
    once it ended. ``source`` says where a final state came from: ``scontrol``, or — once Slurm has
    forgotten the job (``MinJobAge``) — eagletui's ``recorded`` state, the ``batch log`` or the
    ``batch script``'s exit."""

    type: ClassVar[str] = "job_status"
    launch: int = 0
    job_id: str = ""
    state: str = ""
    reason: str = ""
    position: int | None = None
    nodes: tuple[str, ...] = ()
    exit_code: int | None = None
    signal: int | None = None
    source: str = "scontrol"
    #: seconds it waited (Slurm's SubmitTime → StartTime) once it started; None while unknown
    queued_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeProgress(Event):
    """Where one node of a multi-node server is: the phase its ranks are in (``status`` ``active``),
    have finished (``done``), ``ready`` (the server serves) or ``failed``; ``done``/``total`` of the
    phase's progress when that node reports one (tqdm bars come from the head node only)."""

    type: ClassVar[str] = "node_progress"
    launch: int = 0
    node: str = ""
    index: int = 0
    phase: str = ""
    status: str = "active"
    done: int = 0
    total: int = 0
    unit: str = ""


# ----------------------------------------------------------------------------------------- serving


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodeStats(Event):
    """One ``Decode batch`` line."""

    type: ClassVar[str] = "decode_stats"
    gen_throughput: float
    running_req: int = 0
    queue_req: int = 0
    accept_len: float | None = None
    accept_rate: float | None = None
    token_usage: float | None = None
    num_tokens: int | None = None
    cuda_graph: bool | None = None
    launch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecDecodeStats(Event):
    """One speculative-decoding report of the server over its last interval (vLLM's ``SpecDecoding
    metrics`` line): mean accepted tokens per verify step (bonus token included), the fraction of
    drafted tokens accepted, the counts, and the acceptance rate of each draft position."""

    type: ClassVar[str] = "spec_decode_stats"
    accept_len: float | None = None
    accept_rate: float | None = None
    accepted: int | None = None
    drafted: int | None = None
    per_position: tuple[float, ...] = ()
    steps: int | None = None
    #: the counts are totals since the server started (vLLM V0), not the interval's
    cumulative: bool = False
    launch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefillStats(Event):
    type: ClassVar[str] = "prefill_stats"
    new_seq: int = 0
    new_token: int = 0
    cached_token: int = 0
    running_req: int = 0
    queue_req: int = 0
    input_throughput: float | None = None
    launch: int = 0


# ------------------------------------------------------------------------------- launch and config


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchStarted(Event):
    """eagletui launched a server. ``config`` is the full snapshot (see ``Profile.snapshot``)."""

    type: ClassVar[str] = "launch_started"
    launch: int
    target: str
    command: tuple[str, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)
    run_dir: str = ""
    log_path: str = ""
    pid: int | None = None
    diff: dict[str, Any] = field(default_factory=dict)
    #: a Slurm job: its id (the launch then waits in the ``queued`` phase until the job starts)
    job_id: str = ""
    #: how many nodes the server runs on (a multi-node Slurm job: > 1)
    nodes: int = 1
    #: a run eagletui found running (a reattach): its process started this many seconds before this event
    started_ago: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigChanged(Event):
    """Pending tuning changes were applied. ``changes`` maps ``env:NAME``/``arg:--flag`` to [old, new]."""

    type: ClassVar[str] = "config_changed"
    changes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionState(Event):
    """``state``: connecting, connected, reconnecting, lost, closed. ``retry_in`` seconds if reconnecting."""

    type: ClassVar[str] = "connection"
    state: str
    target: str = ""
    detail: str = ""
    retry_in: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuStats(Event):
    """One ``nvidia-smi --query-gpu`` sample: a tuple of dicts with index, name, mem_used_mb,
    mem_total_mb, util_pct, power_w."""

    type: ClassVar[str] = "gpu_stats"
    gpus: tuple[dict[str, Any], ...] = ()
    #: set when no sample could be read (``nvidia-smi`` hung or failed): why; the last good sample
    #: stands, shown as stale with its age
    stale: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice(Event):
    """A message for the user (preflight results, warnings) that belongs in the recording too."""

    type: ClassVar[str] = "notice"
    level: str = "info"
    message: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFailed(Event):
    """A background task ended with an error and no longer runs: a UI worker (``driver``, ``launch``,
    ``bench``, …) or a task of the live source (``log tail``, ``process watch``, ``gpu poll``,
    ``log source``). ``task`` names it; the status line says it stopped until it runs again (a new
    launch restarts the log tail and the process watch)."""

    type: ClassVar[str] = "task_failed"
    task: str
    message: str
    launch: int = 0


# -------------------------------------------------------------------------------------- benchmarks


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchmarkStarted(Event):
    type: ClassVar[str] = "bench_started"
    bench: int
    launch: int = 0
    runner: str = "builtin"
    workload: dict[str, Any] = field(default_factory=dict)
    workload_fingerprint: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchmarkSample(Event):
    """A live benchmark sample. ``scope`` is ``request`` (one finished request) or ``tick`` (aggregate
    over the last second). Fields that a scope does not have are None."""

    type: ClassVar[str] = "bench_sample"
    bench: int
    scope: str = "request"
    t: float = 0.0
    tok_s: float | None = None
    accept_len: float | None = None
    ttft_ms: float | None = None
    itl_ms: float | None = None
    output_tokens: int | None = None
    launch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchmarkResult(Event):
    """Final benchmark numbers. ``stats`` holds distributions: ``{"ttft_ms": {"mean", "median", "p90",
    "p99"}, "itl_ms": {...}, "tok_s": {...}, "accept_len": {...}}``."""

    type: ClassVar[str] = "bench_result"
    bench: int
    launch: int = 0
    runner: str = "builtin"
    output_throughput: float = 0.0
    accept_length: float | None = None
    requests: int = 0
    failed: int = 0
    duration_s: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)
    workload_fingerprint: str = ""
    error: str = ""
    #: how ``accept_length`` was measured (docs/economics.md): ``formula``/``source`` of the number
    #: shown, the same run's value by each other definition (``per_request_mean``, ``from_drafts``,
    #: ``metrics``), the server's ``correct_drafts`` and ``verify_ct`` counts, and ``histogram``: how
    #: many verifies accepted 0, 1, 2 … draft tokens (``spec_correct_drafts_histogram`` summed)
    accept: dict[str, Any] = field(default_factory=dict)
    #: ms per decode iteration (a whole draft+verify cycle when speculating) at the benchmark's batch
    #: size, from the server's own step-time record (``SGLANG_RECORD_STEP_TIME``) during this run
    step_ms: float | None = None
    #: accept length by prompt-length bucket (``prompt_len``: ``[{lo, hi, accept, n}]``, tokens) and by
    #: prompt category (``category``: ``{name: {accept, n}}``), pooled Σ completion ÷ Σ verify per group,
    #: from each request's ``prompt_tokens``/``completion_tokens``/``spec_verify_ct`` (issue 25)
    accept_by: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, Any] = field(default_factory=dict)  # per request, bounded: core/runs/latency.py


# -------------------------------------------------------------------------------------- step profiles


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileCaptured(Event):
    """A step profile taken from the running server (``/start_profile``) and summarised. ``summary`` is
    :func:`eagletui.profiler.summary.step_breakdown`'s dict (``ranks``, ``steps`` = decode cycles seen,
    ``unit`` "cycle" (draft + verify + draft extend) or "step", ``step_ms`` and ``categories`` = kernel ms
    per cycle, ``parts``, ``prefill_batches``, ``skew_ms``; recordings made before issue 18 lack ``unit``,
    ``parts`` and ``prefill_batches``); ``files`` are the fetched traces on this machine; an ``error`` says
    why no profile came back (then ``summary`` is empty)."""

    type: ClassVar[str] = "profile_captured"
    launch: int = 0
    files: tuple[str, ...] = ()
    summary: dict[str, Any] = field(default_factory=dict)
    error: str = ""


ALL_EVENT_TYPES: tuple[type[Event], ...] = tuple(_REGISTRY.values())
