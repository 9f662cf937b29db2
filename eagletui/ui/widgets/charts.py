"""Live charts. Each chart owns a snapshot of its series and replots only when a series' version moved,
and the app calls :meth:`MetricChart.sync` from a coalescing timer, so bursts cost one replot."""

from __future__ import annotations

from typing import ClassVar

from textual.strip import Strip
from textual.visual import Visual, visualize
from textual_plotext import PlotextPlot

from eagletui.core.state import Series, SessionState


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
        self._strips_key: tuple | None = None
        self._strips: list[Strip] = []

    def render_line(self, y: int) -> Strip:
        """plotext rebuilds the whole figure per render: it is built, and cut into lines, once per
        replot, and the lines are reused by every repaint in between.

        A theme change alone reuses them too: the app marks every chart stale and each is replotted
        in the new colours on its next turn of the coalesced replot (within a second), so the frame
        that shows a new theme pays neither four plotext builds (~10 ms each with data) nor turning
        four figures of ANSI text back into lines (~4 ms each)."""
        width, height = self.size
        key = (self._plot_version, width, height)
        if key != self._strips_key:
            visual = visualize(self, self.render(), markup=False)
            self._strips = Visual.to_strips(self, visual, width, height, self.visual_style)
            self._strips_key = key
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(width, self.visual_style.rich_style)

    def series_for(self, state: SessionState) -> tuple[Series | None, Series | None, Series | None]:
        """(samples, rolling, live) for this chart; subclasses pick from the state."""
        raise NotImplementedError

    def mark_stale(self) -> None:
        """Replot on the next :meth:`sync` even if no series moved (the theme's colours did)."""
        self._seen = ()

    def sync(self, state: SessionState, baseline: float | None) -> bool:
        samples, rolling, live = self.series_for(state)
        key = tuple(s.version if s is not None else -1 for s in (samples, rolling, live)) + (baseline,)
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
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(self.title)
        colour = _rgb(self.app, self.colour_var, (80, 160, 255))
        starts = [s.points[0][0] for s in (samples, rolling, live) if s is not None and s.points]
        t0 = min(starts) if starts else 0.0  # only used when some series has points
        n = 0
        if samples is not None and samples.points:
            pts = self._thin(samples.points)
            xs = [t - t0 for t, _ in pts]
            ys = [v for _, v in pts]
            plt.scatter(xs, ys, color=colour, marker="dot", label="per request")
            n += len(xs)
            if len(ys) >= 2:
                window = 5
                roll = [
                    sum(ys[max(0, i - window + 1) : i + 1]) / len(ys[max(0, i - window + 1) : i + 1])
                    for i in range(len(ys))
                ]
                plt.plot(xs, roll, color=colour, label="rolling")
        for series, colour_var, fallback, label in (
            (rolling, "accent", (255, 160, 0), "per second"),
            (live, "secondary", (120, 200, 120), "server"),
        ):
            if series is not None and series.points:
                pts = self._thin(series.points)
                plt.plot(
                    [t - t0 for t, _ in pts],
                    [v for _, v in pts],
                    color=_rgb(self.app, colour_var, fallback),
                    label=label,
                )
                n += len(pts)
        if self.baseline is not None and n:
            plt.hline(self.baseline, color=_rgb(self.app, "chart-baseline", (200, 200, 200)))
        plt.xlabel("s")
        plt.ylabel(self.ylabel)
        self._plot_version += 1
        self.points = (
            (len(samples.points) if samples else 0)
            + (len(rolling.points) if rolling else 0)
            + (len(live.points) if live else 0)
        )
        self.refresh()


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
    baseline_metric = "accept_len"

    def __init__(self, **kwargs) -> None:
        super().__init__("accept length", "tokens", "chart-accept", **kwargs)

    def series_for(self, state: SessionState):
        return state.bench_accept, None, state.accept_len


class TtftChart(MetricChart):
    def __init__(self, **kwargs) -> None:
        super().__init__("TTFT", "ms", "chart-ttft", **kwargs)

    def series_for(self, state: SessionState):
        return state.bench_ttft, None, None
