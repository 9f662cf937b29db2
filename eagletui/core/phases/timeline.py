"""Phase bookkeeping of the phase machine: per-rank starts and ends, "the log moved on", progress bars.

A mixin of :class:`~eagletui.core.phases.machine.PhaseMachine` (it uses the machine's ``st``, ``fmt`` and
clock fields); split out so each module stays readable.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from eagletui.core import events as ev
from eagletui.core.logs.seam import Rec
from eagletui.core.phases.model import _PER_RANK, LOADING, PHASE_INDEX, UNKNOWN, MachineState, PhaseInfo

if TYPE_CHECKING:
    from eagletui.core.logs.seam import LogFormat


_SUBSECOND = re.compile(r"\d[.,]\d{1,6}$")


class Timeline:
    """Phase starts/ends per rank and the machine's clock (see the module docstring)."""

    st: MachineState
    fmt: LogFormat
    last_ts: float | None
    last_ts_text: str
    day_offset: float
    launch_tp: int | None
    last_progress: tuple[str, int, int, str] | None
    rank_num: dict[str, int | None]
    server_phases: dict[str, float]

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

    def _rank_int(self, key: str | None) -> int | None:
        """The rank number of a rank key, as the format parsed it ("" is the only rank: 0)."""
        if key is None:
            return None
        if key == "":
            return 0
        return self.rank_num.get(key)

    def _world(self, info: PhaseInfo) -> int:
        n = len(self.st.ranks | info.started)
        if self.launch_tp:
            n = max(n, self.launch_tp)
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
        self._settle(exclude=name, out=out, ts=ts, ts_text=ts_text)

    def _rank_done(
        self, name: str, rank: str | None, ts: float | None, ts_text: str, out: list[ev.Event]
    ) -> None:
        info = self.st.phases.get(name)
        if info is None or info.finished:
            if info is None:
                self._start(name, rank, ts, ts_text, out)
                info = self.st.phases[name]
            else:
                return
        if rank is None:
            # A global end line (not a rank's): the phase is over for everyone.
            self._finish(name, ts, ts_text, out)
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

    def _settle(
        self, exclude: str | None, out: list[ev.Event], ts: float | None = None, ts_text: str = ""
    ) -> None:
        """Finish phases whose started ranks are all done, now that another phase's line arrived
        (at ``ts``: the end of a phase that only a progress bar showed)."""
        for name, info in self.st.phases.items():
            if name == exclude or info.finished or name in ("warmup", "ready"):
                continue
            if info.bar and not info.started:
                if info.progress_total and info.progress_done >= info.progress_total:
                    self._finish(name, ts, ts_text, out)
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
        if info.bar and not info.started and info.bar_elapsed is not None:
            info.seconds = round(info.bar_elapsed, 3)  # only the bar saw it: its clock is the best
        elif info.start_ts is not None and info.end_ts is not None:
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

    def _server_durations(self, seconds: dict[str, float]) -> None:
        """The server's own measure of finished phases (its startup-timings line, ``phase_seconds``). A phase
        takes it where the log's span is shorter by more than the timestamps' resolution (a second for
        whole-second stamps, 50 ms for millisecond ones): a span can miss time spent before a
        phase's first line (a KV pool whose only line is printed when allocation ends) but not invent
        time. The phase's start moves back to match (not before an earlier phase ended), so
        :meth:`_account` sees no gap before it; the corrections travel in the ready event."""
        for name, secs in seconds.items():
            info = self.st.phases.get(name)
            if info is None or not info.finished or not isinstance(secs, (int, float)) or secs != secs:
                continue
            secs = round(min(max(float(secs), 0.0), 1e7), 3)
            # the log's resolution: a whole-second span is the true length ± 1 s; milliseconds: ± 50 ms
            resolution = 0.05 if _SUBSECOND.search(info.end_text or "") else 1.0
            if info.seconds is not None and info.seconds + resolution > secs:
                continue
            info.seconds = secs
            info.source = "server"
            self.server_phases[name] = secs
            if info.end_ts is not None:
                idx = PHASE_INDEX.get(name, 99)
                before = [
                    p.end_ts
                    for n, p in self.st.phases.items()
                    if PHASE_INDEX.get(n, 99) < idx and p.end_ts is not None and p.end_ts <= info.end_ts
                ]
                start = max([info.end_ts - secs, *before])
                if info.start_ts is None or start < info.start_ts:
                    info.start_ts = start

    def _account(self, ready_ts: float | None) -> tuple[tuple[int, int, float], ...]:
        """At ready: every stretch between the first server line and ready that no phase covers and
        that is longer than the timestamps' resolution, as (after, before, seconds): its neighbours'
        indices in :data:`~eagletui.core.events.PHASES` (compact: it is in every recording)."""
        launch = self.st.phases.get("launch")
        if launch is None or launch.start_ts is None or ready_ts is None:
            return ()
        t0, t1 = launch.start_ts, ready_ts
        spans = sorted(
            (max(i.start_ts, t0), PHASE_INDEX.get(name, 99), min(i.end_ts, t1), name)
            for name, i in self.st.phases.items()
            if name != "ready" and i.start_ts is not None and i.end_ts is not None and i.end_ts >= i.start_ts
        )
        least = 0.05 if _SUBSECOND.search(launch.start_text or "") else 1.0
        gaps: list[tuple[int, int, float]] = []
        cursor, last = t0, "launch"
        for start, _order, end, name in spans:
            if start - cursor >= least:
                gaps.append((PHASE_INDEX[last], PHASE_INDEX.get(name, 99), round(start - cursor, 3)))
            if end >= cursor:
                cursor, last = max(cursor, end), name
        if t1 - cursor >= least:
            gaps.append((PHASE_INDEX[last], PHASE_INDEX["ready"], round(t1 - cursor, 3)))
        return tuple(gaps)

    def _progress(self, name: str, done: int, total: int, unit: str, label: str, out: list[ev.Event]) -> None:
        key = (name, done, total, label)
        if key == self.last_progress:
            return
        self.last_progress = key
        info = self._phase(name)
        if not (info.finished or info.started or info.start_ts is not None or info.start_text or info.bar):
            # The bar is the phase's first sign (some servers print no begin line): it starts now, at
            # the last time the log told (bars carry none of their own), once.
            info.bar = True
            self._start(name, None, self.last_ts, self.last_ts_text, out)
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
