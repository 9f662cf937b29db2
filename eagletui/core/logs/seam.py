"""The seam between "a server's log" and eagletui's model of a launch.

Everything server-specific sits behind one :class:`LogFormat`: how a line is cut and classified, which
version a line's wording points to, which lines are failures and what to do about them, what a launch
line says (:class:`LaunchFacts`). The phase machine (:mod:`eagletui.core.phases.machine`) and the
interpreter (:mod:`eagletui.core.phases.interpreter`) only know the vocabulary below: a :class:`Rec` per
logical line with a coarse ``kind`` and a fine ``tag``. Like Toolong's list of log formats, the
registry (:mod:`eagletui.core.logs.formats`) holds every known one; a new server is one module under
``formats/`` that subclasses :class:`LogFormat`, plus its line in the registry.

Tags a format may give a record (the machine switches on these, nothing else):

* startup: ``server_args`` (``data["raw"]``), ``dist_begin``/``dist_end``, ``load_begin``/``load_end``
  (``data["type"]``: the model class), ``load_commit``, ``compile_begin``/``compile_end``/
  ``compile_info``, ``kv_alloc``/``kv_info``, ``pool_end``, ``capture_begin``/``capture_end``/
  ``capture_info`` (``data["draft"]``, ``data["what"]``: prefill, verify, decode, extend, piecewise),
  ``bar_shards``/``bar_capture`` (``data`` done/total/label; a capture bar may name its graph with
  ``draft``/``what`` and then starts that phase itself), ``summary``, ``timings`` (optional
  ``data["phase_seconds"]``: phase → the server's own measure of it, seconds, for phases whose lines
  cannot time them), ``ready``;
* serving: ``decode``/``prefill`` (``data``: the stats fields of :mod:`eagletui.core.events`);
* HTTP: ``http_up`` (``data["url"]``), ``http_startup``, ``http_shutdown``, ``access``, ``access_generate``;
* failures: ``fail`` (``data["failure"]`` = ``(kind, priority, rule tag)``), ``traceback_start``,
  ``frame`` (a traceback frame line), ``exc_line``, ``usage``.

Notes (:meth:`LogFormat.notes`, :meth:`LogFormat.notes_from_args`): facts a line or the launch's args
state that are no phase, as ``(topic, key, value)`` with a plain-JSON value; the phase machine emits each
once per launch as a :class:`~eagletui.core.events.LaunchNote`, and the server-neutral diagnoses
(:mod:`eagletui.core.diagnosis.fold`) read them. The vocabulary (a format states only what its server says):

* ``allreduce``: ``custom`` ``{"on": bool, "reason": "pcie" | "multi_node" | "world_size" | "no_p2p" |
  "setup_failed" | "flag", "impl": name}``; ``fusion`` ``{"on": bool, "backend": str | None, "reason": str}``;
  ``pcie_ipc`` ``{"on": bool, "reason": str}``; ``nccl`` ``{"version": str}``; ``flags`` (from the args)
  ``{"custom_off", "fusion", "fusion_backend", "nvls", "symm_mem", "torch_symm_mem", "mscclpp"}``;
* ``load``: ``loader`` ``{"mode": "multithread" | "single" | "fastsafetensors" | "other", "desc": bar
  text}``; ``config`` (args) ``{"threads": int | None, "multithread": bool | None, "prefetch": bool,
  "load_format": str}``; ``fallback`` ``{"reason": "prefetch"}``; ``end`` ``{"elapsed": s, "draft": bool}``;
* ``capture``: ``sizes`` ``{"draft": bool, "what": str, "bs": [int]}``; ``config`` (args) ``{"max_bs": int |
  None, "bs": [int] | None, "disabled": bool}``;
* ``adaptive``: ``config`` (args) ``{"on": bool, "config": path | None}``; ``init`` ``{"steps": int,
  "candidates": [int]}``; ``update`` ``{"from": int, "to": int, "ema": float}``; ``switch`` ``{"from", "to",
  "draft_from", "draft_to"}`` (every swap of the active tier); ``built`` ``{"steps": int, "elapsed": s,
  "mem_gb": GB}`` (an extra tier's capture); ``fallback`` ``{"reason": str}`` (static steps after all).
  ``update`` and ``switch`` state a change over time: the phase machine keeps one per log second.

The phase machine adds ``load`` ``bar`` notes itself (tqdm is no one server's): ``{"phase", "done",
"total", "elapsed", "label"}`` at a shard bar's first and last frame; and ``capture`` ``eager``
``{"running": n}`` for the first decode step at each batch size that ran without a CUDA graph.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

#: Regexes and substring rules only look at this many leading characters of a line.
SCAN_LIMIT = 8192

# Kinds (LogLine.kind vocabulary).
PHASE, PROGRESS, DECODE, PREFILL, ERROR, WARNING, HTTP, TRACEBACK, OTHER = (
    "phase",
    "progress",
    "decode",
    "prefill",
    "error",
    "warning",
    "http",
    "traceback",
    "other",
)


@dataclass(slots=True)
class Rec:
    """One classified logical line. ``tag`` is the fine-grained key; ``data`` holds parsed fields.

    ``ranks`` is the writer's rank key as the prefix spells it ("" for a server with one rank) and
    ``tp`` its number; ``rank_actor`` False marks a writer that is not a rank (vLLM's engine core
    and API server beside its workers), whose phase lines are global. ``prefix_end`` is where the
    server's record prefix ends in ``text`` and ``rank_span`` where the rank label sits in it
    (``(0, 0)``: none). ``cont`` marks a prefixed record that continues the traceback before it
    (servers that log each traceback line at error level with their prefix).
    """

    text: str
    msg: str
    kind: str = OTHER
    tag: str = ""
    ranks: str = ""
    tp: int | None = None
    ts_text: str = ""
    has_date: bool = False
    has_ms: bool = False
    prefixed: bool = False
    frame: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    rank_actor: bool = True
    cont: bool = False
    prefix_end: int = 0
    rank_span: tuple[int, int] = (0, 0)
    #: the writing process as the prefix names it ("" when it does not), for per-interpreter readers
    actor: str = ""


Version = tuple[int, int, int]
#: ``(kind, priority, rule tag)`` of a failure line; the highest priority is the root cause.
Failure = tuple[str, int, str]
#: ``(topic, key, value)``: a fact a line or the launch's args state (see the module docstring).
Note = tuple[str, str, Any]


class VersionGuess:
    """Bounds on the server version from the formats seen; only used for wording hints and the summary."""

    __slots__ = ("lb", "ub", "exact")

    def __init__(self) -> None:
        self.lb: tuple[int, int, int] | None = None
        self.ub: tuple[int, int, int] | None = None
        self.exact: str | None = None

    def bound(self, lb: tuple[int, int, int] | None = None, ub: tuple[int, int, int] | None = None) -> None:
        if lb is not None and (self.lb is None or lb > self.lb) and (self.ub is None or lb <= self.ub):
            self.lb = lb
        if ub is not None and (self.ub is None or ub < self.ub) and (self.lb is None or ub >= self.lb):
            self.ub = ub

    def label(self) -> str | None:
        if self.exact:
            return self.exact
        fmt = ".".join
        if self.lb and self.ub:
            if self.lb == self.ub:
                return fmt(map(str, self.lb))
            if self.lb[:2] == self.ub[:2] == (0, 3):
                return "0.3.x"
            return f">={fmt(map(str, self.lb))},<={fmt(map(str, self.ub))}"
        if self.lb:
            return ">=" + fmt(map(str, self.lb))
        if self.ub:
            return "<=" + fmt(map(str, self.ub))
        return None


@dataclass(frozen=True, slots=True)
class LaunchFacts:
    """What a launch line says, in eagletui's own words (each server names its arguments differently).

    ``parse_server_args`` returns one; the run book, ``eagletui parse`` and the comparisons read these
    fields instead of a server's argument names. ``raw`` keeps the server's own spelling for display.
    """

    model: str | None = None
    draft_model: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    spec_algorithm: str | None = None
    #: draft steps per verify (SGLang ``speculative_num_steps``, vLLM ``num_speculative_tokens``)
    spec_steps: int | None = None
    spec_topk: int | None = None
    #: tokens verified per step (SGLang ``speculative_num_draft_tokens``; vLLM: steps, a chain)
    spec_draft_tokens: int | None = None
    port: int | None = None
    version: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def facts(self) -> dict[str, Any]:
        """The neutral fields that are known (no ``raw``), as events and summaries carry them."""
        out: dict[str, Any] = {}
        for name in _FACT_NAMES:
            v = getattr(self, name)
            if v is not None:
                out[name] = v
        return out


_FACT_NAMES = (
    "model",
    "draft_model",
    "tp",
    "pp",
    "dp",
    "spec_algorithm",
    "spec_steps",
    "spec_topk",
    "spec_draft_tokens",
    "port",
    "version",
)


class FastPath:
    """The serving fast path of one format (optional; ``LogFormat.fast`` None turns it off).

    Serving lines are most of a log; the interpreter folds them without ``classify`` when a format
    describes them here: ``line_re`` matches a whole stats line (prefix + message) and the ``*_ix``
    tuples say where its fields are, in the order the interpreter builds events; the literals are the
    cheap substring tests that decide a line before any regex runs. ``scan_re`` (``eagletui parse``)
    returns one pattern that skips runs of serving noise in bulk (see the SGLang format for its rules).
    Every answer must equal what ``classify`` + the phase machine would give: the fast path only saves
    time.
    """

    #: first characters a prefixed stats line starts with
    line_first: tuple[str, ...] = ()
    line_re: Any = None
    #: groups of ``line_re`` (0-based, into ``m.groups()``): the record prefix's date, time, ms, ranks
    prefix_ix: tuple[int, int, int, int] = (0, 0, 0, 0)
    #: the decode fields: running, #tokens, usage, accept len, accept rate, graph, gen tput, queue
    decode_ix: tuple[int, ...] | None = None
    #: the prefill fields: new seqs, new tokens, cached tokens, running, queue
    prefill_ix: tuple[int, ...] | None = None
    #: the server's record start alone (groups ``date``, ``time``, ``ms``, ``ranks``)
    prefix_re: Any = None
    #: where a record prefix ends at the latest, and what separates it from the message
    prefix_close: str = "]"
    prefix_window: int = 386
    prefix_gap: int = 2
    #: an HTTP access line: its start, a marker in it, and a mark of its quoted request
    access_prefix: str = ""
    access_marker: str = ""
    access_tail: str = ""
    #: stats line markers (the prefix's closing character included) for the bulk path, how far into
    #: a line they are looked for, and how many characters of a marker precede the message
    decode_marker: str = ""
    prefill_marker: str = ""
    marker_window: int = 400
    marker_skip: int = 2
    #: an optional field searched in the whole line, and its pattern (group 1: the number)
    input_marker: str = ""
    input_re: Any = None
    #: what a stats line holds when its step ran without a CUDA graph ("" : the server prints no such
    #: flag); the bulk path reads the running batch size of those lines only
    eager_marker: str = ""

    #: the format reads its serving lines with :meth:`serving_record` (whose answer needs its reader)
    reads_serving: bool = False
    #: where a ``scan_re`` match (``findall`` tuple) holds the accept length, the gen throughput and
    #: the other line; the message is always first
    scan_ix: tuple[int, int, int] = (1, 2, 3)

    def rank_of(self, ranks: str) -> int | None:
        """The rank number of a matched line's (stripped) rank text, as ``classify`` reads it."""
        return None

    def serving_record(
        self, line: str, reader: LineReader
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None] | None:
        """A serving line whose sample needs the reader's state (vLLM pairs a stats line with the metrics
        line after it): the DecodeStats fields it completes and the SpecDecodeStats fields it carries,
        exactly what ``classify``, the reader and the phase machine make of it while the server serves;
        None for any other line (the full path reads it). Only called when :attr:`reads_serving`."""
        return None

    def scan_ok(self, reader: LineReader) -> bool:
        """The bulk scan may fold runs now: the reader holds nothing a run would pass over."""
        return True

    def scan_spec(
        self, found: list[tuple[Any, ...]], binary: bool, reader: LineReader
    ) -> tuple[int, list[float], int, int, dict[str, Any]] | None:
        """A format whose scan matches are a stats line with its metrics line (:attr:`reads_serving`): the
        run's speculative-decoding reports (count, accept lengths, accepted and drafted tokens, the last
        report's fields), or None when a value in the run needs the full path (then its lines are read
        one by one)."""
        return None

    def scan_re(self, sample: str, binary: bool = False) -> Any:
        """The bulk pattern for the stats layout of ``sample``; None turns the bulk path off."""
        return None

    def parse_decode(self, msg: str) -> dict[str, Any] | None:
        return None

    def parse_prefill(self, msg: str) -> dict[str, Any] | None:
        return None


class LineReader:
    """Per-interpreter reading state of a format: classifies one logical line after another.

    A format object is shared by every interpreter; state that spans lines (vLLM prints throughput
    and acceptance on two consecutive lines) lives here, one reader per interpreter. The default reader
    has no state. ``flush`` returns records held back at the end of input.
    """

    __slots__ = ("fmt", "classify")

    def __init__(self, fmt: LogFormat) -> None:
        self.fmt = fmt
        self.classify = fmt.classify  # the hot path: one attribute lookup, no extra call

    def flush(self) -> list[Rec]:
        return []


_EXC_LINE_RE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Failed))(?:: |$)"
)


class LogFormat(ABC):
    """One server's log format: the seam between its text and eagletui's model of a launch.

    Required (abstract): :meth:`classify` (a logical line → :class:`Rec`), :meth:`parse_server_args`
    (a launch record → :class:`LaunchFacts`) and :meth:`match_failure` (the failure table). Everything
    else is an optional capability with a default that means "this server does not have it": no
    progress bars, no glued lines, no fast path, no version hints. Like Toolong's ``LogFormat`` the
    base asks one question per line; like Harlequin's adapter, a format overrides only what it knows.
    """

    #: registry key (``--format``, the profile's ``server``) and the name shown to people
    name: str = ""
    label: str = ""
    #: failure rule tags that end a crash sequence; tags worded by this server itself (evidence that
    #: a text is its log); the failure a collective backend named in a traceback stands for
    terminal_tags: frozenset[str] = frozenset()
    own_tags: frozenset[str] = frozenset()
    #: failure tags of a header line above a traceback (``EngineCore failed to start.``): it stays the
    #: key line while the traceback's exception becomes the message
    headline_tags: frozenset[str] = frozenset()
    comm_failure: Failure = ("nccl", 78, "nccl_error")
    #: model classes of draft models (a load end naming one is the draft's); text of a deliberate stop
    draft_types: tuple[str, ...] = ()
    stop_marks: tuple[str, ...] = ("SIGTERM", "signum=15", "Received signal 15", "KeyboardInterrupt")
    #: substrings of a progress-bar frame (a chunk holding none of them has no bar)
    bar_marks: tuple[str, ...] = ()
    #: the server's own argument names worth one line of a launch summary (``eagletui parse``)
    summary_keys: tuple[str, ...] = ()
    #: the serving fast path, or None
    fast: FastPath | None = None
    #: where the server's own record starts in a line (a compiled pattern): the outer prefix other
    #: programs put in front of it is learned from the file (:mod:`eagletui.core.logs.outer_prefix`);
    #: None learns nothing. ``nested_records``: a record start directly in front of another is a
    #: wrapper's copy of the server's (a wrapper printing the same ``[date time]``)
    record_start: Any = None
    nested_records: bool = False
    #: the HTTP server comes up before the server is warm (a warmup phase runs between the two)
    http_warmup: bool = True
    #: classify already tags failure lines (``fail``); otherwise the phase machine asks
    #: :meth:`match_failure` about every untagged line itself
    classifies_failures: bool = False
    #: the note topics :meth:`notes` reads (the diagnoses conclude from a note's absence only for these:
    #: "nothing disabled the custom all-reduce" needs a format that would have said so)
    note_topics: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ required

    @abstractmethod
    def classify(self, text: str, frame: bool = False) -> Rec:
        """One logical line (no ``\\r``/``\\n`` in it) → a record with kind, tag and fields."""

    @abstractmethod
    def parse_server_args(self, raw: Any) -> LaunchFacts:
        """A ``server_args`` record's ``data["raw"]`` → the launch facts; best effort, never raises."""

    @abstractmethod
    def match_failure(self, msg: str) -> Failure | None:
        """``(kind, priority, rule tag)`` for a line that signals a failure, else None."""

    # ------------------------------------------------------------------ optional, defaulted

    def facts_from_args(self, args: dict[str, Any]) -> LaunchFacts:
        """Launch facts from an args dict already parsed (a recording made before events carried
        facts); default: none known."""
        return LaunchFacts(raw=dict(args))

    def reader(self) -> LineReader:
        """A fresh per-interpreter reader (override for state across lines)."""
        return LineReader(self)

    def split_glued(self, segment: str) -> list[str]:
        """Cut other writers' text glued behind an unterminated bar frame; default: nothing glued."""
        return [segment]

    def is_bar(self, text: str) -> bool:
        return False

    def ts_seconds(self, ts_text: str) -> float | None:
        """Seconds of a record timestamp (``ts_text`` as the format wrote it into ``Rec.ts_text``)."""
        return None

    def exception_line(self, text: str) -> bool:
        """True for the final ``SomeError: message`` line of a Python traceback."""
        return _EXC_LINE_RE.match(text[:SCAN_LIMIT].lstrip()) is not None

    def frame_phase(self, line: str) -> tuple[str | None, bool]:
        """(phase family, is the draft's) a traceback frame points to."""
        return None, False

    def capture_stage(self, line: str, current: str | None) -> str | None:
        """The CUDA-graph capture stage a traceback frame names (``draft extend``, …), the more specific
        of it and ``current``; ``current`` when the frame names none."""
        return current

    def capture_hint(self, stage: str, kind: str, version: str | None) -> str:
        """The remedy for a failure during the capture ``stage`` (empty: the general hint stands)."""
        return ""

    def message_phase(self, text: str) -> str | None:
        """The phase family a failure message names."""
        return None

    def evidence(self, msg: str) -> bool:
        """True for a line only this server's output would hold (without a record prefix)."""
        return False

    def own_actor(self, actor: str) -> bool:
        """True for a writer's name (``Rec.actor``) only this server's processes carry."""
        return False

    def comm_backend_mention(self, msg: str) -> bool:
        return False

    def hint_for(self, kind: str, tag: str, phase: str | None, version: str | None, text: str = "") -> str:
        return ""

    def hint_for_launch(
        self,
        kind: str,
        tag: str,
        phase: str | None,
        version: str | None,
        text: str = "",
        args: dict[str, Any] | None = None,
        draft: bool = False,
    ) -> str:
        """:meth:`hint_for` with what the machine knows of the launch: its server args (the flag a bad
        value sits in) and whether the failing traceback was the draft model's. Default: ignores them."""
        return self.hint_for(kind, tag, phase, version, text)

    def version_from_prefix(self, rec: Rec, ver: VersionGuess) -> None:
        """Bounds on the version from the first record prefix's shape."""
        return None

    def version_marks(self, msg: str, ver: VersionGuess) -> None:
        """Bounds on the version from a phase or error line's wording."""
        return None

    def decode_version(self, msg: str, ver: VersionGuess) -> None:
        """Bounds on the version from the first stats line's layout."""
        return None

    def notes(self, rec: Rec) -> list[Note]:
        """Facts a (non-serving) record states, in the note vocabulary; default: none."""
        return []

    def notes_from_args(self, facts: LaunchFacts) -> list[Note]:
        """Facts the launch's own arguments state (the configured loader, capture sizes, all-reduce
        switches, adaptive speculation), in the note vocabulary; default: none."""
        return []

    def advice(self, topic: str, version: str | None, ctx: dict[str, Any]) -> str:
        """The hint for a diagnosis ``topic`` in this server's words, naming only flags and variables
        ``version`` has (``ctx`` carries the numbers the hint may quote); "" when the server has none.
        Topics: ``loader_threads``, ``loader_prefetch``, ``capture_sizes``, ``allreduce_alternatives``,
        ``draft_mismatch``, ``draft_context``, ``chat_template``, ``spec_settings``, ``adaptive_config``."""
        return ""


