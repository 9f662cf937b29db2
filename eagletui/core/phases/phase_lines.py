"""The phase bookkeeping of the phase machine: what each startup line and bar does to the phases (dist
init, the weight loads, torch.compile, the KV pool, the CUDA-graph captures), warmup, ready and stop.

A mixin of :class:`~eagletui.core.phases.machine.PhaseMachine` built on :class:`~.timeline.Timeline`
(the per-rank starts and ends these lines drive); apart from the per-record dispatch so each tag's rule
reads on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eagletui.core import events as ev
from eagletui.core.logs.seam import Rec
from eagletui.core.phases.model import FAILED, LOADING, READY, STOPPED, Candidate
from eagletui.core.phases.timeline import Timeline

#: The startup phases that end before the KV pool is sized (its clock starts at the last of them).
_BEFORE_KV = ("load_target", "load_draft", "compile")

class PhaseLines(Timeline):
    """Phase lines → phase starts and ends (see the module docstring)."""

    server_ctx: bool
    cand: Candidate | None
    emitted_prio: int
    activity: bool
    load_count: dict[str, int]
    bar_load_phase: str | None
    bar_capture_phase: str | None

    if TYPE_CHECKING:
        # LaunchNotes'
        def _version_marks(self, msg: str) -> None: ...
        def _bar_note(self, topic: str, phase: str, rec: Rec, out: list[ev.Event]) -> None: ...
        def _nccl_note(self, out: list[ev.Event]) -> None: ...
        def _version_note(self, out: list[ev.Event]) -> None: ...

        # FailureFold's
        def _emit_failure(self, out: list[ev.Event]) -> None: ...

        # ServingFold's
        def _serving_seen(self, rec: Rec, out: list[ev.Event]) -> None: ...

    def _on_phase(self, rec: Rec, tag: str, ts: float | None, out: list[ev.Event]) -> None:
        """A phase line or a progress bar of the server's: the phase it begins or ends, for its rank."""
        if not self.server_ctx:
            return
        c = self.cand
        if c is not None and c.tag == "bare_traceback" and self.emitted_prio < 0:
            self.cand = None  # the startup went on after that traceback: it was not fatal
        self._version_marks(rec.msg)
        r: str | None = rec.ranks if rec.rank_actor else None  # None: a global line (not a rank's)
        rk = "" if r is None else r  # the key of per-rank counters
        tt = rec.ts_text
        if tag in ("dist_begin", "dist_end", "load_begin", "load_end"):
            self._on_load_line(rec, tag, r, rk, ts, out)
        elif tag in ("compile_begin", "compile_end", "compile_info"):
            self._on_compile_line(tag, r, rk, ts, tt, out)
        elif tag in ("kv_alloc", "pool_end"):
            self._on_kv_line(tag, r, ts, tt, out)
        elif tag in ("capture_begin", "capture_end"):
            self._on_capture_line(rec, tag, r, rk, ts, out)
        elif tag == "bar_shards":
            name = self.bar_load_phase or "load_target"
            d = rec.data
            self._progress(name, d["done"], d["total"], "shards", d["label"], out)
            self._bar_note("load", name, rec, out)
        elif tag == "bar_capture":
            self._on_capture_bar(rec.data, out)
        elif tag in ("summary", "timings"):
            self._close_startup(ts, tt, out)
            secs = rec.data.get("phase_seconds") if tag == "timings" else None
            if isinstance(secs, dict):
                self._server_durations(secs)
        elif tag == "ready":
            self._on_ready(ts, tt, out)

    def _on_load_line(
        self, rec: Rec, tag: str, r: str | None, rk: str, ts: float | None, out: list[ev.Event]
    ) -> None:
        """Distributed init and the weight loads: the target's first, then the draft's, per rank."""
        st = self.st
        tt = rec.ts_text
        if tag == "dist_begin":
            if self.load_count.get(rk):
                return  # ≤0.5.13 draft runner re-logs dist init before its weights
            self._finish("launch", ts, tt, out)
            self._start("dist_init", r, ts, tt, out)
        elif tag == "dist_end":
            if self.load_count.get(rk):
                return
            self._rank_done("dist_init", r, ts, tt, out)
        elif tag == "load_begin":
            n = self.load_count.get(rk, 0) + 1
            if rec.data.get("draft"):
                n = max(n, 2)  # the format says it is the draft's (its target load may be cut off)
            self.load_count[rk] = n
            self._finish("launch", ts, tt, out)
            di = st.phases.get("dist_init")
            if n == 1 and di is not None and r in di.started and r not in di.done:
                self._rank_done("dist_init", r, ts, tt, out)
            name = "load_target" if n == 1 else "load_draft"
            self._start(name, r, ts, tt, out)
            if rec.tp in (0, None):
                self.bar_load_phase = name
        elif tag == "load_end":
            n = self.load_count.get(rk, 1)
            name = "load_target" if n <= 1 else "load_draft"
            typ = rec.data.get("type", "")
            if n <= 1 and typ and any(d in typ for d in self.fmt.draft_types) and "load_target" in st.phases:
                name = "load_draft"
            self._rank_done(name, r, ts, tt, out)

    def _on_compile_line(
        self, tag: str, r: str | None, rk: str, ts: float | None, tt: str, out: list[ev.Event]
    ) -> None:
        """torch.compile's begin and end lines (nested per rank) and the profiling run after it."""
        if tag == "compile_begin":
            info = self._phase("compile")
            if info.finished:
                return
            info.open[rk] = info.open.get(rk, 0) + 1
            self._start("compile", r, ts, tt, out)
        elif tag == "compile_end":
            info = self._phase("compile")
            if info.finished:
                return
            n = info.open.get(rk, 0) - 1
            info.open[rk] = max(0, n)
            if n <= 0:
                self._rank_done("compile", r, ts, tt, out)
        elif tag == "compile_info":
            ci = self.st.phases.get("compile")
            if ci is not None and not ci.finished and ts is not None and r is not None and r in ci.done:
                # the profiling run after the compile belongs to it (a server may log only its end)
                ci.rank_end[r] = ts
                if ci.end_ts is None or ts >= ci.end_ts:
                    ci.end_ts, ci.end_text = ts, tt

    def _on_kv_line(self, tag: str, r: str | None, ts: float | None, tt: str, out: list[ev.Event]) -> None:
        """The KV pool's allocation line and its end line (either may be the only one)."""
        kv = self.st.phases.get("kv_cache")
        if kv is not None and kv.finished:
            return
        if tag == "kv_alloc":
            self._start("kv_cache", r, ts, tt, out)
            self._after_loads(ts)
        elif tag == "pool_end":
            if kv is None or r not in kv.started:
                self._start("kv_cache", r, ts, tt, out)
                self._after_loads(ts)
            self._rank_done("kv_cache", r, ts, tt, out)

    def _on_capture_line(
        self, rec: Rec, tag: str, r: str | None, rk: str, ts: float | None, out: list[ev.Event]
    ) -> None:
        """A CUDA-graph capture's begin or end line (nested per rank), in the phase of its graph."""
        tt = rec.ts_text
        name = _capture_phase(rec.data)
        info = self._phase(name)
        if info.finished:
            return
        if tag == "capture_begin":
            info.open[rk] = info.open.get(rk, 0) + 1
            self._start(name, r, ts, tt, out)
            if rec.tp in (0, None):
                self.bar_capture_phase = name
        elif tag == "capture_end":
            n = info.open.get(rk, 0) - 1
            info.open[rk] = max(0, n)
            if n <= 0:
                self._rank_done(name, r, ts, tt, out)

    def _on_capture_bar(self, d: dict[str, Any], out: list[ev.Event]) -> None:
        """A capture progress bar: the progress of the graph it names, or of the capture under way."""
        # A bar that names its graph starts that phase itself (for servers that print no begin line).
        named = "what" in d or "draft" in d
        name = _capture_phase(d) if named else self.bar_capture_phase or "capture_target"
        if "elapsed" in d:
            self._phase(name).bar_elapsed = d["elapsed"]
        # a bar of token counts (draft extend / prefill: "Capturing num tokens (num_tokens=…") counts
        # shapes, not batch sizes
        unit = "shapes" if str(d["label"]).startswith("num_tokens=") else "bs"
        self._progress(name, d["done"], d["total"], unit, d["label"], out)

    def _after_loads(self, ts: float | None) -> None:
        """The KV pool's allocation began where the phase before it ended (the weights' load; a server's
        torch.compile and profiling run come between): its only lines (``KV Cache is allocated``,
        ``Memory pool end``) are printed when it is over. So its clock starts at the last earlier
        phase's end before this line, and its start text with it: a phase's duration never exceeds the
        span its start and end show."""
        kv = self.st.phases.get("kv_cache")
        if kv is None or ts is None:
            return
        ends = [
            (info.end_ts, info.end_text)
            for name in _BEFORE_KV
            if (info := self.st.phases.get(name)) is not None
            and info.end_ts is not None
            and info.end_ts <= ts
        ]
        if ends:
            end = max(ends)
            if kv.start_ts is None or end[0] < kv.start_ts:
                kv.start_ts, kv.start_text = end

    def _start_warmup(self, ts: float | None, tt: str, out: list[ev.Event]) -> None:
        st = self.st
        if "warmup" in st.phases or st.status in (READY, FAILED, STOPPED):
            return
        self._close_startup(ts, tt, out)
        self._start("warmup", None, ts, tt, out)

    def _on_http(self, rec: Rec, tag: str, ts: float | None, out: list[ev.Event]) -> None:
        st = self.st
        if tag == "access" and rec.data.get("serving") and self.server_ctx and st.status == LOADING:
            # a client's request answered before any ready line or stats line of this text: it serves
            # (a log that starts mid-serving, or one at a log level that hides the stats lines)
            self._serving_seen(rec, out)
            return
        if tag in ("http_up", "http_startup", "access_generate", "access"):
            if st.status == LOADING and self.activity and self.fmt.http_warmup:
                self._start_warmup(ts, rec.ts_text, out)
            if tag == "http_up":
                st.url = rec.data.get("url", "")
        elif tag == "http_shutdown":
            self._stop(rec.msg.strip(), out)

    def _stop(self, reason: str, out: list[ev.Event]) -> None:
        st = self.st
        if st.status in (FAILED, STOPPED) or self.emitted_prio >= 0 or not self.server_ctx:
            return
        if self.cand is not None and self.cand.prio >= 50:
            self._emit_failure(out)
            return
        st.status = STOPPED
        self.cand = None  # cascade markers before a deliberate stop were the stop's own noise
        stop = ev.ServerStopped(reason=reason[:500], launch=st.launch)
        st.stopped = stop
        out.append(stop)

    def _on_ready(self, ts: float | None, tt: str, out: list[ev.Event]) -> None:
        st = self.st
        if st.status in (READY, FAILED):
            return
        self._close_startup(ts, tt, out)
        self._finish("warmup", ts, tt, out)
        info = self._phase("ready")
        info.start_ts, info.start_text, info.end_ts, info.end_text = ts, tt, ts, tt
        info.finished = True
        info.seconds = 0.0 if ts is not None else None
        st.phase = "ready"
        st.status = READY
        self._nccl_note(out)
        self._version_note(out)
        out.append(ev.PhaseStarted(phase="ready", launch=st.launch, log_time=tt))
        out.append(
            ev.ServerReady(
                url=st.url, launch=st.launch, gaps=self._account(ts), phase_fixes=dict(self.server_phases)
            )
        )


def _capture_phase(data: dict[str, Any]) -> str:
    """The phase of a ``Capture … CUDA graph`` line: every draft graph is ``capture_draft``; the
    target's prefill graph (0.5.16+, and the piecewise graph of 0.5.10–0.5.13) is ``capture_prefill``;
    the target's decode/verify graph is ``capture_target``."""
    if data.get("draft"):
        return "capture_draft"
    if data.get("what") in ("prefill", "piecewise"):
        return "capture_prefill"
    return "capture_target"
