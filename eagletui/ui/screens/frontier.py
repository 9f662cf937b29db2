"""The frontier view (``v``, from the Runs tab or anywhere): per launch config, tok/s per GPU against decode
tok/s per user over the loads measured, the Pareto frontier drawn as a line, a TPOT or ITL bound of the
``[slo]`` a red line (:mod:`eagletui.core.runs.decode_axis`), points that miss the SLO greyed, and the
answer under the SLO.

Everything it shows is :func:`eagletui.core.runs.frontier.frontiers` of the session's run book, the
function ``sweep --json``, the exports and the browser read too; this screen only draws it. It follows
the run book live (a sweep's cells land as they finish): each refresh asks whether a result arrived
since it last drew (the results' count) and only then takes the frontier (folded once per book version,
shared with the charts column's chart) and replots, the table in one frame and the chart in the next, so
an open view costs a counter check per tick while decode lines stream in. Where the terminal is too small for a
chart (80x24), the same frontier is a table.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static
from textual_plotext import PlotextPlot

from eagletui.core.runs.book import RunBook
from eagletui.core.runs.frontier import Frontier, frontiers
from eagletui.core.runs.frontier_text import frontier_lines
from eagletui.core.textsafe import inert
from eagletui.ui.widgets.frontier_plot import latest, plot_frontier
from eagletui.ui.widgets.plotext_text import figure_text

#: seconds between checks for new results (a check is a sum of list lengths)
REFRESH_S = 0.5
#: below this size the chart has no room to say anything: the frontier is a table
MIN_CHART = (100, 30)
#: the view before any benchmark (an empty chart frame said nothing): where the frontier comes from
NOTHING_YET = (
    "no benchmark yet: the frontier fills as benchmarks land (b, or a sweep from the Queue tab, 5; an"
    " unfinished headless sweep's runs come with it when w resumes it). A finished headless sweep's"
    " frontier: 'eagletui sweep' with the same profile prints its report again, or replay its session"
)


class FrontierChart(PlotextPlot):
    """One frontier: a scatter per curve, the SLO misses grey, the frontier a line through its points."""

    DEFAULT_CSS = "FrontierChart { height: 1fr; min-height: 12; }"

    def draw(self, f: Frontier) -> None:
        self.plt.clear_data()
        self.plt.clear_figure()
        plot_frontier(self.plt, f, rows=self.size.height)
        self.refresh()

    def render(self) -> Text:
        """As ``PlotextPlot.render`` (sized to the widget, in the app's theme), the figure read from
        plotext's matrices instead of its ANSI text (:mod:`eagletui.ui.widgets.plotext_text`)."""
        w, h = self.size
        self.plt.plotsize(w, h)
        self.plt._set_size(w, h)
        self.plt.theme(self._get_plotext_theme_name(self.app.theme))
        return figure_text(self.plt)


class FrontierScreen(ModalScreen[None]):
    """The session's frontier(s), live; Escape closes."""

    BINDINGS = [Binding("escape,q", "dismiss_none", "Close")]
    DEFAULT_CSS = """
    FrontierScreen { align: center middle; }
    FrontierScreen > Vertical { width: 96%; height: 94%; background: $surface; border: thick $primary;
        padding: 0 1; }
    FrontierScreen .title { text-style: bold; color: $accent; }
    FrontierScreen #frontier-text { height: auto; }
    FrontierScreen #frontier-answer { height: auto; text-style: bold; }
    FrontierScreen VerticalScroll { height: auto; max-height: 40%; }
    FrontierScreen.small VerticalScroll { height: 1fr; max-height: 100%; }
    FrontierScreen.small FrontierChart { display: none; }
    """

    def __init__(self, book: Any) -> None:
        super().__init__(id="frontier-screen")
        #: a callable giving the current run book (a replay's seek replaces it) or the book itself
        self._book = book
        self._seen: tuple[int, int] | None = None
        self.frontiers: tuple[Frontier, ...] = ()

    def book(self) -> RunBook:
        return self._book() if callable(self._book) else self._book  # type: ignore[no-any-return]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Frontier — tok/s per GPU vs decode tok/s per user, per launch config", classes="title")
            yield FrontierChart(id="frontier-chart")
            yield Static(Text(""), id="frontier-answer", markup=False)
            with VerticalScroll():
                yield Static(Text(NOTHING_YET), id="frontier-text", markup=False)

    def on_mount(self) -> None:
        self._layout()
        self.refresh_frontier()
        self.set_interval(REFRESH_S, self.refresh_frontier)

    def on_resize(self) -> None:
        self._layout()
        self._seen = None  # the table or the chart: draw again for the new size

    def _layout(self) -> None:
        w, h = self.app.size
        self.set_class(w < MIN_CHART[0] or h < MIN_CHART[1], "small")

    def refresh_frontier(self) -> bool:
        """Fold and draw again if a result arrived (or the book was replaced) since the last draw."""
        book = self.book()
        key = (id(book), sum(len(r.results) for r in book.runs.values()))
        if key == self._seen:
            return False
        self._seen = key
        self.frontiers = frontiers(book)
        small = self.has_class("small")
        lines: list[str] = []
        for f in self.frontiers:
            lines += frontier_lines(f.to_json(), all_points=not small, answer=False)
        # the answer above the table, never scrolled out of sight by a long sweep's rows
        several = len(self.frontiers) > 1
        answers = [inert(f"{f.target}: {f.answer}" if several else f.answer) for f in self.frontiers if f.answer]
        self.query_one("#frontier-answer", Static).update(Text("\n".join(answers)))
        marks = "* on the frontier  x misses the SLO (grey x in the chart)  · another point does better on both"
        if lines and not small:
            lines.append(marks)
        self.query_one("#frontier-text", Static).update(Text("\n".join(lines) or NOTHING_YET))
        newest = latest(self.frontiers)  # the one the newest launch is on, as the charts column's
        if newest is not None and not small:
            # in the frame after the table's: the table's new height re-lays the view out, plotext
            # builds the whole figure, and the two in one frame were the view's slowest frames
            self.call_after_refresh(self.query_one(FrontierChart).draw, newest)
        return True

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
