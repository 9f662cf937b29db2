"""``eagletui tune``'s side of the sweep machinery: the queue of every configuration of ``[tune]``'s space,
of which the runner launches only the ones :func:`~eagletui.core.sweep.tune.choose` picks.

The queue is a sweep's (:class:`~eagletui.session.sweep.queue.SweepQueue`: the same launch, GPU gate,
benchmarks in rounds, step profile, save after every step, reattach on resume), planned from the
exhaustive sweep of the space; :class:`Tuner` gives the runner its ``pick`` (the next launch by
expected improvement, or none: the rest are marked skipped with why) and its ``after`` (the cycle
model's forecasts from the launch just measured, read from the one ranking and kept on the variant, so a
resumed tune predicts from launches an earlier process made). What was chosen is in the queue (done,
failed or in flight) and never chosen again; the one repeat (:meth:`Tuner._repeat`) is its own entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eagletui.core.cycle.model import SpecSettings
from eagletui.core.predict.bases import _label
from eagletui.core.predict.ranking import adaptive_config, ranked
from eagletui.core.profile.sweep import Variant, variant_profile
from eagletui.core.profile.tune import SPEC_ONLY, TuneSpec
from eagletui.core.stats.confidence import Estimate, compare, fmt_sure, t_cdf
from eagletui.core.sweep.tune import ASSUMED_NOISE, Choice, Point, Ratio, choose, margin, objective_estimates
from eagletui.session.sweep.cells import DONE, FAILED, IN_FLIGHT, PENDING, SKIPPED, CellState, VariantState

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile
    from eagletui.session.sweep.queue import SweepQueue
    from eagletui.session.sweep.runner import SweepRunner

SPEC_KEYS = ("--speculative-algorithm", *SPEC_ONLY)


def point_of(profile: Profile, v: VariantState) -> Point:
    """The configuration as the chooser sees it: its speculative setting as the ranking labels it, and
    the values of its other factors."""
    try:
        prof = variant_profile(profile, Variant(v.name, v.settings))
        spec = _label(SpecSettings.from_args(prof.args)) if prof.kind.is_spec(prof.args) else _label(None)
    except ValueError:
        spec = ""
    others = tuple(sorted((k, str(x)) for k, x in v.settings.items() if k.partition(":")[2] not in SPEC_KEYS))
    return Point(v.index, v.name, spec, others)


@dataclass
class Tuner:
    """The chooser over one queue: ``pick`` and ``after`` for :class:`~eagletui.session.sweep.runner.
    SweepRunner`, the budget, and the report's facts."""

    profile: Profile
    spec: TuneSpec
    #: when the tune started (wall seconds, the queue's ``started_wall``): the budget in hours counts from it
    now: Any = None
    last: Choice | None = None
    stopped: str = ""  # why the search ended ("" while it goes on)
    say: Any = None  # progress lines (the command's stderr): each choice and why, the stop and why

    def points(self, q: SweepQueue) -> list[Point]:
        """The space's configurations (a repeat launch of one is not another configuration)."""
        return [point_of(self.profile, v) for v in q.variants if v.recheck_of is None]

    def measured(self, q: SweepQueue) -> dict[int, Estimate]:
        """Each done configuration's objective with its error (noise pooled over every launch)."""
        obj = self.spec.objective
        samples: dict[int, list[list[float]]] = {}
        for v in q.variants:
            if v.state != DONE:
                continue
            runs = samples.setdefault(v.config, [[] for _ in v.cells])  # a repeat joins its config
            for ci, c in enumerate(v.cells):
                conc = int(c.client.get("concurrency", self.profile.bench.concurrency))
                runs[ci].extend(x for x in c.objective_values(obj, conc))
        return objective_estimates(samples)

    def forecasts(self, q: SweepQueue) -> dict[int, dict[str, Ratio]]:
        out: dict[int, dict[str, Ratio]] = {}
        for v in q.variants:
            got = {}
            for label, r in (v.tune.get("forecast") or {}).items():
                if (
                    isinstance(r, list)
                    and len(r) == 4
                    and all(_finite(x) for x in r[:3])
                    and 0 < r[1] <= r[0] <= r[2]
                ):
                    got[str(label)] = Ratio(float(r[0]), float(r[1]), float(r[2]), str(r[3]))
            if got:
                out[v.index] = got
        return out

    def over_budget(self, q: SweepQueue) -> str:
        """Why the budget is spent ("" while it is not): launches, or hours since the tune started."""
        launched = sum(1 for v in q.variants if v.state != PENDING and v.state != SKIPPED)
        if launched >= self.spec.budget_launches:
            return f"the budget of {self.spec.budget_launches} launches is spent"
        hours = self.spec.budget_hours
        if hours is not None and q.started_wall is not None and self.now is not None:
            if self.now() - q.started_wall >= hours * 3600.0:
                return f"the budget of {hours:g} hours is spent"
        return ""

    def choice(self, q: SweepQueue) -> Choice:
        tried = {v.config for v in q.variants if v.state != PENDING}
        return choose(
            self.points(q),
            self.measured(q),
            self.forecasts(q),
            tried=tried,
            prior=self.spec.prior_pct / 100.0,
            confidence=self.spec.confidence,
        )

    def pick(self, q: SweepQueue) -> VariantState | None:
        """The next configuration to launch, its prediction kept on it; None: the rest are marked
        skipped with why (the budget, or nothing left can beat the best)."""
        c = self.choice(q)
        self.last = c
        spent = self.over_budget(q)
        if c.next is not None and not spent:
            v = q.variants[c.next]
            g = next((g for g in c.guesses if g.index == c.next), None)
            v.tune["chosen"] = c.why
            if g is not None:
                v.tune["predicted"] = [g.value, g.low, g.high]
            if self.say is not None:
                self.say(f"tune: next {v.name}: {c.why}")
            return v
        if not spent and c.next is None:
            again = self._repeat(q)
            if again is not None:
                return again
        why = spent or c.why
        self.stopped = why
        if self.say is not None:
            self.say(f"tune: stop: {why}")
        for v in q.variants:
            if v.state == PENDING:
                g = next((g for g in c.guesses if g.index == v.index), None)
                v.state, v.failure_kind = SKIPPED, "not tried"
                v.failure = (
                    why
                    if g is None
                    else f"{why}; predicted {g.value:.1f} ({g.low:.1f} … {g.high:.1f}) {g.why}"
                )
                v.failure = v.failure[:500]
        return None

    def _repeat(self, q: SweepQueue) -> VariantState | None:
        """The one case a configuration is launched twice: nothing left can beat the best, but the
        best and the runner-up are not told apart at the declared confidence, a second launch of the
        best would (:func:`separable_by_repeat`), and no configuration was launched again yet (once a
        tune)."""
        measured = self.measured(q)
        m = margin(measured, self.spec.confidence)
        if m is None or (m[3] is not None and m[3] >= self.spec.confidence):
            return None
        if m[3] is None and measured[m[0]].mean > measured[m[1]].mean * (1 + 2 * ASSUMED_NOISE):
            return None  # noise unknown (no repeats), but farther apart than the assumed band
        best, second = m[0], m[1]
        if any(v.recheck_of is not None for v in q.variants):
            return None  # one repeat a tune: a host whose launches never settle is said, not chased
        if not separable_by_repeat(measured[best], measured[second], self.spec.confidence):
            return None  # one more launch could not tell them apart either (a loaded host): said, not chased
        base = q.variants[best]
        v = VariantState(
            len(q.variants),
            f"{base.name} (again)",
            dict(base.settings),
            cells=[CellState(dict(c.client)) for c in base.cells],
            recheck_of=best,
            cost=list(base.cost),
            launch_key=base.launch_key,
        )
        v.tune["chosen"] = (
            f"a repeat: nothing left can beat {base.name}, but it and {q.variants[second].name} are not "
            f"told apart ({m[2]}; {self.spec.confidence * 100:g} % asked)"
        )
        q.variants.append(v)
        q.order.append(v.index)
        if self.say is not None:
            self.say(f"tune: next {v.name}: {v.tune['chosen']}")
        return v

    def after(self, runner: SweepRunner, v: VariantState) -> None:
        """Keep the cycle model's forecasts from the launch just measured (objective ratios to it)."""
        run = runner.ws.run
        if v.state != DONE or run is None:
            return
        try:
            fs, _why = ranked(runner.model.runbook, run.launch)
            ac = adaptive_config(runner.model.runbook, run.launch)
        except (ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError, IndexError):
            return  # no forecast: the chooser falls back on its prior
        concs = [int(c.client.get("concurrency", self.profile.bench.concurrency)) for c in v.cells]
        by_label: dict[str, list[tuple[float, float, float]]] = {}
        for f in fs:
            if f.measured or f.concurrency not in concs or f.base_tok_s <= 0:
                continue
            # the decision's band: the base's own noise is counted once, in the chooser's bar (both
            # sides of a ratio to one measurement share it); shown() would count it twice
            lo, hi = f.floor, f.ceiling
            mid = f.tok_s / f.base_tok_s
            # a forecast without a band of its own (an estimate of speculation off, a step count the
            # host never checked) is held as loosely as a factor the model cannot predict
            floor = self.spec.prior_pct / 100.0 if f.low is None or f.high is None else ASSUMED_NOISE
            by_label.setdefault(f.label, []).append(
                (mid, min(lo / f.base_tok_s, mid * (1 - floor)), max(hi / f.base_tok_s, mid * (1 + floor)))
            )
        out = {}
        for label, rows in by_label.items():
            if len(rows) != len(concs):
                continue
            geo = [math.exp(sum(math.log(max(r[i], 1e-9)) for r in rows) / len(rows)) for i in range(3)]
            out[label] = [
                geo[0],
                min(geo[1], geo[0]),
                max(geo[2], geo[0]),
                f"{label}: cycle model from launch #{run.launch}",
            ]
        v.tune["forecast"] = out
        if ac is not None:
            v.tune["adaptive_config"] = ac


def separable_by_repeat(best: Estimate, second: Estimate, confidence: float) -> bool:
    """Whether a second launch of ``best`` (its benchmarks doubled, the host's noise as pooled so far)
    is expected to tell it from ``second``: the difference measured, with the error the difference
    would have then, is as sure as ``confidence`` asks (the margin's own test). Unknown noise: True (only
    a repeat can say). Found on the simulated H200 under load: +4.2 % ± 11.1 %, 75 % sure, was launched
    again, which could reach 81 % at best."""
    d = compare(best, second, confidence)
    if d.se is None or d.df is None or not d.se or best.se is None or second.se is None:
        return True
    se_after = math.sqrt(best.se**2 / 2.0 + second.se**2)
    return t_cdf(abs(d.diff) / se_after, d.df + best.n) >= confidence  # its benchmarks join the pool


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def tune_report(tuner: Tuner, q: SweepQueue) -> dict[str, Any]:
    """The result: the best setting with its margin and confidence, every launch predicted vs measured,
    what was never tried and why, and SGLang's adaptive form where the best launch's ranking gives one."""
    measured = tuner.measured(q)
    conf = tuner.spec.confidence
    launches = []
    for v in sorted(
        (v for v in q.variants if v.state not in (PENDING, SKIPPED)), key=lambda v: v.started_wall or 0
    ):
        e = measured.get(v.config)  # a repeat's row: the configuration's value over both launches
        pred = v.tune.get("predicted")
        row: dict[str, Any] = {
            "config": v.name,
            "settings": v.settings,
            "state": v.state,
            "measured": None if e is None else round(e.mean, 2),
            "chosen_because": v.tune.get("chosen", ""),
        }
        if isinstance(pred, list) and len(pred) == 3 and all(_finite(x) for x in pred):
            row["predicted"] = round(pred[0], 2)
            row["predicted_band"] = [round(pred[1], 2), round(pred[2], 2)]
            if e is not None:
                row["error_pct"] = round((pred[0] / e.mean - 1) * 100.0, 1)
                row["within_band"] = pred[1] <= e.mean <= pred[2]
        if v.state == FAILED:
            row["failure"] = f"{v.failure_kind}: {v.failure}"
        launches.append(row)
    never = [{"config": v.name, "why": v.failure} for v in q.variants if v.state == SKIPPED]
    best: dict[str, Any] | None = None
    if measured:
        b = max(measured, key=lambda i: measured[i].mean)
        bv = q.variants[b]
        best = {"config": bv.name, "settings": bv.settings, "value": round(measured[b].mean, 2)}
        m = margin(measured, conf)
        if m is not None:
            best["runner_up"] = q.variants[m[1]].name
            best["margin"] = m[2]
            best["sure"] = None if m[3] is None else fmt_sure(m[3])
        if bv.tune.get("adaptive_config"):
            best["speculative_adaptive_config"] = bv.tune["adaptive_config"]
    in_flight = [v.name for v in q.variants if v.state in IN_FLIGHT]
    return {
        "objective": {**tuner.spec.objective.to_json(), "text": tuner.spec.objective.describe()},
        "space": len(q.variants),
        "launches": sum(1 for v in q.variants if v.state in (DONE, FAILED)),
        "budget_launches": tuner.spec.budget_launches,
        "best": best,
        "tried": launches,
        "never_tried": never,
        "in_flight": in_flight,
        "stopped": tuner.stopped
        or next((v.failure.partition(";")[0] for v in q.variants if v.state == SKIPPED), None),
    }
