"""A fixed-size widget showing one Rich Text, repainted only when the text changes.

``Static.update`` always asks for a layout of the screen; for panes refreshed at 10 Hz whose size never
depends on their content (status line, phase bars) a plain repaint is all that is needed.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


class TextView(Widget):
    def __init__(self, text: Text | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._text = text if text is not None else Text()

    def render(self) -> Text:
        return self._text

    def set_text(self, text: Text) -> None:
        if text.plain != self._text.plain or text.spans != self._text.spans:
            self._text = text
            self.refresh()
