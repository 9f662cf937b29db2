"""The one-line status header and the GPU strip: what the user checks at a glance."""

from __future__ import annotations

import math

from rich.text import Text
from textual.widgets import Static

from eagletui.core.host.gpu_memory import MAX_UTIL_PCT, gpu_value
from eagletui.core.state.screen import SessionState
from eagletui.core.textsafe import inert
from eagletui.ui.widgets.textview import TextView
from eagletui.ui.words import phase_label


class StatusHeader(TextView):
    """Fixed height, so every change is a repaint and never a layout."""

    DEFAULT_CSS = """
    StatusHeader { height: 1; background: $panel; color: $foreground; padding: 0 1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(Text("eagletui"), **kwargs)

    def show(
        self,
        state: SessionState,
        *,
        recording: bool,
        replay: bool,
        follow: bool,
        bench: bool,
        log_filter: str | None = None,
        search: str | None = None,
        recording_paused: str | None = None,
        control: str | None = None,
        read_only: bool = False,
    ) -> None:
        """``control``: who controls a served session (``eagletui serve``), shown right after the
        connection so a read-only view says so before anything else."""
        v = self.app.theme_variables
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append("eagletui ", style="bold")
        t.append(f"{inert(state.target or '—')} ", style=v.get("accent", "cyan"))
        conn = state.connection
        conn_style = {"connected": v.get("success", "green"), "reconnecting": v.get("warning", "yellow")}.get(
            conn, v.get("error", "red")
        )
        label = conn
        if conn == "reconnecting" and state.retry_in is not None:
            label = f"reconnecting in {state.retry_in:.0f}s"
        if replay:
            label, conn_style = "replay", v.get("secondary", "magenta")
        t.append(f"● {label} ", style=conn_style)
        if control:
            style = f"bold {v.get('warning', 'yellow')}" if read_only else v.get("success", "green")
            t.append(f"{inert(control)}  ", style=style)
        server = state.server_state
        colour = {
            "ready": v.get("success", "green"),
            "failed": v.get("error", "red"),
            "exited": v.get("error", "red"),
            "loading": v.get("warning", "yellow"),
            "launching": v.get("warning", "yellow"),
        }.get(server, "")
        t.append("server ")
        t.append(server, style=f"bold {colour}".strip())
        t.append(" ")
        la = state.launch
        if la is not None:
            t.append(f"  launch #{la.launch}")
            phase = la.current_phase
            if phase and server in ("loading", "launching"):
                t.append(f" · {phase_label(phase)}")
        if state.failed_tasks:  # what stopped, in sight until it runs again (never "idle" over it)
            t.append(
                f"  ⚠ stopped: {inert(', '.join(state.failed_tasks))}", style=f"bold {v.get('error', 'red')}"
            )
        if bench:
            t.append("  ⏱ benchmarking", style=v.get("accent", "cyan"))
        if log_filter:
            t.append(f"  ⧩ log filter: {log_filter} (key 0: all lines)", style=v.get("warning", "yellow"))
        if search:
            t.append(f"  {inert(search)}", style=v.get("accent", "cyan"))
        if not follow:
            t.append("  ⏸ log paused", style="dim")
        if recording and recording_paused:
            # until it resumes: the session is not being recorded (disk full), said where REC stood
            t.append("  ⏸ REC paused: disk full", style=f"bold {v.get('warning', 'yellow')}")
        elif recording:
            t.append("  ● REC", style=f"bold {v.get('error', 'red')}")
        self.set_text(t)


class GpuStrip(Static):
    DEFAULT_CSS = """
    GpuStrip { height: auto; max-height: 3; color: $text-muted; }
    """

    def show(self, state: SessionState, now: float | None = None) -> None:
        if not state.gpus:
            text = (
                Text(f"GPUs: no reading ({inert(state.gpu_stale)})", style="dim")
                if state.gpu_stale
                else Text("GPUs: no telemetry (no nvidia-smi on the host)", style="dim")
            )
            if getattr(self, "_eagle_last", None) != text.plain:
                self._eagle_last = text.plain
                self.update(text)
            return
        stale = bool(state.gpu_stale)
        t = Text(no_wrap=False, style="dim" if stale else "")
        if stale:
            age = _age(state.gpus_wall, now)
            t.append(f"GPUs stale{f' {age}' if age else ''} ({inert(state.gpu_stale)}): ", style="bold")
        for g in state.gpus:
            used, total = gpu_value(g.get("mem_used_mb")), gpu_value(g.get("mem_total_mb"))
            frac = _finite(used / total) if used is not None and total else None
            blocks = "▁▂▃▄▅▆▇█"
            t.append(f"{inert(str(g.get('index', '?')))}")
            if frac is not None:
                t.append(blocks[max(0, min(7, int(frac * 8)))], style="bold")
            else:
                t.append("?", style="bold")
            util = gpu_value(g.get("util_pct"), MAX_UTIL_PCT)
            mem = f"{used / 1024:.0f}G" if used is not None else "?G"
            t.append(f"{mem} {f'{util:.0f}' if util is not None else '?'}%  ")
        if getattr(self, "_eagle_last", None) != t.plain:
            self._eagle_last = t.plain
            self.update(t)


def _finite(value: object) -> float | None:
    """A reading the strip can draw: a finite number; NaN, inf, strings and None are unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _age(wall: float | None, now: float | None) -> str:
    if wall is None or now is None or not math.isfinite(now - wall):
        return ""
    s = max(0, int(now - wall))
    return f"{s}s" if s < 120 else f"{s // 60} min"
