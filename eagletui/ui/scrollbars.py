"""A scrollbar draws its lines again only when what it shows changed.

Textual re-renders a widget's scrollbars whenever the widget or the bar is refreshed, and a bar is a Rich
renderable drawn through the console: ~4 ms for the log pane's 48-row vertical bar, ~1.4 ms for the
horizontal one, in every frame of a log burst (about a quarter of the frame), and again each time the
Log tab is shown. While the log follows its tail the thumb sits at the bottom and what the bar draws does
not change, however many lines arrive.

So the lines of the last render are kept with what decided them: the region asked for, the bar's size,
its renderer, direction, style (colours, hover and grab included) and where the thumb's eighth-cells
fall, computed as ``ScrollBarRender.render_bar`` computes them. When all of that is the same, the kept
lines are returned. A renderer other than Textual's own is never cached. Part of
:mod:`eagletui.ui.textual_patches`' switch.
"""

from __future__ import annotations

from math import ceil
from typing import Any

from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip

_original = ScrollBar.render_lines


def thumb_cells(size: int, virtual_size: float, window_size: float, position: float, bars: int) -> tuple | None:
    """Where ``render_bar`` puts the thumb, in cells and eighth-cells (None: no thumb drawn)."""
    if not (window_size and size and virtual_size and size != virtual_size):
        return None
    thumb_size = max(1, window_size / (virtual_size / size))
    at = (size - thumb_size) * (position / (virtual_size - window_size))
    start = int(at * bars)
    end = start + ceil(thumb_size * bars)
    return divmod(max(0, start), bars) + divmod(max(0, end), bars)


def bar_key(bar: ScrollBar, crop: Region) -> tuple | None:
    """What the bar's lines for ``crop`` depend on; None if they cannot be told (not cached)."""
    drawn: Any = bar.render()
    if type(drawn) is not ScrollBarRender:
        return None
    size = bar.size
    along = size.height if drawn.vertical else size.width
    window = ceil(drawn.window_size)
    bars = len(drawn.VERTICAL_BARS if drawn.vertical else drawn.HORIZONTAL_BARS)
    thumb = thumb_cells(along, ceil(drawn.virtual_size), window, drawn.position, bars)
    return (crop, size, drawn.vertical, drawn.style, thumb)


def render_lines(self: ScrollBar, crop: Region) -> list[Strip]:
    key = bar_key(self, crop)
    kept = self.__dict__.get("_eagletui_kept")
    if key is not None and kept is not None and kept[0] == key:
        return list(kept[1])
    lines = _original(self, crop)
    self.__dict__["_eagletui_kept"] = (key, list(lines)) if key is not None else None
    return lines


def install() -> None:
    """Patch Textual's ScrollBar (process-wide, once; the same lines either way)."""
    ScrollBar.render_lines = render_lines  # type: ignore[method-assign,assignment]
