"""The live serving fast path of :meth:`LogInterpreter.feed <eagletui.core.phases.interpreter.LogInterpreter.feed>`.

While the server serves, nearly every line is a stats line or an HTTP access line whose whole effect is
known in advance (a LogLine, a stats event, the clock): this path folds them in one loop over a
chunk's lines, with the format's :class:`~eagletui.core.logs.seam.FastPath` patterns, and hands every
other line to the interpreter's per-line path. A mixin of the interpreter, apart from its framing
because it is the one place tuned for speed (``benchmarks/parse_throughput.py`` measures it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eagletui.core import events as ev
from eagletui.core.logs.seam import SCAN_LIMIT, FastPath, LogFormat
from eagletui.core.phases.event_builders import build_decode_stats, build_log_line, build_prefill_stats
from eagletui.core.phases.machine import PhaseMachine


def _float(s: str | None) -> float | None:
    try:
        return float(s) if s else None
    except ValueError:
        return None


class LivePath:
    """The live serving fast path (see the module docstring)."""

    fmt: LogFormat
    _m: PhaseMachine
    _fp: FastPath | None
    _seq: int
    _after_cr: bool
    _rank_cache: dict[str, int | None]

    if TYPE_CHECKING:
        # LogInterpreter's
        def _frames(self, line: str, out: list[ev.Event]) -> None: ...
        def _segment(self, seg: str, after_cr: bool, out: list[ev.Event]) -> None: ...

    def _live(self, lines: list[str], careful: bool, out: list[Any]) -> None:
        """Complete lines with LogLine events (``feed``): the per-line path, plus a serving fast path.

        While :meth:`PhaseMachine.serving_noop` says so, a stats line that the format's fast path
        matches whole (``FastPath.line_re``) or an HTTP access line is folded here directly: the same
        LogLine and stats events, and the same machine updates (clock, decode history), as
        :meth:`_segment` → ``classify`` → ``on_record`` would give. Anything else, or anything that
        does not parse exactly as the fast checks expect, takes the per-line path, after which the
        conditions are re-read.

        One piece: the loop keeps the fast path's state (sequence number, clock, decode count, the
        format's patterns and group indices) in locals and folds a serving line with no call of its
        own beyond the match and the event builders; split into functions, every serving line would
        pay for the calls and for the state passed to them (``benchmarks/parse_throughput.py``).
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
        log_line, decode_stats, prefill_stats = build_log_line, build_decode_stats, build_prefill_stats
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
