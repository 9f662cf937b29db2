"""The hints of the server-neutral diagnoses (:mod:`eagletui.core.diagnosis.fold`) in SGLang's words.

Each names only flags and variables of the running version. The version facts, read in the wheels of
0.5.13 … 0.5.23 (``tools/flagtables`` lists them) and kept here as ranges:

* the decode CUDA-graph sizes are ``--cuda-graph-max-bs-decode`` / ``--cuda-graph-bs-decode`` from 0.5.14
  on (``--cuda-graph-max-bs`` / ``--cuda-graph-bs`` stay as deprecated aliases until 0.5.19, then stop:
  an ambiguous prefix); before 0.5.14 only ``--cuda-graph-max-bs`` / ``--cuda-graph-bs``;
* the multithreaded safetensors loader is on by default in every one of them
  (``model_loader/loader.py``: ``extra_config.get("enable_multithread_load", True)``, 8 threads,
  ``DEFAULT_NUM_THREADS``), and ``--model-loader-extra-config '{"enable_multithread_load": true,
  "num_threads": N}'`` sets it; from 0.5.16 on ``--weight-loader-prefetch-checkpoints`` (0.5.23 also a
  startup prefetch, ``--startup-weight-load-mode overlap``) falls back to one thread unless one of those
  two keys is given explicitly;
* FlashInfer's all-reduce fusion is ``--enable-flashinfer-allreduce-fusion`` in 0.5.13 and
  ``--flashinfer-allreduce-fusion-backend auto`` from 0.5.14 on (the old switch a deprecated alias); it
  needs SM90 or SM10x GPUs (``_resolve_backend``);
* the PCIe-IPC all-reduce for hosts without NVLink is ``SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1`` from 0.5.21 on
  (``distributed/device_communicators/pcie_ipc_ar.py``, world sizes 2, 4, 8);
* ``--enable-nccl-nvls``, ``--enable-torch-symm-mem``, ``--speculative-draft-window-size``,
  ``--speculative-token-map``, ``--speculative-adaptive(-config)`` and ``--chat-template`` exist in all of
  them.
"""

from __future__ import annotations

from typing import Any

from eagletui.core.logs.formats.sglang.failures import version_at_least


def _at_least(version: str | None, v: tuple[int, int, int]) -> bool | None:
    return version_at_least(version, v) if version else None


def capture_flags(version: str | None) -> tuple[str, str]:
    """(max batch size flag, batch size list flag) for the decode CUDA graphs of ``version``."""
    new = _at_least(version, (0, 5, 14))
    if new is True:
        return "--cuda-graph-max-bs-decode", "--cuda-graph-bs-decode"
    if new is False:
        return "--cuda-graph-max-bs", "--cuda-graph-bs"
    return (
        "--cuda-graph-max-bs-decode (0.5.14+; --cuda-graph-max-bs before)",
        "--cuda-graph-bs-decode (0.5.14+; --cuda-graph-bs before)",
    )


def fusion_flag(version: str | None) -> str:
    new = _at_least(version, (0, 5, 14))
    if new is True:
        return "--flashinfer-allreduce-fusion-backend auto"
    if new is False:
        return "--enable-flashinfer-allreduce-fusion"
    return "--flashinfer-allreduce-fusion-backend auto (0.5.14+; --enable-flashinfer-allreduce-fusion before)"


def _threads(ctx: dict[str, Any]) -> int:
    n = ctx.get("threads")
    return n if isinstance(n, int) and 1 < n <= 64 else 16


#: The oldest release whose flags these hints were checked against; older ones get no flag names.
CHECKED_FROM = (0, 5, 13)


def advice(topic: str, version: str | None, ctx: dict[str, Any]) -> str:
    """See :meth:`eagletui.core.logs.seam.LogFormat.advice`."""
    old = _at_least(version, CHECKED_FROM) is False
    if old and topic in ("loader_threads", "loader_prefetch"):
        return "SGLang 0.5.13 and newer load the shards with 8 threads by default (this log's version is older)"
    if topic == "loader_threads":
        n = _threads(ctx)
        extra = f'--model-loader-extra-config \'{{"enable_multithread_load": true, "num_threads": {n}}}\''
        if ctx.get("network"):
            return f"{extra} (on network storage fewer threads can win: try 4 and {n})"
        return extra
    if topic == "loader_prefetch":
        n = _threads(ctx)
        return (
            f"checkpoint prefetch makes this version load with one thread: add --model-loader-extra-config "
            f'\'{{"enable_multithread_load": true, "num_threads": {n}}}\' to keep the threads (local NVMe), '
            "or drop --weight-loader-prefetch-checkpoints"
        )
    if topic == "capture_sizes":
        max_flag, list_flag = capture_flags(version)
        want = ctx.get("want")
        if isinstance(want, int) and want > 0:
            return f"{max_flag} {want} (or add {want} to {list_flag}); each size adds capture time and a little memory"
        return f"{max_flag} / {list_flag}"
    if topic == "allreduce_alternatives":
        return _allreduce(version, ctx)
    if topic == "draft_mismatch":
        algo = ctx.get("algorithm") or "?"
        arch = ctx.get("draft_arch")
        parts = [
            f"check that the draft was trained for this target and algorithm (--speculative-algorithm {algo}"
            + (f", draft architecture {arch}" if arch else "")
            + "; an EAGLE-3 draft needs EAGLE3, an EAGLE draft EAGLE)",
            "a draft with its own vocabulary needs its mapping (--speculative-token-map for EAGLE; an EAGLE-3 "
            "draft carries d2t in its weights)",
        ]
        return "; ".join(parts)
    if topic == "draft_context":
        mpe = ctx.get("draft_context")
        return (
            f"the draft was trained up to {mpe} positions: keep prompts below that, use a draft trained on "
            "longer contexts, or bound its attention with --speculative-draft-window-size"
        )
    if topic == "chat_template":
        return (
            "benchmark with the prompt format the draft was trained on (the chat template, --chat-template "
            "when the tokenizer has none): a bare prompt understates acceptance"
        )
    if topic == "spec_settings":
        steps = ctx.get("steps")
        topk = ctx.get("topk")
        out = []
        if isinstance(steps, int):
            out.append(f"--speculative-num-steps {steps}")
        if isinstance(topk, int):
            out.append(f"--speculative-eagle-topk {topk}")
        if ctx.get("draft_tokens"):
            out.append(f"--speculative-num-draft-tokens {ctx['draft_tokens']}")
        return " ".join(out)
    if topic == "adaptive_config":
        return "--speculative-adaptive --speculative-adaptive-config FILE (the exported JSON)"
    return ""


def _allreduce(version: str | None, ctx: dict[str, Any]) -> str:
    """The all-reduce paths this version offers for the host's topology (``ctx["fabric"]``: ``nvlink``,
    ``partial_nvlink``, ``pcie``; ``ctx["tp"]``; ``ctx["custom_on"]``, ``ctx["fusion_on"]``)."""
    fabric = ctx.get("fabric")
    tp = ctx.get("tp") or 0
    if ctx.get("device") not in (None, "cuda"):
        return ""  # NPU/XPU/ROCm hosts have other collectives; none of these apply
    out: list[str] = []
    if fabric in ("pcie", "partial_nvlink") and tp > 2:
        ipc = _at_least(version, (0, 5, 21))
        if ipc is True and tp in (2, 4, 8):
            out.append(
                "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1 (FlashInfer's PCIe-IPC all-reduce for decode sizes)"
            )
        elif ipc is None:
            out.append("SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1 if the host runs 0.5.21 or newer")
        out.append("NCCL_ALGO / NCCL_PROTO (measure: LL for small decode messages)")
        out.append("fewer GPUs per replica (tp 2 can use the custom all-reduce over PCIe P2P)")
    elif fabric == "nvlink":
        if not ctx.get("custom_on"):
            out.append("the custom all-reduce (drop --disable-custom-all-reduce)")
        out.append("--enable-nccl-nvls (NVSwitch hosts)")
        out.append("--enable-torch-symm-mem")
    if not ctx.get("fusion_on") and _at_least(version, CHECKED_FROM) is not False:
        out.append(f"{fusion_flag(version)} (fuses the all-reduce into the RMSNorm; SM90/SM10x GPUs)")
    return "; ".join(out)
