"""What the index of a recording says about it: timeline marks, playback positions, the summary
``eagletui sessions`` lists, and how times from the start are stepped from recorded clocks.

The value types and small rules of :mod:`eagletui.session.index`, apart from its byte scanning and block
decoding so they can be read (and imported by the replayer and the catalog) without that machinery.
:mod:`eagletui.session.index` re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagletui.core.events import (
    BenchmarkResult,
    ConfigChanged,
    Event,
    LaunchStarted,
    ProcessExited,
    ServerFailed,
    ServerReady,
)
from eagletui.session.codec import LogCodec, _is_number

#: Event types that make the timeline (``marks``), with the kind of mark each is.
TIMELINE_TYPES: dict[str, str] = {
    "launch_started": "launch",
    "config_changed": "config",
    "server_ready": "ready",
    "server_failed": "failure",
    "process_exited": "exit",
    "bench_result": "result",
}
#: Event types a seek re-feeds from before the target (besides the recent window): what the session
#: state needs to stand at a point (which launch, its phases, its benchmarks) without the whole past.
CONTEXT_TYPES = frozenset(
    {
        *TIMELINE_TYPES,
        "launch_detected",
        "phase_started",
        "phase_finished",
        "server_stopped",
        "launch_blocked",
        "baseline_pinned",
        "bench_started",
        "connection",
        # the diagnoses' evidence (a seek must not forget why a launch was slow)
        "launch_note",
        "host_facts",
        "profile_captured",
    }
)


@dataclass(frozen=True, slots=True)
class Mark:
    """A point on the timeline: ``kind`` is launch, config, ready, failure, exit or result."""

    kind: str
    t: float  # seconds from the start of the recording
    line: int  # event line number (0 = the first line after the header)
    launch: int
    label: str
    event: Event = field(repr=False)


@dataclass(frozen=True, slots=True)
class Position:
    """Where playback stands: ``line`` is the next event line to play, ``t`` the time there."""

    line: int
    t: float


@dataclass(slots=True)
class Summary:
    """What ``eagletui sessions`` lists about a recording (all from the index pass)."""

    created: str = ""
    target: str = ""
    profile: str = ""
    model: str = ""
    duration: float = 0.0
    events: int = 0
    launches: int = 0
    failures: int = 0
    best_tok_s: float | None = None
    best_accept: float | None = None
    best_launch: int | None = None
    #: the baseline's tok/s and launch: the first run with valid results (the run book's rule)
    baseline_tok_s: float | None = None
    baseline_launch: int | None = None
    #: each spec run paired with its no-spec reference: ``{"spec", "no_spec", "speedup",
    #: "concurrency", "like_for_like"}`` (the run book's economics, as the runs table shows them); a
    #: pair that is not like for like has no speedup and says ``"unjudged"`` and ``"differs_in"``
    spec_pairs: list[dict[str, Any]] = field(default_factory=list)
    #: launches whose results cannot count (the validity gate): ``{"launch", "reason"}`` (the first)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    #: each launch that reached ready: ``{"launch", "signature", "phases", "total", "cache"}`` (its launch
    #: signature, phase seconds, launch → ready, page cache as the preflight measured it), for the startup
    #: distributions (core/phases/startup_stats.py)
    startup: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


#: Decoded clocks are kept to the microsecond between keyframes and exact at them, so the monotonic
#: clock can seem to step back by a rounding there: that is no step, not a reason to trust the wall
#: clock (kept to half a millisecond) instead.
_CLOCK_ROUNDING = 1e-5


def _step(prev: tuple[float, float] | None, mono: float, wall: float) -> float:
    if prev is None:
        return 0.0
    step = mono - prev[0]
    if step < -_CLOCK_ROUNDING:
        step = wall - prev[1]
    return max(0.0, step)


def _clock_of(data: Any) -> tuple[float, float] | None:
    """``(mono, wall)`` of a seek-point line, or None if the line is not one (a nested ``"@":1``)."""
    mark = LogCodec.SEEK_MARK
    if isinstance(data, dict):
        if data.get(mark) == 1 and isinstance(data.get("type"), str):
            mono, wall = data.get("mono"), data.get("wall")
            if _is_number(mono) and _is_number(wall):
                return float(mono), float(wall)
    elif isinstance(data, list) and len(data) == 4 and isinstance(data[3], dict) and data[3].get(mark) == 1:
        mono, wall = data[3].get("mono"), data[3].get("wall")
        if _is_number(mono) and _is_number(wall):
            return float(mono), float(wall)
    return None


def _label(ev: Event) -> str:
    if isinstance(ev, LaunchStarted):
        return f"launch {ev.launch}"
    if isinstance(ev, ConfigChanged):
        names = ", ".join(sorted(ev.changes)[:3])
        return f"config: {names}" + (" …" if len(ev.changes) > 3 else "")
    if isinstance(ev, ServerReady):
        return "ready"
    if isinstance(ev, ServerFailed):
        return f"failed: {ev.kind}"
    if isinstance(ev, ProcessExited):
        return f"exited {ev.code if ev.code is not None else f'signal {ev.signal}'}"
    if isinstance(ev, BenchmarkResult):
        acc = f" · accept {ev.accept_length:.2f}" if ev.accept_length is not None else ""
        return f"bench {ev.output_throughput:.1f} tok/s{acc}" if not ev.error else f"bench error: {ev.error}"
    return ev.type


def _model_of(config: Any) -> str:
    if not isinstance(config, dict):
        return ""
    args = config.get("args")
    for holder in [config, *([args] if isinstance(args, dict) else [])]:
        for key in ("model", "model_path", "model-path", "--model-path", "--model"):
            v = holder.get(key)
            if isinstance(v, str) and v:
                return v
    return ""
