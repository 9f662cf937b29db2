"""The frontier drawn with plotext: one scatter per launch config, the SLO misses grey, the Pareto frontier
a line through its points; no SLO line (y includes the time to first token, so a per-token bound is no
floor on it: :mod:`eagletui.core.runs.frontier`), the misses' grey says it. The frontier view (``v``) and the frontier chart
of the charts column draw through it, so the two never differ in what a mark means.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eagletui.core.runs.frontier import Frontier
from eagletui.core.textsafe import inert

#: plotext colours for the curves, in order (SLO misses are grey whatever their curve)
COLOURS = ("cyan", "orange", "green", "magenta", "blue", "red", "yellow")
#: rows of a figure that are not the plot's: the title, the x axis and its ticks, the x label
_NOT_PLOT_ROWS = 5


def plot_frontier(plt: Any, f: Frontier, *, compact: bool = False, rows: int = 0) -> str:
    """Draw ``f`` on a cleared plotext figure and return its title; ``compact``: no axis labels and no
    legend (a chart of the charts column: the curves are named in the frontier view and its table).

    The frontier's line is drawn first and the points over it, so a point on the frontier keeps its
    mark. plotext puts the legend in the top left corner, over the plot: exactly where speculation's
    points at low load sit (few tok/s per GPU, many per user). ``rows`` (the figure's height) lifts the
    y axis's top by the legend's rows, so the legend sits above every point; a figure too short to
    give it half its plot leaves the legend out (the table under the chart names every curve)."""
    title = inert(f"{f.target or 'this host'}: " + (f.slo.describe() if f.slo else "no [slo]"))
    plt.title(title)
    if not compact:
        plt.xlabel("output tok/s per GPU")
        plt.ylabel("tok/s per user")
    front = f.frontier_points()
    entries = len(f.curves) + (len(front) > 1)
    legend = not compact and not 0 < rows - _NOT_PLOT_ROWS < 2 * entries + 2
    if len(front) > 1:
        plt.plot(
            [p.tok_s_per_gpu for _, p in front],
            [p.tok_s_per_user for _, p in front],
            color="white",
            label="frontier" if legend else None,
        )
    for i, c in enumerate(f.curves):
        ok = [p for p in c.points if p.meets_slo is not False]
        if ok:
            plt.scatter(
                [p.tok_s_per_gpu for p in ok],
                [p.tok_s_per_user for p in ok],
                color=COLOURS[i % len(COLOURS)],
                marker="dot" if c.spec else "+",
                label=inert(c.label) if legend else None,
            )
        miss = [p for p in c.points if p.meets_slo is False]
        if miss:
            plt.scatter([p.tok_s_per_gpu for p in miss], [p.tok_s_per_user for p in miss], color="gray", marker="x")
    if legend and rows > 0:
        _legend_room(plt, f, entries, rows)
    return title


def _legend_room(plt: Any, f: Frontier, entries: int, rows: int) -> None:
    """Raise the y axis's top so that the legend's ``entries`` rows (and one spare) are above the
    highest point of a plot ``rows`` high."""
    ys = [p.tok_s_per_user for c in f.curves for p in c.points]
    if not ys:
        return
    lo, hi = min(ys), max(ys)
    plot_rows = rows - _NOT_PLOT_ROWS
    if hi <= lo:
        return
    plt.ylim(lo, hi + (hi - lo) * (entries + 1) / (plot_rows - entries - 1))


def latest(fs: Sequence[Frontier]) -> Frontier | None:
    """The frontier the newest launch is on (several hosts or workloads: the one being worked on now)."""
    if not fs:
        return None
    return max(fs, key=lambda f: max((n for c in f.curves for n in c.launches), default=0))
