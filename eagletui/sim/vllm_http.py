"""The vLLM simulator's serving side: the engine (requests decoding together, the counters vLLM's
Prometheus endpoint reports), the aiohttp routes (``/health``, ``/v1/models``, ``/metrics``, streamed and
plain ``/v1/completions``), the ``Engine 000`` / ``SpecDecoding metrics`` lines while requests run, and
uvicorn's lines around it.

Apart from :mod:`eagletui.sim.vllm` (the command line, the startup log, ``main``), which eagletui imports
for ``build_parser`` alone: aiohttp is imported here, when the server is about to serve.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import time
from typing import Any

from aiohttp import web

from eagletui.sim.vllm_log import Log


class Engine:
    """Requests decoding together, counters as vLLM's Prometheus endpoint reports them."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        spec = json.loads(args.speculative_config) if args.speculative_config else None
        self.k = int(spec.get("num_speculative_tokens", 0)) if isinstance(spec, dict) else 0
        self.rng = random.Random(args.sim_seed)
        self.running = 0
        self.waiting = 0
        self.gen_tokens = 0
        self.prompt_tokens = 0
        self.drafts = 0
        self.draft_tokens = 0
        self.accepted = 0
        self.per_pos = [0] * self.k
        self._interval: dict[str, int] = {
            "gen": 0,
            "prompt": 0,
            "drafts": 0,
            "draft_tokens": 0,
            "accepted": 0,
        }
        self._pos_interval = [0] * self.k

    def step_s(self) -> float:
        a = self.args
        return a.sim_step_ms / 1000.0 * (1 + 0.02 * max(0, self.running - 1)) * (1 + 0.08 * self.k)

    def step_tokens(self) -> int:
        if not self.k:
            return 1
        mean_acc = max(0.0, min(float(self.k), self.args.sim_accept_len - 1.0))
        p = mean_acc / self.k  # each draft position accepted with p (a chain: stops at the first miss)
        acc = 0
        while acc < self.k and self.rng.random() < (p if acc == 0 else min(1.0, p * 1.15)):
            acc += 1
        self.drafts += 1
        self.draft_tokens += self.k
        self.accepted += acc
        for i in range(acc):
            self.per_pos[i] += 1
            self._pos_interval[i] += 1
        for key, v in (("drafts", 1), ("draft_tokens", self.k), ("accepted", acc)):
            self._interval[key] += v
        return 1 + acc

    def add_tokens(self, n: int) -> None:
        self.gen_tokens += n
        self._interval["gen"] += n

    def take_interval(self) -> tuple[dict[str, int], list[int]]:
        d, p = self._interval, self._pos_interval
        self._interval = dict.fromkeys(d, 0)
        self._pos_interval = [0] * self.k
        return d, p

    def metrics(self, model: str) -> str:
        lab = f'engine="0",model_name="{model}"'
        out = [
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{lab}}} {self.running}",
            "# TYPE vllm:generation_tokens counter",
            f"vllm:generation_tokens_total{{{lab}}} {self.gen_tokens}",
            f"vllm:prompt_tokens_total{{{lab}}} {self.prompt_tokens}",
        ]
        if self.k:
            out += [
                "# TYPE vllm:spec_decode_num_drafts counter",
                f"vllm:spec_decode_num_drafts_total{{{lab}}} {self.drafts}",
                f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {self.draft_tokens}",
                f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {self.accepted}",
            ]
            out += [
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{i}"}} {n}'
                for i, n in enumerate(self.per_pos)
            ]
        return "\n".join(out) + "\n"


class _Routes:
    """The HTTP routes of one server: answers from the engine's counters, uvicorn's access lines."""

    def __init__(self, args: argparse.Namespace, log: Log, eng: Engine, model: str) -> None:
        self.args = args
        self.log = log
        self.eng = eng
        self.model = model

    def access(self, request: web.Request, status: int) -> None:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "127.0.0.1:0"
        self.log.uvicorn(f'{where} - "{request.method} {request.path} HTTP/1.1" {status} OK')

    @web.middleware
    async def auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        args = self.args
        if (
            args.api_key
            and request.path.startswith("/v1")
            and request.headers.get("Authorization") != f"Bearer {args.api_key}"
        ):
            return web.json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def models(self, request: web.Request) -> web.Response:
        self.access(request, 200)
        return web.json_response(
            {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "vllm"}]}
        )

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=self.eng.metrics(self.model), content_type="text/plain")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        eng, model = self.eng, self.model
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"object": "error", "message": "invalid JSON"}, status=400)
        if body.get("model") not in (None, model):
            msg = f"The model `{body.get('model')}` does not exist."
            return web.json_response({"object": "error", "message": msg, "code": 404}, status=404)
        max_tokens = int(body.get("max_tokens") or 16)
        prompt = str(body.get("prompt") or "")
        stream = bool(body.get("stream"))
        usage_each = bool((body.get("stream_options") or {}).get("continuous_usage_stats"))
        ptoks = max(1, len(prompt.split()))
        eng.prompt_tokens += ptoks
        eng.running += 1
        made = 0
        hist = [0] * (eng.k + 1)  # this request's verify steps by draft tokens accepted
        resp: web.StreamResponse | None = None
        try:
            if stream:
                resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
                await resp.prepare(request)
            while made < max_tokens:
                await asyncio.sleep(eng.step_s())
                n = min(eng.step_tokens(), max_tokens - made)
                if eng.k:
                    hist[n - 1] += 1
                made += n
                eng.add_tokens(n)
                if resp is not None:
                    chunk: dict[str, Any] = {
                        "object": "text_completion",
                        "model": model,
                        "choices": [{"index": 0, "text": " tok" * n, "finish_reason": None}],
                    }
                    if usage_each:
                        chunk["usage"] = {
                            "prompt_tokens": ptoks,
                            "completion_tokens": made,
                            "total_tokens": ptoks + made,
                        }
                    await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        finally:
            eng.running -= 1
        usage = {"prompt_tokens": ptoks, "completion_tokens": made, "total_tokens": ptoks + made}
        self.access(request, 200)
        if resp is None:
            return web.json_response(
                {
                    "object": "text_completion",
                    "model": model,
                    "choices": [{"index": 0, "text": " tok" * made, "finish_reason": "length"}],
                    "usage": usage,
                }
            )
        await self._end_stream(resp, usage, self._spec_metrics(hist))
        return resp

    def _spec_metrics(self, hist: list[int]) -> dict[str, Any] | None:
        """``metrics`` of the final usage chunk with ``--per-request-spec-decode-metrics`` (vLLM 0.29+,
        ``SpeculativeDecodingMetrics``: dense histogram of draft tokens accepted per verify step)."""
        k = self.eng.k
        if not k or self.args.per_request_spec_decode_metrics == "none":
            return None
        steps = sum(hist)
        accepted = sum(i * c for i, c in enumerate(hist))
        sd = {
            "mean_acceptance_length": 1 + accepted / steps if steps else 1.0,
            "draft_acceptance_rate": accepted / (steps * k) if steps else 0.0,
            "acceptance_histogram": hist,
            "num_spec_steps": steps,
            "num_accepted_draft_tokens": accepted,
            "num_draft_tokens": steps * k,
            "num_spec_tokens": k,
        }
        return {"speculative_decoding": sd}

    async def _end_stream(
        self, resp: web.StreamResponse, usage: dict[str, int], metrics: dict[str, Any] | None = None
    ) -> None:
        """A stream's last chunks: the finish reason, the usage (with the request's ``metrics`` when it
        has any), ``[DONE]``."""
        model = self.model
        last = {
            "object": "text_completion",
            "model": model,
            "choices": [{"index": 0, "text": "", "finish_reason": "length"}],
        }
        await resp.write(b"data: " + json.dumps(last).encode() + b"\n\n")
        await resp.write(
            b"data: "
            + json.dumps(
                {"object": "text_completion", "model": model, "choices": [], "usage": usage}
                | ({"metrics": metrics} if metrics else {})
            ).encode()
            + b"\n\n"
        )
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()


async def _stats_loop(args: argparse.Namespace, log: Log, eng: Engine, stopping: asyncio.Event) -> None:
    """The ``Engine 000`` stats line (and ``SpecDecoding metrics`` after it) per interval with traffic."""
    last = time.monotonic()
    while not stopping.is_set():
        await asyncio.sleep(args.sim_stats_interval)
        d, pos = eng.take_interval()
        dt = max(1e-6, time.monotonic() - last)
        last = time.monotonic()
        if not d["gen"] and not eng.running or args.disable_log_stats:
            continue
        log.rec(
            "APIServer",
            "INFO",
            "loggers.py:273",
            f"Engine 000: Avg prompt throughput: {d['prompt'] / dt:.1f} tokens/s, Avg generation throughput: "
            f"{d['gen'] / dt:.1f} tokens/s, Running: {eng.running} reqs, Waiting: 0 reqs, GPU KV cache usage: "
            f"{min(99.9, 0.4 * eng.running):.1f}%, Prefix cache hit rate: 0.0%",
        )
        if eng.k and d["drafts"]:
            mean = 1 + d["accepted"] / d["drafts"]
            rates = ", ".join(f"{n / d['drafts']:.3f}" for n in pos)
            log.rec(
                "APIServer",
                "INFO",
                "metrics.py:120",
                f"SpecDecoding metrics: Mean acceptance length: {mean:.2f}, Accepted throughput: "
                f"{d['accepted'] / dt:.2f} tokens/s, Drafted throughput: {d['draft_tokens'] / dt:.2f} tokens/s, "
                f"Accepted: {d['accepted']} tokens, Drafted: {d['draft_tokens']} tokens, Per-position "
                f"acceptance rate: {rates}, Avg Draft acceptance rate: {100 * d['accepted'] / max(1, d['draft_tokens']):.1f}%",
            )


async def serve(args: argparse.Namespace, log: Log) -> int:
    eng = Engine(args)
    model = args.served_model_name or args.model_tag or args.model
    stopping = asyncio.Event()
    routes = _Routes(args, log, eng, model)
    app = web.Application(middlewares=[routes.auth])
    app.router.add_get("/health", routes.health)
    app.router.add_get("/v1/models", routes.models)
    app.router.add_get("/metrics", routes.metrics)
    app.router.add_post("/v1/completions", routes.completions)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port)
    try:
        await site.start()
    except OSError as exc:
        log.raw(
            "APIServer",
            f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address ({args.host!r}, {args.port}): {exc.strerror}",
        )
        return 1
    host = args.host or "0.0.0.0"
    log.rec("APIServer", "INFO", "api_server.py:616", f"Starting vLLM server on http://{host}:{args.port}")
    log.rec("APIServer", "INFO", "launcher.py:37", "Available routes are:")
    for route in ("/health", "/v1/models", "/metrics", "/v1/completions"):
        log.rec("APIServer", "INFO", "launcher.py:46", f"Route: {route}, Methods: GET")
    log.uvicorn(f"Started server process [{os.getpid()}]")
    log.uvicorn("Waiting for application startup.")
    log.uvicorn("Application startup complete.")
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    stats = asyncio.create_task(_stats_loop(args, log, eng, stopping))
    await stopping.wait()
    stats.cancel()
    log.uvicorn("Shutting down")
    log.uvicorn("Waiting for application shutdown.")
    log.uvicorn("Application shutdown complete.")
    log.uvicorn(f"Finished server process [{os.getpid()}]")
    await runner.cleanup()
    return 0
