"""Multi-rank fold from classified log records to typed events.

Eight rank processes log the same milestones in arbitrary interleaving, server generations order the
EAGLE phases differently (target load→pool→graphs, then the draft; or both loads→pools→target
graphs→draft graphs) and some milestones have no end line, or only a progress bar. The machine
therefore tracks each phase per rank and declares a phase finished only when every rank that
started it is done *and* the log has moved on (a different phase's line, or a global milestone such as
the ``max_total_num_tokens=`` summary). That keeps a phase with several begin/end pairs (prefill then
verify graphs) from flickering finished/started.

Server-neutral: it consumes :class:`~eagletui.core.logs.seam.Rec` records and switches on the tags of
:mod:`eagletui.core.logs.seam`; every server-specific rule (failure table, hints, version marks, draft
model classes) comes from its :class:`~eagletui.core.logs.seam.LogFormat`. Pure: returns events; no
I/O, no clock reads beyond the events' own default timestamps.
"""

from __future__ import annotations

from typing import Any

from eagletui.core import events as ev
from eagletui.core.host.nccl import NcclFold
from eagletui.core.logs.formats.progress import bar_elapsed
from eagletui.core.logs.registry import get_format
from eagletui.core.logs.seam import (
    DECODE,
    ERROR,
    HTTP,
    OTHER,
    PREFILL,
    PROGRESS,
    SCAN_LIMIT,
    TRACEBACK,
    WARNING,
    LogFormat,
    Rec,
    VersionGuess,
)
from eagletui.core.phases.failures import FailureFold
from eagletui.core.phases.model import (
    FAILED,
    LOADING,
    READY,
    STOPPED,
    Candidate,
    DecodeRows,
    MachineState,
    PhaseInfo,
)
from eagletui.core.phases.native_crash import CrashSite
from eagletui.core.phases.timeline import Timeline


class PhaseMachine(Timeline, FailureFold):
    """The fold. :meth:`on_record` and :meth:`finish` return the events the record caused."""

    def __init__(self, launch: int = 0, fmt: LogFormat | None = None) -> None:
        self.fmt = fmt if fmt is not None else get_format()
        self.st = MachineState(launch=launch)
        # Evidence that this is the server's output (a record prefix, or the format's evidence), kept
        # across launches; until then failure lines are held back, so a README or a mail that mentions
        # "NCCL error" reads "unknown", not "failed".
        self.server_ctx = False
        self.prose = False  # markdown seen (a README, an issue body): only fenced blocks are log text
        self.in_fence = False
        self._reset_timeline(launch)

    # ------------------------------------------------------------------ timeline

    def _reset_timeline(self, launch: int) -> None:
        launches = self.st.launches
        self.st = MachineState(launch=launch, launches=launches)
        self.ver = VersionGuess()
        self.cand: Candidate | None = None
        self.emitted_prio = -1
        self.group_open = False
        self.group_has_cand = False
        self.group_exc: str | None = None
        self.group_last = ""
        self.group_hint: str | None = None  # startup phase family the group's frames point to
        self.group_draft = False
        self.emit_at_close = False
        self.held: list[tuple[tuple[str, int, str], Rec]] = []
        self.load_count: dict[str, int] = {}
        self.bar_load_phase: str | None = None
        self.bar_capture_phase: str | None = None
        self.last_progress: tuple[str, int, int, str] | None = None
        self.last_ts: float | None = None
        self.last_ts_text = ""
        self.prefix_checked = False
        self.day_offset = 0.0
        self.activity = False
        self.decode_version_checked = False
        self.launch_tp: int | None = None
        self.rank_num: dict[str, int | None] = {}
        self.server_phases: dict[str, float] = {}  # phase → the server's own measure, where it won
        self.crash: CrashSite | None = None  # a native crash being read (its stack says where)
        self.notes_seen: set[tuple[str, str, str]] = set()
        self.nccl = NcclFold()  # NCCL_DEBUG=INFO lines of this launch (NCCL's own format, no server's)
        self.ver_noted: str | None = None

    def serving_noop(self) -> tuple[bool, bool, bool]:
        """(prefill, decode, access): whether a prefixed Prefill line / prefixed Decode line / uvicorn
        access line whose fields parse would now only advance the clock (prefixed lines) and add its
        stats, exactly as :meth:`on_record` would fold it. Only records change these answers.
        """
        st = self.st
        if st.status != READY or self.group_open:
            return False, False, False
        pre = self.prefix_checked
        launch = st.phases.get("launch")
        # An access line may backdate the launch phase's start (see on_record); stay on the slow path.
        http = not (self.activity and launch is not None and launch.start_ts is None)
        return pre, pre and self.decode_version_checked, http

    def _new_launch(self, out: list[ev.Event]) -> None:
        self._close_group(out)
        self._nccl_note(out)
        self._reset_timeline(self.st.launch + 1)

    # ------------------------------------------------------------------ main entry

    def on_record(self, rec: Rec, out: list[ev.Event]) -> None:
        if (
            not self.fmt.classifies_failures
            and not rec.tag
            and rec.kind in (OTHER, ERROR, WARNING, TRACEBACK)
        ):
            # the format's classify leaves failures to its table (the base class's promise)
            fm = self.fmt.match_failure(rec.msg[:SCAN_LIMIT])
            if fm is not None:
                rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": fm}
        tag = rec.tag
        kind = rec.kind
        if self.crash is not None and not self.crash.done and tag != "fail":
            self.crash.feed(rec.msg)
        # Markdown (a README, an issue body): only its fenced code blocks are log text.
        if not rec.prefixed and rec.msg.lstrip().startswith("```"):
            self.in_fence = not self.in_fence
            if not self.server_ctx:
                self.prose = True
            return
        if self.prose and not self.in_fence:
            return
        # Progress bars and uvicorn lines are no one server's alone (several print the same shard bar).
        if not self.server_ctx:
            if (
                rec.prefixed
                or self.fmt.evidence(rec.msg)
                or (tag == "fail" and rec.data["failure"][2] in self.fmt.own_tags)
            ):
                self._set_ctx(out)
            elif kind == OTHER and not self.prose:
                m = rec.msg.lstrip()
                if m.startswith(("# ", "## ", "### ")) or m.count("`") >= 2:
                    self.prose = True
                    return
        # --- traceback grouping: unprefixed lines after an error record belong to it (and prefixed
        # ones the format marks as its continuation).
        if (rec.prefixed and not rec.cont) or kind in (HTTP, PROGRESS):
            self._close_group(out)
        elif self.group_open:
            if kind in (OTHER, WARNING, ERROR, TRACEBACK):
                rec.kind = TRACEBACK
                if rec.msg.strip():
                    self.group_last = rec.msg.strip()
                if tag == "frame":
                    fam, draft = self.fmt.frame_phase(rec.msg)
                    if fam is not None:
                        self.group_hint = fam
                    self.group_draft = self.group_draft or draft
                if self.fmt.exception_line(rec.msg):
                    self.group_exc = rec.msg.strip()
                    c = self.cand
                    if (
                        c is not None
                        and self.group_has_cand
                        and (self.emitted_prio < 0 or self.emit_at_close)
                    ):
                        c.message, c.line = self.group_exc, self.group_exc
                if tag == "fail":
                    self._consider(rec.data["failure"], rec, out)
                elif (
                    self.group_has_cand
                    and self.cand is not None
                    and self.cand.kind == "exception"
                    and self.fmt.comm_backend_mention(rec.msg)
                ):
                    # The exception's own traceback says NCCL (or Gloo/HCCL): that is the root cause.
                    self._consider(self.fmt.comm_failure, rec, out)
                return
        if tag in ("traceback_start", "frame") or (kind == ERROR and rec.msg.rstrip().endswith(":")):
            # A frame with no traceback open: the text starts inside one (an excerpt, a cut log).
            self.group_open = True
            self.group_has_cand = False
            self.group_exc = None
            self.group_last = rec.msg.strip()
            self.group_hint, self.group_draft = (
                self.fmt.frame_phase(rec.msg) if tag == "frame" else (None, False)
            )

        st = self.st
        if rec.ts_text:
            ts = self._ts(rec)
        else:
            # Foreign lines (uvicorn, tqdm) carry no time: the last record timestamp is the best bound.
            ts = self.last_ts
            rec.ts_text = self.last_ts_text
        if rec.prefixed:
            if (
                rec.ranks
                and rec.rank_actor
                and rec.ranks not in st.ranks
                and tag not in ("decode", "prefill")
            ):
                st.ranks.add(rec.ranks)
                self.rank_num[rec.ranks] = rec.tp
            if not self.prefix_checked:
                self.prefix_checked = True
                self._version_from_prefix(rec)

        if tag == "server_args":
            if self.activity and (
                st.status in (READY, FAILED, STOPPED) or any(p != "launch" for p in st.phases)
            ):
                self._new_launch(out)
                st = self.st
                self._version_from_prefix(rec)
            self._on_server_args(rec, ts, out)
            return
        if tag == "dist_begin" and st.status in (READY, FAILED, STOPPED):
            self._new_launch(out)
            st = self.st
            self._version_from_prefix(rec)
            st.launches += 1
            out.append(self._detected({}, {}))

        if tag == "spec":
            self._on_spec(rec, out)
            return
        if kind == DECODE:
            self._on_decode(rec, out)
            return
        if kind == PREFILL:
            self._on_prefill(rec, ts, out)
            return
        if "NCCL INFO" in rec.msg[:SCAN_LIMIT] and self.nccl.add(rec.msg[:SCAN_LIMIT]):
            return
        if self.server_ctx and (rec.prefixed or kind == PROGRESS):
            # the line is the evidence of a note from a plain message (a warning); a phase line's notes
            # (capture sizes, the loader of a bar) need no copy of it: the phase itself shows it
            line = "" if tag else rec.msg
            for topic, key, value in self.fmt.notes(rec):
                self._note(topic, key, value, line, rec.ts_text, out)

        # A launch starts with the first line that is the server's (a record prefix or a known kind),
        # not with any text at all: a file of something else stays "unknown".
        server_like = self.server_ctx and (bool(rec.ts_text) or kind != OTHER)
        lifecycle = kind == HTTP and rec.prefixed and tag not in ("access", "access_generate")
        if not self.activity and server_like and (kind != HTTP or lifecycle) and tag != "fail":
            self.activity = True
            if st.launches == 0:
                st.launches = 1
            self._start("launch", None, ts, rec.ts_text, out)
        elif (
            self.activity
            and "launch" in st.phases
            and st.phases["launch"].start_ts is None
            and ts is not None
        ):
            info = st.phases["launch"]
            info.start_ts, info.start_text = ts, rec.ts_text

        if kind == "phase" or tag.startswith("bar_"):
            if not self.server_ctx:
                return
            c = self.cand
            if c is not None and c.tag == "bare_traceback" and self.emitted_prio < 0:
                self.cand = None  # the startup went on after that traceback: it was not fatal
            self._version_marks(rec.msg)
            self._on_phase(rec, tag, ts, out)
        elif tag == "fail":
            self._version_marks(rec.msg)
            if not self.activity:
                self.activity = True
                if st.launches == 0:
                    st.launches = 1
            self._consider(rec.data["failure"], rec, out)
        elif kind == HTTP:
            self._on_http(rec, tag, ts, out)
        elif (
            rec.prefixed
            and self.cand is not None
            and self.cand.tag == "bare_traceback"
            and "retry" in rec.msg
        ):
            self.cand = None  # "retry() failed once … Will delay 0.96s and retry": recovered
        elif any(m in rec.msg for m in self.fmt.stop_marks):
            self._stop(rec.msg.strip(), out)

    def _version_from_prefix(self, rec: Rec) -> None:
        self.fmt.version_from_prefix(rec, self.ver)

    def _version_marks(self, msg: str) -> None:
        self.fmt.version_marks(msg, self.ver)

    def _on_server_args(self, rec: Rec, ts: float | None, out: list[ev.Event]) -> None:
        st = self.st
        self._version_marks(rec.msg)
        facts = self.fmt.parse_server_args(rec.data.get("raw", ""))
        args = _bounded_args(facts.raw)
        st.args = args
        st.facts = facts.facts()
        if facts.tp:
            self.launch_tp = facts.tp
        if facts.version:
            self.ver.exact = facts.version
        st.launches += 1
        self.activity = True
        out.append(self._detected(args, st.facts))
        self.ver_noted = self.ver.label()  # the LaunchDetected says it; a note only when it sharpens
        self._start("launch", None, ts, rec.ts_text, out)
        for topic, key, value in self.fmt.notes_from_args(facts):
            self._note(topic, key, value, "", rec.ts_text, out)

    #: Distinct notes kept per launch (a log that repeats a warning forever adds nothing after this).
    MAX_NOTES = 4096

    def _note(self, topic: str, key: str, value: Any, line: str, tt: str, out: list[ev.Event]) -> None:
        """One :class:`~eagletui.core.events.LaunchNote` per distinct fact and launch."""
        ident = (topic, key, repr(value))
        if ident in self.notes_seen or len(self.notes_seen) >= self.MAX_NOTES:
            return
        self.notes_seen.add(ident)
        out.append(
            ev.LaunchNote(
                topic=topic, key=key, value=value, line=line.strip()[:240], log_time=tt, launch=self.st.launch
            )
        )

    def _version_note(self, out: list[ev.Event]) -> None:
        """The version guess at ready and at the end, when it changed (the hints name its flags)."""
        label = self.ver.label()
        if label and label != self.ver_noted:
            self.ver_noted = label
            out.append(
                ev.LaunchNote(
                    topic="launch",
                    key="version",
                    value=label,
                    log_time=self.last_ts_text,
                    launch=self.st.launch,
                )
            )

    def _nccl_note(self, out: list[ev.Event]) -> None:
        """What the launch's ``NCCL INFO`` lines said, once they said something new (at ready and at the end)."""
        if self.nccl.summary.seen:
            self._note("nccl", "summary", self.nccl.summary.to_json(), "", self.last_ts_text, out)

    def _bar_note(self, topic: str, phase: str, rec: Rec, out: list[ev.Event]) -> None:
        """A progress bar's last frame with the elapsed time it shows (tqdm's ``[mm:ss<``): the weight
        load's read rate and its tail rest on it (the frames before are the phase's progress)."""
        d = rec.data
        if not d.get("total") or d.get("done") != d.get("total") or phase == "load_draft":
            return  # the target's last frame is the one that times its load
        value = {
            "phase": phase,
            "done": d.get("done"),
            "total": d.get("total"),
            "elapsed": bar_elapsed(rec.msg[:SCAN_LIMIT]),
            "label": d.get("label", ""),
        }
        ident = (topic, "bar", f"{phase}:{value['done']}/{value['total']}")
        if ident in self.notes_seen or len(self.notes_seen) >= self.MAX_NOTES:
            return
        self.notes_seen.add(ident)
        out.append(
            ev.LaunchNote(
                topic=topic,
                key="bar",
                value=value,
                line="",
                log_time=self.last_ts_text,
                launch=self.st.launch,
            )
        )

    def _detected(self, args: dict[str, Any], facts: dict[str, Any]) -> ev.LaunchDetected:
        return ev.LaunchDetected(
            args=args, facts=facts, version=self.ver.label(), launch=self.st.launch, server=self.fmt.name
        )

    def _on_phase(self, rec: Rec, tag: str, ts: float | None, out: list[ev.Event]) -> None:
        st = self.st
        r: str | None = rec.ranks if rec.rank_actor else None  # None: a global line (not a rank's)
        rk = "" if r is None else r  # the key of per-rank counters
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
        elif tag == "compile_begin":
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
            ci = st.phases.get("compile")
            if ci is not None and not ci.finished and ts is not None and r is not None and r in ci.done:
                # the profiling run after the compile belongs to it (a server may log only its end)
                ci.rank_end[r] = ts
                if ci.end_ts is None or ts >= ci.end_ts:
                    ci.end_ts, ci.end_text = ts, tt
        elif tag == "kv_alloc":
            kv = st.phases.get("kv_cache")
            if kv is not None and kv.finished:
                return
            self._start("kv_cache", r, ts, tt, out)
            self._after_loads(ts)
        elif tag == "pool_end":
            kv = st.phases.get("kv_cache")
            if kv is not None and kv.finished:
                return
            if kv is None or r not in kv.started:
                self._start("kv_cache", r, ts, tt, out)
                self._after_loads(ts)
            self._rank_done("kv_cache", r, ts, tt, out)
        elif tag == "capture_begin":
            name = _capture_phase(rec.data)
            info = self._phase(name)
            if info.finished:
                return
            info.open[rk] = info.open.get(rk, 0) + 1
            self._start(name, r, ts, tt, out)
            if rec.tp in (0, None):
                self.bar_capture_phase = name
        elif tag == "capture_end":
            name = _capture_phase(rec.data)
            info = self._phase(name)
            if info.finished:
                return
            n = info.open.get(rk, 0) - 1
            info.open[rk] = max(0, n)
            if n <= 0:
                self._rank_done(name, r, ts, tt, out)
        elif tag == "bar_shards":
            name = self.bar_load_phase or "load_target"
            d = rec.data
            self._progress(name, d["done"], d["total"], "shards", d["label"], out)
            self._bar_note("load", name, rec, out)
        elif tag == "bar_capture":
            d = rec.data
            # A bar that names its graph starts that phase itself (for servers that print no begin line).
            named = "what" in d or "draft" in d
            name = _capture_phase(d) if named else self.bar_capture_phase or "capture_target"
            if "elapsed" in d:
                self._phase(name).bar_elapsed = d["elapsed"]
            self._progress(name, d["done"], d["total"], "bs", d["label"], out)
        elif tag in ("summary", "timings"):
            self._close_startup(ts, tt, out)
            secs = rec.data.get("phase_seconds") if tag == "timings" else None
            if isinstance(secs, dict):
                self._server_durations(secs)
        elif tag == "ready":
            self._on_ready(ts, tt, out)

    def _after_loads(self, ts: float | None) -> None:
        """The KV pool's allocation began where the weights finished loading: its only lines (``KV Cache
        is allocated``, ``Memory pool end``) are printed when it is over. So its clock starts at the
        last load phase's end before this line; its texts stay its own first and last line's."""
        kv = self.st.phases.get("kv_cache")
        if kv is None or ts is None:
            return
        ends = [
            info.end_ts
            for name in ("load_target", "load_draft")
            if (info := self.st.phases.get(name)) is not None
            and info.end_ts is not None
            and info.end_ts <= ts
        ]
        if ends and (kv.start_ts is None or max(ends) < kv.start_ts):
            kv.start_ts = max(ends)

    def _start_warmup(self, ts: float | None, tt: str, out: list[ev.Event]) -> None:
        st = self.st
        if "warmup" in st.phases or st.status in (READY, FAILED, STOPPED):
            return
        self._close_startup(ts, tt, out)
        self._start("warmup", None, ts, tt, out)

    def _on_http(self, rec: Rec, tag: str, ts: float | None, out: list[ev.Event]) -> None:
        st = self.st
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

    def _serving_seen(self, rec: Rec, out: list[ev.Event]) -> None:
        """Decode/Prefill lines without a ready line: the log starts mid-serving."""
        st = self.st
        if st.status in (READY, FAILED, STOPPED):
            return
        if st.launches == 0:
            st.launches = 1
        self.activity = True
        self._on_ready(None, rec.ts_text, out)

    def note_eager(self, running: int, out: list[Any]) -> None:
        """A decode step at ``running`` requests ran without a CUDA graph: one note per batch size (the
        recording and the exports keep the evidence without keeping every stats line)."""
        self._note("capture", "eager", {"running": running}, "", self.last_ts_text, out)

    def _on_decode(self, rec: Rec, out: list[ev.Event]) -> None:
        st = self.st
        if st.status != READY:
            self._serving_seen(rec, out)
        if not self.decode_version_checked:
            self.decode_version_checked = True
            self._decode_version(rec.msg)
        if rec.data:
            self.add_decode(rec.data, out)
            if rec.data.get("cuda_graph") is False:
                self.note_eager(int(rec.data.get("running_req") or 0), out)

    def _on_spec(self, rec: Rec, out: list[ev.Event]) -> None:
        """A speculative-decoding report; the format's reader may have paired it with the stats line
        of the same interval (``data["decode"]``)."""
        st = self.st
        if st.status != READY:
            self._serving_seen(rec, out)
        d = rec.data
        if d.get("decode"):
            self.add_decode(d["decode"], out)
        spec = d.get("spec")
        if spec:
            out.append(ev.SpecDecodeStats(launch=st.launch, **spec))

    def _decode_version(self, msg: str) -> None:
        self.fmt.decode_version(msg, self.ver)

    def add_decode(self, d: dict[str, Any], out: list[ev.Event]) -> None:
        st = self.st
        e = ev.DecodeStats(launch=st.launch, **d)
        st.decode_count += 1
        st.decode_history.append(e)
        out.append(e)

    def add_decode_rows(self, rows: DecodeRows, out: list[Any]) -> None:
        """A run of Decode lines folded in bulk (``LogInterpreter.feed_bulk``).

        ``decode_count`` stays exact; ``decode_history`` only receives the run's last line.
        """
        st = self.st
        st.decode_count += rows.count
        st.decode_history.append(rows.last)
        out.append(rows)

    def _on_prefill(self, rec: Rec, ts: float | None, out: list[ev.Event]) -> None:
        st = self.st
        if st.status != READY:
            started = any(p != "launch" for p in st.phases)
            if started and st.status == LOADING:
                self._start_warmup(ts, rec.ts_text, out)
            else:
                self._serving_seen(rec, out)
        if rec.data:
            out.append(ev.PrefillStats(launch=st.launch, **rec.data))

    def finish(self, out: list[ev.Event]) -> None:
        """End of input: close an open traceback group and report a pending failure."""
        if self.held and not self.server_ctx and not self.prose:
            # Nothing but error lines and no prose around them: an excerpt of a log (the part someone
            # pasted), so its failure lines count.
            self._set_ctx(out)
        st = self.st
        if (
            self.group_open
            and self.group_exc is None
            and not self.group_has_cand
            and self.server_ctx
            and self.activity
            and st.status == LOADING
            and self.emitted_prio < 0
            and (self.cand is None or self.cand.prio < 50)
        ):
            # The log ends inside a traceback during startup: the process is dying (or died before
            # its last lines were flushed). An exception, with the last line seen as the key line.
            last = self.group_last or "Traceback (most recent call last):"
            self.cand = Candidate(
                "exception", 50, "exception", "log ends inside a traceback: " + last, last, st.phase
            )
        self._close_group(out)
        self._nccl_note(out)
        self._version_note(out)
        if self.emitted_prio < 0 and self.cand is not None:
            c = self.cand
            if not (
                self.st.status == READY and c.prio < 50 and c.tag not in ("leaked_semaphore", "child_failed")
            ):
                self._emit_failure(out)
        # Phases whose every rank reported done are complete even if nothing followed them.
        for name, info in self.st.phases.items():
            if (
                not info.finished
                and info.started
                and info.started <= info.done
                and not any(info.open.values())
            ):
                self._finish(name, None, "", out)

    def version_label(self) -> str | None:
        return self.ver.label()


#: The server's own args carried by a LaunchDetected (and so recorded once per launch, beside the log line
#: itself) keep at most about this many characters of their repr, in the server's order (a 0.5.23 args
#: dict runs to 17k characters). The launch facts and notes are read from the whole line.
ARGS_RECORD_CHARS = 8192


def _bounded_args(args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    used = 0
    for k, v in args.items():
        used += len(k) + len(repr(v)) + 4
        if used > ARGS_RECORD_CHARS:
            break
        out[k] = v
    return out


def _capture_phase(data: dict[str, Any]) -> str:
    """The phase of a ``Capture … CUDA graph`` line: every draft graph is ``capture_draft``; the
    target's prefill graph (0.5.16+, and the piecewise graph of 0.5.10–0.5.13) is ``capture_prefill``;
    the target's decode/verify graph is ``capture_target``."""
    if data.get("draft"):
        return "capture_draft"
    if data.get("what") in ("prefill", "piecewise"):
        return "capture_prefill"
    return "capture_target"


__all__ = ["PhaseMachine", "MachineState", "PhaseInfo", "DecodeRows", "Candidate", "READY", "LOADING"]
