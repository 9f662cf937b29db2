"""aiohttp application of the simulator: SGLang 0.5.23's HTTP API subset plus ``GET /sim/stats``."""

from __future__ import annotations

import asyncio
import http
import json
import time
import uuid
from typing import Any

from aiohttp import web

from eagletui.sim import perf
from eagletui.sim.engine import TTFT_BUCKETS, Engine, SimRequest, count_prompt_tokens
from eagletui.sim.startup import Plan

FLUSH_OK = (
    "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, "
    "the operation will not be performed.)\n"
)


class ServerState:
    def __init__(self, plan: Plan, engine: Engine, log: Any) -> None:
        self.plan = plan
        self.engine = engine
        self.log = log
        self.ready = False  # warmup done
        self.shutting_down = False
        self.started_wall = time.time()


STATE = web.AppKey("state", ServerState)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data), status=status, content_type="application/json")


async def _on_prepare(request: web.Request, response: web.StreamResponse) -> None:
    st = request.app[STATE]
    peer = request.transport.get_extra_info("peername") if request.transport else None
    peer_s = f"{peer[0]}:{peer[1]}" if peer else "127.0.0.1:0"
    try:
        phrase = http.HTTPStatus(response.status).phrase
    except ValueError:
        phrase = ""
    st.log.access(peer_s, request.method, request.path_qs, response.status, phrase)


# --- health / info ---------------------------------------------------------------------------------------


async def health(request: web.Request) -> web.Response:
    st = request.app[STATE]
    if not st.ready or st.shutting_down:
        return web.Response(status=503)
    return web.Response(status=200)


def model_info_dict(plan: Plan) -> dict[str, Any]:
    a = plan.args
    return {
        "model_path": a.model_path,
        "served_model_name": plan.served_model_name,
        "tokenizer_path": a.tokenizer_path or a.model_path,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "load_format": a.load_format,
        "reasoning_parser": a.reasoning_parser,
        "tool_call_parser": a.tool_call_parser,
        "disaggregation_mode": "null",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "kimi_k2"
        if plan.arch == "DeepseekV3ForCausalLM"
        else plan.arch.split("For")[0].lower(),
        "architectures": [plan.arch],
    }


async def model_info(request: web.Request) -> web.Response:
    return _json(model_info_dict(request.app[STATE].plan))


async def server_info(request: web.Request) -> web.Response:
    st = request.app[STATE]
    plan, eng = st.plan, st.engine
    args = dict(plan.server_args)
    internal: dict[str, Any] = dict(args)
    internal.update(
        world_size=plan.tp,
        startup_time=plan.startup_time,
        effective_max_running_requests_per_dp=plan.max_running,
        last_gen_throughput=eng.last_gen_throughput,
        memory_usage={
            "weight": round(plan.weight_gb + plan.draft_gb, 2),
            "kvcache": round(plan.kv_gb + plan.draft_kv_gb, 2),
            "token_capacity": plan.max_total_tokens,
            "graph": {k: round(v, 2) for k, v in plan.graph_gb.items()},
        },
        disaggregation_mode="null",
        decode_cuda_graph_bs=plan.capture_bs if not plan.args.disable_cuda_graph else [],
    )
    if plan.spec and eng.avg_spec_accept_length is not None:
        internal["avg_spec_accept_length"] = eng.avg_spec_accept_length
    out = dict(args)
    out.update(
        status="ready" if st.ready else "starting",
        max_total_num_tokens=plan.max_total_tokens,
        max_req_input_len=plan.context_len - 1,
        startup_time=plan.startup_time,
        launch_command="python -m sglang.launch_server " + " ".join(plan.env.get("_SIM_ARGV", "").split()),
        internal_states=[internal],
        version=plan.args.sim_version,
    )
    return _json(out)


async def v1_models(request: web.Request) -> web.Response:
    plan = request.app[STATE].plan
    return _json(
        {
            "object": "list",
            "data": [
                {
                    "id": plan.served_model_name,
                    "object": "model",
                    "created": int(request.app[STATE].started_wall),
                    "owned_by": "sglang",
                    "root": plan.served_model_name,
                    "max_model_len": plan.context_len,
                }
            ],
        }
    )


async def flush_cache(request: web.Request) -> web.Response:
    st = request.app[STATE]
    eng = st.engine
    if eng.flush():
        st.log.line("Cache flushed successfully!", rank=0)
        return web.Response(text=FLUSH_OK)
    st.log.line(
        f"Cache not flushed because there are pending requests. #queue-req: {len(eng.waiting)}, "
        f"#running-req: {len(eng.running)}",
        rank=0,
    )
    return web.Response(text="Flush cache failed.", status=400)


async def sim_stats(request: web.Request) -> web.Response:
    st = request.app[STATE]
    eng, plan = st.engine, st.plan
    data = eng.stats.snapshot()
    data["expected"] = perf.expected(plan.cfg)
    data["running"] = len(eng.running)
    data["queued"] = len(eng.waiting)
    data["config"] = {
        "tp": plan.tp,
        "spec": plan.spec,
        "speculative_num_steps": plan.steps,
        "speculative_eagle_topk": plan.topk,
        "speculative_num_draft_tokens": plan.ndt,
        "draft_p": plan.cfg.draft_p,
        "allreduce_fusion": plan.cfg.allreduce_fusion,
        "cuda_graph": plan.cfg.cuda_graph,
        "nccl_algo": plan.cfg.nccl_algo,
        "nccl_proto": plan.cfg.nccl_proto,
        "speed": plan.cfg.speed,
        "max_running_requests": plan.max_running,
    }
    return _json(data)


def metrics_text(st: ServerState) -> str:
    eng, plan = st.engine, st.plan
    labels = f'engine_type="unified",model_name="{plan.served_model_name}",pp_rank="0",tp_rank="0"'
    gen = eng.last_gen_throughput if time.monotonic() - eng._last_log_t < 10 or eng.busy else 0.0
    out: list[str] = []

    def metric(name: str, kind: str, value: float, help_: str) -> None:
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} {kind}")
        out.append(f"{name}{{{labels}}} {float(value)}")

    metric("sglang:gen_throughput", "gauge", gen, "The generation throughput (token/s).")
    metric("sglang:num_running_reqs", "gauge", len(eng.running), "The number of running requests.")
    metric("sglang:num_queue_reqs", "gauge", len(eng.waiting), "The number of requests in the waiting queue.")
    used, usage = eng.token_usage()
    metric("sglang:num_used_tokens", "gauge", used, "The number of used tokens.")
    metric("sglang:token_usage", "gauge", usage, "The token usage.")
    metric(
        "sglang:is_cuda_graph", "gauge", 1.0 if plan.cfg.cuda_graph else 0.0, "Whether cuda graph is used."
    )
    if plan.spec:
        metric(
            "sglang:spec_accept_length", "gauge", eng.last_accept_len or 0.0, "The average acceptance length."
        )
        metric(
            "sglang:spec_accept_rate", "gauge", eng.last_accept_rate or 0.0, "The average acceptance rate."
        )
        metric("sglang:spec_num_steps", "gauge", plan.steps, "The number of speculative steps.")
        metric("sglang:spec_num_draft_tokens", "gauge", plan.ndt, "The number of draft tokens.")
        metric("sglang:spec_verify_calls_total", "counter", eng.verify_calls_total, "Number of verify calls.")
    metric(
        "sglang:prompt_tokens_total",
        "counter",
        eng.prompt_tokens_total,
        "Number of prefill tokens processed.",
    )
    metric("sglang:generation_tokens_total", "counter", eng.gen_tokens_total, "Number of generation tokens.")
    metric("sglang:num_requests_total", "counter", eng.requests_total, "Number of requests processed.")
    metric("sglang:max_total_num_tokens", "gauge", plan.max_total_tokens, "Maximum total number of tokens.")
    name = "sglang:time_to_first_token_seconds"
    out.append(f"# HELP {name} Histogram of time to first token in seconds.")
    out.append(f"# TYPE {name} histogram")
    cum = 0
    for b, c in zip(TTFT_BUCKETS, eng.ttft_counts, strict=False):
        cum += c
        out.append(f'{name}_bucket{{{labels},le="{b}"}} {float(cum)}')
    out.append(f'{name}_bucket{{{labels},le="+Inf"}} {float(eng.ttft_n)}')
    out.append(f"{name}_sum{{{labels}}} {eng.ttft_sum}")
    out.append(f"{name}_count{{{labels}}} {float(eng.ttft_n)}")
    return "\n".join(out) + "\n"


async def metrics(request: web.Request) -> web.Response:
    return web.Response(text=metrics_text(request.app[STATE]), content_type="text/plain", charset="utf-8")


# --- generation ------------------------------------------------------------------------------------------


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": f"invalid JSON: {e}"}), content_type="application/json"
        ) from e
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(text='{"error": "expected a JSON object"}', content_type="application/json")
    return data


def _new(
    st: ServerState,
    *,
    prompt: str | None,
    ids: list[int] | None,
    max_new: Any,
    ignore_eos: bool,
    rid: str | None = None,
) -> SimRequest:
    try:
        max_new_i = int(max_new)
    except (TypeError, ValueError) as e:
        raise web.HTTPBadRequest(
            text='{"error": "max_new_tokens must be an integer"}', content_type="application/json"
        ) from e
    ptoks = count_prompt_tokens(prompt, ids)
    if ptoks + max_new_i > st.plan.context_len:
        raise web.HTTPBadRequest(
            text=json.dumps(
                {
                    "error": f"Requested token count exceeds the model's maximum context length of "
                    f"{st.plan.context_len} tokens."
                }
            ),
            content_type="application/json",
        )
    key = prompt if prompt is not None else ",".join(map(str, ids or []))
    req = st.engine.new_request(
        prompt_tokens=ptoks,
        max_new_tokens=max_new_i,
        ignore_eos=ignore_eos,
        prompt_key=key,
        internal=not st.ready,
        rid=rid,
    )
    st.engine.submit(req)
    return req


def meta_info(st: ServerState, r: SimRequest, n: int, final: bool) -> dict[str, Any]:
    plan = st.plan
    m: dict[str, Any] = {
        "id": r.rid,
        "finish_reason": r.finish_reason() if final else None,
        "prompt_tokens": r.prompt_tokens,
        "weight_version": "default",
        "num_retractions": 0,
        "completion_tokens": n,
        "cached_tokens": r.cached_tokens,
        "reasoning_tokens": 0,
    }
    if plan.spec:
        m["spec_verify_ct"] = r.verify_ct
        if final:
            drafts = max(r.decode_tokens - r.verify_ct, 0)
            proposed = r.verify_ct * max(plan.ndt - 1, 1)
            m["spec_accept_length"] = n / r.verify_ct if r.verify_ct else float(n)
            m["spec_accept_rate"] = drafts / proposed if proposed else 0.0
            m["spec_num_correct_drafts"] = drafts
            m["spec_num_proposed_drafts"] = proposed
    if final:
        m["e2e_latency"] = (r.last_token_t or time.monotonic()) - r.created
    return m


async def _updates(r: SimRequest):
    """Yield (completion_tokens, final) as the engine produces tokens; coalesces backlog."""
    while True:
        n = await r.updates.get()
        while not r.updates.empty():
            n = r.updates.get_nowait()
        final = r.finished and n >= r.completion_tokens
        yield n, final
        if final:
            return


async def _final_count(r: SimRequest) -> int:
    n = 0
    async for count, _final in _updates(r):
        n = count
    return n


async def _sse(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    return resp


async def _send(resp: web.StreamResponse, obj: Any) -> None:
    await resp.write(b"data: " + json.dumps(obj).encode() + b"\n\n")


def _gen_result(st: ServerState, r: SimRequest, n: int, final: bool) -> dict[str, Any]:
    return {"text": r.text(n), "output_ids": r.output_ids[:n], "meta_info": meta_info(st, r, n, final)}


async def generate(request: web.Request) -> web.StreamResponse:
    st = request.app[STATE]
    body = await _body(request)
    sp = body.get("sampling_params") or {}
    text, ids = body.get("text"), body.get("input_ids")
    batch = isinstance(text, list) or (isinstance(ids, list) and ids and isinstance(ids[0], list))
    prompts: list[tuple[str | None, list[int] | None]]
    if isinstance(text, list):
        prompts = [(t, None) for t in text]
    elif batch:
        prompts = [(None, i) for i in ids]
    else:
        prompts = [(text if text is not None else None, ids)]
    if isinstance(sp, list):
        sps = sp
    else:
        sps = [sp] * len(prompts)
    reqs = [
        _new(
            st,
            prompt=p,
            ids=i,
            max_new=s.get("max_new_tokens", 128),
            ignore_eos=bool(s.get("ignore_eos")),
            rid=(body.get("rid") if not batch else None),
        )
        for (p, i), s in zip(prompts, sps, strict=False)
    ]
    if not body.get("stream"):
        try:
            results = []
            for r in reqs:
                n = await _final_count(r)
                results.append(_gen_result(st, r, n, True))
        except asyncio.CancelledError:
            for r in reqs:
                st.engine.abort(r)
            raise
        return _json(results if batch else results[0])
    resp = await _sse(request)
    merged: asyncio.Queue = asyncio.Queue()

    async def pump(idx: int, r: SimRequest) -> None:
        async for n, final in _updates(r):
            await merged.put((idx, r, n, final))

    tasks = [asyncio.ensure_future(pump(i, r)) for i, r in enumerate(reqs)]
    done = 0
    try:
        while done < len(reqs):
            idx, r, n, final = await merged.get()
            obj = _gen_result(st, r, n, final)
            if batch:
                obj["index"] = idx
            await _send(resp, obj)
            done += final
        await resp.write(b"data: [DONE]\n\n")
    except (ConnectionResetError, asyncio.CancelledError):
        for r in reqs:
            st.engine.abort(r)
        raise
    finally:
        for t in tasks:
            t.cancel()
    return resp


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


async def _openai(request: web.Request, chat: bool) -> web.StreamResponse:
    st = request.app[STATE]
    body = await _body(request)
    if chat:
        msgs = body.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in msgs if isinstance(m, dict))
        ptext = prompt + " " * (4 * 8 * len(msgs))
        max_new = body.get("max_completion_tokens") or body.get("max_tokens") or 256
    else:
        prompt = body.get("prompt", "")
        if isinstance(prompt, list):
            prompt = prompt[0] if prompt else ""
        ptext = prompt if isinstance(prompt, str) else None
        max_new = body.get("max_tokens") or 16
    ids = None if isinstance(ptext, str) else list(prompt)
    r = _new(st, prompt=ptext, ids=ids, max_new=max_new, ignore_eos=bool(body.get("ignore_eos")))
    model = body.get("model") or st.plan.served_model_name
    cid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
    created = int(time.time())
    obj_name = "chat.completion" if chat else "text_completion"
    if not body.get("stream"):
        n = await _final_count(r)
        text = r.text(n)
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
        return _json(
            {
                "id": cid,
                "object": obj_name,
                "created": created,
                "model": model,
                "choices": [choice],
                "usage": _usage(r),
            }
        )
    resp = await _sse(request)
    chunk_name = "chat.completion.chunk" if chat else "text_completion"
    so = body.get("stream_options") or {}
    include_usage = bool(so.get("include_usage"))
    continuous = bool(so.get("continuous_usage_stats"))

    def chunk(delta: str | None, finish: str | None, role: bool = False) -> dict[str, Any]:
        if chat:
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
            "id": cid,
            "object": chunk_name,
            "created": created,
            "model": model,
            "choices": [c],
            "usage": _usage(r) if continuous else None,
        }
        return out

    try:
        if chat:
            await _send(resp, chunk("", None, role=True))
        sent = ""
        async for n, final in _updates(r):
            text = r.text(n)
            delta, sent = text[len(sent) :], text
            await _send(resp, chunk(delta, _finish(r) if final else None))
        if include_usage:
            await _send(
                resp,
                {
                    "id": cid,
                    "object": chunk_name,
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": _usage(r),
                },
            )
        await resp.write(b"data: [DONE]\n\n")
    except (ConnectionResetError, asyncio.CancelledError):
        st.engine.abort(r)
        raise
    return resp


async def completions(request: web.Request) -> web.StreamResponse:
    return await _openai(request, chat=False)


async def chat_completions(request: web.Request) -> web.StreamResponse:
    return await _openai(request, chat=True)


@web.middleware
async def _api_key(request: web.Request, handler: Any) -> web.StreamResponse:
    """``--api-key``: like sglang, every route but the health checks wants ``Authorization: Bearer KEY``."""
    key = request.app[STATE].plan.args.api_key
    if key and not request.path.startswith("/health") and request.method != "OPTIONS":
        if request.headers.get("Authorization", "") != f"Bearer {key}":
            return _json({"error": "Unauthorized"}, status=401)
    return await handler(request)


def make_app(st: ServerState) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[_api_key])
    app[STATE] = st
    app.on_response_prepare.append(_on_prepare)
    r = app.router
    for path in ("/health", "/health_generate", "/ready"):
        r.add_get(path, health)
    for path in ("/model_info", "/get_model_info"):
        r.add_get(path, model_info)
    for path in ("/server_info", "/get_server_info"):
        r.add_get(path, server_info)
    r.add_post("/generate", generate)
    r.add_post("/v1/completions", completions)
    r.add_post("/v1/chat/completions", chat_completions)
    r.add_get("/v1/models", v1_models)
    r.add_route("GET", "/flush_cache", flush_cache)
    r.add_route("POST", "/flush_cache", flush_cache)
    if st.plan.args.enable_metrics:
        r.add_get("/metrics", metrics)
    r.add_get("/sim/stats", sim_stats)
    return app
