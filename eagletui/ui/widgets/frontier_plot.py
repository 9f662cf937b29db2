"""The frontier drawn with plotext: one scatter per launch config, the SLO misses grey, the Pareto frontier
a line through its points, a per-token SLO bound (TPOT or ITL) a red line at 1000 ÷ the bound on the decode
axis (:mod:`eagletui.core.runs.decode_axis`: a point under it is one whose decode misses the bound; TTFT
and e2e bounds have no line, their misses are grey only). A point without a decode speed (a runner that
kept no per-request records) is not drawn: the table lists it. The frontier view (``v``) and the frontier
chart of the charts column draw through it, so the two never differ in what a mark means.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eagletui.core.runs.frontier import Frontier, Point
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
    if not compact and not drawable(f):  # (the charts column's chart says it in its table's note)
        title += f" · {UNDRAWN}"
    plt.title(title)
    if not compact:
        plt.xlabel("output tok/s per GPU")
        plt.ylabel(f.axis.name)
    front = f.frontier_points()
    entries = len(f.curves) + (len(front) > 1)
    legend = not compact and not 0 < rows - _NOT_PLOT_ROWS < 2 * entries + 2
    if f.axis.bound is not None:  # a per-token bound: the decode speed it promises, under the points
        line = 1000.0 / f.axis.bound.max_ms
        plt.hline(line, color="red")
        xs = [p.tok_s_per_gpu for c in f.curves for p in c.points] or [0.0]
        plt.text(f"SLO {f.axis.bound.describe()}", x=min(xs), y=line, color="red", alignment="left")
    if len(front) > 1:
        plt.plot(
            [p.tok_s_per_gpu for _, p in front],
            [_y(p) for _, p in front],
            color="white",
            label="frontier" if legend else None,
        )
    for i, c in enumerate(f.curves):
        drawn = [p for p in c.points if p.decode_tok_s_per_user is not None]
        ok = [p for p in drawn if p.meets_slo is not False]
        if ok:
            plt.scatter(
                [p.tok_s_per_gpu for p in ok],
                [_y(p) for p in ok],
                color=COLOURS[i % len(COLOURS)],
                marker="dot" if c.spec else "+",
                label=inert(c.label) if legend else None,
            )
        miss = [p for p in drawn if p.meets_slo is False]
        if miss:
            plt.scatter([p.tok_s_per_gpu for p in miss], [_y(p) for p in miss], color="gray", marker="x")
    _y_range(plt, f, entries if legend and rows > 0 else 0, rows)
    return title


#: what the chart says when none of its points has a decode speed to draw (a recording from before the
#: runs kept per-request latencies: an empty frame said nothing)
UNDRAWN = "no run kept per-request TPOT: nothing to draw on the decode axis (the table lists the points)"


def drawable(f: Frontier) -> bool:
    """Whether any point of ``f`` has a decode speed (the y of the plot)."""
    return any(p.decode_tok_s_per_user is not None for c in f.curves for p in c.points)


def _y_range(plt: Any, f: Frontier, entries: int, rows: int) -> None:
    """The y axis from the lowest to the highest of the points and the SLO's line (plotext's own range
    leaves out a line beyond the points), its top raised so that the legend's ``entries`` rows (and one
    spare) are above the highest point of a plot ``rows`` high."""
    ys = [_y(p) for c in f.curves for p in c.points if p.decode_tok_s_per_user is not None]
    if f.axis.line is not None:
        ys.append(f.axis.line)
    if not ys:
        return
    lo, hi = min(ys), max(ys)
    if hi <= lo or not entries and f.axis.line is None:
        return
    plot_rows = rows - _NOT_PLOT_ROWS
    plt.ylim(lo, hi + (hi - lo) * (entries + 1) / (plot_rows - entries - 1) if entries else hi)


def _y(p: Point) -> float:
    """The point's decode tok/s per user (the callers draw only points that have one)."""
    return p.decode_tok_s_per_user or 0.0


def latest(fs: Sequence[Frontier]) -> Frontier | None:
    """The frontier the newest launch is on (several hosts or workloads: the one being worked on now)."""
    if not fs:
        return None
    return max(fs, key=lambda f: max((n for c in f.curves for n in c.launches), default=0))
