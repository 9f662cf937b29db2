"""Multi-rank fold from classified log records to typed events.

Eight scheduler processes log the same milestones in arbitrary interleaving, two SGLang generations
order the EAGLE phases differently (≤0.5.13: target load→pool→graphs, then the draft; ≥0.5.16: both
loads→pools→target graphs→draft graphs) and some milestones have no end line in old versions. The
machine therefore tracks each phase per rank and declares a phase finished only when every rank that
started it is done *and* the log has moved on (a different phase's line, or a global milestone such as
the ``max_total_num_tokens=`` summary). That keeps a phase with several begin/end pairs (prefill then
verify graphs) from flickering finished/started.

Server-neutral: it consumes :class:`~eagletui.core.logformat.Rec` records and switches on the tags of
:mod:`eagletui.core.logformat`; every server-specific rule (failure table, hints, version marks, draft
model classes) comes from its :class:`~eagletui.core.logformat.LogFormat`. Pure: returns events; no
I/O, no clock reads beyond the events' own default timestamps.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from eagletui.core import events as ev
from eagletui.core.logformat import (
    DECODE,
    ERROR,
    HTTP,
    OTHER,
    PREFILL,
    PROGRESS,
    TRACEBACK,
    WARNING,
    LogFormat,
    Rec,
    VersionGuess,
    get_format,
)

PHASE_INDEX = {p: i for i, p in enumerate(ev.PHASES)}

LOADING, READY, FAILED, STOPPED, UNKNOWN = "loading", "ready", "failed", "stopped", "unknown"

#: Decode events kept in :attr:`MachineState.decode_history`.
DECODE_HISTORY = 1024


@dataclass(slots=True)
class PhaseInfo:
    """One phase of the current timeline; per-rank sets are keyed by the prefix's rank text."""

    name: str
    start_ts: float | None = None
    start_text: str = ""
    end_ts: float | None = None
    end_text: str = ""
    finished: bool = False
    started: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)
    open: dict[str, int] = field(default_factory=dict)
    rank_start: dict[str, float] = field(default_factory=dict)
    rank_end: dict[str, float] = field(default_factory=dict)
    progress_done: int = 0
    progress_total: int = 0
    unit: str = ""
    label: str = ""
    seconds: float | None = None
    spread: float | None = None
    slowest_rank: int | None = None


@dataclass(slots=True)
class Candidate:
    kind: str
    prio: int
    tag: str
    message: str
    line: str
    phase: str | None


@dataclass
class MachineState:
    """Read-only view for callers (``LogInterpreter.state``); mutate only through the machine."""

    launch: int = 0
    status: str = UNKNOWN
    phase: str | None = None
    phases: dict[str, PhaseInfo] = field(default_factory=dict)
    failure: ev.ServerFailed | None = None
    stopped: ev.ServerStopped | None = None
    version: str | None = None
    args: dict[str, Any] | None = None
    launches: int = 0
    decode_count: int = 0
    decode_history: deque[ev.DecodeStats] = field(default_factory=lambda: deque(maxlen=DECODE_HISTORY))
    ranks: set[str] = field(default_factory=set)
    #: The HTTP address from uvicorn's ``Uvicorn running on …`` line ("" until seen).
    url: str = ""


class DecodeRows:
    """Several consecutive Decode lines in one item, for offline summaries only (not an Event).

    :meth:`LogInterpreter.feed_bulk` yields this instead of one :class:`~eagletui.core.events.DecodeStats`
    per line: ``gen``/``acc`` hold every line's gen throughput and (where printed) accept length in
    order, ``last`` is the full event of the last line. Never recorded or shown by the UI.
    """

    __slots__ = ("launch", "count", "gen", "acc", "last")
    type = "decode_rows"

    def __init__(self, launch: int, gen: array, acc: array, last: ev.DecodeStats) -> None:
        self.launch = launch
        self.count = len(gen)
        self.gen = gen
        self.acc = acc
        self.last = last


class PhaseMachine:
    """The fold. :meth:`on_record` and :meth:`finish` return the events the record caused."""

    def __init__(self, launch: int = 0, fmt: LogFormat | None = None) -> None:
        self.fmt = fmt if fmt is not None else get_format()
        self.st = MachineState(launch=launch)
        # Evidence that this is SGLang's output (see sglang_evidence), kept across launches; until
        # then failure lines are held back, so a README or a mail that mentions "NCCL error" reads
        # "unknown", not "failed".
        self.sglang_ctx = False
        self.prose = False  # markdown seen (a README, an issue body): never a log excerpt
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
        self.tp_size: int | None = None

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
        self._reset_timeline(self.st.launch + 1)

    # ------------------------------------------------------------------ helpers

    def _ts(self, rec: Rec) -> float | None:
        if not rec.ts_text:
            return None
        return self.ts_of(rec.ts_text, rec.has_date)

    def ts_of(self, ts_text: str, has_date: bool) -> float | None:
        """Seconds for a non-empty prefix timestamp; advances the machine's clock like a record would.

        Calling it again with the ``ts_text`` last accepted changes nothing (live fast path relies on it).
        """
        t = self.fmt.ts_seconds(ts_text)
        if t is None:
            return None
        if not has_date:
            # 0.3.x prints time of day only: carry midnight wraps forward.
            t += self.day_offset
            if self.last_ts is not None and t < self.last_ts - 43200:
                self.day_offset += 86400.0
                t += 86400.0
        self.last_ts = t
        self.last_ts_text = ts_text
        return t

    def _rank_int(self, key: str) -> int | None:
        i = key.find("TP")
        if i < 0:
            return 0 if key == "" else None
        j = i + 2
        while j < len(key) and key[j].isdigit():
            j += 1
        try:
            return int(key[i + 2 : j])
        except ValueError:
            return None

    def _world(self, info: PhaseInfo) -> int:
        n = len(self.st.ranks | info.started)
        if self.tp_size:
            n = max(n, self.tp_size)
        return n

    def _phase(self, name: str) -> PhaseInfo:
        info = self.st.phases.get(name)
        if info is None:
            info = PhaseInfo(name=name)
            self.st.phases[name] = info
        return info

    def _start(
        self, name: str, rank: str | None, ts: float | None, ts_text: str, out: list[ev.Event]
    ) -> None:
        info = self._phase(name)
        if info.finished:
            return
        first = not info.started and info.start_ts is None and not info.start_text
        if rank is not None:
            info.started.add(rank)
            info.done.discard(rank)
            if ts is not None and rank not in info.rank_start:
                info.rank_start[rank] = ts
        if first:
            info.start_ts, info.start_text = ts, ts_text
            self.st.phase = name
            if self.st.status == UNKNOWN:
                self.st.status = LOADING
            out.append(
                ev.PhaseStarted(
                    phase=name,
                    rank=None if rank is None else self._rank_int(rank),
                    launch=self.st.launch,
                    log_time=ts_text,
                )
            )
        elif info.start_ts is None and ts is not None:
            info.start_ts, info.start_text = ts, ts_text
        # A record for this phase: other phases waiting for "the log moved on" can close now.
        self._settle(exclude=name, out=out)

    def _rank_done(self, name: str, rank: str, ts: float | None, ts_text: str, out: list[ev.Event]) -> None:
        info = self.st.phases.get(name)
        if info is None or info.finished:
            if info is None:
                self._start(name, rank, ts, ts_text, out)
                info = self.st.phases[name]
            else:
                return
        info.started.add(rank)
        info.done.add(rank)
        if ts is not None:
            info.rank_end[rank] = ts
            if info.end_ts is None or ts >= info.end_ts:
                info.end_ts, info.end_text = ts, ts_text
        pending = sorted(info.started - info.done)
        slow = pending[-1] if pending else self._slowest(info)
        out.append(
            ev.PhaseProgress(
                phase=name,
                done=info.progress_done,
                total=info.progress_total,
                unit=info.unit,
                label=info.label,
                rank=self._rank_int(rank),
                ranks_done=len(info.done),
                ranks_total=max(len(info.started), self._world(info) if name in _PER_RANK else 1),
                slowest_rank=None if slow is None else self._rank_int(slow),
                launch=self.st.launch,
            )
        )

    def _slowest(self, info: PhaseInfo) -> str | None:
        if not info.rank_end:
            return None
        return max(info.rank_end, key=lambda r: (info.rank_end[r], r))

    def _settle(self, exclude: str | None, out: list[ev.Event]) -> None:
        """Finish phases whose started ranks are all done, now that another phase's line arrived."""
        for name, info in self.st.phases.items():
            if name == exclude or info.finished or name in ("warmup", "ready"):
                continue
            if info.started and info.started <= info.done and not any(info.open.values()):
                if name in _PER_RANK and len(info.done) < self._world(info) and name != "capture_draft":
                    # Some known rank has not reported this phase yet: it may still do so.
                    if not self._others_moved_on(name):
                        continue
                self._finish(name, None, "", out)

    def _others_moved_on(self, name: str) -> bool:
        idx = PHASE_INDEX[name]
        info = self.st.phases[name]
        for r in self.st.ranks - info.started:
            if not any(
                PHASE_INDEX[p] > idx and r in pi.started
                for p, pi in self.st.phases.items()
                if p in PHASE_INDEX
            ):
                return False
        return True

    def _finish(self, name: str, ts: float | None, ts_text: str, out: list[ev.Event]) -> None:
        info = self.st.phases.get(name)
        if info is None or info.finished:
            return
        if info.end_ts is None and ts is not None:
            info.end_ts, info.end_text = ts, ts_text
        elif info.end_ts is None and ts_text:
            info.end_text = ts_text
        info.finished = True
        if info.start_ts is not None and info.end_ts is not None:
            info.seconds = round(max(0.0, info.end_ts - info.start_ts), 3)
        if len(info.rank_end) > 1:
            ends = list(info.rank_end.values())
            info.spread = round(max(ends) - min(ends), 3)
        slow = self._slowest(info) if len(info.rank_end) > 1 else None
        info.slowest_rank = None if slow is None else self._rank_int(slow)
        out.append(
            ev.PhaseFinished(
                phase=name,
                seconds=info.seconds,
                launch=self.st.launch,
                log_time=info.end_text,
                start_log_time=info.start_text,
                spread=info.spread,
                slowest_rank=info.slowest_rank,
                done=info.progress_done,
                total=info.progress_total,
            )
        )

    def _close_startup(
        self, ts: float | None, ts_text: str, out: list[ev.Event], upto: str = "capture_draft"
    ) -> None:
        """A global milestone: every startup phase up to ``upto`` is over, end lines or not."""
        limit = PHASE_INDEX[upto]
        for name in list(self.st.phases):
            if PHASE_INDEX.get(name, 99) <= limit:
                self._finish(name, ts, ts_text, out)

    def _progress(self, name: str, done: int, total: int, unit: str, label: str, out: list[ev.Event]) -> None:
        key = (name, done, total, label)
        if key == self.last_progress:
            return
        self.last_progress = key
        info = self._phase(name)
        if not info.started and not info.finished and info.start_ts is None and not info.start_text:
            self._start(name, None, None, "", out)
        info.progress_done, info.progress_total, info.unit, info.label = done, total, unit, label
        out.append(
            ev.PhaseProgress(
                phase=name,
                done=done,
                total=total,
                unit=unit,
                label=label,
                rank=0,
                ranks_done=len(info.done),
                ranks_total=len(info.started) if name not in _PER_RANK else self._world(info),
                slowest_rank=None,
                launch=self.st.launch,
            )
        )

    # ------------------------------------------------------------------ failures

    def _consider(self, fm: tuple[str, int, str], rec: Rec, out: list[ev.Event]) -> None:
        kind, prio, tag = fm
        st = self.st
        if st.status == STOPPED and prio < 50:
            return
        if st.status == READY and tag == "leaked_semaphore" and st.stopped is not None:
            return
        if not self.sglang_ctx:
            if len(self.held) < 64:
                self.held.append((fm, rec))
            return
        msg = rec.msg.strip()
        if self.emitted_prio >= 0:
            # A reported cascade marker gives way to a root cause; a reported root cause gives way to
            # a more specific one only from its own traceback (siblings' NCCL noise is a consequence).
            same_group = self.group_open and self.group_has_cand and prio > self.emitted_prio
            if self.emitted_prio < 50 <= prio or same_group:
                self.cand = Candidate(kind, prio, tag, msg, rec.text.strip(), st.phase)
                self.group_has_cand = self.group_open
                if self.group_open:
                    self.emit_at_close = True  # once its traceback has told the phase and the exception
                else:
                    self._emit_failure(out)
            return
        if self.cand is None or prio > self.cand.prio:
            self.cand = Candidate(kind, prio, tag, msg, rec.text.strip(), st.phase)
            self.group_has_cand = self.group_open
        if tag in self.fmt.terminal_tags:
            self._emit_failure(out)

    def _set_ctx(self, out: list[ev.Event]) -> None:
        self.sglang_ctx = True
        held, self.held = self.held, []
        for fm, rec in held:
            self._consider(fm, rec, out)

    def _emit_failure(self, out: list[ev.Event]) -> None:
        c = self.cand
        if c is None:
            return
        fam = self.fmt.message_phase(c.message) or self.fmt.message_phase(c.line)
        if fam is not None:
            self._phase_from_frames(fam, self.group_draft, out)
        self.emitted_prio = c.prio
        st = self.st
        st.status = FAILED
        version = self.ver.label()
        fail = ev.ServerFailed(
            kind=c.kind,
            message=c.message[:2000],
            hint=self.fmt.hint_for(c.kind, c.tag, c.phase, version, c.line + " " + c.message),
            line=c.line[:4000],
            phase=c.phase,
            launch=st.launch,
        )
        st.failure = fail
        out.append(fail)

    def _close_group(self, out: list[ev.Event]) -> None:
        if not self.group_open:
            return
        self.group_open = False
        if self.group_hint and self.sglang_ctx and (self.group_has_cand or self.group_exc):
            self._phase_from_frames(self.group_hint, self.group_draft, out)
        self.group_hint, self.group_draft = None, False
        if (
            self.group_exc
            and self.sglang_ctx
            and not self.group_has_cand
            and self.st.status not in (READY, STOPPED)
        ):
            if self.emitted_prio < 0 and (self.cand is None or self.cand.prio < 50):
                self.cand = Candidate(
                    "exception", 50, "bare_traceback", self.group_exc, self.group_exc, self.st.phase
                )
        self.group_exc = None
        self.group_has_cand = False
        if self.emit_at_close:
            self.emit_at_close = False
            self._emit_failure(out)

    def _phase_from_frames(self, family: str, draft: bool, out: list[ev.Event]) -> None:
        """A failing traceback's frames say which startup phase it died in: start that phase if the
        log has not reached it (an excerpt, or a runner that prints no begin line)."""
        st = self.st
        if st.status not in (LOADING, UNKNOWN, FAILED) or "ready" in st.phases:
            return
        if family == "load":
            name = "load_draft" if draft else "load_target"
        elif family == "capture":
            name = "capture_draft" if draft else "capture_target"
        else:
            name = family
        if PHASE_INDEX[name] <= PHASE_INDEX.get(st.phase or "", -1):
            return
        self.activity = True
        if st.launches == 0:
            st.launches = 1
        self._start(name, None, self.last_ts, self.last_ts_text, out)
        if name.startswith("load"):
            self.bar_load_phase = name
        elif name.startswith("capture"):
            self.bar_capture_phase = name
        if self.cand is not None:
            self.cand.phase = name

    # ------------------------------------------------------------------ main entry

    def on_record(self, rec: Rec, out: list[ev.Event]) -> None:
        tag = rec.tag
        kind = rec.kind
        # tqdm bars and uvicorn lines are not SGLang's alone (vLLM prints the very same shard bar).
        if not self.sglang_ctx:
            if (
                rec.prefixed
                or self.fmt.evidence(rec.msg)
                or (tag == "fail" and rec.data["failure"][2] in self.fmt.own_tags)
            ):
                self._set_ctx(out)
            elif kind == OTHER and not self.prose:
                m = rec.msg.lstrip()
                self.prose = m.startswith(("```", "# ", "## ", "### ")) or m.count("`") >= 2
        # --- traceback grouping: unprefixed lines after an error record belong to it.
        if rec.prefixed or kind in (HTTP, PROGRESS):
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
            # Foreign lines (uvicorn, tqdm) carry no time: the last sglang timestamp is the best bound.
            ts = self.last_ts
            rec.ts_text = self.last_ts_text
        if rec.prefixed:
            if rec.ranks and rec.ranks not in st.ranks and tag not in ("decode", "prefill"):
                st.ranks.add(rec.ranks)
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
            out.append(ev.LaunchDetected(args={}, version=self.ver.label(), launch=st.launch))

        if kind == DECODE:
            self._on_decode(rec, out)
            return
        if kind == PREFILL:
            self._on_prefill(rec, ts, out)
            return

        # A launch starts with the first line that is SGLang's (a [time …] prefix or a known kind), not with
        # any text at all: a file of something else stays "unknown".
        sglang_like = self.sglang_ctx and (bool(rec.ts_text) or kind != OTHER)
        lifecycle = kind == HTTP and rec.prefixed and tag not in ("access", "access_generate")
        if not self.activity and sglang_like and (kind != HTTP or lifecycle) and tag != "fail":
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
            if not self.sglang_ctx:
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
        args = self.fmt.parse_server_args(rec.data.get("raw", ""))
        st.args = args
        tp = args.get("tp_size")
        if isinstance(tp, int) and tp > 0:
            self.tp_size = tp
        ver = args.get("version") if isinstance(args.get("version"), str) else None
        if ver:
            self.ver.exact = ver
        st.launches += 1
        self.activity = True
        out.append(ev.LaunchDetected(args=args, version=self.ver.label(), launch=st.launch))
        self._start("launch", None, ts, rec.ts_text, out)

    def _on_phase(self, rec: Rec, tag: str, ts: float | None, out: list[ev.Event]) -> None:
        st = self.st
        r = rec.ranks
        tt = rec.ts_text
        if tag == "dist_begin":
            if self.load_count.get(r):
                return  # ≤0.5.13 draft runner re-logs dist init before its weights
            self._finish("launch", ts, tt, out)
            self._start("dist_init", r, ts, tt, out)
        elif tag == "dist_end":
            if self.load_count.get(r):
                return
            self._rank_done("dist_init", r, ts, tt, out)
        elif tag == "load_begin":
            n = self.load_count.get(r, 0) + 1
            self.load_count[r] = n
            self._finish("launch", ts, tt, out)
            di = st.phases.get("dist_init")
            if n == 1 and di is not None and r in di.started and r not in di.done:
                self._rank_done("dist_init", r, ts, tt, out)
            name = "load_target" if n == 1 else "load_draft"
            self._start(name, r, ts, tt, out)
            if rec.tp in (0, None):
                self.bar_load_phase = name
        elif tag == "load_end":
            n = self.load_count.get(r, 1)
            name = "load_target" if n <= 1 else "load_draft"
            typ = rec.data.get("type", "")
            if n <= 1 and typ and any(d in typ for d in self.fmt.draft_types) and "load_target" in st.phases:
                name = "load_draft"
            self._rank_done(name, r, ts, tt, out)
        elif tag == "kv_alloc":
            kv = st.phases.get("kv_cache")
            if kv is not None and kv.finished:
                return
            self._start("kv_cache", r, ts, tt, out)
        elif tag == "pool_end":
            kv = st.phases.get("kv_cache")
            if kv is not None and kv.finished:
                return
            if kv is None or r not in kv.started:
                self._start("kv_cache", r, ts, tt, out)
            self._rank_done("kv_cache", r, ts, tt, out)
        elif tag == "capture_begin":
            name = _capture_phase(rec.data)
            info = self._phase(name)
            if info.finished:
                return
            info.open[r] = info.open.get(r, 0) + 1
            self._start(name, r, ts, tt, out)
            if rec.tp in (0, None):
                self.bar_capture_phase = name
        elif tag == "capture_end":
            name = _capture_phase(rec.data)
            info = self._phase(name)
            if info.finished:
                return
            n = info.open.get(r, 0) - 1
            info.open[r] = max(0, n)
            if n <= 0:
                self._rank_done(name, r, ts, tt, out)
        elif tag == "bar_shards":
            name = self.bar_load_phase or "load_target"
            d = rec.data
            self._progress(name, d["done"], d["total"], "shards", d["label"], out)
        elif tag == "bar_capture":
            name = self.bar_capture_phase or "capture_target"
            d = rec.data
            self._progress(name, d["done"], d["total"], "bs", d["label"], out)
        elif tag in ("summary", "timings"):
            self._close_startup(ts, tt, out)
        elif tag == "ready":
            self._on_ready(ts, tt, out)

    def _start_warmup(self, ts: float | None, tt: str, out: list[ev.Event]) -> None:
        st = self.st
        if "warmup" in st.phases or st.status in (READY, FAILED, STOPPED):
            return
        self._close_startup(ts, tt, out)
        self._start("warmup", None, ts, tt, out)

    def _on_http(self, rec: Rec, tag: str, ts: float | None, out: list[ev.Event]) -> None:
        st = self.st
        if tag in ("http_up", "http_startup", "access_generate", "access"):
            if st.status == LOADING and self.activity:
                self._start_warmup(ts, rec.ts_text, out)
            if tag == "http_up":
                st.url = rec.data.get("url", "")
        elif tag == "http_shutdown":
            self._stop(rec.msg.strip(), out)

    def _stop(self, reason: str, out: list[ev.Event]) -> None:
        st = self.st
        if st.status in (FAILED, STOPPED) or self.emitted_prio >= 0 or not self.sglang_ctx:
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
        out.append(ev.PhaseStarted(phase="ready", launch=st.launch, log_time=tt))
        out.append(ev.ServerReady(url=st.url, launch=st.launch))

    def _serving_seen(self, rec: Rec, out: list[ev.Event]) -> None:
        """Decode/Prefill lines without a ready line: the log starts mid-serving."""
        st = self.st
        if st.status in (READY, FAILED, STOPPED):
            return
        if st.launches == 0:
            st.launches = 1
        self.activity = True
        self._on_ready(None, rec.ts_text, out)

    def _on_decode(self, rec: Rec, out: list[ev.Event]) -> None:
        st = self.st
        if st.status != READY:
            self._serving_seen(rec, out)
        if not self.decode_version_checked:
            self.decode_version_checked = True
            self._decode_version(rec.msg)
        if rec.data:
            self.add_decode(rec.data, out)

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
        if self.held and not self.sglang_ctx and not self.prose:
            # Nothing but error lines and no prose around them: an excerpt of a log (the part someone
            # pasted), so its failure lines count.
            self._set_ctx(out)
        st = self.st
        if (
            self.group_open
            and self.group_exc is None
            and not self.group_has_cand
            and self.sglang_ctx
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


# Phases every rank goes through (their completion waits for all known ranks).
_PER_RANK = frozenset(
    {"dist_init", "load_target", "load_draft", "kv_cache", "capture_prefill", "capture_target"}
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


__all__ = ["PhaseMachine", "MachineState", "PhaseInfo", "DecodeRows"]
