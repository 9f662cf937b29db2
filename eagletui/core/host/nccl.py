"""NCCL at a glance: what ``NCCL_DEBUG=INFO`` says about how the ranks talk, before any benchmark.

A change of ``NCCL_P2P_*``, ``NCCL_ALGO``, ``NCCL_PROTO`` or the channel counts shows up in these lines
at init (transport per peer, channels, NVLS on or off, init time), so the tuning panel can show its
effect as soon as the relaunched server has initialised NCCL. Pure: lines in, a summary out.

Formats are NCCL's own (2.18 … 2.28), e.g.::

    host:708:708 [0] NCCL INFO NCCL version 2.28.9+cuda13.0
    host:708:708 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM
    host:708:708 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, …
    host:708:708 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 2 total 0.57 (…)
    host:708:708 [0] NCCL INFO NCCL_ALGO set by environment to Ring
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

_INFO = re.compile(r"NCCL INFO (?P<msg>.*)$")
_VERSION = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+\S*)")
_PEER = re.compile(
    r"Channel (?P<ch>\d+)(?:/\d+)? : (?P<src>\d+)\[[^\]]*\] -> (?P<dst>\d+)\[[^\]]*\](?: \[\w+\])? via (?P<via>\S+)"
)
_CHANNELS = re.compile(
    r"(?P<coll>\d+) coll channels, (?:(?P<collnet>\d+) collnet channels, )?(?:(?P<nvls>\d+) nvls channels, )?"
    r"(?P<p2p>\d+) p2p channels"
)
_RING_CHANNELS = re.compile(r"Channel \d+/(?P<n>\d+) :")
_ENV = re.compile(r"(?P<name>NCCL_[A-Z0-9_]+) set by environment to (?P<value>.*?)\.?$")
_TIMING = re.compile(r"Init timings.*?rank (?P<rank>\d+) nranks (?P<n>\d+) total (?P<s>[\d.]+)")
_COMPLETE = re.compile(r"rank (?P<rank>\d+) nranks (?P<n>\d+) .*Init COMPLETE")
_NETWORK = re.compile(r"Using network (?P<net>\S+)")


@dataclass
class NcclSummary:
    """What one server's NCCL init said; ``None``/empty where NCCL did not say it."""

    version: str | None = None
    network: str | None = None
    transports: Counter[str] = field(default_factory=Counter)  # "P2P/CUMEM" → connections seen
    peers: dict[tuple[int, int], str] = field(default_factory=dict)  # (src, dst) → transport
    coll_channels: int | None = None
    collnet_channels: int | None = None
    nvls_channels: int | None = None
    p2p_channels: int | None = None
    ring_channels: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    init_seconds: float | None = None  # the slowest rank's ncclCommInitRank total
    ranks: int | None = None
    communicators: int = 0
    lines: int = 0

    @property
    def seen(self) -> bool:
        return self.lines > 0

    @property
    def nvls(self) -> bool | None:
        if self.env.get("NCCL_NVLS_ENABLE") == "0":
            return False
        if self.nvls_channels is not None:
            return self.nvls_channels > 0
        return None

    @property
    def collnet(self) -> bool | None:
        if self.env.get("NCCL_COLLNET_ENABLE") in ("0", "1"):
            return self.env["NCCL_COLLNET_ENABLE"] == "1"
        return None

    def transport_kinds(self) -> list[str]:
        """``P2P``, ``SHM``, ``NET`` … in the order of how many connections use them."""
        kinds: Counter[str] = Counter()
        for via, n in self.transports.items():
            kinds[via.split("/", 1)[0]] += n
        return [k for k, _ in kinds.most_common()]

    def one_line(self) -> str:
        if not self.seen:
            return "NCCL: no NCCL_DEBUG=INFO output yet"
        parts = [f"NCCL {self.version or '?'}"]
        if self.transports:
            parts.append("via " + ", ".join(f"{v} ×{n}" for v, n in self.transports.most_common(3)))
        if self.coll_channels is not None:
            parts.append(f"{self.coll_channels} coll channels")
        elif self.ring_channels is not None:
            parts.append(f"{self.ring_channels} channels")
        if self.nvls is not None:
            parts.append("NVLS on" if self.nvls else "NVLS off")
        if self.collnet is not None:
            parts.append("CollNet on" if self.collnet else "CollNet off")
        if self.init_seconds is not None:
            parts.append(f"init {self.init_seconds:.2f} s")
        if self.env:
            parts.append(" ".join(f"{k}={v}" for k, v in sorted(self.env.items())))
        return " · ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "network": self.network,
            "transports": dict(self.transports),
            "transport_kinds": self.transport_kinds(),
            "coll_channels": self.coll_channels,
            "collnet_channels": self.collnet_channels,
            "nvls_channels": self.nvls_channels,
            "p2p_channels": self.p2p_channels,
            "nvls": self.nvls,
            "collnet": self.collnet,
            "env": dict(self.env),
            "init_seconds": self.init_seconds,
            "ranks": self.ranks,
        }


class NcclFold:
    """Feed lines (any order, ranks interleaved); read :attr:`summary` at any time."""

    def __init__(self) -> None:
        self.summary = NcclSummary()

    def add(self, line: str) -> bool:
        """Fold one line; True when it was an NCCL INFO line."""
        if "NCCL INFO" not in line:
            return False
        m = _INFO.search(line)
        if m is None:
            return False
        s = self.summary
        s.lines += 1
        msg = m.group("msg").rstrip()
        if msg.startswith("Channel "):
            p = _PEER.search(msg)
            if p is not None:
                key = (int(p.group("src")), int(p.group("dst")))
                via = p.group("via")
                if s.peers.get(key) != via or key not in s.peers:
                    s.peers[key] = via
                s.transports[via] += 1
                return True
            r = _RING_CHANNELS.search(msg)
            if r is not None:
                s.ring_channels = max(s.ring_channels or 0, int(r.group("n")))
            return True
        if (v := _VERSION.search(msg)) is not None:
            s.version = v.group("v")
        elif (c := _CHANNELS.search(msg)) is not None:
            s.coll_channels = int(c.group("coll"))
            s.collnet_channels = int(c.group("collnet")) if c.group("collnet") else None
            s.nvls_channels = int(c.group("nvls")) if c.group("nvls") else None
            s.p2p_channels = int(c.group("p2p"))
        elif (e := _ENV.search(msg)) is not None:
            s.env[e.group("name")] = e.group("value").strip()
        elif (t := _TIMING.search(msg)) is not None:
            s.init_seconds = max(s.init_seconds or 0.0, float(t.group("s")))
            s.ranks = int(t.group("n"))
        elif (k := _COMPLETE.search(msg)) is not None:
            s.communicators += 1
            s.ranks = int(k.group("n"))
        elif (n := _NETWORK.search(msg)) is not None:
            s.network = n.group("net")
        return True


def summarize(lines: list[str]) -> NcclSummary:
    fold = NcclFold()
    for line in lines:
        fold.add(line)
    return fold.summary
