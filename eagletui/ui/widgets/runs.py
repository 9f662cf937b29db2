"""The runs table: one row per launch with its diff vs the baseline, Δ% and verdict."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from eagletui.core.textsafe import inert
from eagletui.ui.widgets.phases import fmt_secs
from eagletui.ui.widgets.stepbars import step_bars

if TYPE_CHECKING:
    from eagletui.core.runs import RunBook
    from eagletui.core.state import SessionState

# The numbers first and the free-length config diff last, so a narrow pane still shows what matters.
COLUMNS = (
    "#",
    "tok/s",
    "Δ tok/s",
    "accept",
    "Δ acc",
    "TTFT ms",
    "Δ TTFT",
    "verdict",
    "phases",
    "config vs baseline",
)


def _delta_cell(d: Any) -> Text:
    if d is None or d.pct is None:
        return Text("—", style="dim")
    text = f"{d.pct:+.1f}%"
    if not d.flagged:
        return Text(text, style="dim")  # inside the noise band: not coloured
    return Text(text, style="bold green" if d.better else "bold red")


class RunsTable(DataTable):
    class RunSelected(Message):
        def __init__(self, launch: int) -> None:
            super().__init__()
            self.launch = launch

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._last: Any = None

    def on_mount(self) -> None:
        for c in COLUMNS:
            self.add_column(c, key=c)

    def show(self, runbook: RunBook | None, state: SessionState) -> None:
        if runbook is None:
            return
        rows = runbook.rows()
        key = tuple((r.to_dict().__repr__()) for r in rows)
        if key == self._last:
            return
        self._last = key
        cursor = self.cursor_row
        self.clear()
        for r in rows:
            verdict = Text(r.verdict, style={"pass": "bold green", "fail": "bold red"}.get(r.verdict, "dim"))
            if r.alarms:
                verdict.append(" ⚠", style="bold yellow")
            label = Text(f"{r.launch}{'★' if r.is_baseline else ''}")
            diff = Text(inert(r.diff if not r.failure else f"{r.diff}  ✘ {r.failure}"))
            if r.warnings:
                diff.append(" ≠workload", style="yellow")
            self.add_row(
                label,
                r.tok_s.text(1),
                _delta_cell(r.deltas.get("tok_s")),
                r.accept_len.text(2),
                _delta_cell(r.deltas.get("accept_len")),
                r.ttft_ms.text(0),
                _delta_cell(r.deltas.get("ttft_ms")),
                verdict,
                fmt_secs(r.phase_total_s) if r.phase_total_s else "—",
                diff,
                key=str(r.launch),
            )
        if self.row_count:
            self.move_cursor(row=min(max(cursor, 0), self.row_count - 1))

    def selected_launch(self) -> int | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
            return int(key.value or "")
        except Exception:
            return None

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value is not None:
            self.post_message(self.RunSelected(int(event.row_key.value)))

    def details(self, runbook: RunBook | None, state: SessionState, launch: int) -> Text:
        t = Text()
        run = runbook.runs.get(launch) if runbook is not None else None
        la = state.launches.get(launch)
        if run is None and la is None:
            return Text("no data for this run")
        cfg = (run.config if run else None) or (la.config if la else {})
        t.append("config\n", style="bold")
        t.append(json.dumps(cfg, indent=2, default=str) + "\n")
        if la is not None and la.command:
            t.append("\nlaunch command\n", style="bold")
            t.append(inert(shlex.join(la.command)) + "\n")
        if la is not None:
            t.append("\nphases\n", style="bold")
            for name, st in la.phases.items():
                if st.seconds is not None:
                    t.append(f"  {name:15} {fmt_secs(st.seconds)}\n")
            if la.failure:
                f = la.failure
                t.append(
                    f"\nfailure: {inert(f.kind)}: {inert(f.message)}\nhint: {inert(f.hint)}\n", style="red"
                )
        if runbook is not None and run is not None:
            r = runbook.row(launch)
            t.append("\nbenchmark\n", style="bold")
            t.append(
                f"  tok/s {r.tok_s.text(1)}   accept {r.accept_len.text(2)}   TTFT p50 {r.ttft_ms.text(0)} ms   repeats {r.repeats}\n"
            )
            for res in run.results:
                for name, dist in (res.stats or {}).items():
                    if isinstance(dist, dict):
                        vals = "  ".join(
                            f"{k} {v:.2f}" for k, v in dist.items() if isinstance(v, int | float)
                        )
                        t.append(f"  {name:10} {vals}\n")
            t.append(f"\nverdict: {r.verdict}  " + inert("; ".join(r.reasons)) + "\n")
            if r.economics:
                t.append(inert(r.economics) + "\n", style="bold")
            if run.step_profile:
                t.append("\nstep profile\n", style="bold").append(step_bars(runbook, launch))
            for a in r.alarms:
                t.append(f"⚠ {a}\n", style="yellow")
            for w in r.warnings:
                t.append(f"⚠ {w}\n", style="yellow")
        return t
