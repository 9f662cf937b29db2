"""Which path decode's all-reduce takes, said in one line with what it rests on, and what else the
server's version offers on this topology.

Evidence, strongest first: what the server logged about its own all-reduce (``allreduce`` notes: the
custom all-reduce disabling itself and why, fusion enabled or not, the NCCL version), the launch's
switches (``allreduce`` ``flags``), ``nvidia-smi topo -m`` from the preflight (``topology``), the
``NCCL INFO`` summary (``nccl`` ``summary``: transports, channels, environment) and a step profile's
communication share. The rule follows SGLang's own choice (``parallel_state.py``: the custom all-reduce
serves a message when it is enabled and ``should_custom_ar`` holds, which without NVLink is only at two
GPUs; everything else goes to NCCL); a server that logged nothing about it gets "nothing disabled it".
"""

from __future__ import annotations

from typing import Any

from eagletui.core.diagnosis.fold import Diagnosis, LaunchObs, Note, as_dict
from eagletui.core.host.topology import Topology
from eagletui.core.wording import part_words

_REASONS = {
    "pcie": "not supported on more than two PCIe-only GPUs",
    "multi_node": "the group spans nodes",
    "world_size": "unsupported number of GPUs",
    "no_p2p": "no GPU P2P between the GPUs",
    "setup_failed": "its setup failed",
    "flag": "--disable-custom-all-reduce",
}


def _gpus(o: LaunchObs, tp: int) -> list[int]:
    vis = o.env.get("CUDA_VISIBLE_DEVICES", "")
    ids = [int(x) for x in vis.split(",") if x.strip().isdigit()] if vis else []
    return ids[:tp] if len(ids) >= tp else list(range(tp))


def _comm_share(o: LaunchObs) -> float | None:
    prof = _last_profile(o)
    return _share(prof) if prof is not None else None


def _last_profile(o: LaunchObs) -> dict[str, Any] | None:
    """The launch's latest step profile that has categories."""
    return next((p for p in reversed(o.profiles) if isinstance(p.get("categories"), dict)), None)


def _share_words(o: LaunchObs, share: float) -> str:
    """Communication's share of what was profiled, in its unit: a speculative server's profile is of
    whole cycles (draft + verify + draft extend), not of a decode step; its verify part and the
    communication in it follow ("verify 30.00 ms, of which 25.00 ms communication")."""
    prof = _last_profile(o) or {}
    if prof.get("unit") != "cycle":
        return f" Communication is {share * 100:.0f} % of a decode step."
    text = f" Communication is {share * 100:.0f} % of a speculative cycle."
    parts = prof.get("parts")
    verify = parts.get("verify") if isinstance(parts, dict) else None
    return text + (f" {part_words('Verify', verify)}." if isinstance(verify, dict) else "")


def _share(prof: dict[str, Any]) -> float | None:
    """Communication's share of a profile's kernel time (None: no communication figure)."""
    total = 0.0
    comm = None
    for name, v in prof["categories"].items():
        ms = v.get("ms") if isinstance(v, dict) else v
        if isinstance(ms, int | float):
            total += ms
            if name == "communication":
                comm = float(ms)
    return comm / total if comm is not None and total > 0 else None


def allreduce_diagnoses(o: LaunchObs, fmt: Any) -> list[Diagnosis]:
    tp = o.tp
    if tp is None or tp == 1:
        return []
    if "allreduce" not in getattr(fmt, "note_topics", ()):
        return []  # this server's log format does not read its all-reduce lines: no verdict from silence
    custom = o.note("allreduce", "custom")
    flags = o.note("allreduce", "flags")
    fl = flags.value if flags is not None and isinstance(flags.value, dict) else {}
    nccl = o.note("nccl", "summary")
    ns = nccl.value if nccl is not None and isinstance(nccl.value, dict) else {}
    topo = Topology.from_json(o.host.get("topology")) if o.host.get("topology") else Topology()
    gpus = _gpus(o, tp)
    fabric = topo.fabric(gpus) if topo.seen else None
    evidence: list[str] = []
    reason = _custom_reason(custom, fl, evidence)
    if fabric is None and reason == "pcie":
        fabric = "pcie"  # the server itself found no NVLink across the group
    if topo.seen:
        evidence.append(f"topo -m: {topo.describe(gpus)} (preflight)")
    custom_on = reason is None and (fabric in ("nvlink", None) or tp == 2)
    fusion_on = _fusion_on(o.note("allreduce", "fusion"), fl, evidence)
    # --- NCCL
    kinds = [k for k in ns.get("transport_kinds") or [] if isinstance(k, str)]
    env = {**as_dict(ns.get("env")), **{k: v for k, v in o.env.items() if k.startswith("NCCL_")}}
    algo = env.get("NCCL_ALGO")
    proto = env.get("NCCL_PROTO")
    _nccl_evidence(ns, o.note("allreduce", "nccl"), evidence)
    ipc = o.env.get("SGLANG_ENABLE_PCIE_IPC_ALLREDUCE", "").strip().lower() in ("1", "true", "yes", "on")
    ipc_on = ipc and o.note("allreduce", "pcie_ipc") is None  # a pcie_ipc note: the server turned it off
    # --- the path
    device = str(fl.get("device") or "cuda")
    link = _link_words(fabric, kinds, topo, gpus, device)
    path = _path_words(link, device, algo, proto, ipc_on=ipc_on, custom_on=custom_on, fusion_on=fusion_on)
    if not ipc_on and custom_on and custom is None and reason is None:
        evidence.append("nothing in the log disabled the custom all-reduce")
    # short sentences, one fact each (issue 33 item 19: "(tp 8): …; custom all-reduce off: …" read badly)
    off = f" Custom all-reduce is off: {_REASONS.get(reason or '', reason)}." if reason else ""
    share = _comm_share(o)
    text = f"decode all-reduce at tp {tp}: {path}.{off}"
    if share is not None:
        text += _share_words(o, share)
        evidence.append("step profile (profile)")
    alt = fmt.advice(
        "allreduce_alternatives",
        o.version,
        {
            "fabric": fabric or ("pcie" if reason == "pcie" else None),
            "tp": tp,
            "custom_on": custom_on,
            "fusion_on": fusion_on,
            "device": device,
        },
    )
    level = "warn" if (share is not None and share >= 0.4) or (reason == "pcie" and tp > 2) else "info"
    return [
        Diagnosis(
            kind="allreduce",
            text=text,
            evidence="; ".join(evidence) or "the launch's tp only",
            hint=("this version also offers: " + alt) if alt else "",
            source="log",
            level=level,
            data={
                "tp": tp,
                "fabric": fabric,
                "custom": custom_on,
                "custom_reason": reason,
                "fusion": fusion_on,
                "pcie_ipc": ipc_on,
                "nccl_transports": kinds,
                "nccl_algo": algo,
                "comm_share": share,
            },
        )
    ]


def _custom_reason(custom: Note | None, fl: dict[str, Any], evidence: list[str]) -> str | None:
    """Why the custom all-reduce is off (a key of :data:`_REASONS`, or the log's words), None: nothing
    turned it off; its evidence goes to ``evidence``."""
    reason = None
    if custom is not None and isinstance(custom.value, dict) and custom.value.get("on") is False:
        reason = str(custom.value.get("reason") or "")
        evidence.append(
            f"'{custom.line[:160]}' (log)" if custom.line else f"custom all-reduce off: {reason} (log)"
        )
    elif fl.get("custom_off"):
        reason = "flag"
        evidence.append("--disable-custom-all-reduce in the launch's args (log)")
    return reason


def _fusion_on(fusion: Note | None, fl: dict[str, Any], evidence: list[str]) -> bool:
    """Whether the all-reduce is fused into the RMSNorm: the server's line, else the launch's args."""
    fusion_on = False
    if fusion is not None and isinstance(fusion.value, dict):
        fusion_on = bool(fusion.value.get("on"))
        evidence.append(
            f"fusion {'on, backend ' + str(fusion.value.get('backend')) if fusion_on else 'off'} (log)"
        )
    elif fl.get("fusion"):
        fusion_on = True
        evidence.append("fusion asked for in the launch's args; no line confirms it (log)")
    return fusion_on


def _nccl_evidence(ns: dict[str, Any], nver: Note | None, evidence: list[str]) -> None:
    """What NCCL said of itself: the ``NCCL INFO`` summary (version, transports, channels), else the
    version the server logged."""
    transports = ns.get("transports") if isinstance(ns.get("transports"), dict) else {}
    if ns:
        bits = []
        if ns.get("version"):
            bits.append(f"NCCL {ns['version']}")
        if transports:
            top = sorted(transports.items(), key=lambda kv: -kv[1])[:3]
            bits.append("via " + ", ".join(f"{k} ×{v}" for k, v in top))
        if ns.get("coll_channels") is not None:
            bits.append(f"{ns['coll_channels']} coll channels")
        evidence.append("NCCL INFO: " + ", ".join(bits) + " (log)")
    elif nver is not None and isinstance(nver.value, dict):
        evidence.append(f"NCCL {nver.value.get('version')} (log; NCCL_DEBUG=INFO shows its transports)")


def _path_words(
    link: str,
    device: str,
    algo: str | None,
    proto: str | None,
    *,
    ipc_on: bool,
    custom_on: bool,
    fusion_on: bool,
) -> str:
    """The path decode's all-reduce takes, in words: which implementation, over what link, fused or not."""
    if ipc_on:
        path = f"FlashInfer's PCIe-IPC all-reduce over {link} for decode-sized messages, NCCL for larger ones"
    elif custom_on:
        path = f"the custom all-reduce over {link} for decode-sized messages, NCCL for larger ones"
    elif device != "cuda":
        path = f"the {device} collective library over {link}"
    else:
        how = f"NCCL {algo.lower()}" if algo else "NCCL's own pick of ring or tree"
        if proto:
            how += f" {proto}"
        path = f"{how} over {link}"
    if fusion_on:
        path += ", fused into FlashInfer's RMSNorm"
    else:
        path += ", not fused"
    return path


def _link_words(
    fabric: str | None, kinds: list[str], topo: Topology, gpus: list[int], device: str = "cuda"
) -> str:
    """``NVLink`` / ``PCIe (SHM through host memory)`` / ``PCIe P2P`` … from the topology and NCCL."""
    if fabric == "nvlink":
        return "NVLink" + (" (P2P)" if "P2P" in kinds else "")
    worst = topo.worst_pcie(gpus) if topo.seen else None
    base = "PCIe" + (f" ({worst} paths)" if worst else "")
    if fabric == "partial_nvlink":
        base = "NVLink between some pairs and " + base
    if kinds:
        if "NET" in kinds:
            return base + ", NET transport for some peers (through the network stack: the ring's slowest hop)"
        if "SHM" in kinds and "P2P" in kinds:
            return (
                base
                + ", P2P for some peers and SHM transport (through host memory) for others: the ring's slowest hop"
            )
        if kinds[0] == "SHM":
            return base + ", SHM transport (through host memory)"
        if kinds[0] == "P2P":
            return base + ", P2P transport"
    if fabric is None and not kinds:
        if device != "cuda":
            return "an interconnect the log and host do not name"
        return "an interconnect the log and host do not name (the preflight's nvidia-smi topo -m and NCCL_DEBUG=INFO tell)"
    return base
