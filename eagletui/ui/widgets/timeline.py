"""The replay timeline: one line with the position, the paused state and the recording's marks.

``▶ 12:34 / 1:02:00 ×10  ──▲──●───◆─▲─✘──│─────`` — launches (▲), config changes (◆), results (●),
ready (✓), failures (✘) and exits (■) placed along the duration, the played part drawn heavier and the
position as ``│``. It reads the replayer (:class:`~eagletui.session.replay.StreamReplayer`: ``position``,
``duration``, ``paused``, ``speed``, ``marks``) a few times a second; everything else about seeking is
the driver's (:meth:`~eagletui.session.drivers.ReplayDriver.seek`). Shown only in a replay.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from eagletui.ui.widgets.textview import TextView

#: mark kind → (glyph, theme variable for its colour); earlier kinds win a shared cell
GLYPHS: dict[str, tuple[str, str]] = {
    "failure": ("✘", "error"),
    "launch": ("▲", "accent"),
    "config": ("◆", "warning"),
    "result": ("●", "success"),
    "ready": ("✓", "success"),
    "exit": ("■", "secondary"),
}
_RANK = {kind: i for i, kind in enumerate(GLYPHS)}
REFRESH_S = 0.25


def clock(seconds: float) -> str:
    """``75`` → ``1:15``, ``3720`` → ``1:02:00``."""
    s = max(0, int(seconds))
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def position_text(position: float, duration: float, paused: bool, speed: Any) -> str:
    """``▶ 12:34 / 1:02:00 ×10`` or ``⏸ 12:34 / 1:02:00``."""
    head = f"{'⏸' if paused else '▶'} {clock(position)} / {clock(duration)}"
    if paused:
        return head
    return f"{head} {'instant' if speed == 'instant' else f'×{float(speed):g}'}"


def place(marks: list[Any], duration: float, width: int) -> dict[int, str]:
    """Cell → the kind of mark shown there (the most important of those that fall in it)."""
    cells: dict[int, str] = {}
    if width <= 0:
        return cells
    for m in marks:
        if m.kind not in GLYPHS:
            continue
        cell = 0 if duration <= 0 else min(width - 1, int(m.t / duration * (width - 1) + 0.5))
        have = cells.get(cell)
        if have is None or _RANK[m.kind] < _RANK[have]:
            cells[cell] = m.kind
    return cells


def timeline_text(
    marks: list[Any],
    position: float,
    duration: float,
    paused: bool,
    speed: Any,
    width: int,
    colours: dict[str, str],
) -> Text:
    t = Text(no_wrap=True, overflow="crop")
    head = position_text(position, duration, paused, speed)
    t.append(head + "  ", style="bold")
    bar = max(0, width - len(head) - 2)
    if bar < 4:
        return t
    cells = place(marks, duration, bar)
    here = 0 if duration <= 0 else min(bar - 1, int(position / duration * (bar - 1) + 0.5))
    for i in range(bar):
        kind = cells.get(i)
        if i == here:
            t.append(
                GLYPHS[kind][0] if kind else "│", style=f"bold reverse {colours.get('accent', '')}".strip()
            )
        elif kind is not None:
            glyph, var = GLYPHS[kind]
            t.append(glyph, style=colours.get(var, ""))
        else:
            t.append("━" if i < here else "─", style="" if i < here else "dim")
    return t


class Timeline(TextView):
    """The replay's timeline line (fixed height: a repaint, never a layout). ``split: top`` rather than
    ``dock``: two widgets docked to one edge overlap, a split takes its row from everything else."""

    DEFAULT_CSS = """
    Timeline { height: 1; split: top; background: $panel; color: $foreground; padding: 0 1; }
    """

    def __init__(self, replayer: Any, **kwargs: Any) -> None:
        super().__init__(Text(), **kwargs)
        self.replayer = replayer
        self.marks: list[Any] = list(getattr(replayer, "marks", []))

    def on_mount(self) -> None:
        self.update_now()
        self.set_interval(REFRESH_S, self.update_now)

    def on_resize(self) -> None:
        self.update_now()

    def update_now(self) -> None:
        r = self.replayer
        v = self.app.theme_variables
        colours = {
            k: v.get(k, d)
            for k, d in (
                ("accent", "cyan"),
                ("warning", "yellow"),
                ("error", "red"),
                ("success", "green"),
                ("secondary", "magenta"),
            )
        }
        width = self.content_region.width or self.size.width
        self.set_text(timeline_text(self.marks, r.position, r.duration, r.paused, r.speed, width, colours))
