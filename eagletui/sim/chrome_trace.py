"""One rank's Chrome trace of the simulator's profiler, in torch's ``export_chrome_trace`` shape: the
kernel names, the recorded step (:class:`Step`) and the events one batch becomes.

Each recorded batch becomes, on every rank, SGLang 0.5.23's ranges (``scheduler.run_batch``; a speculative
decode batch as ``draft`` → ``step[VERIFY bs=N]`` → ``draft_extend``, a prefill as ``step[EXTEND bs=N toks=T]``
and its ``draft_extend``, a plain decode as ``step[DECODE bs=N]``; ``copy_result_to_cpu`` after each) with
per-layer kernels: GEMMs (``nvjet_sm90_…``), attention (triton's bare-named kernels as the real traces have
them: ``_fwd_kernel`` for extend and verify, ``_fwd_grouped_kernel_stage1`` + ``_fwd_kernel_stage2`` for
decode), MoE
(``fused_moe_kernel``), all-reduce (NCCL's ``ncclDevKernel_AllReduce_Sum_bf16_{ALGO}_{PROTO}``, the custom
``cross_device_reduce_1stage`` where NVLink allows it, or FlashInfer's fused kernel) and elementwise work,
each under a ``cpu_op`` that launched it — except under CUDA graphs (the default): there the decode
forwards are replayed by one ``cudaGraphLaunch`` each, their kernels carry only its correlation and no
launching op, and no ``step[…]`` range is written inside a replayed draft or draft extend, as in the real
0.5.17 H200 trace. Kernel times are the step's cost-model split
(:func:`eagletui.sim.perf.breakdown`) scaled to the step's real duration. Ranks differ slightly in compute;
a faster rank waits for the slowest inside its all-reduce, so the all-reduce time beyond the fastest rank's
is waiting, not transfer.

Apart from :mod:`eagletui.sim.profiler`, which keeps the ``/start_profile`` session (what is recorded,
when it stops, the log lines) and writes one file per rank from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eagletui.sim import perf
from eagletui.sim.perf import draft_units

LAYERS = 61  # the reference model's decoder layers (Kimi-K2/DeepSeek-V3)
GEMM = "nvjet_sm90_tst_128x16_64x11_4x1_v_bz_NNT"
GEMM_SMALL = "nvjet_sm90_tst_64x16_64x16_4x1_v_bz_NNT"
ATTENTION = "_fwd_kernel"
#: triton's attention kernels as the real traces name them: decode (two stages), extend and verify
DECODE_ATTENTION = ("_fwd_grouped_kernel_stage1", "_fwd_kernel_stage2")
EXTEND_ATTENTION = (ATTENTION,)
MOE = "fused_moe_kernel"
#: the draft's preparation before its replay (SGLang 0.5.17: assign_draft_cache_locs and the runner's
#: buffer copies)
PREPARE_DRAFT = "assign_draft_cache_locs"
COPY = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<long>, std::array<char*, 1ul>)"
)
NORM = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)
CUSTOM_AR = (
    "void sglang::cross_device_reduce_1stage<__nv_bfloat16, 8>(sglang::RankData*, sglang::RankSignals, "
    "sglang::Signal*, __nv_bfloat16*, int, int)"
)
FUSED_AR = (
    "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8>"
    "(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)"
)


def nccl_kernel(algo: str, proto: str) -> str:
    """NCCL's device kernel name for a bf16 sum all-reduce with the algorithm/protocol in force."""
    a = (algo or "ring").split(",")[0].split(":")[-1].strip().upper() or "RING"
    p = (proto or "LL").split(",")[0].split(":")[-1].strip().upper() or "LL"
    a = a if a in ("RING", "TREE", "NVLS", "NVLSTREE", "COLLNETDIRECT") else "RING"
    p = p if p in ("LL", "LL128", "SIMPLE") else "LL"
    return f"ncclDevKernel_AllReduce_Sum_bf16_{a}_{p}(ncclDevKernelArgsStorage<4096ul>)"


@dataclass
class Step:
    """One recorded forward pass: its stage, batch, start, real duration and cost-model parts."""

    stage: str
    bs: int
    tokens: int
    start_us: float
    dur_ms: float
    parts: dict[str, float]  # part name → noise-free ms (decode/prefill: one part "forward")


class RankTrace:
    """One rank's Chrome trace (torch.profiler's export_chrome_trace shape) being built: its events, the
    external ids handed out, and the CUDA graph being replayed (kernels then carry its correlation)."""

    def __init__(
        self, cfg: perf.PerfConfig, rank: int, tp: int, skew: list[float], gpu: bool, ar: str
    ) -> None:
        self.cfg = cfg
        self.rank = rank
        self.tp = tp
        self.gpu = gpu
        self.ar = ar
        self.pid_cpu, self.tid_cpu, self.pid_gpu, self.tid_gpu = 1000 + rank, 1000 + rank, rank, 7
        self.ev: list[dict[str, Any]] = self._metadata()
        self.ext = 0
        self.mine = 1.0 + skew[rank]
        self.slowest = 1.0 + max(skew)
        self.graph_corr = 0  # the correlation of the cudaGraphLaunch being replayed; 0: eager launches

    def _metadata(self) -> list[dict[str, Any]]:
        pid_cpu, pid_gpu, tid_gpu, rank = self.pid_cpu, self.pid_gpu, self.tid_gpu, self.rank
        return [
            {
                "name": "process_name",
                "ph": "M",
                "ts": 0,
                "pid": pid_cpu,
                "tid": 0,
                "args": {"name": "sglang::scheduler"},
            },
            {
                "name": "process_labels",
                "ph": "M",
                "ts": 0,
                "pid": pid_cpu,
                "tid": 0,
                "args": {"labels": "CPU"},
            },
            {
                "name": "process_name",
                "ph": "M",
                "ts": 0,
                "pid": pid_gpu,
                "tid": 0,
                "args": {"name": "sglang::scheduler"},
            },
            {
                "name": "process_labels",
                "ph": "M",
                "ts": 0,
                "pid": pid_gpu,
                "tid": 0,
                "args": {"labels": f"GPU {rank}"},
            },
            {
                "name": "thread_name",
                "ph": "M",
                "ts": 0,
                "pid": pid_gpu,
                "tid": tid_gpu,
                "args": {"name": "stream 7"},
            },
        ]

    def eid(self) -> int:
        self.ext += 1
        return self.ext

    def gpu_kernel(self, name: str, ts: float, dur: float, correlation: int, **extra: Any) -> None:
        args = {**extra, "device": self.rank, "stream": self.tid_gpu, "correlation": correlation, "queued": 0}
        self.ev.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": name,
                "pid": self.pid_gpu,
                "tid": self.tid_gpu,
                "ts": ts,
                "dur": round(dur, 3),
                "args": args,
            }
        )

    def kernel(self, name: str, op: str, ts: float, dur: float) -> None:
        ev, pid_cpu, tid_cpu = self.ev, self.pid_cpu, self.tid_cpu
        if self.graph_corr:
            # Replayed by a CUDA graph: no launching op, only the graph launch's correlation.
            if self.gpu:
                self.gpu_kernel(name, ts, dur, self.graph_corr)
            return
        e = self.eid()
        ev.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": op,
                "pid": pid_cpu,
                "tid": tid_cpu,
                "ts": ts - 4.0,
                "dur": 3.0,
                "args": {"External id": e, "Record function id": 0},
            }
        )
        if self.gpu:
            self.gpu_kernel(name, ts, dur, e, **{"External id": e})
            ev.append(
                {
                    "ph": "s",
                    "id": e,
                    "pid": pid_cpu,
                    "tid": tid_cpu,
                    "ts": ts - 4.0,
                    "cat": "ac2g",
                    "name": "ac2g",
                }
            )
            ev.append(
                {
                    "ph": "f",
                    "id": e,
                    "pid": self.pid_gpu,
                    "tid": self.tid_gpu,
                    "ts": ts,
                    "cat": "ac2g",
                    "name": "ac2g",
                    "bp": "e",
                }
            )

    def span(self, name: str, t0: float, t1: float) -> None:
        """A ``record_function`` range: its CPU side and (with GPU activity) its GPU side."""
        e = self.eid()
        dur = round(max(t1 - t0, 0.0), 3)
        self.ev.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": name,
                "pid": self.pid_cpu,
                "tid": self.tid_cpu,
                "ts": t0,
                "dur": dur,
                "args": {"External id": e},
            }
        )
        if self.gpu:
            self.ev.append(
                {
                    "ph": "X",
                    "cat": "gpu_user_annotation",
                    "name": name,
                    "pid": self.pid_gpu,
                    "tid": self.tid_gpu,
                    "ts": t0,
                    "dur": dur,
                    "args": {"External id": e},
                }
            )

    def forward(self, ts: float, ms: float, layers: int, attention: tuple[str, ...] = (ATTENTION,)) -> float:
        """Kernels of one forward pass taking ``ms`` (model time) over ``layers`` layers; returns end."""
        mine, ar = self.mine, self.ar
        cats = perf.breakdown(self.cfg, ms)
        per = {k: v * 1000.0 / layers for k, v in cats.items()}  # µs per layer
        wait = (self.slowest - mine) * (per["gemm"] + per["moe"] + per["attention"] + per["other"])
        attn = [
            (name, "sglang::decode_attention", per["attention"] * mine / len(attention)) for name in attention
        ]
        for _ in range(layers):
            for name, op, dur in (
                (NORM, "sglang::rmsnorm", per["other"] * mine),
                (GEMM, "aten::mm", per["gemm"] * 0.4 * mine),
                *attn,
                (GEMM_SMALL, "aten::mm", per["gemm"] * 0.6 * mine),
                (ar, "sglang::all_reduce", per["communication"] * 0.5 + wait / 2),
                (MOE, "sglang::fused_moe", per["moe"] * mine),
                (ar, "sglang::all_reduce", per["communication"] * 0.5 + wait / 2),
            ):
                if dur > 0:
                    self.kernel(name, op, ts, dur)
                    ts += dur + 0.5
        return ts

    def replay(
        self, ts: float, ms: float, layers: int, attention: tuple[str, ...], eager_step: str | None
    ) -> float:
        """One forward as SGLang runs it: under CUDA graphs a ``cudaGraphLaunch`` replays every kernel
        (no ``step[…]`` inside a graph); eagerly each kernel has its op, inside ``eager_step``."""
        if self.cfg.cuda_graph:
            corr = self.eid()
            self.ev.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaGraphLaunch",
                    "pid": self.pid_cpu,
                    "tid": self.tid_cpu,
                    "ts": ts - 6.0,
                    "dur": 5.0,
                    "args": {"correlation": corr, "cbid": 311},
                }
            )
            self.graph_corr = corr
            try:
                return self.forward(ts, ms, layers, attention)
            finally:
                self.graph_corr = 0
        end = self.forward(ts, ms, layers, attention)
        if eager_step:
            self.span(eager_step, ts, end)
        return end

    # SGLang 0.5.23's ranges (utils/profile_utils.build_step_span_name, speculative/eagle_worker_v2.py):
    # a batch is scheduler.run_batch; a speculative decode batch is draft → step[VERIFY bs=N] →
    # draft_extend; a prefill is step[EXTEND bs=N toks=T] then, with a draft model, draft_extend around
    # the draft's own step[DRAFT bs=N toks=T]; a plain decode batch is step[DECODE bs=N].

    def batch(self, st: Step, last_end: float) -> float:
        """One recorded batch after the previous one (ending at ``last_end``); returns where it ends."""
        total = sum(st.parts.values()) or st.dur_ms
        scale = st.dur_ms / total if total else 1.0
        # one GPU stream: a batch starts after the previous one's kernels (launch gaps add up)
        t0 = max(st.start_us, last_end + 10.0)
        ts = t0
        if st.stage == "EXTEND":
            ts = self._extend(st, ts, st.parts.get("forward", total) * scale)
        elif self.cfg.spec:
            ts = self._speculative_decode(st, ts, scale)
        else:
            start = ts
            ts = self.replay(ts, st.parts.get("forward", total) * scale, LAYERS, DECODE_ATTENTION, None)
            self.span(f"step[DECODE bs={st.bs}]", start, ts)
        # the scheduler copies the batch's results to the host after it: not a stage
        self.kernel(COPY, "aten::copy_", ts + 5.0, 2.0)
        self.span("copy_result_to_cpu", ts + 4.0, ts + 8.0)
        self.span("scheduler.run_batch", t0 - 1.0, ts + 2.0)
        return ts + 8.0

    def _extend(self, st: Step, ts: float, ms: float) -> float:
        """A prefill batch: ``step[EXTEND …]``, then the draft's ``draft_extend``; returns its end."""
        start = ts
        ts = self.forward(ts, ms, LAYERS, EXTEND_ATTENTION)
        self.span(f"step[EXTEND bs={st.bs} toks={st.tokens}]", start, ts)
        if self.cfg.spec:
            start = ts + 2.0
            end = self.forward(start, ms / LAYERS, 1, EXTEND_ATTENTION)
            self.span(f"step[DRAFT bs={st.bs} toks={st.tokens}]", start, end)
            self.span("draft_extend", start - 1.0, end + 1.0)
            ts = end + 1.0
        return ts

    def _speculative_decode(self, st: Step, ts: float, scale: float) -> float:
        """A speculative decode batch: ``draft`` → ``step[VERIFY …]`` → ``draft_extend``; returns its end."""
        draft_ms = st.parts.get("draft", 0.0) * scale
        start = ts
        steps = max(1, self.cfg.num_steps)
        lead, forwards = draft_units(steps)
        lead_ms = draft_ms * lead / (lead + forwards) if lead + forwards > 0 else draft_ms
        # the preparation and the draft runner: eager kernels before the replay (their time is the
        # draft's lead, which the cycle model reads as the runner's work and the preparation)
        self.kernel(PREPARE_DRAFT, "aten::copy_", ts + 1.0, 2.0)
        ts = self.forward(ts + 4.0, lead_ms, 1, DECODE_ATTENTION)
        replay_ms = draft_ms - lead_ms
        if replay_ms > 0:
            if self.cfg.cuda_graph:
                ts = self.replay(ts + 1.0, replay_ms, 1, DECODE_ATTENTION, None)
            else:
                for _ in range(steps - 1):
                    ts = self.replay(
                        ts + 1.0, replay_ms / (steps - 1), 1, DECODE_ATTENTION, f"step[DRAFT bs={st.bs}]"
                    )
        self.span("draft", start, ts + 1.0)
        start = ts + 3.0
        ts = self.replay(start, st.parts.get("verify", 0.0) * scale, LAYERS, EXTEND_ATTENTION, None)
        self.span(f"step[VERIFY bs={st.bs}]", start, ts)
        start = ts + 3.0
        ts = self.replay(
            start + 1.0,
            st.parts.get("extend", 0.0) * scale,
            1,
            EXTEND_ATTENTION,
            f"step[DRAFT bs={st.bs}]",
        )
        self.span("draft_extend", start, ts + 1.0)
        return ts

    def document(self) -> dict[str, Any]:
        """The trace file's JSON object."""
        rank = self.rank
        return {
            "schemaVersion": 1,
            "deviceProperties": [
                {
                    "id": rank,
                    "name": self.cfg.preset.gpu_name,
                }
            ],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": self.tp},
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 0,
            "traceEvents": self.ev,
            "traceName": f"sglang-sim-TP-{rank}",
        }
