"""A sweep's decisions: when a cell has been run often enough, which setting wins, and how sure that is.

A **cell** is one server config benchmarked at one client setting (a concurrency, a prompt set …);
cells at the same client setting form a **group** and compete. The rules (docs/sweeps.md):

* **Adaptive repeats.** A cell runs at least ``min_repeats`` (never fewer than two: one run says nothing
  about noise) and then again until its place is decided — against the leader of its group (the
  runner-up when it leads itself) and against its neighbours by mean, one above and one below, its
  confidence interval of the difference either excludes zero (*separated*), or lies within
  ``± tie_pct`` (*a tie*: too close to matter), or could not do either even after ``max_repeats`` runs
  of this cell, the other cell's own error and the present noise estimate projected (*limited*: more
  runs here would be wasted) — or ``max_repeats`` is reached. The first cell of a group has nothing to
  compare with yet; it is the yardstick of every later one and cannot run again once its launch is
  over, so it runs one more than the floor.
* **Fixed repeats.** ``repeats = N``: every cell runs N times, nothing else.
* **Decisions.** In each group the leader is the highest mean; every cell *not* separated from it is
  within the noise, and of those the **cheapest** wins (:func:`cost_of`: speculation off, then fewer
  draft tokens, steps and top-k; then the order the sweep declares, the reference level first). The
  ranking repeats that on what is left. Each decision carries the comparison that decided it — against
  the winner's nearest competitor by mean, not the config the cost order put second — and says how sure
  it is (:meth:`~eagletui.core.stats.confidence.Difference.sure`); where the ranking puts a lower mean
  above a higher one it says so (a tie within the noise, gone to the cheaper setting).
* **Noise** is pooled over every cell of the sweep with two or more runs (a group whose own pooled
  noise is larger uses that: noise is not the same at every concurrency).

Pure: plain numbers in, decisions out. :mod:`eagletui.session.sweep.queue` feeds it the queue's runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagletui.core.profile.sweep import RepeatPolicy
from eagletui.core.stats.confidence import (
    DEFAULT_CONFIDENCE,
    Difference,
    Estimate,
    Noise,
    compare,
    estimate,
    fmt_sure,
    pooled_noise,
    t_critical,
)


def cost_of(args: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """How expensive a server's speculation is, cheapest first: off, then fewer draft tokens, steps and
    top-k (each token drafted is work the verify may throw away). Unset numbers count as 0."""

    def num(flag: str) -> int:
        v = args.get(flag)
        if v is None or isinstance(v, bool):
            return 0
        try:
            return int(float(v))
        except (TypeError, ValueError):
            return 0

    algo = args.get("--speculative-algorithm")
    if algo is None or algo is False or str(algo).strip() in ("", "None", "none"):
        return (0, 0, 0, 0)
    return (
        1,
        num("--speculative-num-draft-tokens"),
        num("--speculative-num-steps"),
        num("--speculative-eagle-topk"),
    )


@dataclass(frozen=True)
class Cell:
    """One server config (``config``: its index, the declared order) at one client setting (``group``)
    with its valid tok/s runs."""

    config: int
    group: int
    values: tuple[float, ...]
    cost: tuple[int, ...] = ()

    @property
    def n(self) -> int:
        return len(self.values)


def _positive(values: Sequence[float]) -> list[float]:
    return [v for v in values if isinstance(v, int | float) and math.isfinite(v) and v > 0]


def noise_for(cells: Sequence[Cell], group: int | None = None) -> Noise | None:
    """The sweep's pooled noise; for ``group``, that group's own when it is larger (and has 2+ d.f.)."""
    overall = pooled_noise(c.values for c in cells)
    if group is None:
        return overall
    own = pooled_noise(c.values for c in cells if c.group == group)
    if own is not None and own.df >= 2 and (overall is None or own.cv > overall.cv):
        return own
    return overall


def _estimate(cell: Cell, noise: Noise | None) -> Estimate | None:
    return estimate(_positive(cell.values), noise)


def _mean(c: Cell) -> float:
    xs = _positive(c.values)
    return sum(xs) / len(xs)


def best_other(cell: Cell, cells: Sequence[Cell]) -> Cell | None:
    """The strongest competitor of ``cell``: the highest mean among the other configs of its group."""
    others = [c for c in cells if c.group == cell.group and c.config != cell.config and _positive(c.values)]
    if not others:
        return None
    return max(others, key=_mean)


def neighbours(cell: Cell, cells: Sequence[Cell]) -> list[Cell]:
    """The cells its place in the ranking is decided against: the leader of its group (the runner-up
    when it leads) and the other configs next to it by mean, one above and one below."""
    others = [c for c in cells if c.group == cell.group and c.config != cell.config and _positive(c.values)]
    if not others or not _positive(cell.values):
        return []
    me = _mean(cell)
    out = [max(others, key=_mean)]
    above = [c for c in others if _mean(c) >= me]
    below = [c for c in others if _mean(c) < me]
    if above:
        out.append(min(above, key=_mean))
    if below:
        out.append(max(below, key=_mean))
    return list({c.config: c for c in out}.values())


@dataclass(frozen=True)
class Step:
    """Whether a cell needs another run (``more``), why (``reason``) and the comparison behind it."""

    more: bool
    reason: str
    vs: int | None = None  # the config it was compared with
    diff: Difference | None = None

    def text(self) -> str:
        words = {
            "fixed": "fixed repeats",
            "floor": "below the floor",
            "max": "at the maximum",
            "first": "first of its group: nothing to compare with yet",
            "separated": "separated",
            "tie": "a tie: within the tie margin",
            "limited": "the other cell's noise keeps it open",
            "overlap": "intervals overlap",
        }
        head = words.get(self.reason, self.reason)
        if self.diff is not None and self.diff.half_pct is not None:
            return f"{head} ({self.diff.text()})"
        return head


def next_step(
    cell: Cell,
    cells: Sequence[Cell],
    policy: RepeatPolicy,
    *,
    reference: Cell | None = None,
    noise_cells: Sequence[Cell] | None = None,
) -> Step:
    """Does ``cell`` need another run? ``cells`` is everything measured so far (``cell`` among them);
    ``reference`` overrides the competitor (a drift check compares a config with its earlier self);
    ``noise_cells`` are the samples the noise is pooled over (default ``cells``)."""
    n = len(_positive(cell.values))
    if not policy.adaptive:
        return Step(n < policy.repeats, "fixed")
    if n < policy.min_repeats:
        return Step(True, "floor")
    if n >= policy.max_repeats:
        return Step(False, "max")
    refs = [reference] if reference is not None else neighbours(cell, cells)
    if not refs:
        # the first cell of its group is the yardstick of every later one, and cannot run again once
        # its launch is over: one run more than the floor
        return Step(n < min(policy.min_repeats + 1, policy.max_repeats), "first")
    noise = noise_for(cells if noise_cells is None else noise_cells, cell.group)
    a = _estimate(cell, noise)
    if a is None:
        return Step(False, "first")
    steps: list[Step] = []
    for ref in refs:
        b = _estimate(ref, noise)
        if b is None:
            continue
        d = compare(a, b, policy.confidence)
        if d.separated:
            steps.append(Step(False, "separated", ref.config, d))
        elif d.within(policy.tie_pct):
            steps.append(Step(False, "tie", ref.config, d))
        elif d.separated is None or _can_close(a, b, d, policy):
            return Step(True, "overlap", ref.config, d)  # one open comparison that runs can close
        else:
            steps.append(Step(False, "limited", ref.config, d))
    if not steps:
        return Step(False, "first")
    # decided against every neighbour: say the least certain of those decisions
    order = {"limited": 0, "tie": 1, "separated": 2}
    return min(steps, key=lambda st: (order[st.reason], st.diff.sure if st.diff and st.diff.sure else 1.0))


def _can_close(a: Estimate, b: Estimate, d: Difference, policy: RepeatPolicy) -> bool:
    """Could ``max_repeats`` runs of ``a`` (the reference ``b`` as it is, the noise as estimated now, its
    degrees of freedom grown by the extra runs) separate the two or show them tied?"""
    if a.se is None or b.se is None or a.df is None or not b.mean:
        return True
    extra = max(0, policy.max_repeats - a.n)
    se_a = a.se * math.sqrt(a.n / max(a.n + extra, 1))
    se = math.sqrt(se_a * se_a + b.se * b.se)
    df = a.df + extra
    half = t_critical(policy.confidence, df) * se
    half_pct = half / abs(b.mean) * 100.0
    gap_pct = abs(d.pct or 0.0)
    return abs(d.diff) > half or gap_pct + half_pct <= policy.tie_pct


def pool_by_config(launch_cells: Sequence[Cell]) -> list[Cell]:
    """One cell per (config, group): the runs of every launch of a config pooled (a drift check's with
    its first launch's)."""
    runs: dict[tuple[int, int], list[float]] = {}
    costs: dict[int, tuple[int, ...]] = {}
    for c in launch_cells:
        runs.setdefault((c.config, c.group), []).extend(c.values)
        costs.setdefault(c.config, c.cost)
    return [Cell(k, g, tuple(v), costs.get(k, ())) for (k, g), v in sorted(runs.items())]


def step_in(me: Cell, others: Sequence[Cell], policy: RepeatPolicy, *, reference: Cell | None = None) -> Step:
    """:func:`next_step` for ``me`` (a cell of the launch in progress) among ``others`` — every other
    launch-and-group cell measured so far, this launch's other groups included: the competitors pooled
    by config, the noise pooled over launches."""
    return next_step(
        me, [*pool_by_config(others), me], policy, reference=reference, noise_cells=[*others, me]
    )


@dataclass(frozen=True)
class Recorded:
    """One launch as recorded: its config, the cost of its setting and, per group, the runs in the
    order they were measured (for :func:`replay`)."""

    config: int
    cells: tuple[tuple[float, ...], ...]
    cost: tuple[int, ...] = ()


@dataclass(frozen=True)
class Replayed:
    runs: int  # benchmark runs the policy used
    taken: tuple[tuple[int, ...], ...]  # per launch, per group: runs used
    decisions: tuple[Decision, ...]

    def rankings(self) -> list[tuple[int, ...]]:
        return [d.ranking for d in self.decisions]


def replay(launches: Sequence[Recorded], policy: RepeatPolicy) -> Replayed:
    """What ``policy`` would have run and decided on recorded runs: launch by launch in their order,
    within a launch in rounds (every cell that still needs a run gets one), exactly as the sweep
    runner does — each cell taking its recorded runs in order. Two policies replayed on the same
    recording see the same measurements: a paired comparison, free of the run-to-run luck that two
    live sweeps would each draw."""
    done: list[Cell] = []
    taken: list[tuple[int, ...]] = []
    for launch in launches:
        counts = [0] * len(launch.cells)

        def cell(g: int, launch: Recorded = launch, counts: list[int] = counts) -> Cell:
            return Cell(launch.config, g, launch.cells[g][: counts[g]], launch.cost)

        while True:
            current = [cell(g) for g in range(len(launch.cells))]
            todo = [
                g
                for g in range(len(launch.cells))
                if counts[g] < len(launch.cells[g])
                and step_in(current[g], [*done, *current[:g], *current[g + 1 :]], policy).more
            ]
            if not todo:
                break
            for g in todo:
                counts[g] += 1
        done.extend(cell(g) for g in range(len(launch.cells)))
        taken.append(tuple(counts))
    pooled = pool_by_config(done)
    groups = max((len(x.cells) for x in launches), default=0)
    decisions = tuple(decide(pooled, g, policy.confidence, noise_cells=done) for g in range(groups))
    return Replayed(sum(sum(t) for t in taken), tuple(taken), decisions)


# ------------------------------------------------------------------------------ decisions


@dataclass(frozen=True)
class Decision:
    """The outcome of one group: its decided ``ranking`` (configs), the ``winner``, the comparison that
    decided it (``margin``: the winner vs its nearest competitor by mean, ``rival`` — the leader it tied
    with, or the next best mean below it; never whichever config the cost order put second) and whether
    the winner won a tie on cost (``on_cost``). ``reordered`` says where the ranking departs from the
    means: (config, the higher-mean config it was ranked above, the leader it tied with) for each pick
    a tie within the noise gave to the cheaper setting."""

    group: int
    ranking: tuple[int, ...]
    winner: int | None
    runner_up: int | None
    margin: Difference | None
    on_cost: bool
    leader: int | None
    noise: Noise | None
    means: Mapping[int, float]
    rival: int | None = None
    reordered: tuple[tuple[int, int, int], ...] = ()

    def how_sure(self) -> str:
        """In words: ``97.1 % sure``, ``a tie within the noise: the cheaper wins``, ``only one measured``."""
        if self.winner is None:
            return "nothing measured"
        if self.runner_up is None:
            return "only one config measured"
        d = self.margin
        if d is None or d.sure is None:
            return "noise unknown (1 run): ranked by the means alone"
        if self.on_cost:
            return f"a tie within the noise ({d.text()}): the cheaper setting wins"
        if not d.separated:
            return f"ahead within the noise, not a clear win ({d.text()}); no cheaper setting in the tie"
        return f"clear ({d.text()})"

    def short(self) -> str:
        """A few words for a narrow view: ``clear, >99.9 % sure`` / ``a tie: the cheaper wins`` /
        ``within the noise (94 %)``."""
        d = self.margin
        if self.winner is None or self.runner_up is None:
            return "only one measured" if self.winner is not None else "nothing measured"
        if d is None or d.sure is None:
            return "noise unknown"
        if self.on_cost:
            return "a tie within the noise: the cheaper wins"
        if not d.separated:
            return f"within the noise ({fmt_sure(d.sure)})"
        return f"clear, {fmt_sure(d.sure)} sure"

    def reorder_texts(self, names: Mapping[int, str], unit: str = "tok/s") -> list[str]:
        """Each place the ranking departs from the means, and why: ``steps 1 above steps 3 (mean 98.2 <
        100.5 tok/s): within the noise of steps 3, and cheaper``."""
        out = []

        def name(k: int) -> str:
            return names.get(k, f"#{k}")

        for a, b, t in self.reordered:
            out.append(
                f"{name(a)} above {name(b)} (mean {self.means[a]:.1f} < {self.means[b]:.1f} {unit}): "
                f"within the noise of {'it' if t == b else name(t)}, and cheaper"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        d = self.margin
        return {
            "group": self.group,
            "ranking": list(self.ranking),
            "winner": self.winner,
            "runner_up": self.runner_up,
            "rival": self.rival,
            "leader": self.leader,
            "reordered": [{"config": a, "above": b, "tied_with": t} for a, b, t in self.reordered],
            "on_cost": self.on_cost,
            "margin_pct": None if d is None or d.pct is None else round(d.pct, 3),
            "margin_ci_pct": None if d is None or d.half_pct is None else round(d.half_pct, 3),
            "sure": None if d is None or d.sure is None else round(d.sure, 4),
            "separated": None if d is None else d.separated,
            "how_sure": self.how_sure(),
            "noise_cv_pct": None if self.noise is None else round(self.noise.cv * 100, 3),
        }


def decide(
    cells: Sequence[Cell],
    group: int,
    confidence: float = DEFAULT_CONFIDENCE,
    *,
    noise_cells: Sequence[Cell] | None = None,
) -> Decision:
    """Rank the configs of ``group`` (cells with no valid run are left out): repeatedly, the cheapest of
    the cells within the noise of the remaining leader."""
    mine = [c for c in cells if c.group == group and _positive(c.values)]
    noise = noise_for(cells if noise_cells is None else noise_cells, group)
    est = {c.config: _estimate(c, noise) for c in mine}
    means = {k: e.mean for k, e in est.items() if e is not None}
    by_config = {c.config: c for c in mine}
    left = sorted(means)
    ranking: list[int] = []
    reordered: list[tuple[int, int, int]] = []
    first_margin: Difference | None = None
    first_on_cost = False
    leader0: int | None = None
    while left:
        leader = max(left, key=lambda k: (means[k], -k))
        if leader0 is None:
            leader0 = leader
        tied = []
        for k in left:
            if k == leader:
                tied.append(k)
                continue
            ek, el = est[k], est[leader]
            assert ek is not None and el is not None
            sep = compare(el, ek, confidence).separated
            if sep is False:  # unknown noise (None) never makes a tie: the means decide
                tied.append(k)
        pick = min(tied, key=lambda k: (by_config[k].cost, k))
        if not ranking:
            first_on_cost = pick != leader
        if pick != leader:  # within the noise of the leader and cheaper: ranked above higher means
            reordered += [(pick, k, leader) for k in left if means[k] > means[pick]]
        ranking.append(pick)
        left.remove(pick)
    winner = ranking[0] if ranking else None
    runner = ranking[1] if len(ranking) > 1 else None
    rival: int | None = None
    if winner is not None and runner is not None:
        # the nearest competitor by mean: the leader a cheaper winner tied with, else the best mean below
        rival = max((k for k in means if k != winner), key=lambda k: (means[k], -k))
        ew, eo = est[winner], est[rival]
        assert ew is not None and eo is not None
        first_margin = compare(ew, eo, confidence)
    return Decision(
        group,
        tuple(ranking),
        winner,
        runner,
        first_margin,
        first_on_cost,
        leader0,
        noise,
        means,
        rival,
        tuple(reordered),
    )


def drift(
    early: Sequence[float], late: Sequence[float], noise: Noise | None, confidence: float
) -> Difference | None:
    """The late measurement of the baseline vs its early one (same config, same client setting)."""
    a, b = estimate(_positive(late), noise), estimate(_positive(early), noise)
    if a is None or b is None:
        return None
    return compare(a, b, confidence)
