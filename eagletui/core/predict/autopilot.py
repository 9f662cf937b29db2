"""What ``n`` stages: the launch the one ranking puts first, its flags, its prediction and band, and why
it is first — or why nothing is worth a launch.

Read from :func:`~eagletui.core.predict.ranking.ranked` and :func:`~eagletui.core.predict.ranking.decisions`
of the latest speculative run that timed its cycles, so ``n``, the why line, ``bench --json`` and
``eagletui tune`` rest on the same ranking and the same track record (a prediction that missed its
band widens the next band of its kind on this host). Without a prediction, the launch the model needs
first: speculation off (the no-spec step of this host, which also answers whether speculation pays).
A setting this session already measured is never proposed again: its measurement stands. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagletui.core.predict.bases import _label, timed_groups
from eagletui.core.predict.forecast import WORTH, Forecast
from eagletui.core.predict.ranking import decisions, objective_value, ranked
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.compare import launch_differences
from eagletui.core.runs.run import Run

SPEC_ALGORITHM = "--speculative-algorithm"


@dataclass(frozen=True)
class Proposal:
    """The next launch (``flags``: ``--flag`` → value, None = unset) and why; no flags: keep what runs
    (``why`` says why)."""

    label: str
    why: str
    flags: dict[str, Any] = field(default_factory=dict)
    forecast: Forecast | None = None
    source_launch: int | None = None

    def text(self) -> str:
        """The proposal as the ``n`` screen opens: what, predicted how much and how sure, why first."""
        f = self.forecast
        if not self.flags:
            return self.why
        head = f"next launch: {self.label}"
        if f is not None and not f.measured:
            band = f.band_text()
            head += (
                f" — predicted {f.tok_s:.1f} {f.unit} at concurrency {f.concurrency} "
                f"({f.delta_pct:+.0f} % vs #{self.source_launch}{'; ' + band if band else ''})"
            )
        return f"{head}\nwhy first: {self.why}"


def _measured_like(book: RunBook, run: Run, label: str) -> Run | None:
    """A run of this session with ``label``'s setting, the same launch but for the speculative flags."""
    for other in book.runs.values():
        if other is run or launch_differences(run, other):
            continue
        mine = _label(other.spec_settings) if other.is_spec else _label(None)
        if mine == label and (other.good_results or timed_groups(other)):
            return other
    return None


def latest_spec(book: RunBook) -> Run | None:
    """The latest speculative run whose benchmarks timed its cycles (what the ranking reads)."""
    for n in sorted(book.runs, reverse=True):
        r = book.runs[n]
        if r.is_spec and timed_groups(r):
            return r
    return None


def propose(book: RunBook, current: int | None) -> Proposal:
    """The launch ``n`` stages after run ``current`` (the running launch), from the one ranking."""
    run = latest_spec(book)
    if run is None:
        if current is not None and current in book.runs and book.runs[current].good_results:
            return Proposal(
                "keep", "no speculative run measured: nothing for the cycle model to predict from"
            )
        return Proposal("keep", "nothing measured yet: press b to benchmark the running server first")
    fs, why = ranked(book, run.launch)
    if not fs:
        off = _measured_like(book, run, _label(None))
        if off is None:
            return Proposal(
                _label(None),
                f"the cycle model has no prediction from #{run.launch} ({why or 'no parts'}): "
                "a no-spec launch gives it this host's step and says whether speculation pays at all",
                {SPEC_ALGORITHM: None},
                None,
                run.launch,
            )
        return Proposal(
            "keep", f"no prediction from #{run.launch}: {why or 'no parts'} (press P for a step profile)"
        )
    decided = decisions(fs, _label(run.spec_settings))
    algo = run.args.get(SPEC_ALGORITHM)
    running = book.runs.get(current) if current is not None else None
    picks: list[tuple[Forecast, str]] = []
    for d in decided.values():
        if d.winner is not None:
            picks.append((d.winner, f"wins at concurrency {d.concurrency} even at the low edge of its band"))
        elif d.open is not None:
            picks.append(
                (
                    d.open,
                    f"undecided at concurrency {d.concurrency}: predicted {d.open.delta_pct:+.0f} %, beyond the "
                    f"noise of what ran, and its band reaches both sides",
                )
            )
    # decided winners before undecided ones, then the largest predicted gain
    picks.sort(key=lambda p: (not p[1].startswith("wins"), -p[0].delta_pct))
    for f, reason in picks:
        if f.measured or _measured_like(book, run, f.label) is not None:
            continue  # measured already: its measurement stands (below), never launched again for a guess
        best = _best_measured(book, run, f.concurrency)
        if best is not None and f.ceiling <= best[2] * (1 + WORTH):
            continue  # cannot beat what was measured here, even at the top of its band
        flags = f.flags()
        if f.settings is not None and algo is not None:
            flags = {SPEC_ALGORITHM: algo, **flags}
        return Proposal(f.label, f"{reason} (ranking from #{run.launch}, {f.source})", flags, f, run.launch)
    c = min(decided)
    best = _best_measured(book, run, c)
    if best is None or (running is not None and best[0].launch == running.launch):
        what = f"#{best[0].launch} {best[1]} ({best[2]:.1f} {book.objective.unit})" if best is not None else "what runs"
        return Proposal(
            "keep", f"{what} is the best measured at concurrency {c} and no prediction beats it: keep it"
        )
    other, label, tok = best
    flags = {SPEC_ALGORITHM: None} if not other.is_spec else _spec_flags(other)
    return Proposal(
        label,
        f"the best measured at concurrency {c}: #{other.launch} {label} {tok:.1f} {book.objective.unit}, "
        "and no prediction beats it"
        " (back to it)",
        flags,
        None,
        run.launch,
    )


def _spec_flags(run: Run) -> dict[str, Any]:
    """The speculative flags of a measured run, to launch its setting again."""
    keys = (
        SPEC_ALGORITHM,
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
    )
    return {k: run.args.get(k) for k in keys}


def _best_measured(book: RunBook, run: Run, concurrency: int) -> tuple[Run, str, float] | None:
    """The best value of the book's objective (tok/s by default) measured at ``concurrency`` (the same workload as ``run``'s) by a run of the same
    launch but for the speculative flags, ``run`` included."""
    base = next((g for g in timed_groups(run) if g.concurrency == concurrency), None)
    if base is None:
        return None
    best: tuple[Run, str, float] | None = None
    for other in book.runs.values():
        if other is not run and launch_differences(run, other):
            continue
        g = other.group_like(base)
        tok = objective_value(book, other, g) if g is not None else None
        if tok and (best is None or tok > best[2]):
            best = (other, _label(other.spec_settings) if other.is_spec else _label(None), tok)
    return best
