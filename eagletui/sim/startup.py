"""The SGLang 0.5.23 startup log sequence for a tp=N (EAGLE3) launch, and failure injection.

Durations are virtual seconds at ``--sim-time-scale 1.0`` (≈ 10 min for an 8-GPU 1T-class launch) and are
multiplied by the time scale before sleeping. Values printed in the log (``elapsed=``, tqdm times) are the
real, measured ones so they agree with the timestamps.

What the launch is (sizes, memory, failure to inject) is resolved beforehand into a
:class:`~eagletui.sim.plan.Plan`; this module plays it.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

from eagletui.sim import multinode
from eagletui.sim.adaptive import AdaptiveSteps
from eagletui.sim.crashes import (
    scheduler_exception,
    sigquit_from_child,
    tb_adaptive_buffer,
    tb_nccl,
    tb_not_enough_memory,
    tb_oom_capture,
    tb_oom_load,
    tb_weights_fill,
)
from eagletui.sim.logfmt import ERROR, INFO, WARNING, SimLog, shard_frame, tqdm_frame
from eagletui.sim.plan import GRAPH_PHASES, Plan
from eagletui.sim.version import version_tuple


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
        for m in p.resolution_msgs:  # ServerArgs' resolution: warnings (logger.warning in the wheel)
            log.line(m, level=WARNING if "disabled" in m else INFO)
        log.line(f"server_args={p.server_args!r}")
        await self.sleep(6)
        await self.init_parallel()
        await self.load_weights()
        await self.allocate_kv()
        await self.capture_graphs()
        if not p.head:
            # the scheduler summary and the engine's startup timings are node 0's (rank 0, tokenizer)
            p.startup_time = time.monotonic() - self.t0
            return
        await self.engine_summary()
        p.startup_time = time.monotonic() - self.t0

    async def init_parallel(self) -> None:
        """``Init parallel begin/ends`` on every rank (NCCL's own lines with ``NCCL_DEBUG=INFO``), the
        rendezvous of a multi-node launch, and the injected NCCL failure."""
        p, log = self.p, self.log
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

    async def load_weights(self) -> None:
        """The target's weights, then the draft's, from what each GPU has free (less what another server
        still holds there)."""
        p = self.p
        # --- target + draft weights -----------------------------------------------------------------
        self.avail = [p.gpu_total_gb - 1.3 - 0.05 * self.rng.random() for _ in range(p.tp)]
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

    async def allocate_kv(self) -> None:
        """The target's KV pool (the draft's after it), or not enough memory left for one."""
        p, log = self.p, self.log
        first = p.local_rank(0)  # rank 0 on the head node; this node's first rank elsewhere
        # --- KV pools ----------------------------------------------------------------------------------
        t = time.monotonic()
        await self.sleep(3)
        weights = p.weight_gb + p.draft_gb
        pre = self.avail[first] + weights  # free before the weights loaded (report_memory's avail is after)
        if version_tuple(p.args.sim_version) >= (0, 5, 17) and weights > p.mem_fraction * pre:
            self.fail(first, tb_weights_fill(p.mem_fraction, weights / pre))
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

    async def capture_graphs(self) -> None:
        """Every CUDA graph phase that runs; one that does not reads 0.00 in the startup timings."""
        p = self.p
        first = p.local_rank(0)  # rank 0 on the head node; this node's first rank elsewhere
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
        if p.spec and p.topk == 1 and getattr(p.args, "speculative_adaptive", False):
            await self.capture_adaptive_tiers(graphs=p.decode_graph)

    async def capture_adaptive_tiers(self, graphs: bool) -> None:
        """``EAGLEWorkerV2`` with ``--speculative-adaptive`` (0.5.23 L1349, L1387-1414): the controller is
        made after the draft worker (``AdaptiveSpeculativeParams initialized``), then, after the launch's
        own graphs, every other candidate step gets its draft graphs, a target-verify runner and a
        workspace of its own, over the captured sizes whose slot lists that step
        (``cuda_graph_bs_for_step``; none without graphs: a workspace only): the draft capture lines, the verify runner's
        bar (it prints no begin/end lines) and ``Built adaptive runtime state steps=N: elapsed=…s, mem=…GB``."""
        p, log = self.p, self.log
        tiers = AdaptiveSteps(
            p.steps,
            getattr(p.args, "speculative_adaptive_config", None),
            p.capture_bs,
            p.args.sim_version,
        )
        first = p.local_rank(0)
        if p.head:
            slot = tiers.slots[tiers.keys[0]]
            log.line(
                f"AdaptiveSpeculativeParams initialized: steps={slot.steps}, candidate_steps={slot.candidates}",
                rank=0,
            )
        for step in tiers.candidates():
            if step == p.steps:
                continue
            bs = tiers.graph_bs_for_step(step) if graphs else []
            # before 0.5.23 the shared logits buffer holds the launch's draft tokens per captured request
            # (model_runner.max_decode_logits_rows): a tier drafting more outgrows it (sglang#30549; the
            # real 0.5.17 on the H200 built steps 0 and 1, then died on steps 7 needing 64 rows of 32)
            have, need = max(p.capture_bs or [1]) * p.ndt, max(p.capture_bs or [1]) * (step + 1)
            if bs and need > have and version_tuple(p.args.sim_version) < (0, 5, 23):
                self.fail(first, tb_adaptive_buffer(have, need, 1024))
                return
            t, before = time.monotonic(), self.avail[first]
            if bs:  # none: the tier runs eagerly (``disable_cuda_graph``), a workspace only
                share = len(bs) / max(1, len(p.capture_bs))  # the draft graphs' share of the sizes
                if step > 1:
                    await self.capture_draft("decode", p.topk, 1.0, 0.2 * share, bs)
                await self.capture_draft("extend", step + 1, 1.0, 0.15 * share, bs)
                await self.capture_bar(bs, 3.0, self.avail[first])
                verify = 0.1 + 0.02 * max(bs) * (step + 1) / 4  # the launch's verify graphs, scaled
                p.graph_gb["target_verify"] = p.graph_gb.get("target_verify", 0.0) + verify
                p.timings["graph:target_verify"] = p.timings.get("graph:target_verify", 0.0) + time.monotonic() - t
                for r in range(p.tp):
                    self.avail[r] -= verify
            for r in range(p.tp):
                self.avail[r] -= 0.05  # the new attention workspace
            if p.head:
                log.line(
                    f"Built adaptive runtime state steps={step}: elapsed={time.monotonic() - t:.2f}s, "
                    f"mem={before - self.avail[first]:.2f}GB",
                    rank=0,
                )

    async def engine_summary(self) -> None:
        """Node 0's scheduler summary and the engine's ``Engine startup timings`` line."""
        p, log = self.p, self.log
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
            if version_tuple(p.args.sim_version) >= (0, 5, 23)
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

    async def capture_draft(
        self, name: str, ntok: int, per_bs_s: float, mem: float, bs: list[int] | None = None
    ) -> None:
        """One draft capture over ``bs`` (the launch's sizes by default); an adaptive tier's adds to the
        phase's time and memory as the server's accounting does."""
        p, log = self.p, self.log
        bs = bs or p.capture_bs
        t = time.monotonic()
        if not p.head:  # logged by rank 0 only: another node captures in silence
            await self.capture_bar(bs, per_bs_s, self.avail[p.local_rank(0)])
            for r in range(p.tp):
                self.avail[r] -= mem
            return
        log.line(
            f"Capture draft {name} CUDA graph begin. backend=full, num_tokens_per_req={ntok}, bs={bs}, "
            f"avail mem={self.avail[0]:.2f} GB",
            rank=0,
        )
        await self.capture_bar(bs, per_bs_s, self.avail[0])
        el = time.monotonic() - t
        p.timings[f"graph:draft_{name}"] = p.timings.get(f"graph:draft_{name}", 0.0) + el
        p.graph_gb[f"draft_{name}"] = p.graph_gb.get(f"draft_{name}", 0.0) + mem
        for r in range(p.tp):
            self.avail[r] -= mem
        log.line(
            f"Capture draft {name} CUDA graph end. elapsed={el:.2f} s, mem usage={mem:.2f} GB, "
            f"avail mem={self.avail[0]:.2f} GB.",
            rank=0,
        )
