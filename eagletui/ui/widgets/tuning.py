"""The tuning panel: the profile's toggles with running vs pending values.

Changes are only *pending* until applied (``a``), so a user can stage several toggles and pay for one
ten-minute relaunch, and always see exactly what will change (``d``).
"""

from __future__ import annotations

import posixpath
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from eagletui.core.profile.model import Profile, Toggle
from eagletui.core.profile.staged import StagedConfig
from eagletui.core.textsafe import inert


def show_value(v: Any) -> str:
    if v is None:
        return "unset"
    if v is True:
        return "on"
    if v is False:
        return "off"
    return str(v)


def next_option(options: list[Any], current: Any, step: int, *, numeric: bool = False) -> Any:
    """The value ``step`` places from ``current`` in ``options`` (wrapping at the ends).

    A number off the grid (48 on a ``min = 1, step = 8`` grid) first snaps to the nearest grid value
    in the direction of the step (→ 49, ← 41) instead of jumping to an end of the range."""
    if current in options:
        return options[(options.index(current) + step) % len(options)]
    if numeric and isinstance(current, (int, float)) and not isinstance(current, bool):
        if step > 0:
            above = [o for o in options if o > current]
            return above[0] if above else options[0]
        below = [o for o in options if o < current]
        return below[-1] if below else options[-1]
    return options[0] if step > 0 else options[-1]


def help_line(t: Toggle | None, width: int = 0) -> Text:
    """The selected toggle's whole help, under the table: the help column is cut to whatever width
    is left (8 characters at 80 columns), so the full sentence is shown here, wrapped."""
    if t is None:
        return Text("")
    out = Text(f"{t.name}: ", style="bold")
    out.append(t.help or "no help text in the profile", style="" if t.help else "dim")
    choices = t.options()
    if choices and len(choices) <= 12:
        out.append(f"  ({' / '.join(show_value(c) for c in choices)})", style="dim")
    return out


def file_note(staged: StagedConfig) -> Text:
    """After a reattach whose server runs another config than the profile file: both, and which one
    ``r`` relaunches (empty when they are the same)."""
    from eagletui.core.profile.model import format_diff

    diff = staged.file_diff()
    if not diff or staged.file is None:
        return Text("")
    name = posixpath.basename(staged.file.path) if staged.file.path else staged.file.name
    out = Text("⚠ the server runs its recorded config, not the profile file's: ", style="bold yellow")
    # the running values come from the run's record on the host: never a control sequence on screen
    out.append(inert(f"running → {name}: {format_diff(diff, limit=4)}. "), style="yellow")
    out.append("r relaunches the running config; F stages the file's values (then d, a).", style="yellow")
    return out


def tune_footer(staged: StagedConfig, toggle: Toggle | None) -> Text:
    """Under the Tune table: the file's difference (if any), then the selected toggle's whole help."""
    note = file_note(staged)
    helptext = help_line(toggle)
    if not note.plain:
        return helptext
    return Text("\n").join([note, helptext]) if helptext.plain else note


class TuningPanel(DataTable):
    BINDINGS = [
        # In the key bar while the Tune tab has the focus (the key bar repaints only when its keys change).
        Binding("right,plus,equals_sign,l", "step(1)", "Step", id="tune.next", show=True, key_display="←/→"),
        Binding("left,minus,h", "step(-1)", "Prev value", id="tune.prev", show=False),
        Binding("enter,space", "cycle", "Cycle", show=True, key_display="Enter"),
        Binding("x,backspace", "discard", "Discard", id="tune.discard", show=True, key_display="x"),
        # after a reattach to a server that runs another config than the file (said under the table)
        Binding("F", "stage_file", "Stage file", id="tune.file", show=False),
    ]

    class Selected(Message):
        """The highlighted toggle changed (its whole help goes under the table)."""

        def __init__(self, toggle: Toggle | None) -> None:
            super().__init__()
            self.toggle = toggle

    class PendingChanged(Message):
        def __init__(self, pending: dict[str, Any]) -> None:
            super().__init__()
            self.pending = pending

    def __init__(self, staged: StagedConfig | None = None, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        #: the source of truth for what is staged (the session model's): this widget only renders it
        self.staged = staged if staged is not None else StagedConfig()
        self.error: str = ""

    @property
    def profile(self) -> Profile | None:
        return self.staged.profile

    @property
    def pending(self) -> dict[str, Any]:
        return self.staged.pending

    @property
    def server_version(self) -> str | None:
        return self.staged.server_version

    def on_mount(self) -> None:
        self.add_column("toggle", key="toggle")
        self.add_column("running", key="running")
        self.add_column("pending", key="pending")
        self.add_column("", key="help")

    def set_profile(self, profile: Profile) -> None:
        """The server now runs ``profile`` (staged toggles it lacks are dropped)."""
        self.staged.rebase(profile)
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Redraw from the staged config, and say how many toggles are staged."""
        self._rebuild()
        self.post_message(self.PendingChanged(self.staged.pending))

    def _rebuild(self) -> None:
        if self.profile is None:
            return
        row = self.cursor_row
        self.clear()
        for t in self.profile.toggles:
            self.add_row(*self._cells(t), key=t.key)
        if self.row_count:
            self.move_cursor(row=min(row, self.row_count - 1))

    def _cells(self, t: Toggle) -> tuple[Any, ...]:
        running = self.profile.toggle_value(t) if self.profile else None
        name = Text(t.name)
        if self.staged.is_staged(t.key):
            pending = Text(show_value(self.staged.staged_value(t.key)), style="bold reverse")
            name.stylize("bold")
        else:
            implied, value = self.staged.implied(t)  # goes (or comes back) with --speculative-algorithm
            pending = Text(show_value(value), style="italic") if implied else Text("")
        shown = Text(inert(show_value(running)))  # a reattached run's value is read from the host
        differs, in_file = self.staged.file_value(t)
        if differs:  # the profile file says otherwise: both, the running one first (r relaunches it)
            shown.append(inert(f" (file {show_value(in_file)})"), style="yellow")
        return name, shown, pending, Text(t.help, style="dim")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.post_message(self.Selected(self.current_toggle))

    @property
    def current_toggle(self) -> Toggle | None:
        if self.profile is None or not self.row_count:
            return None
        return self.profile.toggles[self.cursor_row]

    def action_cycle(self) -> None:
        """Enter: the next value (its own action so the key bar lists it beside ←/→)."""
        self.action_step(1)

    def action_step(self, step: int) -> None:
        t = self.current_toggle
        if t is None:
            return
        options = t.options()
        if not options:
            self.app.notify(f"{t.name}: no stepper for this toggle; edit the profile", severity="warning")
            return
        self.set_pending(
            t, next_option(options, self.staged.value(t), step, numeric=t.type in ("int", "float"))
        )

    def set_pending(self, t: Toggle, value: Any) -> bool:
        """Stage a value; an invalid one is refused inline with the reason."""
        error = self.staged.stage(t, value)
        if error is not None:
            self.error = error
            self.app.notify(error, title="refused", severity="error")
            return False
        self.update_cell(t.key, "toggle", self._cells(t)[0])
        for other in self.profile.toggles if self.profile else ():  # the flags that go with the algorithm
            self.update_cell(other.key, "pending", self._cells(other)[2], update_width=True)
        self.post_message(self.PendingChanged(self.staged.pending))
        return True

    def action_stage_file(self) -> None:
        """F: stage the profile file's values where the running config differs from them."""
        error = self.staged.stage_file()
        if error is not None:
            self.app.notify(error, severity="warning")
            return
        self._rebuild()
        self.post_message(self.PendingChanged(self.staged.pending))

    def action_discard(self) -> None:
        self.staged.discard()
        self._rebuild()
        self.post_message(self.PendingChanged({}))
