"""What a file eagletui's own hints ask users for says, when it is no server log: the output of
``nvidia-smi topo -m`` (the GPUs' link matrix) or an ``NCCL_DEBUG=INFO`` log (transports, channels).

``eagletui parse`` reads such a file as a log first; a file no format recognises is then tried here, so
it says what it shows instead of "unknown". The readers are the ones eagletui's host facts use
(:mod:`eagletui.core.host.topology`, :mod:`eagletui.core.host.nccl`).
"""

from __future__ import annotations

from typing import Any

from eagletui.core.host.nccl import summarize
from eagletui.core.host.topology import parse_topo

#: At most this much of the file is read (both outputs are small; a huge file is a log).
READ_LIMIT = 8 << 20


def read_host_file(path: str) -> dict[str, Any] | None:
    """``{"kind", "says", …}`` for a topology matrix or an NCCL debug log, else None."""
    if path == "-" or path.endswith(".gz"):
        return None
    try:
        with open(path, "rb") as f:
            text = f.read(READ_LIMIT).decode("utf-8", "replace")
    except OSError:
        return None
    topo = parse_topo(text)
    if topo.seen:
        return {"kind": "nvidia-smi topo -m", "says": topo.describe(), **topo.to_json()}
    nccl = summarize(text.splitlines())
    if nccl.seen and (nccl.version or nccl.transports or nccl.ring_channels is not None):
        transports = dict(nccl.transports.most_common())
        parts = [f"NCCL {nccl.version}" if nccl.version else "NCCL"]
        if nccl.ranks:
            parts.append(f"{nccl.ranks} ranks")
        if transports:
            parts.append("transports " + ", ".join(f"{t} ×{n}" for t, n in transports.items()))
        if nccl.ring_channels is not None:
            parts.append(f"{nccl.ring_channels} ring channels")
        if nccl.coll_channels is not None:
            parts.append(f"{nccl.coll_channels} coll channels")
        if nccl.nvls_channels:
            parts.append(f"NVLS {nccl.nvls_channels} channels")
        if nccl.network:
            parts.append(f"network {nccl.network}")
        return {
            "kind": "NCCL_DEBUG=INFO",
            "says": "; ".join(parts),
            "version": nccl.version,
            "ranks": nccl.ranks,
            "transports": transports,
            "ring_channels": nccl.ring_channels,
            "coll_channels": nccl.coll_channels,
            "nvls_channels": nccl.nvls_channels,
            "network": nccl.network,
            "init_seconds": nccl.init_seconds,
        }
    return None
