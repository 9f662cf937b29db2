"""The serving lines' fold of the phase machine: Decode, Prefill and speculative-decoding stats, the
decode history and the runs of Decode lines that ``feed_bulk`` folds in bulk.

A mixin of :class:`~eagletui.core.phases.machine.PhaseMachine`, apart from the startup's phases: once
the server serves, these are nearly all the records there are (and the interpreter's fast paths call
:meth:`ServingFold.add_decode`, :meth:`~ServingFold.add_decode_rows` and :meth:`~ServingFold.note_eager`
directly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eagletui.core import events as ev
from eagletui.core.logs.seam import Rec
from eagletui.core.phases.model import FAILED, LOADING, READY, STOPPED, DecodeRows, MachineState


class ServingFold:
    """Serving stats → events and the decode history (see the module docstring)."""

    st: MachineState
    activity: bool
    decode_version_checked: bool
    last_ts_text: str

    if TYPE_CHECKING:
        # PhaseLines'
        def _on_ready(self, ts: float | None, tt: str, out: list[ev.Event]) -> None: ...
        def _start_warmup(self, ts: float | None, tt: str, out: list[ev.Event]) -> None: ...

        # LaunchNotes'
        def _decode_version(self, msg: str) -> None: ...
        def _note(
            self, topic: str, key: str, value: Any, line: str, tt: str, out: list[ev.Event]
        ) -> None: ...

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
