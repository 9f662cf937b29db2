"""The one ranking of the next launch: every candidate setting at every concurrency a spec run measured,
with its predicted tok/s and band, and the per-concurrency decision every recommendation reads (the
``next_launch`` diagnosis, the why line, SGLang's ``--speculative-adaptive-config``, ``bench --json``).

A candidate wins a concurrency only when the low edge of its band beats what ran by :data:`WORTH`: a
prediction whose band straddles the measured setting is "undecided", and says what would decide it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from eagletui.core.predict.bases import _label, _reference
from eagletui.core.predict.checks import Record, kind_of, track_record
from eagletui.core.predict.forecast import WORTH, Forecast, forecasts
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.run import Group, Run


@dataclass(frozen=True)
class Decision:
    """What the ranking decides at one concurrency: ``winner`` beats what ran by :data:`WORTH` even at
    the low edge of its band; ``open`` (no winner) names the best candidate whose band reaches past that
    margin and whose prediction is :func:`worth_a_launch`: undecided until it is measured; neither: keep
    what ran."""

    concurrency: int
    base_label: str
    base_tok_s: float
    winner: Forecast | None
    open: Forecast | None
    eager: bool = False
    #: speculation off, estimated (no no-spec run measured), whose band reaches past what this decision
    #: picks: whether to draft at all stays open until a no-spec launch is measured
    off_open: Forecast | None = None

    @property
    def steps(self) -> int | None:
        """The step count this concurrency should run (0: no drafting), None while undecided."""
        if self.winner is not None:
            return 0 if self.winner.settings is None else self.winner.settings.steps
        return None if self.open is not None else -1

    def text(self) -> str:
        off = self.off_open
        if off is None:
            return self._text()
        return (
            f"{self._text()}; speculation off not ruled out (estimated {off.tok_s:.1f} tok/s, "
            f"{off.band_text()}): bench --vs-no-spec to know"
        )

    def _text(self) -> str:
        c = self.concurrency
        if self.winner is not None:
            f = self.winner
            kind = "measured" if f.measured else "predicted"
            band = f"; {f.band_text()}" if not f.measured and f.band_text() else ""
            return f"at concurrency {c}: {f.label} ({kind} {f.tok_s:.1f} {f.unit}, {f.delta_pct:+.0f} %{band})"
        if self.open is not None:
            f = self.open
            why = "eager decode: the profile and runs at graph batch sizes do not carry" if self.eager else (
                f"its band {f.band_text()} reaches both sides"
            )
            return (
                f"at concurrency {c}: undecided — {f.label} predicted {f.tok_s:.1f} {f.unit} ({f.delta_pct:+.0f} %), "
                f"{why}: launch it to know"
            )
        return (
            f"at concurrency {c}: keep {self.base_label} (nothing predicted beats it by {WORTH * 100:.0f} % at the "
            "low edge of its band, nor by more than its noise at the prediction)"
        )


def ranked(book: RunBook, launch: int) -> tuple[list[Forecast], str]:
    """:func:`~eagletui.core.predict.forecast.forecasts` with this host's track record in each band:
    where earlier predictions of the same kind of change were checked, the errors they made widen the
    band (a missed prediction lowers the confidence in the next one of its kind); then in the units of
    the book's objective (:func:`in_objective`), so every decision optimises what the profile asks."""
    fs, why = forecasts(book, launch)
    if not fs:
        return fs, why
    record = track_record(book)
    return in_objective(book, launch, [_with_record(f, record.get(kind_of(f.label))) for f in fs], why)


def in_objective(book: RunBook, launch: int, fs: list[Forecast], why: str) -> tuple[list[Forecast], str]:
    """The forecasts (aggregate tok/s) as the book's :class:`~eagletui.core.profile.objective.Objective`
    values. ``tok_s_per_user``: each number ÷ its concurrency. ``goodput``: the spec run's and a measured
    no-spec reference's own goodput at that concurrency (their per-request records under the ``[slo]``);
    a predicted setting keeps its tok/s scaled by the share of the spec run's tokens that met the SLO,
    with a band from 0 (the cycle model predicts no latency: it may meet the SLO for no request) to its
    tok/s high edge (every request meets it), so it can be "undecided: launch it to know", never a winner
    on a guess. No goodput to compare with (no SLO, no records): no forecasts, and why."""
    goal = book.objective
    if goal.kind == "tok_s":
        return fs, why
    if goal.kind == "tok_s_per_user":
        return [_scaled(f, 1.0 / max(1, f.concurrency), goal.unit) for f in fs], why
    run = book.runs[launch]
    ref = _reference(book, run)
    out = []
    for f in fs:
        base = _goodput(book, run, f.concurrency)
        if base is None or f.base_tok_s <= 0:
            return [], (
                f"the objective is goodput under the SLO and launch {launch}'s benchmark at concurrency "
                f"{f.concurrency} has no goodput (no [slo], or a runner without per-request records)"
            )
        if f.measured:
            own = _goodput(book, ref, f.concurrency) if ref is not None else None
            if own is None:
                continue  # the reference's goodput is unknown: it cannot be compared
            out.append(replace(f, tok_s=own, base_tok_s=base, low=None, high=None, unit=goal.unit))
            continue
        share = base / f.base_tok_s
        out.append(
            replace(
                f,
                tok_s=f.tok_s * share,
                base_tok_s=base,
                low=0.0,
                high=f.ceiling,
                band="goodput is not predicted (the cycle model predicts tok/s, not latencies)",
                unit=goal.unit,
            )
        )
    return out, why


def _scaled(f: Forecast, k: float, unit: str) -> Forecast:
    low = None if f.low is None else f.low * k
    high = None if f.high is None else f.high * k
    return replace(f, tok_s=f.tok_s * k, base_tok_s=f.base_tok_s * k, low=low, high=high, unit=unit)


def _goodput(book: RunBook, run: Run, concurrency: int) -> float | None:
    g = next((g for g in run.groups() if g.concurrency == concurrency), None)
    return None if g is None else book.slo_stats(run, g).goodput_tok_s


def objective_value(book: RunBook, run: Run, group: Group) -> float | None:
    """A measured group's value under the book's objective: what a measurement is compared with a
    ranked forecast by (the same units)."""
    if book.objective.kind == "goodput":
        return book.slo_stats(run, group).goodput_tok_s
    tok = group.metric("tok_s").mean
    return None if tok is None else book.objective.value(tok, group.concurrency)


def _with_record(f: Forecast, rec: Record | None) -> Forecast:
    if f.measured or rec is None:
        return f
    band = rec.band()
    if band is None:
        return f
    lo_pct, hi_pct = band
    # a prediction that errs by e% measures pred ÷ (1 + e): the highest error gives the lowest outcome
    low = f.tok_s / (1.0 + hi_pct / 100.0) if hi_pct > -100 else f.tok_s
    high = f.tok_s / (1.0 + lo_pct / 100.0) if lo_pct > -100 else f.tok_s
    if f.low is not None and f.high is not None:
        low, high = min(low, f.low), max(high, f.high)
        source = f"{rec.describe()} and the model's alternatives"
    else:
        source = rec.describe()
    # the checks' errors hold how far launches land apart on this host: the prior gives way to them
    return replace(f, low=low, high=high, band=source, launch_noise=0.0)


def launch_bar(measured: float, noise: float) -> float:
    """What a prediction must beat for its launch to be worth making: the measured value lifted by that
    measurement's noise (relative half-width), never by less than :data:`WORTH`. ``n`` and ``tune`` both
    read it (:func:`worth_a_launch`, :func:`~eagletui.core.sweep.tune.choose`)."""
    return measured * (1.0 + max(WORTH, noise))


def worth_a_launch(f: Forecast) -> bool:
    """Whether a launch could show ``f`` better than what ran: its prediction itself beats the measured
    base by more than that measurement's noise (and :data:`WORTH`). A band that merely reaches past the
    base is no reason: a model whose alternatives span ±15 % has such a band for every neighbour, and a
    candidate predicted within the base's noise could not be told apart from it by one launch anyway
    (the H200 demo walked from its measured best, steps 5, to steps 7 predicted +3 % against a ±5 %
    base)."""
    return f.measured or f.tok_s > launch_bar(f.base_tok_s, f.noise)


def decisions(fs: list[Forecast], base_label: str) -> dict[int, Decision]:
    """The decision at each concurrency of ``fs``: the best candidate that wins at the low edge of its
    band, else the best one whose band still reaches past :data:`WORTH` and whose prediction is
    :func:`worth_a_launch` (undecided: launch it to know), else keep. An eager
    concurrency (above the largest CUDA-graph batch of either side) is decided only by a measurement: a
    measured setting that wins, else undecided while any candidate is only predicted."""
    out: dict[int, Decision] = {}
    for c in sorted({f.concurrency for f in fs}):
        rows = sorted((f for f in fs if f.concurrency == c), key=lambda f: -f.tok_s)
        base = rows[0].base_tok_s
        eager = any(f.eager for f in rows)
        need = base * (1 + WORTH)
        winners = [f for f in rows if (f.measured or not eager) and f.floor > need]
        winner = max(winners, key=lambda f: f.floor) if winners else None
        open_ = None
        if winner is None and eager:
            # nothing measured wins, and a prediction cannot say "keep" either: the best one is open
            open_ = next((f for f in rows if not f.measured), None)
        elif winner is None:
            open_ = next((f for f in rows if f.ceiling > need and worth_a_launch(f)), None)
        out[c] = Decision(c, base_label, base, winner, open_, eager, _off_open(rows, winner, open_, need))
    return out


def _off_open(rows: list[Forecast], winner: Forecast | None, open_: Forecast | None, need: float) -> Forecast | None:
    """Speculation off estimated from a speculative cycle (no no-spec run) whose band still reaches past
    what the decision picks (the winner's low edge, else what ran): not decided against until measured."""
    off = next((f for f in rows if f.settings is None and not f.measured), None)
    if off is None or off is open_ or off is winner:
        return None
    bar = winner.floor if winner is not None else need
    return off if off.ceiling > bar else None


def adaptive_config(book: RunBook, launch: int) -> dict[str, Any] | None:
    """The JSON file ``--speculative-adaptive-config`` of SGLang 0.5.23 reads, from the one ranking: per
    measured concurrency (a batch-size key) the step count the decision names, the measured one where it
    keeps what ran (0: no drafting at that batch size). None without predictions, while any concurrency
    is undecided or drafting at all is (speculation off only estimated, its band reaching past the
    choice: a config must not rest on a guess), and when no drafting wins everywhere (then the answer
    is speculation off, not adaptive speculation). SGLang requires the launch's
    ``--speculative-num-steps`` to be one of the candidate steps (``_init_adaptive_speculative_params``)."""
    fs, _ = ranked(book, launch)
    if not fs:
        return None
    run = book.runs[launch]
    s = run.spec_settings
    if s is None or s.topk != 1:
        return None  # adaptive speculation runs topk 1 only (adaptive_unsupported_reason)
    out: dict[str, Any] = {}
    for c, d in decisions(fs, _label(s)).items():
        if d.steps is None or d.off_open is not None:
            return None
        out[str(c)] = {"candidate_steps": [s.steps if d.steps < 0 else d.steps]}
    if all(v["candidate_steps"] == [0] for v in out.values()):
        return None
    return out
