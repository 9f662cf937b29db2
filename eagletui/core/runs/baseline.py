"""The run book's base: the runs it holds, its analysis cache, and the baseline every run is compared with.

Which run is the baseline (the pinned one, a run of another session, else the first run with valid
results), the setting two runs are compared at and the Δ of each metric against the baseline, flagged
only outside the noise band (:mod:`eagletui.core.stats.noise`). Apart from :mod:`eagletui.core.runs.book`
so each part of :class:`~eagletui.core.runs.book.RunBook` stays a readable size: the fold
(:mod:`eagletui.core.runs.fold`), the no-spec reference (:mod:`eagletui.core.runs.reference`), the
economics (:mod:`eagletui.core.runs.economics`) and the verdicts (:mod:`eagletui.core.runs.verdicts`)
build on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eagletui.core.profile.model import Verdict, config_diff, format_diff
from eagletui.core.profile.objective import Objective
from eagletui.core.profile.slo import Slo
from eagletui.core.runs.run import Delta, Group, Metric, Run
from eagletui.core.stats.noise import Band, band, outside

#: Metrics compared across runs: name → higher is better.
METRICS: dict[str, bool] = {"tok_s": True, "accept_len": True, "ttft_ms": False}


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


def _concs(run: Run) -> str:
    cs = sorted({g.concurrency for g in run.groups()})
    return ",".join(str(c) for c in cs) or "?"


class _Baseline:
    """The runs by launch number, the cache of their analyses, and the baseline rule."""

    def __init__(
        self, verdict: Verdict | None = None, slo: Slo | None = None, objective: Objective | None = None
    ) -> None:
        #: thresholds; without any given, those a recording's launches carry are adopted
        self.verdict = verdict or Verdict()
        self._adopt = verdict is None
        #: the profile's ``[slo]`` (goodput, the frontier); without a profile, the recording's, as above
        self.slo = slo or None
        self._adopt_slo = verdict is None and slo is None
        #: what the ranking of the next launch optimises (the profile's ``[sweep] objective``); without
        #: a profile, the one the recording's launches carry, as above
        self.objective = objective or Objective()
        self._adopt_objective = verdict is None and objective is None
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

    def memo(self, what: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per book version for an analysis of the whole book: the frontier view and
        the charts column's frontier chart both ask for the frontier when a result lands, and a fold of
        it pools every run's per-request records."""
        return self._cached(what, -1, compute)

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

    def diff_text(self, launch: int, limit: int | None = None) -> str:
        """The run's config vs the baseline in a few words, the one wording of the runs table and every
        export: ``baseline``; ``no baseline`` while no run counts (nothing was compared, so nothing is
        equal); else the flags that differ, and ``=`` only when compared and the same."""
        base = self.base_run()
        if base is self.runs[launch]:
            return "baseline"
        if base is None:
            return "no baseline"
        return format_diff(self.diff(launch), limit=limit) or "="

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
