"""The seam between "a server's log" and eagletui's model of a launch.

Everything server-specific sits behind one :class:`LogFormat`: how a line is cut and classified, which
version a line's wording points to, which lines are failures and what to do about them. The phase
machine (:mod:`eagletui.core.phase_machine`) and the interpreter (:mod:`eagletui.core.log_interpreter`)
only know the vocabulary below: a :class:`Rec` per logical line with a coarse ``kind`` and a fine
``tag``. Like Toolong's list of log formats, :data:`FORMATS` holds every known one; SGLang's is
:mod:`eagletui.core.formats.sglang`. A second server (vLLM) is one new package under ``formats/``
that maps its lines onto the same tags, plus its failure table.

Tags a format may give a record (the machine switches on these, nothing else):

* startup: ``server_args`` (``data["raw"]``), ``dist_begin``/``dist_end``, ``load_begin``/``load_end``
  (``data["type"]``: the model class), ``load_commit``, ``kv_alloc``/``kv_info``, ``pool_end``,
  ``capture_begin``/``capture_end``/``capture_info`` (``data["draft"]``, ``data["what"]``: prefill,
  verify, decode, extend, piecewise), ``bar_shards``/``bar_capture`` (``data`` done/total/label),
  ``summary``, ``timings`` (``data["phase_seconds"]``: phase → the server's own measure of it, seconds,
  for phases whose lines cannot time them; ``data["timings"]``: the raw values), ``ready``;
* serving: ``decode``/``prefill`` (``data``: the stats fields of :mod:`eagletui.core.events`);
* HTTP: ``http_up`` (``data["url"]``), ``http_startup``, ``http_shutdown``, ``access``, ``access_generate``;
* failures: ``fail`` (``data["failure"]`` = ``(kind, priority, rule tag)``), ``traceback_start``,
  ``frame`` (a traceback frame line), ``exc_line``, ``usage``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

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
    """One classified logical line. ``tag`` is the fine-grained key; ``data`` holds parsed fields."""

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


Version = tuple[int, int, int]
#: ``(kind, priority, rule tag)`` of a failure line; the highest priority is the root cause.
Failure = tuple[str, int, str]


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


class LogFormat(Protocol):
    """One server's log format. Implementations are plain objects (see formats/sglang/__init__.py)."""

    name: str
    #: Failures: rule tags that end a crash sequence, rule tags worded by the server itself (evidence
    #: that a text is this server's log), the failure a backend named in a traceback stands for.
    terminal_tags: frozenset[str]
    own_tags: frozenset[str]
    comm_failure: Failure
    #: Model classes of draft models; text that means a deliberate stop.
    draft_types: tuple[str, ...]
    stop_marks: tuple[str, ...]
    #: The serving fast paths (eagletui parse, the live tail): the pattern of a whole serving line and
    #: its group indices, the markers of Decode/Prefill/access lines; ``serving_scan_re`` None turns
    #: the bulk fast path off.
    serving_line_re: Any
    serving_groups: Any
    #: The server's own record start (groups ``date``, ``time``, ``ms``, ``ranks``).
    record_prefix_re: Any
    input_throughput_re: Any
    decode_marker: str
    prefill_marker: str
    access_prefix: str
    access_marker: str

    # Line cutting and classification.
    def classify(self, text: str, frame: bool = False) -> Rec: ...
    def split_glued(self, segment: str) -> list[str]: ...
    def is_bar(self, text: str) -> bool: ...
    def tp_of(self, ranks: str) -> int | None: ...
    def ts_seconds(self, ts_text: str) -> float | None: ...
    def exception_line(self, text: str) -> bool: ...
    def parse_decode(self, msg: str) -> dict[str, Any] | None: ...
    def parse_prefill(self, msg: str) -> dict[str, Any] | None: ...
    def serving_scan_re(self, sample: str, binary: bool = False) -> Any: ...

    # Where a failing traceback's frame / a failure message puts the failure in the startup.
    def frame_phase(self, line: str) -> tuple[str | None, bool]: ...
    def message_phase(self, text: str) -> str | None: ...

    # Failures.
    def match_failure(self, msg: str) -> Failure | None: ...
    def evidence(self, msg: str) -> bool: ...
    def comm_backend_mention(self, msg: str) -> bool: ...
    def hint_for(
        self,
        kind: str,
        tag: str,
        phase: str | None,
        version: str | None,
        text: str = "",
        args: dict[str, Any] | None = None,
        draft: bool = False,
    ) -> str: ...

    # Versions: bounds from a record's prefix, a line's wording, a Decode line's layout; the launch
    # arguments of a ``server_args`` record.
    def version_from_prefix(self, rec: Rec, ver: VersionGuess) -> None: ...
    def version_marks(self, msg: str, ver: VersionGuess) -> None: ...
    def decode_version(self, msg: str, ver: VersionGuess) -> None: ...
    def parse_server_args(self, raw: str) -> dict[str, Any]: ...


def formats() -> list[LogFormat]:
    """Every known log format, the default first."""
    from eagletui.core.formats import FORMATS

    return FORMATS


def get_format(name: str | None = None) -> LogFormat:
    """The format called ``name`` (the default, SGLang's, when None). KeyError if unknown."""
    fmts = formats()
    if name is None:
        return fmts[0]
    for f in fmts:
        if f.name == name:
            return f
    raise KeyError(f"unknown log format {name!r}; known: {', '.join(f.name for f in fmts)}")
