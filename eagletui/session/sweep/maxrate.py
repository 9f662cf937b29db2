"""``[sweep.max_rate]`` within a launch: after its cells, the bisection over the request rate
(:class:`~eagletui.core.sweep.maxrate.Bisection`) benchmarks the same server with Poisson arrivals until
it knows the highest rate meeting the ``[slo]``, or its step budget or time budget
(``timings.sweep.max_rate_s``: no step starts after it) is spent.

Each step is an ordinary benchmark of the workspace, so it is recorded, judged by the validity gate
and drawn on the frontier like any other (one point per rate); a run the gate leaves out, or one with
no per-request records, cannot be judged and ends the search, said. A step whose percentile lies within
the noise of a bound is run once more and judged on both runs' requests. The answer is kept on the
variant (``max_rate``: the queue file, ``sweep --json``) and said on the progress line.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from eagletui.core.profile.max_rate import MaxRateSpec
from eagletui.core.profile.sweep import apply_client
from eagletui.core.runs.latency import LatencyRecords, slo_stats
from eagletui.core.runs.max_rate import Trial, near_bound, rate_text
from eagletui.core.sweep.maxrate import Bisection
from eagletui.session.sweep.kept_runs import keep_run

if TYPE_CHECKING:
    from eagletui.core.events import BenchmarkResult
    from eagletui.core.profile.model import BenchSettings, Profile
    from eagletui.session.sweep.cells import VariantState
    from eagletui.session.sweep.runner import SweepRunner


def rate_settings(spec: MaxRateSpec, prof: Profile, rate: float) -> BenchSettings:
    """The benchmark of one step: the profile's [bench] at ``rate`` req/s, one run, at most
    ``spec.concurrency`` in flight — by default no cap (every prompt may be in flight), as
    ``bench_serving``'s ``--request-rate`` without ``--max-concurrency``: a cap holds requests back in
    the client, where no latency the server causes is measured, and an overloaded server would look
    fine."""
    base = apply_client(prof.bench, {})
    n = spec.num_prompts or base.num_prompts
    return dataclasses.replace(base, request_rate=rate, concurrency=spec.concurrency or n, num_prompts=n, repeats=1)


async def search_max_rate(runner: SweepRunner, v: VariantState, prof: Profile) -> None:
    """The search of launch ``v`` (its server ready and benchmarked); the answer on ``v.max_rate``."""
    spec = runner.profile.sweep.max_rate if runner.profile.sweep is not None else None
    slo = runner.profile.slo
    if spec is None or not slo:
        return
    search = Bisection(spec)
    v.phase = "max rate"
    runner.say(f"  max rate: {spec.describe()}")
    t0 = runner.clock.monotonic()
    budget = runner.timings.sweep.max_rate_s
    kept: list[str] = []  # its benchmarks beside the queue: the frontier's rate points after a resume
    while (rate := search.next_rate()) is not None:
        if runner.clock.monotonic() - t0 >= budget:
            search.stopped = f"the time budget ({budget:g} s, timings sweep.max_rate_s)"
            break
        settings = rate_settings(spec, prof, rate)
        pairs = [await _judged_run(runner, settings, v, kept)]
        runs = 1
        records = [rec for _, rec in pairs if rec is not None]
        near = bool(records) and near_bound(records, slo)
        if near and search.runs + 1 < spec.steps and runner.clock.monotonic() - t0 < budget:
            pairs.append(await _judged_run(runner, settings, v, kept))  # within the noise: once more, both judged
            runs = 2
            records = [rec for _, rec in pairs if rec is not None]
            near = bool(records) and near_bound(records, slo)
        meets = None
        if len(records) == len(pairs):
            meets = slo_stats([(r, rec) for r, rec in pairs if r is not None], slo).meets_slo
        search.record(Trial(rate, meets, near), runs)
        said = {True: "meets the SLO", False: "misses the SLO", None: "cannot be judged"}[meets]
        runner.say(f"  max rate: {rate_text(rate)} req/s {said}" + (" (within the noise of a bound)" if near else ""))
    answer = search.answer()
    v.max_rate = {**answer.to_json(), "stopped": search.stopped, "benchmarks": search.runs, "kept": kept}
    runner.say(f"  max rate: {answer.text()}; stopped: {search.stopped}")
    runner._notice(f"sweep: {v.name}: {answer.text()}")


async def _judged_run(
    runner: SweepRunner, settings: BenchSettings, v: VariantState, kept: list[str]
) -> tuple[BenchmarkResult | None, LatencyRecords | None]:
    """One benchmark and its per-request records; (result, None) where it cannot be judged: an error, a
    run the validity gate leaves out, or no records. One that counts is kept beside the queue."""
    r = await runner.ws.benchmark(settings=settings)
    if r.error or runner._problems(r):
        return r, None
    kept.append(keep_run(runner.queue, v, runner.model, r, runner.profile))
    if not r.latency:
        return r, None
    return r, LatencyRecords.from_json(r.latency, seed=r.bench)
