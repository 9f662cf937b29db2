"""The bodies of the simulator's generation answers: ``meta_info`` of ``/generate`` (with the ``spec_*``
accept counts eagletui's benchmark client reads), the OpenAI ``usage`` and finish reason, and the OpenAI
answers and stream chunks (:class:`OpenAIAnswer`).

Field-for-field copies of the real server's answers, kept apart from the streaming handlers in
:mod:`eagletui.sim.httpapi` so the shapes can be checked against the fixtures in one place.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from eagletui.sim.engine import SimRequest
from eagletui.sim.serverstate import ServerState
from eagletui.sim.version import version_tuple

#: The release whose tokenizer manager no longer sends the three backward-compatible aliases
#: ``spec_accepted_drafts``, ``spec_proposed_drafts`` and ``spec_accept_histogram`` (0.5.17 and 0.5.20
#: ``_calculate_spec_decoding_metrics`` mark them "FIXME: remove in next release"; 0.5.23 has none).
ALIASES_GONE = (0, 5, 23)


def meta_info(st: ServerState, r: SimRequest, n: int, final: bool, first: bool = False) -> dict[str, Any]:
    """meta_info as the real server sends it (shared/fixtures/sglang-0.5.17-h200/generate.jsonl): the
    ``spec_*`` fields, latencies and timestamps only in the FINAL answer/chunk, and the ``spec_*`` ones only
    when the request had verify steps (sglang/srt/managers/tokenizer_manager.py adds them when
    ``spec_verify_ct > 0``); the aliases only from the releases that still send them (``--sim-version``)."""
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
            aliases = version_tuple(plan.args.sim_version) < ALIASES_GONE
            if aliases:
                m["spec_accepted_drafts"] = drafts
                m["spec_proposed_drafts"] = proposed
            m["spec_correct_drafts_histogram"] = list(r.accept_hist)
            if aliases:
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


class OpenAIAnswer:
    """The bodies of one ``/v1/completions`` or ``/v1/chat/completions`` answer: the whole answer, its
    stream's chunks and the closing usage chunk, sharing the answer's id, creation time and model."""

    def __init__(self, r: SimRequest, chat: bool, model: Any) -> None:
        self.r = r
        self.chat = chat
        self.model = model
        self.continuous = False  # stream_options.continuous_usage_stats: usage in every chunk
        self.cid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        self.created = int(time.time())
        self.chunk_name = "chat.completion.chunk" if chat else "text_completion"

    def whole(self, text: str) -> dict[str, Any]:
        """The answer of a request that did not stream."""
        r, chat = self.r, self.chat
        obj_name = "chat.completion" if chat else "text_completion"
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": _finish(r),
            "matched_stop": None,
            "logprobs": None,
        }
        if chat:
            choice["message"] = {
                "role": "assistant",
                "content": text,
                "reasoning_content": None,
                "tool_calls": None,
            }
        else:
            choice["text"] = text
        return {
            "id": self.cid,
            "object": obj_name,
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": _usage(r),
        }

    def chunk(self, delta: str | None, finish: str | None, role: bool = False) -> dict[str, Any]:
        if self.chat:
            d: dict[str, Any] = {"role": "assistant", "content": delta or ""} if role else {"content": delta}
            c: dict[str, Any] = {
                "index": 0,
                "delta": d,
                "logprobs": None,
                "finish_reason": finish,
                "matched_stop": None,
            }
        else:
            c = {
                "index": 0,
                "text": delta or "",
                "logprobs": None,
                "finish_reason": finish,
                "matched_stop": None,
            }
        out = {
            "id": self.cid,
            "object": self.chunk_name,
            "created": self.created,
            "model": self.model,
            "choices": [c],
            "usage": _usage(self.r) if self.continuous else None,
        }
        return out

    def usage_chunk(self) -> dict[str, Any]:
        """The last chunk, with ``stream_options.include_usage``: no choices, the usage."""
        return {
            "id": self.cid,
            "object": self.chunk_name,
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": _usage(self.r),
        }
