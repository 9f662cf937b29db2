"""The phase panel: one row per phase of the fixed vocabulary, a bar, a/b units, elapsed and ETA."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from eagletui.core.events import PHASES
from eagletui.core.state import LaunchState
from eagletui.ui.widgets.textview import TextView

PHASE_LABELS = {
    "launch": "launch",
    "dist_init": "dist init",
    "load_target": "base weights",
    "load_draft": "draft weights",
    "kv_cache": "KV cache",
    "capture_prefill": "graphs prefill",
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


def set_label(label: Static, content) -> None:
    """Update only on change: Static.update always asks for a layout, which is costly at 10 Hz."""
    key = content.plain + str(content.spans) if isinstance(content, Text) else content
    if getattr(label, "_eagle_last", None) != key:
        label._eagle_last = key
        label.update(content)


BAR_WIDTH = 16


class PhaseTable(TextView):
    """All phase rows as one renderable: one bar per phase without ~60 widgets to lay out and restyle."""

    DEFAULT_CSS = f"""
    PhaseTable {{ height: {len(PHASES)}; text-wrap: nowrap; text-overflow: ellipsis; }}
    """


def _bar(fraction: float | None, colour: str, dim: str, now: float) -> Text:
    t = Text()
    if fraction is None:  # active, no count: a sliding pulse says "alive, size unknown"
        pos = int(now * 8) % BAR_WIDTH
        for i in range(BAR_WIDTH):
            t.append("━", style=colour if abs(i - pos) <= 2 else dim)
        return t
    filled = int(round(max(0.0, min(1.0, fraction)) * BAR_WIDTH))
    t.append("━" * filled, style=colour)
    t.append("━" * (BAR_WIDTH - filled), style=dim)
    return t


class PhasePanel(Vertical):
    """Renders a :class:`LaunchState`; ``estimates`` maps phase → (median s, p95 s) from history."""

    DEFAULT_CSS = """
    PhasePanel { height: auto; }
    PhasePanel > #phase-summary { height: auto; }
    PhasePanel > #phase-failure { height: auto; display: none; }
    PhasePanel.failed > #phase-failure { display: block; }
    """

    def compose(self) -> ComposeResult:
        yield PhaseTable(id="phase-table")
        yield Static("", id="phase-summary")
        yield Static("", id="phase-failure")

    def show(
        self, la: LaunchState | None, now: float, estimates: dict[str, tuple[float, float]] | None = None
    ) -> None:
        estimates = estimates or {}
        v = self.app.theme_variables
        colours = {
            "done": v.get("phase-done", "green"),
            "active": v.get("phase-active", "cyan"),
            "pending": v.get("phase-pending", "grey50"),
            "failed": v.get("phase-failed", "red"),
            "skipped": v.get("phase-pending", "grey50"),
        }
        dim = v.get("phase-pending", "grey50")
        warn = v.get("warning", "yellow")
        out = Text(no_wrap=True, overflow="ellipsis")
        for i, phase in enumerate(PHASES):
            st = la.phases[phase] if la else None
            status = st.status if st else "pending"
            colour = colours.get(status, dim)
            if i:
                out.append("\n")
            out.append(f"{STATUS_MARK.get(status, '?')} ", style=colour)
            out.append(
                f"{PHASE_LABELS[phase]:<14}",
                style=f"bold {colour}" if status in ("active", "failed") else colour,
            )
            if st is None or status == "pending":
                out.append_text(_bar(0.0, colour, dim, now))
                continue
            if st.total:
                frac: float | None = min(st.done, st.total) / st.total
                units = f"{st.done}/{st.total} {st.unit}".strip()
            elif status in ("done", "skipped"):
                frac = 1.0 if status == "done" else 0.0
                units = ""
            elif status == "failed":
                frac, units = 0.0, ""
            else:
                frac, units = None, st.label[:13]
            out.append_text(_bar(frac, colours["done"] if status == "done" else colour, dim, now))
            out.append(f"  {units:<14}")
            elapsed = st.elapsed(now)
            if elapsed is not None and phase != "ready":
                out.append(f"{fmt_secs(elapsed):>6}")
            if status != "active":
                continue
            est = estimates.get(phase)
            if est is not None:
                remaining = est[0] - (elapsed or 0.0)
                if st.total and st.done and elapsed:
                    remaining = elapsed / st.done * (st.total - st.done)
                if elapsed is not None and elapsed > est[1] > 0:
                    out.append("  ⚠ overdue", style=f"bold {warn}")
                else:
                    out.append(f"  ETA {fmt_secs(max(0.0, remaining))}")
            elif st.total and st.done and elapsed:
                out.append(f"  ETA {fmt_secs(elapsed / st.done * (st.total - st.done))}")
            if st.slowest_rank is not None and st.ranks_total and st.ranks_done < st.ranks_total:
                out.append(f"  slow TP{st.slowest_rank}", style=warn)
        self.query_one(PhaseTable).set_text(out)
        self._summary(la, now, estimates)

    def _summary(self, la: LaunchState | None, now: float, estimates: dict[str, tuple[float, float]]) -> None:
        summary = self.query_one("#phase-summary", Static)
        failure = self.query_one("#phase-failure", Static)
        if la is None:
            set_label(summary, Text("no launch yet", style="dim"))
            self.remove_class("failed")
            return
        total = launch_elapsed(la, now)
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
            # kind and phase, the hint, then the evidence: what to do must fit even when space is short
            # (in a narrow terminal this box replaces the phase bars). The log keeps the whole text.
            text = Text()
            text.append(f"✘ {f.kind.upper()}", style="bold")
            if f.phase:
                text.append(f" in {PHASE_LABELS.get(f.phase, f.phase)}", style="bold")
            text.append(f"  {_clip(f.message, 160)}")
            if f.hint:
                text.append("\nhint: ", style="bold")
                text.append(f.hint)
            if f.line and f.line.strip() not in f.message and f.message not in f.line:
                text.append("\n" + _clip(f.line, 160), style="dim")
            set_label(failure, text)
        else:
            self.remove_class("failed")


def launch_elapsed(la: LaunchState, now: float) -> float | None:
    """Launch to ready (or to now while loading). A reattached run's ``started`` is when we attached,
    so once it is ready its phases, timed from the log, are the better measure."""
    durations = la.phase_durations()
    if la.ready_at is not None and la.started is not None:
        return max(la.ready_at - la.started, sum(durations.values()))
    if la.status == "ready" and durations:
        return sum(durations.values())
    return (now - la.started) if la.started else None


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
