"""The tab strip above the panes: labels and an underline, drawn by one widget.

Textual's ``TabbedContent`` builds the strip from nine nested widgets and slides the underline over
twenty animation frames after every switch; under a log burst those frames queue behind the tail and
delay the next key. Here a switch is one repaint of a two-row widget; the app shows the matching pane.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget


class TabBar(Widget):
    """Tabs in a fixed order; some may be hidden (Charts has its own tab only in narrow terminals)."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"tabbar--tab", "tabbar--active", "tabbar--underline", "tabbar--highlight"}
    DEFAULT_CSS = """
    TabBar {
        height: 2;
        width: 1fr;
        text-wrap: nowrap;
        .tabbar--tab { color: $foreground 50%; }
        .tabbar--active { color: $foreground; text-style: bold; }
        .tabbar--underline { color: $foreground 15%; }
        .tabbar--highlight { color: $accent; }
    }
    """

    class Clicked(Message):
        def __init__(self, tab: str) -> None:
            super().__init__()
            self.tab = tab

    def __init__(self, tabs: list[tuple[str, str]], active: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self._order = [tab_id for tab_id, _ in tabs]
        self._labels = dict(tabs)
        self._hidden: set[str] = set()
        self._active = active
        self._spans: list[tuple[int, int, str]] = []

    @property
    def active(self) -> str:
        return self._active

    @active.setter
    def active(self, tab: str) -> None:
        if tab != self._active:
            self._active = tab
            self.refresh()

    def set_label(self, tab: str, label: str) -> None:
        if self._labels.get(tab) != label:
            self._labels[tab] = label
            self.refresh()

    def label(self, tab: str) -> str:
        return self._labels[tab]

    def set_hidden(self, tab: str, hidden: bool) -> None:
        if (tab in self._hidden) != hidden:
            (self._hidden.add if hidden else self._hidden.discard)(tab)
            self.refresh()

    def visible_tabs(self) -> list[str]:
        return [t for t in self._order if t not in self._hidden]

    def render(self) -> Text:
        style = self.get_component_rich_style
        tab_style, active_style = style("tabbar--tab"), style("tabbar--active")
        bar_style, highlight = style("tabbar--underline"), style("tabbar--highlight")
        labels = Text(no_wrap=True, end="")
        spans: list[tuple[int, int, str]] = []
        for tab in self.visible_tabs():
            start = labels.cell_len
            labels.append(f" {self._labels[tab]} ", active_style if tab == self._active else tab_style)
            spans.append((start, labels.cell_len, tab))
        self._spans = spans
        width = max(self.size.width, labels.cell_len)
        underline = Text("━" * width, style=bar_style, no_wrap=True, end="")
        for start, end, tab in spans:
            if tab == self._active:
                underline.stylize(highlight, start, end)
        return Text("\n", no_wrap=True, end="").join([labels, underline])

    def on_click(self, event: events.Click) -> None:
        for start, end, tab in self._spans:
            if start <= event.x < end:
                event.stop()
                self.post_message(self.Clicked(tab))
                return
