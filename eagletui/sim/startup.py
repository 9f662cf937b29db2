"""The SGLang 0.5.23 startup log sequence for a tp=N (EAGLE3) launch, and failure injection.

Durations are virtual seconds at ``--sim-time-scale 1.0`` (≈ 10 min for an 8-GPU 1T-class launch) and are
multiplied by the time scale before sleeping. Values printed in the log (``elapsed=``, tqdm times) are the
real, measured ones so they agree with the timestamps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

from eagletui.sim import multinode, perf
from eagletui.sim.crashes import (
    GPU_TOTAL_GB,
    PKG,
    scheduler_exception,
    sigquit_from_child,
    tb_nccl,
    tb_not_enough_memory,
    tb_oom_capture,
    tb_oom_load,
)
from eagletui.sim.logfmt import ERROR, WARNING, SimLog, shard_frame, tqdm_frame

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
    msgs: list[str] = []
    arch = perf.architecture(args.model_path)
    params_b = args.sim_params_b or perf.parse_params_b(args.model_path)
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
    cfg = perf.PerfConfig.from_args(args, env)
    tp = max(1, args.tp_size)
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
    shards = args.sim_shards or _index_shards(args.model_path) or max(1, round(4.05 * params_b**0.4))
    served = args.served_model_name or args.model_path
    args.served_model_name = served
    context_len = args.context_length or 131072
    capture_need = 1.2 + 0.02 * max_bs * (ndt if spec else 1) / 4
    # 0.5.23: prefill graphs are on by default on CUDA (backend ``breakable``); ``--disable-cuda-graph``
    # (deprecated) turns both phases off, ``--cuda-graph-backend-{decode,prefill}=disabled`` one of them.
    decode_graph = not args.disable_cuda_graph and args.cuda_graph_backend_decode != "disabled"
    prefill_backend = args.cuda_graph_backend_prefill or "breakable"
    prefill_graph = not args.disable_cuda_graph and prefill_backend != "disabled"
    chunk = args.chunked_prefill_size or 8192
    prefill_tokens = [n for n in PREFILL_TOKENS if n <= max(chunk, 4)]
    if args.cuda_graph_bs_prefill:
        prefill_tokens = sorted(set(args.cuda_graph_bs_prefill))
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
        max_total_tokens=max_total,
        context_len=context_len,
        mem_fraction=mem_fraction,
        capture_bs=capture_bs,
        prefill_tokens=prefill_tokens,
        decode_graph=decode_graph,
        prefill_graph=prefill_graph,
        prefill_backend=prefill_backend,
        ep=max(1, int(args.ep_size or 1)),
        served_model_name=served,
        fail=fail,
        scale=scale,
        weight_gb=weight_gb,
        draft_gb=draft_gb,
        kv_gb=kv_gb,
        draft_kv_gb=draft_kv_gb,
        capture_need_gb=capture_need,
        mla=mla,
        resolution_msgs=msgs,
        gpu_total_gb=cfg.preset.gpu_total_gb,
        nnodes=nnodes,
        node_rank=node_rank,
        local=multinode.local_ranks(tp, nnodes, node_rank),
        rendezvous=rendezvous,
    )
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
    plan.server_args = build_server_args(plan)
    return plan


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


def nccl_info_lines(p: Plan, pid: int) -> list[str]:
    """What ``NCCL_DEBUG=INFO`` prints at communicator init, in NCCL 2.28's shapes (as in
    shared/fixtures/gpu/nccl-debug-info-tp2.log), following the host preset and the NCCL env: PCIe hosts
    talk over SHM (P2P where ``NCCL_P2P_LEVEL=SYS``), NVLink hosts over P2P/CUMEM with NVLS channels
    when ``--enable-nccl-nvls``; ``NCCL_MIN_NCHANNELS`` raises the channel count."""
    env = p.env
    nvlink = "nvlink" in p.cfg.host
    via = "P2P/CUMEM" if nvlink or env.get("NCCL_P2P_LEVEL") == "SYS" else "SHM/direct/direct"
    if env.get("NCCL_P2P_DISABLE") == "1":
        via = "SHM/direct/direct"
    try:
        min_ch = int(env.get("NCCL_MIN_NCHANNELS") or 0)
    except ValueError:
        min_ch = 0
    coll = max(16 if nvlink else 4, min_ch)
    nvls = 16 if nvlink and getattr(p.args, "enable_nccl_nvls", False) else 0
    out: list[str] = []
    for r in range(p.tp):
        head = f"simhost:{pid + r}:{pid + r} [{r}] NCCL INFO "
        out.append(head + "NCCL version 2.28.9+cuda13.0")
        for name in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE"):
            if env.get(name):
                out.append(head + f"{name} set by environment to {env[name]}.")
        out.append(head + "Using network Socket")
        peer = (r + 1) % p.tp
        for ch in range(min(coll, 2)):
            out.append(head + f"Channel {ch:02d}/0 : {r}[{r}] -> {peer}[{peer}] via {via}")
        out.append(
            head + f"{coll} coll channels, {coll} collnet channels, {nvls} nvls channels, "
            f"32 p2p channels, 32 p2p channels per peer"
        )
        out.append(
            head + f"ncclCommInitRankConfig comm 0x{0x2C4245A0 + r:x} rank {r} nranks {p.tp} cudaDev {r} "
            f"nvmlDev {r} busId {0x60 + 0x10 * r:x} commId 0xdde4c43f6860c5a3 - Init COMPLETE"
        )
        total = (0.9 if nvlink else 1.6) + 0.01 * r
        out.append(head + f"Init timings - ncclCommInitRankConfig: rank {r} nranks {p.tp} total {total:.2f}")
    return out


def _version_tuple(v: str) -> tuple[int, ...]:
    out = []
    for part in str(v).split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


class Startup:
    def __init__(self, plan: Plan, log: SimLog, lease: Any = None) -> None:
        self.p = plan
        self.log = log
        self.rng = random.Random(plan.args.sim_seed * 31 + 5)
        self.t0 = time.monotonic()
        self.avail: list[float] = []
        #: simulated GPU memory (sim/gpumem.py): what others still hold is not free for this launch
        self.lease = lease
        self.others: dict[int, float] = {}

    def gpu_of(self) -> dict[int, int]:
        """Rank → the index of its GPU on this node (a multi-node launch runs some ranks here)."""
        return {r: i for i, r in enumerate(self.p.local or range(self.p.tp))}

    def report_memory(self) -> None:
        """Tell the lease what each rank holds now (what nvidia-smi would show for its scheduler)."""
        if self.lease is None:
            return
        for r, i in self.gpu_of().items():
            if r < len(self.avail):
                self.lease.gb[i] = max(0.0, self.p.gpu_total_gb - self.others.get(r, 0.0) - self.avail[r])
        self.lease.save()

    async def sleep(self, virtual_s: float) -> None:
        await asyncio.sleep(max(0.0, virtual_s * self.p.scale))

    def ranks(self) -> list[int]:
        """This node's ranks in a random order (eight processes log the same milestone at once)."""
        r = list(self.p.local or range(self.p.tp))
        self.rng.shuffle(r)
        return r

    def all_ranks(self, fn) -> None:
        for r in self.ranks():
            self.log.line(fn(r), rank=r)

    def fail(self, rank: int, tb: str) -> None:
        self.log.bar_open = False
        scheduler_exception(self.log, rank, tb)
        sigquit_from_child(self.log)

    async def run(self) -> None:
        p, log = self.p, self.log
        for m in p.resolution_msgs:
            log.line(m)
        log.line(f"server_args={p.server_args!r}")
        await self.sleep(6)
        # --- init parallel ------------------------------------------------------------------------
        t = time.monotonic()
        self.all_ranks(lambda r: "Init parallel begin.")
        if (p.env.get("NCCL_DEBUG") or "").upper() in ("INFO", "TRACE"):
            for line in nccl_info_lines(p, os.getpid()):
                log.raw(line + "\n")
        if p.tp > 1:
            self.all_ranks(lambda r: "sglang is using nccl==2.28.9")
            if "nvlink" not in p.cfg.host and p.tp > 2 and not getattr(p.args, "disable_custom_all_reduce", False):
                # custom_all_reduce_utils.can_use_custom_all_reduce_with_nvlink, every rank, at WARNING
                for r in self.ranks():
                    log.line(
                        "CustomAllreduce is disabled because it's not supported on more than two PCIe-only "
                        "GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
                        rank=r,
                        level=WARNING,
                    )
        await self.sleep(8)
        if p.rendezvous is not None:
            # torch.distributed at --dist-init-addr: nobody's init ends before every node has joined
            try:
                await p.rendezvous.join()
            except multinode.RendezvousError as exc:
                r = self.p.local_rank(0)
                self.fail(r, f"Traceback (most recent call last):\nRuntimeError: {exc}")
        if p.fail == "nccl":
            r = p.local_rank(min(5, p.tp - 1))
            self.fail(r, tb_nccl(r))
        await self.sleep(7)
        self.all_ranks(
            lambda r: f"Init parallel ends. elapsed={time.monotonic() - t + self.rng.random() * 0.05:.2f} s"
        )
        # --- target + draft weights -----------------------------------------------------------------
        self.avail = [p.gpu_total_gb - 1.3 - 0.05 * self.rng.random() for _ in range(p.tp)]
        first = p.local_rank(0)  # rank 0 on the head node; this node's first rank elsewhere
        if self.lease is not None:
            # torch.cuda.mem_get_info counts every process's memory: a server that has not released
            # yet leaves this one less (and, when too little is left, an OOM while loading)
            held = self.lease.held_by_others()
            self.others = {r: held.get(i, 0.0) for r, i in self.gpu_of().items()}
            self.avail = [a - self.others.get(r, 0.0) for r, a in enumerate(self.avail)]
            self.report_memory()
        load_s = p.load_s
        t = time.monotonic()
        await self.load_model(
            "target",
            p.shards,
            load_s,
            p.arch,
            p.weight_gb,
            quant="quant=fp8, fmt=e4m3, " if p.params_b >= 100 else "",
        )
        p.timings["load_weight"] = time.monotonic() - t
        self.report_memory()
        if p.spec:
            t = time.monotonic()
            await self.load_model("draft", 1, 4.0, "LlamaForCausalLMEagle3", p.draft_gb, quant="")
            p.timings["load_weight"] += time.monotonic() - t
        # --- KV pools ----------------------------------------------------------------------------------
        t = time.monotonic()
        await self.sleep(3)
        if p.max_total_tokens < 1024:
            self.fail(first, tb_not_enough_memory(p.mem_fraction))
        kv_line = (
            f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {p.max_total_tokens}, KV size: {p.kv_gb:.2f} GB"
            if p.mla
            else f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {p.max_total_tokens}, "
            f"K size: {p.kv_gb / 2:.2f} GB, V size: {p.kv_gb / 2:.2f} GB"
        )
        for r in self.ranks():
            self.avail[r] -= p.kv_gb
            log.line(kv_line, rank=r)
            log.line(f"Memory pool end. avail mem={self.avail[r]:.2f} GB", rank=r)
        if p.spec:
            await self.sleep(1)
            for r in self.ranks():
                self.avail[r] -= p.draft_kv_gb
                log.line(
                    f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {p.max_total_tokens}, "
                    f"K size: {p.draft_kv_gb / 2:.2f} GB, V size: {p.draft_kv_gb / 2:.2f} GB",
                    rank=r,
                )
                log.line(f"Memory pool end. avail mem={self.avail[r]:.2f} GB", rank=r)
        await self.sleep(2)
        self.report_memory()
        p.timings["kv_cache_allocation"] = time.monotonic() - t
        # --- CUDA graphs ---------------------------------------------------------------------------------
        # Order of a 0.5.23 EAGLE launch (and of the real 0.5.17 one in shared/fixtures): target prefill,
        # target verify, draft prefill, draft decode, draft extend.
        for phase in GRAPH_PHASES:
            p.timings[f"graph:{phase}"] = 0.0
        natural_oom = self.avail[first] < p.capture_need_gb
        if p.prefill_graph:
            await self.capture_prefill("target", 0.35, 0.25)
        if p.decode_graph:
            if p.spec:
                await self.capture_target("verify", p.ndt, 8.0, natural_oom)
            else:
                await self.capture_target("decode", 1, 2.5, natural_oom)
        if p.spec and p.prefill_graph:
            await self.capture_prefill("draft", 0.02, 0.16)
        if p.spec and p.decode_graph:
            if p.steps > 1:
                await self.capture_draft("decode", p.topk, 2.0, 0.4)
            await self.capture_draft("extend", p.ndt, 2.0, 0.3)
        if not p.head:
            # the scheduler summary and the engine's startup timings are node 0's (rank 0, tokenizer)
            p.startup_time = time.monotonic() - self.t0
            return
        log.line(
            f"max_total_num_tokens={p.max_total_tokens}, chunked_prefill_size={p.server_args['chunked_prefill_size']}, "
            f"max_prefill_tokens={p.args.max_prefill_tokens}, max_running_requests={p.max_running}, "
            f"context_len={p.context_len}, available_gpu_mem={self.avail[0]:.2f} GB",
            rank=0,
        )
        await self.sleep(2)
        scheduler_e2e = time.monotonic() - self.t0
        p.timings["scheduler_e2e"] = scheduler_e2e
        p.timings["tokenizer_e2e"] = scheduler_e2e + 0.42 + self.rng.random() * 0.2
        p.startup_available_gb = self.avail[0]
        self.report_memory()
        graphs = ", ".join(f"{k}={p.timings[f'graph:{k}']:.2f}" for k in GRAPH_PHASES)
        log.line(
            f"Engine startup timings (s): load_weight={p.timings['load_weight']:.2f}, "
            f"kv_cache_allocation={p.timings['kv_cache_allocation']:.2f}, scheduler_e2e={scheduler_e2e:.2f}, "
            f"cuda_graph={{{graphs}}}, tokenizer_e2e={p.timings['tokenizer_e2e']:.2f}"
        )
        p.startup_time = time.monotonic() - self.t0

    async def load_model(
        self, kind: str, shards: int, total_s: float, type_name: str, gb: float, quant: str
    ) -> None:
        p, log = self.p, self.log
        for r in self.ranks():
            log.line(
                f"Memory baseline taken. mem usage={self.p.gpu_total_gb - self.avail[r] - 0.6 + 0.05 * self.rng.random():.2f} GB",
                rank=r,
            )
        for r in self.ranks():
            log.line(f"Load weight begin. avail mem={self.avail[r]:.2f} GB", rank=r)
        t_start = time.monotonic()
        # Timeline (virtual s): rank-0 bar frames at shard boundaries, other ranks finish around the end.
        per = [total_s / shards * (0.85 + 0.3 * self.rng.random()) for _ in range(shards)]
        scale_fix = total_s / sum(per)
        marks = [0.0]
        for d in per:
            marks.append(marks[-1] + d * scale_fix)
        # the shard bar is global rank 0's: only node 0 prints it
        events: list[tuple[float, int, int]] = [(m, 0, i) for i, m in enumerate(marks)] if p.head else []
        tail = 1.0 + p.load_tail
        for r in p.local or range(p.tp):
            if r != 0:
                events.append((total_s * tail * (0.97 + 0.05 * self.rng.random()), 1, r))
        fail_at = max(1, int(shards * 0.4)) if p.fail == "oom-load" and kind == "target" else None
        if fail_at is not None and not p.head:
            events.append((total_s * 0.4, 2, 0))  # another node's rank runs out of memory mid-load
        events.sort()
        desc = "Multi-thread loading shards" if p.multithread_load else "Loading safetensors checkpoint shards"
        oom_rank = p.local_rank(3 % p.tp)
        oom_free_mib, oom_process_gib = 412.0, None
        short = [r for r in (p.local or range(p.tp)) if self.avail[r] < gb + 0.5]
        if kind == "target" and short and fail_at is None:
            # another server's memory is still held: this one runs out part-way through the shards
            oom_rank = min(short, key=lambda r: self.avail[r])
            fail_at = max(1, min(shards - 1, int(shards * max(0.0, self.avail[oom_rank]) / max(gb, 1e-9))))
            # what torch would say at that shard: the GPU nearly full, most of it another process's
            loaded = gb * fail_at / shards
            oom_free_mib = max(64.0, (self.avail[oom_rank] - loaded) * 1024)
            oom_process_gib = p.gpu_total_gb - self.others.get(oom_rank, 0.0) - self.avail[oom_rank] + loaded
        last_frame = -1.0
        done_ranks: list[int] = []
        now_v = 0.0
        for at, typ, idx in events:
            await self.sleep(at - now_v)
            now_v = at
            el = time.monotonic() - t_start
            if typ == 2:
                r = p.local_rank(3)
                self.fail(r, tb_oom_load(r, p.gpu_total_gb))
            if typ == 0:
                if fail_at is not None and idx == fail_at:
                    self.fail(oom_rank, tb_oom_load(oom_rank, p.gpu_total_gb, oom_free_mib, oom_process_gib))
                if idx in (0, shards) or time.monotonic() - last_frame >= 0.1:
                    log.frame(shard_frame(desc, idx, shards, el))
                    last_frame = time.monotonic()
                if idx == shards:
                    log.frame(shard_frame(desc, idx, shards, el))
                    log.close_bar()
                    # after the last shard: post-processing and host-to-device copies (the load's tail)
                    await self.sleep(total_s * p.load_tail)
                    now_v += total_s * p.load_tail
                    self.end_load(0, time.monotonic() - t_start, type_name, gb, quant)
                    done_ranks.append(0)
            else:
                self.end_load(idx, el, type_name, gb, quant)
                done_ranks.append(idx)

    def end_load(self, r: int, el: float, type_name: str, gb: float, quant: str) -> None:
        self.avail[r] -= gb
        self.log.line(
            f"Load weight end. elapsed={el:.2f} s, type={type_name}, {quant}avail mem={self.avail[r]:.2f} GB, "
            f"mem usage={gb:.2f} GB.",
            rank=r,
        )

    async def capture_bar(
        self,
        bs_list: list[int],
        per_bs_s: float,
        rank0_avail: float,
        stop_at: int | None = None,
        hang: bool = False,
        label: str = "Capturing batches (bs={n} avail_mem={avail:.2f} GB)",
        step_gb: float | None = None,
    ) -> None:
        log = self.log
        t = time.monotonic()
        n = len(bs_list)
        log.frame(tqdm_frame(None, 0, n, 0.0))
        avail = rank0_avail
        desc = ""
        for i, bs in enumerate(reversed(bs_list)):
            desc = label.format(n=bs, avail=avail)
            log.frame(tqdm_frame(desc, i, n, time.monotonic() - t))
            if stop_at is not None and i == stop_at:
                if hang:
                    await self.hang()
                return
            await self.sleep(per_bs_s * (0.8 + 0.4 * self.rng.random()))
            # batch sizes: a little per graph; prefill shapes (up to 8192 tokens): the capture's share
            avail -= step_gb if step_gb is not None else 0.01 + 0.002 * bs
        log.frame(tqdm_frame(desc, n, n, time.monotonic() - t))
        log.frame(tqdm_frame(desc, n, n, time.monotonic() - t))
        log.close_bar()

    async def hang(self) -> None:
        """Stop logging; the scheduler watchdog fires after ``--watchdog-timeout`` (scaled)."""
        timeout = float(self.p.args.watchdog_timeout)
        await asyncio.sleep(timeout * self.p.scale)
        self.log.bar_open = False
        self.log.line(
            f"Scheduler watchdog timeout (self.watchdog_timeout={timeout:g}, self.soft=False)",
            rank=self.p.local_rank(0),
            level=ERROR,
        )
        sigquit_from_child(self.log)

    async def capture_target(self, name: str, ntok: int, per_bs_s: float, natural_oom: bool) -> None:
        p, log = self.p, self.log
        t = time.monotonic()
        for r in self.ranks():
            log.line(
                f"Capture target {name} CUDA graph begin. backend=full, num_tokens_per_req={ntok}, "
                f"avail mem={self.avail[r]:.2f} GB",
                rank=r,
            )
        stop_at = None
        oom = p.fail == "oom-capture" or natural_oom
        if oom or p.fail == "hang-capture":
            stop_at = min(2, len(p.capture_bs) - 1) if p.fail != "hang-capture" else len(p.capture_bs) // 2
        size = max(0.5, (p.params_b / 1000.0) ** 0.2)
        await self.capture_bar(
            p.capture_bs, per_bs_s * size, self.avail[0], stop_at, p.fail == "hang-capture"
        )
        if oom:
            r = p.local_rank(0)
            self.fail(r, tb_oom_capture(r, p.gpu_total_gb))
        mem = p.capture_need_gb * (0.9 + 0.1 * self.rng.random())
        el = time.monotonic() - t
        p.timings["graph:decode" if name == "decode" else f"graph:target_{name}"] = el
        p.graph_gb["decode" if name == "decode" else f"target_{name}"] = mem
        for r in self.ranks():
            self.avail[r] -= mem
            log.line(
                f"Capture target {name} CUDA graph end. bs={p.capture_bs}, elapsed={el:.2f} s, "
                f"mem usage={mem:.2f} GB, avail mem={self.avail[r]:.2f} GB.",
                rank=r,
            )

    async def capture_prefill(self, role: str, per_shape_s: float, mem: float) -> None:
        """``Capture {role} prefill CUDA graph begin/end`` (sglang/srt/model_executor/model_runner_components/
        cuda_graph_setup.py:capture_prefill_graph, logged on every rank) around rank 0's tqdm bar, whose
        description is ``Capturing prefill shape (num_tokens=… avail_mem=… GB)`` in 0.5.23
        (runner/prefill_cuda_graph_runner.py:_capture_one_stream; 0.5.17 said ``Capturing num tokens``)."""
        p, log = self.p, self.log
        t = time.monotonic()
        for r in self.ranks():
            log.line(
                f"Capture {role} prefill CUDA graph begin. backend={p.prefill_backend}, "
                f"num_tokens={p.prefill_tokens}, avail mem={self.avail[r]:.2f} GB",
                rank=r,
            )
        label = (
            "Capturing prefill shape (num_tokens={n} avail_mem={avail:.2f} GB)"
            if _version_tuple(p.args.sim_version) >= (0, 5, 23)
            else "Capturing num tokens (num_tokens={n} avail_mem={avail:.2f} GB)"
        )
        await self.capture_bar(
            p.prefill_tokens,
            per_shape_s,
            self.avail[0],
            label=label,
            step_gb=mem / max(1, len(p.prefill_tokens)),
        )
        el = time.monotonic() - t
        key = "prefill" if role == "target" else "draft_prefill"
        p.timings[f"graph:{key}"] = el
        p.graph_gb[key] = mem
        for r in self.ranks():
            self.avail[r] -= mem
            log.line(
                f"Capture {role} prefill CUDA graph end. elapsed={el:.2f} s, mem usage={mem:.2f} GB, "
                f"avail mem={self.avail[r]:.2f} GB.",
                rank=r,
            )

    async def capture_draft(self, name: str, ntok: int, per_bs_s: float, mem: float) -> None:
        p, log = self.p, self.log
        t = time.monotonic()
        if not p.head:  # logged by rank 0 only: another node captures in silence
            await self.capture_bar(p.capture_bs, per_bs_s, self.avail[p.local_rank(0)])
            for r in range(p.tp):
                self.avail[r] -= mem
            return
        log.line(
            f"Capture draft {name} CUDA graph begin. backend=full, num_tokens_per_req={ntok}, bs={p.capture_bs}, "
            f"avail mem={self.avail[0]:.2f} GB",
            rank=0,
        )
        await self.capture_bar(p.capture_bs, per_bs_s, self.avail[0])
        el = time.monotonic() - t
        p.timings[f"graph:draft_{name}"] = el
        p.graph_gb[f"draft_{name}"] = mem
        for r in range(p.tp):
            self.avail[r] -= mem
        log.line(
            f"Capture draft {name} CUDA graph end. elapsed={el:.2f} s, mem usage={mem:.2f} GB, "
            f"avail mem={self.avail[0]:.2f} GB.",
            rank=0,
        )
