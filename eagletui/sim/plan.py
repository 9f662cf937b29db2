"""The launch plan of the simulated SGLang server: everything resolved from the command line and the
environment before the launch starts (speculative parameters, memory budget, CUDA-graph sizes, the weight
loader, a multi-node launch's place) and the ``server_args=`` it logs.

Apart from :mod:`eagletui.sim.startup`, which plays the startup log from it, because the HTTP side
(:mod:`eagletui.sim.serverstate`, :mod:`eagletui.sim.serverinfo`, :mod:`eagletui.sim.metrics`) reads the
plan too and has no business with the startup sequence.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from eagletui.sim import multinode, perf
from eagletui.sim.crashes import GPU_TOTAL_GB, PKG

DEFAULT_BS = [1, 2, 4, 8, 12, *range(16, 257, 8)]
#: Prefill CUDA-graph token buckets (the real launch in shared/fixtures/sglang-0.5.17-h200 captured these 58
#: for chunked_prefill_size 8192), bounded by the chunked prefill size.
PREFILL_TOKENS = [
    *range(4, 33, 4),
    *range(48, 257, 16),
    *range(288, 513, 32),
    *range(576, 1025, 64),
    *range(1280, 4097, 256),
    *range(4608, 8193, 512),
]
#: ``Engine startup timings`` lists all six, in this order (sglang/srt/entrypoints/engine.py, the
#: ``cuda_graph={...}`` of ``build_engine_startup_time``); a phase that did not run reads 0.00.
GRAPH_PHASES = ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend")


@dataclass
class Plan:
    """Everything resolved from the command line + environment before the launch starts."""

    args: Any
    env: dict[str, str]
    cfg: perf.PerfConfig
    tp: int
    arch: str
    params_b: float
    spec: bool
    steps: int
    topk: int
    ndt: int
    shards: int
    max_running: int
    max_total_tokens: int
    context_len: int
    mem_fraction: float
    capture_bs: list[int]
    prefill_tokens: list[int]
    decode_graph: bool
    prefill_graph: bool
    prefill_backend: str
    ep: int
    served_model_name: str
    fail: str
    scale: float
    weight_gb: float
    draft_gb: float
    kv_gb: float
    draft_kv_gb: float
    capture_need_gb: float
    mla: bool
    resolution_msgs: list[str] = field(default_factory=list)
    server_args: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    graph_gb: dict[str, float] = field(default_factory=dict)
    startup_time: float = 0.0
    startup_available_gb: float = 0.0
    gpu_total_gb: float = GPU_TOTAL_GB  # per GPU, from the --sim-host preset
    #: the weight loader (model_loader/loader.py): threads unless asked for one, or checkpoint prefetch
    #: (0.5.16+) without an explicit thread setting
    multithread_load: bool = True
    load_threads: int = 8
    #: seconds (virtual) of the target's shard loading, and its tail after the last shard (share of it)
    load_s: float = 0.0
    load_tail: float = 0.06
    #: a multi-node launch (eagletui.sim.multinode): this node's place and its tensor-parallel ranks
    nnodes: int = 1
    node_rank: int = 0
    local: list[int] = field(default_factory=list)
    rendezvous: Any = None

    @property
    def head(self) -> bool:
        """Node 0: the tqdm bars, the tokenizer, the HTTP server."""
        return self.node_rank == 0

    def local_rank(self, rank: int) -> int:
        """A rank on this node standing in for ``rank`` (a failure injected "on TP3" happens here)."""
        ranks = self.local or list(range(self.tp))
        return rank if rank in ranks else ranks[rank % len(ranks)]


def resolve(args: Any, env: dict[str, str]) -> Plan:
    """The plan of a launch; ``args`` is completed in place with the defaults SGLang fills in (its
    ``server_args=`` line shows them)."""
    msgs: list[str] = []
    arch = perf.architecture(args.model_path)
    params_b = args.sim_params_b or perf.parse_params_b(args.model_path)
    spec, steps, topk, ndt = _speculative(args, arch, msgs)
    cfg = perf.PerfConfig.from_args(args, env)
    tp = max(1, args.tp_size)
    mem = _memory(args, cfg, arch, params_b, tp, spec)
    capture_bs, max_bs = _decode_batch_sizes(args, spec, mem.max_total)
    shards = args.sim_shards or _index_shards(args.model_path) or max(1, round(4.05 * params_b**0.4))
    served = args.served_model_name or args.model_path
    args.served_model_name = served
    context_len = args.context_length or 131072
    capture_need = 1.2 + 0.02 * max_bs * (ndt if spec else 1) / 4
    decode_graph, prefill_graph, prefill_backend, prefill_tokens = _graphs(args)
    fail = (env.get("EAGLETUI_SIM_FAIL") or "").strip().lower()
    nnodes, node_rank, rendezvous, scale = _multi_node(args, env, tp)
    if nnodes > 1 and str(node_rank) != (env.get("EAGLETUI_SIM_FAIL_NODE") or "0").strip():
        fail = ""  # the failure is injected on one node (EAGLETUI_SIM_FAIL_NODE, default 0) only
    plan = Plan(
        args=args,
        env=env,
        cfg=cfg,
        tp=tp,
        arch=arch,
        params_b=params_b,
        spec=spec,
        steps=steps or 0,
        topk=topk or 0,
        ndt=ndt or 0,
        shards=shards,
        max_running=args.max_running_requests,
        max_total_tokens=mem.max_total,
        context_len=context_len,
        mem_fraction=mem.mem_fraction,
        capture_bs=capture_bs,
        prefill_tokens=prefill_tokens,
        decode_graph=decode_graph,
        prefill_graph=prefill_graph,
        prefill_backend=prefill_backend,
        ep=max(1, int(args.ep_size or 1)),
        served_model_name=served,
        fail=fail,
        scale=scale,
        weight_gb=mem.weight_gb,
        draft_gb=mem.draft_gb,
        kv_gb=mem.kv_gb,
        draft_kv_gb=mem.draft_kv_gb,
        capture_need_gb=capture_need,
        mla=mem.mla,
        resolution_msgs=msgs,
        gpu_total_gb=cfg.preset.gpu_total_gb,
        nnodes=nnodes,
        node_rank=node_rank,
        local=multinode.local_ranks(tp, nnodes, node_rank),
        rendezvous=rendezvous,
    )
    _weight_loader(plan, args, params_b)
    plan.server_args = build_server_args(plan)
    return plan


def _speculative(args: Any, arch: str, msgs: list[str]) -> tuple[bool, Any, Any, Any]:
    """(speculative?, steps, topk, draft tokens), written back into ``args`` with SGLang's adjustments
    (and its messages about them in ``msgs``); the three are the flags as given when not speculative."""
    if args.speculative_algorithm:
        args.speculative_algorithm = str(args.speculative_algorithm).upper()
    spec = (args.speculative_algorithm or "") in perf.SPEC_ALGOS
    if spec and args.speculative_algorithm == "NEXTN":
        args.speculative_algorithm = "EAGLE"
    steps, topk, ndt = (
        args.speculative_num_steps,
        args.speculative_eagle_topk,
        args.speculative_num_draft_tokens,
    )
    if spec and getattr(args, "speculative_adaptive", False) and topk is not None and topk != 1:
        # ``_maybe_disable_adaptive`` (0.5.23 speculative_hook.py L1374): no error, one warning, static steps
        msgs.append(
            f"speculative_adaptive disabled: speculative_eagle_topk={topk} (only topk=1 is supported). "
            "Falling back to static speculative params."
        )
        args.speculative_adaptive = False
    if spec:
        if steps is None and topk is None and ndt is None:
            steps, topk, ndt = perf.auto_spec_params(arch)
        steps = steps if steps is not None else 3
        topk = topk if topk is not None else 1
        if topk == 1 and ndt != steps + 1:
            if ndt is not None:
                msgs.append(
                    "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
                    "speculative_eagle_topk == 1"
                )
            ndt = steps + 1
        ndt = ndt if ndt is not None else steps + 1
        args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens = (
            steps,
            topk,
            ndt,
        )
        if args.max_running_requests is None:
            msgs.append(
                "Max running requests is reset to 48 for speculative decoding. You can override this by "
                "explicitly setting --max-running-requests."
            )
            args.max_running_requests = 48
    return spec, steps, topk, ndt


class _Memory(NamedTuple):
    """Per-GPU memory of a launch: weights, KV pools (GB) and the KV cache's token capacity."""

    weight_gb: float
    draft_gb: float
    mla: bool
    mem_fraction: float
    max_total: int
    kv_gb: float
    draft_kv_gb: float


def _memory(args: Any, cfg: perf.PerfConfig, arch: str, params_b: float, tp: int, spec: bool) -> _Memory:
    """The weights' share of each GPU and the KV cache that fits beside them (``--mem-fraction-static``,
    default 0.88, written back into ``args``; ``--max-total-tokens`` caps it)."""
    bpp = 0.58 if params_b >= 500 else (1.0 if params_b >= 100 else 2.0)
    weight_gb = params_b * bpp / tp
    draft_gb = (0.9 + params_b / 2000.0) if spec else 0.0
    mla = arch == "DeepseekV3ForCausalLM"
    mem_fraction = args.mem_fraction_static if args.mem_fraction_static is not None else 0.88
    args.mem_fraction_static = mem_fraction
    kv_budget = cfg.preset.gpu_total_gb * mem_fraction - weight_gb - draft_gb - 0.75
    per_tok_target = 576 * 61 * 2 if mla else 4.7e3 * params_b / tp
    per_tok_draft = (2 * 8 * 128 * 2 / max(1, min(tp, 8))) if spec else 0.0
    max_total = max(0, int(kv_budget * 1e9 / (per_tok_target + per_tok_draft)))
    if args.max_total_tokens:
        max_total = min(max_total, args.max_total_tokens)
    kv_gb = max_total * per_tok_target / 1e9
    draft_kv_gb = max_total * per_tok_draft / 1e9
    return _Memory(weight_gb, draft_gb, mla, mem_fraction, max_total, kv_gb, draft_kv_gb)


def _decode_batch_sizes(args: Any, spec: bool, max_total: int) -> tuple[list[int], int]:
    """(the decode CUDA-graph batch sizes, the largest allowed), with ``--max-running-requests`` and
    ``--cuda-graph-max-bs-decode`` defaulted in ``args``."""
    if args.max_running_requests is None:
        args.max_running_requests = max(1, min(1024, max_total // 256 if max_total else 1))
    max_bs = args.cuda_graph_max_bs_decode or (args.max_running_requests if spec else 256)
    args.cuda_graph_max_bs_decode = max_bs
    if args.cuda_graph_bs_decode:
        capture_bs = sorted(set(args.cuda_graph_bs_decode))
    else:
        capture_bs = [b for b in DEFAULT_BS if b <= max_bs] or [1]
        if capture_bs[-1] < max_bs and max_bs <= 256:
            capture_bs.append(max_bs)
    return capture_bs, max_bs


def _graphs(args: Any) -> tuple[bool, bool, str, list[int]]:
    """(decode graphs?, prefill graphs?, the prefill backend, the prefill token buckets)."""
    # 0.5.23: prefill graphs are on by default on CUDA (backend ``breakable``); ``--disable-cuda-graph``
    # (deprecated) turns both phases off, ``--cuda-graph-backend-{decode,prefill}=disabled`` one of them.
    decode_graph = not args.disable_cuda_graph and args.cuda_graph_backend_decode != "disabled"
    prefill_backend = args.cuda_graph_backend_prefill or "breakable"
    prefill_graph = not args.disable_cuda_graph and prefill_backend != "disabled"
    chunk = args.chunked_prefill_size or 8192
    prefill_tokens = [n for n in PREFILL_TOKENS if n <= max(chunk, 4)]
    if args.cuda_graph_bs_prefill:
        prefill_tokens = sorted(set(args.cuda_graph_bs_prefill))
    return decode_graph, prefill_graph, prefill_backend, prefill_tokens


def _weight_loader(plan: Plan, args: Any, params_b: float) -> None:
    """The weight loader's threads (``--model-loader-extra-config``) and the load's virtual duration."""
    extra = _extra_config(getattr(args, "model_loader_extra_config", None))
    explicit = {"enable_multithread_load", "num_threads"} & set(extra)
    mt = extra.get("enable_multithread_load", True) is not False
    if getattr(args, "weight_loader_prefetch_checkpoints", False) and not explicit:
        mt = False
    threads = extra.get("num_threads", 8)
    threads = threads if isinstance(threads, int) and 0 < threads <= 256 else 8
    plan.multithread_load, plan.load_threads = mt, threads
    size = (params_b / 1000.0) ** 0.9
    base = float(args.sim_load_s) if getattr(args, "sim_load_s", None) else 20 + 400 * size
    # one thread reads and maps the shards in turn (3× slower here); more threads help with diminishing
    # returns (the storage's own rate bounds them)
    plan.load_s = base * (3.0 if not mt else max(0.5, (8.0 / threads) ** 0.5))


def _index_shards(model_path: str | None) -> int | None:
    """The shard count of a local checkpoint's safetensors index (a test's fake checkpoint), else None."""
    if not model_path or not os.path.isdir(model_path):
        return None
    idx = os.path.join(model_path, "model.safetensors.index.json")
    try:
        if os.path.getsize(idx) > (16 << 20):
            return None
        with open(idx) as f:
            wm = json.load(f).get("weight_map") or {}
    except (OSError, ValueError, AttributeError):
        return None
    files = {v for v in wm.values() if isinstance(v, str)} if isinstance(wm, dict) else set()
    return len(files) or None


def _extra_config(v: Any) -> dict[str, Any]:
    """``--model-loader-extra-config`` (a JSON object as text); {} when absent or not an object."""
    if isinstance(v, dict):
        return v
    try:
        val = json.loads(v) if isinstance(v, str) and v.strip() else {}
    except ValueError:
        return {}
    return val if isinstance(val, dict) else {}


def _multi_node(args: Any, env: dict[str, str], tp: int) -> tuple[int, int, Any, float]:
    """(nnodes, node rank, rendezvous or None, time scale) from ``--nnodes/--node-rank/--dist-init-addr``.
    A bad combination ends the process as SGLang's argument checks do (an AssertionError, exit 1).
    ``EAGLETUI_SIM_NODE_SLOW=RANK:FACTOR`` makes one node that much slower (a straggler)."""
    nnodes = int(getattr(args, "nnodes", 1) or 1)
    node_rank = int(getattr(args, "node_rank", 0) or 0)
    scale = float(args.sim_time_scale)
    if nnodes <= 1:
        return 1, 0, None, scale
    problem = ""
    if tp % nnodes:
        problem = "tp_size must be divisible by number of nodes"
    elif not 0 <= node_rank < nnodes:
        problem = f"node_rank {node_rank} must be in [0, nnodes={nnodes})"
    try:
        host, port = multinode.parse_addr(getattr(args, "dist_init_addr", None))
    except multinode.RendezvousError as exc:
        problem = problem or str(exc)
    if problem:
        import sys

        sys.stderr.write(
            "Traceback (most recent call last):\n"
            f'  File "{PKG}/sglang/srt/arg_groups/validation_hook.py", line 179, in check_server_args\n'
            f"AssertionError: {problem}\n"
        )
        sys.stderr.flush()
        raise SystemExit(1)
    slow = (env.get("EAGLETUI_SIM_NODE_SLOW") or "").partition(":")
    if slow[1] and slow[0].strip() == str(node_rank):
        with contextlib.suppress(ValueError):
            scale *= max(1.0, float(slow[2]))
    timeout = float(getattr(args, "dist_timeout", None) or 600) * max(scale, 0.05)
    return nnodes, node_rank, multinode.Rendezvous(host, port, nnodes, node_rank, max(30.0, timeout)), scale


def build_server_args(plan: Plan) -> dict[str, Any]:
    a = plan.args
    d: dict[str, Any] = {}
    for k, v in vars(a).items():
        if not k.startswith("sim_"):
            d[k] = v
    d.update(
        tokenizer_path=a.tokenizer_path or a.model_path,
        tokenizer_mode="auto",
        skip_tokenizer_init=False,
        context_length=a.context_length,
        device="cuda",
        random_seed=a.random_seed if a.random_seed is not None else 1234 + a.sim_seed,
        chunked_prefill_size=a.chunked_prefill_size or 8192,
        stream_interval=1,
        constrained_json_whitespace_pattern=None,
        cuda_graph_backend_decode="full" if plan.decode_graph else "disabled",
        cuda_graph_backend_prefill=plan.prefill_backend if plan.prefill_graph else "disabled",
        enable_cache_report=a.enable_cache_report,
        kv_events_config=None,
    )
    return d
