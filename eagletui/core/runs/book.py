"""Runs: one launch (its config, phase timings, failure) plus the benchmarks run against it.

The run book answers the tuner's two questions honestly, under two names:

* **vs baseline** — did this change help? Every run is compared with the baseline: the pinned run, or
  else the first run with valid results (the same rule in the runs table, ``eagletui sessions`` and
  every export);
* **vs no-spec** — is speculation worth it here? A spec run is compared with its **no-spec reference**:
  the no-spec run whose launch equals it minus the ``--speculative-*`` flags (:mod:`eagletui.core.servers.spec`,
  :func:`eagletui.core.runs.compare.launch_differences`) on the same workload; when none exists the nearest
  one is named with what else differs, and the comparison says it is not like for like.

Numbers are per setting, never averaged across: a benchmark's workload fingerprint covers its prompts,
sampling and concurrency, so the mean ± stdev of a row is over repeats of the same settings, and the
economics are a table per concurrency. A difference is only flagged outside the noise band of
:mod:`eagletui.core.stats.noise`, printed with it. A result that cannot count (:mod:`eagletui.core.runs.validity`:
nothing measured, failed requests, a drafter that accepts nothing, impossible counts, a server that died
or a link that dropped during the run) is ``invalid`` with its reason and never a baseline or reference.

Pure: folds events, no I/O, no UI, so a replayed recording rebuilds exactly the same table.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeGuard

from eagletui.core.cycle.economics import Economics, crossover_text, economics
from eagletui.core.cycle.model import finite, rates_from_histogram
from eagletui.core.events import (
    JOB_RUNNING_STATES,
    BaselinePinned,
    BenchmarkResult,
    BenchmarkStarted,
    ConnectionState,
    DecodeStats,
    Event,
    JobStatus,
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
from eagletui.core.phases.failures import exit_failure
from eagletui.core.phases.startup import launch_to_ready, startup_gaps
from eagletui.core.profile.model import Verdict, config_diff, format_diff, normalize_flag
from eagletui.core.runs.accept import definitions as accept_definitions
from eagletui.core.runs.accept import position_deltas
from eagletui.core.runs.compare import comparability, launch_differences
from eagletui.core.runs.run import Delta, Group, Metric, Run, RunOutcome, RunVerdict
from eagletui.core.runs.validity import interruption, result_problems
from eagletui.core.servers import spec as specflags
from eagletui.core.stats.noise import SUGGEST_REPEATS, Band, band, outside
from eagletui.core.wording import describe_failure

#: Metrics compared across runs: name → higher is better.
METRICS: dict[str, bool] = {"tok_s": True, "accept_len": True, "ttft_ms": False}

#: Below this accept length speculation is (nearly) never accepting a draft token.
ACCEPT_ALARM = 1.2
#: A spec run's speedup vs its no-spec reference must reach this when the profile does not say.
DEFAULT_SPEC_SPEEDUP = 1.0


@dataclass(frozen=True)
class Reference:
    """A spec run's no-spec reference: the run, how it is named (``#3`` / ``SESSION:RUN``) and what
    else differs between the two launches (empty: like for like)."""

    run: Run
    label: str
    differences: tuple[str, ...] = ()

    @property
    def like_for_like(self) -> bool:
        return not self.differences

    def phrase(self) -> str:
        """``no-spec #3`` or ``no-spec #3, which also differs in NCCL_ALGO (Tree vs Ring)``."""
        text = f"no-spec {self.label}"
        if self.differences:
            text += ", which also differs in " + "; ".join(self.differences[:3])
            if len(self.differences) > 3:
                text += f" (+{len(self.differences) - 3} more)"
        return text


@dataclass(frozen=True)
class ConcurrencyRow:
    """One line of a spec run's per-concurrency table against its no-spec reference."""

    concurrency: int
    spec_tok_s: Metric
    nospec_tok_s: Metric | None
    accept_len: Metric
    economics: Economics | None
    band: Band | None

    def to_json(self) -> dict[str, Any]:
        e = self.economics
        return {
            "concurrency": self.concurrency,
            "spec_tok_s": _metric_json(self.spec_tok_s),
            "nospec_tok_s": _metric_json(self.nospec_tok_s) if self.nospec_tok_s is not None else None,
            "accept_len": _metric_json(self.accept_len),
            "speedup": round(e.speedup, 4) if e is not None else None,
            "pays": e.pays if e is not None else None,
            "break_even_accept_len": None
            if e is None or e.break_even_accept_len is None
            else round(e.break_even_accept_len, 3),
            "break_even_reachable": e.reachable if e is not None else None,
            "max_accept": e.max_accept if e is not None else None,
            "noise": self.band.text() if self.band is not None else None,
            "economics": e.to_json() if e is not None else None,
        }


def _metric_json(m: Metric) -> dict[str, Any]:
    return {"mean": m.mean, "stdev": m.stdev, "n": m.n}


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
    #: the concurrency the row's numbers are for (None: not benchmarked)
    concurrency: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def delta(run: Metric, base: Metric, higher_is_better: bool = True) -> Delta:
    """Δ% of ``run`` vs ``base``; flagged only when outside the noise band (:mod:`eagletui.core.stats.noise`)."""
    if run.mean is None or base.mean is None or base.mean == 0:
        return Delta(None)
    diff = run.mean - base.mean
    pct = diff / abs(base.mean) * 100.0
    b = band(run.stdev, run.n, base.stdev, base.n, base=base.mean)
    flagged = outside(diff, b)
    better = None if not flagged else ((diff > 0) == higher_is_better)
    return Delta(pct, flagged, better, b)


def short_of(run: Metric, base: Metric, ratio: float) -> tuple[bool, Band]:
    """Is ``run`` below ``ratio`` × ``base`` by more than the noise band (the band :func:`delta` flags
    with), and that band. A run 1 % slower than a baseline it should match is noise, not a shortfall."""
    need = Metric(
        None if base.mean is None else base.mean * ratio,
        None if base.stdev is None else base.stdev * ratio,
        base.n,
    )
    d = delta(run, need)
    return (d.flagged and d.pct is not None and d.pct < 0), (d.band or Band(None))


class RunBook:
    """Folds events into runs keyed by launch number; the baseline is the pinned run, else the first
    run with valid results."""

    def __init__(self, verdict: Verdict | None = None) -> None:
        #: thresholds; without any given, those a recording's launches carry are adopted
        self.verdict = verdict or Verdict()
        self._adopt = verdict is None
        self.runs: dict[int, Run] = {}
        self._pinned: int | None = None
        #: a run of another session pinned as the baseline (``external_label`` says which: SESSION:RUN)
        self.external: Run | None = None
        self.external_label = ""
        #: bumped by every event that changed a run: the analyses below are cached per version
        self.version = 0
        self._cache: dict[tuple[str, int], Any] = {}
        self._cache_key: tuple[int, int] = (-1, 0)

    def _cached(self, what: str, launch: int, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per (book version, thresholds object): a repaint asks for every row."""
        key = (self.version, id(self.verdict))
        if key != self._cache_key:
            self._cache.clear()
            self._cache_key = key
        k = (what, launch)
        if k not in self._cache:
            self._cache[k] = compute()
        return self._cache[k]

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
        if handler(self, event) is not False:  # False: the event changed nothing
            self.version += 1

    def _on_launch_started(self, event: LaunchStarted) -> None:
        run = self._run(event.launch)
        cfg = event.config or {}
        run.target = event.target or str(cfg.get("target", ""))
        run.config = dict(cfg)
        run.diff = dict(event.diff or {})
        run.started_wall, run.started_mono = event.wall, event.mono
        run.launched = True
        if self._adopt and isinstance(cfg.get("verdict"), dict):
            # a recording judges its runs with the thresholds its launches carried
            with contextlib.suppress(TypeError, ValueError):
                self.verdict = Verdict(**{k: float(v) for k, v in cfg["verdict"].items()})

    def _interrupt(self, launch: int | None, kind: str, detail: str = "") -> None:
        runs = self.runs.values() if launch is None else [r for r in (self.runs.get(launch),) if r]
        for run in runs:
            for reasons in run.open_benches.values():
                why = interruption(kind, detail)
                if why not in reasons:
                    reasons.append(why)

    def _on_baseline_pinned(self, event: BaselinePinned) -> bool | None:
        """A pin from the recording (or a follower's feed): the same rule as :meth:`pin_baseline`; a
        run that cannot count (or is unknown here) leaves the baseline as it was."""
        try:
            self.check_pin(event.launch)
        except (KeyError, ValueError):
            return False
        self._pinned = event.launch
        self.external, self.external_label = None, ""
        return None

    def _on_job_status(self, event: JobStatus) -> None:
        run = self._run(event.launch)
        run.job_id = event.job_id or run.job_id
        if not run.job_started and (event.state in JOB_RUNNING_STATES or event.nodes):
            # the job runs: the launch starts now (the phase panel's clock does the same)
            run.job_started = True
            waited = event.queued_s
            if waited is None and run.started_mono is not None:
                waited = max(0.0, event.mono - run.started_mono)
            run.queued_s = waited
            run.started_wall, run.started_mono = event.wall, event.mono

    def _on_launch_detected(self, event: LaunchDetected) -> None:
        run = self._run(event.launch)
        if run.open_benches:
            self._interrupt(event.launch, "launch_detected")
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
        self._interrupt(event.launch, "server_failed", event.kind)
        run.outcome = RunOutcome.FAILED
        run.failure_kind = event.kind
        run.failure_phase = event.phase
        run.failure = f"{event.kind}: {event.message}" if event.message else event.kind

    def _on_stopped(self, event: ServerStopped) -> None:
        run = self._run(event.launch)
        self._interrupt(event.launch, "server_stopped")
        if run.outcome != RunOutcome.FAILED:
            run.outcome = RunOutcome.STOPPED

    def _on_exited(self, event: ProcessExited) -> None:
        run = self._run(event.launch)
        self._interrupt(
            event.launch, "process_exited", f"code {event.code}" if event.code is not None else ""
        )
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

    def _on_connection(self, event: ConnectionState) -> bool:
        if event.state != "lost":
            return False
        self._interrupt(None, "connection", event.detail[:120] if event.detail else "")
        return True

    def _on_decode(self, event: DecodeStats) -> bool:
        run = self.runs.get(event.launch)
        if run is None or not run.open_benches or event.accept_len is None:
            return False
        acc = event.accept_len
        if not (isinstance(acc, int | float) and math.isfinite(acc) and acc > 0):
            return False
        for bench in run.open_benches:
            run.log_accepts.setdefault(bench, []).append(float(acc))
        return True

    def _on_bench_started(self, event: BenchmarkStarted) -> None:
        run = self._run(event.launch)
        workload = event.workload if isinstance(event.workload, dict) else {}
        conc = workload.get("concurrency")
        if isinstance(conc, int) and not isinstance(conc, bool) and conc > 0:
            run.bench_concurrency[event.bench] = conc
        run.bench_workload[event.bench] = dict(workload)
        run.open_benches[event.bench] = []

    def _on_bench_result(self, event: BenchmarkResult) -> None:
        run = self._run(event.launch)
        during = run.open_benches.pop(event.bench, [])
        found = result_problems(
            event,
            spec=run.is_spec,
            workload=run.bench_workload.get(event.bench),
            max_accept=specflags.max_accept(run.args) if run.is_spec else None,
        )
        # what happened during the run explains the rest (a cut fails every request): it goes first
        problems = [*during, *(p for p in found if not (during and "requests failed" in p))]
        run.results.append(event)
        run.problems.append(tuple(problems))

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

    # ------------------------------------------------------------------ the baseline

    @property
    def baseline(self) -> int | None:
        """The baseline's launch number: the pinned run, else the first run with valid results (None:
        a pinned run of another session, or no valid run yet)."""
        if self.external is not None:
            return None
        if self._pinned is not None and self._pinned in self.runs:
            return self._pinned
        return next((n for n in sorted(self.runs) if self.runs[n].good_results), None)

    def check_pin(self, launch: int) -> None:
        """Refuse a pin of ``launch``: KeyError when there is no such run, ValueError (saying why) when
        its results cannot count. The one rule for :meth:`pin_baseline` and a recorded pin."""
        if launch not in self.runs:
            raise KeyError(f"no run for launch {launch}")
        run = self.runs[launch]
        if not run.good_results:
            why = "; ".join(run.invalid_reasons) or run.failure or "it has no benchmark results"
            raise ValueError(f"run #{launch} cannot be the baseline: {why}")

    def pin_baseline(self, launch: int) -> None:
        """Pin a run of this session; one whose results cannot count is refused (ValueError says why).
        The UI dispatches :class:`BaselinePinned` instead, so the pin is recorded."""
        self.check_pin(launch)
        self._pinned = launch
        self.external, self.external_label = None, ""
        self.version += 1

    def pin_external(self, run: Run, label: str) -> None:
        """Pin a run of another session (folded from its recording) as the baseline: every run's Δ,
        diff, verdict and economics are then against it, and :meth:`warnings` say when it is not like
        for like. :meth:`pin_baseline` goes back to a run of this session."""
        self.external, self.external_label = run, label
        self._pinned = None
        self.version += 1

    @property
    def baseline_label(self) -> str:
        """``#N`` for a run of this session, ``SESSION:RUN`` for a pinned earlier one, "" for none."""
        if self.external is not None:
            return self.external_label
        b = self.baseline
        return f"#{b}" if b is not None else ""

    def label_of(self, run: Run) -> str:
        return self.external_label if run is self.external else f"#{run.launch}"

    # ------------------------------------------------------------------ analysis

    def base_run(self) -> Run | None:
        if self.external is not None:
            return self.external
        b = self.baseline
        return self.runs.get(b) if b is not None else None

    def diff(self, launch: int) -> dict[str, list[Any]]:
        base = self.base_run()
        run = self.runs[launch]
        if base is None or base is run or not base.config or not run.config:
            return {}
        return config_diff(base.config, run.config)

    def _common(self, run: Run, base: Run) -> tuple[Group | None, Group | None]:
        """The setting the two runs are compared at: the run's headline one when the other measured it,
        else the latest setting both measured; (None, None) when they share none."""
        head = run.headline()
        if head is None:
            return None, None
        other = base.group_like(head)
        if other is not None:
            return head, other
        for g in reversed(run.groups()):
            other = base.group_like(g)
            if other is not None:
                return g, other
        return None, None

    def deltas(self, launch: int) -> dict[str, Delta]:
        base = self.base_run()
        run = self.runs[launch]
        if base is None or base is run:
            return {name: Delta(None) for name in METRICS}
        mine, theirs = self._common(run, base)
        if mine is None or theirs is None:
            return {name: Delta(None) for name in METRICS}
        return {name: delta(mine.metric(name), theirs.metric(name), hib) for name, hib in METRICS.items()}

    def comparable(self, a: int, b: int) -> bool:
        return self._common(self.runs[a], self.runs[b])[0] is not None

    def reference(self, launch: int) -> Reference | None:
        return self._cached("reference", launch, lambda: self._reference(launch))  # type: ignore[no-any-return]

    def _reference(self, launch: int) -> Reference | None:
        """A spec run's no-spec reference (None for a no-spec run, or when no valid no-spec run of the
        same model shares a setting with it): the like-for-like one — the pinned baseline if it is one,
        else the latest — or, failing that, the one with the fewest other differences, named with them."""
        run = self.runs[launch]
        if not run.is_spec or not run.good_results:
            return None
        candidates = [r for r in self.runs.values() if r is not run]
        if self.external is not None:
            candidates.append(self.external)
        base = self.base_run()
        best: tuple[tuple[int, int, int], Reference] | None = None
        for other in candidates:
            if other.is_spec or not other.good_results or not other.config:
                continue
            if run.model and other.model and run.model != other.model:
                continue
            if not any(other.group_like(g) is not None for g in run.groups()):
                continue
            diffs = tuple(launch_differences(run, other))
            rank = (len(diffs), 0 if other is base else 1, -other.launch if other is not self.external else 0)
            ref = Reference(other, self.label_of(other), diffs)
            if best is None or rank < best[0]:
                best = (rank, ref)
        return best[1] if best is not None else None

    def nospec_reference(self, launch: int) -> Run | None:
        """The run of :meth:`reference` (None when there is none)."""
        ref = self.reference(launch)
        return ref.run if ref is not None else None

    def _other_drafter(self, run: Run, group: Group) -> tuple[float, float] | None:
        """(cycle ms, accept) of another spec run that differs from ``run`` only in the draft model, at
        the same setting: the second point of the cycle model's per-token fit."""
        for other in self.runs.values():
            if other is run or not other.is_spec or not other.good_results:
                continue
            if launch_differences(run, other):
                continue
            a, b = run.args, other.args
            if specflags.settings(a) != specflags.settings(b) or a.get(specflags.DRAFT_MODEL) == b.get(
                specflags.DRAFT_MODEL
            ):
                continue
            g = other.group_like(group)
            if g is None:
                continue
            tok, acc = g.metric("tok_s_per_request").mean, g.metric("accept_len").mean
            if tok and acc:
                return 1000.0 * acc / tok, acc
        return None

    def concurrency_table(self, launch: int) -> list[ConcurrencyRow]:
        return self._cached("table", launch, lambda: self._concurrency_table(launch))  # type: ignore[no-any-return]

    def _concurrency_table(self, launch: int) -> list[ConcurrencyRow]:
        """Per concurrency the spec run measured: its tok/s, the reference's at the same setting, the
        accept length and the economics. Never a mean across concurrencies."""
        run = self.runs[launch]
        ref = self.reference(launch)
        out: list[ConcurrencyRow] = []
        settings = run.spec_settings
        for g in sorted(run.groups(), key=lambda g: g.concurrency):
            theirs = ref.run.group_like(g) if ref is not None else None
            acc = g.metric("accept_len")
            econ = None
            b: Band | None = None
            nospec = theirs.metric("tok_s") if theirs is not None else None
            if theirs is not None:
                mine_t = g.metric("tok_s")
                assert nospec is not None
                b = band(mine_t.stdev, mine_t.n, nospec.stdev, nospec.n, base=nospec.mean)
                rates = rates_from_histogram(g.histogram())
                econ = economics(
                    g.metric("tok_s_per_request").mean,
                    acc.mean,
                    theirs.metric("tok_s_per_request").mean,
                    concurrency=g.concurrency,
                    settings=settings,
                    rates=rates,
                    other=self._other_drafter(run, g),
                    profile=profile_parts(run.step_profile, g.concurrency),
                )
            out.append(ConcurrencyRow(g.concurrency, g.metric("tok_s"), nospec, acc, econ, b))
        return out

    def economics_points(self, launch: int) -> list[tuple[int, Economics]]:
        """(concurrency, economics) for every setting both the spec run and its no-spec reference
        measured; tok/s is per request (output throughput ÷ concurrency)."""
        return [
            (r.concurrency, r.economics) for r in self.concurrency_table(launch) if r.economics is not None
        ]

    def economics(self, launch: int) -> Economics | None:
        """The economics at the run's headline setting (else the lowest concurrency known)."""
        points = self.economics_points(launch)
        if not points:
            return None
        head = self.runs[launch].headline()
        return dict(points).get(head.concurrency if head else 0, points[0][1])

    def economics_sentence(self, launch: int) -> str | None:
        """One line: the verdict vs no-spec, what would pay, and where speculation stops paying."""
        e = self.economics(launch)
        ref = self.reference(launch)
        if e is None or ref is None:
            return None
        context = f" vs {ref.phrase()}" + ("" if ref.like_for_like else " (not like for like)")
        if e.concurrency and e.concurrency > 1:
            context += f" at concurrency {e.concurrency}"
        text = e.sentence(context=context)
        across = crossover_text(self.economics_points(launch))
        if across:
            text += f"; {across}"
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

    # ------------------------------------------------------------------ accept length, defined

    def accept_definitions(self, launch: int) -> dict[str, Any]:
        """The run's accept length by each definition (:func:`eagletui.core.runs.accept.definitions`)."""
        return self._cached("accept", launch, lambda: accept_definitions(self.runs[launch]))  # type: ignore[no-any-return]

    def position_deltas(self, launch: int) -> list[float | None]:
        """Acceptance per draft position minus the baseline run's, in percentage points."""
        base = self.base_run()
        if base is None or base is self.runs[launch]:
            return []
        return position_deltas(self.runs[launch], base)

    # ------------------------------------------------------------------ warnings and verdicts

    def warnings(self, launch: int) -> list[str]:
        run = self.runs[launch]
        out: list[str] = list(run.excluded())
        base = self.base_run()
        if base is not None and base is self.external:
            reasons = comparability(run, base) if run.good_results else []
            if reasons:
                out.append(f"not like for like vs {self.external_label}: " + "; ".join(reasons))
        if base is not None and base is not run and run.good_results and base.good_results:
            if self._common(run, base)[0] is None:
                out.append(
                    f"workload differs from baseline {self.label_of(base)}: Δ not comparable "
                    f"(concurrency {_concs(run)} vs {_concs(base)})"
                )
        if run.good_results:
            warn = self.accept_definitions(launch).get("warning")
            if warn:
                out.append(str(warn))
        return out

    def alarms(self, launch: int) -> list[str]:
        run = self.runs[launch]
        out: list[str] = []
        acc = run.metric("accept_len").mean
        if acc is not None and acc < ACCEPT_ALARM and (run.is_spec or not run.config):
            out.append(f"accept length {acc:.2f} ≈ 1: speculation is not working")
        if run.is_spec:
            ref = self.reference(launch)
            if ref is not None and ref.like_for_like:
                mine, theirs = self._common(run, ref.run)
                tok = mine.metric("tok_s").mean if mine else None
                ref_tok = theirs.metric("tok_s").mean if theirs else None
                if tok is not None and ref_tok and tok < ref_tok:
                    out.append(f"spec run slower than no-spec {ref.label} ({tok:.0f} < {ref_tok:.0f} tok/s)")
        return out

    def verdict_for(self, launch: int) -> tuple[RunVerdict, list[str]]:
        """``pass``/``fail``/``invalid``/``—`` (nothing to judge) with the reasons behind it."""
        run = self.runs[launch]
        v = self.verdict
        if run.results and not run.good_results:  # measured and nothing counts (a crash mid-run too)
            return RunVerdict.INVALID, run.invalid_reasons or ["benchmark failed"]
        if run.failure:
            if run.failure_kind:  # in words ("out of GPU memory during …"), then the server's message
                what = describe_failure(run.failure_kind, run.failure_phase)
                message = run.failure.partition(": ")[2]
                return RunVerdict.FAIL, [f"launch failed: {what}" + (f" ({message})" if message else "")]
            return RunVerdict.FAIL, [f"launch failed: {run.failure}"]
        if not run.good_results:
            return RunVerdict.NONE, []
        fails: list[str] = []
        passes: list[str] = []
        invalid: list[str] = []
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
        base = self.base_run()
        ref = self.reference(launch) if run.is_spec else None
        if ref is not None and not ref.like_for_like:
            ref = None  # a no-spec run of another config says nothing about speculation here
        if v.min_speedup is not None and base is not None and base is not run and base.good_results:
            if ref is None or ref.run is not base:
                self._speedup_check(
                    run, base, f"vs baseline {self.label_of(base)}", v.min_speedup, passes, fails, invalid
                )
        if ref is not None:
            need = v.min_spec_speedup if v.min_spec_speedup is not None else DEFAULT_SPEC_SPEEDUP
            name = f"vs no-spec {ref.label}"
            if ref.run is base and v.min_speedup is not None:  # one comparison, the stricter bar
                need, name = max(need, v.min_speedup), f"vs no-spec {ref.label} (the baseline)"
            self._speedup_check(run, ref.run, name, need, passes, fails, invalid)
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
        if invalid:
            return RunVerdict.INVALID, invalid
        if fails:
            return RunVerdict.FAIL, fails
        if passes:
            return RunVerdict.PASS, passes
        return RunVerdict.NONE, []

    def _speedup_check(
        self,
        run: Run,
        other: Run,
        name: str,
        need: float,
        passes: list[str],
        fails: list[str],
        invalid: list[str],
    ) -> None:
        """One speedup threshold against one comparison, judged with the one noise rule and its band."""
        mine, theirs = self._common(run, other)
        if mine is None or theirs is None:
            invalid.append(
                f"not comparable {name}: a different workload or concurrency "
                f"(concurrency {_concs(run)} vs {_concs(other)})"
            )
            return
        tok, btok = mine.metric("tok_s"), theirs.metric("tok_s")
        if not btok.mean or tok.mean is None:
            return
        speedup = tok.mean / btok.mean
        short, b = short_of(tok, btok, need)
        said = any(SUGGEST_REPEATS in r for r in (*passes, *fails, *invalid))
        noise = b.text() + ("" if b.measured or said else f"; {SUGGEST_REPEATS}")
        if speedup >= need:
            passes.append(f"speedup {speedup:.2f}× ≥ {need:g}× {name} ({noise})")
        elif short:
            fails.append(f"speedup {speedup:.2f}× < {need:g}× {name}, outside the noise band ({noise})")
        else:  # below the bar by less than the run-to-run noise: not a measured shortfall
            passes.append(f"speedup {speedup:.2f}× within the noise band of {need:g}× {name} ({noise})")

    def row(self, launch: int) -> RunRow:
        return self._cached("row", launch, lambda: self._row(launch))  # type: ignore[no-any-return]

    def _row(self, launch: int) -> RunRow:
        run = self.runs[launch]
        verdict, reasons = self.verdict_for(launch)
        is_base = self.external is None and launch == self.baseline
        head = run.headline()
        return RunRow(
            launch=launch,
            is_baseline=is_base,
            diff="baseline" if is_base else (format_diff(self.diff(launch), limit=4) or "="),
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
            repeats=len(head.results) if head is not None else 0,
            economics=self.economics_sentence(launch),
            concurrency=head.concurrency if head is not None else None,
        )

    def rows(self) -> list[RunRow]:
        return [self.row(n) for n in sorted(self.runs)]


def _concs(run: Run) -> str:
    cs = sorted({g.concurrency for g in run.groups()})
    return ",".join(str(c) for c in cs) or "?"


def profile_parts(profile: dict[str, Any] | None, bs: int | None = None) -> dict[str, Any] | None:
    """A step profile's split of a speculative cycle (:func:`eagletui.profiler.summary.step_breakdown`:
    ``parts`` draft / verify / draft_extend, GPU ms per cycle, each with its kernel ms and the forwards
    nested in it) for the cycle model: ``shares`` (the spans), ``kernels`` and ``draft_forwards`` where the
    profile has them (recordings made before issue 25 do not); None when the profile has no complete
    speculative cycle. With ``bs``, the parts of the cycles at the batch size nearest it where the profile
    splits them by batch size (``parts_by_bs``): a cycle at batch 1 is not one at batch 4."""
    if not isinstance(profile, dict) or profile.get("unit") != "cycle":
        return None
    parts = profile.get("parts")
    by_bs = profile.get("parts_by_bs")
    if bs is not None and isinstance(by_bs, dict):
        sizes = [
            (int(k), v)
            for k, v in by_bs.items()
            if isinstance(k, str) and k.isdigit() and isinstance(v, dict)
        ]
        if sizes:
            # nearest by ratio (batch 3 is nearer 4 than batch 8 is), a larger one on a tie
            _, parts = min(sizes, key=lambda kv: (abs(math.log(max(kv[0], 1) / max(bs, 1))), -kv[0]))
    if not isinstance(parts, dict):
        return None
    shares: dict[str, float] = {}
    kernels: dict[str, float] = {}
    for stage in ("draft", "verify", "draft_extend"):
        d = parts.get(stage)
        ms = d.get("gpu_ms") if isinstance(d, dict) else None
        if not _ms(ms):
            return None
        shares[stage] = float(ms)
        k = d.get("kernel_ms") if isinstance(d, dict) else None
        if _ms(k):
            kernels[stage] = float(k)
    if shares["verify"] <= 0:
        return None
    out: dict[str, Any] = {"shares": shares}
    if "draft" in kernels and "draft_extend" in kernels:
        out["kernels"] = kernels
        fw = parts["draft"].get("forwards")
        out["draft_forwards"] = float(fw) if _ms(fw) else 0.0
    return out


def _ms(v: Any) -> TypeGuard[float]:
    return finite(v) and v >= 0


_FOLD: dict[type, Callable[[RunBook, Any], bool | None]] = {
    LaunchStarted: RunBook._on_launch_started,
    JobStatus: RunBook._on_job_status,
    LaunchDetected: RunBook._on_launch_detected,
    PhaseStarted: RunBook._on_phase_started,
    PhaseFinished: RunBook._on_phase_finished,
    ServerReady: RunBook._on_ready,
    ServerFailed: RunBook._on_failed,
    ServerStopped: RunBook._on_stopped,
    ProcessExited: RunBook._on_exited,
    ConnectionState: RunBook._on_connection,
    DecodeStats: RunBook._on_decode,
    BenchmarkStarted: RunBook._on_bench_started,
    BenchmarkResult: RunBook._on_bench_result,
    ProfileCaptured: RunBook._on_profile,
    BaselinePinned: RunBook._on_baseline_pinned,
}
