"""Performance model of the SGLang simulator (pure: no I/O, no clock, no global state).

The simulator runs a continuous-batching scheduler loop. Every *iteration* serves all running requests
(at most ``max_running_requests``; the rest wait in the queue). An iteration is either

* a **prefill** of newly admitted requests (each gets its first token), costing
  ``PREFILL_FIXED_MS + PREFILL_MS_PER_TOKEN * new_tokens``, or
* a **decode** step over the running batch of size ``bs``:

  - speculative decoding off: ``decode_ms(bs) = DECODE_MS * (1 + DECODE_BS_SLOPE * (bs - 1))`` and every
    request gets exactly one token;
  - EAGLE/EAGLE3 on: one draft + verify round,
    ``round_ms = steps * draft_step_ms(bs, topk) + verify_ms(bs, num_draft_tokens) + COMMIT_MS(bs) * a``
    where ``a`` is the mean accepted length of the batch in this round (the draft-extend pass and KV/sampling
    bookkeeping grow with the accepted tokens). Each request gets a seeded random accepted length
    ``1 + (number of consecutive accepted draft tokens)``: every draft position is accepted with probability
    ``p_eff`` (the drafter quality, widened by ``topk``), up to ``depth = min(steps, num_draft_tokens - 1)``
    positions. The mean is therefore ``1 + p + p^2 + ... + p^depth``: more steps → higher accept length with
    diminishing returns, at a linear draft cost.

All step times are then multiplied by the same factors:

* model size ``(params_b / 1000) ** 0.3`` (clipped to [0.25, 1.3]) and tensor parallelism
  (``0.82 * (8/tp) ** 0.8`` compute share + ``0.18 * log2(tp)/3`` all-reduce share; 1.0 at tp=8);
* NCCL: the all-reduce share (18 %) is scaled by ``NCCL_ALGO`` (Tree 1.15, Ring 1.0, NVLS 0.95) and
  ``NCCL_PROTO`` (LL 0.93 best, LL128 0.97, Simple 1.12); unset = 1.0;
* FlashInfer all-reduce fusion: time / 1.06 (≈ +6 % throughput);
* ``--disable-cuda-graph``: time * 2.3;
* ``--sim-speed``: time / speed;
* per-iteration seeded noise: multiplicative, mean 1, sd ``NOISE_SD``.

Calibration (tp=8, 1T-class MoE, steps=3, topk=1, draft tokens=4, default NCCL, no fusion, graphs on),
single stream:

* no speculative decoding: 11.6 ms/step → ≈ 86 tok/s;
* good EAGLE-3 drafter (p = 0.8527): accept length 3.20, round ≈ 51.6 ms → ≈ 62 tok/s;
* poor drafter (p = 0.3425): accept length 1.50, round ≈ 31.9 ms → ≈ 47 tok/s;
* fusion: +6 % on all of them.

:func:`expected` returns the ground truth for a configuration (server-args namespace or dict + env).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# --- calibration constants (reference point: tp=8, 1T params) --------------------------------------------
DECODE_MS = 11.6
DECODE_BS_SLOPE = 0.012
DRAFT_STEP_MS = 1.5
DRAFT_TOPK_SLOPE = 0.10
DRAFT_BS_SLOPE = 0.01
VERIFY_FIXED_MS = 8.0
VERIFY_MS_PER_DRAFT_TOKEN = 0.5
VERIFY_TOKEN_SLOPE = 0.005
COMMIT_MS = 11.6
COMMIT_BS_SLOPE = 0.01
PREFILL_FIXED_MS = 15.0
PREFILL_MS_PER_TOKEN = 0.12
COMM_SHARE = 0.18
FUSION_SPEEDUP = 1.06
NO_CUDA_GRAPH_SLOWDOWN = 2.3
NOISE_SD = 0.03

#: Per-draft-token acceptance probabilities that give accept length 3.2 / 1.5 at steps=3, topk=1.
GOOD_DRAFT_P = 0.8527
POOR_DRAFT_P = 0.3425
POOR_DRAFT_WORDS = ("bad", "poor", "weak", "broken", "random", "untrained")

NCCL_ALGO_FACTOR = {"tree": 1.15, "ring": 1.0, "nvls": 0.95, "nvlstree": 1.0, "collnetdirect": 1.0}
NCCL_PROTO_FACTOR = {"ll": 0.93, "ll128": 0.97, "simple": 1.12}

SPEC_ALGOS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")


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
            allreduce_fusion=_truthy(_get(args, "enable_flashinfer_allreduce_fusion", default=False)),
            cuda_graph=not _truthy(_get(args, "disable_cuda_graph", default=False)),
            speed=float(_get(args, "sim_speed", default=1.0) or 1.0),
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


def step_factor(cfg: PerfConfig) -> float:
    """Multiplier applied to every step time (size, tp, NCCL, fusion, graphs, speed)."""
    size = min(max((cfg.params_b / 1000.0) ** 0.3, 0.25), 1.3)
    tp = max(1, cfg.tp)
    compute = (1 - COMM_SHARE) * (8 / tp) ** 0.8
    comm = COMM_SHARE * math.log2(tp) / 3.0
    comm *= _nccl_factor(cfg.nccl_algo, NCCL_ALGO_FACTOR) * _nccl_factor(cfg.nccl_proto, NCCL_PROTO_FACTOR)
    f = size * (compute + comm)
    if cfg.allreduce_fusion:
        f /= FUSION_SPEEDUP
    if not cfg.cuda_graph:
        f *= NO_CUDA_GRAPH_SLOWDOWN
    return f / max(cfg.speed, 1e-6)


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
    return DECODE_MS * (1 + DECODE_BS_SLOPE * (max(bs, 1) - 1)) * step_factor(cfg)


def spec_round_ms(cfg: PerfConfig, bs: int, mean_accept: float) -> float:
    bs = max(bs, 1)
    draft = (
        cfg.num_steps
        * DRAFT_STEP_MS
        * (1 + DRAFT_TOPK_SLOPE * (cfg.topk - 1))
        * (1 + DRAFT_BS_SLOPE * (bs * cfg.topk - 1))
    )
    verify = (VERIFY_FIXED_MS + VERIFY_MS_PER_DRAFT_TOKEN * cfg.num_draft_tokens) * (
        1 + VERIFY_TOKEN_SLOPE * (bs - 1) * cfg.num_draft_tokens
    )
    commit = COMMIT_MS * (1 + COMMIT_BS_SLOPE * (bs - 1)) * mean_accept
    return (draft + verify + commit) * step_factor(cfg)


def iteration_ms(cfg: PerfConfig, bs: int, mean_accept: float | None = None) -> float:
    """Noise-free duration of one decode iteration (one draft+verify round when spec is on)."""
    if not cfg.spec:
        return decode_ms(cfg, bs)
    return spec_round_ms(cfg, bs, mean_accept_len(cfg) if mean_accept is None else mean_accept)


def prefill_ms(cfg: PerfConfig, new_tokens: int) -> float:
    return (PREFILL_FIXED_MS + PREFILL_MS_PER_TOKEN * max(new_tokens, 0)) * step_factor(cfg)


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
    return {
        "single_stream_tok_s": 1000.0 * a / it,
        "accept_len": a,
        "accept_rate": accept_rate(cfg, a),
        "iteration_ms": it,
        "spec": cfg.spec,
        "draft_p": cfg.draft_p if cfg.spec else None,
        "batch32_tok_s": throughput(cfg, 32),
    }
