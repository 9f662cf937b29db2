"""Which part of a decode step a GPU kernel belongs to: communication, gemm, attention, moe or other.

A kernel is judged by its own name first and, when that says nothing, by the op or Python range that
launched it (``sglang::unified_attention_with_output``, ``…/layers/moe/fused_moe_triton/…``). Under CUDA
graphs there is no launching op (``cudaGraphLaunch`` replays a whole forward), so the name must do: SGLang's
triton attention kernels have bare names (``_fwd_kernel``, ``_fwd_grouped_kernel_stage1``,
``_fwd_kernel_stage2``), listed here from the wheels' ``kernels/ops/attention/`` (decode_attention,
extend_attention, prefill_attention, verify_splitkv, verify_mla, lightning_attn; 0.5.17–0.5.23). The categories follow Holistic Trace Analysis' kernel breakdown
(communication vs computation), with computation split the way a tuner of speculative decoding needs it.

Pure functions over strings: the trace reader and the fold live elsewhere.
"""

from __future__ import annotations

import re
from enum import IntEnum
from functools import lru_cache


class Category(IntEnum):
    OTHER = 0
    COMMUNICATION = 1
    GEMM = 2
    ATTENTION = 3
    MOE = 4

    @property
    def label(self) -> str:
        return self.name.lower()


#: Output order (JSON and the stacked bar): the thing a PCIe host loses time on first.
ORDER = (Category.COMMUNICATION, Category.GEMM, Category.ATTENTION, Category.MOE, Category.OTHER)

# Kernel names. Order matters: MoE GEMMs are MoE, fused all-reduce + RMSNorm is communication.
_COMM = re.compile(
    r"nccl|all_?reduce|allreduce|all_?gather|reduce_?scatter|cross_device_reduce|one_?shot|two_?shot"
    r"|custom_?ar|\bmscclpp|symm_?mem|all_?to_?all|alltoall|deepep|dispatch_kernel|combine_kernel"
    r"|sendrecv|send_?kernel|recv_?kernel|lamport",
    re.IGNORECASE,
)
_MOE = re.compile(
    r"moe|expert|topk_?softmax|topk_?sigmoid|grouped_?topk|router|gating|fused_?experts|count_and_sort"
    r"|align_block_size|silu_and_mul_masked|ep_scatter|ep_gather|masked_slab|m_indices_from_psum",
    re.IGNORECASE,
)
# SGLang's triton attention kernels, by their exact (bare) names: they say nothing to the patterns above.
_TRITON_ATTN = re.compile(
    r"_fwd_(?:grouped_)?kernel(?:_stage[12](?:_rope)?|_unified|_dense_prefill)?"
    r"|_fwd_(?:none_)?diag_kernel|_verify_(?:mla_)?(?:prefix_stage1|combine_stage2)"
)
_ATTN = re.compile(
    r"attention|attn|flash|fmha|sdpa|mha_|mla|paged_?kv|batch_?prefill|batch_?decode|prefillwith"
    r"|decodewith|merge_?state|decode_?kernel_?split|flashinfer.*(?:prefill|decode)|cascade|fwd_?splitkv"
    r"|xqa|trtllm_?(?:gen|context)",
    re.IGNORECASE,
)
_GEMM = re.compile(
    r"gemm|nvjet|cublas|cutlass|xmma|matmul|_mm_|^mm_|\bmm\b|splitkreduce|sm\d+_.*tensorop|wgmma"
    r"|\bhgemm|sgemm|dgemm|deep_?gemm|fp8_?(?:blockwise|scaled)|w8a8|marlin|gemv|linear",
    re.IGNORECASE,
)

# Launching ops and Python ranges: words that name the layer, not the kernel.
_OP_COMM = re.compile(
    r"nccl|all_?reduce|all_?gather|reduce_?scatter|all_to_all|c10d|communicat|custom_all_reduce"
    r"|tensor_model_parallel|parallel_state|distributed",
    re.IGNORECASE,
)
_OP_MOE = re.compile(r"moe|expert|router|fused_experts", re.IGNORECASE)
_OP_ATTN = re.compile(
    r"attention|attn|radix|flashinfer|flash_|mla|sdpa|kv_?cache|extend_attention", re.IGNORECASE
)
_OP_GEMM = re.compile(r"aten::(?:mm|addmm|bmm|matmul|linear|baddbmm)\b|linear|gemm|matmul", re.IGNORECASE)


@lru_cache(maxsize=65536)
def by_kernel_name(name: str) -> Category:
    """The category a kernel's own name tells; OTHER when it tells nothing (``_fwd_kernel``).
    Cached: a trace repeats a few hundred names millions of times, and C++ template names are long."""
    if _COMM.search(name):
        return Category.COMMUNICATION
    if _MOE.search(name):
        return Category.MOE
    if _TRITON_ATTN.fullmatch(name) or _ATTN.search(name):
        return Category.ATTENTION
    if _GEMM.search(name):
        return Category.GEMM
    return Category.OTHER


@lru_cache(maxsize=65536)
def by_op_name(name: str) -> Category:
    """The category of the op or Python frame that launched a kernel; OTHER when it says nothing."""
    if _OP_COMM.search(name):
        return Category.COMMUNICATION
    if _OP_MOE.search(name):
        return Category.MOE
    if _OP_ATTN.search(name):
        return Category.ATTENTION
    if _OP_GEMM.search(name):
        return Category.GEMM
    return Category.OTHER
