"""One recorded line to a validated :class:`~eagletui.core.events.Event`: :class:`LineDecoder`.

A recording is untrusted input (shared in bug reports, hand-edited, written by a newer eagletui), so
every event is checked against its dataclass annotations before it is built, and a bad one is skipped
with a warning instead of losing the file. Kept apart from :mod:`eagletui.session.format` (which owns
the file: header, bounded decompression, line splitting) because both :func:`read_session` and the
indexed reader (:mod:`eagletui.session.index`) decode lines with it. ``format`` re-exports these names.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from eagletui.core.events import Event, LogLine, event_type
from eagletui.session.codec import (
    MAX_NUMBER,
    MAX_WALL,
    BadClock,
    LogCodec,
    _is_number,
    _kind_of,
    derived_offsets,
)

# -- per-event validation -------------------------------------------------------------------------
#
# A recording is untrusted input (shared in bug reports, hand-edited, from a newer version): one event
# whose ``mono`` is a string or whose ``kind`` is null must be skipped with a warning, not lose the
# whole file or raise on every repaint. Events are checked against their dataclass annotations.

_SCALARS: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "None": lambda v: v is None,
    "dict": lambda v: isinstance(v, dict),
}
_CHECKS: dict[type, dict[str, Any]] = {}


Check = Callable[[Any], bool]


def _anything(_v: Any) -> bool:
    return True


def _sequence_of(item: Check) -> Check:
    return lambda v: isinstance(v, list | tuple) and all(item(x) for x in v)


def _checker(annotation: str) -> Check:
    alts: list[Check] = []
    types: list[type] = []
    none_ok = bool_ok = False
    for alt in (a.strip() for a in annotation.split("|")):
        base = alt.split("[", 1)[0]
        if base == "tuple":
            inner = alt[len("tuple[") :].split(",", 1)[0].strip()
            alts.append(_sequence_of(_SCALARS.get(inner.split("[", 1)[0], _anything)))
        elif base == "list":
            alts.append(_sequence_of(_anything))
        elif base == "None":
            none_ok = True
        elif base == "bool":
            bool_ok = True
        elif base in ("str", "int", "dict"):
            types.append({"str": str, "int": int, "dict": dict}[base])
        elif base == "float":
            types += [int, float]
        else:
            alts.append(_SCALARS.get(base, _anything))
    allowed = tuple(types)

    # Scalars by one isinstance (this runs for every field of every event a replay reads); bool is
    # an int to isinstance, so it is answered first.
    def scalar(v: Any) -> bool:
        if v is None:
            return none_ok
        if v is True or v is False:
            return bool_ok
        if type(v) is float or type(v) is int:
            return isinstance(v, allowed) and -MAX_NUMBER <= v <= MAX_NUMBER  # NaN compares false
        return isinstance(v, allowed)

    if not alts:
        return scalar
    return lambda v: scalar(v) or any(check(v) for check in alts)


def _field_checks(cls: type) -> dict[str, Any]:
    checks = _CHECKS.get(cls)
    if checks is None:
        checks = {f.name: (_checker(str(f.type)), str(f.type)) for f in dataclasses.fields(cls)}
        _CHECKS[cls] = checks
    return checks


#: Nesting a recorded value may have (a config, stats, a GPU sample): a 100k-deep line used to end
#: the reader (and every later JSON encoder) in a RecursionError.
MAX_DEPTH = 32


def _bad_number(v: Any) -> bool:
    return (type(v) is float or type(v) is int) and not -MAX_NUMBER <= v <= MAX_NUMBER


def _nested_problem(value: Any) -> str | None:
    """Why a dict/list field cannot be taken: nested deeper than :data:`MAX_DEPTH`, or a number in it
    that is not finite or out of range. Iterative, so the check itself cannot overflow the stack."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            items: Any = v.values()
        elif isinstance(v, list | tuple):
            items = v
        else:
            if _bad_number(v):
                return f"holds the number {v!r}, out of range"
            continue
        if depth >= MAX_DEPTH:
            return f"nests deeper than {MAX_DEPTH} levels"
        stack.extend((x, depth + 1) for x in items)
    return None


def check_event_dict(data: dict[str, Any]) -> str | None:
    """Why ``data`` is not a valid event of its type, or None. Unknown keys are fine (newer files).
    Numbers must be finite and within :data:`MAX_NUMBER` (a wall clock within :data:`MAX_WALL`);
    nested values at most :data:`MAX_DEPTH` deep."""
    cls = event_type(data["type"])
    for name, (check, annotation) in _field_checks(cls).items():
        if name not in data:
            continue  # a missing required field is reported by the constructor
        value = data[name]
        if name in ("wall", "mono"):
            if not _is_number(value):
                return f"field {name!r} must be a finite number, got {_kind_of(value)}"
            if not -(bound := MAX_WALL if name == "wall" else MAX_NUMBER) <= value <= bound:
                return f"field {name!r} is out of range: {value!r}"
        elif not check(value):
            if _bad_number(value) or (type(value) is float and value != value):
                return f"field {name!r} is out of range: {value!r}"
            return f"field {name!r} must be {annotation}, got {_kind_of(value)}"
        elif type(value) is dict or type(value) is list or type(value) is tuple:
            problem = _nested_problem(value)
            if problem is not None:
                return f"field {name!r} {problem}"
    return None


_CONSTRUCTORS: dict[str, tuple[type[Event], frozenset[str], frozenset[str]]] = {}


def _from_dict(data: dict[str, Any]) -> Event:
    """``Event.from_dict`` with the field lists looked up once per type, not once per event."""
    kind = data["type"]
    found = _CONSTRUCTORS.get(kind)
    if found is None:
        cls = event_type(kind)
        fields = dataclasses.fields(cls)
        names = frozenset(f.name for f in fields)
        tuples = frozenset(f.name for f in fields if str(f.type).startswith("tuple"))
        found = _CONSTRUCTORS[kind] = (cls, names, tuples)
    cls, names, tuples = found
    kwargs = {k: v for k, v in data.items() if k in names}
    for k in tuples & kwargs.keys():
        if isinstance(kwargs[k], list):
            kwargs[k] = tuple(kwargs[k])
    return cls(**kwargs)


def _log_line(data: dict[str, Any]) -> LogLine | None:
    """The fast path for a decoded log row (most of a recording): ``decode`` checked the clock, text,
    kind and seq; when the rest is well-typed too the LogLine is built directly (the general path
    gives the same event, three times slower). None: let the general path say what is wrong."""
    rank, launch, frame, wall, mono = data["rank"], data["launch"], data["frame"], data["wall"], data["mono"]
    pe, r0, r1 = data.get("prefix_end", 0), data.get("rank_start", 0), data.get("rank_end", 0)
    if (
        (rank is None or type(rank) is int)
        and type(launch) is int
        and type(frame) is bool
        and _is_number(wall)
        and _is_number(mono)
        and type(pe) is int
        and type(r0) is int
        and type(r1) is int
        and -MAX_WALL <= wall <= MAX_WALL
        and -MAX_NUMBER <= mono <= MAX_NUMBER
    ):
        return LogLine(
            text=data["text"],
            kind=data["kind"],
            rank=rank,
            seq=data["seq"],
            frame=frame,
            launch=launch,
            wall=wall,
            mono=mono,
            prefix_end=pe,
            rank_start=r0,
            rank_end=r1,
        )
    return None


def _with_offsets(line: LogLine) -> LogLine:
    """A log line of a recording made before lines carried the format's offsets, with them derived."""
    if line.prefix_end or line.rank_end:
        return line
    pe, a, b = derived_offsets(line.text)
    if not (pe or b):
        return line
    return dataclasses.replace(line, prefix_end=pe, rank_start=a, rank_end=b)


class LineDecoder:
    """One recorded line to an :class:`Event`: JSON, the compact codec, validation. Shared by
    :func:`read_session` and the indexed reader (which starts a decoder at a keyframe)."""

    def __init__(self, codec: LogCodec):
        self.codec = codec
        #: the event type of the last line decoded, "" where it could not be told; read when that
        #: line was skipped (a replay says what a skipped ``bench_result`` leaves unfinished)
        self.skipped_type = ""

    def decode(self, lineno: int, raw: bytes, complete: bool = True) -> tuple[Event | None, str | None]:
        """``(event, None)``, or ``(None, why it was skipped)`` such as ``line 9: not an event, ignored``."""
        codec = self.codec
        self.skipped_type = ""
        try:
            data_obj = json.loads(raw.decode("utf-8", errors="replace"))
        except ValueError:
            codec.damaged()
            return None, f"line {lineno}: {'not valid JSON' if complete else 'truncated'}, ignored"
        except RecursionError:
            codec.damaged()
            return None, f"line {lineno}: nested too deep to read, ignored"
        from_row = isinstance(data_obj, list) and len(data_obj) >= 2 and isinstance(data_obj[1], str)
        if from_row:
            try:
                data_obj = codec.decode(data_obj)
            except ValueError as exc:
                codec.damaged()
                return None, f"line {lineno}: bad log line ({exc}), ignored"
            line = _log_line(data_obj)
            if line is not None:
                return (line if codec.offsets else _with_offsets(line)), None
        if not isinstance(data_obj, dict) or not isinstance(data_obj.get("type"), str):
            codec.damaged()
            return None, f"line {lineno}: not an event, ignored"
        self.skipped_type = data_obj["type"]
        try:
            data_obj = codec.read_dict(data_obj, from_row=from_row)
        except BadClock as exc:  # the codec kept its state: only this event is lost
            return None, f"line {lineno}: bad {data_obj['type']} event ({exc}), ignored"
        except ValueError as exc:
            codec.damaged()
            return None, f"line {lineno}: bad {data_obj['type']} event ({exc}), ignored"
        try:
            event_type(data_obj["type"])
        except KeyError:  # a newer eagletui's event: not damage, later events may build on others
            return None, f"line {lineno}: unknown event type {data_obj['type']!r}, ignored"
        problem = check_event_dict(data_obj)
        if problem is not None:
            codec.forget(data_obj["type"])
            return None, f"line {lineno}: bad {data_obj['type']} event ({problem}), ignored"
        try:
            event = _from_dict(data_obj)
        except (TypeError, ValueError) as exc:
            codec.forget(data_obj["type"])
            return None, f"line {lineno}: bad {data_obj['type']} event ({exc}), ignored"
        if not codec.offsets and type(event) is LogLine:
            event = _with_offsets(event)
        return event, None
