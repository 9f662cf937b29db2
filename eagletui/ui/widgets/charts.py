"""Live charts. Each chart owns a snapshot of its series and replots only when a series' version moved,
and the app calls :meth:`MetricChart.sync` from a coalescing timer, so bursts cost one replot.

:data:`CHARTS` is the registry: the one tuple that both compose sites (the wide left column and the
Charts tab), the repaint's round-robin and the wide grid's rows are made from. A new chart is a
:class:`MetricChart` subclass and its line in :data:`CHARTS` (plus its series in ``core/state/screen.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from textual.geometry import Region, Size
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual_plotext import PlotextPlot

from eagletui.core.runs.book import RunBook
from eagletui.core.runs.frontier import Frontier, frontiers
from eagletui.core.runs.frontier_text import frontier_lines
from eagletui.core.state.screen import Series, SessionState
from eagletui.ui.widgets.frontier_plot import UNDRAWN, drawable, latest, plot_frontier


def _rgb(app, name: str, fallback: tuple[int, int, int]) -> tuple[int, int, int]:
    from textual.color import Color

    value = app.theme_variables.get(name)
    if not value:
        return fallback
    try:
        c = Color.parse(value)
        return (c.r, c.g, c.b)
    except Exception:
        return fallback


class MetricChart(PlotextPlot):
    """One metric over time: per-request points, a rolling mean line, live decode line, baseline line."""

    DEFAULT_CSS = """
    MetricChart { height: 1fr; min-height: 8; }
    """
    #: the run-book metric whose pinned-baseline value is drawn as a line (None: no baseline line)
    baseline_metric: ClassVar[str | None] = None

    def __init__(self, title: str, ylabel: str, colour_var: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.title = title
        self.ylabel = ylabel
        self.colour_var = colour_var
        self.baseline: float | None = None
        self._seen: tuple = ()
        self.points = 0
        self._plot_version = 0  # bumped by every replot
        self.y_labels: list[str] = []  # the y tick labels of the last replot, every one drawn
        self._strips_key: tuple | None = None
        self._strips: list[Strip] = []
        self._names: list[str] = []  # the series named beside the title at the last replot
        self._title_width = 0  # the width the title line was fitted to
        #: what the last replot drew, and at which height: the axes depend on the height (the ticks'
        #: count, the x axis dropped when short), and a chart replotted while hidden had none
        self._last_plot: tuple[Any, ...] | None = None
        self._plot_height = 0
        self._pass_size: Size | None = None  # set while Textual renders a frame's lines

    def render_lines(self, crop: Region) -> list[Strip]:
        """The size is read once per render pass, not per line: ``Widget.size`` walks the box model
        (~25 µs), and a full repaint asks a chart for every one of its lines."""
        self._pass_size = self.size
        try:
            return super().render_lines(crop)
        finally:
            self._pass_size = None

    def render_line(self, y: int) -> Strip:
        """plotext rebuilds the whole figure per render: it is built, and cut into lines, once per
        replot, and the lines are reused by every repaint in between.

        A theme change alone reuses them too: the app marks every chart stale and each is replotted
        in the new colours on its next turn of the coalesced replot (within a second), so the frame
        that shows a new theme pays neither four plotext builds (~10 ms each with data) nor turning
        four figures of ANSI text back into lines (~4 ms each)."""
        width, height = self._pass_size or self.size
        if height and height != self._plot_height and self._last_plot is not None:
            self._replot(*self._last_plot)  # e.g. the Charts tab shown: it was drawn at no size
        key = (self._plot_version, width, height)
        if key != self._strips_key:
            if width and width != self._title_width:  # resized since the replot: fit the title again
                self._title_width = width
                self.plt.title(fit_title(self.title, self._names, width - 2))
            visual = visualize(self, self.render(), markup=False)
            self._strips = Visual.to_strips(self, visual, width, height, self.visual_style)
            self._strips_key = key
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(width, self.visual_style.rich_style)

    def series_for(self, state: SessionState) -> tuple[Series | None, Series | None, Series | None]:
        """(samples, rolling, live) for this chart; subclasses pick from the state."""
        raise NotImplementedError

    def extras(self, state: SessionState) -> list[Extra]:
        """Further series drawn as lines (none by default; the accept chart adds adaptive speculation's)."""
        return []

    def mark_stale(self) -> None:
        """Replot on the next :meth:`sync` even if no series moved (the theme's colours did)."""
        self._seen = ()

    def sync(self, state: SessionState, baseline: float | None, book: RunBook | None = None) -> bool:
        """Replot if a series moved; ``book`` is the session's run book, for a chart drawn from it."""
        samples, rolling, live = self.series_for(state)
        key: tuple[Any, ...] = tuple(s.version if s is not None else -1 for s in (samples, rolling, live))
        key += (baseline,) + tuple((e.label, e.series.version) for e in self.extras(state))
        if key == self._seen:
            return False
        self._seen = key
        self.baseline = baseline
        self._replot(samples, rolling, live, state)
        return True

    def _thin(self, points) -> list[tuple[float, float]]:
        """At most ~2 points per column: plotext's cost grows with points, the picture does not."""
        pts = list(points)
        limit = max(40, 2 * (self.size.width or 60))
        if len(pts) <= limit:
            return pts
        step = len(pts) / limit
        return [pts[int(i * step)] for i in range(limit)] + [pts[-1]]

    def _replot(
        self, samples: Series | None, rolling: Series | None, live: Series | None, state: SessionState
    ) -> None:
        self._last_plot = (samples, rolling, live, state)
        self._plot_height = self.size.height
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        colour = _rgb(self.app, self.colour_var, (80, 160, 255))
        extras = self.extras(state)
        starts = [s.points[0][0] for s in (samples, rolling, live) if s is not None and s.points]
        starts += [e.series.points[0][0] for e in extras if e.series.points]
        t0 = min(starts) if starts else 0.0  # only used when some series has points
        n = 0
        # No plotext legend: it is drawn inside the plot, over the data. The series are named in the
        # title line instead.
        names: list[str] = []
        xs_all: list[float] = []
        ys_all: list[float] = []
        if samples is not None and samples.points:
            pts = self._thin(samples.points)
            xs = [t - t0 for t, _ in pts]
            ys = [v for _, v in pts]
            plt.scatter(xs, ys, color=colour, marker="dot")
            names.append("• per request")
            n += len(xs)
            xs_all += xs
            ys_all += ys
            if len(ys) >= 2:
                window = 5
                roll = [
                    sum(ys[max(0, i - window + 1) : i + 1]) / len(ys[max(0, i - window + 1) : i + 1])
                    for i in range(len(ys))
                ]
                plt.plot(xs, roll, color=colour)
                names.append("─ rolling")
        for series, colour_var, fallback, label in (
            (rolling, "accent", (255, 160, 0), "per second"),
            (live, "secondary", (120, 200, 120), "server"),
        ):
            if series is not None and series.points:
                pts = self._thin(series.points)
                xs = [t - t0 for t, _ in pts]
                ys = [v for _, v in pts]
                plt.plot(xs, ys, color=_rgb(self.app, colour_var, fallback))
                names.append(f"─ {label}")
                n += len(pts)
                xs_all += xs
                ys_all += ys
        extra_names, extra_n = self._plot_extras(extras, t0, xs_all, ys_all)
        names[:0] = extra_names
        n += extra_n
        if self.baseline is not None and n:
            plt.hline(self.baseline, color=_rgb(self.app, "chart-baseline", (200, 200, 200)))
            names.append("┄ baseline")
            ys_all.append(self.baseline)
        # the title first: series names only as far as the chart is wide (plotext crops a long title
        # line from both ends, and the title went first)
        self._names, self._title_width = names, self.size.width
        plt.title(fit_title(self.title, names, (self.size.width or 80) - 2))
        self._axes(xs_all, ys_all)
        self._plot_version += 1
        self.points = (
            (len(samples.points) if samples else 0)
            + (len(rolling.points) if rolling else 0)
            + (len(live.points) if live else 0)
        )
        self.refresh()

    def _plot_extras(
        self, extras: list[Extra], t0: float, xs_all: list[float], ys_all: list[float]
    ) -> tuple[list[str], int]:
        """Draw the further lines (the right-hand ones on their own axis from 0); their names (named
        first: the generic names give way where the title is short) and how many points. The left-hand
        values join ``ys_all`` and every x joins ``xs_all``."""
        plt = self.plt
        names: list[str] = []
        right: list[float] = []
        n = 0
        for e in extras:
            if not e.series.points:
                continue
            pts = self._thin(e.series.points)
            xs = [t - t0 for t, _ in pts]
            ys = [v for _, v in pts]
            plt.plot(xs, ys, color=_rgb(self.app, e.colour_var, e.fallback), yside="right" if e.right else "left")
            names.append(f"─ {e.label}")
            n += len(pts)
            xs_all += xs
            (right if e.right else ys_all).extend(ys)
        if right:
            plt.ylim(0.0, max(1.0, max(right)) * 1.1, yside="right")  # type: ignore[arg-type]  # plotext's stub types it float
        return names, n

    def _axes(self, xs_all: list[float], ys_all: list[float]) -> None:
        """Both axes' ranges, the y ticks (every one labelled), and the axis labels where they fit."""
        plt = self.plt
        if xs_all:
            # time starts at 0: plotext centres a lone point on −1…1, which reads as negative seconds
            plt.xlim(0.0, max(1.0, max(xs_all)))
            lo, hi = min(ys_all), max(ys_all)
            if hi - lo < 1e-9:
                pad = abs(hi) * 0.1 or 1.0
                lo, hi = lo - pad, hi + pad
            lo = max(0.0, lo) if min(ys_all) >= 0 else lo
            height = self.size.height or 10
            ticks = y_ticks(lo, hi, max(2, min(5, height // 3)))
            # no more labels than the plot has rows (the title, the frame and the x axis take the rest):
            # two labels on one row were drawn in plotext's hash order, "90" in one run and "100" in
            # the next (a 7-row chart beside the frontier chart, 2 plot rows for 80/90/100)
            rows = height - (3 if height < COMPACT_BELOW else 5)
            if len(ticks) > max(2, rows):
                ticks = [ticks[0], ticks[-1]]
            plt.ylim(ticks[0], ticks[-1])
            # every tick labelled (plotext drops a label where two would touch)
            self.y_labels = tick_labels(ticks)
            plt.yticks(ticks, self.y_labels)
        if (self.size.height or 10) < COMPACT_BELOW:
            # too short for the x axis's ticks and labels: they would take the plot's only rows, and
            # plotext then writes the y labels onto the frame, upside down (at 60×20: "0" on top)
            plt.xticks([])
            plt.xlabel("")
            plt.ylabel("")
        else:
            plt.xlabel("s")
            plt.ylabel(self.ylabel)


#: A chart shorter than this drops its x axis's ticks and labels: the title, the frame and those two
#: lines take five rows, and the data needs two of its own.
COMPACT_BELOW = 7


def fit_title(title: str, names: list[str], width: int) -> str:
    """``title`` followed by as many of the series ``names`` (in order) as fit in ``width`` cells;
    the title alone, cut with "…", when even it does not fit."""
    width = max(1, width)
    if len(title) > width:
        return title[: max(0, width - 1)] + "…"
    out = title
    for i, name in enumerate(names):
        nxt = out + ("   " if i == 0 else "  ") + name
        if len(nxt) > width:
            break
        out = nxt
    return out


def y_ticks(lo: float, hi: float, count: int) -> list[float]:
    """``count`` evenly spaced ticks on a 1/2/5 × 10ⁿ step covering ``lo``…``hi``."""
    span = max(hi - lo, 1e-9)
    raw = span / max(1, count - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = [start]
    while ticks[-1] < hi - 1e-9:
        ticks.append(ticks[-1] + step)
    return [round(t, 10) for t in ticks]


def tick_labels(ticks: list[float]) -> list[str]:
    """As many decimals as the tick step needs (100, 100.5, 101: not 100, 100, 101)."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    if all(abs(t) >= 10_000 for t in ticks if t) and step >= 1000:
        return [f"{t / 1000:.0f}k" for t in ticks]
    return [f"{t:.{decimals}f}" for t in ticks]


class TokSChart(MetricChart):
    """Aggregate throughput: the benchmark's per-second output tok/s and the server's Decode lines."""

    baseline_metric = "tok_s"

    def __init__(self, **kwargs) -> None:
        super().__init__("output tok/s (aggregate)", "tok/s", "chart-toks", **kwargs)

    def series_for(self, state: SessionState):
        return None, state.bench_tick_tok_s, state.gen_throughput


class RequestTokSChart(MetricChart):
    """Per-request tok/s: what one user of the server sees."""

    def __init__(self, **kwargs) -> None:
        super().__init__("tok/s per request", "tok/s", "chart-toks", **kwargs)

    def series_for(self, state: SessionState):
        return state.bench_tok_s, None, None


class AcceptChart(MetricChart):
    """Accept length; with adaptive speculation also the tier that ran (steps, on the same token axis:
    a verify accepts at most steps + 1) and the running batch that routes it (``batch``, on the right-hand axis)."""

    baseline_metric = "accept_len"

    def __init__(self, **kwargs) -> None:
        super().__init__("accept length", "tokens", "chart-accept", **kwargs)

    def series_for(self, state: SessionState):
        return state.bench_accept, None, state.accept_len

    def extras(self, state: SessionState) -> list[Extra]:
        if not state.tier.points and not state.running.points:
            return []
        return [
            Extra(state.tier, "steps", "warning", (230, 200, 60)),
            Extra(state.running, "batch", "chart-ttft", (200, 120, 200), right=True),
        ]


class TtftChart(MetricChart):
    def __init__(self, **kwargs) -> None:
        super().__init__("TTFT", "ms", "chart-ttft", **kwargs)

    def series_for(self, state: SessionState):
        return state.bench_ttft, None, None


#: The fewest rows the charts column's frontier chart is drawn in (its title, frame and axis take 5, and
#: four plot rows tell its curves apart); shorter — a long compare text above it at 200x50 left one plot
#: row — it is the frontier's small table, as the view ``v`` is on a small terminal.
FRONTIER_CHART_ROWS = 7


class FrontierMiniChart(MetricChart):
    """The frontier of the session's run book in the charts column (the view ``v`` at chart size): it
    follows the run book, so a sweep's points appear as its cells finish. It folds the frontier again
    only when a result arrived (the results' count), so a tick without one costs a sum. Shorter than
    :data:`FRONTIER_CHART_ROWS` it shows the frontier's points as a table instead of an unreadable plot."""

    def __init__(self, **kwargs) -> None:
        super().__init__("frontier", "decode tok/s per user", "chart-toks", **kwargs)
        self.frontier: Frontier | None = None

    def render(self) -> Any:
        width, height = self._pass_size or self.size
        undrawn = self.frontier is not None and not drawable(self.frontier)
        if self.frontier is None or height >= FRONTIER_CHART_ROWS and not undrawn:
            return super().render()
        from rich.text import Text

        # its points on the frontier (x: misses the SLO), each line cut to the width: no wrapped rows
        # the chart's own title first (the host and the SLO the x marks are judged by), then the note as
        # far as the width allows; a frontier with no point to draw is its table too, never an empty frame
        note = UNDRAWN if undrawn else "too short for its chart: the frontier's points (v: the view)"
        lines = [fit_title(self.title, [*self._names[:1], note], max(1, width))]
        lines += frontier_lines(self.frontier.to_json(), all_points=undrawn, answer=False, caption=False)[1:]
        cut = [ln if len(ln) <= width else ln[: max(0, width - 1)] + "…" for ln in lines[:height]]
        return Text("\n".join(cut))

    def series_for(self, state: SessionState):
        return None, None, None

    def sync(self, state: SessionState, baseline: float | None, book: RunBook | None = None) -> bool:
        if book is None:
            return False
        key = (id(book), sum(len(r.results) for r in book.runs.values()))
        if key == self._seen:
            return False
        self._seen = key
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        f = self.frontier = latest(frontiers(book))
        # "frontier", then the host and the SLO as far as the chart is wide (a resize fits it anew)
        names = ["no benchmark yet"] if f is None else [plot_frontier(plt, f, compact=True)]
        self._names, self._title_width = names, self.size.width
        plt.title(fit_title(self.title, names, (self.size.width or 80) - 2))
        self.points = sum(len(c.points) for c in f.curves) if f is not None else 0
        self._plot_version += 1
        self.refresh()
        return True


@dataclass(frozen=True)
class Extra:
    """A further line of a chart: its series, its name in the title, its colour, and whether it has the
    right-hand axis (another unit than the chart's)."""

    series: Series
    label: str
    colour_var: str
    fallback: tuple[int, int, int]
    right: bool = False


@dataclass(frozen=True)
class ChartSpec:
    """One chart of the main screen: its class, the key its widget ids are made of, and whether it
    spans the wide layout's two columns (narrow ones sit side by side)."""

    cls: Callable[..., MetricChart]  # a MetricChart subclass, built with the widget's id and classes
    key: str
    wide: bool = False
    #: also in the Charts tab of the narrow layout (the frontier is not: at 80x24 a fifth chart leaves
    #: none room for its axes, and ``v`` shows the same frontier as a table there)
    in_tab: bool = True


#: Every chart, in screen order (see the module docstring).
CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec(TokSChart, "toks", wide=True),
    ChartSpec(AcceptChart, "accept", wide=True),
    ChartSpec(RequestTokSChart, "req"),
    ChartSpec(TtftChart, "ttft"),
    ChartSpec(FrontierMiniChart, "frontier", wide=True, in_tab=False),
)


def wide_charts() -> Iterator[MetricChart]:
    """The charts of the wide layout's left column."""
    for spec in CHARTS:
        yield spec.cls(id=f"chart-{spec.key}-wide", classes="chart wide" if spec.wide else "chart")


def tab_charts() -> Iterator[MetricChart]:
    """The charts of the Charts tab (the narrow layout), a two-column grid."""
    for spec in CHARTS:
        if spec.in_tab:
            yield spec.cls(id=f"chart-{spec.key}", classes="chart in-tab")


def wide_grid_rows() -> str:
    """The wide grid's rows: one per wide chart, one per pair of narrow ones (``1fr 1fr 1fr``)."""
    rows = sum(1 for c in CHARTS if c.wide) + (sum(1 for c in CHARTS if not c.wide) + 1) // 2
    return " ".join(["1fr"] * max(1, rows))


def tab_grid_rows() -> str:
    return " ".join(["1fr"] * max(1, (sum(1 for c in CHARTS if c.in_tab) + 1) // 2))
