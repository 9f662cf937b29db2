"""Performance model of the SGLang simulator (pure: no I/O, no clock, no global state).

The simulator runs a continuous-batching scheduler loop. Every *iteration* serves all running requests
(at most ``max_running_requests``; the rest wait in the queue). An iteration is either

* a **prefill** of newly admitted requests (each gets its first token), costing
  ``PREFILL_FIXED_MS + PREFILL_MS_PER_TOKEN * new_tokens``, or
* a **decode** step over the running batch of size ``bs``:

  - speculative decoding off: ``decode_ms * (1 + decode_bs_slope * (bs - 1))``, one token per request;
  - EAGLE/EAGLE3 on: one cycle = ``steps`` draft forwards + one target **verify** over ``bs × draft
    tokens`` + the draft **extend**/commit work, which grows with the accepted tokens ``a`` of the round.
    Each request gets a seeded random accepted length ``1 + (consecutive accepted draft tokens)``: every
    draft position is accepted with probability ``p_eff`` (drafter quality, widened by ``topk``), up to
    ``depth = min(steps, num_draft_tokens - 1)``; the mean is ``1 + p + … + p^depth``.

The per-step costs come from a **host preset** (``--sim-host``, :data:`HOSTS`): the reference step times of
a 1T-class MoE at tp=8 on that host and how a step splits into all-reduce (``comm_share``) and compute
(gemm/moe/attention/other). Every step time is then multiplied by

* model size ``(params_b / 1000) ** 0.3`` (clipped to [0.25, 1.3]);
* tensor parallelism: compute × ``(8/tp) ** 0.8``, all-reduce × ``log2(tp)/3`` (both 1.0 at tp=8);
* the all-reduce part only: ``NCCL_ALGO`` (Tree 1.15, Ring 1.0, NVLS 0.95) and ``NCCL_PROTO`` (LL 0.93,
  LL128 0.97, Simple 1.12) — scaled by the host's ``nccl_gain`` —, FlashInfer all-reduce fusion (removes
  ``fusion_comm_saving`` of it) and ``--disable-custom-all-reduce`` (× ``no_custom_ar_factor``: NCCL instead
  of the one-shot kernel where NVLink allows one);
* decode CUDA graphs off: × 2.3; ``--sim-speed``: / speed; seeded noise (mean 1, sd ``NOISE_SD``).

Calibration, single stream, tp=8, 1T, steps=3, topk=1, draft tokens=4, default NCCL, no fusion, graphs on:

* ``pcie-rtx6000`` (default): no spec 11.6 ms/step ≈ 86 tok/s; good drafter (p = 0.8527) accept 3.20 in a
  ≈ 51.6 ms cycle ≈ 62 tok/s; poor drafter (p = 0.3425) accept 1.50 in ≈ 31.9 ms ≈ 47 tok/s, of which
  ≈ 25 ms all-reduce; fusion +6 %;
* ``h200-nvlink``: no spec 2.4 ms/step ≈ 417 tok/s (faster than the PCIe box at every batch size: its
  weight-bound compute and its NVLink all-reduce are both cheaper); good drafter accept 3.20 in a ≈ 4.0 ms
  cycle ≈ 790 tok/s (≈ 1.9×) single-stream, ≈ 1.4× at 32 concurrent requests.

:func:`expected` returns the ground truth for a configuration (server-args namespace or dict + env).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# --- calibration constants (reference point: tp=8, 1T params) --------------------------------------------
DRAFT_TOPK_SLOPE = 0.10
DRAFT_BS_SLOPE = 0.01
PREFILL_FIXED_MS = 15.0
PREFILL_MS_PER_TOKEN = 0.12
NO_CUDA_GRAPH_SLOWDOWN = 2.3
NOISE_SD = 0.03
#: How a cycle's drafting splits, in units of the preset's ``draft_step_ms`` (steps 3 costs 3 of them, as
#: calibrated): what SGLang 0.5.17 does on the lent H200 (its steps-3 trace, issue 32) — preparation every
#: step count runs (``prepare_for_draft``), the draft runner's own work (copies, attention metadata, the
#: graph launch) whenever the draft model runs at all, and one forward of the draft model for each step
#: but the first (the first draft token comes from the previous draft extend): steps 1 runs no forward.
DRAFT_PREPARE = 0.6
DRAFT_RUNNER = 0.8
DRAFT_FORWARD = 0.8

#: Per-draft-token acceptance probabilities that give accept length 3.2 / 1.5 at steps=3, topk=1.
GOOD_DRAFT_P = 0.8527
POOR_DRAFT_P = 0.3425
POOR_DRAFT_WORDS = ("bad", "poor", "weak", "broken", "random", "untrained")

NCCL_ALGO_FACTOR = {"tree": 1.15, "ring": 1.0, "nvls": 0.95, "nvlstree": 1.0, "collnetdirect": 1.0}
NCCL_PROTO_FACTOR = {"ll": 0.93, "ll128": 0.97, "simple": 1.12}

SPEC_ALGOS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")

CATEGORIES = ("communication", "gemm", "attention", "moe", "other")


@dataclass(frozen=True)
class HostPreset:
    """Per-step costs of one host for the reference model (1T-class MoE, tp=8, CUDA graphs, default NCCL).

    A step is a forward pass; its time splits into ``comm_share`` all-reduce (per-layer TP all-reduce, whose
    cost depends on the interconnect, ``NCCL_ALGO``/``NCCL_PROTO``, all-reduce fusion and the custom
    all-reduce) and compute, split by ``compute_split`` into gemm/moe/attention/other. A speculative cycle
    is ``steps`` draft forwards + one target verify over the draft tokens + the draft-extend/commit work,
    which grows with the accepted tokens.
    """

    name: str
    decode_ms: float  # one-token target forward
    decode_bs_slope: float  # relative growth per extra request in the batch
    draft_step_ms: float
    verify_fixed_ms: float
    verify_ms_per_draft_token: float
    verify_token_slope: float  # relative growth per extra verified token (bs × draft tokens)
    commit_ms: float  # per accepted token: draft extend + KV/sampling bookkeeping
    commit_bs_slope: float
    comm_share: float  # all-reduce share of a step at tp=8
    nccl_gain: float  # how much of an NCCL_ALGO/PROTO factor's effect reaches the all-reduce time
    fusion_comm_saving: float  # share of the all-reduce time that FlashInfer all-reduce fusion removes
    no_custom_ar_factor: float  # all-reduce time × this with --disable-custom-all-reduce
    compute_split: tuple[tuple[str, float], ...] = (
        ("gemm", 0.35),
        ("moe", 0.40),
        ("attention", 0.12),
        ("other", 0.13),
    )
    #: What the host's GPUs report: the name in nvidia-smi and profiler traces, and the total memory
    #: torch sees (``torch.cuda.mem_get_info``, GiB), from which every ``avail mem=`` in the log counts down.
    gpu_name: str = "NVIDIA H200"
    gpu_total_gb: float = 139.81


HOSTS: dict[str, HostPreset] = {
    # 8 × RTX PRO 6000 Blackwell over PCIe (the original case): NCCL all-reduce over PCIe is ~78 % of every
    # step (≈ 25 ms of a ≈ 30 ms poor-drafter cycle); the custom all-reduce needs NVLink at tp > 2, so
    # disabling it changes nothing; fusion removes ~7 % of the all-reduce time (≈ +6 % tok/s). Single
    # stream: baseline ≈ 86 tok/s, good drafter (accept 3.2) ≈ 62, poor (accept 1.5) ≈ 47.
    "pcie-rtx6000": HostPreset(
        name="pcie-rtx6000",
        decode_ms=11.6,
        decode_bs_slope=0.012,
        draft_step_ms=1.5,
        verify_fixed_ms=8.0,
        verify_ms_per_draft_token=0.5,
        verify_token_slope=0.005,
        commit_ms=11.6,
        commit_bs_slope=0.01,
        comm_share=0.78,
        nccl_gain=0.18 / 0.78,
        fusion_comm_saving=(1 - 1 / 1.06) / 0.78,
        no_custom_ar_factor=1.0,
        # 97887 MiB in nvidia-smi; torch reports a total of 94.97 GiB
        gpu_name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
        gpu_total_gb=94.97,
    ),
    # 8 × H200 with NVLink. A decode step is bound by reading the weights: HBM3e (4.8 TB/s) reads them
    # faster than the RTX PRO 6000's GDDR7 (1.8 TB/s), so the compute part of a step (1.8 ms) is below
    # the PCIe box's (2.6 ms), and the one-shot custom all-reduce over NVLink (0.5 ms, a fifth of the
    # step) is a fraction of NCCL over PCIe (9 ms): every step is faster here, at every batch size. A
    # verify over a few draft tokens costs about one decode step and the draft extend is cheap, so
    # EAGLE-3 with a good drafter wins ≈ 1.9× single-stream and less as the batch grows (the verify over
    # bs × draft tokens stops being free).
    "h200-nvlink": HostPreset(
        name="h200-nvlink",
        decode_ms=2.4,
        decode_bs_slope=0.010,
        draft_step_ms=0.3,
        verify_fixed_ms=2.1,
        verify_ms_per_draft_token=0.1,
        verify_token_slope=0.008,
        commit_ms=0.2,
        commit_bs_slope=0.01,
        comm_share=0.22,
        nccl_gain=1.0,
        fusion_comm_saving=0.2,
        no_custom_ar_factor=1.8,
        # 143771 MiB in nvidia-smi; torch reports 139.81 GiB (shared/fixtures/sglang-0.5.17-h200)
        gpu_name="NVIDIA H200",
        gpu_total_gb=139.81,
    ),
}
DEFAULT_HOST = "pcie-rtx6000"


def _get(src: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(src, Mapping):
            if src.get(name) is not None:
                return src[name]
        elif getattr(src, name, None) is not None:
            return getattr(src, name)
    return default


def parse_params_b(model_path: str | None) -> float:
    """Parameter count (billions) guessed from a model path; 1T-class (Kimi/DeepSeek) when unknown."""
    import re

    path = (model_path or "").lower()
    m = re.search(r"(\d+(?:\.\d+)?)\s*([bt])(?![a-z])", path.replace("_", "-"))
    if m:
        val = float(m.group(1))
        return val * 1000 if m.group(2) == "t" else val
    if "kimi" in path or "k2" in path:
        return 1000.0
    if "deepseek" in path:
        return 671.0
    return 1000.0


def architecture(model_path: str | None) -> str:
    path = (model_path or "").lower()
    if "kimi" in path or "deepseek" in path or "k2" in path:
        return "DeepseekV3ForCausalLM"
    if "qwen" in path:
        return "Qwen3MoeForCausalLM" if "a3b" in path or "a22b" in path else "Qwen2ForCausalLM"
    if "mistral" in path:
        return "MistralForCausalLM"
    return "LlamaForCausalLM"


def auto_spec_params(arch: str) -> tuple[int, int, int]:
    """SGLang 0.5.23 ``_auto_choose_speculative_params``: (steps, topk, draft_tokens)."""
    return (5, 4, 8) if arch == "LlamaForCausalLM" else (3, 1, 4)


def draft_p_from_path(draft_path: str | None) -> float:
    path = (draft_path or "").lower()
    return POOR_DRAFT_P if any(w in path for w in POOR_DRAFT_WORDS) else GOOD_DRAFT_P


def _truthy(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


@dataclass(frozen=True)
class PerfConfig:
    tp: int = 8
    params_b: float = 1000.0
    spec: bool = False
    num_steps: int = 3
    topk: int = 1
    num_draft_tokens: int = 4
    draft_p: float = GOOD_DRAFT_P
    nccl_algo: str = ""
    nccl_proto: str = ""
    allreduce_fusion: bool = False
    cuda_graph: bool = True
    speed: float = 1.0
    host: str = DEFAULT_HOST
    custom_all_reduce: bool = True

    @property
    def preset(self) -> HostPreset:
        return HOSTS.get(self.host, HOSTS[DEFAULT_HOST])

    @classmethod
    def from_args(cls, args: Any, env: Mapping[str, str] | None = None) -> PerfConfig:
        """Build from an argparse namespace or a dict of server args (CLI or ``server_info`` names)."""
        env = env or {}
        model_path = _get(args, "model_path", "model-path")
        algo = str(_get(args, "speculative_algorithm", default="") or "").upper()
        spec = algo in SPEC_ALGOS
        auto = auto_spec_params(architecture(model_path))
        steps = _get(args, "speculative_num_steps")
        topk = _get(args, "speculative_eagle_topk")
        ndt = _get(args, "speculative_num_draft_tokens")
        if steps is None and topk is None and ndt is None:
            steps, topk, ndt = auto
        steps = int(steps if steps is not None else auto[0])
        topk = int(topk if topk is not None else 1)
        if topk == 1:
            ndt = steps + 1
        ndt = int(ndt if ndt is not None else steps + 1)
        quality = _get(args, "sim_draft_quality")
        if quality is not None:
            draft_p = float(quality)
        else:
            draft_p = draft_p_from_path(
                _get(args, "speculative_draft_model_path", "speculative_draft_model", default="")
            )
        params = _get(args, "sim_params_b")
        return cls(
            tp=int(_get(args, "tp_size", "tp", default=8)),
            params_b=float(params) if params else parse_params_b(model_path),
            spec=spec,
            num_steps=max(1, steps),
            topk=max(1, topk),
            num_draft_tokens=max(2, ndt),
            draft_p=min(max(draft_p, 0.0), 0.999),
            nccl_algo=str(env.get("NCCL_ALGO", "") or ""),
            nccl_proto=str(env.get("NCCL_PROTO", "") or ""),
            # 0.5.20+ also turns fusion on with --flashinfer-allreduce-fusion-backend
            allreduce_fusion=_truthy(_get(args, "enable_flashinfer_allreduce_fusion", default=False))
            or bool(_get(args, "flashinfer_allreduce_fusion_backend")),
            cuda_graph=not _truthy(_get(args, "disable_cuda_graph", default=False))
            and _get(args, "cuda_graph_backend_decode") != "disabled",
            speed=float(_get(args, "sim_speed", default=1.0) or 1.0),
            host=str(_get(args, "sim_host", default=DEFAULT_HOST) or DEFAULT_HOST),
            custom_all_reduce=not _truthy(_get(args, "disable_custom_all_reduce", default=False)),
        )


def _nccl_factor(value: str, table: Mapping[str, float]) -> float:
    """NCCL_ALGO/NCCL_PROTO may be lists (``Ring,Tree``) or per-collective (``allreduce:tree``)."""
    if not value:
        return 1.0
    spec = value.lower()
    if ":" in spec:
        for part in spec.split(";"):
            coll, _, algos = part.partition(":")
            if coll.strip() in ("allreduce", ""):
                spec = algos
                break
        else:
            return 1.0
    spec = spec.lstrip("^")
    names = [n.strip() for n in spec.split(",") if n.strip()]
    factors = [table[n] for n in names if n in table]
    return min(factors) if factors else 1.0


def _factors(cfg: PerfConfig) -> tuple[float, float]:
    """(compute, communication) multipliers of the reference step's two parts (size, tp, NCCL, fusion,
    custom all-reduce, graphs, speed); their sum weighted by the host's shares is the step factor."""
    h = cfg.preset
    size = min(max((cfg.params_b / 1000.0) ** 0.3, 0.25), 1.3)
    tp = max(1, cfg.tp)
    compute = (8 / tp) ** 0.8
    comm = math.log2(tp) / 3.0
    nccl = _nccl_factor(cfg.nccl_algo, NCCL_ALGO_FACTOR) * _nccl_factor(cfg.nccl_proto, NCCL_PROTO_FACTOR)
    comm *= 1 + (nccl - 1) * h.nccl_gain
    if cfg.allreduce_fusion:
        comm *= 1 - h.fusion_comm_saving
    if not cfg.custom_all_reduce:
        comm *= h.no_custom_ar_factor
    common = size / max(cfg.speed, 1e-6)
    if not cfg.cuda_graph:
        common *= NO_CUDA_GRAPH_SLOWDOWN
    return compute * common, comm * common


def step_factor(cfg: PerfConfig) -> float:
    """Multiplier applied to every step time of the host preset's reference costs."""
    compute, comm = _factors(cfg)
    share = cfg.preset.comm_share
    return (1 - share) * compute + share * comm


def breakdown(cfg: PerfConfig, ms: float) -> dict[str, float]:
    """Split a step time into kernel categories (communication, gemm, attention, moe, other), ms."""
    compute, comm = _factors(cfg)
    h = cfg.preset
    c = h.comm_share * comm
    total = (1 - h.comm_share) * compute + c
    out = {"communication": ms * c / total if total else 0.0}
    rest = ms - out["communication"]
    for name, share in h.compute_split:
        out[name] = rest * share
    return out


def effective_p(cfg: PerfConfig) -> float:
    """Per-position acceptance probability; a wider tree (topk>1) gives the drafter more chances."""
    widen = 1.0 + 0.5 * (cfg.topk - 1) ** 0.7
    return 1.0 - (1.0 - cfg.draft_p) ** widen


def accept_depth(cfg: PerfConfig) -> int:
    return max(1, min(cfg.num_steps, cfg.num_draft_tokens - 1))


def mean_accept_len(cfg: PerfConfig) -> float:
    """Expected tokens per request per verify round, bonus token included (1 when spec is off)."""
    if not cfg.spec:
        return 1.0
    p = effective_p(cfg)
    return sum(p**k for k in range(accept_depth(cfg) + 1))


def sample_accept_len(cfg: PerfConfig, rng: random.Random) -> int:
    if not cfg.spec:
        return 1
    p = effective_p(cfg)
    n = 1
    for _ in range(accept_depth(cfg)):
        if rng.random() < p:
            n += 1
        else:
            break
    return n


def decode_ms(cfg: PerfConfig, bs: int) -> float:
    h = cfg.preset
    return h.decode_ms * (1 + h.decode_bs_slope * (max(bs, 1) - 1)) * step_factor(cfg)


def draft_units(steps: int) -> tuple[float, float]:
    """(before the draft's graph replay, the replay) in units of ``draft_step_ms`` at ``steps``: the
    preparation and, when the draft model runs at all, its runner; then ``steps − 1`` forwards."""
    forwards = max(0, steps - 1)
    return DRAFT_PREPARE + (DRAFT_RUNNER if forwards else 0.0), DRAFT_FORWARD * forwards


def spec_parts_ms(cfg: PerfConfig, bs: int, mean_accept: float) -> dict[str, float]:
    """One speculative cycle: ``draft`` (preparation, the draft runner and ``steps − 1`` draft forwards:
    :func:`draft_units`), ``verify`` (the target over bs × draft tokens) and ``extend`` (draft extend +
    commit, per accepted token)."""
    h = cfg.preset
    bs = max(bs, 1)
    f = step_factor(cfg)
    draft = (
        sum(draft_units(cfg.num_steps))
        * h.draft_step_ms
        * (1 + DRAFT_TOPK_SLOPE * (cfg.topk - 1))
        * (1 + DRAFT_BS_SLOPE * (bs * cfg.topk - 1))
    )
    verify = (h.verify_fixed_ms + h.verify_ms_per_draft_token * cfg.num_draft_tokens) * (
        1 + h.verify_token_slope * (bs - 1) * cfg.num_draft_tokens
    )
    extend = h.commit_ms * (1 + h.commit_bs_slope * (bs - 1)) * mean_accept
    return {"draft": draft * f, "verify": verify * f, "extend": extend * f}


def spec_round_ms(cfg: PerfConfig, bs: int, mean_accept: float) -> float:
    return sum(spec_parts_ms(cfg, bs, mean_accept).values())


def iteration_ms(cfg: PerfConfig, bs: int, mean_accept: float | None = None) -> float:
    """Noise-free duration of one decode iteration (one draft+verify round when spec is on)."""
    if not cfg.spec:
        return decode_ms(cfg, bs)
    return spec_round_ms(cfg, bs, mean_accept_len(cfg) if mean_accept is None else mean_accept)


def prefill_ms(cfg: PerfConfig, new_tokens: int) -> float:
    host = cfg.preset.decode_ms / HOSTS[DEFAULT_HOST].decode_ms
    return (PREFILL_FIXED_MS + PREFILL_MS_PER_TOKEN * max(new_tokens, 0)) * step_factor(cfg) * host


def noise(rng: random.Random) -> float:
    return min(max(rng.gauss(1.0, NOISE_SD), 1 - 3 * NOISE_SD), 1 + 3 * NOISE_SD)


def accept_rate(cfg: PerfConfig, accept_len: float) -> float:
    """0.5.13+ definition: accepted drafts (bonus excluded) / (rounds × (num_draft_tokens − 1))."""
    if not cfg.spec:
        return 0.0
    return (accept_len - 1.0) / max(cfg.num_draft_tokens - 1, 1)


def throughput(cfg: PerfConfig, bs: int = 1) -> float:
    """Noise-free aggregate decode tokens/s for a steady batch of ``bs`` requests."""
    a = mean_accept_len(cfg)
    return bs * a / (iteration_ms(cfg, bs, a) / 1000.0)


def expected(args: Any, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Ground truth for a configuration: single-stream decode tok/s and accept length.

    ``args`` is an argparse namespace from :mod:`eagletui.sim.cli` or a dict of server args
    (``tp_size``/``tp``, ``speculative_*``, ``enable_flashinfer_allreduce_fusion``, ``disable_cuda_graph``,
    ``sim_draft_quality``, ``sim_speed`` …); ``env`` supplies ``NCCL_ALGO``/``NCCL_PROTO``.
    """
    cfg = args if isinstance(args, PerfConfig) else PerfConfig.from_args(args, env)
    a = mean_accept_len(cfg)
    it = iteration_ms(cfg, 1, a)
    cycle = breakdown(cfg, it)
    return {
        "host": cfg.preset.name,
        "step_ms_by_category": cycle,
        "single_stream_tok_s": 1000.0 * a / it,
        "accept_len": a,
        "accept_rate": accept_rate(cfg, a),
        "iteration_ms": it,
        "spec": cfg.spec,
        "draft_p": cfg.draft_p if cfg.spec else None,
        "batch32_tok_s": throughput(cfg, 32),
    }
