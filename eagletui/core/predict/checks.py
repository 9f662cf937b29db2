"""Predicted vs measured: a later launch that ran a predicted setting checks the prediction, against the
means over every launch of each setting where either was launched more than once.

The checks are the model's track record on this host: the band a later prediction carries comes from
them (:mod:`eagletui.core.predict.ranking`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from eagletui.core.predict.bases import _label, timed_groups
from eagletui.core.predict.forecast import WORTH, forecasts
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.compare import launch_differences
from eagletui.core.runs.run import Group, Run
from eagletui.core.stats.sample import percentile


def _error_pct(predicted: float, measured: float) -> float:
    """(predicted − measured) ÷ measured, in per cent."""
    return (predicted / measured - 1.0) * 100.0 if measured > 0 else math.inf


@dataclass(frozen=True)
class Pooled:
    """The same prediction against the means over every launch of each setting so far: the predicted
    ratio (this setting ÷ the source's, as the model gives it) times the source setting's mean, against
    this setting's mean. What a check can rest on where one setting's tok/s moves from launch to launch
    more than the prediction's margin (the lent H200: ±13-16 %)."""

    predicted: float
    measured: float
    source_launches: tuple[int, ...]
    launches: tuple[int, ...]
    #: (max − min) ÷ mean of each setting's launches: how far one launch of it can be from another
    source_spread_pct: float
    spread_pct: float

    @property
    def error_pct(self) -> float:
        return _error_pct(self.predicted, self.measured)

    def to_json(self) -> dict[str, Any]:
        return {
            "predicted_tok_s": round(self.predicted, 2),
            "measured_tok_s": round(self.measured, 2),
            "error_pct": round(self.error_pct, 2),
            "source_launches": list(self.source_launches),
            "launches": list(self.launches),
            "source_spread_pct": round(self.source_spread_pct, 2),
            "spread_pct": round(self.spread_pct, 2),
        }


@dataclass(frozen=True)
class Check:
    """A prediction made from run ``source_launch`` for the setting run ``launch`` then ran; ``pooled``
    where either setting was launched more than once (then the means decide: see :class:`Pooled`)."""

    label: str
    concurrency: int
    predicted: float
    measured: float
    source_launch: int
    launch: int
    source: str
    pooled: Pooled | None = None
    #: the band the prediction was shown with (aggregate tok/s; None: it had none)
    band: tuple[float, float] | None = None

    @property
    def error_pct(self) -> float:
        return _error_pct(self.predicted, self.measured)

    @property
    def missed(self) -> bool:
        """The measurement (the means where there are several launches) fell outside the stated band."""
        if self.band is None or self.predicted <= 0 or min(self.band) <= 0:
            return False
        # the band as errors (predicted − measured) ÷ measured, widened by the difference no launch is
        # made for (a ±0 band is not missed by 0.5 %); judged by the decisive error (the means' where
        # there are several launches)
        e_lo = self.predicted / self.band[1] - 1.0 - WORTH
        e_hi = self.predicted / self.band[0] - 1.0 + WORTH
        return not e_lo * 100.0 <= self.decisive_error_pct <= e_hi * 100.0

    @property
    def decisive_error_pct(self) -> float:
        """The error the check is judged by: against the means where there are several launches."""
        return self.pooled.error_pct if self.pooled is not None else self.error_pct

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "setting": self.label,
            "concurrency": self.concurrency,
            "predicted_tok_s": round(self.predicted, 2),
            "measured_tok_s": round(self.measured, 2),
            "error_pct": round(self.error_pct, 2),
            "predicted_from": self.source_launch,
            "launch": self.launch,
            "parts": self.source,
        }
        if self.pooled is not None:
            out["over_launches"] = self.pooled.to_json()
        if self.band is not None:
            out["band"] = [round(self.band[0], 2), round(self.band[1], 2)]
            out["outside_band"] = self.missed
        return out


def _before(book: RunBook, launch: int) -> RunBook:
    """The book as it stood before ``launch``: what a prediction for it could have known."""
    view = copy.copy(book)
    view.runs = {n: r for n, r in book.runs.items() if n < launch}
    view._cache = {}
    view._cache_key = (-1, 0)
    view.external = None
    return view


def checks(book: RunBook, launch: int) -> list[Check]:
    """Predictions that earlier spec runs of the same launch (but for the speculative flags) made, from
    what was known before ``launch``, for the setting ``launch`` ran, against what it measured, per shared
    concurrency and workload."""
    run = book.runs.get(launch)
    if run is None:
        return []
    groups = timed_groups(run) if run.is_spec else run.groups()
    if not groups:
        return []
    mine = run.spec_settings if run.is_spec else None
    if run.is_spec and mine is None:
        return []
    earlier = [n for n in sorted(book.runs) if n < launch]
    if not earlier:
        return []
    view = _before(book, launch)
    out: list[Check] = []
    done: set[int] = set()  # concurrencies already checked (against the nearest earlier spec run)

    def nearness(n: int) -> tuple[int, int]:
        """The closest setting first (a neighbour is what the model predicts best), then the latest."""
        s = book.runs[n].spec_settings
        far = abs(s.steps - mine.steps) if s is not None and mine is not None else 0
        return far, -n

    for n in sorted(earlier, key=nearness):
        src = book.runs[n]
        if not src.is_spec or src.spec_settings == mine or launch_differences(src, run):
            continue
        fs, _ = forecasts(view, n)
        fs = [f for f in fs if f.concurrency not in done]
        for f in fs:
            if f.measured or _label(f.settings) != _label(mine):
                continue
            g = next((g for g in groups if g.concurrency == f.concurrency), None)
            sg = next((g for g in timed_groups(src) if g.concurrency == f.concurrency), None)
            if g is None or sg is None or not g.matches(sg):
                continue
            tok = g.metric("tok_s").mean
            base = sg.metric("tok_s").mean
            if tok:
                pooled = _pooled(book, src, run, g, f.tok_s / base) if base else None
                band = f.shown() if f.low is not None and f.high is not None else None
                out.append(Check(f.label, f.concurrency, f.tok_s, tok, n, launch, f.source, pooled, band))
        done |= {c.concurrency for c in out}
    return sorted(out, key=lambda c: c.concurrency)


def _same_setting(a: Run, b: Run) -> bool:
    """``b`` is another launch of ``a``'s setting: the same launch but for nothing speculative, and the
    same speculative settings (or both without speculation)."""
    if a.is_spec != b.is_spec or launch_differences(a, b):
        return False
    return not a.is_spec or a.spec_settings == b.spec_settings


def _launch_rates(book: RunBook, like: Run, upto: int, g: Group) -> list[tuple[int, float]]:
    """(launch, tok/s) of every launch up to ``upto`` of ``like``'s setting at ``g``'s concurrency and
    workload."""
    out = []
    for n in sorted(book.runs):
        r = book.runs[n]
        if n > upto or not _same_setting(like, r):
            continue
        groups = timed_groups(r) if r.is_spec else r.groups()
        mine = next((x for x in groups if x.concurrency == g.concurrency and x.matches(g)), None)
        tok = mine.metric("tok_s").mean if mine is not None else None
        if tok:
            out.append((n, tok))
    return out


def _pooled(book: RunBook, src: Run, run: Run, g: Group, ratio: float) -> Pooled | None:
    """The prediction against the means of both settings' launches up to ``run``'s (None when each was
    launched once: then the single check is all there is)."""
    a = _launch_rates(book, src, run.launch, g)
    b = _launch_rates(book, run, run.launch, g)
    if not a or not b or (len(a) < 2 and len(b) < 2):
        return None

    def spread(xs: list[tuple[int, float]]) -> float:
        v = [t for _, t in xs]
        m = sum(v) / len(v)
        return (max(v) - min(v)) / m * 100.0 if m > 0 else 0.0

    mean_a = sum(t for _, t in a) / len(a)
    mean_b = sum(t for _, t in b) / len(b)
    return Pooled(
        ratio * mean_a, mean_b, tuple(n for n, _ in a), tuple(n for n, _ in b), spread(a), spread(b)
    )


@dataclass(frozen=True)
class Record:
    """This host's track record for one kind of prediction (``steps`` changes or ``speculation off``):
    the decisive error of every check so far, in per cent (predicted − measured ÷ measured)."""

    kind: str
    errors: tuple[float, ...]

    def band(self) -> tuple[float, float] | None:
        """The errors a new prediction of this kind is expected to make (low, high, per cent): the
        10–90 % quantiles from three checks on, the observed range widened by 5 points before, and
        always including 0; None with no check."""
        e = sorted(self.errors)
        if not e:
            return None
        if len(e) >= 3:
            lo, hi = percentile(e, 10), percentile(e, 90)
        else:
            lo, hi = e[0] - 5.0, e[-1] + 5.0
        return min(lo, 0.0), max(hi, 0.0)

    def describe(self) -> str:
        n = len(self.errors)
        return f"{n} check{'s' if n != 1 else ''} on this host"


def kind_of(label: str) -> str:
    """What kind of change a prediction is: a step count, or speculation off (estimated)."""
    return "speculation off" if label == "speculation off" else "steps"


def track_record(book: RunBook) -> dict[str, Record]:
    """Every check in the book so far, by kind of change: how far this host's predictions missed."""
    errors: dict[str, list[float]] = {}
    for n in sorted(book.runs):
        for ck in checks(book, n):
            e = ck.decisive_error_pct
            if math.isfinite(e):
                errors.setdefault(kind_of(ck.label), []).append(e)
    return {k: Record(k, tuple(v)) for k, v in errors.items()}
