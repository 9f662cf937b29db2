"""Failure kinds and phase names in words a user reads, not the identifiers the classifier uses.

The classifier, recordings and ``--json`` output keep the stable identifiers (``port_in_use``,
``load_target``); everything that prints a sentence for a person goes through these two functions so
"PORT_IN_USE in warmup" never reaches a terminal. A step profile's cycle split is here too: the step
bars and the why line (core/diagnosis) say it in the same words.
"""

from __future__ import annotations

import math
from typing import Any

from eagletui.core.events import FAILURE_KINDS, PHASES

#: Phase names as a noun phrase that reads after "during".
_PHASE_TEXT: dict[str, str] = {
    "queued": "the wait in the Slurm queue",
    "launch": "launch",
    "dist_init": "distributed init",
    "load_target": "target weight loading",
    "load_draft": "draft weight loading",
    "compile": "torch.compile",
    "kv_cache": "KV cache allocation",
    "capture_prefill": "prefill CUDA graph capture",
    "capture_target": "CUDA graph capture (target)",
    "capture_draft": "CUDA graph capture (draft)",
    "warmup": "warmup",
    "ready": "ready",
}

#: What went wrong, as the subject of a sentence; ``{port}`` is filled in when known.
_FAILURE_TEXT: dict[str, str] = {
    "oom": "out of GPU memory",
    "nccl": "NCCL (GPU communication) failed",
    "exception": "a server process raised an exception",
    "port_in_use": "port {port} already in use",
    "bad_args": "the server rejected its command-line flags",
    "hang": "the server hung (watchdog timeout)",
    "died": "the server died",
    "signal": "the server was torn down by a signal",
    "stale": "the server log stopped updating",
}

assert set(_PHASE_TEXT) == set(PHASES) and set(_FAILURE_TEXT) == set(FAILURE_KINDS)


def _humanize(identifier: str) -> str:
    return identifier.replace("_", " ").replace("-", " ").strip().lower() or "unknown"


def phase_label(phase: str | None) -> str:
    """``load_target`` → ``target weight loading``; an unknown name is spelled out, never shouted."""
    if not phase:
        return "unknown phase"
    return _PHASE_TEXT.get(phase, _humanize(phase))


def describe_failure(kind: str, phase: str | None = None, *, port: int | None = None) -> str:
    """``("port_in_use", "warmup")`` → ``port 30000 already in use during warmup`` (with ``port``),
    ``("died", "ready")`` → ``the server died while ready``. Unknown kinds are spelled out."""
    text = _FAILURE_TEXT.get(kind)
    if text is None:
        text = f"server failure: {_humanize(kind)}"
    elif "{port}" in text:
        text = text.format(port=port) if port else "a port is already in use"
    if not phase:
        return text
    if phase == "ready":
        return f"{text} while ready"
    return f"{text} during {phase_label(phase)}"


#: Slurm's pending reasons (``squeue %r``, ``scontrol`` ``Reason=``) as a word or two for a narrow row.
_PENDING_WORDS: tuple[tuple[str, str], ...] = (
    ("ReqNodeNotAvail", "node down"),
    ("Nodes required", "node down"),
    ("Resources", "resources"),
    ("Priority", "priority"),
    ("Dependency", "dependency"),
    ("BeginTime", "begin time"),
    ("JobHeld", "held"),
    ("PartitionDown", "part. down"),
    ("PartitionInactive", "part. down"),
    ("PartitionNodeLimit", "node limit"),
    ("PartitionTimeLimit", "time limit"),
    ("QOS", "QOS limit"),
    ("Assoc", "limit"),
    ("Reservation", "reservation"),
)


def pending_reason_short(reason: str) -> str:
    """``ReqNodeNotAvail, UnavailableNodes:n3`` → ``node down``: a pending reason in ≤ 11 characters."""
    reason = (reason or "").strip()
    if not reason or reason == "None":
        return "waiting"
    for prefix, word in _PENDING_WORDS:
        if reason.startswith(prefix):
            return word
    return reason.split(",")[0].split("(")[0].strip()[:11]


#: The parts of a speculative cycle, in its order, in eagletui trace's words.
PART_LABELS = {"draft": "draft", "verify": "verify", "draft_extend": "draft extend"}


def cycle_split(summary: dict[str, Any]) -> str:
    """A speculative cycle's draft / verify / draft-extend split (kernel ms, and the communication in
    each where there is any), the split ``eagletui trace`` prints for the same file; "" for a plain
    decode step or a recording made before the parts were kept."""
    parts = summary.get("parts")
    if summary.get("unit") != "cycle" or not isinstance(parts, dict):
        return ""
    out = []
    for stage, label in PART_LABELS.items():
        p = parts.get(stage)
        if not isinstance(p, dict):
            continue
        out.append(part_words(label, p))
    return " · ".join(out)


def part_words(label: str, part: dict[str, Any]) -> str:
    """One part of a cycle: "verify 30.00 ms, of which 25.00 ms communication" (a recorded value that is
    no finite number reads as 0: a recording is input)."""
    ms, comm = _ms(part.get("kernel_ms")), _ms(part.get("comm_ms"))
    return f"{label} {ms:.2f} ms" + (f", of which {comm:.2f} ms communication" if comm >= 0.005 else "")


def _ms(value: Any) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return max(0.0, float(value)) if ok else 0.0
