"""The ``eagletui parse --json`` document, folded from events (contract: docs/parse-json.md).

Built from events rather than from interpreter internals so a recording replays to the same summary.
:class:`Summarizer` streams (a million-line log never holds its events in memory); :func:`summarize`
is the one-shot form. Only the last launch in the input is described; ``launches`` counts them.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

from eagletui.core import events as ev
from eagletui.core.diagnosis.fold import Diagnoser
from eagletui.core.phases.startup import startup_gaps

SCHEMA_VERSION = 4  # 4: the diagnosis list; 3: the compile phase, launch facts and server, the spec section


def _dist(values: array) -> dict[str, float] | None:
    if not values:
        return None
    s = sorted(values)
    n = len(s)
    mid = n // 2
    median = s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2.0
    p90 = s[min(n - 1, max(0, -(-9 * n // 10) - 1))]  # nearest-rank
    return {"median": round(median, 4), "p90": round(p90, 4), "max": round(s[-1], 4)}


class Summarizer:
    """Streaming fold of events into the parse JSON dict."""

    def __init__(self) -> None:
        self._launch: int | None = None
        self.launches = 0
        #: every launch's notes, phases and decode lines, for the ``diagnosis`` list (docs/diagnosis.md)
        self.diagnoser = Diagnoser()
        self._reset()

    def _reset(self) -> None:
        self.state = "unknown"
        self.phase: str | None = None
        self.phases: dict[str, dict[str, Any]] = {}
        self.failure: dict[str, Any] | None = None
        self.args: dict[str, Any] | None = None
        self.facts: dict[str, Any] = {}
        self.server: str | None = None
        self.version: str | None = None
        self.spec_count = 0
        self.spec_last: ev.SpecDecodeStats | None = None
        self.spec_acc = array("d")
        self.spec_drafted = 0
        self.spec_accepted = 0
        self.decode_count = 0
        self.last: ev.DecodeStats | None = None
        self.gen = array("d")
        self.acc = array("d")
        self.startup: dict[str, Any] | None = None

    def _touch(self, launch: int) -> None:
        if self._launch is None:
            self._launch = launch
            self.launches = 1
        elif launch != self._launch:
            self._launch = launch
            self.launches += 1
            self._reset()

    def add(self, events: Iterable[Any]) -> None:
        """Fold events (and :class:`~eagletui.core.phases.machine.DecodeRows` from ``feed_bulk``)."""
        diag = self.diagnoser.add_one
        for e in events:
            t = e.type
            if t == "log":
                continue
            diag(e)
            if t == "decode_stats":
                self._decode(e)
                continue
            if t == "decode_rows":  # LogInterpreter.feed_bulk: many Decode lines at once
                self._decode_rows(e)
                continue
            if t == "prefill_stats":
                continue
            if t == "spec_decode_stats":
                assert isinstance(e, ev.SpecDecodeStats)
                if e.launch != self._launch:
                    self._touch(e.launch)
                self._spec(e)
                continue
            if t == "spec_rows":  # LogInterpreter.feed_bulk: vLLM's metrics lines at once
                if e.launch != self._launch:
                    self._touch(e.launch)
                self.spec_count += e.count
                self.spec_last = e.last
                self.spec_acc.extend(e.acc)
                self.spec_drafted += e.drafted
                self.spec_accepted += e.accepted
                continue
            launch = getattr(e, "launch", None)
            if isinstance(launch, int):
                if t == "launch_detected" and self._launch is not None and launch == self._launch:
                    pass
                else:
                    self._touch(launch)
            if isinstance(e, ev.LaunchDetected):
                if e.args:
                    self.args = dict(e.args)
                if e.facts:
                    self.facts = dict(e.facts)
                if e.server:
                    self.server = e.server
                self.version = e.version
            elif isinstance(e, ev.PhaseStarted | ev.PhaseProgress | ev.PhaseFinished):
                self._phase_event(e)
            elif isinstance(e, ev.ServerReady | ev.ServerFailed | ev.ServerStopped):
                self._server_event(e)

    def _decode(self, e: ev.DecodeStats) -> None:
        assert isinstance(e, ev.DecodeStats)
        if e.launch != self._launch:
            self._touch(e.launch)
        self.decode_count += 1
        self.last = e
        self.gen.append(e.gen_throughput)
        if e.accept_len is not None:
            self.acc.append(e.accept_len)
        if self.state in ("unknown", "loading"):
            self.state = "ready"

    def _decode_rows(self, e: Any) -> None:
        if e.launch != self._launch:
            self._touch(e.launch)
        self.decode_count += e.count
        self.last = e.last
        self.gen.extend(e.gen)
        self.acc.extend(e.acc)
        if self.state in ("unknown", "loading"):
            self.state = "ready"

    def _phase_event(self, e: ev.PhaseStarted | ev.PhaseProgress | ev.PhaseFinished) -> None:
        """A phase's start, progress or end, into its entry of ``phases``."""
        if isinstance(e, ev.PhaseStarted):
            self.phase = e.phase
            if self.state == "unknown":
                self.state = "loading"
            p = self.phases.setdefault(e.phase, _new_phase(e.phase))
            p["start"] = e.log_time or None
            if e.phase == "ready":
                p["end"] = p["start"]
                p["seconds"] = 0.0 if p["start"] else None
        elif isinstance(e, ev.PhaseProgress):
            p = self.phases.setdefault(e.phase, _new_phase(e.phase))
            if e.total:
                p["done"], p["total"] = e.done, e.total
        else:
            p = self.phases.setdefault(e.phase, _new_phase(e.phase))
            p["end"] = e.log_time or None
            if e.start_log_time:
                # the phase's clock as it ended (a KV pool's starts where the phase before it ended)
                p["start"] = e.start_log_time
            p["seconds"] = e.seconds
            p["source"] = "log"
            p["spread"] = e.spread
            p["slowest_rank"] = e.slowest_rank
            if e.total:
                p["done"], p["total"] = e.done, e.total

    def _server_event(self, e: ev.ServerReady | ev.ServerFailed | ev.ServerStopped) -> None:
        """The server ready, failed or stopped: the state, the failure, the startup's gaps."""
        if isinstance(e, ev.ServerReady):
            for name, secs in (e.phase_fixes or {}).items():
                fixed = self.phases.get(name)
                if fixed is not None and isinstance(secs, int | float):
                    fixed["seconds"], fixed["source"] = secs, "server"
            gaps = startup_gaps(e.gaps)
            self.startup = {
                "gaps": gaps,
                "in_no_phase": round(float(sum(g["seconds"] for g in gaps)), 3),
                "before_first_line": None,  # not in the log: only a launcher knows the process start
            }
            if self.state != "failed":
                self.state = "ready"
        elif isinstance(e, ev.ServerFailed):
            self.state = "failed"
            self.failure = {
                "kind": e.kind,
                "message": e.message,
                "line": e.line,
                "hint": e.hint,
                "phase": e.phase,
            }
        elif self.state != "failed":
            self.state = "stopped"

    def _spec(self, e: ev.SpecDecodeStats) -> None:
        self.spec_count += 1
        self.spec_last = e
        if e.accept_len is not None:
            self.spec_acc.append(e.accept_len)
        # interval counts (vLLM V1) add up; V0 printed running totals, which the last one holds
        if e.drafted is not None and e.accepted is not None:
            if e.cumulative:
                self.spec_drafted, self.spec_accepted = e.drafted, e.accepted
            else:
                self.spec_drafted += e.drafted
                self.spec_accepted += e.accepted

    def set_version(self, version: str | None) -> None:
        """The interpreter's final version guess (it sharpens after the LaunchDetected event)."""
        if version:
            self.version = version

    def result(self) -> dict[str, Any]:
        last = None
        if self.last is not None:
            last = {
                "gen_throughput": self.last.gen_throughput,
                "accept_len": self.last.accept_len,
                "accept_rate": self.last.accept_rate,
                "running_req": self.last.running_req,
                "queue_req": self.last.queue_req,
            }
        order = {p: i for i, p in enumerate(ev.PHASES)}
        phases = sorted(self.phases.values(), key=lambda p: order.get(p["name"], 99))
        phase = self.phase
        if phase is None and self.state == "ready":
            phase = "ready"
        return {
            "schema": SCHEMA_VERSION,
            "state": self.state,
            "phase": phase,
            "phases": phases,
            "failure": self.failure,
            "decode": {
                "count": self.decode_count,
                "last": last,
                "gen_throughput": _dist(self.gen),
                "accept_len": _dist(self.acc),
            },
            "spec": self._spec_result(),
            "launch": None
            if self.args is None
            else {"version": self.version, "args": self.args, "facts": self.facts, "server": self.server},
            "launches": self.launches,
            "startup": self.startup,
            "diagnosis": self._diagnosis(),
        }

    def _diagnosis(self) -> list[dict[str, Any]]:
        if self._launch is None:
            return []
        o = self.diagnoser.launches.get(self._launch)
        if o is not None and self.version:
            o.version = self.version  # the final guess: at least as sharp as the one at the args line
        return [d.to_json() for d in self.diagnoser.diagnoses(self._launch)]

    def _spec_result(self) -> dict[str, Any] | None:
        """The speculative-decoding reports (vLLM): acceptance per report and the last one whole."""
        e = self.spec_last
        if e is None:
            return None
        return {
            "count": self.spec_count,
            "accept_len": _dist(self.spec_acc),
            "drafted": self.spec_drafted,
            "accepted": self.spec_accepted,
            "last": {
                "accept_len": e.accept_len,
                "accept_rate": e.accept_rate,
                "per_position": list(e.per_position),
                "steps": e.steps,
            },
        }


def _new_phase(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "start": None,
        "end": None,
        "seconds": None,
        "source": None,
        "done": None,
        "total": None,
        "spread": None,
        "slowest_rank": None,
    }


def summarize(events: Iterable[ev.Event], version: str | None = None) -> dict[str, Any]:
    s = Summarizer()
    s.add(events)
    s.set_version(version)
    return s.result()
