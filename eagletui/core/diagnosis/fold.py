"""Why, in one line each, with the line or the measurement it came from.

A :class:`Diagnosis` says what a launch, a benchmark or a profile showed and why (``text``), what it rests
on (``evidence``: the log line, the measurement and its source) and what to do about it (``hint``, in the
running server's own flags, from :meth:`eagletui.core.logs.seam.LogFormat.advice`). :class:`Diagnoser`
folds events into one :class:`LaunchObs` per launch (what the log's notes, phases and decode lines, the
preflight's host facts, the benchmarks and the step profiles said) and the rule modules turn that into
diagnoses:

* :mod:`eagletui.core.diagnosis.launch` — where the launch's minutes went: weight-load read rate against the
  storage, the tail after the last shard, the page cache, CUDA-graph capture against the batches served;
* :mod:`eagletui.core.diagnosis.allreduce` — which path decode's all-reduce takes, and the alternatives;
* :mod:`eagletui.core.diagnosis.draft` — why the drafter misses (accept ≈ 1, past its context, by category and
  position, the prompt format);
* :mod:`eagletui.core.diagnosis.adaptive` — adaptive speculation's step count against the batch size.

Server-neutral: it reads events and the note vocabulary; server wording stays in the log format. Pure:
no I/O, no clock. ``docs/diagnosis.md`` lists every kind, its trigger and its source.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from eagletui.core import events as ev

#: What a diagnosis rests on (``source``).
SOURCES = ("log", "preflight", "benchmark", "profile", "model")


@dataclass(frozen=True)
class Diagnosis:
    """One finding. ``kind`` names the rule (docs/diagnosis.md), ``level`` is ``info`` or ``warn``."""

    kind: str
    text: str
    evidence: str
    hint: str = ""
    source: str = "log"
    level: str = "info"
    launch: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "level": self.level,
            "text": self.text,
            "evidence": self.evidence,
            "hint": self.hint,
            "source": self.source,
            "launch": self.launch,
            "data": {k: _plain(v) for k, v in self.data.items()},
        }

    def line(self) -> str:
        """``text (evidence) → hint`` for one line of text output."""
        out = self.text
        if self.evidence:
            out += f" [{self.evidence}]"
        if self.hint:
            out += f" → {self.hint}"
        return out


def _plain(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 4) if math.isfinite(v) else None
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


@dataclass
class Note:
    value: Any
    line: str = ""
    log_time: str = ""
    #: decode lines seen before this note (orders notes against serving)
    at_decode: int = 0


@dataclass
class PhaseObs:
    seconds: float | None = None
    start_text: str = ""
    end_text: str = ""
    done: int = 0
    total: int = 0


#: Decode samples kept per launch for the adaptive timeline (oldest dropped).
MAX_SAMPLES = 20000


@dataclass
class LaunchObs:
    """Everything one launch showed that a diagnosis may rest on."""

    launch: int
    server: str = ""
    version: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    #: the flags eagletui launched it with (LaunchStarted's profile args; empty for a log read alone)
    asked: dict[str, Any] = field(default_factory=dict)
    notes: dict[tuple[str, str], list[Note]] = field(default_factory=dict)
    phases: dict[str, PhaseObs] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)
    #: decode lines: how many, how many ran without a CUDA graph, the running batch sizes seen
    decode_lines: int = 0
    eager_lines: int = 0
    eager_running: Counter[int] = field(default_factory=Counter)
    running: Counter[int] = field(default_factory=Counter)
    max_running: int = 0
    #: Σ accept len × lines and the lines that printed one (the log's own acceptance)
    accept_sum: float = 0.0
    accept_lines: int = 0
    #: (decode index, running requests, gen tok/s, accept len) per decode line (or bulk run)
    samples: list[tuple[int, int, float, float | None]] = field(default_factory=list)
    benches: list[ev.BenchmarkResult] = field(default_factory=list)
    workloads: dict[int, dict[str, Any]] = field(default_factory=dict)
    profiles: list[dict[str, Any]] = field(default_factory=list)
    startup: dict[str, Any] = field(default_factory=dict)

    def note(self, topic: str, key: str) -> Note | None:
        """The last note of ``topic``/``key``, None when the log said none."""
        got = self.notes.get((topic, key))
        return got[-1] if got else None

    def note_list(self, topic: str, key: str) -> list[Note]:
        return self.notes.get((topic, key), [])

    @property
    def tp(self) -> int | None:
        tp = self.facts.get("tp")
        return tp if isinstance(tp, int) and tp > 0 else None

    @property
    def speculates(self) -> bool:
        algo = self.facts.get("spec_algorithm")
        return isinstance(algo, str) and algo.upper() not in ("", "NONE")


#: Events no diagnosis reads (the log lines themselves: their facts arrive as notes).
_IGNORED = frozenset({"log", "bench_sample", "gpu_stats", "notice", "connection", "prefill_stats", "spec_rows"})


class Diagnoser:
    """The fold: events (and ``DecodeRows`` of ``eagletui parse``) in, :class:`LaunchObs` per launch."""

    def __init__(self) -> None:
        self.launches: dict[int, LaunchObs] = {}
        self._host: dict[str, Any] = {}  # the preflight's facts, for the launch that follows
        self.current = 0
        self.revision = 0  # bumped by every event that changed an observation
        self._cache: dict[int, tuple[int, list[Diagnosis]]] = {}

    def obs(self, launch: int) -> LaunchObs:
        n = launch or self.current or 1
        o = self.launches.get(n)
        if o is None:
            o = LaunchObs(launch=n)
            if self._host:
                o.host = self._host
            self.launches[n] = o
            self.current = max(self.current, n)
        return o

    def add(self, events: Iterable[Any]) -> None:
        for e in events:
            self.add_one(e)

    def add_one(self, e: Any) -> None:
        t = e.type
        if t in _IGNORED:
            return
        self.revision += 1
        if t == "decode_stats":
            o = self.obs(e.launch)
            self._decode(o, e.running_req, e.gen_throughput, e.accept_len, e.cuda_graph, 1)
            return
        if t == "decode_rows":
            o = self.obs(e.launch)
            last = e.last
            gen = sum(e.gen) / len(e.gen) if len(e.gen) else last.gen_throughput
            acc = sum(e.acc) / len(e.acc) if len(e.acc) else last.accept_len
            self._decode(o, last.running_req, gen, acc, last.cuda_graph, e.count)
            for running in getattr(e, "eager", ()) or ():
                o.eager_lines += 1
                o.eager_running[int(running)] += 1
                o.max_running = max(o.max_running, int(running))
            return
        if t == "host_facts":
            self._host = dict(e.facts)
            return
        if t == "launch_started":
            o = self.obs(e.launch)
            self.current = e.launch
            env = (e.config or {}).get("env") if isinstance(e.config, dict) else None
            if isinstance(env, dict):
                o.env = {str(k): str(v) for k, v in env.items()}
            asked = (e.config or {}).get("args") if isinstance(e.config, dict) else None
            if isinstance(asked, dict):
                o.asked = dict(asked)
            if self._host:
                o.host = self._host
                self._host = {}
            return
        launch = getattr(e, "launch", None)
        if not isinstance(launch, int):
            return
        o = self.obs(launch)
        if t == "launch_detected":
            o.server = e.server or o.server
            o.version = e.version or o.version
            if e.facts:
                o.facts = dict(e.facts)
        elif t == "launch_note":
            if e.topic == "launch" and e.key == "version" and isinstance(e.value, str):
                o.version = e.value
                return
            key = (e.topic, e.key)
            lst = o.notes.setdefault(key, [])
            if len(lst) < 2000:
                lst.append(Note(e.value, e.line, e.log_time, o.decode_lines))
        elif t == "phase_started":
            p = o.phases.setdefault(e.phase, PhaseObs())
            p.start_text = p.start_text or e.log_time
        elif t == "phase_finished":
            p = o.phases.setdefault(e.phase, PhaseObs())
            p.seconds = e.seconds
            p.end_text = e.log_time
            p.start_text = p.start_text or e.start_log_time
            p.done, p.total = e.done, e.total
        elif t == "bench_started":
            if isinstance(e.workload, dict):
                o.workloads[e.bench] = dict(e.workload)
        elif t == "bench_result":
            if len(o.benches) < 200:
                o.benches.append(e)
        elif t == "profile_captured":
            if e.summary and len(o.profiles) < 50:
                o.profiles.append(dict(e.summary))
        elif t == "startup_accounted":
            o.startup = {"seconds": getattr(e, "seconds", None), "gaps": list(getattr(e, "gaps", ()) or ())}

    @staticmethod
    def _decode(
        o: LaunchObs, running: int, gen: float, accept: float | None, graph: bool | None, count: int
    ) -> None:
        o.decode_lines += count
        if isinstance(accept, int | float) and math.isfinite(accept) and accept > 0:
            o.accept_sum += accept * count
            o.accept_lines += count
        if running > 0:
            o.running[running] += count
            o.max_running = max(o.max_running, running)
        if graph is False and count == 1:
            o.eager_lines += 1
            o.eager_running[running] += 1
        if len(o.samples) < MAX_SAMPLES:
            o.samples.append((o.decode_lines, running, gen, accept))

    # ------------------------------------------------------------------ results

    def diagnoses(self, launch: int | None = None) -> list[Diagnosis]:
        """The diagnoses of ``launch`` (the latest when None), most important first."""
        n = launch if launch is not None else self.current
        o = self.launches.get(n)
        if o is None:
            return []
        hit = self._cache.get(n)
        if hit is not None and hit[0] == self.revision:
            return hit[1]
        got = diagnose(o)
        self._cache[n] = (self.revision, got)
        return got

    def all(self) -> dict[int, list[Diagnosis]]:
        return {n: diagnose(o) for n, o in sorted(self.launches.items())}


def diagnose(o: LaunchObs) -> list[Diagnosis]:
    """Every rule over one launch; warnings first, each rule's order kept."""
    from eagletui.core.diagnosis.adaptive import adaptive_diagnoses
    from eagletui.core.diagnosis.allreduce import allreduce_diagnoses
    from eagletui.core.diagnosis.draft import draft_diagnoses
    from eagletui.core.diagnosis.launch import launch_diagnoses

    fmt = _format(o.server)
    host_ver = as_dict(o.host.get("server")).get("version")
    if isinstance(host_ver, str) and host_ver:
        o.version = host_ver  # the host's own answer beats a guess from the log's wording
    out: list[Diagnosis] = []
    for rule in (launch_diagnoses, allreduce_diagnoses, draft_diagnoses, adaptive_diagnoses):
        try:
            out.extend(rule(o, fmt))
        except (ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError, IndexError):
            # a rule that cannot read what a hostile or old recording holds says nothing, never crashes
            continue
    out = [d if d.launch is not None else _with_launch(d, o.launch) for d in out]
    return sorted(out, key=lambda d: 0 if d.level == "warn" else 1)


def _with_launch(d: Diagnosis, launch: int) -> Diagnosis:
    from dataclasses import replace

    return replace(d, launch=launch)


class _NoFormat:
    """Advice of a server eagletui has no format for: none."""

    note_topics: frozenset[str] = frozenset()

    def advice(self, topic: str, version: str | None, ctx: dict[str, Any]) -> str:
        return ""


def _format(name: str) -> Any:
    from eagletui.core.logs.registry import get_format

    try:
        return get_format(name or None)
    except KeyError:
        return _NoFormat()


#: Kinds worth the line under the comparison without being warnings: they explain the numbers compared.
WHY_KINDS = ("prediction_check", "next_launch", "allreduce", "draft_positions", "draft_by_category", "adaptive_steps")


def why_line(
    diags: list[Diagnosis],
    *,
    launch: int | None = None,
    bench: int | None = None,
    newer: int | None = None,
    newer_failed: bool = False,
) -> str:
    """The one "why" line under the comparison: the first warning, else the first diagnosis that explains
    the compared numbers (a prediction, the all-reduce path, the drafter's fit); "" when there is none (a
    launch's load and capture times are in the run's details, not under the comparison).

    It names what it is about (``why for launch #3, benchmark 5: …``): after a relaunch the line still
    explains the last benchmarked launch until the new one is benchmarked, and ``newer`` (the launch
    started since) marks it stale (``…, stale until #4 is benchmarked: …``), so "NCCL over PCIe" is never
    read as a fact of the H200 launch; a newer launch that failed (``newer_failed``) will never be
    benchmarked, and the line says so instead of waiting for it. Plain words, no brackets around the name
    (issue 33 item 19)."""
    pick = [d for d in diags if d.level == "warn"] or [d for k in WHY_KINDS for d in diags if d.kind == k]
    if not pick:
        return ""
    d = pick[0]
    about = ""
    if launch is not None:
        about = f" for launch #{launch}" + (f", benchmark {bench}" if bench is not None else "")
        if newer is not None and newer != launch:
            about += (
                f", the last benchmarked: launch #{newer} failed before a benchmark"
                if newer_failed
                else f", stale until #{newer} is benchmarked"
            )
    out = f"why{about}: {d.text}"
    room = WHY_MAX + len(about)  # the name of the run is no part of the explanation's budget
    if d.hint:  # the first suggestion only, when it fits: the run's details hold the rest
        first = re.sub(r" \([^()]*\)$", "", d.hint.split("; ")[0])
        more = f" → {first}" + (" …" if first != d.hint else "")
        if len(out) + len(more) <= room:
            out += more
        else:
            out += " More in the Runs tab." if out.endswith(".") else ". More in the Runs tab."
    return out if len(out) <= room + 40 else out[: room + 39] + "…"


#: The why line stays short enough for two lines of the compare box (details hold the whole text).
WHY_MAX = 150


def as_dict(v: Any) -> dict[str, Any]:
    """``v`` when it is a dict, else {} (what a recording or a hostile host sends is not trusted)."""
    return v if isinstance(v, dict) else {}


def fmt_s(seconds: float | None) -> str:
    """``24:46`` for minutes, ``8.2 s`` below one."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    if seconds >= 60:
        m, s = divmod(int(round(seconds)), 60)
        return f"{m}:{s:02d}"
    return f"{seconds:.1f} s"


def fmt_bytes(n: float | None) -> str:
    if n is None or not math.isfinite(n):
        return "?"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"
