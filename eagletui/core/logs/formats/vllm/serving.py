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
# an exponent is part of the number ("1e999" is not 1: it overflows to inf, which is refused)
_NUM_RE = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|nan|inf)", re.IGNORECASE)


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


#: The bound on a throughput a stats line can claim (tokens/s): a larger one is a garbled line.
MAX_RATE = 1e9

# The common wordings (0.11+, as real servers print them) read by one match; any other line, and one
# whose tail repeats a key the readers use, goes through the key/value reading, which these equal. The
# bulk scan of ``eagletui parse`` (formats/vllm/__init__.py) matches the same texts, keeping fewer groups.
_NUM = r"\d{1,20}(?:\.\d{1,20})?"


def _group(name: str, pat: str, keep: frozenset[str]) -> str:
    return f"({pat})" if name in keep else f"(?:{pat})"


def stats_src(keep: frozenset[str]) -> str:
    """The common stats message (from ``Avg prompt throughput``), capturing the fields named in ``keep``
    (``gen``, ``run``, ``wait``, ``usage``) in that order."""
    return (
        r"Avg prompt throughput: " + _NUM + r" tokens/s, Avg generation throughput: " + _group("gen", _NUM, keep)
        + r" tokens/s, Running: " + _group("run", r"\d{1,12}", keep) + r" reqs, Waiting: "
        + _group("wait", r"\d{1,12}", keep) + r" reqs, GPU KV cache usage: " + _group("usage", _NUM, keep) + r"%"
        r"(?:, (?!(?:Avg generation throughput|Running|Waiting|Pending|GPU KV cache usage): )"
        r"[A-Z][\w /-]{0,48}: [\d.]{1,24}%?)*"
    )


def spec_src(keep: frozenset[str]) -> str:
    """The common metrics message (0.11+), capturing the fields named in ``keep`` (``mean``, ``accepted``,
    ``drafted``, ``pos``, ``rate``) in that order."""
    return (
        r"SpecDecoding metrics: Mean acceptance length: " + _group("mean", _NUM, keep) + r", Accepted throughput: "
        + _NUM + r" tokens/s, Drafted throughput: " + _NUM + r" tokens/s, Accepted: "
        + _group("accepted", r"\d{1,15}", keep) + r" tokens, Drafted: " + _group("drafted", r"\d{1,15}", keep)
        + r" tokens, Per-position acceptance rate: "
        + _group("pos", r"\d{1,3}\.\d{1,12}(?:, \d{1,3}\.\d{1,12}){0,63}", keep)
        + r", Avg Draft acceptance rate: " + _group("rate", _NUM, keep) + r"%"
    )


_STATS_FAST_RE = re.compile(stats_src(frozenset({"gen", "run", "wait", "usage"})) + r"\s*$")
_SPEC_FAST_RE = re.compile(spec_src(frozenset({"mean", "accepted", "drafted", "pos", "rate"})) + r"\s*$")


def parse_stats(msg: str) -> dict[str, Any] | None:
    """The fields of an ``Avg prompt throughput …`` line as DecodeStats fields, None if incomplete.

    An interval with nothing running and nothing generated is an idle tick, not a decode sample.
    """
    i = msg.find("Avg prompt throughput: ")
    if i < 0:
        return None
    m = _STATS_FAST_RE.match(msg, i)
    if m is not None:
        gen_t, run_t, wait_t, usage_t = m.groups()
        return _stats_fields(float(gen_t), float(run_t), float(wait_t), float(usage_t))
    kv = _split_kv(msg[i:])
    return _stats_fields(
        _num(kv.get("Avg generation throughput")),
        _num(kv.get("Running")),
        _num(kv.get("Waiting") or kv.get("Pending")),
        _num(kv.get("GPU KV cache usage")),
    )


def _stats_fields(
    gen: float | None, running: float | None, waiting: float | None, usage: float | None
) -> dict[str, Any] | None:
    """Bounded DecodeStats fields from the numbers of a stats line (both readings end here)."""
    if gen is None or not 0 <= gen <= MAX_RATE:
        return None
    run = int(running) if running is not None and 0 <= running < 1e9 else 0
    if gen <= 0 and run == 0:
        return {}
    return {
        "gen_throughput": gen,
        "running_req": run,
        "queue_req": int(waiting) if waiting is not None and 0 <= waiting < 1e9 else 0,
        "token_usage": None if usage is None or not 0 <= usage <= 100 else round(usage / 100.0, 6),
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
    at = msg.find(head)
    m = _SPEC_FAST_RE.match(msg, at) if head == SPEC_HEADS[0] else None
    if m is not None:
        mean_t, acc_t, drafted_t, pos_t, rate_t = m.groups()
        return _spec_fields(
            float(mean_t),
            float(rate_t) / 100.0,
            float(acc_t),
            float(drafted_t),
            None,
            steps,
            tuple(float(x) for x in pos_t.split(", ")),
        )
    kv = _split_kv(msg[at + len(head) :])
    if not kv:
        return None
    rate_text = kv.get("Avg Draft acceptance rate") or kv.get("Draft acceptance rate")
    rate = _num(rate_text)
    if rate is not None and rate_text is not None and rate_text.rstrip().endswith("%"):
        rate /= 100.0
    k = _num(kv.get("Number of speculative tokens")) or _num(kv.get("Current speculative depth")) or steps
    pos_text = kv.get("Per-position acceptance rate")
    return _spec_fields(
        _num(kv.get("Mean acceptance length")),
        rate,
        _num(kv.get("Accepted") or kv.get("Number of accepted tokens")),
        _num(kv.get("Drafted") or kv.get("Number of draft tokens")),
        _num(kv.get("Number of emitted tokens")),
        k,
        tuple(v for v in (_num(x) for x in pos_text.split(",")) if v is not None) if pos_text else (),
    )


def _spec_fields(
    mean: float | None,
    rate: float | None,
    accepted: float | None,
    drafted: float | None,
    emitted: float | None,
    k: float | None,
    per_pos: tuple[float, ...],
) -> dict[str, Any] | None:
    """Bounded SpecDecodeStats fields from the numbers of a metrics line (both readings end here)."""
    if mean is None and k and drafted:
        if emitted is not None:
            mean = emitted * k / drafted
        elif accepted is not None:
            mean = 1.0 + k * accepted / drafted
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
