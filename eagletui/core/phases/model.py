"""The state a phase machine folds into: phases per rank, failure candidates, the read-only view.

Plain data, no rules: :mod:`eagletui.core.phases.machine` and its mixins (:mod:`.timeline`,
:mod:`.phase_lines`, :mod:`.failures`, :mod:`.launch_notes`, :mod:`.serving`) mutate it; callers read
it through ``LogInterpreter.state``.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from eagletui.core import events as ev

PHASE_INDEX = {p: i for i, p in enumerate(ev.PHASES)}

LOADING, READY, FAILED, STOPPED, UNKNOWN = "loading", "ready", "failed", "stopped", "unknown"

#: Decode events kept in :attr:`MachineState.decode_history`.
DECODE_HISTORY = 1024

# Phases every rank goes through (their completion waits for all known ranks).
_PER_RANK = frozenset(
    {"dist_init", "load_target", "load_draft", "compile", "kv_cache", "capture_prefill", "capture_target"}
)


@dataclass(slots=True)
class PhaseInfo:
    """One phase of the current timeline; per-rank sets are keyed by the prefix's rank text."""

    name: str
    start_ts: float | None = None
    start_text: str = ""
    end_ts: float | None = None
    end_text: str = ""
    finished: bool = False
    started: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)
    open: dict[str, int] = field(default_factory=dict)
    rank_start: dict[str, float] = field(default_factory=dict)
    rank_end: dict[str, float] = field(default_factory=dict)
    progress_done: int = 0
    progress_total: int = 0
    unit: str = ""
    label: str = ""
    seconds: float | None = None
    spread: float | None = None
    slowest_rank: int | None = None
    #: started by a progress bar (no begin line): done when the bar is full and the log moves on;
    #: the bar's own elapsed time is then the phase's duration
    bar: bool = False
    bar_elapsed: float | None = None
    source: str = ""  # "server": ``seconds`` is the server's own measure (ServerReady.phase_fixes)


@dataclass(slots=True)
class Candidate:
    kind: str
    prio: int
    tag: str
    message: str
    line: str
    phase: str | None
    draft: bool = False  # its traceback's frames are the draft model's (the speculative worker)


@dataclass
class MachineState:
    """Read-only view for callers (``LogInterpreter.state``); mutate only through the machine."""

    launch: int = 0
    status: str = UNKNOWN
    phase: str | None = None
    phases: dict[str, PhaseInfo] = field(default_factory=dict)
    failure: ev.ServerFailed | None = None
    stopped: ev.ServerStopped | None = None
    version: str | None = None
    args: dict[str, Any] | None = None
    #: the launch in eagletui's words (LaunchFacts.facts()), beside the server's own ``args``
    facts: dict[str, Any] | None = None
    launches: int = 0
    decode_count: int = 0
    decode_history: deque[ev.DecodeStats] = field(default_factory=lambda: deque(maxlen=DECODE_HISTORY))
    ranks: set[str] = field(default_factory=set)
    #: The HTTP address from uvicorn's ``Uvicorn running on …`` line ("" until seen).
    url: str = ""


class DecodeRows:
    """Several consecutive Decode lines in one item, for offline summaries only (not an Event).

    :meth:`LogInterpreter.feed_bulk` yields this instead of one :class:`~eagletui.core.events.DecodeStats`
    per line: ``gen``/``acc`` hold every line's gen throughput and (where printed) accept length in
    order, ``last`` is the full event of the last line. Never recorded or shown by the UI.
    """

    __slots__ = ("launch", "count", "gen", "acc", "last", "eager")
    type = "decode_rows"

    def __init__(
        self, launch: int, gen: array, acc: array, last: ev.DecodeStats, eager: array | None = None
    ) -> None:
        self.launch = launch
        self.count = len(gen)
        self.gen = gen
        self.acc = acc
        self.last = last
        #: the running batch size of each line of the run that ran without a CUDA graph
        self.eager = eager if eager is not None else array("i")


class SpecRows:
    """Several speculative-decoding reports in one item (a format's metrics lines folded by ``eagletui
    parse``'s bulk scan beside the DecodeRows of the stats lines they pair with): what
    :class:`~eagletui.core.state.summary.Summarizer` reads of them. Never recorded or shown by the UI."""

    __slots__ = ("launch", "count", "acc", "accepted", "drafted", "last")
    type = "spec_rows"

    def __init__(
        self, launch: int, count: int, acc: array, accepted: int, drafted: int, last: ev.SpecDecodeStats
    ) -> None:
        self.launch = launch
        self.count = count
        self.acc = acc
        self.accepted = accepted
        self.drafted = drafted
        self.last = last
