"""The bodies of the simulator's generation answers: ``meta_info`` of ``/generate`` (with the ``spec_*``
accept counts eagletui's benchmark client reads), and the OpenAI ``usage`` and finish reason.

Field-for-field copies of the real server's answers, kept apart from the streaming handlers in
:mod:`eagletui.sim.httpapi` so the shapes can be checked against the fixtures in one place.
:mod:`eagletui.sim.httpapi` re-exports these names.
"""

from __future__ import annotations

import time
from typing import Any

from eagletui.sim.engine import SimRequest
from eagletui.sim.serverstate import ServerState


def meta_info(st: ServerState, r: SimRequest, n: int, final: bool, first: bool = False) -> dict[str, Any]:
    """meta_info as the real server sends it (shared/fixtures/sglang-0.5.17-h200/generate.jsonl): the
    ``spec_*`` fields, latencies and timestamps only in the FINAL answer/chunk, and the ``spec_*`` ones only
    when the request had verify steps (sglang/srt/managers/tokenizer_manager.py adds them when
    ``spec_verify_ct > 0``)."""
    plan = st.plan
    now = time.time()
    fwd = r.received_wall + 0.0005
    m: dict[str, Any] = {
        "id": r.rid,
        "finish_reason": r.finish_reason() if final else None,
        "prompt_tokens": r.prompt_tokens,
        "weight_version": "default",
        "num_retractions": 0,
        "forward_entry_time": fwd,
        "prefill_finished_time": r.prefill_wall or fwd,
        "queue_time": max(0.0, (r.prefill_wall or fwd) - fwd) if r.prefill_wall else 0.0,
        "reasoning_tokens": 0,
        "completion_tokens": n,
        "cached_tokens": r.cached_tokens,
        "cached_tokens_details": {"device": r.cached_tokens, "host": 0},
        "dp_rank": None,
    }
    if final:
        m["e2e_latency"] = (r.last_token_t or time.monotonic()) - r.created
        if plan.spec and r.verify_ct > 0:
            drafts = sum(i * c for i, c in enumerate(r.accept_hist))
            proposed = r.verify_ct * max(plan.ndt - 1, 1)
            m["spec_accept_rate"] = drafts / proposed if proposed else 0.0
            m["spec_accept_length"] = n / r.verify_ct
            m["spec_num_correct_drafts"] = drafts
            m["spec_num_proposed_drafts"] = proposed
            m["spec_verify_ct"] = r.verify_ct
            m["spec_accepted_drafts"] = drafts
            m["spec_proposed_drafts"] = proposed
            m["spec_correct_drafts_histogram"] = list(r.accept_hist)
            m["spec_accept_histogram"] = list(r.accept_hist)
        m["request_received_ts"] = r.received_wall
        m["api_server_dispatch_finish_ts"] = r.received_wall + 0.0003
        m["request_finished_ts"] = r.finished_wall or now
        span = (r.last_token_t or 0.0) - (r.first_token_t or 0.0)
        m["decode_throughput"] = (n - 1) / span if span > 0 and n > 1 else 0.0
    if final or first:
        m["response_sent_to_client_ts"] = now
    return m


def _gen_result(st: ServerState, r: SimRequest, n: int, final: bool, first: bool = False) -> dict[str, Any]:
    return {"text": r.text(n), "output_ids": r.output_ids[:n], "meta_info": meta_info(st, r, n, final, first)}


def _usage(r: SimRequest) -> dict[str, Any]:
    return {
        "prompt_tokens": r.prompt_tokens,
        "completion_tokens": r.completion_tokens,
        "total_tokens": r.prompt_tokens + r.completion_tokens,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
    }


def _finish(r: SimRequest) -> str:
    fr = r.finish_reason() or {}
    return "length" if fr.get("type") == "length" else "stop"
