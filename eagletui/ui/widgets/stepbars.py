"""Step bars: where one decode step's GPU time goes, as a stacked bar per run beside the baseline run's,
with the Δ per category. Drawn from the run book's step profiles (``ProfileCaptured`` summaries), so a
replay draws the same bars."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from eagletui.core.wording import cycle_split

if TYPE_CHECKING:
    from eagletui.core.runs.book import RunBook

CATEGORIES = ("communication", "gemm", "attention", "moe", "other")
STYLES = {
    "communication": "bold red",
    "gemm": "bold blue",
    "attention": "bold magenta",
    "moe": "bold cyan",
    "other": "dim",
}
GLYPHS = {"communication": "█", "gemm": "▓", "attention": "▒", "moe": "░", "other": "·"}
BAR_WIDTH = 48


def _bar(t: Text, cats: dict[str, Any], scale: float, width: int) -> None:
    used = 0
    for c in CATEGORIES:
        n = round(float(cats.get(c) or 0.0) / scale * width) if scale > 0 else 0
        n = min(n, width - used)
        t.append(GLYPHS[c] * n, style=STYLES[c])
        used += n
    t.append(" " * (width - used))


def step_bars(runbook: RunBook, launch: int, width: int = BAR_WIDTH) -> Text:
    """The run's step bar, the baseline run's under it (same scale) and one line per category with the
    ms per step, the share and the Δ vs the baseline."""
    mine, base, base_launch = runbook.step_profiles(launch)
    t = Text()
    if not mine:
        t.append(f"no step profile for run #{launch} yet: press P while the server is ready\n", style="dim")
        return t
    scale = max(float(mine.get("step_ms") or 0.0), float((base or {}).get("step_ms") or 0.0))
    cats = mine.get("categories") or {}
    rows: list[tuple[str, dict[str, Any]]] = [(f"#{launch}", mine)]
    if base:
        rows.append((f"#{base_launch}★", base))
    for label, prof in rows:
        t.append(f"{label:>5} ")
        _bar(t, prof.get("categories") or {}, scale, width)
        t.append(f" {float(prof.get('step_ms') or 0.0):7.2f} ms/{prof.get('unit') or 'step'}\n")
    step = float(mine.get("step_ms") or 0.0)
    bcats = (base or {}).get("categories") or {}
    for c in CATEGORIES:
        ms = float(cats.get(c) or 0.0)
        t.append(f"  {GLYPHS[c]} ", style=STYLES[c])
        t.append(f"{c:<14}{ms:8.2f} ms {ms / step * 100 if step > 0 else 0.0:5.1f} %")
        if base:
            b = float(bcats.get(c) or 0.0)
            d = ms - b
            pct = f" ({d / b * 100:+.0f} %)" if b > 0 else ""
            style = "green" if d < -0.005 else ("red" if d > 0.005 else "dim")
            t.append(f"   Δ {d:+7.2f} ms{pct}", style=style)
        t.append("\n")
    split = cycle_split(mine)
    if split:
        t.append(f"  a cycle: {split}\n")
    n, ranks, skew = mine.get("steps"), mine.get("ranks"), mine.get("skew_ms")
    unit = "decode cycle(s) (draft + verify + draft extend)" if mine.get("unit") == "cycle" else "step(s)"
    t.append(
        f"  {ranks} rank(s), {n or 'unmarked'} {unit}; rank skew {float(skew or 0.0):.2f} ms of waiting"
        + (f"; Δ vs baseline #{base_launch}" if base else "; pin a profiled run as baseline (m) for Δ")
        + "\n",
        style="dim",
    )
    return t
