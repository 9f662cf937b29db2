"""A plotext figure as Rich text, read straight from plotext's character and colour matrices.

``PlotextPlot.render`` asks plotext for the figure as one ANSI string (``set_canvas``: a string built a
character at a time, with a list comparison per cell) and hands it to ``Text.from_ansi``, which parses it
back. For the frontier view's chart (a whole screen of cells) those two steps were half the chart's
cost or more, in the view's slowest frames. :func:`figure_text` builds the same
:class:`~rich.text.Text` from the matrices: one span per run of cells of the same colours, the style of
each colour triple parsed once from the very ANSI prefix plotext would have written, so what is drawn
is what ``from_ansi`` gave (tests/test_plotext_text.py compares the two).
"""

from __future__ import annotations

from typing import Any

from plotext._utility import ansi_end, colors_to_ansi  # type: ignore[import-untyped]  # pinned 5.3.2
from rich.style import Style
from rich.text import Text


def _key(c: Any) -> Any:
    """A colour as a dict key (plotext keeps RGB colours as lists or tuples)."""
    return tuple(c) if isinstance(c, list) else c


def _style(fg: Any, st: Any, bg: Any, memo: dict[tuple[Any, Any, Any], Style | None]) -> Style | None:
    key = (_key(fg), _key(st), _key(bg))
    if key not in memo:
        prefix = colors_to_ansi(fg, st, bg)
        spans = Text.from_ansi(prefix + "x" + ansi_end).spans if prefix else []
        styles = [s.style for s in spans if isinstance(s.style, Style)]
        memo[key] = Style.combine(styles) if styles else None
    return memo[key]


def figure_text(fig: Any) -> Text:
    """``Text.from_ansi(fig.build())`` without the ANSI round trip; ``fig`` a plotext figure (the
    ``plt`` of a ``PlotextPlot``) sized and themed already."""
    fig._set_sizes()
    fig._build_matrix()
    if fig.monitor.fast_plot:  # plotext's own shortcut: no matrix to read
        return Text.from_ansi(fig.monitor.matrix.get_canvas())
    m = fig.monitor.matrix
    memo: dict[tuple[Any, Any, Any], Style | None] = {}
    out = Text()
    for row in m.Rows[::-1]:
        markers, fgs, sts, bgs = m.marker[row], m.fullground[row], m.style[row], m.background[row]
        n = len(markers)
        col = 0
        while col < n:
            fg, st, bg = fgs[col], sts[col], bgs[col]
            end = col + 1
            while end < n and fgs[end] == fg and sts[end] == st and bgs[end] == bg:
                end += 1
            out.append("".join(markers[col:end]), _style(fg, st, bg, memo))
            col = end
        out.append("\n")  # as plotext ends every row, the last one too
    return out

