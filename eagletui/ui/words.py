"""Phase names and failure kinds in plain words for the UI.

``eagletui.core.wording`` (being added in parallel) is the one place for these; until it is on this
branch, a minimal local mapping with the same two functions stands in, so the screen never shows
"PORT_IN_USE in warmup" or "DIED in ready".
"""

from __future__ import annotations

try:
    from eagletui.core.wording import describe_failure, phase_label  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - replaced by core.wording once merged
    _PHASES = {
        "launch": "launch",
        "dist_init": "distributed init",
        "load_target": "target weight loading",
        "load_draft": "draft weight loading",
        "kv_cache": "KV cache allocation",
        "capture_target": "CUDA graph capture (target)",
        "capture_draft": "CUDA graph capture (draft)",
        "warmup": "warmup",
        "ready": "ready",
    }
    _FAILURES = {
        "oom": "out of GPU memory",
        "nccl": "NCCL (GPU communication) failed",
        "exception": "a server process raised an exception",
        "port_in_use": "port already in use",
        "bad_args": "the server rejected its command-line flags",
        "hang": "the server hung (watchdog timeout)",
        "died": "the server died",
        "signal": "the server was torn down by a signal",
        "stale": "the server log stopped updating",
    }

    def _humanize(identifier: str) -> str:
        return identifier.replace("_", " ").replace("-", " ").strip().lower() or "unknown"

    def phase_label(phase: str | None) -> str:
        if not phase:
            return "unknown phase"
        return _PHASES.get(phase, _humanize(phase))

    def describe_failure(kind: str, phase: str | None = None, *, port: int | None = None) -> str:
        text = _FAILURES.get(kind) or f"server failure: {_humanize(kind)}"
        if not phase:
            return text
        if phase == "ready":
            return f"{text} while ready"
        return f"{text} during {phase_label(phase)}"


__all__ = ["describe_failure", "phase_label"]
