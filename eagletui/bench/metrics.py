"""Reading a server's Prometheus ``/metrics`` around a benchmark run: counter sums and the accept length
of just that run from their deltas (SGLang's verify counters, vLLM's ``vllm:spec_decode_*``).

The fallback for servers that do not report per-request verify counts in ``meta_info`` (see
:mod:`eagletui.bench.client`); kept apart because it is text parsing, not streaming.
"""

from __future__ import annotations

import re

import aiohttp

from eagletui.bench.httplimits import HttpLimits, read_bounded

_METRIC_RE = re.compile(r"^((?:sglang|vllm):[a-z_]+?)(?:_total)?(?:\{[^}]*\})?\s+([-+0-9.eEinfa]+)\s*$")
_VERIFY_METRICS = ("sglang:spec_verify_calls", "sglang:spec_verify_ct")
_GEN_METRIC = "sglang:generation_tokens"
#: vLLM counts drafts (one per request per verify step) and accepted draft tokens: a step yields the
#: accepted tokens plus one (the bonus token), so the accept length is 1 + accepted / drafts.
_VLLM_DRAFTS = "vllm:spec_decode_num_drafts"
_VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"


def parse_metrics(text: str) -> dict[str, float]:
    """Sum Prometheus samples per metric name (over label sets: tp ranks, models) for counter deltas."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = _METRIC_RE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(2))
        except ValueError:
            continue
        out[m.group(1)] = out.get(m.group(1), 0.0) + value
    return out


async def _get_metrics(
    session: aiohttp.ClientSession, base: str, limits: HttpLimits | None = None
) -> dict[str, float] | None:
    """Counters from /metrics, or None (not served, too slow, or larger than ``max_metrics``)."""
    lim = limits or HttpLimits()
    try:
        async with session.get(base + "/metrics", timeout=lim.timeout(total=10)) as resp:
            if resp.status != 200:
                return None
            raw = await read_bounded(resp, lim.max_metrics)
            return parse_metrics(raw.decode("utf-8", "replace"))
    except Exception:
        return None


def _metrics_accept_len(before: dict[str, float] | None, after: dict[str, float] | None) -> float | None:
    """Accept length of just this run from counter deltas (tokens ÷ verify rounds)."""
    if not before or not after:
        return None
    if _VLLM_DRAFTS in after and _VLLM_ACCEPTED in after:
        dd = after[_VLLM_DRAFTS] - before.get(_VLLM_DRAFTS, 0.0)
        da = after[_VLLM_ACCEPTED] - before.get(_VLLM_ACCEPTED, 0.0)
        # bounded: no more accepted than drafted tokens can be believed (65 = a 64-token draft + bonus)
        if dd > 0 and 0 <= da <= 64 * dd:
            return 1.0 + da / dd
        return None
    for name in _VERIFY_METRICS:
        if name in before and name in after:
            dv = after[name] - before[name]
            dt = after.get(_GEN_METRIC, 0.0) - before.get(_GEN_METRIC, 0.0)
            if dv > 0 and dt > 0:
                return dt / dv
    return None
