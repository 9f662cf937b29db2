"""A spec-vs-no-spec comparison long enough for the band it needs: the one loop headless ``bench
--vs-no-spec --decide-within`` and the TUI's ``D`` run.

Two runs a side on a short benchmark rarely tell a few per cent from the run-to-run noise (run 2 of
shared/fixtures/sglang-0.5.17-h200-turn4: bands of ±44 % and ±12 % around +7 % and +0.15 %). As the
sweep's adaptive repeats do (docs/sweeps.md), once both halves are measured the no-spec server, still up,
runs again at each concurrency that is within its noise, one run at a time to the point nearest a
decision, while more runs of that side alone could still put the difference outside its band
(:func:`eagletui.core.runs.call.closable`: the spec side's runs, its server stopped, bound the band from
below) and within a stated time limit (``--decide-within`` / the timings' ``sweep.decide_s``). What was
added, what stayed undecided and why, and the time it took come back (``bench --json``'s ``decide``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from eagletui.core.runs.book import RunBook
from eagletui.core.runs.call import MAX_RUNS, WITHIN, closable
from eagletui.core.runs.economics import ConcurrencyRow
from eagletui.session.model import SessionModel

if TYPE_CHECKING:
    from eagletui.workspace import Workspace


def open_rows(book: RunBook, spec_launch: int, base_launch: int) -> list[ConcurrencyRow]:
    """The judged points within their noise that more runs of ``base_launch`` (the spec launch's
    no-spec reference) could still decide."""
    ref = book.reference(spec_launch)
    if ref is None or ref.run.launch != base_launch:
        return []
    return [
        r
        for r in book.concurrency_table(spec_launch)
        if r.judged and r.call == WITHIN and len(r.sides[1]) < MAX_RUNS
        if closable(r.sides[0], r.sides[1], r.noise, MAX_RUNS - len(r.sides[1]))
    ]


def spec_launch_for(book: RunBook, base_launch: int) -> int | None:
    """The latest spec launch whose no-spec reference is ``base_launch`` (the server up now) with a point
    more runs of it could decide; None when there is none."""
    for n in sorted(book.runs, reverse=True):
        if n != base_launch and book.runs[n].is_spec and open_rows(book, n, base_launch):
            return n
    return None


def why_open(model: SessionModel, spec_launch: int) -> dict[str, str]:
    """Each judged point still within its noise, with why no more runs were made."""
    out: dict[str, str] = {}
    for r in model.runbook.concurrency_table(spec_launch):
        if not r.judged or r.call != WITHIN:
            continue
        if closable(r.sides[0], r.sides[1], r.noise, MAX_RUNS - len(r.sides[1])):
            out[str(r.concurrency)] = "the time limit"
        else:
            n = len(r.sides[0])
            out[str(r.concurrency)] = (
                f"more no-spec runs cannot decide it: the spec side's {n} run{'s' if n != 1 else ''} bound "
                "the band (--repeats more, or longer runs: more prompts or tokens a request)"
            )
    return out


async def decide(
    ws: Workspace,
    model: SessionModel,
    spec_launch: int,
    base_launch: int,
    limit_s: float,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """More runs of the no-spec server where they can decide a point within its noise, within
    ``limit_s`` seconds; each run said through ``say``. The profile's benchmark settings are put back
    after (a run at another concurrency must not become the user's next ``b``)."""
    clock = ws.timings.clock
    start = clock.monotonic()
    took: dict[int, float] = {}  # seconds one run (its warm-up included) took at each concurrency
    extra: dict[int, int] = {}
    prof = ws.running_profile or ws.profile
    kept = prof.bench
    try:
        while True:
            rows = open_rows(model.runbook, spec_launch, base_launch)
            if not rows:
                break
            row = min(rows, key=lambda r: (r.runs_needed or MAX_RUNS, r.concurrency))
            c = row.concurrency
            if clock.monotonic() - start + took.get(c, 0.0) > limit_s:
                break
            prof.bench = dataclasses.replace(kept, concurrency=c)
            t0 = clock.monotonic()
            r = await ws.benchmark()
            took[c] = clock.monotonic() - t0
            extra[c] = extra.get(c, 0) + 1
            say(
                f"concurrency {c}: within noise ({row.gap.short() if row.gap else '?'}), "
                f"no-spec run {len(row.sides[1]) + 1}: {r.output_throughput:.1f} tok/s"
            )
            if r.error:
                break  # a failing server is no place to add runs: the run book says what failed
    finally:
        prof.bench = kept
    return {
        "limit_s": limit_s,
        "used_s": round(clock.monotonic() - start, 3),
        "extra_no_spec_runs": {str(c): n for c, n in sorted(extra.items())},
        "undecided": why_open(model, spec_launch),
    }
