"""The frontier chart's figure read from plotext's matrices draws what plotext's ANSI text drew."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.text import Text
from textual_plotext.plot import Plot

from eagletui.ui.widgets.plotext_text import figure_text


def _figure(width: int, height: int, theme: str) -> Plot:
    """A frontier-like figure: named, RGB and grey scatters, a line, a horizontal line with a label."""
    p = Plot()
    p.plotsize(width, height)
    p._set_size(width, height)
    p.theme(theme)
    p.title("h200: ttft p99 ≤ 2 s and itl p99 ≤ 50 ms")
    p.xlabel("output tok/s per GPU")
    p.ylabel("tok/s per user")
    p.scatter([310.0, 520.0, 800.0, 990.0], [160.0, 120.0, 70.0, 40.0], color="cyan", marker="dot", label="EAGLE3")
    p.scatter([600.0, 1100.0], [45.0, 20.0], color="gray", marker="x")
    p.scatter([250.0, 700.0, 1200.0], [90.0, 80.0, 50.0], color=(255, 128, 0), marker="+", label="no-spec")
    p.hline(50.0, color="red")
    p.text("SLO", x=260.0, y=50.0, color="red")
    p.plot([310.0, 520.0, 1200.0], [160.0, 120.0, 50.0], color="white", label="frontier")
    return p


@pytest.mark.parametrize(("width", "height", "theme"), [(147, 25, "dark"), (60, 10, "pro"), (40, 8, "clear")])
def test_figure_text_draws_what_plotexts_ansi_text_drew(width, height, theme):
    old = Text.from_ansi(_figure(width, height, theme).build())
    new = figure_text(_figure(width, height, theme))
    assert new.plain == old.plain
    console = Console(width=200, color_system="truecolor", force_terminal=True)
    assert list(Segment.simplify(console.render(new))) == list(Segment.simplify(console.render(old)))


def test_the_frontier_chart_keeps_every_point_visible_under_its_legend_and_line():
    """plotext puts the legend over the plot's top left corner, where speculation's low-load points sit
    (few tok/s per GPU, many per user): the y axis leaves the legend its rows. The frontier's line is
    drawn under the points, so a point on it keeps its mark. Every spec point (a dot) is drawn."""
    from eagletui.core.runs.frontier import frontiers
    from eagletui.ui.widgets.frontier_plot import plot_frontier
    from tests.test_slo_frontier import _book, _session

    (f,) = frontiers(_book(_session()[0]))
    spec = [p for c in f.curves if c.spec for p in c.points if p.meets_slo is not False]  # misses: a grey x
    top = max(p.decode_tok_s_per_user for c in f.curves for p in c.points)
    assert any(p.decode_tok_s_per_user == top for p in spec)  # the top-left point is speculation's
    assert any(p.on_frontier for p in spec)
    for width, height in ((147, 30), (130, 22)):
        p = Plot()
        p.plotsize(width, height)
        p._set_size(width, height)
        plot_frontier(p, f, rows=height)
        lines = figure_text(p).plain.splitlines()
        legend = [ln for ln in lines if "•• " in ln or "++ " in ln or "▞▞ " in ln]
        assert len(legend) == len(f.curves) + 1
        drawn = sum(ln.count("•") for ln in lines) - 2 * sum(1 for c in f.curves if c.spec)
        assert drawn == len(spec), "\n".join(lines)
    # too short to give the legend its rows: no legend (the table under the chart names the curves)
    p = Plot()
    p.plotsize(100, 12)
    p._set_size(100, 12)
    plot_frontier(p, f, rows=12)
    lines = figure_text(p).plain.splitlines()
    assert not any("•• " in ln or "▞▞ " in ln for ln in lines)
    assert sum(ln.count("•") for ln in lines) == len(spec), "\n".join(lines)
