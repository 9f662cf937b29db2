"""What the screen knows of one launch: its status, its phases, its Slurm job and its nodes.

The data :class:`~eagletui.core.state.screen.SessionState` folds events into (one :class:`LaunchState`
per launch), with the few queries the panels ask of it (the current phase, the phase durations, the
node furthest behind). Apart from the fold in :mod:`eagletui.core.state.screen` so each stays a
readable size. Pure: every time comes from an event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from eagletui.core.events import LOG_PHASES, PHASES, ServerFailed
from eagletui.core.host.nccl import NcclFold
from eagletui.core.state.adaptive import TierView


class ServerState(StrEnum):
    """Where a launch is (and, for the session, the current launch; ``idle`` before any)."""

    IDLE = "idle"
    #: a Slurm job waiting in the queue (nothing runs yet)
    QUEUED = "queued"
    LAUNCHING = "launching"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"
    STOPPED = "stopped"
    EXITED = "exited"


#: A launch's status is the server state of that launch.
LaunchStatus = ServerState


class PhaseStatus(StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass
class PhaseState:
    name: str
    status: PhaseStatus = PhaseStatus.PENDING
    started: float | None = None  # wall clock
    finished: float | None = None
    seconds: float | None = None
    done: int = 0
    total: int = 0
    unit: str = ""
    label: str = ""
    ranks_done: int = 0
    ranks_total: int = 0
    slowest_rank: int | None = None

    def elapsed(self, now: float) -> float | None:
        if self.seconds is not None and self.status == PhaseStatus.DONE:
            return self.seconds
        if self.started is None:
            return None
        end = self.finished if self.finished is not None else now
        return max(0.0, end - self.started)

    @property
    def fraction(self) -> float | None:
        if self.total > 0:
            return min(1.0, self.done / self.total)
        if self.status == PhaseStatus.DONE:
            return 1.0
        return None


@dataclass
class JobView:
    """A Slurm launch's job as the fold knows it (see :class:`~eagletui.core.events.JobStatus`)."""

    job_id: str
    state: str = "PENDING"
    reason: str = ""
    position: int | None = None
    submitted: float | None = None  # wall clock of the submit (or of the reattach)
    started: float | None = None  # when it was first seen running
    ended: float | None = None
    nodes: tuple[str, ...] = ()
    exit_code: int | None = None
    signal: int | None = None
    source: str = ""

    def waited(self, now: float) -> float | None:
        """Seconds in the queue: submit → start (or → now while pending)."""
        if self.submitted is None:
            return None
        end = self.started if self.started is not None else (self.ended if self.ended is not None else now)
        return max(0.0, end - self.submitted)


@dataclass
class NodeView:
    """One node of a multi-node server (see :class:`~eagletui.core.events.NodeProgress`)."""

    name: str
    index: int
    phase: str = ""
    status: str = "pending"
    done: int = 0
    total: int = 0
    unit: str = ""
    since: float | None = None  # when it entered ``phase``
    #: phase → wall clock it finished on this node
    finished: dict[str, float] = field(default_factory=dict)

    @property
    def rank(self) -> int:
        """How far it got: the phase's place in the vocabulary (a finished phase counts one more)."""
        if self.status == "ready":
            return len(PHASES)
        idx = PHASES.index(self.phase) if self.phase in PHASES else 0
        return idx + (1 if self.status == "done" else 0)


@dataclass
class LaunchState:
    launch: int
    started: float | None = None
    config: dict[str, Any] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    diff: dict[str, Any] = field(default_factory=dict)
    log_path: str = ""
    phases: dict[str, PhaseState] = field(default_factory=lambda: {p: PhaseState(p) for p in PHASES})
    status: ServerState = ServerState.LAUNCHING
    failure: ServerFailed | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    ready_at: float | None = None
    #: when the launch failed, stopped or exited before it was ready (wall clock): its elapsed time ends
    #: there (it ran on to the end of the session: "failed … elapsed 3m20s" for a 20.7 s launch)
    ended_at: float | None = None
    #: launch → ready in seconds (core.runs.launch_to_ready: what the runs table and export say)
    ready_after: float | None = None
    stale_for: float | None = None
    version: str | None = None
    #: eagletui started this process (LaunchStarted): ``started`` is the process start, not a first line
    launched: bool = False
    #: found running (a reattach): ``started`` is the host's record; its log's past is timed by the log only
    found_running: bool = False
    #: seconds from the process start to its first log line (imports; not in the log), launched only
    before_first_line: float | None = None
    #: where the startup's seconds went by the log's clock (ServerReady.gaps: ``{"gaps": [...]}``)
    startup: dict[str, Any] | None = None
    #: NCCL_DEBUG=INFO lines of this launch, folded (only lines containing "NCCL INFO" reach it)
    nccl: NcclFold = field(default_factory=NcclFold)
    #: a Slurm launch's job (None for a detached process)
    job: JobView | None = None
    #: a multi-node server's nodes by name, in rank order of arrival
    nodes: dict[str, NodeView] = field(default_factory=dict)
    node_count: int = 1
    #: adaptive speculation's tiers over time, their startup cost, a silent fall-back (core/state/adaptive)
    adaptive: TierView = field(default_factory=TierView)

    @property
    def current_phase(self) -> str | None:
        active = [p for p in PHASES if self.phases[p].status == PhaseStatus.ACTIVE]
        if active:
            return active[-1]
        reached = [p for p in PHASES if self.phases[p].status in (PhaseStatus.DONE, PhaseStatus.FAILED)]
        return reached[-1] if reached else None

    def shown_phases(self) -> tuple[str, ...]:
        """The phases this launch has: ``queued`` only for a Slurm job."""
        return PHASES if self.job is not None else LOG_PHASES

    def phase_durations(self) -> dict[str, float]:
        """Seconds of each finished phase of the launch. The queue wait is not launch time (it says
        nothing about the next launch of this config): it is left out (:attr:`queued_seconds`)."""
        return {
            p: s.seconds
            for p, s in self.phases.items()
            if s.status == PhaseStatus.DONE and s.seconds is not None and p != "queued"
        }

    @property
    def queued_seconds(self) -> float | None:
        q = self.phases["queued"]
        return q.seconds if q.status == PhaseStatus.DONE else None

    def straggler(self, now: float) -> tuple[str, str, float] | None:
        """The node furthest behind while another has moved on: (node, its phase, seconds since the
        first node finished that phase). None on one node, or while all keep pace."""
        nodes = [n for n in self.nodes.values() if n.status not in ("failed", "stopped")]
        if len(nodes) < 2:
            return None
        top = max(n.rank for n in nodes)
        worst: tuple[str, str, float] | None = None
        for n in nodes:
            if n.rank >= top or not n.phase:
                continue
            ahead = [o.finished[n.phase] for o in nodes if o is not n and n.phase in o.finished]
            if not ahead:
                continue
            behind = max(0.0, now - min(ahead))
            if worst is None or behind > worst[2]:
                worst = (n.name, n.phase, behind)
        return worst
