"""The phase panel: one row per phase of the fixed vocabulary, a bar, a/b units, elapsed and ETA."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, ProgressBar, Static

from eagletui.core.events import PHASES
from eagletui.core.state import LaunchState

PHASE_LABELS = {
    "launch": "launch",
    "dist_init": "dist init",
    "load_target": "base weights",
    "load_draft": "draft weights",
    "kv_cache": "KV cache",
    "capture_target": "graphs target",
    "capture_draft": "graphs draft",
    "warmup": "warmup",
    "ready": "ready",
}

STATUS_MARK = {"pending": "·", "active": "▶", "done": "✔", "failed": "✘", "skipped": "–"}


def fmt_secs(s: float | None) -> str:
    if s is None:
        return ""
    s = max(0.0, s)
    if s < 60:
        return f"{s:4.1f}s"
    m, sec = divmod(int(s), 60)
    if m < 60:
        return f"{m}m{sec:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def set_label(label: Label | Static, content) -> None:
    """Update only on change: Static.update always asks for a layout, which is costly at 10 Hz."""
    key = content.plain + str(content.spans) if isinstance(content, Text) else content
    if getattr(label, "_eagle_last", None) != key:
        label._eagle_last = key
        label.update(content)


class PhaseRow(Horizontal):
    DEFAULT_CSS = """
    PhaseRow { height: 1; }
    PhaseRow > .mark { width: 2; }
    PhaseRow > .name { width: 14; }
    PhaseRow > .units { padding-right: 1; }
    PhaseRow > ProgressBar { width: 22; }
    PhaseRow > ProgressBar > Bar { width: 20; }
    PhaseRow > .units { width: 14; }
    PhaseRow > .time { width: 1fr; min-width: 16; }
    """

    def __init__(self, phase: str) -> None:
        super().__init__(id=f"phase-{phase}", classes="phase-row pending")
        self.phase = phase

    def compose(self) -> ComposeResult:
        yield Label(STATUS_MARK["pending"], classes="mark")
        yield Label(PHASE_LABELS[self.phase], classes="name")
        yield ProgressBar(total=None, show_percentage=False, show_eta=False)
        yield Label("", classes="units")
        yield Label("", classes="time")


class PhasePanel(Vertical):
    """Renders a :class:`LaunchState`; ``estimates`` maps phase → (median s, p95 s) from history."""

    DEFAULT_CSS = """
    PhasePanel { height: auto; }
    PhasePanel > #phase-summary { height: auto; }
    PhasePanel > #phase-failure { height: auto; display: none; }
    PhasePanel.failed > #phase-failure { display: block; }
    """

    def compose(self) -> ComposeResult:
        for phase in PHASES:
            yield PhaseRow(phase)
        yield Static("", id="phase-summary")
        yield Static("", id="phase-failure")

    def show(
        self, la: LaunchState | None, now: float, estimates: dict[str, tuple[float, float]] | None = None
    ) -> None:
        estimates = estimates or {}
        for phase in PHASES:
            row = self.query_one(f"#phase-{phase}", PhaseRow)
            st = la.phases[phase] if la else None
            status = st.status if st else "pending"
            for cls in ("pending", "active", "done", "failed", "skipped"):
                row.set_class(status == cls, cls)
            marks = row.query(Label)
            mark, _name, units, timing = marks[0], marks[1], marks[2], marks[3]
            set_label(mark, STATUS_MARK.get(status, "?"))
            bar = row.query_one(ProgressBar)

            def set_bar(total, progress=None, _bar=bar):
                key = (total, progress)
                if getattr(_bar, "_eagle_last", None) != key:
                    _bar._eagle_last = key
                    if progress is None:
                        _bar.update(total=total)
                    else:
                        _bar.update(total=total, progress=progress)

            if st is None:
                set_bar(None, 0)
                set_label(units, "")
                set_label(timing, "")
                continue
            if st.total:
                set_bar(st.total, min(st.done, st.total))
                unit = {"shards": "shards", "bs": "bs"}.get(st.unit, st.unit)
                set_label(units, f"{st.done}/{st.total} {unit}".strip())
            elif status in ("done", "skipped"):
                set_bar(1, 1 if status == "done" else 0)
                set_label(units, "")
            elif status == "active":
                set_bar(None)
                set_label(units, st.label[:12])
            else:
                set_bar(1, 0)
                set_label(units, "")
            elapsed = st.elapsed(now)
            est = estimates.get(phase)
            parts: list[str] = []
            if elapsed is not None and phase != "ready":
                parts.append(fmt_secs(elapsed))
            if status == "active":
                if est is not None:
                    remaining = est[0] - (elapsed or 0.0)
                    if st.total and st.done and elapsed:
                        remaining = elapsed / st.done * (st.total - st.done)
                    if elapsed is not None and elapsed > est[1] > 0:
                        parts.append("⚠ overdue")
                        row.add_class("overdue")
                    else:
                        parts.append(f"ETA {fmt_secs(max(0.0, remaining))}")
                        row.remove_class("overdue")
                elif st.total and st.done and elapsed:
                    parts.append(f"ETA {fmt_secs(elapsed / st.done * (st.total - st.done))}")
                if st.slowest_rank is not None and st.ranks_total and st.ranks_done < st.ranks_total:
                    parts.append(f"slow TP{st.slowest_rank}")
            row.set_class("⚠ overdue" in parts, "overdue")
            set_label(timing, " ".join(parts))
        self._summary(la, now, estimates)

    def _summary(self, la: LaunchState | None, now: float, estimates: dict[str, tuple[float, float]]) -> None:
        summary = self.query_one("#phase-summary", Static)
        failure = self.query_one("#phase-failure", Static)
        if la is None:
            set_label(summary, Text("no launch yet", style="dim"))
            self.remove_class("failed")
            return
        total = (la.ready_at or now) - la.started if la.started else None
        line = Text()
        line.append(f"launch #{la.launch}  ", style="bold")
        line.append(f"{la.status}  ")
        if total is not None:
            line.append(f"elapsed {fmt_secs(total)}")
        if la.status in ("loading", "launching"):
            if estimates:
                remaining = 0.0
                for phase in PHASES:
                    st = la.phases[phase]
                    est = estimates.get(phase)
                    if est is None or st.status in ("done", "skipped", "failed"):
                        continue
                    remaining += max(0.0, est[0] - (st.elapsed(now) or 0.0))
                line.append(f"  ETA ready {fmt_secs(remaining)}")
            else:
                line.append("  first launch: no estimate", style="dim")
        if la.stale_for:
            line.append(f"  ⚠ log silent {fmt_secs(la.stale_for)}", style="bold")
        if la.exit_code is not None or la.exit_signal is not None:
            line.append(
                f"  exit {la.exit_code if la.exit_code is not None else 'sig ' + str(la.exit_signal)}"
            )
        set_label(summary, line)
        f = la.failure
        if f is not None:
            self.add_class("failed")
            text = Text()
            text.append(f"✘ {f.kind.upper()}", style="bold")
            text.append(f"  {f.message}\n")
            if f.line:
                text.append(f.line[:300] + "\n", style="dim")
            if f.hint:
                text.append("hint: ", style="bold")
                text.append(f.hint)
            set_label(failure, text)
        else:
            self.remove_class("failed")
