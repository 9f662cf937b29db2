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

from eagletui.core import events as ev
from eagletui.core.host.nccl import NcclFold
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
from eagletui.core.phases.launch_notes import LaunchNotes
from eagletui.core.phases.model import (
    FAILED,
    LOADING,
    READY,
    STOPPED,
    UNKNOWN,
    Candidate,
    MachineState,
)
from eagletui.core.phases.native_crash import CrashSite
from eagletui.core.phases.phase_lines import PhaseLines
from eagletui.core.phases.serving import ServingFold

#: Section titles of argparse's --help text (after a usage banner that was no error).
_HELP_SECTIONS = frozenset({"options:", "optional arguments:", "positional arguments:"})


class PhaseMachine(PhaseLines, FailureFold, LaunchNotes, ServingFold):
    """The fold. :meth:`on_record` and :meth:`finish` return the events the record caused.

    Its rules live in mixins, one module each: :class:`~.phase_lines.PhaseLines` (the phase lines, on
    :class:`~.timeline.Timeline`'s per-rank bookkeeping), :class:`~.failures.FailureFold` (failure
    candidates, traceback groups, server context), :class:`~.launch_notes.LaunchNotes` (the args line,
    the version, the notes) and :class:`~.serving.ServingFold` (the serving stats); here the state they
    share, the per-record dispatch and the end of input.
    """

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
        self.headline = False  # the last record was a failure header whose traceback follows
        self.group_server = False  # the open traceback has a frame in the server's own code
        self.capture_at: str | None = None  # the CUDA-graph capture stage the last traceback's frames name
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
        # An access line may backdate the launch phase's start (see _fold); stay on the slow path.
        http = not (self.activity and launch is not None and launch.start_ts is None)
        return pre, pre and self.decode_version_checked, http

    def _new_launch(self, out: list[ev.Event]) -> None:
        self._close_group(out)
        self._nccl_note(out)
        self._reset_timeline(self.st.launch + 1)

    def _relaunch(self, rec: Rec, out: list[ev.Event]) -> None:
        """Dist init after the launch ended: the server was started again (no args line came first)."""
        self._new_launch(out)
        self._version_from_prefix(rec)
        self.st.launches += 1
        out.append(self._detected({}, {}))

    # ------------------------------------------------------------------ main entry

    def on_record(self, rec: Rec, out: list[ev.Event]) -> None:
        """Fold one record (the events it caused go to ``out``): what is no log text of the server's
        (prose, a README's markdown) stops here, lines inside a traceback join its group, and the
        rest goes to :meth:`_fold`."""
        if not self.fmt.classifies_failures:
            self._table_failure(rec)
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
        if not self.server_ctx and self._seek_context(rec, out):
            return
        # --- traceback grouping: unprefixed lines after an error record belong to it (and prefixed
        # ones the format marks as its continuation).
        if (rec.prefixed and not rec.cont) or kind in (HTTP, PROGRESS):
            self._close_group(out)
        elif self.group_open and kind in (OTHER, WARNING, ERROR, TRACEBACK):
            self._group_line(rec, out)
            return
        headline, self.headline = self.headline, False
        if tag in ("traceback_start", "frame", "exc_line") or (kind == ERROR and rec.msg.rstrip().endswith(":")):
            self._open_group(rec, headline)
        self._fold(rec, tag, kind, out)

    def _table_failure(self, rec: Rec) -> None:
        """A format whose classify leaves failures to its table (the base class's promise): an
        untagged line the table matches is a failure record."""
        if not rec.tag and rec.kind in (OTHER, ERROR, WARNING, TRACEBACK):
            fm = self.fmt.match_failure(rec.msg[:SCAN_LIMIT])
            if fm is not None:
                rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": fm}

    def _on_prefix(self, rec: Rec, tag: str) -> None:
        """A record's prefix: the rank it names (a rank of this launch), the version its shape shows."""
        st = self.st
        if rec.ranks and rec.rank_actor and rec.ranks not in st.ranks and tag not in ("decode", "prefill"):
            st.ranks.add(rec.ranks)
            self.rank_num[rec.ranks] = rec.tp
        if not self.prefix_checked:
            self.prefix_checked = True
            self._version_from_prefix(rec)

    def _fold(self, rec: Rec, tag: str, kind: str, out: list[ev.Event]) -> None:
        """A record of the server's log: the clock and the ranks, a new launch, then the rule for its
        kind and tag (serving stats, phase lines, failures, HTTP lifecycle, stop marks)."""
        st = self.st
        if rec.ts_text:
            ts = self._ts(rec)
        else:
            # Foreign lines (uvicorn, tqdm) carry no time: the last record timestamp is the best bound.
            ts = self.last_ts
            rec.ts_text = self.last_ts_text
        if rec.prefixed:
            self._on_prefix(rec, tag)

        if tag == "server_args":
            self._on_server_args(rec, ts, out)
            return
        if tag == "dist_begin" and st.status in (READY, FAILED, STOPPED):
            self._relaunch(rec, out)
            st = self.st

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
        elif self.activity and ts is not None:
            info = st.phases.get("launch")
            if info is not None and info.start_ts is None:
                info.start_ts, info.start_text = ts, rec.ts_text

        if kind == "phase" or tag.startswith("bar_"):
            self._on_phase(rec, tag, ts, out)
        elif tag == "fail":
            self._on_failure_line(rec, out)
        elif tag == "usage":
            self._on_usage(rec)
        elif self.cand is not None and self.cand.tag == "usage" and rec.msg.strip() in _HELP_SECTIONS:
            self.cand = None  # the usage was the head of --help's text, not of an error
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
            and (
                (self.activity and st.status == LOADING)
                or (st.status == UNKNOWN and self.group_server)
            )
            and self.emitted_prio < 0
            and (self.cand is None or self.cand.prio < 40)
        ):
            # The log ends inside a traceback during startup (or the text is only a traceback through
            # the server's own code, the excerpt someone posted): the process is dying, or died before
            # its last lines were flushed. An exception, with the last line seen as the key line.
            last = self.group_last or "Traceback (most recent call last):"
            self.cand = Candidate(
                "exception", 50, "exception", "log ends inside a traceback: " + last, last, st.phase
            )
            self.group_has_cand = True  # its frames say the phase
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
