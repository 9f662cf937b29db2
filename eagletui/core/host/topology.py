"""``nvidia-smi topo -m``: how each pair of GPUs is connected, read from the matrix it prints.

The matrix is NVIDIA's (driver 450 … 580 print the same layout): a header naming the columns (``GPU0 GPU1
… NIC0 … CPU Affinity NUMA Affinity GPU NUMA ID``, sometimes wrapped in an underline escape), one row per
device whose cells are ``X`` (itself), ``NV#`` (a bonded set of # NVLinks) or a PCIe path: ``PIX`` (at most
one PCIe bridge), ``PXB`` (several bridges), ``PHB`` (a host bridge, the CPU), ``NODE`` (host bridges within
a NUMA node), ``SYS`` (across NUMA nodes; ``SOC`` on old drivers). Pure: text in, a :class:`Topology` out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_ESC_RE = re.compile(r"\x1b\[[0-9;]*m")
_DEV_RE = re.compile(r"^(GPU\d+|NIC\d+|mlx\S*)$")
_LINK_RE = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|CNS|NS)$")
#: PCIe paths from the shortest to the longest (a worse path comes later)
PCIE_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC")
MAX_DEVICES = 64

_WORDS = {
    "PIX": "PCIe through at most one bridge",
    "PXB": "PCIe through several bridges",
    "PHB": "PCIe through the CPU's host bridge",
    "NODE": "PCIe across host bridges of one NUMA node",
    "SYS": "PCIe across NUMA nodes (the CPU interconnect)",
    "SOC": "PCIe across CPU sockets",
}


@dataclass
class Topology:
    """The GPUs of the matrix and the link between each pair (``links[(0, 1)] = "NV18"``)."""

    gpus: list[int] = field(default_factory=list)
    links: dict[tuple[int, int], str] = field(default_factory=dict)

    @property
    def seen(self) -> bool:
        return len(self.gpus) > 0

    def link(self, a: int, b: int) -> str | None:
        return self.links.get((a, b)) or self.links.get((b, a))

    def fabric(self, gpus: list[int] | None = None) -> str | None:
        """``nvlink`` when every pair of ``gpus`` (default: all) has NVLink, ``partial_nvlink`` when some
        do, ``pcie`` when none do, ``single`` for one GPU; None when the matrix does not cover them."""
        ids = self.gpus if gpus is None else gpus
        if len(ids) <= 1:
            return "single" if ids else None
        kinds = []
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                link = self.link(a, b)
                if link is None:
                    return None
                kinds.append(link.startswith("NV"))
        if all(kinds):
            return "nvlink"
        return "partial_nvlink" if any(kinds) else "pcie"

    def worst_pcie(self, gpus: list[int] | None = None) -> str | None:
        """The longest PCIe path between two of ``gpus`` (``SYS`` beats ``NODE`` beats ``PHB`` …)."""
        ids = self.gpus if gpus is None else gpus
        worst: str | None = None
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                link = self.link(a, b)
                if link in PCIE_ORDER and (worst is None or PCIE_ORDER.index(link) > PCIE_ORDER.index(worst)):
                    worst = link
        return worst

    def describe(self, gpus: list[int] | None = None) -> str:
        """``NV18 between all 2 GPUs`` / ``no NVLink: PCIe, worst path SYS (PCIe across NUMA nodes …)``."""
        ids = self.gpus if gpus is None else gpus
        fab = self.fabric(ids)
        if fab == "nvlink":
            kinds = sorted({self.link(a, b) or "" for i, a in enumerate(ids) for b in ids[i + 1 :]})
            return f"{'/'.join(kinds)} between all {len(ids)} GPUs"
        worst = self.worst_pcie(ids)
        path = f"worst path {worst}, {_WORDS.get(worst, worst)}" if worst else "PCIe"
        if fab == "partial_nvlink":
            return f"NVLink between some of the {len(ids)} GPUs only; the rest {path}"
        if fab == "pcie":
            return f"no NVLink between the {len(ids)} GPUs: {path}"
        return "one GPU" if fab == "single" else "the matrix does not cover these GPUs"

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": list(self.gpus),
            "links": {f"{a}-{b}": v for (a, b), v in sorted(self.links.items()) if a < b},
            "fabric": self.fabric(),
        }

    @classmethod
    def from_json(cls, data: Any) -> Topology:
        """The inverse of :meth:`to_json` (a recording's host facts); bad parts are dropped."""
        topo = cls()
        if not isinstance(data, dict):
            return topo
        gpus = data.get("gpus")
        if isinstance(gpus, list):
            topo.gpus = [
                g for g in gpus if isinstance(g, int) and not isinstance(g, bool) and 0 <= g < MAX_DEVICES
            ]
        links = data.get("links")
        if isinstance(links, dict):
            for key, v in list(links.items())[: MAX_DEVICES * MAX_DEVICES]:
                a, _, b = str(key).partition("-")
                if a.isdigit() and b.isdigit() and isinstance(v, str) and _LINK_RE.match(v):
                    topo.links[(int(a), int(b))] = v
                    topo.links[(int(b), int(a))] = v
        return topo


def parse_topo(text: str) -> Topology:
    """The GPU-to-GPU part of ``nvidia-smi topo -m`` (NIC rows and affinity columns are ignored)."""
    topo = Topology()
    cols: list[str] = []
    for raw in text.splitlines()[:400]:
        line = _ESC_RE.sub("", raw[:4000]).strip()
        if not line:
            continue
        cells = line.split()
        if not cols:
            if (
                cells
                and cells[0].startswith("GPU")
                and len(cells) > 1
                and cells[1].startswith(("GPU", "NIC", "CPU"))
            ):
                cols = []
                for c in cells:
                    if not _DEV_RE.match(c):
                        break
                    cols.append(c)
            continue
        if line.startswith("Legend"):
            break
        name = cells[0]
        if not name.startswith("GPU") or not name[3:].isdigit():
            continue
        row = int(name[3:])
        if row >= MAX_DEVICES:
            continue
        topo.gpus.append(row)
        for col, val in zip(cols, cells[1:], strict=False):
            if not col.startswith("GPU") or not _LINK_RE.match(val):
                continue
            other = int(col[3:])
            if other != row and val != "X":
                topo.links[(row, other)] = val
    return topo
