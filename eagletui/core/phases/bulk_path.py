"""The interpreter's path without LogLine events (``eagletui parse``): one line at a time, and runs of
serving lines scanned in bulk.

:meth:`LogInterpreter.feed_bulk <eagletui.core.phases.interpreter.LogInterpreter.feed_bulk>` hands its
complete lines here: while the server serves, one regex (the format's ``FastPath.scan_re``) matches a
whole run of Decode/Prefill/access lines at C speed and its Decode lines become one
:class:`~eagletui.core.phases.model.DecodeRows`; any other line goes through :meth:`BulkPath._line`,
which folds a serving line directly and the rest as the live path does. A mixin of the interpreter,
apart from its framing because it is tuned for speed (``benchmarks/parse_throughput.py``).
"""

from __future__ import annotations

import re
from array import array
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from eagletui.core import events as ev
from eagletui.core.logs.outer_prefix import OuterPrefix
from eagletui.core.logs.seam import SCAN_LIMIT, FastPath, LineReader
from eagletui.core.phases.machine import PhaseMachine
from eagletui.core.phases.model import READY, DecodeRows, SpecRows


class BulkPath:
    """Lines without LogLine events, serving runs in bulk (see the module docstring)."""

    _m: PhaseMachine
    _fp: FastPath | None
    _after_cr: bool
    _bulk_ok: bool
    _scan_sample: str
    _outer: OuterPrefix
    reader: LineReader

    if TYPE_CHECKING:
        # LogInterpreter's
        def _frames(self, line: str, out: list[ev.Event]) -> None: ...
        def _segment(self, seg: str, after_cr: bool, out: list[ev.Event]) -> None: ...

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
            and self._outer.pattern is None
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
            if fp.reads_serving:
                got = fp.serving_record(line, self.reader)
                if got is not None:
                    decode, spec = got
                    if decode:
                        m.add_decode(decode, out)
                    if spec:
                        out.append(ev.SpecDecodeStats(launch=m.st.launch, **spec))
                    return
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
        """The bulk serving path applies (the conditions of :meth:`_line`, and the format's own)."""
        m = self._m
        return (
            self._bulk_ok
            and not self._after_cr
            and self._outer.pattern is None
            and m.st.status is READY
            and not m.group_open
            and m.decode_version_checked
            and (self._fp is None or self._fp.scan_ok(self.reader))
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
        other_of = itemgetter(fp.scan_ix[2])
        if not any(map(other_of, found)):  # only serving lines (and empty ones, which are no-ops)
            self._rows(found, binary, out, eager)
            return limit
        start = 0
        for i, other in enumerate(map(other_of, found)):
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
        """Decode lines among :meth:`_scan` matches (others have empty groups) → one DecodeRows (and, for
        a format whose matches carry metrics lines, one SpecRows)."""
        fp = self._fp
        assert fp is not None
        acc_ix, gen_ix, _ = fp.scan_ix
        gen = array("d", map(float, filter(None, map(itemgetter(gen_ix), found))))
        if not gen:
            return
        spec = fp.scan_spec(found, binary, self.reader) if fp.reads_serving else None
        if fp.reads_serving and spec is None:
            # a value of the run needs the full path: its lines one by one (the reader pairs them)
            for g in found:
                if g[0]:
                    for line in (g[0].decode("utf-8", "replace") if binary else g[0]).split("\n"):
                        self._line(line, out)
            return
        for g in reversed(found):
            if g[0]:
                break
        msg = g[0]
        d = fp.parse_decode(msg.decode() if binary else msg)
        assert d is not None  # a scan pattern accepts only lines its parse_decode reads
        m = self._m
        launch = m.st.launch
        acc = array("d", map(float, filter(None, map(itemgetter(acc_ix), found))))
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
        if spec is not None:
            count, accepts, accepted, drafted, last = spec
            out.append(
                SpecRows(launch, count, array("d", accepts), accepted, drafted, ev.SpecDecodeStats(launch=launch, **last))
            )
        for running in eager:
            m.note_eager(running, out)


_NL_RUN, _NL_RUN_B = re.compile("\n+"), re.compile(b"\n+")
