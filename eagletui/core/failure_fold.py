"""Failure folding of the phase machine: candidates by priority, traceback groups, server context.

A crashing tp=8 server prints a cascade (root cause on one rank, SIGQUIT/kill lines from the parent,
NCCL noise from siblings); the most specific candidate wins, a report waits until the failing
traceback has been read, and failure lines count only once the text is known to be the server's.
A mixin of :class:`~eagletui.core.phase_machine.PhaseMachine`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eagletui.core import events as ev
from eagletui.core.logformat import Failure, Rec, VersionGuess
from eagletui.core.phase_model import (
    FAILED,
    LOADING,
    PHASE_INDEX,
    READY,
    STOPPED,
    UNKNOWN,
    Candidate,
    MachineState,
)

if TYPE_CHECKING:
    from eagletui.core.logformat import LogFormat


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
    held: list[tuple[Failure, Rec]]
    activity: bool
    last_ts: float | None
    last_ts_text: str
    bar_load_phase: str | None
    bar_capture_phase: str | None

    def _start(
        self, name: str, rank: str | None, ts: float | None, ts_text: str, out: list[ev.Event]
    ) -> None:
        raise NotImplementedError  # Timeline's

    # ------------------------------------------------------------------ failures

    def _consider(self, fm: tuple[str, int, str], rec: Rec, out: list[ev.Event]) -> None:
        kind, prio, tag = fm
        st = self.st
        if st.status == STOPPED and prio < 50:
            return
        if st.status == READY and tag == "leaked_semaphore" and st.stopped is not None:
            return
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
        if self.group_hint and self.server_ctx and (self.group_has_cand or self.group_exc):
            self._phase_from_frames(self.group_hint, self.group_draft, out)
        self.group_hint, self.group_draft = None, False
        if (
            self.group_exc
            and self.server_ctx
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
