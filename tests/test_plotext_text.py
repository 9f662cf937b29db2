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
