"""What SGLang's startup lines and launch arguments say that is no phase: the note vocabulary of
:mod:`eagletui.core.logs.seam` in SGLang's words.

Every wording here is the one the wheels print (checked in 0.5.17 and 0.5.23, and the 0.4.x spelling
where it differs):

* the custom all-reduce refusing itself (``distributed/device_communicators/custom_all_reduce_utils.py``
  ``can_use_custom_all_reduce_with_nvlink``: ``{cls} is disabled because it's not supported on more than
  two PCIe-only GPUs``, ``… spans across nodes``, ``… due to an unsupported world size``, ``… lacks GPU
  P2P capability``; ``cls`` is ``CustomAllreduce`` or ``CustomAllReduceV2``, and 0.4.x wrote ``Custom
  allreduce``), or failing (``parallel_state.py``: ``Setup Custom allreduce failed with …``);
* FlashInfer's all-reduce fusion (``layers/flashinfer_comm_fusion.py``: ``FlashInfer AllReduce Fusion
  enabled and workspace initialized: backend=…``, and the warnings that turn it off);
* the PCIe-IPC all-reduce of 0.5.23 failing (``Setup FlashInfer PCIe-IPC allreduce failed with …``);
* ``sglang is using nccl==2.21.5`` (``pynccl.py``);
* the weight loader: the shard bar's description (``model_loader/weight_utils.py``: ``Multi-thread loading
  shards`` from ``buffered_multi_thread_safetensors_weights_iterator``, ``Loading safetensors checkpoint
  shards`` from the one-thread iterator, ``… using Fastsafetensor loader``), and 0.5.17's warning that
  checkpoint prefetch forced one thread (``model_loader/loader.py``; 0.5.23 logs it at debug level);
* the batch sizes a capture covers (``Capture … CUDA graph begin. backend=full, num_tokens_per_req=4,
  bs=[1, 2, …]``, 0.5.16+);
* adaptive speculation (``speculative/adaptive_spec_params.py``, 0.5.17 and 0.5.23:
  ``AdaptiveSpeculativeParams initialized: steps=3, candidate_steps=[1, 3, 7]``, ``Adaptive spec
  params updated: steps 3 -> 1 (ema_accept_len=0.42)``, every swap of the active tier ``Switch adaptive
  runtime state: steps 3 -> 1, draft_tokens 4 -> 2``, each extra tier's capture ``Built adaptive runtime
  state steps=7: elapsed=4.10s, mem=0.52GB`` and the silent fall-back ``speculative_adaptive disabled:
  speculative_eagle_topk=4 (only topk=1 is supported). Falling back to static speculative params.``).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from eagletui.core.logs.seam import SCAN_LIMIT, LaunchFacts, Note, Rec

_CUSTOM_OFF: tuple[tuple[str, str], ...] = (
    ("not supported on more than two PCIe-only GPUs", "pcie"),
    ("process group spans across nodes", "multi_node"),
    ("due to an unsupported world size", "world_size"),
    ("lacks GPU P2P capability or P2P test failed", "no_p2p"),
)
_IMPL_RE = re.compile(r"(CustomAllReduceV2|CustomAllreduce|Custom allreduce|QuickAllReduce)")
_FUSION_ON_RE = re.compile(r"FlashInfer AllReduce Fusion enabled and workspace initialized: backend=(\w+)")
_FUSION_OFF = (
    "Skipping allreduce fusion",
    "FlashInfer AllReduce fusion disabled",
    "Disabling flashinfer allreduce fusion",
    "allreduce fusion disabled globally",
    "unified allreduce_fusion API is not available",
)
_NCCL_RE = re.compile(r"sglang is using nccl==(\d+\.\d+\.\d+\S*)")
_BS_LIST_RE = re.compile(r"\bbs=\[([\d,\s]{1,4000})\]")
_ADAPTIVE_INIT_RE = re.compile(
    r"AdaptiveSpeculativeParams initialized: steps=(\d+), candidate_steps=\[([\d,\s]*)\]"
)
_ADAPTIVE_UPD_RE = re.compile(
    r"Adaptive spec params updated: steps (\d+) -> (\d+)(?: \(ema_accept_len=(-?[\d.]+)\))?"
)
# ``speculative/eagle_worker_v2.py`` (0.5.17 L1382, 0.5.23 L1866): every swap of the active tier, the
# batch-size routing's as well as the EMA's
_ADAPTIVE_SWITCH_RE = re.compile(
    r"Switch adaptive runtime state: steps (\d+) -> (\d+), draft_tokens (\d+) -> (\d+)"
)
# ``build_adaptive_runtime_state`` (0.5.17 L1368, 0.5.23 L1852): the graphs and workspace of one extra tier
_ADAPTIVE_BUILT_RE = re.compile(
    r"Built adaptive runtime state steps=(\d+): elapsed=(\d+(?:\.\d+)?)s, mem=(-?\d+(?:\.\d+)?)GB"
)
# ``arg_groups/speculative_hook.py`` ``_maybe_disable_adaptive`` (0.5.23 L1374): the flag is dropped, the
# server runs static steps and says so only here
_ADAPTIVE_OFF_RE = re.compile(r"speculative_adaptive disabled: (.{1,300}?)\. Falling back to static speculative")


#: Cheap substrings: a message holding none of them states no note (most lines).
_MARKS = ("llreduce", "lReduce", "nccl==", "daptive", "prefetch-checkpoints", "PCIe-IPC")


def _ints(text: str, limit: int = 512) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if part.isdigit() and len(part) < 7:
            out.append(int(part))
        if len(out) >= limit:
            break
    return out


def _loader_mode(desc: str) -> str:
    low = desc.lower()
    if "multi-thread" in low:
        return "multithread"
    if "fastsafetensor" in low:
        return "fastsafetensors"
    if "loading safetensors checkpoint shards" in low or "loading pt checkpoint shards" in low:
        return "single"
    return "other"


def notes(rec: Rec) -> list[Note]:
    """The notes of one non-serving record (see the module docstring)."""
    tag = rec.tag
    if tag == "bar_shards":
        desc = rec.msg[:SCAN_LIMIT].split(":", 1)[0].strip()
        if not desc or "%" in desc:
            return []
        return [("load", "loader", {"mode": _loader_mode(desc), "desc": desc[:80]})]
    if tag == "load_end":
        el = rec.data.get("elapsed")
        typ = str(rec.data.get("type", ""))
        if el is None or "Eagle" in typ or "MTP" in typ or "NextN" in typ:
            return []  # the target's own elapsed is what the load's tail is measured against
        return [("load", "end", {"elapsed": el, "draft": False})]
    msg = rec.msg[:SCAN_LIMIT]
    if tag == "capture_begin":
        m = _BS_LIST_RE.search(msg)
        if m is None:
            return []
        bs = _ints(m.group(1))
        if not bs or rec.data.get("draft"):
            return []  # the target's decode/verify sizes are the ones a running batch is checked against
        return [("capture", "sizes", {"draft": False, "what": rec.data.get("what", ""), "bs": bs})]
    if not any(mark in msg for mark in _MARKS):
        return []
    out: list[Note] = []
    if " is disabled " in msg:
        for needle, reason in _CUSTOM_OFF:
            if needle in msg:
                impl = _IMPL_RE.search(msg)
                out.append(
                    (
                        "allreduce",
                        "custom",
                        {"on": False, "reason": reason, "impl": impl.group(1) if impl else ""},
                    )
                )
                return out
    if "Setup Custom allreduce failed" in msg:
        return [("allreduce", "custom", {"on": False, "reason": "setup_failed", "impl": "CustomAllreduce"})]
    m = _FUSION_ON_RE.search(msg)
    if m is not None:
        return [("allreduce", "fusion", {"on": True, "backend": m.group(1), "reason": ""})]
    if any(w in msg for w in _FUSION_OFF):
        return [("allreduce", "fusion", {"on": False, "backend": None, "reason": msg.strip()[:200]})]
    if "Setup FlashInfer PCIe-IPC allreduce failed" in msg:
        return [("allreduce", "pcie_ipc", {"on": False, "reason": msg.strip()[:200]})]
    m = _NCCL_RE.search(msg)
    if m is not None:
        return [("allreduce", "nccl", {"version": m.group(1)})]
    if "--weight-loader-prefetch-checkpoints is enabled; falling back to single-threaded" in msg:
        return [("load", "fallback", {"reason": "prefetch"})]
    m = _ADAPTIVE_UPD_RE.search(msg)
    if m is not None:
        ema = float(m.group(3)) if m.group(3) else None
        return [("adaptive", "update", {"from": int(m.group(1)), "to": int(m.group(2)), "ema": ema})]
    m = _ADAPTIVE_INIT_RE.search(msg)
    if m is not None:
        return [("adaptive", "init", {"steps": int(m.group(1)), "candidates": _ints(m.group(2), 64)})]
    return out + _adaptive_state(msg)


def _adaptive_state(msg: str) -> list[Note]:
    """A swap of adaptive speculation's active tier, an extra tier's capture, or the fall-back to static
    steps (see the regexes' comments for where the wheel prints each)."""
    m = _ADAPTIVE_SWITCH_RE.search(msg)
    if m is not None:
        a, b, c, d = (int(g) for g in m.groups())
        return [("adaptive", "switch", {"from": a, "to": b, "draft_from": c, "draft_to": d})]
    m = _ADAPTIVE_BUILT_RE.search(msg)
    if m is not None:
        return [("adaptive", "built", {"steps": int(m.group(1)), "elapsed": float(m.group(2)), "mem_gb": float(m.group(3))})]
    m = _ADAPTIVE_OFF_RE.search(msg)
    if m is not None:
        return [("adaptive", "fallback", {"reason": m.group(1).strip()})]
    return []


# ----------------------------------------------------------------------------------- launch args


def _truthy(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return v is True or (isinstance(v, int) and not isinstance(v, bool) and v > 0)


def _pos_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int) and v > 0:
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip()) or None
    return None


def _int_list(v: Any) -> list[int] | None:
    if isinstance(v, list | tuple):
        out = [x for x in v if isinstance(x, int) and not isinstance(x, bool) and x > 0]
        return sorted(set(out))[:512] or None
    return None


_DECODE_CFG_RE = re.compile(r"decode=PhaseConfig\((.{0,2000}?)\)")
_CFG_MAX_BS_RE = re.compile(r"\bmax_bs=(\d+)")
_CFG_BS_RE = re.compile(r"\bbs=\[([\d,\s]{1,4000})\]")
_CFG_BACKEND_RE = re.compile(r"\bbackend='(\w+)'")


def _extra_config(v: Any) -> dict[str, Any]:
    if isinstance(v, dict):
        return v
    if isinstance(v, str) and v.strip():
        text = v.strip()[:10_000]
        try:
            val = json.loads(text)
        except ValueError:
            try:
                val = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return {}
        return val if isinstance(val, dict) else {}
    return {}


def notes_from_args(facts: LaunchFacts) -> list[Note]:
    """The loader, capture, all-reduce and adaptive settings of a ``server_args`` record."""
    a = facts.raw
    if not a:
        return []
    out: list[Note] = []
    # capture: 0.5.14+ names it cuda_graph_max_bs_decode (0.5.17 also prints the resolved
    # cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend='full', max_bs=8, bs=[…])))
    max_bs = _pos_int(a.get("cuda_graph_max_bs_decode")) or _pos_int(a.get("cuda_graph_max_bs"))
    bs = _int_list(a.get("cuda_graph_bs_decode")) or _int_list(a.get("cuda_graph_bs"))
    disabled = _truthy(a.get("disable_cuda_graph")) or _truthy(a.get("disable_decode_cuda_graph"))
    cfg = a.get("cuda_graph_config")
    if isinstance(cfg, str):
        m = _DECODE_CFG_RE.search(cfg)
        if m is not None:
            inner = m.group(1)
            mb = _CFG_MAX_BS_RE.search(inner)
            if mb and max_bs is None:
                max_bs = int(mb.group(1))
            lb = _CFG_BS_RE.search(inner)
            if lb and bs is None:
                bs = _ints(lb.group(1)) or None
            be = _CFG_BACKEND_RE.search(inner)
            if be and be.group(1) == "disabled":
                disabled = True
    if a.get("cuda_graph_backend_decode") == "disabled":
        disabled = True
    cap = {k: v for k, v in (("max_bs", max_bs), ("bs", bs), ("disabled", disabled)) if v}
    if cap:
        out.append(("capture", "config", cap))
    extra = _extra_config(a.get("model_loader_extra_config"))
    threads = _pos_int(extra.get("num_threads"))
    mt = extra.get("enable_multithread_load")
    # only what differs from the defaults is said (a note is recorded once per launch: kept small)
    fmt_name = str(a.get("load_format") or "auto")
    load = {
        "threads": threads,
        "multithread": mt if isinstance(mt, bool) else None,
        "prefetch": _truthy(a.get("weight_loader_prefetch_checkpoints")),
        "load_format": fmt_name if fmt_name != "auto" else None,
    }
    load = {k: v for k, v in load.items() if v is not None and v is not False}
    if load:
        out.append(("load", "config", load))
    backend = a.get("flashinfer_allreduce_fusion_backend")
    device = str(a.get("device") or "cuda")
    flags = {
        "custom_off": _truthy(a.get("disable_custom_all_reduce")),
        "fusion": _truthy(a.get("enable_flashinfer_allreduce_fusion")) or bool(backend),
        "fusion_backend": str(backend) if backend else None,
        "nvls": _truthy(a.get("enable_nccl_nvls")),
        "symm_mem": _truthy(a.get("enable_symm_mem")),
        "torch_symm_mem": _truthy(a.get("enable_torch_symm_mem")),
        "mscclpp": _truthy(a.get("enable_mscclpp")),
        "device": device if device != "cuda" else None,
    }
    flags = {k: v for k, v in flags.items() if v}
    if flags:
        out.append(("allreduce", "flags", flags))
    if _truthy(a.get("speculative_adaptive")):
        conf = a.get("speculative_adaptive_config")
        out.append(("adaptive", "config", {"on": True, "config": str(conf) if conf else None}))
    return out
