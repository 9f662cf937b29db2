"""Public entry point: SGLang server log bytes/text in, typed events out.

Framing lives here (UTF-8 split across chunks, ``\\r`` tqdm frames, lines glued behind unterminated
frames, unbounded lines); classification is :mod:`eagletui.core.sglang_lines`, the fold is
:mod:`eagletui.core.phase_machine`. A segment (text up to ``\\r`` or ``\\n``) is handled as soon as
its terminator arrives, so the events do not depend on how the input was chunked and a live bar
advances before its final newline.
"""

from __future__ import annotations

import codecs

from eagletui.core import events as ev
from eagletui.core.phase_machine import READY, MachineState, PhaseMachine
from eagletui.core.sglang_lines import SCAN_LIMIT, classify, is_bar, parse_decode, parse_prefill, split_glued

#: A single line longer than this keeps only its head (a log without newlines must not eat memory).
MAX_LINE = 1 << 20
#: LogLine text is cut to this many characters for the UI.
MAX_LOGLINE = 1 << 16


class LogInterpreter:
    """Incremental SGLang log interpreter (see the module docstring)."""

    def __init__(self, launch: int = 1, emit_lines: bool = True) -> None:
        self.emit_lines = emit_lines
        self._m = PhaseMachine(launch)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []
        self._pending_len = 0
        self._after_cr = False
        self._seq = 0
        self._finished = False

    @property
    def state(self) -> MachineState:
        """Current phase, per-phase/per-rank progress, failure, decode history. Do not mutate."""
        return self._m.st

    @property
    def version(self) -> str | None:
        return self._m.version_label()

    # ------------------------------------------------------------------ input

    def feed_bytes(self, chunk: bytes) -> list[ev.Event]:
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
        if self.emit_lines or "\r" in text:
            for line in lines:
                if "\r" in line:
                    self._frames(line, out)
                else:
                    self._segment(line, self._after_cr, out)
                    self._after_cr = False
        else:
            self._fast_lines(lines, out)
        if tail:
            if "\r" in tail:
                parts = tail.split("\r")
                tail = parts.pop()
                for i, part in enumerate(parts):
                    self._segment(part, i > 0 or self._after_cr, out)
                self._after_cr = True
            if tail:
                self._hold(tail)
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
            for seg in split_glued(text):
                if seg:
                    rec = classify(seg, self._after_cr or is_bar(seg))
                    if rec.kind in ("decode", "prefill"):
                        rec.data = {}  # an unterminated stats line may be cut mid-number
                    self._emit(rec, out)
        if not self._finished:
            self._finished = True
            self._m.finish(out)
        return out

    # ------------------------------------------------------------------ framing

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
        if after_cr or "it/s]" in seg[:SCAN_LIMIT] or "%|" in seg[:SCAN_LIMIT]:
            pieces = split_glued(seg)
            for j, piece in enumerate(pieces):
                frame = (after_cr and j == 0) or is_bar(piece)
                self._emit(classify(piece, frame), out)
        else:
            self._emit(classify(seg, False), out)

    def _emit(self, rec, out: list[ev.Event]) -> None:
        n = len(out)
        self._m.on_record(rec, out)
        if self.emit_lines:
            self._seq += 1
            text = rec.text if len(rec.text) <= MAX_LOGLINE else rec.text[:MAX_LOGLINE] + "…"
            line = ev.LogLine(
                text=text,
                kind=rec.kind,
                rank=rec.tp,
                seq=self._seq,
                frame=rec.frame,
                launch=self._m.st.launch,
            )
            # The line goes before what it caused, so a UI shows cause then effect.
            out.insert(n, line)

    def _fast_lines(self, lines: list[str], out: list[ev.Event]) -> None:
        """The ``parse`` hot path: serving lines skip the generic classifier once the server is ready."""
        m = self._m
        st = m.st
        segment = self._segment
        add_decode = m.add_decode
        for line in lines:
            if st.status is READY and not m.group_open and m.decode_version_checked:
                i = line.find("] Decode batch", 0, 400)
                if i >= 0:
                    d = parse_decode(line[i + 2 : i + 2 + SCAN_LIMIT])
                    if d is not None:
                        add_decode(d, out)
                        continue
                else:
                    i = line.find("] Prefill batch", 0, 400)
                    if i >= 0:
                        d = parse_prefill(line[i + 2 : i + 2 + SCAN_LIMIT])
                        if d is not None:
                            out.append(ev.PrefillStats(launch=st.launch, **d))
                            continue
                    elif line.startswith("INFO:     ") and "HTTP/1." in line:
                        continue
            segment(line, self._after_cr, out)
            self._after_cr = False
