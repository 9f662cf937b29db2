"""The history view: benchmarked runs of earlier sessions on the same target and model, one of which
Enter pins as the baseline (:meth:`~eagletui.core.runs.book.RunBook.pin_external`).

The recordings are read in a worker thread (:func:`eagletui.session.baseline.history`), so opening the
view never blocks the log. Each row shows the like-for-like guard's verdict against the current run,
so a baseline on another tp or workload is visibly not one to compare with before it is pinned.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from eagletui.core.runs.compare import comparability
from eagletui.core.runs.run import Run
from eagletui.core.servers.spec import settings
from eagletui.core.textsafe import inert
from eagletui.session.baseline import ForeignRun, history
from eagletui.ui.workers import WorkerFailures


def row_text(fr: ForeignRun, current: Run | None) -> Text:
    """One row: SESSION:RUN, spec (with its step count) or not, the concurrency and the host measured
    at, tok/s, accept length, and the guard's verdict (inert text)."""
    run = fr.run
    acc = run.metric("accept_len").mean
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{fr.ref:<36} ", style="bold")
    steps = settings(run.config.get("args") or {})[0] if run.is_spec else None
    spec = f"spec s{steps}" if steps is not None else ("spec" if run.is_spec else "no-spec")
    t.append(f"{spec:<9}")
    head = run.headline()
    conc = head.concurrency if head is not None else None
    t.append(f"c={conc if conc is not None else '?':<4} ")
    t.append(f"{inert(run.target or '?')[:14]:<14} ")
    t.append(f"{run.metric('tok_s').text(1):>16} tok/s  ")
    t.append(f"accept {acc:.2f}  " if acc is not None else "accept –     ")
    reasons = comparability(current, run) if current is not None and current.good_results else []
    if reasons:
        t.append("not like for like: " + "; ".join(reasons), style="yellow")
    return t


class HistoryScreen(WorkerFailures, ModalScreen[ForeignRun | None]):
    """Earlier sessions' runs; Enter dismisses with the chosen one, Escape with None."""

    BINDINGS = [Binding("escape,q", "dismiss_none", "Close")]
    DEFAULT_CSS = """
    HistoryScreen { align: center middle; }
    HistoryScreen > Vertical { width: 90%; max-width: 130; height: auto; max-height: 80%;
        background: $surface; border: thick $primary; padding: 1 2; }
    HistoryScreen .title { text-style: bold; color: $accent; margin-bottom: 1; width: 100%; }
    /* the box fits its list (a fixed 80 % left one run in a 36-row box at 200×50); a long list scrolls
       inside it (max height: _fit) */
    HistoryScreen OptionList { height: auto; }
    """
    #: rows of the box that are not its list: the border (2), the padding (2), the title and its margin
    #: (2), the status line (1)
    CHROME_ROWS = 7

    def __init__(
        self, directory: Path, *, target: str, model: str, exclude: Path | None, current: Run | None
    ) -> None:
        super().__init__()
        self.directory, self.target, self.model, self.exclude = directory, target, model, exclude
        self.current = current
        self.runs: list[ForeignRun] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            what = " · ".join(x for x in (self.target, self.model) if x) or "any target"
            yield Static(Text(f"Earlier runs ({what}) — Enter pins as the baseline"), classes="title")
            yield Static(Text(f"reading {self.directory} …"), id="history-status")
            yield OptionList(id="history-list")

    def on_mount(self) -> None:
        self.query_one("#history-list", OptionList).display = False  # until there are runs to list
        self._fit()
        self.run_worker(self._load, name="session history", thread=True, exclusive=True, exit_on_error=False)

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """The list's most rows: the box's 80 % less its chrome, so the last run is reachable."""
        self.query_one("#history-list", OptionList).styles.max_height = max(
            3, int(self.size.height * 0.8) - self.CHROME_ROWS
        )

    def _load(self) -> None:
        try:
            runs = history(self.directory, target=self.target, model=self.model, exclude=self.exclude)
            error = ""
        except Exception as exc:  # a listing must not take the UI down
            runs, error = [], f"cannot read {self.directory}: {exc}"
        self.app.call_from_thread(self._show, runs, error)

    def _show(self, runs: list[ForeignRun], error: str) -> None:
        self.runs = runs
        status = self.query_one("#history-status", Static)
        if error:
            status.update(Text(error))
        elif not runs:
            status.update(Text(f"no benchmarked runs of earlier sessions in {self.directory}"))
        else:
            status.update(Text(f"{len(runs)} run(s) in {self.directory}"))
        options = self.query_one("#history-list", OptionList)
        options.clear_options()
        options.add_options([Option(row_text(fr, self.current), id=str(i)) for i, fr in enumerate(runs)])
        options.display = bool(runs)
        if runs:
            options.highlighted = 0
            options.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        i = int(event.option.id or 0)
        self.dismiss(self.runs[i] if 0 <= i < len(self.runs) else None)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
