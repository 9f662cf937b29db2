"""``/start_profile`` / ``/stop_profile`` of the simulator: Chrome traces in torch's format whose kernels follow
the per-step cost model of :mod:`eagletui.sim.perf`.

Semantics of sglang 0.5.23 (``sglang/srt/managers/scheduler_components/profiler_manager.py``):

* ``ProfileReq`` fields used: ``output_dir`` (default ``$SGLANG_TORCH_PROFILER_DIR`` or ``/tmp``),
  ``num_steps`` (stop by itself after that many forward passes; per stage with ``profile_by_stage``),
  ``activities`` (default CPU+GPU), ``profile_by_stage``, ``profile_id`` (default ``str(time.time())``);
* log lines ``Profiling starts[ for EXTEND|DECODE]. Traces will be saved to: DIR (with profile id: ID)``,
  ``Stop profiling[-STAGE]...``, ``Profiling done. Traces are saved to: DIR``;
* files ``{profile_id}-TP-{rank}[-EP-{moe_ep_rank}][-{STAGE}].trace.json.gz``, one per TP rank;
* a second start while one runs, or a stop when none runs, fails ("Profiling is already in progress. Call
  /stop_profile first." / "Profiling is not in progress. Call /start_profile first.").

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
"""

from __future__ import annotations

import gzip
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagletui.sim import perf

LAYERS = 61  # the reference model's decoder layers (Kimi-K2/DeepSeek-V3)
MAX_STEPS = 16  # steps kept per trace: bounded memory and file size whatever num_steps says
STAGES = ("EXTEND", "DECODE")

GEMM = "nvjet_sm90_tst_128x16_64x11_4x1_v_bz_NNT"
GEMM_SMALL = "nvjet_sm90_tst_64x16_64x16_4x1_v_bz_NNT"
ATTENTION = "_fwd_kernel"
MOE = "fused_moe_kernel"
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
    stage: str
    bs: int
    tokens: int
    start_us: float
    dur_ms: float
    parts: dict[str, float]  # part name → noise-free ms (decode/prefill: one part "forward")


@dataclass
class Session:
    output_dir: Path
    profile_id: str
    num_steps: int | None
    by_stage: bool
    activities: list[str]
    pending: list[str] = field(default_factory=lambda: list(STAGES))
    stage: str | None = None  # by_stage: the stage being recorded
    steps: list[Step] = field(default_factory=list)
    counted: int = 0


class ProfileError(Exception):
    pass


class SimProfiler:
    """Profiling state of one simulated server (all TP ranks)."""

    #: called after each "Profiling done" (the server uses it to inject a post-profile crash)
    on_done: Any = None
    #: called with the stage after each "Profiling starts" (a crash while the profiler records)
    on_begin: Any = None

    def __init__(self, cfg: perf.PerfConfig, log: Any, tp: int, ep: int, seed: int = 0) -> None:
        self.cfg = cfg
        self.log = log
        self.tp = max(1, tp)
        self.ep = max(1, ep)
        self.rng = random.Random(seed * 131 + 7)
        self.session: Session | None = None
        self.written: list[Path] = []

    # --- requests ----------------------------------------------------------------------------------

    def start(self, req: dict[str, Any], env: dict[str, str]) -> None:
        if self.session is not None:
            raise ProfileError("Profiling is already in progress. Call /stop_profile first.")
        out = req.get("output_dir") or env.get("SGLANG_TORCH_PROFILER_DIR") or "/tmp"
        num = req.get("num_steps")
        acts = req.get("activities") or ["CPU", "GPU"]
        if num is not None and (not isinstance(num, int) or isinstance(num, bool) or num < 0):
            raise ProfileError(f"num_steps must be a non-negative integer, got {num!r}")
        if not isinstance(acts, list) or not all(isinstance(a, str) for a in acts):
            raise ProfileError("activities must be a list of strings")
        self.session = Session(
            output_dir=Path(str(out)).expanduser(),
            profile_id=str(req.get("profile_id") or time.time()),
            num_steps=num or None,
            by_stage=bool(req.get("profile_by_stage")),
            activities=acts,
        )
        if not self.session.by_stage:
            self._log_start(None)

    def abandon(self) -> None:
        """The recording process died: the capture ends with no trace and no "Profiling done"."""
        self.session = None

    def stop(self) -> list[Path]:
        s = self.session
        if s is None:
            raise ProfileError("Profiling is not in progress. Call /start_profile first.")
        return self._finish(s.stage if s.by_stage else None, final=True)

    # --- engine hook -------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.session is not None

    def begin(self, stage: str) -> bool:
        """Before a forward pass of ``stage``: whether it is recorded (by stage: starts that stage's
        profile, logging ``Profiling starts for STAGE`` before the step's own line).

        As SGLang's ``_profile_batch_predicate``: the first decode batch ends a prefill profile still
        running and starts the decode one; once a profile runs, torch records every batch, so the
        prefill batches that arrive while decode is profiled are in the DECODE trace (they do not count
        towards ``num_steps``)."""
        s = self.session
        if s is None:
            return False
        if s.by_stage:
            if s.stage == "EXTEND" and stage == "DECODE" and "DECODE" in s.pending:
                self._finish("EXTEND", final=False)
                s = self.session
                if s is None:
                    return False
            if s.stage is None:
                if stage not in s.pending:
                    return False
                s.stage = stage
                self._log_start(stage)
            return True
        return True

    def on_step(self, stage: str, bs: int, tokens: int, start_wall: float, dur_s: float, parts: dict) -> None:
        """After a recorded forward pass; stops by itself after ``num_steps`` of the stage profiled."""
        s = self.session
        if s is None:
            return
        if len(s.steps) < MAX_STEPS:
            s.steps.append(Step(stage, bs, tokens, start_wall * 1e6, dur_s * 1000.0, dict(parts)))
        if s.by_stage and stage != s.stage:
            return
        s.counted += 1
        if s.num_steps and s.counted >= s.num_steps:
            self._finish(s.stage if s.by_stage else None, final=not s.by_stage)

    # --- internals ---------------------------------------------------------------------------------

    def _ranks_log(self, msg: str) -> None:
        for r in range(self.tp):
            self.log.line(msg, rank=r)

    def _log_start(self, stage: str | None) -> None:
        s = self.session
        assert s is not None
        where = f" for {stage}" if stage else ""
        self._ranks_log(
            f"Profiling starts{where}. Traces will be saved to: {s.output_dir} (with profile id: {s.profile_id})"
        )
        if self.on_begin is not None:
            self.on_begin(stage)

    def _finish(self, stage: str | None, final: bool) -> list[Path]:
        s = self.session
        assert s is not None
        self._ranks_log("Stop profiling" + (f"-{stage}" if stage else "") + "...")
        paths = self.write(s, stage)
        self._ranks_log(f"Profiling done. Traces are saved to: {s.output_dir}")
        if self.on_done is not None:
            self.on_done()
        if s.by_stage and stage in s.pending:
            s.pending.remove(stage)
        if final or not s.by_stage or not s.pending:
            self.session = None
        else:
            s.stage, s.steps, s.counted = None, [], 0
        self.written.extend(paths)
        return paths

    def write(self, s: Session, stage: str | None) -> list[Path]:
        s.output_dir.mkdir(parents=True, exist_ok=True)
        paths = []
        skew = [self.rng.uniform(0.0, 0.04) for _ in range(self.tp)]
        for rank in range(self.tp):
            parts = [s.profile_id, f"TP-{rank}"]
            if self.ep > 1:
                parts.append(f"EP-{rank // max(1, self.tp // self.ep)}")
            name = "-".join(parts) + (f"-{stage}" if stage else "") + ".trace.json.gz"
            path = s.output_dir / name
            trace = self.trace(s, rank, skew)
            tmp = path.with_name("." + path.name + ".tmp")
            with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=3) as f:
                json.dump(trace, f, separators=(",", ":"))
            os.replace(tmp, path)
            paths.append(path)
        return paths

    def ar_kernel(self) -> str:
        cfg = self.cfg
        if cfg.allreduce_fusion:
            return FUSED_AR
        if cfg.custom_all_reduce and cfg.preset.no_custom_ar_factor > 1.0:
            return CUSTOM_AR  # the one-shot kernel NVLink allows; over PCIe NCCL does the work
        return nccl_kernel(cfg.nccl_algo, cfg.nccl_proto)

    def trace(self, s: Session, rank: int, skew: list[float]) -> dict[str, Any]:
        """One rank's Chrome trace (torch.profiler's export_chrome_trace shape)."""
        pid_cpu, tid_cpu, pid_gpu, tid_gpu = 1000 + rank, 1000 + rank, rank, 7
        ev: list[dict[str, Any]] = [
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
        gpu = "GPU" in s.activities
        ext = [0]

        def eid() -> int:
            ext[0] += 1
            return ext[0]

        ar = self.ar_kernel()
        mine = 1.0 + skew[rank]
        slowest = 1.0 + max(skew)

        graph_corr = [0]  # the correlation of the cudaGraphLaunch being replayed; 0: eager launches

        def gpu_kernel(name: str, ts: float, dur: float, correlation: int, **extra: Any) -> None:
            args = {**extra, "device": rank, "stream": tid_gpu, "correlation": correlation, "queued": 0}
            ev.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": name,
                    "pid": pid_gpu,
                    "tid": tid_gpu,
                    "ts": ts,
                    "dur": round(dur, 3),
                    "args": args,
                }
            )

        def kernel(name: str, op: str, ts: float, dur: float) -> None:
            if graph_corr[0]:
                # Replayed by a CUDA graph: no launching op, only the graph launch's correlation.
                if gpu:
                    gpu_kernel(name, ts, dur, graph_corr[0])
                return
            e = eid()
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
            if gpu:
                gpu_kernel(name, ts, dur, e, **{"External id": e})
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
                        "pid": pid_gpu,
                        "tid": tid_gpu,
                        "ts": ts,
                        "cat": "ac2g",
                        "name": "ac2g",
                        "bp": "e",
                    }
                )

        def span(name: str, t0: float, t1: float) -> None:
            """A ``record_function`` range: its CPU side and (with GPU activity) its GPU side."""
            e = eid()
            dur = round(max(t1 - t0, 0.0), 3)
            ev.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": name,
                    "pid": pid_cpu,
                    "tid": tid_cpu,
                    "ts": t0,
                    "dur": dur,
                    "args": {"External id": e},
                }
            )
            if gpu:
                ev.append(
                    {
                        "ph": "X",
                        "cat": "gpu_user_annotation",
                        "name": name,
                        "pid": pid_gpu,
                        "tid": tid_gpu,
                        "ts": t0,
                        "dur": dur,
                        "args": {"External id": e},
                    }
                )

        def forward(ts: float, ms: float, layers: int, attention: tuple[str, ...] = (ATTENTION,)) -> float:
            """Kernels of one forward pass taking ``ms`` (model time) over ``layers`` layers; returns end."""
            cats = perf.breakdown(self.cfg, ms)
            per = {k: v * 1000.0 / layers for k, v in cats.items()}  # µs per layer
            wait = (slowest - mine) * (per["gemm"] + per["moe"] + per["attention"] + per["other"])
            attn = [
                (name, "sglang::decode_attention", per["attention"] * mine / len(attention))
                for name in attention
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
                        kernel(name, op, ts, dur)
                        ts += dur + 0.5
            return ts

        def replay(
            ts: float, ms: float, layers: int, attention: tuple[str, ...], eager_step: str | None
        ) -> float:
            """One forward as SGLang runs it: under CUDA graphs a ``cudaGraphLaunch`` replays every kernel
            (no ``step[…]`` inside a graph); eagerly each kernel has its op, inside ``eager_step``."""
            if self.cfg.cuda_graph:
                corr = eid()
                ev.append(
                    {
                        "ph": "X",
                        "cat": "cuda_runtime",
                        "name": "cudaGraphLaunch",
                        "pid": pid_cpu,
                        "tid": tid_cpu,
                        "ts": ts - 6.0,
                        "dur": 5.0,
                        "args": {"correlation": corr, "cbid": 311},
                    }
                )
                graph_corr[0] = corr
                try:
                    return forward(ts, ms, layers, attention)
                finally:
                    graph_corr[0] = 0
            end = forward(ts, ms, layers, attention)
            if eager_step:
                span(eager_step, ts, end)
            return end

        # SGLang 0.5.23's ranges (utils/profile_utils.build_step_span_name, speculative/eagle_worker_v2.py):
        # a batch is scheduler.run_batch; a speculative decode batch is draft → step[VERIFY bs=N] →
        # draft_extend; a prefill is step[EXTEND bs=N toks=T] then, with a draft model, draft_extend around
        # the draft's own step[DRAFT bs=N toks=T]; a plain decode batch is step[DECODE bs=N].
        decode_attn = ("_fwd_grouped_kernel_stage1", "_fwd_kernel_stage2")
        extend_attn = (ATTENTION,)
        last_end = float("-inf")
        for st in s.steps:
            total = sum(st.parts.values()) or st.dur_ms
            scale = st.dur_ms / total if total else 1.0
            # one GPU stream: a batch starts after the previous one's kernels (launch gaps add up)
            t0 = max(st.start_us, last_end + 10.0)
            ts = t0
            if st.stage == "EXTEND":
                ms = st.parts.get("forward", total) * scale
                start = ts
                ts = forward(ts, ms, LAYERS, extend_attn)
                span(f"step[EXTEND bs={st.bs} toks={st.tokens}]", start, ts)
                if self.cfg.spec:
                    start = ts + 2.0
                    end = forward(start, ms / LAYERS, 1, extend_attn)
                    span(f"step[DRAFT bs={st.bs} toks={st.tokens}]", start, end)
                    span("draft_extend", start - 1.0, end + 1.0)
                    ts = end + 1.0
            elif self.cfg.spec:
                draft_ms = st.parts.get("draft", 0.0) * scale
                start = ts
                steps = max(1, self.cfg.num_steps)
                if self.cfg.cuda_graph:
                    ts = replay(ts + 1.0, draft_ms, 1, decode_attn, None)
                else:
                    for _ in range(steps):
                        ts = replay(ts + 1.0, draft_ms / steps, 1, decode_attn, f"step[DRAFT bs={st.bs}]")
                span("draft", start, ts + 1.0)
                start = ts + 3.0
                ts = replay(start, st.parts.get("verify", 0.0) * scale, LAYERS, extend_attn, None)
                span(f"step[VERIFY bs={st.bs}]", start, ts)
                start = ts + 3.0
                ts = replay(
                    start + 1.0,
                    st.parts.get("extend", 0.0) * scale,
                    1,
                    extend_attn,
                    f"step[DRAFT bs={st.bs}]",
                )
                span("draft_extend", start, ts + 1.0)
            else:
                start = ts
                ts = replay(ts, st.parts.get("forward", total) * scale, LAYERS, decode_attn, None)
                span(f"step[DECODE bs={st.bs}]", start, ts)
            # the scheduler copies the batch's results to the host after it: not a stage
            kernel(COPY, "aten::copy_", ts + 5.0, 2.0)
            span("copy_result_to_cpu", ts + 4.0, ts + 8.0)
            span("scheduler.run_batch", t0 - 1.0, ts + 2.0)
            last_end = ts + 8.0
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
            "traceEvents": ev,
            "traceName": f"sglang-sim-TP-{rank}",
        }
