"""Failure folding of the phase machine: candidates by priority, traceback groups, server context.

A crashing tp=8 server prints a cascade (root cause on one rank, SIGQUIT/kill lines from the parent,
NCCL noise from siblings); the most specific candidate wins, a report waits until the failing
traceback has been read, and failure lines count only once the text is known to be the server's.
A mixin of :class:`~eagletui.core.phases.machine.PhaseMachine`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from eagletui.core import events as ev
from eagletui.core.logs.seam import OTHER, TRACEBACK, Failure, Rec, VersionGuess
from eagletui.core.phases.model import (
    FAILED,
    LOADING,
    PHASE_INDEX,
    READY,
    STOPPED,
    UNKNOWN,
    Candidate,
    MachineState,
)
from eagletui.core.phases.native_crash import CrashSite, crash_kind

if TYPE_CHECKING:
    from eagletui.core.logs.seam import LogFormat

#: Backticks a program writes, not a person's markdown: CUDA's device-side assert quotes its condition
#: (``Indexing.cu:1500: indexSelectSmallIndex: block: [32,0,0], thread: [63,0,0] Assertion `srcIndex <
#: srcSelectDimSize` failed.``). Such a line in front of the server's records is no sign of prose.
_MACHINE_QUOTES_RE = re.compile(r"Assertion `[^`\n]{0,400}` failed")


# -- a death the log does not explain -------------------------------------------------------------
#
# The one place a process exit becomes a failure when no log line said why (a SIGKILL prints
# nothing). The live source asks it when the process watch finds the server dead; the session state
# and the run book ask it for recordings made before it existed, so the UI, the export and
# ``eagletui sessions`` agree that such a launch failed.

_SIGNAL_NAMES = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    6: "SIGABRT",
    9: "SIGKILL",
    11: "SIGSEGV",
    15: "SIGTERM",
}

OOM_KILLER_HINT = (
    "Nothing was logged: a SIGKILL from outside the server, usually the host OOM killer (host RAM, not "
    "GPU memory: check `dmesg -T | grep -i -e oom -e killed`) or a container/cgroup memory limit."
)


def exit_is_failure(code: int | None, signal: int | None, *, ready: bool) -> bool:
    """Whether an exit no log line explained means the launch failed: any signal, any exit status
    but 0, an exit with no status at all, and an exit 0 before the server was ready."""
    if signal is not None or code is None:
        return True
    return code != 0 or not ready


def exit_failure(
    code: int | None, signal: int | None, *, phase: str | None, ready: bool, launch: int
) -> ev.ServerFailed | None:
    """The triage of an exit no log line explained (``kind`` "died"), or None when it is no failure."""
    from eagletui.core.wording import phase_label

    if not exit_is_failure(code, signal, ready=ready):
        return None
    where = (
        "while ready"
        if ready or phase == "ready"
        else f"during {phase_label(phase)}"
        if phase
        else "before ready"
    )
    if signal is not None:
        name = _SIGNAL_NAMES.get(signal)
        message = f"killed by signal {signal}{f' ({name})' if name else ''} {where}"
        if signal == 9:
            hint = OOM_KILLER_HINT
        else:
            hint = (
                f"Nothing was logged: the server got {name or f'signal {signal}'} from outside (a user, a job "
                "scheduler, systemd) or crashed in native code; check who sent it, and dmesg."
            )
    elif code is None:
        message = f"the server process ended {where} and left no exit status"
        hint = (
            "The launcher that waits for the server is gone too (both killed at once, or the host "
            "rebooted): usually the host OOM killer; check `dmesg -T | grep -i -e oom -e killed`."
        )
    else:
        message = f"exited with code {code} {where}" + (
            " before it was ready" if code == 0 and not ready else ""
        )
        hint = "The server exited without an error line: read the last log lines and the launcher's output."
    return ev.ServerFailed(kind="died", message=message, hint=hint, phase=phase, launch=launch)


class FailureFold:
    """Failure candidates and traceback groups (see the module docstring)."""

    st: MachineState
    fmt: LogFormat
    ver: VersionGuess
    cand: Candidate | None
    emitted_prio: int
    group_open: bool
    group_has_cand: bool
    group_exc: str | None
    group_last: str
    group_hint: str | None
    group_draft: bool
    emit_at_close: bool
    server_ctx: bool
    prose: bool
    held: list[tuple[Failure, Rec]]
    activity: bool
    last_ts: float | None
    last_ts_text: str
    bar_load_phase: str | None
    bar_capture_phase: str | None
    crash: CrashSite | None
    headline: bool
    group_server: bool
    capture_at: str | None

    def _start(
        self, name: str, rank: str | None, ts: float | None, ts_text: str, out: list[ev.Event]
    ) -> None:
        raise NotImplementedError  # Timeline's

    if TYPE_CHECKING:
        # LaunchNotes'
        def _version_marks(self, msg: str) -> None: ...

    # ------------------------------------------------------------------ failures

    def process_exited(self, code: int | None, signal: int | None, out: list[ev.Event]) -> None:
        """The process watch found the server dead: a failure when the log explained nothing and it
        was not a clean shutdown (:func:`exit_failure`)."""
        st = self.st
        if st.status in (FAILED, STOPPED) or st.failure is not None:
            return
        fail = exit_failure(code, signal, phase=st.phase, ready=st.status == READY, launch=st.launch)
        if fail is None:
            return
        self.emitted_prio = max(self.emitted_prio, 0)
        st.status = FAILED
        st.failure = fail
        out.append(fail)

    def _on_failure_line(self, rec: Rec, out: list[ev.Event]) -> None:
        """A failure line outside a traceback group: the server is at work, and the line a candidate."""
        self.headline = rec.data["failure"][2] in self.fmt.headline_tags
        self._version_marks(rec.msg)
        if not self.activity:
            self.activity = True
            if self.st.launches == 0:
                self.st.launches = 1
        self._consider(rec.data["failure"], rec, out)

    def _on_usage(self, rec: Rec) -> None:
        """argparse's usage banner of the server's launcher: it precedes argparse's error line, so a
        text that ends after it (the error line cut off) failed on its arguments; --help's text
        after it withdraws that (see the machine's help sections)."""
        st = self.st
        if not self.server_ctx or st.status not in (UNKNOWN, LOADING) or self.cand is not None:
            return
        self.cand = Candidate(
            "bad_args",
            30,
            "usage",
            "the launcher printed its usage and stopped: it refused an argument (the error line after "
            "the usage is not in the text)",
            rec.text.strip(),
            st.phase,
        )

    def _consider(self, fm: tuple[str, int, str], rec: Rec, out: list[ev.Event]) -> None:
        kind, prio, tag = fm
        st = self.st
        if st.status == STOPPED and prio < 50:
            return
        if st.status == READY and tag == "leaked_semaphore" and st.stopped is not None:
            return
        if tag == "native_crash":
            what = crash_kind(rec.msg)
            if self.crash is None and what:
                self.crash = CrashSite(what, rec.msg)  # the lines after it say where
            elif self.crash is not None:
                self.crash.feed(rec.msg)
        if not self.server_ctx:
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

    def _seek_context(self, rec: Rec, out: list[ev.Event]) -> bool:
        """Before the text is known to be the server's: whether this record shows that it is (then the
        failure lines held back count), or that the text is prose (True: the record is no log text)."""
        # Progress bars and uvicorn lines are no one server's alone (several print the same shard bar).
        if (
            rec.prefixed
            or self.fmt.evidence(rec.msg)
            or (rec.actor != "" and self.fmt.own_actor(rec.actor))
            or (rec.tag == "fail" and rec.data["failure"][2] in self.fmt.own_tags)
        ):
            self._set_ctx(out)
        elif rec.kind == OTHER and not self.prose:
            m = rec.msg.lstrip()
            if m.startswith(("# ", "## ", "### ")) or _MACHINE_QUOTES_RE.sub("", m).count("`") >= 2:
                self.prose = True
                return True
        return False

    def _set_ctx(self, out: list[ev.Event]) -> None:
        self.server_ctx = True
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
        if c.tag == "native_crash" and self.crash is not None:
            c.message = self.crash.describe()
        st = self.st
        st.status = FAILED
        version = self.ver.label()
        hint = self.fmt.hint_for_launch(
            c.kind, c.tag, c.phase, version, c.line + " " + c.message, args=st.args, draft=c.draft
        )
        # the capture stage's remedy, unless the failure names its own cause (an adaptive tier that outgrew
        # the shared logits buffer: lowering the batch sizes does not help)
        if (
            self.capture_at is not None
            and (c.phase or "").startswith("capture")
            and c.kind in ("oom", "exception")
            and c.tag != "adaptive_buffer"
        ):
            hint = self.fmt.capture_hint(self.capture_at, c.kind, version) or hint
        # a native crash in NCCL's own code is an NCCL failure (the hint stays the native crash's, which
        # names NCCL); the kind is what a tuner filters on
        nccl_native = c.tag == "native_crash" and self.crash is not None and self.crash.in_nccl()
        fail = ev.ServerFailed(
            kind="nccl" if nccl_native else c.kind,
            message=c.message[:2000],
            hint=hint,
            line=c.line[:4000],
            phase=c.phase,
            launch=st.launch,
        )
        st.failure = fail
        out.append(fail)

    def _open_group(self, rec: Rec, headline: bool = False) -> None:
        """A traceback starts (or a frame or an exception line with no traceback open: the text starts
        inside one, an excerpt or a cut log): the lines after it belong to its group. After a failure
        header line of the format's (``headline``, ``LogFormat.headline_tags``) the traceback is the
        header's own."""
        self.group_open = True
        c = self.cand
        self.group_has_cand = headline and c is not None and c.tag in self.fmt.headline_tags
        self.group_exc = rec.msg.strip() if rec.tag == "exc_line" else None
        self.group_last = rec.msg.strip()
        self.group_server = rec.tag == "frame" and self.fmt.evidence(rec.msg)
        self.group_hint, self.group_draft = (
            self.fmt.frame_phase(rec.msg) if rec.tag == "frame" else (None, False)
        )
        self.capture_at = self.fmt.capture_stage(rec.msg, None) if rec.tag == "frame" else None

    def _group_line(self, rec: Rec, out: list[ev.Event]) -> None:
        """A line inside the open traceback group: its frames say the phase, its exception line the
        message, and a failure line in it is a candidate."""
        tag = rec.tag
        rec.kind = TRACEBACK
        last = rec.msg.strip()
        if last and last.strip("^~ "):  # not a blank line, nor Python 3.11's caret line under a frame
            self.group_last = last
        if tag == "frame":
            fam, draft = self.fmt.frame_phase(rec.msg)
            if fam is not None:
                self.group_hint = fam
            self.group_draft = self.group_draft or draft
            self.capture_at = self.fmt.capture_stage(rec.msg, self.capture_at)
            self.group_server = self.group_server or self.fmt.evidence(rec.msg)
        elif rec.msg[:1].isspace():
            # a frame's code line may build the runner whose own frames the excerpt lost
            self.capture_at = self.fmt.capture_stage(rec.msg, self.capture_at)
        if self.fmt.exception_line(rec.msg):
            self.group_exc = rec.msg.strip()
            c = self.cand
            if c is not None and self.group_has_cand and (self.emitted_prio < 0 or self.emit_at_close):
                c.message = self.group_exc
                if c.tag not in self.fmt.headline_tags:
                    c.line = self.group_exc
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

    def _close_group(self, out: list[ev.Event]) -> None:
        if not self.group_open:
            return
        self.group_open = False
        if self.group_hint and self.server_ctx and (self.group_has_cand or self.group_exc):
            self._phase_from_frames(self.group_hint, self.group_draft, out)
        draft = self.group_draft
        self.group_hint, self.group_draft = None, False
        if self.cand is not None and self.group_has_cand and draft:
            self.cand.draft = True
        if (
            self.group_exc
            and self.server_ctx
            and not self.group_has_cand
            and self.st.status not in (READY, STOPPED)
        ):
            if self.emitted_prio < 0 and (self.cand is None or self.cand.prio < 50):
                self.cand = Candidate(
                    "exception",
                    50,
                    "bare_traceback",
                    self.group_exc,
                    self.group_exc,
                    self.st.phase,
                    draft=draft,
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
