"""The log pane: a line-API scroll view over a bounded ring of classified lines.

Rendering only the visible rows keeps a 100,000-line scrollback as cheap as an empty one, and since
lines are turned into :class:`~rich.segment.Segment` s directly, log text is never parsed as Rich
markup or ANSI: escape bytes are shown as visible symbols.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Final, NamedTuple

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from eagletui.core.events import LogLine

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
MAX_RENDER = 4000  # a 10 MB line is shown truncated; the record keeps it whole


def _visible_control(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x20:
        return chr(0x2400 + c)  # ␛ for ESC, etc.
    return "␡" if c == 0x7F else f"\\x{c:02x}"  # C1 controls (a one-byte CSI is 0x9b)


def printable(text: str) -> str:
    """Make control characters visible (ESC → ␛) so a log can't drive the terminal."""
    if len(text) > MAX_RENDER:
        text = text[:MAX_RENDER] + f" … [{len(text) - MAX_RENDER} more chars]"
    if _CONTROL_RE.search(text):
        text = _CONTROL_RE.sub(_visible_control, text)
    return text.replace("\t", "    ")


# One line of the pane: (text, kind, rank, count, ranks, prefix end, rank span), where count > 1 means
# identical lines from several ranks collapsed into one; the prefix end and the rank label's span are
# the log format's (LogLine), so the pane knows no server's prefix. A plain tuple of strings and ints
# on purpose: CPython's collector stops tracking such tuples, so a full 100,000-row scrollback adds
# nothing to a full collection. As objects (dataclass or NamedTuple, both stay tracked) every gen-2
# collection walked all the rows and paused the app for ~70 ms, several times a second during a burst.
Row = tuple[str, str, "int | None", int, tuple[int, ...], int, tuple[int, int]]
# Field positions in a Row; Final literals so a type checker knows each field's type.
TEXT: Final = 0
KIND: Final = 1
RANK: Final = 2
COUNT: Final = 3
RANKS: Final = 4
PREFIX: Final = 5
SPAN: Final = 6
_NO_SPAN = (0, 0)


class _LinePass(NamedTuple):
    """What every line of one render pass shares (:meth:`LogView.render_lines`)."""

    scroll_x: int
    scroll_y: int
    width: int
    style: Style
    selection: Selection | None
    rows: list[Row] | deque[Row]


def make_row(
    text: str, kind: str, rank: int | None, prefix_end: int = 0, rank_span: tuple[int, int] = _NO_SPAN
) -> Row:
    return (text, kind, rank, 1, () if rank is None else (rank,), prefix_end, rank_span)


def row_of(ev: LogLine) -> Row:
    """A pane row for a log line; the format's offsets follow the text through :func:`printable`."""
    raw = ev.text
    if len(raw) <= MAX_RENDER and raw.isprintable():
        # nearly every line: no control character and no tab (both are unprintable to str), so
        # :func:`printable` would hand it back as it is; one C call instead of a regex search and a replace
        return make_row(raw, ev.kind, ev.rank, ev.prefix_end, (ev.rank_start, ev.rank_end))
    text = printable(raw)
    pe, span = ev.prefix_end, (ev.rank_start, ev.rank_end)
    if len(text) != len(raw) and (pe or span != _NO_SPAN):
        pe = len(printable(raw[:pe]))
        if span != _NO_SPAN:
            span = (len(printable(raw[: span[0]])), len(printable(raw[: span[1]])))
    return make_row(text, ev.kind, ev.rank, pe, span)


class LogView(ScrollView, can_focus=True):
    """Follows the tail unless the user scrolls up; ``f``/End resumes."""

    BINDINGS = [
        # End only: ``f`` is the app's binding (shown in the key bar, and it works from any tab)
        Binding("end", "follow", "Follow", id="log.follow", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("pageup", "page_up", "PgUp", show=False),
        Binding("pagedown", "page_down", "PgDn", show=False),
        Binding("up", "scroll_up", show=False),
        Binding("down", "scroll_down", show=False),
    ]

    DEFAULT_CSS = """
    LogView { height: 1fr; }
    """

    follow: reactive[bool] = reactive(True)

    class FollowChanged(Message):
        def __init__(self, follow: bool) -> None:
            super().__init__()
            self.follow = follow

    def __init__(self, max_lines: int = 100_000, **kwargs) -> None:
        super().__init__(**kwargs)
        self.max_lines = max_lines
        self.rows: deque[Row] = deque(maxlen=max_lines)
        self._visible: list[Row] | None = None  # filtered view, None = all rows
        self.filter_kinds: set[str] | None = None
        self.filter_rank: int | None = None
        self.collapse_ranks = True
        self.search: str = ""
        self.hits: list[int] = []
        self._hit_rows: list[Row] = []  # the rows behind ``hits`` (a filter change renumbers them)
        self.hit_index: int = -1
        self._pending: list[Row] = []
        self._width = 0
        self._styles: dict[str, Style] = {}
        self.dropped = 0
        self._pass: _LinePass | None = None  # set while Textual renders a frame's lines

    # ------------------------------------------------------------------ data in

    def add_events(self, events: list[LogLine]) -> None:
        """Buffer lines; they are merged into the view on the next :meth:`flush` (coalesced repaint)."""
        for ev in events:
            self.add_event(ev)

    def add_event(self, ev: LogLine) -> None:
        """Buffer one line (the repaint's path: one call per log line of a burst, no list around it)."""
        row = row_of(ev)
        if ev.frame and self._pending and ev.kind == "progress":
            last = self._pending[-1]
            if last[KIND] == "progress" and _same_bar(last[TEXT][last[PREFIX] :], row[TEXT][row[PREFIX] :]):
                self._pending[-1] = row  # the next frame of the same bar
                return
        self._pending.append(row)

    def add_marker(self, text: str) -> None:
        self._pending.append(make_row(text, "phase", None))

    def flush(self) -> None:
        """Merge the pending rows. A filtered view and the search's hits follow row by row (the rows
        added, the rows that fell off the ring's front, a last row merged into): rebuilding them from
        the whole 100,000-row ring at every 10 Hz flush was the pane's cost while a filter or a search
        was on during a burst (issue 33 item 21)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        rows = self.rows
        vis = self._visible
        keep = self._kept() if vis is not None else None
        before = len(vis) if vis is not None else len(rows)  # the view's rows before this flush
        front = 0  # view rows that fell off the front of the full ring
        appended = 0
        touched_last = False  # the view's last row before this flush was merged into
        for row in pending:
            if rows:
                last = rows[-1]
                merged = self._merged(last, row)
                if merged is not None:
                    rows[-1] = merged
                    touched_last = touched_last or not appended
                    if vis is not None and keep is not None:
                        _replace_last(vis, keep, last, merged)
                    continue
            if len(rows) == rows.maxlen:
                self.dropped += 1
                if keep is None or keep(rows[0]):
                    front += 1
            rows.append(row)
            appended += 1
            if vis is not None and keep is not None and keep(row):
                vis.append(row)
        if vis is not None and front:
            del vis[:front]
        # The virtual width comes from the content (measured here, not while painting), so the
        # horizontal scrollbar does not depend on which rows happened to be drawn.
        widest = max(len(r[TEXT]) for r in pending) + 16  # room for a collapsed "TP0–7 ×8" label
        if widest > self._width:
            self._width = widest
        if self.search:
            self._follow_hits(before - (1 if touched_last else 0), front)
        self._update_size()

    def _follow_hits(self, unchanged: int, front: int) -> None:
        """The search's hits after a flush: those among the view's first ``unchanged`` rows of before
        (less the ``front`` rows that fell off) are kept, shifted; only the rows after them are searched."""
        if front > unchanged:  # more fell off than was there: nothing of before is left
            self._find_hits()
            return
        rows = self.view_rows
        needle = self.search.lower()
        kept = [(h - front, r) for h, r in zip(self.hits, self._hit_rows, strict=True) if front <= h < unchanged]
        start = unchanged - front
        found = [(i, rows[i]) for i in range(start, len(rows)) if needle in rows[i][TEXT].lower()]
        both = kept + found
        self._find_hits([h for h, _ in both], [r for _, r in both])

    def _merged(self, last: Row, row: Row) -> Row | None:
        """What the ring's last row becomes when ``row`` merges into it (None: ``row`` is a row of its
        own): a tqdm frame replaces the previous frame of the same bar, and ranks logging the same
        message a second apart share one row, labelled with all of them."""
        if (
            row[KIND] == "progress"
            and last[KIND] == "progress"
            and _same_bar(last[TEXT][last[PREFIX] :], row[TEXT][row[PREFIX] :])
        ):
            return row
        rank, last_ranks = row[RANK], last[RANKS]
        if self.collapse_ranks and rank is not None and last[RANK] is not None:
            if rank not in last_ranks and row[TEXT][row[PREFIX] :] == last[TEXT][last[PREFIX] :]:
                return (*last[:COUNT], last[COUNT] + 1, (*last_ranks, rank), *last[PREFIX:])
        return None

    def _kept(self) -> Callable[[Row], bool]:
        """Whether a row shows under the current filter."""
        kinds, rank = self.filter_kinds, self.filter_rank

        def keep(r: Row) -> bool:
            return (kinds is None or r[KIND] in kinds) and (rank is None or rank in r[RANKS] or r[RANK] is None)

        return keep

    def clear(self) -> None:
        self.rows.clear()
        self._pending.clear()
        self._refilter()

    # ------------------------------------------------------------------ filters / search

    @property
    def view_rows(self) -> list[Row] | deque[Row]:
        return self._visible if self._visible is not None else self.rows

    def set_filter(self, kinds: set[str] | None, rank: int | None = None) -> None:
        self.filter_kinds = kinds
        self.filter_rank = rank
        self._refilter()

    def filter_label(self) -> str | None:
        """The active filter in words (``errors · TP1``), None when every line shows."""
        parts: list[str] = []
        if self.filter_kinds is not None:
            parts.append(next((n for n, k in FILTER_NAMES.items() if k == self.filter_kinds), "custom"))
        if self.filter_rank is not None:
            parts.append(f"TP{self.filter_rank}")
        return " · ".join(parts) or None

    def _refilter(self) -> None:
        if self.filter_kinds is None and self.filter_rank is None:
            self._visible = None
        else:
            kinds, rank = self.filter_kinds, self.filter_rank
            self._visible = [  # inline, not _kept(): a call per row would double a filter key's cost
                r
                for r in self.rows
                if (kinds is None or r[KIND] in kinds)
                and (rank is None or rank in r[RANKS] or r[RANK] is None)
            ]
        if self.search:
            self._find_hits()
        self._update_size()

    def set_search(self, text: str) -> int:
        self.search = text
        self._find_hits()
        if self.hits:
            self.hit_index = len(self.hits) - 1
            self._goto_hit()
        self.refresh()
        return len(self.hits)

    def _find_hits(self, hits: list[int] | None = None, hit_rows: list[Row] | None = None) -> None:
        """The hits in the rows shown now (``hits``/``hit_rows``: found already, by :meth:`flush`). After
        a filter change the current hit stays the same line when it is still shown, else the nearest
        one before it: never "hit 0/8"."""
        rows = self.view_rows
        current = (
            self._hit_rows[self.hit_index]
            if 0 <= self.hit_index < len(getattr(self, "_hit_rows", []))
            else None
        )
        if hits is None or hit_rows is None:
            needle = self.search.lower()
            hits = [i for i, r in enumerate(rows) if needle in r[TEXT].lower()] if needle else []
            hit_rows = [rows[i] for i in hits]
        self.hits, self._hit_rows = hits, hit_rows
        if not self.hits:
            self.hit_index = -1
            return
        if current is not None:
            same = next((k for k, r in enumerate(self._hit_rows) if r is current), None)
            if same is not None:
                self.hit_index = same
                return
        if not 0 <= self.hit_index < len(self.hits):
            self.hit_index = len(self.hits) - 1

    def hit_label(self) -> str:
        """Which search hit is shown: ``hit 3/8`` (``no hits``; empty when there is no search)."""
        if not self.search:
            return ""
        if not self.hits:
            return "no hits"
        return f"hit {self.hit_index + 1}/{len(self.hits)}"

    def next_hit(self, step: int = 1) -> None:
        if not self.hits:
            return
        self.hit_index = (self.hit_index + step) % len(self.hits)
        self._goto_hit()

    def _goto_hit(self) -> None:
        if 0 <= self.hit_index < len(self.hits):
            self.follow = False
            y = self.hits[self.hit_index]
            self.scroll_to(y=max(0, y - self.size.height // 2), animate=False)
            self.refresh()

    def selected_text(self) -> str:
        """The mouse selection if any, else the current search hit, else the lines on screen."""
        selection = self.text_selection
        if selection is not None:
            got = self.get_selection(selection)
            if got and got[0]:
                return got[0]
        rows = self.view_rows
        if self.search and 0 <= self.hit_index < len(self.hits):
            return rows[self.hits[self.hit_index]][TEXT]
        top = int(self.scroll_offset.y)
        visible = [rows[i][TEXT] for i in range(top, min(len(rows), top + self.size.height))]
        return "\n".join(visible)

    # ------------------------------------------------------------------ scrolling / follow

    def _update_size(self) -> None:
        rows = self.view_rows
        width = max(self._width, self.size.width)
        size = Size(width, len(rows))
        if size != self.virtual_size:
            # virtual_size is a layout=True reactive: assigning it re-lays out the whole screen on
            # every flush. The pane's own box never changes with its content, so update the scroll
            # geometry in place instead (scrollbars that appear still ask for a layout themselves).
            self.set_reactive(LogView.virtual_size, size)
            self._scroll_update(size)
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def keep_following(self) -> None:
        """Called every tick: a flush that ran before layout (or behind a modal) must not strand the view."""
        if self.follow and self.scroll_offset.y < self.max_scroll_y:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def action_follow(self) -> None:
        self.follow = True
        self.scroll_end(animate=False, x_axis=False)

    def watch_follow(self, follow: bool) -> None:
        self.post_message(self.FollowChanged(follow))

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new < old and new < self.max_scroll_y:
            self.follow = False  # the user scrolled up: stop following
        elif new >= self.max_scroll_y and not self.follow and not self.search:
            self.follow = True

    def on_resize(self) -> None:
        self._update_size()

    # ------------------------------------------------------------------ rendering

    def on_mount(self) -> None:
        self._load_styles()

    def _load_styles(self) -> None:
        v = self.app.theme_variables
        self._styles = {
            "error": Style.parse(v.get("log-error", v.get("error", "red"))),
            "traceback": Style.parse(v.get("log-error", v.get("error", "red"))),
            "warning": Style.parse(v.get("log-warning", v.get("warning", "yellow"))),
            "phase": Style.parse(v.get("log-phase", v.get("accent", "cyan"))) + Style(bold=True),
            "progress": Style.parse(v.get("log-phase", v.get("accent", "cyan"))),
            "decode": Style.parse(v.get("log-decode", v.get("success", "green"))),
            "prefill": Style.parse(v.get("log-decode", v.get("success", "green"))),
            "http": Style(dim=True),
            "hit": Style.parse(f"on {v.get('warning', 'yellow')}") + Style(color="black"),
            "rank": Style(dim=True, italic=True),
        }

    def refresh_styles(self) -> None:
        self._load_styles()
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        """Textual asks for a frame's lines one :meth:`render_line` at a time; what every line of the pass
        shares (the pane's style, width, scroll offset, selection) is read once here. Each is a
        property that walks the DOM (``rich_style`` alone ~130 µs): per line that was over half of
        the pane's cost, paid for every row at every flush of a burst and in every full repaint."""
        self._pass = self._line_context()
        try:
            return super().render_lines(crop)
        finally:
            self._pass = None

    def _line_context(self) -> _LinePass:
        scroll_x, scroll_y = self.scroll_offset
        return _LinePass(
            int(scroll_x), int(scroll_y), self.size.width, self.rich_style, self.text_selection, self.view_rows
        )

    def render_line(self, y: int) -> Strip:
        ctx = self._pass or self._line_context()
        scroll_x, width, pane = ctx.scroll_x, ctx.width, ctx.style
        index = ctx.scroll_y + y
        rows = ctx.rows
        if index >= len(rows):
            if index == 0 and self._visible is not None and self.rows:
                # a filter that hides everything: say so, instead of a blank pane
                note = f"no lines match filter {self.filter_label()} (0 resets)"
                return Strip([Segment(note, self._styles.get("dim", Style(dim=True)))]).extend_cell_length(
                    width, pane
                )
            return Strip.blank(width, pane)
        row = rows[index]
        base = self._styles.get(row[KIND], Style())
        text = _display_text(row)
        segments: list[Segment] = []
        selection = ctx.selection
        span = selection.get_span(index) if selection is not None else None
        if span is not None:
            # Mouse selection on this row: the rare case, so the simple (Rich Text) path is fine.
            start, end = span
            line = Text(text, style=base, no_wrap=True, end="")
            line.stylize(
                self.screen.get_component_rich_style("screen--selection"),
                start,
                len(text) if end == -1 else end,
            )
            segments = list(line.render(self.app.console))
        elif self.search and self.search.lower() in text.lower():
            low, needle, pos = text.lower(), self.search.lower(), 0
            while True:
                i = low.find(needle, pos)
                if i < 0:
                    segments.append(Segment(text[pos:], base))
                    break
                segments.append(Segment(text[pos:i], base))
                segments.append(Segment(text[i : i + len(needle)], self._styles.get("hit", base)))
                pos = i + len(needle)
        elif text.isascii():
            # the common row: one cell per character, so the crop and the padding are slices and one
            # Strip is built instead of three (each Strip builds its own caches)
            shown = text[scroll_x : scroll_x + width]
            pad = width - len(shown)
            if shown:
                segments.append(Segment(shown, base))
            if pad > 0:
                segments.append(Segment(" " * pad, pane))
            return Strip(segments, width).apply_offsets(scroll_x, index)
        else:
            segments.append(Segment(text, base))
        strip = Strip(segments)
        strip = strip.crop(scroll_x, scroll_x + width).extend_cell_length(width, pane)
        return strip.apply_offsets(scroll_x, index)  # lets the mouse select text in the pane

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text, as shown (collapsed rank labels included): what ``ctrl+c`` copies."""
        text = "\n".join(_display_text(row) for row in self.view_rows)
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()


_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


#: The log filters by name (keys e, p, c, 0): the screen's keys and the filter indicator share them.
FILTER_NAMES: dict[str, set[str] | None] = {
    "errors": {"error", "traceback", "warning"},
    "phase": {"phase", "progress"},
    "decode": {"decode", "prefill"},
    "all": None,
}


def _same_bar(a: str, b: str) -> bool:
    """Two frames of one tqdm bar share the text before the percentage, numbers aside
    (``Capturing batches (bs=8 …)`` and ``(bs=4 …)`` are the same bar)."""
    ka = _NUMBERS.sub("#", a.split("%", 1)[0]).rstrip("# ")
    kb = _NUMBERS.sub("#", b.split("%", 1)[0]).rstrip("# ")
    return ka == kb or not ka or not kb  # tqdm's first frame has no description yet


def _replace_last(vis: list[Row], keep: Callable[[Row], bool], old: Row, new: Row) -> None:
    """The filtered view after the ring's last row ``old`` became ``new``."""
    if vis and vis[-1] is old:
        if keep(new):
            vis[-1] = new
        else:
            vis.pop()
    elif keep(new):
        vis.append(new)


def _display_text(row: Row) -> str:
    return _collapse_label(row) if row[COUNT] > 1 and row[RANKS] else row[TEXT]


def _collapse_label(row: Row) -> str:
    """The row's text with its rank label replaced by the collapsed ranks (``TP0–7 ×8``)."""
    text = row[TEXT]
    ranks = tuple(sorted(row[RANKS]))
    lo, hi = ranks[0], ranks[-1]
    label = f"TP{lo}–{hi} ×{len(ranks)}" if len(ranks) == hi - lo + 1 else f"TP{','.join(map(str, ranks))}"
    a, b = row[SPAN]
    if b > a:
        return text[:a] + label + text[b:]
    pe = row[PREFIX]
    return f"{text[:pe]}[{label}] {text[pe:]}"
