"""vLLM's serving lines: the ``Avg prompt throughput …`` stats and the speculative-decoding metrics.

Part of vLLM's log format (:mod:`eagletui.core.logs.formats.vllm`), apart from the line classifier because
these two readers are the format's whole serving vocabulary: the classifier calls them for a record, the
format's reader again with the launch's k, and the tests on their own.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: The heads of the speculative-decoding metrics line: 0.8+, and V0 before it.
SPEC_HEADS = ("SpecDecoding metrics: ", "Speculative metrics: ")
# A key of a "Key: value, Key: value" stats line (a value such as "0.983, 0.949" holds commas).
_KV_SPLIT_RE = re.compile(r",\s+(?=[A-Z#][\w #/-]{0,48}: )")
_NUM_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+|nan|inf)", re.IGNORECASE)


def _split_kv(body: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in _KV_SPLIT_RE.split(body.strip().rstrip(".,")):
        k, _, v = part.partition(": ")
        if v:
            out[k.strip()] = v.strip()
    return out


def _num(text: str | None) -> float | None:
    if not text:
        return None
    m = _NUM_RE.match(text.strip())
    if m is None:
        return None
    try:
        v = float(m.group())
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parse_stats(msg: str) -> dict[str, Any] | None:
    """The fields of an ``Avg prompt throughput …`` line as DecodeStats fields, None if incomplete.

    An interval with nothing running and nothing generated is an idle tick, not a decode sample.
    """
    i = msg.find("Avg prompt throughput: ")
    if i < 0:
        return None
    kv = _split_kv(msg[i:])
    gen = _num(kv.get("Avg generation throughput"))
    if gen is None:
        return None
    running = _num(kv.get("Running"))
    waiting = _num(kv.get("Waiting") or kv.get("Pending"))
    usage = _num(kv.get("GPU KV cache usage"))
    run = int(running) if running is not None and 0 <= running < 1e9 else 0
    if gen <= 0 and run == 0:
        return {}
    return {
        "gen_throughput": gen,
        "running_req": run,
        "queue_req": int(waiting) if waiting is not None and 0 <= waiting < 1e9 else 0,
        "token_usage": None if usage is None else round(usage / 100.0, 6),
    }


def parse_spec(msg: str, steps: int | None = None) -> dict[str, Any] | None:
    """A speculative-decoding metrics line (any of the three wordings) → SpecDecodeStats fields.

    ``accept_len`` is the mean accepted tokens per verify step, bonus token included: printed since
    0.9; before that it is derived when the counts allow (V0: emitted × k / drafted; 0.8:
    1 + k × accepted / drafted, with ``steps`` = k from the launch). ``accept_rate`` is a fraction.
    """
    head = next((h for h in SPEC_HEADS if h in msg), None)
    if head is None:
        return None
    kv = _split_kv(msg[msg.find(head) + len(head) :])
    if not kv:
        return None
    mean = _num(kv.get("Mean acceptance length"))
    rate_text = kv.get("Avg Draft acceptance rate") or kv.get("Draft acceptance rate")
    rate = _num(rate_text)
    if rate is not None and rate_text is not None and rate_text.rstrip().endswith("%"):
        rate /= 100.0
    accepted = _num(kv.get("Accepted") or kv.get("Number of accepted tokens"))
    drafted = _num(kv.get("Drafted") or kv.get("Number of draft tokens"))
    emitted = _num(kv.get("Number of emitted tokens"))
    k = _num(kv.get("Number of speculative tokens")) or _num(kv.get("Current speculative depth")) or steps
    if mean is None and k and drafted:
        if emitted is not None:
            mean = emitted * k / drafted
        elif accepted is not None:
            mean = 1.0 + k * accepted / drafted
    pos_text = kv.get("Per-position acceptance rate")
    per_pos = tuple(v for v in (_num(x) for x in pos_text.split(",")) if v is not None) if pos_text else ()
    # bounded by what speculation can give: at most k drafted tokens and a bonus token per step
    if mean is not None and not 1.0 <= mean <= (k + 1 if k else 65):
        mean = None
    if rate is not None and not 0.0 <= rate <= 1.0:
        rate = None
    if per_pos and not all(0.0 <= v <= 1.0 for v in per_pos):
        per_pos = ()
    count_ok = accepted is not None and drafted is not None and 0 <= accepted <= drafted < 1e15
    out = {
        "accept_len": None if mean is None else round(mean, 4),
        "accept_rate": None if rate is None else round(rate, 6),
        "accepted": int(accepted) if count_ok and accepted is not None else None,
        "drafted": int(drafted) if count_ok and drafted is not None else None,
        "per_position": per_pos[:64],
        "steps": int(k) if k else None,
        "cumulative": emitted is not None,  # V0 printed totals since start
    }
    if out["accept_len"] is None and out["accept_rate"] is None and out["drafted"] is None:
        return None
    return out
