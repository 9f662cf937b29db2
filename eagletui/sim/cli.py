"""Command line of the simulator: a subset of ``sglang.launch_server`` (0.5.23) plus ``--sim-*`` options.

Only :mod:`argparse` is imported here so ``python -m eagletui.sim --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

#: Whole launch ≈ 600 s at scale 1.0; the default squeezes it into ≈ 20 s.
DEFAULT_TIME_SCALE = 0.033
DEFAULT_VERSION = "0.5.23"

LAUNCH_WARNING = (
    "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py:17: UserWarning: "
    "'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.\n"
    "  warnings.warn(\n"
)


def _bool_flag(p: argparse._ActionsContainer, *names: str, help: str = "") -> None:
    p.add_argument(*names, action="store_true", default=False, help=help)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="launch_server.py",
        allow_abbrev=False,
        description="eagletui SGLang simulator (behaves like `python -m sglang.launch_server`).",
    )
    g = p.add_argument_group("model")
    g.add_argument("--model-path", "--model", dest="model_path", required=True)
    g.add_argument("--tokenizer-path", default=None)
    g.add_argument("--served-model-name", default=None)
    g.add_argument("--trust-remote-code", action="store_true", default=False)
    g.add_argument("--context-length", type=int, default=None)
    g.add_argument("--dtype", default="auto")
    g.add_argument("--quantization", default=None)
    g.add_argument("--kv-cache-dtype", default="auto")
    g.add_argument("--load-format", default="auto")
    g.add_argument("--revision", default=None)

    g = p.add_argument_group("server")
    g.add_argument("--host", default="127.0.0.1")
    g.add_argument("--port", type=int, default=30000)
    g.add_argument("--api-key", default=None)
    g.add_argument("--skip-server-warmup", action="store_true", default=False)
    g.add_argument("--watchdog-timeout", type=float, default=300.0)
    g.add_argument("--dist-timeout", type=int, default=None)
    g.add_argument("--random-seed", type=int, default=None)
    g.add_argument("--reasoning-parser", default=None)
    g.add_argument("--tool-call-parser", default=None)
    g.add_argument("--chat-template", default=None)

    g = p.add_argument_group("parallelism")
    g.add_argument("--tp-size", "--tp", "--tensor-parallel-size", dest="tp_size", type=int, default=1)
    g.add_argument("--dp-size", "--dp", dest="dp_size", type=int, default=1)
    g.add_argument("--ep-size", "--ep", dest="ep_size", type=int, default=1)
    g.add_argument("--pp-size", "--pp", dest="pp_size", type=int, default=1)
    g.add_argument("--nnodes", type=int, default=1)
    g.add_argument("--node-rank", type=int, default=0)
    g.add_argument("--dist-init-addr", default=None)
    _bool_flag(g, "--enable-dp-attention")

    g = p.add_argument_group("memory and scheduling")
    g.add_argument("--mem-fraction-static", type=float, default=None)
    g.add_argument("--max-running-requests", type=int, default=None)
    g.add_argument("--max-total-tokens", type=int, default=None)
    g.add_argument("--chunked-prefill-size", type=int, default=None)
    g.add_argument("--max-prefill-tokens", type=int, default=16384)
    g.add_argument("--schedule-policy", default="fcfs")
    g.add_argument("--page-size", type=int, default=1)
    _bool_flag(g, "--disable-radix-cache")
    _bool_flag(g, "--disable-overlap-schedule")

    g = p.add_argument_group("kernels")
    g.add_argument("--attention-backend", default=None)
    g.add_argument("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode", dest="cuda_graph_max_bs", type=int)
    g.add_argument("--cuda-graph-bs", type=int, nargs="+", default=None)
    _bool_flag(g, "--disable-cuda-graph")
    _bool_flag(g, "--disable-cuda-graph-padding")
    _bool_flag(g, "--enable-torch-compile")
    _bool_flag(g, "--enable-flashinfer-allreduce-fusion")
    _bool_flag(g, "--disable-custom-all-reduce")
    _bool_flag(g, "--enable-nccl-nvls")
    _bool_flag(g, "--enable-symm-mem")

    g = p.add_argument_group("speculative decoding")
    g.add_argument(
        "--speculative-algorithm",
        type=str.upper,
        choices=["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"],
        default=None,
    )
    g.add_argument(
        "--speculative-draft-model-path", "--speculative-draft-model", dest="speculative_draft_model_path"
    )
    g.add_argument("--speculative-draft-load-format", default=None)
    g.add_argument("--speculative-num-steps", type=int, default=None)
    g.add_argument("--speculative-eagle-topk", type=int, default=None)
    g.add_argument("--speculative-num-draft-tokens", type=int, default=None)
    g.add_argument("--speculative-attention-mode", default="prefill")

    g = p.add_argument_group("logging and metrics")
    g.add_argument("--log-level", default="info")
    g.add_argument("--log-level-http", default=None)
    _bool_flag(g, "--log-requests")
    g.add_argument("--decode-log-interval", type=int, default=40)
    _bool_flag(g, "--enable-metrics")
    _bool_flag(g, "--enable-cache-report")
    _bool_flag(g, "--show-time-cost")

    g = p.add_argument_group("simulator (eagletui only)")
    g.add_argument(
        "--sim-time-scale",
        type=float,
        default=DEFAULT_TIME_SCALE,
        help="startup speed: 1.0 = the ~10 min of an 8-GPU 1T-class launch (default %(default)s ≈ 20 s)",
    )
    g.add_argument("--sim-seed", type=int, default=0, help="seed of all randomness (default 0)")
    g.add_argument(
        "--sim-draft-quality",
        type=float,
        default=None,
        help="drafter per-token acceptance probability 0..1 (default from the draft path: "
        "'bad'/'poor'/'weak' → 0.3425 ≈ accept 1.5, else 0.8527 ≈ accept 3.2)",
    )
    g.add_argument("--sim-speed", type=float, default=1.0, help="multiplier on token speed (default 1)")
    g.add_argument("--sim-shards", type=int, default=None, help="target checkpoint shard count")
    g.add_argument("--sim-params-b", type=float, default=None, help="model size in billions of params")
    g.add_argument("--sim-version", default=DEFAULT_VERSION, help="reported sglang version")
    return p


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if args.sim_time_scale <= 0:
        args.sim_time_scale = DEFAULT_TIME_SCALE
    return args


def main(argv: Sequence[str] | None = None) -> int:
    sys.stderr.write(LAUNCH_WARNING)
    sys.stderr.flush()
    args = parse_args(argv)
    from eagletui.sim.server import run_main

    return run_main(args)
