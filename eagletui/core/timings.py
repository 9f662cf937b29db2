"""Every wait of the engine in one typed object: polls, staleness, keepalives, timeouts, grace periods,
stall thresholds, the GPU gate's waits, the sweep's back-offs and the liveness checks.

Why one object: these numbers decide when eagletui says "stalled", "stale" or "dead", how long a stop
waits before it escalates and how soon a change on the host is seen. Spread as keyword defaults over
thirty modules they could not be read, reviewed or changed together, and every test that needed them
short overrode them one by one. Here they have one documented home; a command or the app builds one
:class:`Timings` (:func:`Timings.from_env`) and passes it down, and no engine module keeps a default of
its own. The real timings are the defaults of the dataclasses below; :data:`FAST` is the profile the
tests use (short polls and thresholds, the same rules). ``EAGLETUI_TIMINGS`` picks one for a process
(``real``, ``fast``, either followed by ``,group.field=seconds`` overrides), which is how a test hands
the fast profile to a command it runs as a subprocess.

The clock is part of it (:class:`Clock`): code that decides on elapsed time (stall, staleness, an ETA)
reads ``timings.clock``, so a test can move time instead of waiting for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

ENV_VAR = "EAGLETUI_TIMINGS"


class Clock(Protocol):
    """Where time comes from: the system's, or a test's that moves when told."""

    def monotonic(self) -> float: ...

    def wall(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock: ``time.monotonic``, ``time.time`` and ``asyncio.sleep``."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that stands still until :meth:`advance` moves it; ``sleep`` advances it at once (and
    yields to the loop), so code that waits on this clock runs without waiting."""

    def __init__(self, start: float = 1_000.0, wall_start: float = 1_800_000_000.0) -> None:
        self._mono = float(start)
        self._offset = float(wall_start) - float(start)

    def monotonic(self) -> float:
        return self._mono

    def wall(self) -> float:
        return self._mono + self._offset

    def advance(self, seconds: float) -> None:
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError(f"a clock moves forward by a finite number of seconds, not {seconds!r}")
        self._mono += seconds

    async def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)

    def __repr__(self) -> str:
        return f"ManualClock(at={self._mono:g})"


@dataclass(frozen=True, slots=True)
class LinkTimings:
    """Reaching the host: SSH keepalives and connects, and how long one command may take."""

    #: an SSH keepalive every this many seconds; the link is declared down after ``keepalive_count`` unanswered
    keepalive_s: float = 5.0
    keepalive_count: int = 3
    #: one SSH connect attempt (TCP, key exchange, host key check, auth)
    connect_s: float = 20.0
    #: a command on the host that has no bound of its own (``stat``, ``cat``, ``mktemp``…)
    command_s: float = 30.0
    #: ``true`` on the host: "can we reach it at all" before the UI opens
    reach_s: float = 20.0
    #: how long a local command that overran is given to die after SIGKILL
    kill_wait_s: float = 2.0
    #: a finished SSH stream's exit status, and a closing connection's goodbye, are waited this long
    close_s: float = 5.0
    #: the tail's reconnect back-off after a dropped channel: doubles from ``backoff_initial_s``
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 10.0


@dataclass(frozen=True, slots=True)
class WatchTimings:
    """Following a running server: the log, its liveness, the GPUs, a Slurm job."""

    #: how often the log source asks whether the server still lives (and the log's size)
    poll_s: float = 1.0
    #: a Slurm job's state (``scontrol``) is asked this often unless the profile's ``[slurm] poll_s`` says
    job_poll_s: float = 2.0
    #: no log byte for this long while the server should be writing: the log is stale (said, not fatal)
    stale_s: float = 120.0
    #: ``nvidia-smi`` telemetry every this many seconds, each read given this long
    gpu_poll_s: float = 2.0
    gpu_read_s: float = 10.0
    #: a ``stat`` of the log on the host
    stat_s: float = 10.0
    #: after the server died, its log is read on until it has been quiet this long (the crash message
    #: is the last thing it wrote), at most ``drain_limit_s``
    drain_settle_s: float = 0.3
    drain_limit_s: float = 5.0


@dataclass(frozen=True, slots=True)
class ControlTimings:
    """Launching, proving and stopping a server."""

    #: a "dead" verdict is acted on only if a second check this much later agrees
    confirm_dead_s: float = 0.5
    #: a launch whose answer was lost is looked for this many times, this far apart
    reconcile_attempts: int = 6
    reconcile_s: float = 1.0
    #: the host-side launch operation (lock, checks, fork)
    launch_op_s: float = 60.0
    #: one liveness probe on the host
    probe_s: float = 15.0
    #: SIGTERM to the leader, waited this long (SGLang drains and stops its schedulers)…
    stop_grace_s: float = 30.0
    #: …then SIGTERM to the group, waited this long…
    stop_group_wait_s: float = 10.0
    #: …then SIGKILL, waited this long
    stop_kill_wait_s: float = 10.0
    #: the host-side stop is waited for those three plus this (its port release and exit record waits)
    stop_margin_s: float = 60.0
    #: a Slurm cancel is waited for the grace plus this (Slurm's KillWait, 30 s by default, and margin)
    cancel_margin_s: float = 60.0
    #: ``sbatch`` through the login node
    submit_s: float = 90.0
    #: ``scontrol``/``squeue``/``sinfo`` through the login node
    scheduler_s: float = 40.0
    #: after a stop returned, the log tail is given this long to deliver the last lines
    stop_drain_s: float = 0.2
    #: the demo's own simulator is stopped with this grace on quit; its emergency stop (a quit that
    #: hung) waits this long after each signal
    demo_grace_s: float = 5.0
    demo_kill_wait_s: float = 5.0


@dataclass(frozen=True, slots=True)
class HttpTimings:
    """The benchmark client's exchanges with the server (:class:`~eagletui.bench.httplimits.HttpLimits`
    holds these with its size caps)."""

    connect_s: float = 10.0
    #: the longest silence (not one byte) tolerated from the server before the first byte
    read_s: float = 300.0
    #: the longest wait for the next complete ``data:`` event of a stream
    idle_s: float = 300.0
    #: one request end to end, unless the profile's ``[bench] timeout_s`` says
    total_s: float = 1800.0
    #: a stream that has started and then says nothing this long has stalled
    stall_s: float = 30.0
    #: no stream made progress this long while requests wait: the server is not serving
    server_stall_s: float = 60.0
    #: the stall watch says what it waits for every this many seconds of silence…
    progress_s: float = 10.0
    #: …and looks this often
    stall_poll_s: float = 0.5
    #: the live samples (tok/s, accept length) every this many seconds
    tick_s: float = 1.0
    #: after a cut, the link's state is given this long to catch up before a prompt is drawn
    link_settle_s: float = 0.25
    #: refused connections with the link up end a benchmark as "server gone" only once they have gone
    #: on this long: a cut SSH link is reported a moment late, longer on a loaded machine, and its
    #: refusals meanwhile are the link's (a CI run saw 4 in 0.5 s end a benchmark under SSH cuts)
    gone_after_s: float = 3.0
    #: "is anything answering on this port?" before a benchmark blames the server
    probe_s: float = 5.0


@dataclass(frozen=True, slots=True)
class SweepTimings:
    """The GPU gate between launches, the sweep's back-offs and the step profile."""

    #: the GPU gate reads memory this often while it waits for the previous server's to be released
    gate_poll_s: float = 1.0
    #: one ``nvidia-smi`` memory reading for the gate
    gate_read_s: float = 15.0
    #: after an OOM the memory is given this long to settle before the launch is retried
    oom_settle_s: float = 30.0
    #: a profile capture (``/start_profile`` and the traces written) is given this long
    profile_s: float = 180.0
    #: the capture looks for the trace files this often
    profile_poll_s: float = 1.0
    #: the load that keeps a profiled server decoding: a pause after a wave the server refused entirely
    profile_refused_s: float = 0.5
    #: ``bench --vs-no-spec`` and the TUI's ``D``: the most time spent on more no-spec runs to tell a
    #: point from its noise (``--decide-within``; 0: none)
    decide_s: float = 600.0
    #: ``[sweep.max_rate]``: the most time one launch's search for its highest rate under the SLO may
    #: take; no step starts after it (a benchmark under way ends by its own waits)
    max_rate_s: float = 1800.0


@dataclass(frozen=True, slots=True)
class PreflightTimings:
    """The pre-launch checks: each has a budget so a hung host says "unknown", not nothing."""

    host_check_s: float = 60.0
    gpu_query_s: float = 30.0
    port_probe_s: float = 3.0
    host_flags_s: float = 90.0
    disk_s: float = 20.0
    reach_s: float = 10.0


@dataclass(frozen=True, slots=True)
class SessionTimings:
    """Headless commands and the session around the UI: waits for ready and exit, progress, quitting,
    following a served session."""

    #: how often a headless command looks whether the server is ready or has exited
    ready_poll_s: float = 0.1
    #: after a failure the exit record is waited for this long (the log says why; the exit comes later)
    exit_record_s: float = 15.0
    #: a headless benchmark prints its progress every this many seconds
    progress_s: float = 2.0
    #: closing the workspace on quit (stopping what the demo started) may take this long
    close_s: float = 30.0
    #: a benchmark being cancelled is given this long to close its run
    cancel_s: float = 15.0
    #: a quit that has not finished after this long is forced (a gone terminal can block the loop)
    force_quit_s: float = 20.0
    #: how often a quit looks whether a launch in flight has finished
    busy_poll_s: float = 0.1
    #: a read-only tab polls the feed this often, and waits this long for the session to start
    follow_poll_s: float = 0.1
    follow_open_s: float = 30.0
    #: the served session's presence file (who controls, who watches) is re-read at most this often
    presence_reread_s: float = 0.5
    #: ``eagletui serve``: an app asked to quit, then terminated; a new owner waits for the old to go
    web_quit_s: float = 30.0
    web_term_s: float = 10.0
    web_handover_s: float = 60.0
    #: a browser tab is pinged this often, and taken as gone (its app quits) only after this many pings
    #: in a row went unanswered: one late pong (a loaded machine, a slow tunnel) never ends a session
    web_ping_s: float = 15.0
    web_ping_misses: int = 4


@dataclass(frozen=True, slots=True)
class Timings:
    """All of the above, and the clock they are measured on. Build one per command or app
    (:meth:`from_env`) and pass it down."""

    link: LinkTimings = field(default_factory=LinkTimings)
    watch: WatchTimings = field(default_factory=WatchTimings)
    control: ControlTimings = field(default_factory=ControlTimings)
    http: HttpTimings = field(default_factory=HttpTimings)
    sweep: SweepTimings = field(default_factory=SweepTimings)
    preflight: PreflightTimings = field(default_factory=PreflightTimings)
    session: SessionTimings = field(default_factory=SessionTimings)
    clock: Clock = field(default_factory=SystemClock, compare=False)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Timings:
        """The profile ``EAGLETUI_TIMINGS`` names (``real`` when unset), with its overrides; a
        malformed value is an error that says what is wrong, never a silent default."""
        spec = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
        return parse(spec) if spec else REAL

    def replace(self, **overrides: float) -> Timings:
        """A copy with ``group_field=seconds`` overrides (``http_stall_s=2``)."""
        return _override(self, {k.replace("_", ".", 1): v for k, v in overrides.items()})

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {
            f.name: dataclasses.asdict(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "clock"
        }


class TimingsError(ValueError):
    """A malformed ``EAGLETUI_TIMINGS``."""


def _override(base: Timings, pairs: dict[str, Any]) -> Timings:
    groups: dict[str, dict[str, Any]] = {}
    for key, raw in pairs.items():
        group, _, name = key.partition(".")
        sub = getattr(base, group, None) if group != "clock" else None
        names = {f.name: f for f in dataclasses.fields(sub)} if dataclasses.is_dataclass(sub) else {}
        if name not in names:
            known = ", ".join(f.name for f in dataclasses.fields(Timings) if f.name != "clock")
            raise TimingsError(f"{ENV_VAR}: no timing {key!r} (groups: {known})")
        kind = int if names[name].type in ("int", int) else float
        try:
            value = kind(raw)
        except (TypeError, ValueError):
            raise TimingsError(f"{ENV_VAR}: {key}={raw!r} is not a number") from None
        if not (math.isfinite(value) and value >= 0):
            raise TimingsError(f"{ENV_VAR}: {key}={raw!r} must be a finite number ≥ 0")
        groups.setdefault(group, {})[name] = value
    changed = {g: dataclasses.replace(getattr(base, g), **v) for g, v in groups.items()}
    return dataclasses.replace(base, **changed)


def parse(spec: str) -> Timings:
    """``real`` | ``fast``, then optional ``,group.field=seconds`` overrides."""
    head, *rest = [p.strip() for p in spec.split(",") if p.strip()] or ["real"]
    if "=" in head:
        head, rest = "real", [head, *rest]
    profiles = {"real": REAL, "fast": FAST}
    if head not in profiles:
        raise TimingsError(f"{ENV_VAR}: unknown profile {head!r} (real, fast)")
    pairs: dict[str, str] = {}
    for item in rest:
        key, sep, value = item.partition("=")
        if not sep:
            raise TimingsError(f"{ENV_VAR}: {item!r} is not group.field=seconds")
        pairs[key.strip()] = value.strip()
    return _override(profiles[head], pairs) if pairs else profiles[head]


#: The real timings: what users get.
REAL = Timings()

#: The tests' profile: the same rules, short waits. Polls and back-offs shrink most; thresholds that
#: decide "stalled" or "stale" shrink less, so a busy test machine does not trip them by accident.
FAST = Timings(
    link=LinkTimings(keepalive_s=1.0, keepalive_count=3, connect_s=10.0, command_s=30.0, reach_s=10.0),
    watch=WatchTimings(poll_s=0.25, job_poll_s=0.5, stale_s=30.0, gpu_poll_s=0.5),
    control=ControlTimings(
        confirm_dead_s=0.2, reconcile_s=0.25, stop_grace_s=15.0, stop_group_wait_s=5.0, stop_kill_wait_s=5.0
    ),
    http=HttpTimings(stall_s=10.0, server_stall_s=15.0, progress_s=2.0, stall_poll_s=0.2, tick_s=0.25),
    sweep=SweepTimings(
        gate_poll_s=0.25, oom_settle_s=2.0, profile_s=60.0, profile_poll_s=0.25, decide_s=20.0, max_rate_s=60.0
    ),
    session=SessionTimings(ready_poll_s=0.05, progress_s=0.5, follow_poll_s=0.05),
)
