"""A vLLM server simulator: ``python -m eagletui.sim.vllm serve --model M …`` acts like ``vllm serve``.

Small on purpose: what eagletui reads and drives of a vLLM 0.25 server, taken from real logs
(tests/fixtures/vllm) and vLLM's source, not its engine. The log has vLLM's records (``(APIServer
pid=N) INFO MM-DD HH:MM:SS [file.py:N] …``), its startup sequence (args, engine config, weights, the
drafter, torch.compile, KV cache, the two capture bars, the routes, uvicorn), an ``Engine 000`` stats
line followed by a ``SpecDecoding metrics`` line per interval while requests run, access lines and
uvicorn's shutdown on SIGTERM. The HTTP side serves ``/health``, ``/v1/models``, streamed and plain
``/v1/completions`` (usage in every chunk with ``stream_options.continuous_usage_stats``) and
``/metrics`` with the ``vllm:spec_decode_*`` counters a benchmark takes its acceptance from.

Speed model: one decode step takes ``--sim-step-ms`` (× 1 + 2 % per running request, + 8 % per
speculative token); without speculation a step gives one token, with it 1 + the accepted draft tokens,
drawn so that the mean is ``--sim-accept-len`` (capped at k + 1). Like the SGLang simulator it imports
nothing of eagletui but itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

VERSION = "0.25.1"
PROG = "vllm serve"


def build_parser() -> argparse.ArgumentParser:
    """The flags of ``vllm serve`` this simulator takes (vLLM's own spelling; abbreviations off, as in
    vLLM's FlexibleArgumentParser) and its ``--sim-*`` knobs. Asked by ``eagletui.remote.known_flags``."""
    p = argparse.ArgumentParser(prog=PROG, allow_abbrev=False)
    p.add_argument("model_tag", nargs="?", default=None)
    p.add_argument("--model", default="facebook/opt-125m")
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--api-key", default=None)
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--data-parallel-size", "-dp", type=int, default=1)
    p.add_argument("--speculative-config", default=None)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--max-model-len", type=int, default=None)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--max-num-batched-tokens", type=int, default=None)
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--max-cudagraph-capture-size", type=int, default=None)
    p.add_argument("--disable-log-stats", action="store_true")
    g = p.add_argument_group("eagletui simulator")
    g.add_argument("--sim-time-scale", type=float, default=0.05, help="startup time multiplier")
    g.add_argument("--sim-step-ms", type=float, default=20.0, help="one decode step, alone")
    g.add_argument("--sim-accept-len", type=float, default=2.6, help="mean accepted tokens per step")
    g.add_argument("--sim-stats-interval", type=float, default=1.0, help="seconds between stats lines")
    g.add_argument("--sim-seed", type=int, default=0)
    return p


class Log:
    """vLLM's record format: ``(Actor pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] message``."""

    def __init__(self, out: Any = None) -> None:
        self.out = out or sys.stderr
        self.api_pid = os.getpid()
        self.core_pid = os.getpid() + 1

    def rec(self, actor: str, level: str, where: str, msg: str) -> None:
        pid = self.api_pid if actor == "APIServer" else self.core_pid
        ts = time.strftime("%m-%d %H:%M:%S")
        self.out.write(f"({actor} pid={pid}) {level} {ts} [{where}] {msg}\n")
        self.out.flush()

    def raw(self, actor: str, text: str, end: str = "\n") -> None:
        pid = self.api_pid if actor == "APIServer" else self.core_pid
        self.out.write(f"({actor} pid={pid}) {text}{end}")
        self.out.flush()

    def bar(self, actor: str, desc: str, total: int, seconds: float, completed: bool = False) -> None:
        """A tqdm bar: ``\\r`` frames, then the newline."""
        pid = self.core_pid
        start = time.monotonic()
        for i in range(total + 1):
            el = time.monotonic() - start
            pct = int(100 * i / max(1, total))
            mid = (
                f"{pct:3d}% Completed | {i}/{total}"
                if completed
                else f"{pct:3d}%|{'█' * (pct // 10):<10}| {i}/{total}"
            )
            frame = f"{desc}: {mid} [{int(el) // 60:02d}:{int(el) % 60:02d}<00:00,  1.00it/s]"
            self.out.write((f"({'EngineCore'} pid={pid}) " if i == 0 else "\r") + frame)
            self.out.flush()
            if i < total:
                time.sleep(seconds / max(1, total))
        self.out.write("\n")
        self.out.flush()

    def uvicorn(self, msg: str) -> None:
        self.raw("APIServer", "INFO:     " + msg)


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


def startup(args: argparse.Namespace, log: Log) -> None:
    """The startup log of vLLM 0.25.1 (tests/fixtures/vllm/ready-0251-*), time scaled."""
    s = max(0.0, args.sim_time_scale)
    model = args.model_tag or args.model
    spec = json.loads(args.speculative_config) if args.speculative_config else None
    log.rec("APIServer", "INFO", "api_utils.py:339", f" ▄▄ ▄█ █     █     █ ▀▄▀ █  version {VERSION}")
    nd: dict[str, Any] = {"model_tag": model, "host": args.host, "model": model, "port": args.port}
    if args.tensor_parallel_size != 1:
        nd["tensor_parallel_size"] = args.tensor_parallel_size
    if spec:
        nd["speculative_config"] = spec
    nd["gpu_memory_utilization"] = args.gpu_memory_utilization
    log.rec("APIServer", "INFO", "api_utils.py:273", f"non-default args: {nd!r}")
    sc = "None"
    if spec:
        sc = f"SpeculativeConfig(method={spec.get('method', 'eagle3')!r}, model={spec.get('model', '')!r}, num_spec_tokens={spec.get('num_speculative_tokens', 0)})"
    log.rec(
        "EngineCore",
        "INFO",
        "core.py:114",
        f"Initializing a V1 LLM engine (v{VERSION}) with config: model={model!r}, speculative_config={sc}, "
        f"tensor_parallel_size={args.tensor_parallel_size}, pipeline_parallel_size=1, data_parallel_size=1",
    )
    log.rec(
        "EngineCore",
        "INFO",
        "parallel_state.py:1607",
        "world_size=1 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:36439 backend=nccl",
    )
    log.rec(
        "EngineCore",
        "INFO",
        "parallel_state.py:1942",
        "rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0",
    )
    log.rec("EngineCore", "INFO", "gpu_model_runner.py:5209", f"Starting to load model {model}...")
    log.bar("EngineCore", "Loading safetensors checkpoint shards", 4, 40 * s, completed=True)
    log.rec("EngineCore", "INFO", "default_loader.py:430", f"Loading weights took {40 * s:.2f} seconds")
    if spec:
        log.rec("EngineCore", "INFO", "gpu_model_runner.py:5233", "Loading drafter model...")
        log.bar("EngineCore", "Loading safetensors checkpoint shards", 1, 5 * s, completed=True)
        log.rec("EngineCore", "INFO", "default_loader.py:430", f"Loading weights took {5 * s:.2f} seconds")
    log.rec(
        "EngineCore",
        "INFO",
        "gpu_model_runner.py:5306",
        "Model loading took 15.80 GiB memory and 46.0 seconds",
    )
    if not args.enforce_eager:
        log.rec(
            "EngineCore",
            "INFO",
            "backends.py:1089",
            "Using cache directory: /tmp/vllm/torch_compile_cache/backbone for vLLM's torch.compile",
        )
        time.sleep(20 * s)
        log.rec("EngineCore", "INFO", "monitor.py:53", f"torch.compile took {20 * s:.2f} s in total")
    log.rec("EngineCore", "INFO", "monitor.py:81", f"Initial profiling/warmup run took {5 * s:.2f} s")
    time.sleep(5 * s)
    log.rec("EngineCore", "INFO", "gpu_worker.py:538", "Available KV cache memory: 52.10 GiB")
    log.rec("EngineCore", "INFO", "kv_cache_utils.py:2146", "GPU KV cache size: 682,000 tokens")
    if not args.enforce_eager:
        log.bar("EngineCore", "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 8, 6 * s)
        log.bar("EngineCore", "Capturing CUDA graphs (decode, FULL)", 8, 4 * s)
        log.rec(
            "EngineCore",
            "INFO",
            "gpu_model_runner.py:6707",
            "Graph capturing finished in 10 secs, took 0.49 GiB",
        )
    log.rec(
        "EngineCore",
        "INFO",
        "core.py:337",
        "init engine (profile, create kv cache, warmup model) took 60.0 s",
    )


async def serve(args: argparse.Namespace, log: Log) -> int:
    from aiohttp import web

    eng = Engine(args)
    model = args.served_model_name or args.model_tag or args.model
    stopping = asyncio.Event()

    def access(request: web.Request, status: int) -> None:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "127.0.0.1:0"
        log.uvicorn(f'{where} - "{request.method} {request.path} HTTP/1.1" {status} OK')

    @web.middleware
    async def auth(request: web.Request, handler: Any) -> web.StreamResponse:
        if (
            args.api_key
            and request.path.startswith("/v1")
            and request.headers.get("Authorization") != f"Bearer {args.api_key}"
        ):
            return web.json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    async def health(request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def models(request: web.Request) -> web.Response:
        access(request, 200)
        return web.json_response(
            {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "vllm"}]}
        )

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(text=eng.metrics(model), content_type="text/plain")

    async def completions(request: web.Request) -> web.StreamResponse:
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
        resp: web.StreamResponse | None = None
        try:
            if stream:
                resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
                await resp.prepare(request)
            while made < max_tokens:
                await asyncio.sleep(eng.step_s())
                n = min(eng.step_tokens(), max_tokens - made)
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
        access(request, 200)
        if resp is None:
            return web.json_response(
                {
                    "object": "text_completion",
                    "model": model,
                    "choices": [{"index": 0, "text": " tok" * made, "finish_reason": "length"}],
                    "usage": usage,
                }
            )
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
            ).encode()
            + b"\n\n"
        )
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def stats_loop() -> None:
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

    app = web.Application(middlewares=[auth])
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/v1/completions", completions)
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
    stats = asyncio.create_task(stats_loop())
    await stopping.wait()
    stats.cancel()
    log.uvicorn("Shutting down")
    log.uvicorn("Waiting for application shutdown.")
    log.uvicorn("Application shutdown complete.")
    log.uvicorn(f"Finished server process [{os.getpid()}]")
    await runner.cleanup()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    if args.speculative_config:
        try:
            cfg = json.loads(args.speculative_config)
        except ValueError as exc:
            sys.stderr.write(f"{PROG}: error: argument --speculative-config: invalid JSON: {exc}\n")
            return 2
        if not isinstance(cfg, dict):
            sys.stderr.write(f"{PROG}: error: argument --speculative-config: expected a JSON object\n")
            return 2
    log = Log()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))  # during startup: killed by SIGTERM
    startup(args, log)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return asyncio.run(serve(args, log))


if __name__ == "__main__":
    raise SystemExit(main())
