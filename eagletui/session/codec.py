"""The compact form of recorded events (session format version 2): :class:`LogCodec`.

Split out of :mod:`eagletui.session.format` because it is the one piece both the writer
(:mod:`eagletui.session.record`) and every reader fold events through, and it is long: the writer and
the reader must make exactly the same predictions (clock, seq, rank, per-type bases), so all of that
arithmetic lives together here. :mod:`eagletui.session.format` re-exports these names.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, TypeGuard

from eagletui.core.events import event_type

#: The largest number a recorded field may hold: far past any tok/s, byte count or duration, and far
#: from where charts, means and formatting overflow (one ``output_throughput: 1e308`` blanked them).
MAX_NUMBER = 1e15
#: Wall clocks within ±1000 years of 1970: ``wall: 1e300`` made the export's date formatting overflow.
MAX_WALL = 32_503_680_000.0


class BadClock(ValueError):
    """An event whose clock (``du``, ``wall``, ``mono``) cannot be taken. The codec kept its state
    (the clock as it was, the event's fields as the base of later ``~`` events of its type), so only
    this event is skipped: one ``du: 1e300`` used to carry into every later clock and lose the rest
    of the file."""


def _clock_problem(name: str, value: Any, bound: float) -> str | None:
    if not _is_number(value):
        return f"field {name!r} must be a finite number, got {_kind_of(value)}"
    if not -bound <= value <= bound:
        return f"field {name!r} is out of range: {value!r}"
    return None


class LogCodec:
    """The compact form of events (format version 2), shared by the writer and the reader.

    Log lines are nearly all of a recording, and as full dicts (type, wall, mono, kind, rank, seq,
    frame, launch around each line) a 740 MB log made a 2.4 GB recording; the events derived from
    lines (a DecodeStats per decode line, a PhaseProgress per tqdm frame) repeated every field too.

    * A log line is one JSON array ``[dmono_us, text]``, ``[dmono_us, text, kind]`` or
      ``[dmono_us, text, kind, extras]``: ``kind`` omitted when ``"other"``; ``extras`` holds only what
      the reader cannot predict: ``wall`` when it is more than half a millisecond away from ``mono`` +
      the last wall-mono offset, ``seq`` when it is not the previous line's + 1, ``rank``/``launch``
      when they change, ``frame`` when true, ``p`` (``[prefix_end, rank start, rank end]``, the log
      format's offsets) when they change (at a keyframe: when they are not zero).
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
      each type after a reset stands alone, which cost 0.1 % of the file at every 256 events on
      ``benchmarks/replay_load.py``'s mix (a type stands alone every :data:`TYPE_KEYFRAME` events
      anyway). 256 since issue 33, 1024 before: a seek decodes from the seek point before its
      window, up to a block more than the window, and at 1024 that block made seeks ~25 % slower.
      Files without the header key (the first version-2 files) are read
      as before, from the start.

    Both sides fold events through the same arithmetic, so the predictions agree exactly; only the
    clock values are rounded (to the microsecond, and wall to half a millisecond).
    """

    _WALL_TOLERANCE = 0.0005
    KEYFRAME = 256
    TYPE_KEYFRAME = 32
    SEEK_POINT = 256  # a multiple of KEYFRAME; files written before issue 33 have 1024
    SEEK_MARK = "@"

    def __init__(self, *, self_contained: bool = False, offsets: bool = True) -> None:
        self.self_contained = self_contained
        # False for a file recorded before log rows carried offsets: the reader derives them
        self.offsets = offsets
        self.mono = 0.0
        self.offset = 0.0  # wall - mono
        self.seq = 0
        self.rank: int | None = None
        self.launch = 0
        # prefix end and rank span of the last line of each (rank, kind): a rank's prefix keeps its length
        self.pspan: dict[tuple[Any, Any], tuple[int, int, int]] = {}
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
        pspan = _pspan(data)
        if pspan is None:  # not offsets into this text: written as they are
            for name in _P_FIELDS:
                extras[name] = data.get(name, 0)
        else:
            slot = (rank, data.get("kind", "other"))
            if pspan != (_NO_P if key else self.pspan.get(slot, _NO_P)):
                extras["p"] = list(pspan)
            if len(self.pspan) < 4096 or slot in self.pspan:
                self.pspan[slot] = pspan
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

    def restart(self) -> None:
        """Writer side: the next event is written as a seek point (whole, resetting every base on
        both sides), because events encoded since the last one on disk may be missing from the file
        (a write that failed: disk full). Nothing after it leans on what was lost."""
        if self.self_contained:
            self.n = -(-self.n // self.SEEK_POINT) * self.SEEK_POINT
        else:
            self.n = -(-self.n // self.KEYFRAME) * self.KEYFRAME
            self._bases.clear()
            self._since.clear()

    def _reset(self) -> None:
        """At a keyframe of a self-contained file: forget everything a later line could lean on."""
        self._bases.clear()
        self._since.clear()
        self.seq, self.rank, self.launch = 0, None, 0
        self.pspan.clear()

    # -- reader ---------------------------------------------------------------------------------

    def damaged(self) -> None:
        """A line could not be read: what it changed is unknown, so no ``~`` event may build on it."""
        self._bases.clear()

    def forget(self, kind: str) -> None:
        """A line was read but its event is invalid (a field out of range): only later ``~`` events
        of its type could build on what it holds; everything else it changed was read right."""
        self._bases.pop(kind, None)

    def read_dict(self, data: dict[str, Any], *, from_row: bool = False) -> dict[str, Any]:
        """Reader side: a full event (``wall``/``mono``: a keyframe, version 1 or a hand-made file)
        anchors the clock; a compact one (``du``) gets its clock and, if ``~``, its unchanged fields
        back. ValueError names what is wrong (the caller skips the line)."""
        kind = data["type"]
        if data.pop(self.SEEK_MARK, None) == 1 and self.self_contained and not from_row:
            self._reset()  # (a row's seek point was reset in decode())
        bad: str | None = None
        if "du" in data and "mono" not in data:
            d_us = data.pop("du")
            bad = _clock_problem("du", d_us, MAX_NUMBER * 1e6)
            mono = self.mono + d_us / 1e6 if bad is None else self.mono
            if bad is None and not -MAX_NUMBER <= mono <= MAX_NUMBER:
                bad = f"field 'du' is out of range: {d_us!r}"
            if bad is None and "wall" in data:
                bad = _clock_problem("wall", data["wall"], MAX_WALL)
            if bad is None:
                if "wall" in data:
                    self.offset = float(data["wall"]) - mono
                else:
                    data["wall"] = mono + self.offset
                data["mono"] = self.mono = mono
        elif "wall" in data and "mono" in data:
            bad = _clock_problem("wall", data["wall"], MAX_WALL) or _clock_problem(
                "mono", data["mono"], MAX_NUMBER
            )
            if bad is None:
                self.mono = float(data["mono"])
                self.offset = float(data["wall"]) - float(data["mono"])
        if data.pop("~", None) is not None:
            base = self._bases.get(kind)
            if base is None:
                raise ValueError("its earlier fields were on a damaged line")
            data = {**base, **data}
        else:
            data = {**_defaults(kind), **data}
        self._bases[kind] = {k: v for k, v in data.items() if k not in ("type", "wall", "mono")}
        if bad is not None:
            raise BadClock(bad)
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
        if not (-MAX_NUMBER <= mono <= MAX_NUMBER and -MAX_WALL <= wall <= MAX_WALL):
            raise ValueError(f"its clock is out of range (mono {mono!r}, wall {wall!r})")  # kept as it was
        self.offset = wall - mono
        seq = extras.get("seq", self.seq)
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise ValueError(f"field 'seq' must be an integer, got {_kind_of(seq)}")
        rank = extras.get("rank", self.rank)
        launch = extras.get("launch", self.launch)
        raw_p = any(name in extras for name in _P_FIELDS)
        pspan = _NO_P
        if not raw_p:
            slot = (rank, kind)
            if "p" in extras:
                p = extras.pop("p")
            else:
                p = _NO_P if "mono" in extras else self.pspan.get(slot, _NO_P)
            if not (
                isinstance(p, list | tuple)
                and len(p) == 3
                and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= len(text) for x in p)
            ):
                p = _NO_P  # damaged or hostile offsets: the line shows, only its ranks do not collapse
            pspan = (p[0], p[1], p[2])
            if len(self.pspan) < 4096 or slot in self.pspan:
                self.pspan[slot] = pspan
        data = {**extras, "type": "log", "wall": wall, "mono": mono, "text": text, "kind": kind}
        data.update(seq=seq, rank=rank, launch=launch, frame=extras.get("frame", False))
        if not raw_p:
            data.update(zip(_P_FIELDS, pspan, strict=True))
        self.mono, self.seq, self.rank = mono, seq + 1, rank if _is_int_or_none(rank) else self.rank
        if isinstance(launch, int) and not isinstance(launch, bool):
            self.launch = launch
        return data


_LOG_KNOWN = frozenset(
    {
        "type",
        "wall",
        "mono",
        "text",
        "kind",
        "rank",
        "seq",
        "frame",
        "launch",
        "prefix_end",
        "rank_start",
        "rank_end",
    }
)
_NO_P = (0, 0, 0)
_P_FIELDS = ("prefix_end", "rank_start", "rank_end")


def derived_offsets(text: str) -> tuple[int, int, int]:
    """The offsets a recording made before log rows carried them would have had: its lines are the
    default format's (older eagletui read SGLang only), classified again."""
    from eagletui.core.logs.registry import get_format

    rec = get_format().classify(text[:65536])
    pe, (a, b) = rec.prefix_end, rec.rank_span
    n = len(text)
    return (pe, a, b) if 0 <= pe <= n and 0 <= a <= b <= n else _NO_P


def _pspan(data: dict[str, Any]) -> tuple[int, int, int] | None:
    """``(prefix_end, rank start, rank end)`` of a log event dict, None unless they are offsets into
    its text (then the writer keeps the fields as they are)."""
    out = (data.get("prefix_end", 0), data.get("rank_start", 0), data.get("rank_end", 0))
    n = len(data["text"])
    if all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= n for x in out):
        return out
    return None


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
