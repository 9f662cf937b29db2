"""The key hints along the bottom of the screen, drawn as one line of text by one widget.

Textual's ``Footer`` mounts a widget per key and recomposes all of them whenever the focus moves, which
costs a screen layout on every tab switch and makes each theme change restyle a dozen extra nodes. The
hints only ever need one row, so this widget renders them as a single ``Text`` and repaints (no layout)
when the set of keys changes. A click on a hint presses its key, as in Textual's footer.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widget import Widget


@dataclass(frozen=True, slots=True)
class KeyHint:
    key: str  # what simulate_key presses on click
    display: str  # what the user reads
    description: str
    enabled: bool


class KeyBar(Widget):
    """One row of ``key description`` hints for the focused widget's bindings, palette key on the right."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"keybar--key", "keybar--description"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        width: 1fr;
        background: $footer-background;
        color: $footer-foreground;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        .keybar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .keybar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
    }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hints: tuple[KeyHint, ...] = ()
        self.palette: KeyHint | None = None
        self._spans: list[tuple[int, int, KeyHint]] = []  # x ranges of the last render, for clicks
        self._hover: KeyHint | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)
        self.bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen) -> None:
        """Repaint only if what the bar shows changed: most focus moves leave the keys as they were."""
        if screen is not self.screen:
            return
        app = self.app
        hints: list[KeyHint] = []
        palette: KeyHint | None = None
        seen_actions: set[str] = set()
        active = screen.active_bindings
        if app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
            _node, binding, enabled, _tooltip = active[app.COMMAND_PALETTE_BINDING]
            palette = KeyHint(binding.key, app.get_key_display(binding), binding.description, enabled)
        hidden: frozenset[str] = getattr(screen, "hidden_actions", frozenset())
        for _node, binding, enabled, _tooltip in active.values():
            if not binding.show or binding.action in seen_actions or binding.action in hidden:
                continue
            seen_actions.add(binding.action)
            hints.append(KeyHint(binding.key, app.get_key_display(binding), binding.description, enabled))
        if tuple(hints) != self.hints or palette != self.palette:
            self.hints, self.palette = tuple(hints), palette
            self.refresh()

    def render(self) -> Text:
        """All hints if they fit; else tighter spacing; else hints dropped from the right, keeping the
        last two (help and quit come last) so every other key stays one F1 away."""
        width = self.size.width
        hints = list(self.hints)
        for compact in (False, True):
            text, spans = self._build(hints, compact, width)
            if text.cell_len <= width:
                break
        keep = len(hints[-2:])
        while text.cell_len > width and len(hints) > keep:
            del hints[-keep - 1]  # the last hint before the kept ones
            text, spans = self._build(hints, True, width)
        self._spans = spans
        return text

    def _build(self, hints: list[KeyHint], compact: bool, width: int) -> tuple[Text, list]:
        key_style = self.get_component_rich_style("keybar--key")
        desc_style = self.get_component_rich_style("keybar--description")
        hover, dim, plain = Style(reverse=True), Style(dim=True), Style()
        text = Text(no_wrap=True, end="")
        spans: list[tuple[int, int, KeyHint]] = []

        def add(hint: KeyHint) -> None:
            start = text.cell_len
            extra = (dim if not hint.enabled else plain) + (hover if hint is self._hover else plain)
            text.append(hint.display if compact else f" {hint.display} ", key_style + extra)
            if hint.description:
                text.append(f" {hint.description}" if compact else f"{hint.description} ", desc_style + extra)
            spans.append((start, text.cell_len, hint))
            if compact:
                text.append(" ")

        for hint in hints:
            add(hint)
        if self.palette is not None:
            tail = len(f" {self.palette.display} {self.palette.description} ")
            if text.cell_len + tail < width:
                text.append(" " * (width - text.cell_len - tail))
                add(self.palette)
        return text, spans

    def _hint_at(self, x: int) -> KeyHint | None:
        for start, end, hint in self._spans:
            if start <= x < end:
                return hint
        return None

    def on_click(self, event: events.Click) -> None:
        hint = self._hint_at(event.x)
        if hint is None:
            return
        event.stop()
        if hint.enabled:
            self.app.simulate_key(hint.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hint = self._hint_at(event.x)
        if hint is not self._hover:
            self._hover = hint
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.refresh()
