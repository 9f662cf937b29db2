"""SGLang's version marks: which releases print a line's wording, a prefix's shape, a Decode layout.

Only used to name flags that exist in the running version (hints) and for the summary's guess.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from eagletui.core.logs.seam import LaunchFacts, Rec, VersionGuess

# (substring, lower bound, upper bound) checked on phase/error lines only. Bounds come from sampled
# releases (sglang-observables.md): a lower bound is the first sampled release with the form, an upper
# bound the last patch before the next sampled release without it (a real 0.5.17 still prints
# ``server_args=ServerArgs(`` although 0.5.16 was the last sampled one that did).
VERSION_MARKS: tuple[tuple[str, tuple[int, int, int] | None, tuple[int, int, int] | None], ...] = (
    ("Init nccl begin", None, (0, 3, 99)),
    ("Init torch distributed begin", (0, 4, 0), (0, 5, 20)),
    ("Init torch distributed ends. elapsed=", (0, 5, 10), (0, 5, 20)),
    ("Init torch distributed ends. mem usage", (0, 4, 6), (0, 5, 9)),
    ("Init parallel", (0, 5, 21), None),
    ("Memory baseline taken", (0, 5, 21), None),
    ("server_args={", (0, 5, 20), None),
    ("server_args=ServerArgs(", None, (0, 5, 19)),
    ("Load weight end. elapsed=", (0, 5, 10), None),
    ("Load weight end. type=", None, (0, 5, 9)),
    ("KV Cache is allocated. dtype:", (0, 5, 13), None),
    ("KV Cache is allocated. #tokens", (0, 4, 6), (0, 5, 12)),
    ("Capture target ", (0, 5, 16), None),
    ("Capture draft decode CUDA graph", (0, 5, 16), None),
    ("Capture draft extend CUDA graph", (0, 5, 16), None),
    ("Capture cuda graph begin", None, (0, 5, 15)),
    ("Capture draft cuda graph", (0, 4, 6), (0, 5, 15)),
    ("Capture draft extend cuda graph", (0, 4, 10), (0, 5, 15)),
    ("Capture piecewise CUDA graph", (0, 5, 10), (0, 5, 15)),
    ("Engine startup timings", (0, 5, 20), None),
    ("kill_process_tree called", (0, 5, 13), None),
    ("scheduler died during initialization", (0, 5, 10), None),
    ("scheduler is dead", (0, 4, 6), (0, 5, 9)),
    ("Received sigquit", (0, 4, 6), None),
    ("sglang serve: error", (0, 5, 20), None),
    ("Capturing batches (bs=", (0, 4, 10), None),
    ("Capturing batches (avail_mem", (0, 4, 6), (0, 4, 9)),
    ("Capturing prefill shape", (0, 5, 16), None),
)

_TYPE_IN_ARGS_RE = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,()\[\]{}]+)")


def parse_server_args(raw: str) -> dict[str, Any]:
    """``{'k': v}`` (0.5.20+) or ``ServerArgs(k=v, …)`` (older) → dict; best effort, never raises."""
    raw = raw.strip()[:500_000]
    try:
        if raw.startswith("{"):
            val = ast.literal_eval(raw)
            if isinstance(val, dict):
                return {str(k): v for k, v in val.items()}
        elif raw.startswith("ServerArgs("):
            node = ast.parse(raw, mode="eval").body
            if isinstance(node, ast.Call):
                out: dict[str, Any] = {}
                for kw in node.keywords:
                    if kw.arg is None:
                        continue
                    try:
                        out[kw.arg] = ast.literal_eval(kw.value)
                    except (ValueError, SyntaxError, TypeError):
                        out[kw.arg] = ast.unparse(kw.value)
                return out
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    out2: dict[str, Any] = {}
    for k, v in _TYPE_IN_ARGS_RE.findall(raw[:100_000]):
        v = v.strip()
        try:
            out2[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out2[k] = v
    return out2


def launch_facts(raw: str) -> LaunchFacts:
    """The launch facts of a ``server_args=`` record in eagletui's words (SGLang's names in ``raw``)."""
    return facts_from_args(parse_server_args(raw))


def facts_from_args(args: dict[str, Any]) -> LaunchFacts:
    """Launch facts from SGLang's server-args names (``model_path``, ``tp_size``, …)."""
    ver = args.get("version")
    return LaunchFacts(
        model=_str(args.get("model_path")),
        draft_model=_str(args.get("speculative_draft_model_path")),
        tp=_pos_int(args.get("tp_size")),
        pp=_pos_int(args.get("pp_size")),
        dp=_pos_int(args.get("dp_size")),
        spec_algorithm=_str(args.get("speculative_algorithm")),
        spec_steps=_pos_int(args.get("speculative_num_steps")),
        spec_topk=_pos_int(args.get("speculative_eagle_topk")),
        spec_draft_tokens=_pos_int(args.get("speculative_num_draft_tokens")),
        port=_pos_int(args.get("port")),
        version=ver if isinstance(ver, str) and ver else None,
        raw=args,
    )


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v and v != "None" else None


def _pos_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def version_from_prefix(rec: Rec, ver: VersionGuess) -> None:
    """Bounds from the record prefix: a date (0.4.0+), time only (0.3.x), milliseconds (0.5.10+)."""
    if not rec.ts_text:
        return
    if rec.has_date:
        ver.bound(lb=(0, 4, 0))
    else:
        ver.bound(lb=(0, 3, 0), ub=(0, 3, 99))
    if rec.has_ms:
        ver.bound(lb=(0, 5, 10))


def version_marks(msg: str, ver: VersionGuess) -> None:
    """Bounds from a phase/error line's wording (VERSION_MARKS)."""
    head = msg[:300]
    for sub, lb, ub in VERSION_MARKS:
        if sub in head:
            ver.bound(lb, ub)


def decode_version(msg: str, ver: VersionGuess) -> None:
    """Bounds from the first Decode line's layout (punctuation, trailing comma, optional fields)."""
    if msg.startswith("Decode batch."):
        ver.bound(ub=(0, 5, 4))
    elif msg.startswith("Decode batch"):
        ver.bound(lb=(0, 5, 5))
        ver.bound(**({"ub": (0, 5, 9)} if msg.endswith(", ") else {"lb": (0, 5, 10)}))
    if "graph: " in msg:
        ver.bound(lb=(0, 4, 10))
    elif msg.startswith("Decode batch."):
        ver.bound(ub=(0, 4, 9))
    if "accept rate" in msg:
        ver.bound(lb=(0, 5, 5))
    elif "accept len" in msg:
        ver.bound(lb=(0, 4, 6))


#: ``type=`` of a ``Load weight end`` line that names a draft model class (EAGLE heads, NextN/MTP).
DRAFT_TYPES = ("Eagle", "EAGLE", "NextN", "MTP", "Draft")
#: Text of a deliberate stop (not a crash).
STOP_MARKS = ("SIGTERM", "signum=15", "Received signal 15", "KeyboardInterrupt")
