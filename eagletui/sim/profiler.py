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

With ``profile_by_stage`` the stages follow ``_profile_batch_predicate`` of 0.5.17 (identical in 0.5.23),
counters and all: the prefill and decode batch counts start at 0 with each ``/start_profile`` and are never
reset otherwise; the first prefill starts an EXTEND profile, the first decode flushes one still running and
starts the DECODE profile, the ``num_steps + 1``-th batch of a stage stops it. A prefill batch that arrives
while DECODE is recorded still counts as prefill: once that count passes ``num_steps`` SGLang stops the
DECODE profile *as EXTEND* ("Stop profiling-EXTEND...", the trace written over the EXTEND one) and no
DECODE trace is ever written (the real turn-4 log, issue 31 item 3; docs in the wheel notes, question 3).

The traces' content (ranges, kernels, CUDA-graph replays, the all-reduce's waiting) is
:mod:`eagletui.sim.chrome_trace`'s.
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
from eagletui.sim.chrome_trace import CUSTOM_AR, FUSED_AR, RankTrace, Step, nccl_kernel

MAX_STEPS = 16  # steps kept per trace: bounded memory and file size whatever num_steps says


@dataclass
class Session:
    output_dir: Path
    profile_id: str
    num_steps: int | None
    by_stage: bool
    activities: list[str]
    stage: str | None = None  # by_stage: the stage being recorded (SGLang's profile_in_progress)
    steps: list[Step] = field(default_factory=list)
    counted: int = 0
    #: by_stage: SGLang's profiler_prefill_ct / profiler_decode_ct, batches seen since /start_profile
    prefill_ct: int = 0
    decode_ct: int = 0

    @property
    def recording(self) -> bool:
        return self.stage is not None or not self.by_stage


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
        if self.session is not None and self.session.recording:
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
        if s is None or not s.recording:
            raise ProfileError("Profiling is not in progress. Call /start_profile first.")
        return self._finish(None)  # SGLang's /stop_profile names no stage

    # --- engine hook -------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.session is not None and self.session.recording

    def begin(self, stage: str) -> bool:
        """Before a forward pass of ``stage``: whether it is recorded. By stage, SGLang's
        ``_profile_batch_predicate`` (module docstring): it may start or stop a stage's profile first,
        logging ``Profiling starts for STAGE`` before the step's own line. Once a profile runs torch
        records every batch, so the prefill batches that arrive while decode is profiled are in the
        DECODE trace."""
        s = self.session
        if s is None:
            return False
        if not s.by_stage:
            return True
        n = s.num_steps
        if stage == "EXTEND":
            if s.prefill_ct == 0:
                self._start_stage(s, "EXTEND")
            s.prefill_ct += 1
            if n and s.prefill_ct > n and s.stage is not None:
                self._finish("EXTEND")  # also when DECODE is the one recording: the real cut
        else:
            if s.decode_ct == 0:
                if s.stage is not None:
                    self._finish("EXTEND")  # "force trace flush"
                self._start_stage(s, "DECODE")
            s.decode_ct += 1
            if n and s.decode_ct > n and s.stage is not None:
                self._finish("DECODE")
        return s.stage is not None

    def on_step(self, stage: str, bs: int, tokens: int, start_wall: float, dur_s: float, parts: dict) -> None:
        """After a recorded forward pass; a profile not by stage stops by itself after ``num_steps``."""
        s = self.session
        if s is None or not s.recording:
            return
        if len(s.steps) < MAX_STEPS:
            s.steps.append(Step(stage, bs, tokens, start_wall * 1e6, dur_s * 1000.0, dict(parts)))
        if s.by_stage:
            return
        s.counted += 1
        if s.num_steps and s.counted >= s.num_steps:
            self._finish(None)

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

    def _start_stage(self, s: Session, stage: str) -> None:
        """SGLang's ``_start_profile(stage)``; a start while a profile records fails in torch and is
        ignored by the predicate: the recording goes on."""
        if s.stage is None:
            s.stage, s.steps = stage, []
            self._log_start(stage)

    def _finish(self, stage: str | None) -> list[Path]:
        """SGLang's ``_stop_profile(stage)``: the file is named for ``stage`` whatever was recorded. By
        stage the session (its counters) stays: a later first prefill or decode still starts a stage."""
        s = self.session
        assert s is not None
        self._ranks_log("Stop profiling" + (f"-{stage}" if stage else "") + "...")
        paths = self.write(s, stage)
        self._ranks_log(f"Profiling done. Traces are saved to: {s.output_dir}")
        if self.on_done is not None:
            self.on_done()
        if s.by_stage:
            s.stage, s.steps, s.counted = None, [], 0
        else:
            self.session = None
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
        trace = RankTrace(self.cfg, rank, self.tp, skew, "GPU" in s.activities, self.ar_kernel())
        last_end = float("-inf")
        for st in s.steps:
            last_end = trace.batch(st, last_end)
        return trace.document()
