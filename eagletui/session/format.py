"""The session file format: JSON Lines, one header line then one event per line.

JSON Lines because a recording must survive the app (or the machine) dying mid-write: every line is
complete on its own, so a reader only ever loses the line that was in flight. Reading is deliberately
tolerant (a session from a crashed run, a newer eagletui or a hand-edited file still loads) and only
refuses files that are clearly not sessions at all.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import gzip
import itertools
import json
import math
import os
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeGuard

from eagletui import __version__
from eagletui.core.events import Event, LogLine, event_type

FORMAT_NAME = "eagletui-session"
FORMAT_VERSION = 2  # 2: log lines in LogCodec's compact form; 1 (all dicts) still reads

#: Past this many problem lines the reader summarises instead of listing, so a garbage file cannot
#: produce a million-line warning list.
MAX_WARNINGS = 100

_GZIP_MAGIC = b"\x1f\x8b"


class SessionError(Exception):
    """A file that cannot be read as a session at all; names the file so the UI can say which."""

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def target_slug(target: str) -> str:
    """File-name-safe form of a target (``user@gpu-box:2222`` → ``user-gpu-box-2222``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", target or "").strip("-._")
    return (slug or "local")[:60]


def session_filename(target: str, when: _dt.datetime | None = None, *, gz: bool = False) -> str:
    when = when or _dt.datetime.now()
    return f"{when:%Y%m%d-%H%M%S}-{target_slug(target)}.jsonl" + (".gz" if gz else "")


#: Header key saying that every keyframe stands alone (see :class:`LogCodec`): a reader may start
#: decoding at any keyframe, which is what makes seeking in a million-event recording cheap.
SELF_CONTAINED_KEY = "keyframes"


def make_header(target: str, profile_name: str, created: _dt.datetime | None = None) -> dict[str, Any]:
    created = created or _dt.datetime.now(_dt.UTC).astimezone()
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "created": created.isoformat(timespec="seconds"),
        "target": target,
        "profile": profile_name,
        "eagletui": __version__,
        SELF_CONTAINED_KEY: LogCodec.SEEK_POINT,
    }


def self_contained(header: dict[str, Any]) -> bool:
    """Whether the file's keyframes stand alone (written by a Recorder that says so in the header)."""
    v = header.get(SELF_CONTAINED_KEY)
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


class LogCodec:
    """The compact form of events (format version 2), shared by the writer and the reader.

    Log lines are nearly all of a recording, and as full dicts (type, wall, mono, kind, rank, seq,
    frame, launch around each line) a 740 MB log made a 2.4 GB recording; the events derived from
    lines (a DecodeStats per decode line, a PhaseProgress per tqdm frame) repeated every field too.

    * A log line is one JSON array ``[dmono_us, text]``, ``[dmono_us, text, kind]`` or
      ``[dmono_us, text, kind, extras]``: ``kind`` omitted when ``"other"``; ``extras`` holds only what
      the reader cannot predict: ``wall`` when it is more than half a millisecond away from ``mono`` +
      the last wall-mono offset, ``seq`` when it is not the previous line's + 1, ``rank``/``launch``
      when they change, ``frame`` when true.
    * Other events stay dicts with the clock as ``du`` (microseconds since the previous event, plus
      ``wall`` when not predictable) and without the fields that hold their default. An event marked
      ``"~": 1`` holds only the fields that differ from the previous event of its type.
    * Every :data:`KEYFRAME` events one is written whole: absolute ``wall``/``mono`` (and for a log
      line ``seq``/``rank``/``launch``), and every :data:`TYPE_KEYFRAME` events of a type one of them
      stands alone. After a damaged line the reader drops the per-type bases (a ``~`` event without
      its base is skipped with a warning, never filled in wrong) and the clock is exact again at the
      next keyframe.
    * With ``self_contained`` (files whose header carries ``"keyframes"``) every :data:`SEEK_POINT`
      events the keyframe is a *seek point*, marked ``"@": 1`` (in the dict, or in a log row's
      extras): it also resets the per-type bases and the predicted ``seq``/``rank``/``launch`` on both
      sides, so nothing after it depends on anything before it. A reader can start at any seek point,
      and the index of a recording is just their byte offsets. Not every keyframe: the first event of
      each type after a reset stands alone, which costs about 3 % of the file at every 256 events
      and under 1 % at every 1024. Files without the header key (the first version-2 files) are read
      as before, from the start.

    Both sides fold events through the same arithmetic, so the predictions agree exactly; only the
    clock values are rounded (to the microsecond, and wall to half a millisecond).
    """

    _WALL_TOLERANCE = 0.0005
    KEYFRAME = 256
    TYPE_KEYFRAME = 32
    SEEK_POINT = 1024  # a multiple of KEYFRAME
    SEEK_MARK = "@"

    def __init__(self, *, self_contained: bool = False) -> None:
        self.self_contained = self_contained
        self.mono = 0.0
        self.offset = 0.0  # wall - mono
        self.seq = 0
        self.rank: int | None = None
        self.launch = 0
        self.n = 0  # events encoded (writer)
        self._bases: dict[str, dict[str, Any]] = {}  # type -> every field of its last event
        self._since: dict[str, int] = {}  # writer: events of the type since it last stood alone

    # -- writer ---------------------------------------------------------------------------------

    def _clock(self, wall: float, mono: float) -> tuple[int, float | None]:
        """``(dmono_us, exact wall or None if predictable)``; advances the shared clock state."""
        d_us = round((mono - self.mono) * 1e6)
        mono_r = self.mono + d_us / 1e6
        self.mono = mono_r
        if abs(wall - (mono_r + self.offset)) > self._WALL_TOLERANCE:
            self.offset = wall - mono_r
            return d_us, wall
        return d_us, None

    def encode(self, data: dict[str, Any]) -> Any:
        """What to write for ``data`` (an event's ``to_dict()``), advancing the shared state."""
        wall, mono = data.get("wall"), data.get("mono")
        if not (_is_number(wall) and _is_number(mono)):
            return data
        key = self.n % self.KEYFRAME == 0
        seek = self.self_contained and self.n % self.SEEK_POINT == 0
        self.n += 1
        if seek:
            self._reset()
        if data.get("type") != "log" or not isinstance(data.get("text"), str):
            return self._encode_dict(data, float(wall), float(mono), key, seek)
        extras: dict[str, Any] = {self.SEEK_MARK: 1} if seek else {}
        if key:
            d_us = 0
            self.mono, self.offset = float(mono), float(wall) - float(mono)
            extras.update(wall=wall, mono=mono)
        else:
            d_us, exact_wall = self._clock(float(wall), float(mono))
            if exact_wall is not None:
                extras["wall"] = wall
        seq, rank, launch, frame = (
            data.get("seq", 0),
            data.get("rank"),
            data.get("launch", 0),
            data.get("frame"),
        )
        if key or seq != self.seq:
            extras["seq"] = seq
        self.seq = seq + 1 if isinstance(seq, int) else 0
        if key or rank != self.rank:
            extras["rank"] = rank
            self.rank = rank
        if key or launch != self.launch:
            extras["launch"] = launch
            self.launch = launch
        if frame:
            extras["frame"] = frame
        for k, v in data.items():  # fields a newer LogLine may carry: kept, never dropped
            if k not in _LOG_KNOWN:
                extras[k] = v
        kind = data.get("kind", "other")
        out: list[Any] = [d_us, data["text"]]
        if extras:
            out += [kind, extras]
        elif kind != "other":
            out.append(kind)
        return out

    def _encode_dict(
        self, data: dict[str, Any], wall: float, mono: float, key: bool, seek: bool = False
    ) -> dict[str, Any]:
        kind = data["type"]
        fields = {k: v for k, v in data.items() if k not in ("type", "wall", "mono", self.SEEK_MARK)}
        out: dict[str, Any] = {"type": kind}
        if seek:
            out[self.SEEK_MARK] = 1
        if key:
            self.mono, self.offset = mono, wall - mono
            out.update(wall=wall, mono=mono)
        else:
            d_us, exact_wall = self._clock(wall, mono)
            out["du"] = d_us
            if exact_wall is not None:
                out["wall"] = exact_wall
        defaults = _defaults(kind)
        alone = {k: v for k, v in fields.items() if not (k in defaults and _same(defaults[k], v))}
        base = self._bases.get(kind)
        since = self._since.get(kind, 0)
        delta = None
        if not key and base is not None and since < self.TYPE_KEYFRAME and base.keys() == fields.keys():
            delta = {k: v for k, v in fields.items() if not _same(base[k], v)}
        if delta is not None and len(delta) < len(alone):
            out["~"] = 1
            out.update(delta)
            self._since[kind] = since + 1
        else:
            out.update(alone)
            self._since[kind] = 1
        self._bases[kind] = fields
        return out

    def _reset(self) -> None:
        """At a keyframe of a self-contained file: forget everything a later line could lean on."""
        self._bases.clear()
        self._since.clear()
        self.seq, self.rank, self.launch = 0, None, 0

    # -- reader ---------------------------------------------------------------------------------

    def damaged(self) -> None:
        """A line could not be read: what it changed is unknown, so no ``~`` event may build on it."""
        self._bases.clear()

    def read_dict(self, data: dict[str, Any], *, from_row: bool = False) -> dict[str, Any]:
        """Reader side: a full event (``wall``/``mono``: a keyframe, version 1 or a hand-made file)
        anchors the clock; a compact one (``du``) gets its clock and, if ``~``, its unchanged fields
        back. ValueError names what is wrong (the caller skips the line)."""
        kind = data["type"]
        if data.pop(self.SEEK_MARK, None) == 1 and self.self_contained and not from_row:
            self._reset()  # (a row's seek point was reset in decode())
        if "du" in data and "mono" not in data:
            d_us = data.pop("du")
            if not _is_number(d_us):
                raise ValueError(f"field 'du' must be a finite number, got {_kind_of(d_us)}")
            mono = self.mono + d_us / 1e6
            if "wall" in data:
                if not _is_number(data["wall"]):
                    raise ValueError(f"field 'wall' must be a finite number, got {_kind_of(data['wall'])}")
                self.offset = float(data["wall"]) - mono
            else:
                data["wall"] = mono + self.offset
            data["mono"] = self.mono = mono
        else:
            abs_wall, abs_mono = data.get("wall"), data.get("mono")
            if _is_number(abs_wall) and _is_number(abs_mono):
                self.mono = float(abs_mono)
                self.offset = float(abs_wall) - float(abs_mono)
        if data.pop("~", None) is not None:
            base = self._bases.get(kind)
            if base is None:
                raise ValueError("its earlier fields were on a damaged line")
            data = {**base, **data}
        else:
            data = {**_defaults(kind), **data}
        self._bases[kind] = {k: v for k, v in data.items() if k not in ("type", "wall", "mono")}
        return data

    def decode(self, row: list[Any]) -> dict[str, Any]:
        """Reader side: a compact row back to a ``log`` event dict; ValueError names what is wrong."""
        if not 2 <= len(row) <= 4:
            raise ValueError(f"a log row has 2 to 4 items, not {len(row)}")
        d_us, text = row[0], row[1]
        kind = row[2] if len(row) > 2 else "other"
        extras = row[3] if len(row) > 3 else {}
        if not _is_number(d_us) or not isinstance(text, str) or not isinstance(kind, str):
            raise ValueError("a log row is [microseconds, text, kind?, extras?]")
        if not isinstance(extras, dict):
            raise ValueError("the extras of a log row must be an object")
        for name in ("wall", "mono"):
            if name in extras and not _is_number(extras[name]):
                raise ValueError(f"field {name!r} must be a finite number, got {_kind_of(extras[name])}")
        if extras.get(self.SEEK_MARK) == 1:
            extras = {k: v for k, v in extras.items() if k != self.SEEK_MARK}
            if self.self_contained:
                self._reset()
        if "mono" in extras:  # a keyframe: absolute clock
            mono = float(extras["mono"])
            wall = float(extras.get("wall", mono + self.offset))
        else:
            mono = self.mono + d_us / 1e6
            wall = float(extras["wall"]) if "wall" in extras else mono + self.offset
        self.offset = wall - mono
        seq = extras.get("seq", self.seq)
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise ValueError(f"field 'seq' must be an integer, got {_kind_of(seq)}")
        rank = extras.get("rank", self.rank)
        launch = extras.get("launch", self.launch)
        data = {**extras, "type": "log", "wall": wall, "mono": mono, "text": text, "kind": kind}
        data.update(seq=seq, rank=rank, launch=launch, frame=extras.get("frame", False))
        self.mono, self.seq, self.rank = mono, seq + 1, rank if _is_int_or_none(rank) else self.rank
        if isinstance(launch, int) and not isinstance(launch, bool):
            self.launch = launch
        return data


_LOG_KNOWN = frozenset({"type", "wall", "mono", "text", "kind", "rank", "seq", "frame", "launch"})
_DEFAULTS: dict[str, dict[str, Any]] = {}


def _defaults(type_name: str) -> dict[str, Any]:
    """Field defaults of an event type as ``to_dict`` would write them (tuples as lists)."""
    found = _DEFAULTS.get(type_name)
    if found is None:
        found = {}
        try:
            cls = event_type(type_name)
        except KeyError:
            cls = None
        for f in dataclasses.fields(cls) if cls is not None else ():
            if f.name in ("wall", "mono"):
                continue  # their factories give "now": never a value to fill in from a cache
            if f.default is not dataclasses.MISSING:
                found[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                value = f.default_factory()
                found[f.name] = list(value) if isinstance(value, tuple) else value
        _DEFAULTS[type_name] = found
    return found


def _same(default: Any, value: Any) -> bool:
    """Equal and of the same JSON kind (``0`` is not ``False``, ``1`` is not ``1.0`` on the page)."""
    return type(default) is type(value) and default == value


def _is_number(v: Any) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_int_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool))


def _kind_of(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", str: "a string", list: "a list", dict: "an object"}.get(
        type(v), type(v).__name__
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


def check_event_dict(data: dict[str, Any]) -> str | None:
    """Why ``data`` is not a valid event of its type, or None. Unknown keys are fine (newer files)."""
    cls = event_type(data["type"])
    for name, (check, annotation) in _field_checks(cls).items():
        if name not in data:
            continue  # a missing required field is reported by the constructor
        value = data[name]
        if name in ("wall", "mono"):
            if not _is_number(value):
                return f"field {name!r} must be a finite number, got {_kind_of(value)}"
        elif not check(value):
            return f"field {name!r} must be {annotation}, got {_kind_of(value)}"
    return None


# -- bounded reading ------------------------------------------------------------------------------

#: A recording is proportional to its log; past this much decompressed data reading stops (with a
#: warning), whatever the file claims.
MAX_DECOMPRESSED = 4 * 1024**3
#: Compressed recordings hold varied JSON (10-30:1); a stream that inflates far beyond that after the
#: first 64 MiB is a decompression bomb, not a session.
MAX_RATIO = 250
_RATIO_GRACE = 64 * 1024**2
#: A single line (an event) longer than this is skipped without being held in memory.
MAX_LINE = 32 * 1024**2
_CHUNK = 1024**2
_BLANK_RE = re.compile(rb"[ \t\r\n]+")


def _raw_chunks(path: Path) -> Iterator[bytes]:
    try:
        fh = open(path, "rb")  # closed by the with below, also when the generator is dropped
    except FileNotFoundError:
        raise SessionError(path, "no such file") from None
    except IsADirectoryError:
        raise SessionError(path, "is a directory, not a session file") from None
    except OSError as exc:
        raise SessionError(path, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        while True:
            try:
                chunk = fh.read(_CHUNK)
            except OSError as exc:
                raise SessionError(path, f"cannot read: {exc.strerror or exc}") from None
            if not chunk:
                return
            yield chunk


def _chunks(path: Path, warnings: list[str], max_bytes: int) -> Iterator[bytes]:
    """The file's bytes, gunzipped if it is gzip, in bounded pieces; stops at ``max_bytes`` of output
    or at a ratio that only a bomb reaches. A truncated or damaged gzip stream keeps what decoded."""
    raw = _raw_chunks(path)
    first = next(raw, b"")
    if not first.startswith(_GZIP_MAGIC):
        total = 0
        for chunk in itertools.chain([first], raw):
            total += len(chunk)
            if total > max_bytes:
                warnings.append(f"file larger than {max_bytes} bytes: stopped reading there")
                yield chunk[: len(chunk) - (total - max_bytes)]
                return
            yield chunk
        return
    # zlib with wbits=31 (gzip) instead of gzip.open: it hands back everything decoded so far when the
    # stream stops early, which is exactly the crashed-while-compressing case. max_length bounds each
    # step, so a bomb never inflates more than one chunk at a time.
    d = zlib.decompressobj(wbits=31)
    consumed = out_total = 0
    in_member = False  # a member has begun and not ended: running out of input now means truncated
    for data in itertools.chain([first], raw):
        consumed += len(data)
        out = b""
        while data or len(out) == _CHUNK:  # a full output chunk may leave more pending inside zlib
            in_member = True
            try:
                out = d.decompress(data, _CHUNK)
            except zlib.error as exc:
                if not out_total:
                    raise SessionError(path, f"corrupt gzip data: {exc}") from None
                warnings.append(f"compressed data corrupt after {out_total} bytes ({exc}), rest ignored")
                return
            out_total += len(out)
            if out_total > max_bytes:
                warnings.append(f"decompresses to more than {max_bytes} bytes: stopped reading there")
                return
            used = consumed - len(d.unconsumed_tail)  # input actually inflated so far
            if out_total > _RATIO_GRACE and out_total > MAX_RATIO * used:
                warnings.append(
                    f"decompresses more than {MAX_RATIO}:1 ({used} bytes to over {out_total}): "
                    "not a recording (a decompression bomb?), stopped reading there"
                )
                return
            if out:
                yield out
            if d.eof:
                in_member = False
                data = d.unused_data  # concatenated gzip members are legal (appended-to .gz files)
                d = zlib.decompressobj(wbits=31)
                if data and not data.startswith(_GZIP_MAGIC[:1]):
                    if data.strip(b"\x00"):
                        warnings.append("trailing data after the compressed stream ignored")
                    return
            else:
                data = d.unconsumed_tail
    if in_member:
        warnings.append("compressed stream truncated, loaded what was readable")


def _lines(
    path: Path, warnings: list[str], max_bytes: int, max_line: int
) -> Iterator[tuple[int, bytes, bool]]:
    """``(line number, line, ends with a newline)`` for each non-blank line. Runs of blank lines are
    skipped in C (2 GB of newlines is a scan, not two billion Python strings); a line longer than
    ``max_line`` is reported and skipped without being held."""
    lineno = 1
    buf = b""
    skipping = False  # inside an overlong line: drop bytes until its newline
    for chunk in _chunks(path, warnings, max_bytes):
        buf = buf + chunk if buf else chunk
        pos = 0
        n = len(buf)
        while pos < n:
            if skipping:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    pos = n
                    break
                skipping = False
                lineno += 1
                pos = nl + 1
                continue
            m = _BLANK_RE.match(buf, pos)
            if m is not None:
                end = m.end()
                nl_count = buf.count(b"\n", pos, end)
                if end == n:  # blank to the end: keep the last partial (blank) line's start
                    lineno += nl_count
                    pos = n
                    break
                if nl_count:
                    lineno += nl_count
                    pos = buf.rfind(b"\n", pos, end) + 1
            nl = buf.find(b"\n", pos)
            if nl < 0:
                if n - pos > max_line:
                    warnings.append(f"line {lineno}: longer than {max_line} bytes, ignored")
                    skipping = True
                    pos = n
                break
            if nl - pos > max_line:
                warnings.append(f"line {lineno}: longer than {max_line} bytes, ignored")
            else:
                yield lineno, buf[pos:nl], True
            lineno += 1
            pos = nl + 1
        buf = buf[pos:] if pos < n else b""
    if buf.strip() and not skipping:
        yield lineno, buf, False


def _parse_header(line: str, path: Path) -> dict[str, Any]:
    try:
        header = json.loads(line)
    except ValueError:
        raise SessionError(path, "not an eagletui session (first line is not JSON)") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise SessionError(path, f'not an eagletui session (first line has no "format": "{FORMAT_NAME}")')
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionError(path, f"session header has an invalid version {version!r}")
    for key in ("target", "profile", "created", "eagletui"):
        if key in header and not isinstance(header[key], str):
            header[key] = "" if header[key] is None else str(header[key])
    return header


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
    if (
        (rank is None or type(rank) is int)
        and type(launch) is int
        and type(frame) is bool
        and _is_number(wall)
        and _is_number(mono)
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
        )
    return None


class LineDecoder:
    """One recorded line to an :class:`Event`: JSON, the compact codec, validation. Shared by
    :func:`read_session` and the indexed reader (which starts a decoder at a keyframe)."""

    def __init__(self, codec: LogCodec):
        self.codec = codec

    def decode(self, lineno: int, raw: bytes, complete: bool = True) -> tuple[Event | None, str | None]:
        """``(event, None)``, or ``(None, why it was skipped)`` such as ``line 9: not an event, ignored``."""
        codec = self.codec
        try:
            data_obj = json.loads(raw.decode("utf-8", errors="replace"))
        except ValueError:
            codec.damaged()
            return None, f"line {lineno}: {'not valid JSON' if complete else 'truncated'}, ignored"
        from_row = isinstance(data_obj, list) and len(data_obj) >= 2 and isinstance(data_obj[1], str)
        if from_row:
            try:
                data_obj = codec.decode(data_obj)
            except ValueError as exc:
                codec.damaged()
                return None, f"line {lineno}: bad log line ({exc}), ignored"
            line = _log_line(data_obj)
            if line is not None:
                return line, None
        if not isinstance(data_obj, dict) or not isinstance(data_obj.get("type"), str):
            codec.damaged()
            return None, f"line {lineno}: not an event, ignored"
        try:
            data_obj = codec.read_dict(data_obj, from_row=from_row)
        except ValueError as exc:
            codec.damaged()
            return None, f"line {lineno}: bad {data_obj['type']} event ({exc}), ignored"
        try:
            event_type(data_obj["type"])
        except KeyError:  # a newer eagletui's event: not damage, later events may build on others
            return None, f"line {lineno}: unknown event type {data_obj['type']!r}, ignored"
        problem = check_event_dict(data_obj)
        if problem is not None:
            codec.damaged()
            return None, f"line {lineno}: bad {data_obj['type']} event ({problem}), ignored"
        try:
            return _from_dict(data_obj), None
        except (TypeError, ValueError) as exc:
            codec.damaged()
            return None, f"line {lineno}: bad {data_obj['type']} event ({exc}), ignored"


def read_session(
    path: str | Path, *, max_bytes: int = MAX_DECOMPRESSED, max_line: int = MAX_LINE
) -> tuple[dict[str, Any], list[Event], list[str]]:
    """Load a session: ``(header, events, warnings)``.

    Raises :class:`SessionError` only when the file cannot be a session (missing, empty, no header);
    damaged lines and invalid events become warnings such as ``line 812: truncated, ignored`` or
    ``line 9: bad log event (field 'mono' must be a finite number, got a string), ignored`` and are
    skipped; the rest loads. Reading is bounded: ``max_bytes`` of (decompressed) data, ``max_line``
    per line, and a decompression ratio no real recording reaches.
    """
    p = Path(path).expanduser()
    warnings: list[str] = []
    lines = _lines(p, warnings, max_bytes, max_line)
    try:
        first = next(lines)
    except StopIteration:
        raise SessionError(p, "empty file, not a session") from None
    header = _parse_header(first[1].decode("utf-8", errors="replace"), p)
    if header["version"] > FORMAT_VERSION:
        warnings.append(
            f"session format version {header['version']} is newer than this eagletui understands "
            f"({FORMAT_VERSION}); loading what it can"
        )

    events: list[Event] = []
    skipped = 0
    decoder = LineDecoder(LogCodec(self_contained=self_contained(header)))
    for lineno, raw, complete in lines:
        event, problem = decoder.decode(lineno, raw, complete)
        if event is not None:
            events.append(event)
        elif problem is not None:
            skipped += 1
            if skipped <= MAX_WARNINGS:
                warnings.append(problem)
    if skipped > MAX_WARNINGS:
        warnings.append(f"... and {skipped - MAX_WARNINGS} more damaged lines ignored")
    return header, events, warnings


def write_session(
    path: str | Path, header: dict[str, Any], events: list[Event], *, gz: bool | None = None
) -> Path:
    """Write a whole session at once (exports, tests, re-compressing); live recording uses ``Recorder``.

    Events are written as given: callers that hold unredacted events must go through ``Recorder``.
    """
    p = Path(path)
    gz = p.name.endswith(".gz") if gz is None else gz
    body = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in [header, *(e.to_dict() for e in events)])
    payload = gzip.compress(body.encode("utf-8")) if gz else body.encode("utf-8")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the file may have existed with looser permissions
        with os.fdopen(fd, "wb", closefd=False) as fh:
            fh.write(payload)
    finally:
        os.close(fd)
    return p
