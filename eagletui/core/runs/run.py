"""One run: a launch, its benchmark results by setting, and the values they are read as.

The data of :mod:`eagletui.core.runs.book` (which folds events into these and compares them), apart so
each stays a readable size; importers take these names from here.

A run's results are grouped by **setting** (:class:`Group`: the benchmark's concurrency and workload
fingerprint); a metric is always over the repeats of one setting, never across concurrencies. Each
result carries why it cannot count (:mod:`eagletui.core.runs.validity`), and only those that can are
``good_results``.

Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from eagletui.core.cycle.model import SpecSettings
from eagletui.core.events import BenchmarkResult
from eagletui.core.logs.registry import get_format
from eagletui.core.profile.model import normalize_flag
from eagletui.core.profile.slo import Slo
from eagletui.core.runs.latency import LatencyRecords, SloStats, slo_stats
from eagletui.core.runs.validity import result_problems as judge_result
from eagletui.core.servers import spec as specflags
from eagletui.core.servers.kinds import ServerKind, kind_or_default
from eagletui.core.stats.noise import Band
from eagletui.core.stats.sample import mean_stdev, stat


@dataclass(frozen=True)
class Metric:
    """A metric over a run's repeats: mean, sample stdev (None for one sample) and count."""

    mean: float | None
    stdev: float | None = None
    n: int = 0

    def text(self, digits: int = 1) -> str:
        if self.mean is None:
            return "—"
        if self.stdev is not None:
            return f"{self.mean:.{digits}f} ± {self.stdev:.{digits}f}"
        return f"{self.mean:.{digits}f}"


@dataclass(frozen=True)
class Delta:
    """Relative change vs the baseline; ``flagged`` only when the change is outside ``band``."""

    pct: float | None
    flagged: bool = False
    better: bool | None = None
    band: Band | None = None


class RunOutcome(StrEnum):
    """How a launch ended up (exports and the runs table say the same)."""

    RUNNING = "running"
    READY = "ready"
    FAILED = "failed"
    STOPPED = "stopped"


class RunVerdict(StrEnum):
    """A run judged against the profile's thresholds; ``INVALID``: its results cannot count (or not
    against the run it is compared with); ``UNJUDGED``: nothing failed, but the comparison the verdict
    needs is not like for like (a spec run whose only no-spec run differs in more than speculation), so
    it is not a pass either; ``NONE`` when there is nothing to judge."""

    PASS = "pass"
    FAIL = "fail"
    INVALID = "invalid"
    UNJUDGED = "unjudged"
    NONE = "—"


@dataclass
class Group:
    """The valid results of one setting of one run: same concurrency and workload fingerprint."""

    concurrency: int
    fingerprint: str
    results: list[BenchmarkResult]

    def matches(self, other: Group) -> bool:
        """Same setting: equal concurrency, and equal fingerprints where both are known."""
        if self.concurrency != other.concurrency:
            return False
        return not self.fingerprint or not other.fingerprint or self.fingerprint == other.fingerprint

    def metric(self, name: str) -> Metric:
        rs = self.results
        values: list[float | None]
        if name == "tok_s":
            values = [r.output_throughput for r in rs]
        elif name == "tok_s_per_request":
            values = [r.output_throughput / self.concurrency for r in rs]
        elif name == "accept_len":
            values = [r.accept_length for r in rs]
        elif name == "ttft_ms":
            values = [stat(r.stats, "ttft_ms", "median") for r in rs]
        elif name == "step_ms":
            values = [r.step_ms for r in rs]
        else:
            raise KeyError(name)
        m, s, n = mean_stdev(values)
        return Metric(m, s, n)

    def histogram(self) -> list[int]:
        """``spec_correct_drafts_histogram`` summed over the group's results (verifies with k correct)."""
        out: list[int] = []
        for r in self.results:
            h = (r.accept or {}).get("histogram") if isinstance(r.accept, dict) else None
            if not isinstance(h, list):
                continue
            for k, c in enumerate(h):
                if isinstance(c, int) and not isinstance(c, bool) and c >= 0:
                    while len(out) <= k:
                        out.append(0)
                    out[k] += c
        return out


@dataclass
class Run:
    """One launch and the benchmarks run against it: the one run model that the runs table, the
    exports (CSV/Markdown) and the headless bench all read, folded once by :class:`RunBook`."""

    launch: int
    target: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    #: the server's own args line (``LaunchDetected``), as logged in the server's own names
    detected_args: dict[str, Any] = field(default_factory=dict)
    #: the same launch in eagletui's words (``LaunchFacts``: model, tp, spec_algorithm, …)
    detected_facts: dict[str, Any] = field(default_factory=dict)
    diff: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    failure: str | None = None
    failure_kind: str | None = None
    failure_phase: str | None = None
    outcome: RunOutcome = RunOutcome.RUNNING
    results: list[BenchmarkResult] = field(default_factory=list)
    #: why each result cannot count (parallel to ``results``; empty: it counts)
    problems: list[tuple[str, ...]] = field(default_factory=list)
    started_wall: float | None = None
    started_mono: float | None = None
    #: a Slurm launch: its job, and how long it waited in the queue before the launch (and its clock)
    #: started; the wait is no launch time
    job_id: str = ""
    queued_s: float | None = None
    job_started: bool = False
    ready_after: float | None = None  # seconds from launch to ready (monotonic clock)
    phase_starts: dict[str, float] = field(default_factory=dict, repr=False)  # phase → mono
    #: bench number → the workload's concurrency (``BenchmarkStarted.workload``), for per-request tok/s
    bench_concurrency: dict[int, int] = field(default_factory=dict)
    #: bench number → the workload as its start described it (num_prompts, max_new_tokens, …)
    bench_workload: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)
    #: benchmarks started and not finished: what happened to the server or the link meanwhile
    open_benches: dict[int, list[str]] = field(default_factory=dict, repr=False)
    #: bench number → its finished requests' latencies, bounded (:mod:`eagletui.core.runs.latency`)
    latency: dict[int, LatencyRecords] = field(default_factory=dict, repr=False)
    #: bench number → the accept lengths the server's decode log lines printed while it ran
    log_accepts: dict[int, list[float]] = field(default_factory=dict, repr=False)
    #: bench number → the server's decode lines while it ran: (#running-req, gen tok/s, clean), clean when
    #: no prefill ran since the decode line before it (:mod:`eagletui.core.runs.steady`)
    decode_log: dict[int, list[tuple[int, float, bool]]] = field(default_factory=dict, repr=False)
    #: the server's log reports its prefills (SGLang's ``Prefill batch`` lines): a decode line can be
    #: known clean only then
    prefill_lines: bool = False
    #: a prefill, or nothing yet, since this launch's last decode line (the next one is not clean)
    prefill_since_decode: bool = field(default=True, repr=False)
    #: running batch sizes that decoded without a CUDA graph (``cuda graph: False``, the launch's notes)
    eager_running: set[int] = field(default_factory=set, repr=False)
    #: the target's decode CUDA-graph batch sizes the log said it captured
    graph_sizes: set[int] = field(default_factory=set, repr=False)
    #: the launch's CUDA-graph settings as its log read them (``max_bs``, ``bs``, ``disabled``)
    graph_config: dict[str, Any] = field(default_factory=dict, repr=False)
    #: the last step profile captured against this launch (``ProfileCaptured.summary``)
    step_profile: dict[str, Any] | None = None
    #: eagletui started this process (``LaunchStarted``): its start is known, not only its first line
    launched: bool = False
    #: found running (a reattach): its start is the host's record; its log's past is timed by the log only
    found_running: bool = False
    #: seconds from the process start to its first log line (imports; not in the log), launched runs only
    before_first_line: float | None = None
    #: where the startup's seconds went by the log's clock (``ServerReady.gaps``: ``{"gaps": [...]}``)
    startup: dict[str, Any] | None = None

    @property
    def in_no_phase(self) -> float | None:
        """Startup seconds no phase accounts for (the gaps between phases, by the log's clock)."""
        if self.startup is None:
            return None
        return round(sum(g["seconds"] for g in self.startup.get("gaps") or []), 3)

    @property
    def ready(self) -> bool:
        return self.outcome == RunOutcome.READY

    @property
    def args(self) -> dict[str, Any]:
        """Server flags, spelled ``--flag``: the launch's config, then what the server said it got."""
        cfg = self.config.get("args") if isinstance(self.config, dict) else None
        out = {normalize_flag(k, strict=False): v for k, v in (cfg or {}).items()}
        for k, v in self.detected_args.items():
            out.setdefault(normalize_flag(k, strict=False), v)
        return out

    @property
    def env(self) -> dict[str, Any]:
        return dict(self.config.get("env") or {}) if isinstance(self.config, dict) else {}

    @property
    def server(self) -> str:
        """The server kind of the launch (its profile's, else the log format that read it)."""
        return str(self.config.get("server") or "") if isinstance(self.config, dict) else ""

    @property
    def kind(self) -> ServerKind:
        """The launch's :class:`~eagletui.core.servers.kinds.ServerKind` (the default one when unknown)."""
        return kind_or_default(self.server)

    @property
    def facts(self) -> dict[str, Any]:
        """What the server's launch line said in eagletui's words (from its own args when the event
        carried no facts: a recording made before they existed, a run built by hand)."""
        if self.detected_facts or not self.detected_args:
            return self.detected_facts
        try:
            fmt = get_format(self.server or None)
        except KeyError:
            fmt = get_format()
        return fmt.facts_from_args(self.detected_args).facts()

    @property
    def model(self) -> str:
        return str(self.config.get("model") or "") or str(self.facts.get("model") or "")

    @property
    def tp(self) -> Any:
        tp = self.config.get("tp")
        return tp if tp is not None else self.facts.get("tp")

    @property
    def phase_total_s(self) -> float | None:
        return math.fsum(self.phases.values()) if self.phases else None

    def result_problems(self) -> list[tuple[BenchmarkResult, tuple[str, ...]]]:
        """Each result with why it cannot count (a result added without the fold is judged here)."""
        out = []
        for i, r in enumerate(self.results):
            if i < len(self.problems):
                out.append((r, self.problems[i]))
            else:
                out.append((r, tuple(judge_result(r, spec=self.is_spec))))
        return out

    @property
    def good_results(self) -> list[BenchmarkResult]:
        """Results that count: they measured something and passed the validity gate."""
        return [r for r, p in self.result_problems() if not p]

    @property
    def invalid_reasons(self) -> list[str]:
        """Why the run's results cannot count, when none can (empty while one does, or none exist)."""
        if not self.results or self.good_results:
            return []
        return list(self.result_problems()[-1][1])

    def excluded(self) -> list[str]:
        """One line per result left out of the numbers while others count."""
        if not self.good_results:
            return []
        return [f"benchmark {r.bench} left out: {'; '.join(p)}" for r, p in self.result_problems() if p]

    @property
    def is_spec(self) -> bool:
        """Whether the launch speculates: its profile's flags as its server kind reads them (the one
        definition, :mod:`eagletui.core.servers.spec`), else what the server's launch line said."""
        args = self.config.get("args", {}) if isinstance(self.config, dict) else {}
        if args:
            return specflags.speculates(
                {normalize_flag(k, strict=False): v for k, v in args.items()}, self.kind
            )
        return bool(self.facts.get("spec_algorithm"))

    @property
    def spec_settings(self) -> SpecSettings | None:
        return SpecSettings.from_args(self.args) if self.is_spec else None

    def concurrency_of(self, result: BenchmarkResult) -> int:
        """The concurrency a result was measured at (1 when the workload did not say)."""
        c = self.bench_concurrency.get(result.bench)
        return c if isinstance(c, int) and c > 0 else 1

    def rate_of(self, group: Group) -> float | None:
        """The group's request rate (its workload's ``request_rate``: Poisson arrivals, a max-rate
        search's step), None for a closed loop of ``concurrency`` streams."""
        wl = self.bench_workload.get(group.results[0].bench, {}) if group.results else {}
        r: Any = wl.get("request_rate")
        ok = isinstance(r, int | float) and not isinstance(r, bool) and math.isfinite(r) and r > 0
        return float(r) if ok else None

    def groups(self) -> list[Group]:
        """The valid results by setting, in the order the settings were first measured."""
        return self.group(self.good_results)

    def group(self, results: Iterable[BenchmarkResult]) -> list[Group]:
        """``results`` of this run by setting (concurrency, workload), in the order first measured."""
        out: list[Group] = []
        for r in results:
            conc, fp = self.concurrency_of(r), r.workload_fingerprint or ""
            for g in out:
                if g.concurrency == conc and g.fingerprint == fp:
                    g.results.append(r)
                    break
            else:
                out.append(Group(conc, fp, [r]))
        return out

    def headline(self) -> Group | None:
        """The setting the row shows: the one of the last valid result."""
        good = self.good_results
        if not good:
            return None
        last = good[-1]
        return next(g for g in self.groups() if last in g.results)

    def group_like(self, other: Group) -> Group | None:
        """This run's results of the same setting as ``other`` (None: it never measured it)."""
        return next((g for g in reversed(self.groups()) if g.matches(other)), None)

    def slo_stats(self, group: Group, slo: Slo | None) -> SloStats:
        """``group``'s requests under ``slo``, each result with this run's records of it."""
        return slo_stats(((r, self.latency.get(r.bench)) for r in group.results), slo)

    def by_concurrency(self) -> dict[int, list[BenchmarkResult]]:
        out: dict[int, list[BenchmarkResult]] = {}
        for g in self.groups():
            out.setdefault(g.concurrency, []).extend(g.results)
        return out

    @property
    def fingerprint(self) -> str:
        g = self.headline()
        return g.fingerprint if g is not None else ""

    def metric(self, name: str, group: Group | None = None) -> Metric:
        """``name`` over the repeats of one setting (the headline one when not given)."""
        g = group or self.headline()
        return g.metric(name) if g is not None else Metric(None)
