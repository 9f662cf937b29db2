"""aiohttp application of the simulator: SGLang 0.5.23's HTTP API subset plus ``GET /sim/stats``."""

from __future__ import annotations

import asyncio
import http
import json
import time
from typing import Any

from aiohttp import web

from eagletui.sim import perf
from eagletui.sim.answers import OpenAIAnswer, _finish, _gen_result
from eagletui.sim.engine import SimRequest, count_prompt_tokens
from eagletui.sim.metrics import metrics_text
from eagletui.sim.serverinfo import model_info_dict, server_info_dict
from eagletui.sim.serverstate import STATE, ServerState

FLUSH_OK = (
    "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, "
    "the operation will not be performed.)\n"
)


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


async def model_info(request: web.Request) -> web.Response:
    return _json(model_info_dict(request.app[STATE].plan))


async def server_info(request: web.Request) -> web.Response:
    return _json(server_info_dict(request.app[STATE]))


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
    """``/flush_cache[?timeout=S]`` like 0.5.23 (sglang/srt/entrypoints/http_server.py:flush_cache and
    managers/scheduler_components/flush_wrapper.py): without a timeout a busy server refuses at once; with
    one, the flush waits up to S seconds for the server to become idle, then answers "Timed out waiting
    for idle state."; a second flush while one waits is refused."""
    st = request.app[STATE]
    eng = st.engine
    raw = request.query.get("timeout", "0")
    try:
        timeout = float(raw)
        if not timeout >= 0.0 or timeout == float("inf"):
            raise ValueError(raw)
    except ValueError:
        return _json(
            {
                "detail": [
                    {
                        "type": "greater_than_equal",
                        "loc": ["query", "timeout"],
                        "msg": "Input should be greater than or equal to 0",
                        "input": raw,
                    }
                ]
            },
            status=422,
        )
    if st.flush_pending:
        return web.Response(text="Another flush_cache is already in progress.", status=400)
    if eng.busy and timeout > 0:
        st.flush_pending = True
        try:
            deadline = time.monotonic() + timeout
            while eng.busy and time.monotonic() < deadline:
                await asyncio.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
        finally:
            st.flush_pending = False
        if eng.busy:
            st.log.line("Deferred flush_cache timed out while waiting for idle state.", rank=0, level=30)
            return web.Response(text="Timed out waiting for idle state.", status=400)
    if eng.flush():
        st.log.line("Cache flushed successfully!", rank=0)
        return web.Response(text=FLUSH_OK)
    st.log.line(
        f"Cache not flushed because there are pending requests. #queue-req: {len(eng.waiting)}, "
        f"#running-req: {len(eng.running)}",
        rank=0,
        level=30,
    )
    return web.Response(text="Flush cache failed.\n", status=400)


_ASGI_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/uvicorn/protocols/http/h11_impl.py", line 410, in run_asgi',
    "    result = await app(  # type: ignore[func-returns-value]",
    "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    '  File "/usr/local/lib/python3.12/dist-packages/fastapi/routing.py", line 350, in run_endpoint_function',
    "    return await dependant.call(**values)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
]


def _asgi_exception(st: ServerState, where: str, call: str, message: str) -> web.Response:
    """An exception in a handler, as uvicorn logs it (``ERROR:    Exception in ASGI application`` and the
    traceback, ending in the ``RuntimeError`` the tokenizer manager raised), and its 500 answer."""
    st.log.uvicorn("Exception in ASGI application", level="ERROR")
    tb = [
        *_ASGI_TB,
        f'  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/http_server.py", line 1225, in {where}',
        f"    await _global_state.tokenizer_manager.{call}()",
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/tokenizer_control_mixin.py", line 427, '
        "in _execute_profile",
        "    raise RuntimeError(result.message)",
        f"RuntimeError: {message}",
    ]
    st.log.raw("\n".join(tb) + "\n")
    return web.Response(text="Internal Server Error", status=500)


async def start_profile(request: web.Request) -> web.Response:
    """``/start_profile`` with an optional ``ProfileReq`` JSON body (see :mod:`eagletui.sim.profiler`)."""
    from eagletui.sim.profiler import ProfileError

    st = request.app[STATE]
    body: dict[str, Any] = {}
    if request.can_read_body:
        raw = await request.read()
        if raw.strip():
            body = await _body(request)
    try:
        st.engine.profiler.start(body, st.plan.env)
    except ProfileError as e:
        return _asgi_exception(st, "start_profile_async", "start_profile", str(e))
    return web.Response(text="Start profiling.\n")


async def stop_profile(request: web.Request) -> web.Response:
    from eagletui.sim.profiler import ProfileError

    st = request.app[STATE]
    try:
        st.engine.profiler.stop()
    except ProfileError as e:
        return _asgi_exception(st, "stop_profile_async", "stop_profile", str(e))
    return web.Response(text="Stop profiling. This will take some time.\n")


async def freeze_gc(request: web.Request) -> web.Response:
    """``/freeze_gc`` (the server POSTs it to itself after warmup, http_server.py:_freeze_gc_after_server_warmup)."""
    request.app[STATE].gc_frozen = True
    return web.Response(text="Garbage collection frozen.\n")


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
        "host": plan.cfg.preset.name,
        "custom_all_reduce": plan.cfg.custom_all_reduce,
        "max_running_requests": plan.max_running,
    }
    return _json(data)


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
    streaming: bool = False,
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
    req.streaming = streaming
    st.engine.submit(req)
    return req


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


def _sse() -> web.StreamResponse:
    """An event stream's response, prepared by the handler inside its disconnect handling (the client
    may be gone before the headers are written)."""
    return web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})


# A stream whose client went (a benchmark cancelled by the user or a SIGTERM) is aborted without a word
# in the log: SGLang's StreamingResponse ends on the disconnect and its background task aborts the request
# (sglang 0.5.17 http_server.generate_request, tokenizer_manager.create_abort_task), where a handler
# raising ConnectionResetError made aiohttp log "Error handling request" and a traceback in the log pane.


async def _send(resp: web.StreamResponse, obj: Any) -> None:
    await resp.write(b"data: " + json.dumps(obj).encode() + b"\n\n")


async def generate(request: web.Request) -> web.StreamResponse:
    st = request.app[STATE]
    body = await _body(request)
    sp = body.get("sampling_params") or {}
    text, ids = body.get("text"), body.get("input_ids")
    batch = isinstance(text, list) or (isinstance(ids, list) and ids and isinstance(ids[0], list))
    prompts: list[tuple[str | None, list[int] | None]]
    if isinstance(text, list):
        prompts = [(t, None) for t in text]
    elif batch and isinstance(ids, list):
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
            streaming=bool(body.get("stream")),
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
    resp = _sse()
    merged: asyncio.Queue = asyncio.Queue()

    async def pump(idx: int, r: SimRequest) -> None:
        async for n, final in _updates(r):
            await merged.put((idx, r, n, final))

    tasks = [asyncio.ensure_future(pump(i, r)) for i, r in enumerate(reqs)]
    done = 0
    sent_first: set[int] = set()
    try:
        await resp.prepare(request)
        while done < len(reqs):
            idx, r, n, final = await merged.get()
            obj = _gen_result(st, r, n, final, first=idx not in sent_first)
            sent_first.add(idx)
            if batch:
                obj["index"] = idx
            await _send(resp, obj)
            done += final
        await resp.write(b"data: [DONE]\n\n")
    except ConnectionResetError:
        for r in reqs:
            st.engine.abort(r)
        return resp  # the client went (a cancelled benchmark): aborted quietly (the note above _send)
    except asyncio.CancelledError:
        for r in reqs:
            st.engine.abort(r)
        raise
    finally:
        for t in tasks:
            t.cancel()
    return resp


async def _openai(request: web.Request, chat: bool) -> web.StreamResponse:
    st = request.app[STATE]
    body = await _body(request)
    prompt, ptext, max_new = _openai_prompt(body, chat)
    ids = None if isinstance(ptext, str) else list(prompt)
    r = _new(
        st,
        prompt=ptext,
        ids=ids,
        max_new=max_new,
        ignore_eos=bool(body.get("ignore_eos")),
        streaming=bool(body.get("stream")),
    )
    answer = OpenAIAnswer(r, chat, body.get("model") or st.plan.served_model_name)
    if not body.get("stream"):
        n = await _final_count(r)
        return _json(answer.whole(r.text(n)))
    resp = _sse()
    so = body.get("stream_options") or {}
    include_usage = bool(so.get("include_usage"))
    answer.continuous = bool(so.get("continuous_usage_stats"))
    try:
        await resp.prepare(request)
        if chat:
            await _send(resp, answer.chunk("", None, role=True))
        sent = ""
        async for n, final in _updates(r):
            text = r.text(n)
            delta, sent = text[len(sent) :], text
            await _send(resp, answer.chunk(delta, _finish(r) if final else None))
        if include_usage:
            await _send(resp, answer.usage_chunk())
        await resp.write(b"data: [DONE]\n\n")
    except ConnectionResetError:
        st.engine.abort(r)
        return resp  # the client went: aborted quietly (see generate)
    except asyncio.CancelledError:
        st.engine.abort(r)
        raise
    return resp


def _openai_prompt(body: dict[str, Any], chat: bool) -> tuple[Any, str | None, Any]:
    """(the prompt, its text or None when it is token ids, max new tokens) of an OpenAI request: a chat's
    messages count their text and a per-message template overhead."""
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
    return prompt, ptext, max_new


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


def _deprecated(handler: Any, old: str, new: str) -> Any:
    """sglang/srt/entrypoints/http_server.py: the old info endpoints still answer and log a warning."""

    async def wrapped(request: web.Request) -> web.StreamResponse:
        request.app[STATE].log.line(
            f"Endpoint '{old}' is deprecated and will be removed in a future version. Please use '{new}' instead.",
            level=30,
        )
        return await handler(request)

    return wrapped


def make_app(st: ServerState) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[_api_key])
    app[STATE] = st
    app.on_response_prepare.append(_on_prepare)
    r = app.router
    for path in ("/health", "/health_generate", "/ready"):
        r.add_get(path, health)
    r.add_get("/model_info", model_info)
    r.add_get("/get_model_info", _deprecated(model_info, "/get_model_info", "/model_info"))
    r.add_get("/server_info", server_info)
    r.add_get("/get_server_info", _deprecated(server_info, "/get_server_info", "/server_info"))
    r.add_post("/generate", generate)
    r.add_post("/v1/completions", completions)
    r.add_post("/v1/chat/completions", chat_completions)
    r.add_get("/v1/models", v1_models)
    r.add_route("GET", "/flush_cache", flush_cache)
    r.add_route("POST", "/flush_cache", flush_cache)
    for method in ("GET", "POST"):
        r.add_route(method, "/start_profile", start_profile)
        r.add_route(method, "/stop_profile", stop_profile)
    r.add_route("GET", "/freeze_gc", freeze_gc)
    r.add_route("POST", "/freeze_gc", freeze_gc)
    if st.plan.args.enable_metrics:
        r.add_get("/metrics", metrics)
    r.add_get("/sim/stats", sim_stats)
    return app
