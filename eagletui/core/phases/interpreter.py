"""Public entry point: server log bytes/text in, typed events out.

Framing lives here (UTF-8 split across chunks, ``\\r`` progress frames, lines glued behind unterminated
frames, unbounded lines); classification is the server's :class:`~eagletui.core.logs.seam.LogFormat`
(through its per-interpreter :class:`~eagletui.core.logs.seam.LineReader`), the fold is
:mod:`eagletui.core.phases.machine`. Nothing here knows a server's wording: the serving fast paths
take their patterns and literals from the format's :class:`~eagletui.core.logs.seam.FastPath`. A segment (text up to ``\\r`` or ``\\n``) is handled as soon as
its terminator arrives, so the events do not depend on how the input was chunked and a live bar
advances before its final newline.

Two ways in: :meth:`LogInterpreter.feed` / :meth:`~LogInterpreter.feed_bytes` (the live UI; one event
per fact) and :meth:`~LogInterpreter.feed_bulk` / :meth:`~LogInterpreter.feed_bulk_bytes` (``eagletui
parse``; runs of serving lines are scanned at C speed and their Decode lines come back as one
:class:`~eagletui.core.phases.machine.DecodeRows`). Both fold every line the same way.
"""

from __future__ import annotations

import codecs
import dataclasses
import re
from array import array
from operator import itemgetter
from typing import Any

from eagletui.core import events as ev
from eagletui.core.logs.registry import get_format
from eagletui.core.logs.seam import SCAN_LIMIT, LogFormat
from eagletui.core.phases.machine import PhaseMachine
from eagletui.core.phases.model import READY, DecodeRows, MachineState


def _float(s: str | None) -> float | None:
    try:
        return float(s) if s else None
    except ValueError:
        return None


#: A single line longer than this keeps only its head (a log without newlines must not eat memory).
MAX_LINE = 1 << 20
#: LogLine text is cut to this many characters for the UI.
MAX_LOGLINE = 1 << 16
#: The live serving fast path of :meth:`LogInterpreter.feed` (tests turn it off to compare).
FAST_LIVE = True


class LogInterpreter:
    """Incremental log interpreter for one server's output (see the module docstring)."""

    def __init__(self, launch: int = 1, emit_lines: bool = True, fmt: LogFormat | None = None) -> None:
        self.emit_lines = emit_lines
        self.fmt = fmt = fmt if fmt is not None else get_format()
        self.reader = fmt.reader()
        self._classify = self.reader.classify
        self._m = PhaseMachine(launch, fmt)
        fp = fmt.fast
        self._fp = fp
        self._bulk_ok = fp is not None and fp.scan_re("", False) is not None
        # one scan of a chunk spares each line the tests for "\r" and bar marks
        self._bar_marks = ("\r", *fmt.bar_marks)
        self._rank_cache: dict[str, int | None] = {}
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []
        self._pending_len = 0
        self._after_cr = False
        self._seq = 0
        self._finished = False
        self._scan_sample = ""  # feed_bulk: a Decode message of the layout last seen

    @property
    def state(self) -> MachineState:
        """Current phase, per-phase/per-rank progress, failure, decode history. Do not mutate."""
        return self._m.st

    @property
    def version(self) -> str | None:
        return self._m.version_label()

    # ------------------------------------------------------------------ input

    def feed_bytes(self, chunk: bytes | bytearray) -> list[ev.Event]:
        return self.feed(self._decoder.decode(chunk))

    def feed(self, text: str) -> list[ev.Event]:
        out: list[ev.Event] = []
        if not text:
            return out
        if "\n" not in text and "\r" not in text:
            self._hold(text)
            return out
        if self._pending:
            self._pending.append(text)
            text = "".join(self._pending)
            self._pending = []
            self._pending_len = 0
        lines = text.split("\n")
        tail = lines.pop()
        if self.emit_lines:
            if FAST_LIVE and self._fp is not None and self._fp.line_re is not None:
                careful = any(mark in text for mark in self._bar_marks)
                self._live(lines, careful, out)
            else:
                for line in lines:
                    if "\r" in line:
                        self._frames(line, out)
                    else:
                        self._segment(line, self._after_cr, out)
                        self._after_cr = False
        else:
            line_fn = self._line
            for line in lines:
                line_fn(line, out)
        self._tail(tail, out)
        return out

    def feed_bulk_bytes(self, chunk: bytes | bytearray) -> list[Any]:
        """:meth:`feed_bulk` for raw bytes: serving lines are matched without being decoded."""
        if self.emit_lines:
            return self.feed_bytes(chunk)
        first = chunk.find(b"\n")
        cut = chunk.rfind(b"\n")
        if first == cut:  # at most one complete line
            return self.feed_bytes(chunk)
        # The first line completes the held one (and any UTF-8 sequence split before it); after a
        # newline the decoder holds nothing, so the complete lines can bypass it. Cutting UTF-8 at a
        # newline does not change how invalid bytes are replaced.
        out: list[Any] = self.feed_bytes(chunk[: first + 1])
        self._bulk(chunk, first + 1, cut + 1, out)
        out += self.feed_bytes(chunk[cut + 1 :])
        return out

    def feed_bulk(self, text: str) -> list[Any]:
        """Like :meth:`feed` for offline summaries: large chunks (megabytes) are cheapest.

        While the server is serving, runs of Decode/Prefill/HTTP-access lines are matched by one regex
        (the format's ``serving_scan_re``) instead of line by line; each run's
        Decode lines come back as one :class:`~eagletui.core.phases.machine.DecodeRows` and Prefill lines
        give no event. Every other line (startup, errors, tracebacks, bars, unusual formats) goes
        through the same per-line path as :meth:`feed`, in file order, so the summary is the same as
        with :meth:`feed` however the input is chunked. With ``emit_lines`` this is :meth:`feed`.
        """
        if self.emit_lines:
            return self.feed(text)
        first = text.find("\n")
        cut = text.rfind("\n")
        if first == cut:
            return self.feed(text)
        out: list[Any] = self.feed(text[: first + 1])
        self._bulk(text, first + 1, cut + 1, out)
        out += self.feed(text[cut + 1 :])
        return out

    def process_exited(self, code: int | None, signal: int | None) -> list[ev.Event]:
        """The server process is gone (after :meth:`flush`): its triage when the log said nothing."""
        out: list[ev.Event] = []
        self._m.process_exited(code, signal, out)
        return out

    def flush(self) -> list[ev.Event]:
        """End of input: handle the unterminated last line (no serving stats from it), then finalize."""
        out: list[ev.Event] = []
        rest = self._decoder.decode(b"", final=True)
        if rest:
            self._hold(rest)
        if self._pending:
            text = "".join(self._pending)
            self._pending = []
            self._pending_len = 0
            fmt = self.fmt
            for seg in fmt.split_glued(text):
                if seg:
                    rec = self._classify(seg, self._after_cr or fmt.is_bar(seg))
                    if rec.kind in ("decode", "prefill"):
                        rec.data = {}  # an unterminated stats line may be cut mid-number
                    self._emit(rec, out)
        for rec in self.reader.flush():  # what the reader held back (a stats line awaiting its pair)
            self._m.on_record(rec, out)
        if not self._finished:
            self._finished = True
            self._m.finish(out)
        return out

    # ------------------------------------------------------------------ framing

    def _tail(self, tail: str, out: list[Any]) -> None:
        """The text after the last newline: complete ``\\r`` frames now, hold the rest."""
        if tail:
            if "\r" in tail:
                parts = tail.split("\r")
                tail = parts.pop()
                for i, part in enumerate(parts):
                    self._segment(part, i > 0 or self._after_cr, out)
                self._after_cr = True
            if tail:
                self._hold(tail)

    def _hold(self, text: str) -> None:
        room = MAX_LINE - self._pending_len
        if room <= 0:
            return
        if len(text) > room:
            text = text[:room]
        self._pending.append(text)
        self._pending_len += len(text)

    def _frames(self, line: str, out: list[ev.Event]) -> None:
        parts = line.split("\r")
        for i, part in enumerate(parts):
            self._segment(part, i > 0 or self._after_cr, out)
        self._after_cr = False

    def _segment(self, seg: str, after_cr: bool, out: list[ev.Event]) -> None:
        if not seg:
            return
        if len(seg) > MAX_LINE:
            seg = seg[:MAX_LINE]
        fmt = self.fmt
        if after_cr or fmt.is_bar(seg):
            pieces = fmt.split_glued(seg)
            for j, piece in enumerate(pieces):
                frame = (after_cr and j == 0) or fmt.is_bar(piece)
                self._emit(self._classify(piece, frame), out)
        else:
            self._emit(self._classify(seg, False), out)

    def _emit(self, rec, out: list[ev.Event]) -> None:
        n = len(out)
        self._m.on_record(rec, out)
        if self.emit_lines:
            self._seq += 1
            text = rec.text if len(rec.text) <= MAX_LOGLINE else rec.text[:MAX_LOGLINE] + "…"
            line = ev.LogLine(
                text=text,
                kind=rec.kind,
                rank=rec.tp if rec.rank_actor else None,
                seq=self._seq,
                frame=rec.frame,
                launch=self._m.st.launch,
                prefix_end=min(rec.prefix_end, len(text)),
                rank_start=min(rec.rank_span[0], len(text)),
                rank_end=min(rec.rank_span[1], len(text)),
            )
            # The line goes before what it caused, so a UI shows cause then effect.
            out.insert(n, line)

    def _live(self, lines: list[str], careful: bool, out: list[Any]) -> None:
        """Complete lines with LogLine events (``feed``): the per-line path, plus a serving fast path.

        While :meth:`PhaseMachine.serving_noop` says so, a stats line that the format's fast path
        matches whole (``FastPath.line_re``) or an HTTP access line is folded here directly: the same
        LogLine and stats events, and the same machine updates (clock, decode history), as
        :meth:`_segment` → ``classify`` → ``on_record`` would give. Anything else, or anything that
        does not parse exactly as the fast checks expect, takes the per-line path, after which the
        conditions are re-read.
        """
        fp = self._fp
        assert fp is not None
        m = self._m
        st = m.st
        pre_ok, dec_ok, http_ok = m.serving_noop()
        launch = st.launch
        seq = self._seq
        append = out.append
        serving_match = fp.line_re.match
        dix, pix = fp.decode_ix, fp.prefill_ix
        if dix is not None:
            gd_run, gd_tok, gd_use, gd_acc, gd_rate, gd_graph, gd_gen, gd_q = dix
        if pix is not None:
            gp_seq, gp_tok, gp_cached, gp_run, gp_q = pix
        g_date, g_time, g_ms, g_ranks = fp.prefix_ix
        tput_re, input_marker = fp.input_re, fp.input_marker
        is_bar = self.fmt.is_bar
        access, access_marker, access_tail = fp.access_prefix, fp.access_marker, fp.access_tail
        access_first = access[:1]
        line_first = fp.line_first
        prefix_match = fp.prefix_re.match if fp.prefix_re is not None else None
        log_line, decode_stats, prefill_stats = _log_line, _decode_stats, _prefill_stats
        rank_cache = self._rank_cache
        after_cr = self._after_cr
        limit = SCAN_LIMIT
        hist = st.decode_history.append
        ndec = 0  # Decode lines not yet counted in st.decode_count
        for line in lines:
            if after_cr or len(line) > limit:
                pass
            elif not line:
                continue
            elif careful and ("\r" in line or is_bar(line)):
                pass  # frames and bars (_segment)
            elif access and line[:1] == access_first and line.startswith(access):
                # An access line without the server's prefix: not a bar, no record prefix to read.
                if http_ok and access_marker in line and access_tail in line:
                    seq += 1
                    append(log_line(line, "http", None, seq, launch, 0, 0, 0))
                    continue
            elif pre_ok and line[:1] in line_first:
                mt = serving_match(line)
                if mt is None and http_ok and m.activity and prefix_match is not None and access:
                    # An access line behind the server's own timestamp: classify reads the prefix, then
                    # the access body; folded, it only moves the clock.
                    pm = prefix_match(line)
                    if (
                        pm is not None
                        and not pm.group("ranks")
                        and line.startswith(access, pm.end())
                        and access_marker in line
                        and access_tail in line
                    ):
                        date, tm, ms = pm.group("date"), pm.group("time"), pm.group("ms")
                        ts_text = (date or "") + tm + ("." + ms if ms else "")
                        if ts_text != m.last_ts_text:
                            m.ts_of(ts_text, date is not None)
                        seq += 1
                        append(log_line(line, "http", None, seq, launch, pm.end(), 0, 0))
                        continue
                elif mt is not None:
                    g = mt.groups()
                    try:
                        if dix is not None and g[gd_run] is not None:
                            if not dec_ok:
                                g = None
                            else:
                                e = decode_stats(
                                    float(g[gd_gen]),
                                    int(g[gd_run]),
                                    int(g[gd_q]),
                                    float(g[gd_acc]) if g[gd_acc] else None,
                                    float(g[gd_rate]) if g[gd_rate] else None,
                                    float(g[gd_use]),
                                    int(g[gd_tok]),
                                    None if g[gd_graph] is None else g[gd_graph] == "True",
                                    launch,
                                )
                                kind = "decode"
                        elif pix is not None:
                            tput = None
                            if input_marker and input_marker in line:  # searched in the whole line
                                t = tput_re.search(line)
                                if t:
                                    tput = _float(t.group(1))
                            e = prefill_stats(
                                int(g[gp_seq]),
                                int(g[gp_tok]),
                                int(g[gp_cached]),
                                int(g[gp_run]) if g[gp_run] else 0,
                                int(g[gp_q]),
                                tput,
                                launch,
                            )
                            kind = "prefill"
                        else:
                            g = None
                    except ValueError:  # parse_decode gives None (not a decode record); int() limits
                        g = None
                    if g is not None:
                        seq += 1
                        date, tm, ms, ranks = g[g_date], g[g_time], g[g_ms], g[g_ranks]
                        ts_text = (date or "") + tm + ("." + ms if ms else "")
                        if ts_text != m.last_ts_text:  # the same text again changes nothing
                            m.ts_of(ts_text, date is not None)
                        r1 = mt.end(g_ranks + 1)
                        pend = r1 + 2 if line[r1 + 1 : r1 + 2] == " " else r1 + 1
                        if ranks:
                            tp = rank_cache.get(ranks, -1)
                            if tp == -1:
                                tp = self._rank_of(ranks)
                            r0 = mt.start(g_ranks + 1) + 1
                        else:
                            tp, r0, r1 = None, 0, 0
                        # LogLine first: the UI shows cause, then effect (as _emit orders them).
                        append(log_line(line, kind, tp, seq, launch, pend, r0, r1))
                        if kind == "decode":
                            ndec += 1
                            hist(e)
                            append(e)
                            if e.cuda_graph is False:  # rare: a step that ran without a CUDA graph
                                m.note_eager(e.running_req, out)
                            continue
                        append(e)
                        continue
            # The per-line path.
            self._seq = seq
            if ndec:
                st.decode_count += ndec
                ndec = 0
            if "\r" in line:
                self._frames(line, out)
            else:
                self._segment(line, self._after_cr, out)
                self._after_cr = False
            seq = self._seq
            after_cr = self._after_cr
            st = m.st
            launch = st.launch
            hist = st.decode_history.append
            pre_ok, dec_ok, http_ok = m.serving_noop()
        self._seq = seq
        if ndec:
            st.decode_count += ndec

    def _rank_of(self, raw: str) -> int | None:
        """The rank number of a fast-path line's raw rank text, as ``classify`` reads it (cached)."""
        fp = self._fp
        assert fp is not None
        ranks = raw.strip()
        tp = fp.rank_of(ranks) if ranks else None
        if len(self._rank_cache) < 4096:
            self._rank_cache[raw] = tp
        return tp

    def _line(self, line: str, out: list[Any]) -> None:
        """One complete line without LogLine events (``feed`` and ``feed_bulk``)."""
        if "\r" in line:
            self._frames(line, out)
            return
        m = self._m
        fp = self._fp
        if (
            fp is not None
            and not self._after_cr
            and m.st.status is READY
            and not m.group_open
            and m.decode_version_checked
        ):
            # Serving fast path; the format's scan_re encodes exactly these decisions.
            access, access_marker = fp.access_prefix, fp.access_marker
            if access:
                if line.startswith(access) and access_marker in line:
                    return
                f = line.find(fp.prefix_close, 0, fp.prefix_window)
                if f >= 0 and line.startswith(access, f + fp.prefix_gap) and access_marker in line:
                    return  # an access line behind the server's own timestamp
            window, skip = fp.marker_window, fp.marker_skip
            i = line.find(fp.decode_marker, 0, window) if fp.decode_marker else -1
            j = line.find(fp.prefill_marker, 0, window) if fp.prefill_marker else -1
            if i >= 0 and (j < 0 or i < j):
                d = fp.parse_decode(line[i + skip : i + skip + SCAN_LIMIT])
                if d is not None:
                    m.add_decode(d, out)
                    if d.get("cuda_graph") is False:
                        m.note_eager(int(d.get("running_req") or 0), out)
                    return
            elif j >= 0:
                # Serving noise for the summary whether or not its fields parse.
                d = fp.parse_prefill(line[j + skip : j + skip + SCAN_LIMIT])
                if d is not None:
                    out.append(ev.PrefillStats(launch=m.st.launch, **d))
                return
        self._segment(line, self._after_cr, out)
        self._after_cr = False

    def _fast(self) -> bool:
        """The bulk serving path applies (the same conditions as in :meth:`_line`)."""
        m = self._m
        return (
            self._bulk_ok
            and not self._after_cr
            and m.st.status is READY
            and not m.group_open
            and m.decode_version_checked
        )

    def _bulk(self, text: str | bytes | bytearray, pos: int, end: int, out: list[Any]) -> None:
        """Complete lines ``text[pos:end]`` (``end`` just after a newline), serving runs in bulk."""
        binary = not isinstance(text, str)
        nl_b, cr_b = (b"\n", b"\r") if binary else ("\n", "\r")
        find = text.find
        cr = -1  # the next "\r" at or after pos (a line holding one is a frame line: per line)
        while pos < end:
            if self._fast():
                if cr < pos:
                    cr = find(cr_b, pos, end)  # type: ignore[arg-type]
                    if cr < 0:
                        cr = end
                limit = text.rfind(nl_b, pos, cr) + 1 if cr < end else end  # type: ignore[arg-type]
                if limit > pos:
                    pos = self._scan(text, pos, limit, binary, out)
                    continue
            nl = find(nl_b, pos, end)  # type: ignore[arg-type]
            if nl == pos:
                # A run of empty lines folds like one (a 2 GB file of newlines takes a second, not minutes).
                pos = (_NL_RUN_B if binary else _NL_RUN).match(text, pos).end()  # type: ignore[union-attr,arg-type]
                self._line("", out)
                continue
            line = text[pos:nl]
            self._line(line.decode("utf-8", "replace") if binary else line, out)  # type: ignore[union-attr,arg-type]
            pos = nl + 1

    def _scan(self, text: Any, pos: int, limit: int, binary: bool, out: list[Any]) -> int:
        """Fold ``text[pos:limit]`` (no ``\\r``) while the fast path holds; returns where it stopped."""
        nl_b = b"\n" if binary else "\n"
        fp = self._fp
        assert fp is not None
        marker, skip = fp.decode_marker, fp.marker_skip
        i = text.find(marker.encode() if binary else marker, pos, min(limit, pos + 65536))
        if i >= 0:
            sample = text[i + skip : i + fp.marker_window]
            self._scan_sample = sample.decode("utf-8", "replace") if binary else sample
        pat = fp.scan_re(self._scan_sample, binary)
        found = pat.findall(text, pos, limit)
        # lines that ran without a CUDA graph are rare: look for them only where the range holds one
        mark = fp.eager_marker
        eager = bool(mark) and text.find(mark.encode() if binary else mark, pos, limit) >= 0
        if not any(map(_OTHER, found)):  # only serving lines (and empty ones, which are no-ops)
            self._rows(found, binary, out, eager)
            return limit
        start = 0
        for i, other in enumerate(map(_OTHER, found)):
            if not other:
                continue
            self._rows(found[start:i], binary, out, eager)
            start = i + 1
            # Where the line is: it differs from every serving line (the pattern decides a line by
            # its own text), so its first full-line occurrence from pos is this one.
            if text.startswith(other + nl_b, pos):
                at = pos
            else:
                at = text.find(nl_b + other + nl_b, max(pos - 1, 0)) + 1
            pos = at + len(other) + 1
            self._line(other.decode("utf-8", "replace") if binary else other, out)
            if not self._fast():
                return pos
        self._rows(found[start:], binary, out, eager)
        return limit

    def _rows(
        self, found: list[tuple[Any, ...]], binary: bool, out: list[Any], eager_lines: bool = False
    ) -> None:
        """Decode lines among :meth:`_scan` matches (others have empty groups) → one DecodeRows."""
        gen = array("d", map(float, filter(None, map(_GEN, found))))
        if not gen:
            return
        for g in reversed(found):
            if g[0]:
                break
        msg = g[0]
        fp = self._fp
        assert fp is not None
        d = fp.parse_decode(msg.decode() if binary else msg)
        assert d is not None  # a scan pattern accepts only lines its parse_decode reads
        m = self._m
        launch = m.st.launch
        acc = array("d", map(float, filter(None, map(_ACCEPT, found))))
        eager = array("i")
        mark = fp.eager_marker
        if eager_lines and mark:
            bmark = mark.encode() if binary else mark
            for g in found:
                if g[0] and bmark in g[0]:
                    e = fp.parse_decode(g[0].decode() if binary else g[0])
                    if e is not None:
                        eager.append(int(e.get("running_req") or 0))
        m.add_decode_rows(DecodeRows(launch, gen, acc, ev.DecodeStats(launch=launch, **d), eager), out)
        for running in eager:
            m.note_eager(running, out)


# ------------------------------------------------------------------ event construction (fast path)
#
# The events are frozen slotted dataclasses; their generated __init__ (keyword arguments, one
# object.__setattr__ per field) costs more than the rest of the fast path. The builders below create
# the very same objects (same class, every field set, the wall/mono default factories called in
# field order) through the slot descriptors. They are used only if the classes still look exactly as
# written for (fields, no __post_init__), else the builders are the plain constructors.


def _slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Any, ...] | None:
    fields = dataclasses.fields(cls)
    if (
        tuple(f.name for f in fields) != ("wall", "mono") + names
        or getattr(cls, "__post_init__", None) is not None
        or "__slots__" not in cls.__dict__
    ):
        return None
    out = []
    for name in ("wall", "mono") + names:
        desc = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
        if desc is None or type(desc) is not _MEMBER:
            return None
        out.append(desc.__set__)
    return (fields[0].default_factory, fields[1].default_factory, *out)


_MEMBER = type(ev.LogLine.__dict__["text"])
_new = object.__new__


def _builder(cls: type, params: tuple[str, ...], fixed: dict[str, Any] | None = None) -> Any:
    """A positional constructor for ``cls``: ``build(*params)`` with ``fixed`` fields set to constants.

    Generated from one template (exec of a few lines) so every event class gets the same fast code:
    the wall/mono factories called first, in field order, then one slot setter per field. Falls back
    to the plain keyword constructor when the class does not look as expected (see _slot_setters).
    """
    fixed = fixed or {}
    names = tuple(f.name for f in dataclasses.fields(cls))[2:]
    if set(params) | set(fixed) != set(names) or set(params) & set(fixed):
        raise ValueError(f"{cls.__name__}: params {params} + fixed {tuple(fixed)} != fields {names}")
    s = _slot_setters(cls, names)
    if s is None:

        def build(*args: Any) -> Any:
            return cls(**dict(zip(params, args, strict=True)), **fixed)

        return build
    env: dict[str, Any] = {"_new": _new, "_cls": cls, "_now_wall": s[0], "_now_mono": s[1]}
    env["_s_wall"], env["_s_mono"] = s[2], s[3]
    body = ["    o = _new(_cls)", "    _s_wall(o, _now_wall())", "    _s_mono(o, _now_mono())"]
    for name, setter in zip(names, s[4:], strict=True):
        env["_s_" + name] = setter
        if name in fixed:
            env["_v_" + name] = fixed[name]
            body.append(f"    _s_{name}(o, _v_{name})")
        else:
            body.append(f"    _s_{name}(o, {name})")
    src = f"def build({', '.join(params)}):\n" + "\n".join(body) + "\n    return o\n"
    exec(compile(src, f"<{cls.__name__} builder>", "exec"), env)  # a fixed template, no outside text
    return env["build"]


# Argument orders as the fast paths call them.
_log_line = _builder(
    ev.LogLine,
    ("text", "kind", "rank", "seq", "launch", "prefix_end", "rank_start", "rank_end"),
    {"frame": False},
)
_decode_stats = _builder(
    ev.DecodeStats,
    (
        "gen_throughput",
        "running_req",
        "queue_req",
        "accept_len",
        "accept_rate",
        "token_usage",
        "num_tokens",
        "cuda_graph",
        "launch",
    ),
)
_prefill_stats = _builder(
    ev.PrefillStats,
    ("new_seq", "new_token", "cached_token", "running_req", "queue_req", "input_throughput", "launch"),
)


_NL_RUN, _NL_RUN_B = re.compile("\n+"), re.compile(b"\n+")

# Groups of a serving_scan_re match (findall tuple): Decode message, accept len, gen throughput, other.
_ACCEPT, _GEN, _OTHER = itemgetter(1), itemgetter(2), itemgetter(3)
