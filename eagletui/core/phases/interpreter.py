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
:class:`~eagletui.core.phases.model.DecodeRows`). Both fold every line the same way. Their serving
fast paths are mixins of the interpreter, one module each: :mod:`eagletui.core.phases.live_path` and
:mod:`eagletui.core.phases.bulk_path`.
"""

from __future__ import annotations

import codecs
import re
from typing import Any

from eagletui.core import events as ev
from eagletui.core.logs.outer_prefix import OuterPrefix
from eagletui.core.logs.registry import get_format
from eagletui.core.logs.seam import LogFormat, Rec
from eagletui.core.phases.bulk_path import BulkPath
from eagletui.core.phases.live_path import LivePath
from eagletui.core.phases.machine import PhaseMachine
from eagletui.core.phases.model import MachineState

#: A single line longer than this keeps only its head (a log without newlines must not eat memory).
MAX_LINE = 1 << 20
#: LogLine text is cut to this many characters for the UI.
MAX_LOGLINE = 1 << 16
#: The live serving fast path of :meth:`LogInterpreter.feed` (tests turn it off to compare).
FAST_LIVE = True


class LogInterpreter(LivePath, BulkPath):
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
        # what another program writes in front of every line (compose, journald, Ray, a shipper)
        self._outer = OuterPrefix(fmt.record_start, fmt.nested_records)

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
            outer = self._outer
            if outer.learning and outer.voters:
                # a live tail shows what has come: learn from the lines so far rather than hold them,
                # and decide again when more lines have voted
                for seg, after_cr in outer.decide(provisional=True):
                    self._cut_segment(seg, after_cr, out)
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
        Decode lines come back as one :class:`~eagletui.core.phases.model.DecodeRows` and Prefill lines
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
        for seg, after_cr in self._outer.decide():  # lines held while the wrapper was learned
            self._cut_segment(seg, after_cr, out)
        if self._pending:
            text = "".join(self._pending)
            self._pending = []
            self._pending_len = 0
            fmt = self.fmt
            cut = self._outer.cut(text)
            body = text[cut:]
            end = self._outer.trail(body)
            pieces = fmt.split_glued(body[:end])
            for j, seg in enumerate(pieces):
                if seg:
                    rec = self._classify(seg, self._after_cr or fmt.is_bar(seg))
                    if j == 0 and cut:
                        _uncut(rec, text[:cut])
                    if j == len(pieces) - 1:
                        rec.text += body[end:]
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
        outer = self._outer
        if outer.learning:
            for held, held_cr in outer.offer(seg, after_cr):
                self._cut_segment(held, held_cr, out)
            return
        if outer.provisional:
            outer.observe(seg, after_cr)
        self._cut_segment(seg, after_cr, out)

    def _cut_segment(self, seg: str, after_cr: bool, out: list[ev.Event]) -> None:
        """One segment, the learned outer prefix (and a pane's right border) cut off before the format
        reads it."""
        if len(seg) > MAX_LINE:
            seg = seg[:MAX_LINE]
        outer = self._outer
        cut = outer.cut(seg)
        fmt = self.fmt
        if cut and not outer.copies_record(seg[:cut]) and not fmt.is_bar(seg) and fmt.classify(seg).prefixed:
            cut = 0  # the format reads its record behind the wrapper itself (and the wrapper's time)
        wrapper = seg[:cut]
        if cut:
            seg = seg[cut:]
        end = outer.trail(seg)
        border, seg = seg[end:], seg[:end]
        if after_cr or fmt.is_bar(seg):
            pieces = fmt.split_glued(seg)
            for j, piece in enumerate(pieces):
                frame = (after_cr and j == 0) or fmt.is_bar(piece)
                rec = self._classify(piece, frame)
                if j == 0 and cut:
                    _uncut(rec, wrapper)
                if j == len(pieces) - 1:
                    rec.text += border  # shown whole, the pane's right border too
                self._emit(rec, out)
        else:
            rec = self._classify(seg, False)
            if cut:
                _uncut(rec, wrapper)
            rec.text += border
            self._emit(rec, out)

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


_SGR_RE = re.compile(r"\x1b\[[0-9;]{0,32}m")


def _uncut(rec: Rec, wrapper: str) -> None:
    """Put the wrapper's prefix back in front of a record read without it: the line shows whole, the
    wrapper as part of its prefix (colour codes dropped, as the formats drop them)."""
    if "\x1b" in wrapper:
        wrapper = _SGR_RE.sub("", wrapper)
    n = len(wrapper)
    rec.text = wrapper + rec.text
    rec.prefix_end += n
    if rec.rank_span != (0, 0):
        rec.rank_span = (rec.rank_span[0] + n, rec.rank_span[1] + n)
