"""Runs: one launch (its config, phase timings, failure) plus the benchmarks run against it.

The run book answers the tuner's question "did this change help?" honestly: every run is compared
with a pinned baseline, a difference is only flagged when it is outside the run-to-run noise, runs on a
different workload are called out instead of compared silently, and obvious misconfigurations
(speculation that accepts ~1 token, a spec run slower than plain decoding) raise alarms.

Pure: folds events, no I/O, no UI, so a replayed recording rebuilds exactly the same table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from eagletui.core.compare import comparability
from eagletui.core.economics import Economics, crossover, economics
from eagletui.core.events import (
    BenchmarkResult,
    BenchmarkStarted,
    Event,
    LaunchDetected,
    LaunchStarted,
    PhaseFinished,
    PhaseStarted,
    ProcessExited,
    ProfileCaptured,
    ServerFailed,
    ServerReady,
    ServerStopped,
)
from eagletui.core.failure_fold import exit_failure
from eagletui.core.logformat import get_format
from eagletui.core.profile import Verdict, config_diff, format_diff, normalize_flag
from eagletui.core.servers import server_kind
from eagletui.core.stats import mean_stdev, stat
from eagletui.core.summary import startup_gaps
from eagletui.core.wording import describe_failure

#: The server flags people tune between runs, spelled as in profiles: each gets a column in the
#: exports, and all but the memory fraction key the phase-duration history (they change how long
#: loading and CUDA graph capture take; see :data:`eagletui.core.history.TIMING_FLAGS`).
KEY_FLAGS: tuple[str, ...] = (
    "--speculative-algorithm",
    "--speculative-draft-model-path",
    "--speculative-num-steps",
    "--speculative-eagle-topk",
    "--speculative-num-draft-tokens",
    "--cuda-graph-max-bs",
    "--disable-cuda-graph",
    "--mem-fraction-static",
)

#: Metrics compared across runs: name → higher is better.
METRICS: dict[str, bool] = {"tok_s": True, "accept_len": True, "ttft_ms": False}

#: Below this accept length speculation is (nearly) never accepting a draft token.
ACCEPT_ALARM = 1.2
#: With single samples, Δ smaller than this fraction is treated as noise: two benchmark runs of the same
#: config commonly differ by a percent or more, so a 1 % band called a −1.3 % repeat a regression.
SINGLE_SAMPLE_NOISE = 0.02
#: With repeats, Δ must exceed this many combined standard deviations.
NOISE_SIGMAS = 2.0


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
    """Relative change vs the baseline; ``flagged`` only when the change is outside the noise band."""

    pct: float | None
    flagged: bool = False
    better: bool | None = None


class RunOutcome(StrEnum):
    """How a launch ended up (exports and the runs table say the same)."""

    RUNNING = "running"
    READY = "ready"
    FAILED = "failed"
    STOPPED = "stopped"


class RunVerdict(StrEnum):
    """A run judged against the profile's thresholds; ``NONE`` when there is nothing to judge."""

    PASS = "pass"
    FAIL = "fail"
    NONE = "—"


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
    started_wall: float | None = None
    started_mono: float | None = None
    ready_after: float | None = None  # seconds from launch to ready (monotonic clock)
    phase_starts: dict[str, float] = field(default_factory=dict, repr=False)  # phase → mono
    #: bench number → the workload's concurrency (``BenchmarkStarted.workload``), for per-request tok/s
    bench_concurrency: dict[int, int] = field(default_factory=dict)
    #: the last step profile captured against this launch (``ProfileCaptured.summary``)
    step_profile: dict[str, Any] | None = None
    #: eagletui started this process (``LaunchStarted``): its start is known, not only its first line
    launched: bool = False
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

    @property
    def good_results(self) -> list[BenchmarkResult]:
        """Results that measured something; a wholly failed benchmark says nothing about speed."""
        return [r for r in self.results if r.requests > 0 and r.output_throughput > 0]

    @property
    def is_spec(self) -> bool:
        """Whether the launch speculates: its profile's flags as its server kind reads them, else what
        the server's launch line said."""
        args = self.config.get("args", {}) if isinstance(self.config, dict) else {}
        if args:
            try:
                kind = server_kind(self.server)
            except KeyError:
                kind = server_kind()
            return kind.is_spec({normalize_flag(k, strict=False): v for k, v in args.items()})
        return bool(self.facts.get("spec_algorithm"))

    def concurrency_of(self, result: BenchmarkResult) -> int:
        """The concurrency a result was measured at (1 when the workload did not say)."""
        c = self.bench_concurrency.get(result.bench)
        return c if isinstance(c, int) and c > 0 else 1

    def by_concurrency(self) -> dict[int, list[BenchmarkResult]]:
        out: dict[int, list[BenchmarkResult]] = {}
        for r in self.good_results:
            out.setdefault(self.concurrency_of(r), []).append(r)
        return out

    @property
    def fingerprint(self) -> str:
        fps = [r.workload_fingerprint for r in self.good_results if r.workload_fingerprint]
        return fps[-1] if fps else ""

    def metric(self, name: str) -> Metric:
        rs = self.good_results
        values: list[float | None]
        if name == "tok_s":
            values = [r.output_throughput for r in rs]
        elif name == "accept_len":
            values = [r.accept_length for r in rs]
        elif name == "ttft_ms":
            values = [stat(r.stats, "ttft_ms", "median") for r in rs]
        else:
            raise KeyError(name)
        m, s, n = mean_stdev(values)
        return Metric(m, s, n)


def launch_to_ready(started: float | None, ready: float, phase_seconds: Iterable[float]) -> float | None:
    """Seconds from launch to ready: the one definition the phase panel, the runs table and the
    export show. The gap between the launch and the ready event, or the phases' own durations when
    they add up to more (a reattached run's launch event is when eagletui attached, and the log's
    timestamps measure a phase better than when its lines were read)."""
    total = math.fsum(phase_seconds)
    if started is None:
        return total or None
    return max(ready - started, total)


@dataclass(frozen=True)
class RunRow:
    """Plain data for one table row (and JSON output)."""

    launch: int
    is_baseline: bool
    diff: str
    phase_total_s: float | None
    tok_s: Metric
    accept_len: Metric
    ttft_ms: Metric
    deltas: dict[str, Delta]
    verdict: RunVerdict
    reasons: tuple[str, ...]
    alarms: tuple[str, ...]
    warnings: tuple[str, ...]
    failure: str | None
    repeats: int
    #: one sentence: is speculation worth it vs the no-spec reference (None: not a spec run, or no
    #: comparable no-spec run yet)
    economics: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def delta(run: Metric, base: Metric, higher_is_better: bool = True) -> Delta:
    """Δ% of ``run`` vs ``base``; flagged only when outside the noise band (see module constants)."""
    if run.mean is None or base.mean is None or base.mean == 0:
        return Delta(None)
    diff = run.mean - base.mean
    pct = diff / abs(base.mean) * 100.0
    if run.stdev is not None or base.stdev is not None:
        combined = math.sqrt((run.stdev or 0.0) ** 2 + (base.stdev or 0.0) ** 2)
        flagged = abs(diff) > NOISE_SIGMAS * combined and abs(diff) > 0
    else:
        flagged = abs(diff) > SINGLE_SAMPLE_NOISE * abs(base.mean)
    better = None if not flagged else ((diff > 0) == higher_is_better)
    return Delta(pct, flagged, better)


def short_of(run: Metric, base: Metric, ratio: float) -> bool:
    """Is ``run`` below ``ratio`` × ``base`` by more than the noise band (the band :func:`delta` flags
    with)? A run 1 % slower than a baseline it should match is noise, not a failed speedup."""
    need = Metric(
        None if base.mean is None else base.mean * ratio,
        None if base.stdev is None else base.stdev * ratio,
        base.n,
    )
    d = delta(run, need)
    return d.flagged and d.pct is not None and d.pct < 0


class RunBook:
    """Folds events into runs keyed by launch number; the first launch is the baseline until pinned."""

    def __init__(self, verdict: Verdict | None = None) -> None:
        self.verdict = verdict or Verdict()
        self.runs: dict[int, Run] = {}
        self.baseline: int | None = None
        #: a run of another session pinned as the baseline (``external_label`` says which: SESSION:RUN)
        self.external: Run | None = None
        self.external_label = ""

    # ------------------------------------------------------------------ folding

    def _run(self, launch: int) -> Run:
        run = self.runs.get(launch)
        if run is None:
            run = self.runs[launch] = Run(launch=launch)
        return run

    def apply(self, event: Event) -> None:
        handler = _FOLD.get(type(event))  # one dict lookup for the ~all events that are log lines
        if handler is None:
            return
        handler(self, event)
        if self.baseline is None and self.external is None and self.runs:
            self.baseline = min(self.runs)

    def _on_launch_started(self, event: LaunchStarted) -> None:
        run = self._run(event.launch)
        cfg = event.config or {}
        run.target = event.target or str(cfg.get("target", ""))
        run.config = dict(cfg)
        run.diff = dict(event.diff or {})
        run.started_wall, run.started_mono = event.wall, event.mono
        run.launched = True

    def _on_launch_detected(self, event: LaunchDetected) -> None:
        run = self._run(event.launch)
        if run.started_wall is None:
            run.started_wall, run.started_mono = event.wall, event.mono
        for k, v in (event.args or {}).items():
            run.detected_args.setdefault(k, v)
        for k, v in (event.facts or {}).items():
            run.detected_facts.setdefault(k, v)
        if not run.config and event.args:
            run.config = {"args": {normalize_flag(k, strict=False): v for k, v in event.args.items()}}
            if event.server:
                run.config["server"] = event.server

    def _on_phase_started(self, event: PhaseStarted) -> None:
        run = self._run(event.launch)
        run.phase_starts.setdefault(event.phase, event.mono)
        if event.phase == "launch" and run.launched and run.started_mono is not None:
            if run.before_first_line is None:
                run.before_first_line = round(max(0.0, event.mono - run.started_mono), 3)

    def _on_phase_finished(self, event: PhaseFinished) -> None:
        run = self._run(event.launch)
        secs = event.seconds
        if secs is None and event.phase in run.phase_starts:
            secs = event.mono - run.phase_starts[event.phase]  # the log gave no duration: measure it
        if event.phase == "launch" and run.launched and run.started_mono is not None:
            # the log times launch from its first line; the process started earlier (imports)
            secs = max(float(secs or 0.0), event.mono - run.started_mono)
        if secs is not None:
            run.phases[event.phase] = round(float(secs), 3)

    def _on_ready(self, event: ServerReady) -> None:
        run = self._run(event.launch)
        run.outcome = RunOutcome.READY
        for phase, start in run.phase_starts.items():  # still open at ready: it ended there (as on screen)
            if phase not in run.phases and phase != "ready":
                run.phases[phase] = max(0.0, event.mono - start)
        run.startup = {"gaps": startup_gaps(event.gaps)}
        for name, secs in (event.phase_fixes or {}).items():
            if name in run.phases and isinstance(secs, int | float):
                run.phases[name] = round(float(secs), 3)  # the server's own measure (see the event)
        run.ready_after = (
            None  # a server that was already running when benchmarked: its launch was not seen
            if run.config.get("external")
            else launch_to_ready(run.started_mono, event.mono, run.phases.values())
        )

    def _on_failed(self, event: ServerFailed) -> None:
        run = self._run(event.launch)
        run.outcome = RunOutcome.FAILED
        run.failure_kind = event.kind
        run.failure_phase = event.phase
        run.failure = f"{event.kind}: {event.message}" if event.message else event.kind

    def _on_stopped(self, event: ServerStopped) -> None:
        run = self._run(event.launch)
        if run.outcome != RunOutcome.FAILED:
            run.outcome = RunOutcome.STOPPED

    def _on_exited(self, event: ProcessExited) -> None:
        run = self._run(event.launch)
        if run.outcome not in (RunOutcome.RUNNING, RunOutcome.READY):
            return
        # a death no log line explained (the live triage's verdict, for recordings made before it)
        fail = exit_failure(
            event.code, event.signal, phase=None, ready=run.outcome == RunOutcome.READY, launch=event.launch
        )
        if fail is not None:
            run.outcome = RunOutcome.FAILED
            run.failure_kind = run.failure_kind or fail.kind
            plain = event.signal is None and event.code not in (None, 0)
            run.failure = run.failure or (
                f"exited with code {event.code}" if plain else f"{fail.kind}: {fail.message}"
            )

    def _on_bench_started(self, event: BenchmarkStarted) -> None:
        run = self._run(event.launch)
        conc = (event.workload or {}).get("concurrency")
        if isinstance(conc, int) and not isinstance(conc, bool) and conc > 0:
            run.bench_concurrency[event.bench] = conc

    def _on_bench_result(self, event: BenchmarkResult) -> None:
        self._run(event.launch).results.append(event)

    def _on_profile(self, event: ProfileCaptured) -> None:
        if event.summary and not event.error:
            self._run(event.launch).step_profile = dict(event.summary)

    def step_profiles(self, launch: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None, int | None]:
        """(this run's step profile, the baseline run's, the baseline's launch) for the step bars; the
        baseline part is None when the baseline has no profile or is this run."""
        run = self.runs.get(launch)
        mine = run.step_profile if run is not None else None
        base = self.base_run()
        if base is None or base is run or base.step_profile is None:
            return mine, None, None
        return mine, base.step_profile, base.launch

    def pin_baseline(self, launch: int) -> None:
        if launch not in self.runs:
            raise KeyError(f"no run for launch {launch}")
        self.baseline = launch
        self.external, self.external_label = None, ""

    def pin_external(self, run: Run, label: str) -> None:
        """Pin a run of another session (folded from its recording) as the baseline: every run's Δ,
        diff, verdict and economics are then against it, and :meth:`warnings` say when it is not like
        for like. :meth:`pin_baseline` goes back to a run of this session."""
        self.external, self.external_label = run, label
        self.baseline = None

    @property
    def baseline_label(self) -> str:
        """``#N`` for a run of this session, ``SESSION:RUN`` for a pinned earlier one, "" for none."""
        if self.external is not None:
            return self.external_label
        return f"#{self.baseline}" if self.baseline is not None else ""

    # ------------------------------------------------------------------ analysis

    def base_run(self) -> Run | None:
        if self.external is not None:
            return self.external
        return self.runs.get(self.baseline) if self.baseline is not None else None

    def diff(self, launch: int) -> dict[str, list[Any]]:
        base = self.base_run()
        run = self.runs[launch]
        if base is None or base is run or not base.config or not run.config:
            return {}
        return config_diff(base.config, run.config)

    def deltas(self, launch: int) -> dict[str, Delta]:
        base = self.base_run()
        run = self.runs[launch]
        if base is None or base is run:
            return {name: Delta(None) for name in METRICS}
        return {name: delta(run.metric(name), base.metric(name), hib) for name, hib in METRICS.items()}

    def comparable(self, a: int, b: int) -> bool:
        return _same_workload(self.runs[a], self.runs[b])

    def _nospec_reference(self, run: Run) -> Run | None:
        """The no-spec run a spec run must beat: the baseline if it is one, else the latest no-spec run."""
        base = self.base_run()
        if base is not None and not base.is_spec and base.good_results:
            return base
        candidates = [r for r in self.runs.values() if not r.is_spec and r.config and r.good_results]
        return max(candidates, key=lambda r: r.launch) if candidates else None

    def nospec_reference(self, launch: int) -> Run | None:
        """The no-spec run a spec run's economics are computed against: the pinned baseline if it is a
        no-spec run of the same host and model, else the latest such run; None for a no-spec run."""
        run = self.runs[launch]
        if not run.is_spec:
            return None

        def fits(other: Run) -> bool:
            return (
                other is not run
                and not other.is_spec
                and bool(other.config)
                and bool(other.good_results)
                and (not run.target or not other.target or other.target == run.target)
                and (not run.model or not other.model or other.model == run.model)
            )

        base = self.base_run()
        if base is not None and fits(base):
            return base
        candidates = [r for r in self.runs.values() if fits(r)]
        return max(candidates, key=lambda r: r.launch) if candidates else None

    def economics_points(self, launch: int) -> list[tuple[int, Economics]]:
        """(concurrency, economics) for every concurrency both the spec run and its no-spec reference
        measured; tok/s is per request (output throughput ÷ concurrency)."""
        run = self.runs[launch]
        ref = self.nospec_reference(launch)
        if ref is None:
            return []
        mine, theirs = run.by_concurrency(), ref.by_concurrency()
        out: list[tuple[int, Economics]] = []
        for conc in sorted(set(mine) & set(theirs)):
            tok, _, _ = mean_stdev([r.output_throughput / conc for r in mine[conc]])
            acc, _, _ = mean_stdev([r.accept_length for r in mine[conc]])
            btok, _, _ = mean_stdev([r.output_throughput / conc for r in theirs[conc]])
            e = economics(tok, acc, btok, concurrency=conc)
            if e is not None:
                out.append((conc, e))
        return out

    def economics(self, launch: int) -> Economics | None:
        """The economics at the concurrency the run was last benchmarked at (else the lowest known)."""
        points = self.economics_points(launch)
        if not points:
            return None
        run = self.runs[launch]
        last = run.concurrency_of(run.good_results[-1])
        return dict(points).get(last, points[0][1])

    def economics_sentence(self, launch: int) -> str | None:
        """One line: the verdict, what would make speculation pay, and where it stops paying."""
        e = self.economics(launch)
        ref = self.nospec_reference(launch)
        if e is None or ref is None:
            return None
        text = e.sentence()
        if e.concurrency and e.concurrency > 1:
            text += f" at concurrency {e.concurrency}"
        text += f" vs no-spec {self.external_label if ref is self.external else f'#{ref.launch}'}"
        points = self.economics_points(launch)
        if len(points) > 1:
            c = crossover(points)
            lo, hi = points[0][0], points[-1][0]
            if c is None:
                text += f"; pays at every concurrency measured ({lo}–{hi})"
            elif not any(p.pays for _, p in points):
                text += f"; pays at no concurrency measured ({lo}–{hi})"
            else:
                text += f"; stops paying at concurrency {c}"
        return text

    def latest_economics(self) -> tuple[int, str] | None:
        """(launch, sentence) of the newest spec run whose economics are known: after benchmarking the
        no-spec run, the comparison line still says what it means for the spec run."""
        for n in sorted(self.runs, reverse=True):
            if self.runs[n].is_spec and self.runs[n].good_results:
                sentence = self.economics_sentence(n)
                if sentence:
                    return n, sentence
        return None

    def warnings(self, launch: int) -> list[str]:
        run = self.runs[launch]
        out: list[str] = []
        fps = {r.workload_fingerprint for r in run.good_results if r.workload_fingerprint}
        if len(fps) > 1:
            out.append("repeats used different workloads")
        base = self.base_run()
        if base is not None and base is self.external:
            reasons = comparability(run, base) if run.good_results else []
            if reasons:
                out.append(f"not like for like vs {self.external_label}: " + "; ".join(reasons))
        elif base is not None and base is not run and not _same_workload(run, base):
            out.append(f"workload differs from baseline #{base.launch}: Δ not comparable")
        return out

    def alarms(self, launch: int) -> list[str]:
        run = self.runs[launch]
        out: list[str] = []
        acc = run.metric("accept_len").mean
        if acc is not None and acc < ACCEPT_ALARM and (run.is_spec or not run.config):
            out.append(f"accept length {acc:.2f} ≈ 1: speculation is not working")
        if run.is_spec:
            ref = self._nospec_reference(run)
            tok = run.metric("tok_s").mean
            if ref is not None and tok is not None:
                ref_tok = ref.metric("tok_s").mean
                if ref_tok and tok < ref_tok and _same_workload(run, ref):
                    out.append(
                        f"spec run slower than no-spec #{ref.launch} ({tok:.0f} < {ref_tok:.0f} tok/s)"
                    )
        return out

    def verdict_for(self, launch: int) -> tuple[RunVerdict, list[str]]:
        """``pass``/``fail``/``—`` (nothing to judge) with the reasons behind a fail or pass."""
        run = self.runs[launch]
        v = self.verdict
        if run.failure:
            if run.failure_kind:  # in words ("out of GPU memory during …"), then the server's message
                what = describe_failure(run.failure_kind, run.failure_phase)
                message = run.failure.partition(": ")[2]
                return RunVerdict.FAIL, [f"launch failed: {what}" + (f" ({message})" if message else "")]
            return RunVerdict.FAIL, [f"launch failed: {run.failure}"]
        if not run.good_results:
            if run.results:
                return RunVerdict.FAIL, [run.results[-1].error or "benchmark failed"]
            return RunVerdict.NONE, []
        fails: list[str] = []
        passes: list[str] = []
        tok = run.metric("tok_s").mean
        acc = run.metric("accept_len").mean
        ttft = run.metric("ttft_ms").mean
        if v.min_accept_len is not None and (run.is_spec or acc is not None):
            if acc is None:
                fails.append("no accept length reported")
            elif acc < v.min_accept_len:
                fails.append(f"accept len {acc:.2f} < {v.min_accept_len:g}")
            else:
                passes.append(f"accept len {acc:.2f} ≥ {v.min_accept_len:g}")
        if v.min_speedup is not None:
            base = self.base_run()
            if base is not None and base is not run and base.good_results and _same_workload(run, base):
                btok = base.metric("tok_s").mean
                if btok and tok is not None:
                    speedup = tok / btok
                    if speedup >= v.min_speedup:
                        passes.append(f"speedup {speedup:.2f}× ≥ {v.min_speedup:g}×")
                    elif short_of(run.metric("tok_s"), base.metric("tok_s"), v.min_speedup):
                        fails.append(f"speedup {speedup:.2f}× < {v.min_speedup:g}× vs #{base.launch}")
                    else:  # below the bar by less than the run-to-run noise: not a measured shortfall
                        passes.append(
                            f"speedup {speedup:.2f}× within the noise band of {v.min_speedup:g}× vs #{base.launch}"
                        )
        if v.min_tok_s is not None and tok is not None:
            if tok < v.min_tok_s:
                fails.append(f"{tok:.0f} tok/s < {v.min_tok_s:g}")
            else:
                passes.append(f"{tok:.0f} tok/s ≥ {v.min_tok_s:g}")
        if v.max_ttft_ms is not None and ttft is not None:
            if ttft > v.max_ttft_ms:
                fails.append(f"TTFT p50 {ttft:.0f} ms > {v.max_ttft_ms:g}")
            else:
                passes.append(f"TTFT p50 {ttft:.0f} ms ≤ {v.max_ttft_ms:g}")
        if fails:
            return RunVerdict.FAIL, fails
        if passes:
            return RunVerdict.PASS, passes
        return RunVerdict.NONE, []

    def row(self, launch: int) -> RunRow:
        run = self.runs[launch]
        verdict, reasons = self.verdict_for(launch)
        return RunRow(
            launch=launch,
            is_baseline=launch == self.baseline,
            diff="baseline" if launch == self.baseline else (format_diff(self.diff(launch), limit=4) or "="),
            # ready: launch → ready, as the panel and the export say; else how far its phases got
            phase_total_s=run.ready_after if run.ready_after is not None else run.phase_total_s,
            tok_s=run.metric("tok_s"),
            accept_len=run.metric("accept_len"),
            ttft_ms=run.metric("ttft_ms"),
            deltas=self.deltas(launch),
            verdict=verdict,
            reasons=tuple(reasons),
            alarms=tuple(self.alarms(launch)),
            warnings=tuple(self.warnings(launch)),
            failure=run.failure,
            repeats=len(run.good_results),
            economics=self.economics_sentence(launch),
        )

    def rows(self) -> list[RunRow]:
        return [self.row(n) for n in sorted(self.runs)]


def _same_workload(a: Run, b: Run) -> bool:
    fa, fb = a.fingerprint, b.fingerprint
    return not fa or not fb or fa == fb


_FOLD: dict[type, Callable[[RunBook, Any], None]] = {
    LaunchStarted: RunBook._on_launch_started,
    LaunchDetected: RunBook._on_launch_detected,
    PhaseStarted: RunBook._on_phase_started,
    PhaseFinished: RunBook._on_phase_finished,
    ServerReady: RunBook._on_ready,
    ServerFailed: RunBook._on_failed,
    ServerStopped: RunBook._on_stopped,
    ProcessExited: RunBook._on_exited,
    BenchmarkStarted: RunBook._on_bench_started,
    BenchmarkResult: RunBook._on_bench_result,
    ProfileCaptured: RunBook._on_profile,
}
