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

This module holds the command line, the startup log and ``main``; the log records are
:mod:`eagletui.sim.vllm_log`'s, the engine and the HTTP side :mod:`eagletui.sim.vllm_http`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from eagletui.sim.vllm_log import Log

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
    # 0.29+ (vllm/config/observability.py): each answer's acceptance under metrics.speculative_decoding
    p.add_argument(
        "--per-request-spec-decode-metrics", choices=("none", "summary", "detailed"), default="none"
    )
    g = p.add_argument_group("eagletui simulator")
    g.add_argument("--sim-time-scale", type=float, default=0.05, help="startup time multiplier")
    g.add_argument("--sim-step-ms", type=float, default=20.0, help="one decode step, alone")
    g.add_argument("--sim-accept-len", type=float, default=2.6, help="mean accepted tokens per step")
    g.add_argument("--sim-stats-interval", type=float, default=1.0, help="seconds between stats lines")
    g.add_argument("--sim-seed", type=int, default=0)
    return p


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
    elif args.per_request_spec_decode_metrics != "none":
        # vllm/config/vllm.py (0.33.0 L1735-1742)
        sys.stderr.write(
            "ValueError: --per-request-spec-decode-metrics requires speculative decoding to be enabled "
            "(via --speculative-config).\n"
        )
        return 1
    log = Log()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))  # during startup: killed by SIGTERM
    startup(args, log)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # aiohttp only now: build_parser (asked by eagletui for the flags) must not need it
    from eagletui.sim.vllm_http import serve

    return asyncio.run(serve(args, log))


if __name__ == "__main__":
    raise SystemExit(main())
