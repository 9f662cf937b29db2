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

:class:`RunBook` is built from parts beside it, each a readable size: the runs and the baseline
(:mod:`eagletui.core.runs.baseline`), the fold of events (:mod:`eagletui.core.runs.fold`), the no-spec
reference (:mod:`eagletui.core.runs.reference`), the economics (:mod:`eagletui.core.runs.economics`) and
the verdicts (:mod:`eagletui.core.runs.verdicts`); this module joins them and makes the table's rows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from eagletui.core.runs.economics import _Economics
from eagletui.core.runs.fold import _Fold
from eagletui.core.runs.latency import SloStats
from eagletui.core.runs.run import Delta, Group, Metric, Run, RunOutcome, RunVerdict
from eagletui.core.runs.verdicts import _Verdicts


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
    #: the launch failed after this run was measured: the rule, in words (``RunBook.failed_after``)
    failed_after: str | None = None
    #: launch → ready (None: it has not become ready, or failed first)
    ready_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RunBook(_Verdicts, _Economics, _Fold):
    """Folds events into runs keyed by launch number; the baseline is the pinned run, else the first
    run with valid results."""

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
            diff=self.diff_text(launch, limit=4),
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
            failed_after=self.failed_after(launch),
            ready_s=run.ready_after
            if run.ready_after is not None
            else (run.phase_total_s if run.outcome == RunOutcome.READY else None),
        )

    def slo_stats(self, run: Run, group: Group) -> SloStats:
        """One setting's per-request latencies under the SLO (:mod:`eagletui.core.runs.latency`)."""
        if run is not self.runs.get(run.launch):  # an external baseline: not this book's to cache
            return run.slo_stats(group, self.slo)
        key = f"slo {group.concurrency} {group.fingerprint}"
        return self._cached(key, run.launch, lambda: run.slo_stats(group, self.slo))  # type: ignore[no-any-return]

    def rows(self) -> list[RunRow]:
        return [self.row(n) for n in sorted(self.runs)]
