"""Modal screens: help, diff, run details, confirm. All dismiss with Escape."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from eagletui.core.profile.toggles import split_key
from eagletui.ui.widgets.tuning import show_value as _v


class _Modal(ModalScreen):
    BINDINGS = [Binding("escape,q", "dismiss_none", "Close")]
    DEFAULT_CSS = """
    _Modal { align: center middle; }
    _Modal > Vertical { width: 90%; max-width: 110; height: auto; max-height: 90%;
        background: $surface; border: thick $primary; padding: 1 2; }
    /* a title is a sentence that wraps (a Label is as wide as its text: the stop question's warning was
       cut off at every size) */
    _Modal .title { text-style: bold; color: $accent; margin-bottom: 1; width: 100%; }
    /* the box fits its text: a scroll area takes all the height it may (1fr), which left a 5-line
       body in a 45-row box at 200×50; a long body scrolls inside the box (max height: _fit) */
    _Modal > Vertical > VerticalScroll { height: auto; }
    """

    #: rows of the box that are not its scroll area: the border (2), the padding (2), the title and
    #: its margin (2)
    CHROME_ROWS = 6

    def on_mount(self) -> None:
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """The scroll area's most rows: the box's 90 % less its chrome, so a long body's last lines
        are reachable (CSS cannot subtract the title from a percentage)."""
        rows = max(3, int(self.size.height * 0.9) - self.CHROME_ROWS)
        for scroll in self.query(VerticalScroll):
            scroll.styles.max_height = rows

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class HelpScreen(_Modal):
    def __init__(self, bindings: list[tuple[str, str, str]], config_file: str = "") -> None:
        super().__init__()
        self.rows = bindings
        self.config_file = config_file or "config.toml"

    def compose(self) -> ComposeResult:
        t = Text()
        width = max((len(k) for k, _, _ in self.rows), default=6)
        for key, desc, bid in self.rows:
            t.append(f"{key.ljust(width)}  ", style="bold")
            t.append(desc)
            if bid:
                t.append(f"   [{bid}]", style="dim")
            t.append("\n")
        t.append(
            f'\nKeys can be remapped in {self.config_file}: [keymap] id = "key" (ids in brackets).\n',
            style="dim",
        )
        t.append("ctrl+p opens the command palette with every action.", style="dim")
        with Vertical():
            yield Label("eagletui — keys", classes="title")
            with VerticalScroll():
                yield Static(t, id="help-text")


class TextScreen(_Modal):
    """A titled block of text (diff, run details)."""

    def __init__(self, title: str, body: Text | str, screen_id: str = "") -> None:
        super().__init__(id=screen_id or None)
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, classes="title", markup=False)
            with VerticalScroll():
                yield Static(self.body, id="text-body", markup=False)


class DiffScreen(TextScreen):
    """The pending changes; ``a`` applies them from here (the text says so), Escape closes."""

    BINDINGS = [Binding("a", "apply", "Apply")]

    def __init__(self, title: str, body: Text | str) -> None:
        super().__init__(title, body, "diff-screen")

    def action_apply(self) -> None:
        # Close first: the apply may ask (ConfirmScreen) or toast, and both belong over the main screen.
        self.dismiss(None)
        self.app.call_later(self.app.run_action, "apply", self.app.default_screen)


class ConfirmScreen(_Modal):
    BINDINGS = [Binding("y", "yes", "Yes"), Binding("n,escape", "no", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, classes="title", markup=False)
            yield Button("Yes (y)", id="yes", variant="error")
            yield Button("No (n)", id="no")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


def diff_text(
    diff: dict[str, Any], command: str | list[str] | None, applies: str = "a applies (preflight, stop, relaunch)"
) -> Text:
    t = Text()
    if not diff:
        t.append("No pending changes. Stage some in the Tune tab (←/→ on a toggle).\n", style="dim")
    for key, (old, new) in diff.items():
        kind, name = split_key(key)
        label = kind.name if kind is not None else name  # "target", "command": no kind, no name
        name = name if kind is not None else ""
        if old is True or new is True:  # a switch flag: absent means off (not `in`: 1 == True)
            old, new = bool(old), bool(new)
        t.append(f"{label:4} ", style="dim")
        t.append(f"{name}  ", style="bold")
        t.append(f"{_v(old)}", style="red")
        t.append(" → ")
        t.append(f"{_v(new)}\n", style="green")
    if command:
        import shlex

        t.append("\nnew command:\n", style="bold")
        t.append((command if isinstance(command, str) else shlex.join(command)) + "\n", style="dim")
    t.append(f"\n{applies}; escape closes.", style="dim")
    return t
