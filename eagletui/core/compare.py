"""Like for like: may two runs (of one session or of two) be compared, and if not, why not.

A Δ between runs only means something when the runs differ in the thing being tuned and nothing
else that moves tok/s by itself: the model, the tensor-parallel degree, the GPU type and the
benchmark workload (prompts, sampling, concurrency: the workload fingerprint). A baseline pinned
from an earlier session is exactly where these drift unnoticed, so the guard names every difference
it can see; a fact not recorded on one side is not a difference (it is unknown, not unequal).

Pure: reads :class:`~eagletui.core.runs.Run` fields, no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # runs.py imports this module: the guard is part of its warnings
    from eagletui.core.runs import Run


def _norm(value: Any) -> str:
    return "" if value is None or value is False else str(value).strip()


def gpu_type(run: Run) -> str:
    """The GPU model a run was measured on, when the launch config recorded one (``gpu``)."""
    cfg = run.config if isinstance(run.config, dict) else {}
    return _norm(cfg.get("gpu") or cfg.get("gpu_type"))


def comparability(a: Run, b: Run, *, gpu_a: str = "", gpu_b: str = "") -> list[str]:
    """Why ``a`` vs ``b`` is not like for like (empty: comparable as far as the recordings say).

    Each reason reads ``different tp (8 vs 4)``: ``a``'s value first. ``gpu_a``/``gpu_b`` name the
    GPU type where the caller knows it from elsewhere (``nvidia-smi`` samples); else the runs' config."""
    out: list[str] = []

    def check(what: str, x: Any, y: Any) -> None:
        sx, sy = _norm(x), _norm(y)
        if sx and sy and sx != sy:
            out.append(f"different {what} ({sx} vs {sy})")

    check("model", a.model, b.model)
    check("tp", a.tp, b.tp)
    check("GPU type", gpu_a or gpu_type(a), gpu_b or gpu_type(b))
    fa, fb = a.fingerprint, b.fingerprint
    if fa and fb and fa != fb:
        out.append(f"different benchmark settings (workload {fa[:8]} vs {fb[:8]})")
    return out
