"""What a launch says about itself, as the phase machine reads it: its args line (which opens a launch),
its version and its notes (one :class:`~eagletui.core.events.LaunchNote` per distinct fact: a
warning's, the NCCL summary, a progress bar's last frame).

A mixin of :class:`~eagletui.core.phases.machine.PhaseMachine`, apart from the per-record dispatch and
the phase bookkeeping because, past the args line, it decides no phase and no failure: it reports what
the format read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eagletui.core import events as ev
from eagletui.core.host.nccl import NcclFold
from eagletui.core.logs.formats.progress import bar_elapsed
from eagletui.core.logs.seam import SCAN_LIMIT, Rec, VersionGuess
from eagletui.core.phases.model import FAILED, READY, STOPPED, MachineState

if TYPE_CHECKING:
    from eagletui.core.logs.seam import LogFormat


class LaunchNotes:
    """The launch's args, version guess and notes (see the module docstring)."""

    st: MachineState
    fmt: LogFormat
    ver: VersionGuess
    activity: bool
    launch_tp: int | None
    last_ts_text: str
    notes_seen: set[tuple[str, str, str]]
    nccl: NcclFold
    ver_noted: str | None

    if TYPE_CHECKING:
        # Timeline's
        def _start(
            self, name: str, rank: str | None, ts: float | None, ts_text: str, out: list[ev.Event]
        ) -> None: ...

        # PhaseMachine's
        def _new_launch(self, out: list[ev.Event]) -> None: ...

    def _version_from_prefix(self, rec: Rec) -> None:
        self.fmt.version_from_prefix(rec, self.ver)

    def _version_marks(self, msg: str) -> None:
        self.fmt.version_marks(msg, self.ver)

    def _decode_version(self, msg: str) -> None:
        self.fmt.decode_version(msg, self.ver)

    def _on_server_args(self, rec: Rec, ts: float | None, out: list[ev.Event]) -> None:
        """The launch's args line: a new launch when the log already showed one, then its facts."""
        if self.activity and (
            self.st.status in (READY, FAILED, STOPPED) or any(p != "launch" for p in self.st.phases)
        ):
            self._new_launch(out)
            self._version_from_prefix(rec)
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

    #: Notes that state a change over time (adaptive speculation's active tier): the same change again
    #: later is news, so they are distinct per log second; they stop this far short of MAX_NOTES, so a
    #: tier that flaps all day cannot crowd out the launch's other notes.
    TIMED_NOTES = frozenset({("adaptive", "update"), ("adaptive", "switch")})
    TIMED_RESERVE = 512

    def _note(self, topic: str, key: str, value: Any, line: str, tt: str, out: list[ev.Event]) -> None:
        """One :class:`~eagletui.core.events.LaunchNote` per distinct fact and launch (per log second for
        :data:`TIMED_NOTES`)."""
        timed = (topic, key) in self.TIMED_NOTES
        ident = (topic, key, f"{tt}|{value!r}" if timed else repr(value))
        limit = self.MAX_NOTES - (self.TIMED_RESERVE if timed else 0)
        if ident in self.notes_seen or len(self.notes_seen) >= limit:
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
