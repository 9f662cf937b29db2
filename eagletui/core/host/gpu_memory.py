"""GPU memory between launches: is every GPU back to where it was before the last launch, and who holds it?

A stopped server's memory is not free the moment its main process exits: its scheduler processes may
still be tearing down (or be stuck), and the driver releases a context some time after its process is
gone. A launch that starts then runs out of memory while loading, or — worse for a sweep — starts with
less KV cache than its predecessor and is silently slower. So between two launches eagletui waits
until every GPU's used memory is within :data:`TOLERANCE_MIB` of what it was right before the previous
launch, and names the processes that still hold memory when it gives up.

Pure: readings come from ``nvidia-smi`` (:mod:`eagletui.remote.gpu`); this module compares them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Memory a GPU may hold above its pre-launch reading and still count as released (nvidia-smi's own
#: reading moves by a few MiB; a leftover CUDA context is ~500 MiB and is *not* released).
TOLERANCE_MIB = 256.0
MAX_GPUS = 64
MAX_HOLDERS = 512


@dataclass(frozen=True)
class Holder:
    """A process that holds GPU memory (``nvidia-smi --query-compute-apps``)."""

    pid: int
    name: str
    mib: float
    gpu: int | None = None  # index, when its GPU's uuid was in the same reading

    def text(self) -> str:
        where = f" on GPU {self.gpu}" if self.gpu is not None else ""
        return f"pid {self.pid} {self.name or '?'} ({fmt_mib(self.mib)}{where})"


@dataclass(frozen=True)
class Reading:
    """Used and total MiB per GPU index, and who holds memory."""

    used: Mapping[int, float]
    total: Mapping[int, float] = field(default_factory=dict)
    holders: tuple[Holder, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "used_mib": {str(k): round(v, 1) for k, v in sorted(self.used.items())},
            "total_mib": {str(k): round(v, 1) for k, v in sorted(self.total.items())},
            "holders": [
                {"pid": h.pid, "name": h.name, "mib": round(h.mib, 1), "gpu": h.gpu} for h in self.holders
            ],
        }

    @classmethod
    def from_dict(cls, d: Any) -> Reading | None:
        """A reading saved in a sweep queue; None when it is not one (a damaged queue loses the gate's
        reference, never the sweep)."""
        if not isinstance(d, dict):
            return None
        try:
            used = {int(k): float(v) for k, v in dict(d.get("used_mib") or {}).items()}
            total = {int(k): float(v) for k, v in dict(d.get("total_mib") or {}).items()}
            holders = tuple(
                Holder(
                    int(h["pid"]),
                    str(h.get("name", ""))[:200],
                    float(h.get("mib") or 0.0),
                    _opt_int(h.get("gpu")),
                )
                for h in list(d.get("holders") or [])[:MAX_HOLDERS]
            )
        except (TypeError, ValueError, KeyError, AttributeError):
            return None
        if len(used) > MAX_GPUS or not all(math.isfinite(v) for v in used.values()):
            return None
        return cls(used, total, holders)


def _opt_int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


#: What a GPU can report, per reading: memory in MiB (4 TiB, past any accelerator made), utilisation
#: in percent, board power in watts. A reading outside is unknown, not drawn or recorded: a wrapper
#: printing 1e308 was drawn as a 309-digit number across two lines and recorded into a file the
#: reader then refused.
MAX_MIB = 4.0 * 1024 * 1024
MAX_UTIL_PCT = 100.0
MAX_POWER_W = 10_000.0


def gpu_value(value: object, upper: float = MAX_MIB) -> float | None:
    """A reading (``nvidia-smi`` text or a recorded number) between 0 and ``upper``, or None: unknown
    ("[N/A]", "[Not Supported]", NaN, inf, negative, past what a GPU can report)."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and 0 <= value <= upper else None


def _num(text: str) -> float | None:
    return gpu_value(text, MAX_MIB)


def parse_reading(gpus_csv: str, apps_csv: str = "") -> Reading:
    """``index,uuid,memory.used,memory.total`` lines and ``gpu_uuid,pid,process_name,used_memory``
    lines (``--format=csv,noheader,nounits``) → a :class:`Reading`; junk lines are skipped and the
    counts bounded."""
    used: dict[int, float] = {}
    total: dict[int, float] = {}
    by_uuid: dict[str, int] = {}
    for line in gpus_csv.splitlines()[: MAX_GPUS * 4]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not (parts[0].isascii() and parts[0].isdigit()) or len(used) >= MAX_GPUS:
            continue
        idx = int(parts[0])
        u, t = _num(parts[2]), _num(parts[3])
        if u is None:
            continue
        used[idx] = u
        if t is not None:
            total[idx] = t
        if parts[1]:
            by_uuid[parts[1]] = idx
    holders: list[Holder] = []
    for line in apps_csv.splitlines()[: MAX_HOLDERS * 4]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not (parts[1].isascii() and parts[1].isdigit()) or len(holders) >= MAX_HOLDERS:
            continue
        mib = _num(parts[3]) or 0.0
        name = "".join(ch for ch in parts[2] if ch.isprintable())[:200]
        holders.append(Holder(int(parts[1]), name, mib, by_uuid.get(parts[0])))
    return Reading(used, total, tuple(holders))


def excess(before: Reading, now: Reading, tolerance_mib: float = TOLERANCE_MIB) -> dict[int, float]:
    """GPU index → MiB used now beyond its reading before the launch (only GPUs over the tolerance;
    a GPU that appeared since is measured against 0)."""
    out: dict[int, float] = {}
    for idx, u in now.used.items():
        extra = u - before.used.get(idx, 0.0)
        if extra > tolerance_mib:
            out[idx] = extra
    return out


def holders_on(now: Reading, gpus: Iterable[int], before: Reading | None = None) -> list[Holder]:
    """Processes holding memory on ``gpus`` that did not hold it before the launch (largest first);
    holders whose GPU is unknown are included."""
    gset = set(gpus)
    old = {h.pid for h in before.holders} if before is not None else set()
    hs = [h for h in now.holders if h.pid not in old and (h.gpu is None or h.gpu in gset)]
    return sorted(hs, key=lambda h: -h.mib)


def fmt_mib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def _ranges(idx: list[int]) -> str:
    idx = sorted(idx)
    out: list[str] = []
    start = prev = idx[0]
    for i in idx[1:] + [None]:  # type: ignore[list-item]
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(f"{start}" if start == prev else f"{start}–{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(out)


def describe_held(before: Reading, now: Reading, tolerance_mib: float = TOLERANCE_MIB) -> str:
    """``GPU 0–7 hold 70.1 GiB more than before the launch (most: 70.1 GiB on GPU 3); still held by
    pid 4242 sglang::scheduler_TP3 (70.1 GiB on GPU 3), …`` — "" when nothing is held."""
    ex = excess(before, now, tolerance_mib)
    if not ex:
        return ""
    top = max(ex, key=lambda k: ex[k])
    head = (
        f"GPU {_ranges(list(ex))} hold{'s' if len(ex) == 1 else ''} {fmt_mib(sum(ex.values()))} more than "
        f"before the launch (most: {fmt_mib(ex[top])} on GPU {top})"
    )
    hs = holders_on(now, ex, before)
    if not hs:
        return head + "; no process is listed as holding it (the driver is still releasing it)"
    names = ", ".join(h.text() for h in hs[:4])
    more = f" and {len(hs) - 4} more" if len(hs) > 4 else ""
    return f"{head}; still held by {names}{more}"


_OOM = re.compile(
    r"total capacity of (?P<total>[\d.]+) (?P<tu>GiB|MiB) of which (?P<free>[\d.]+) (?P<fu>GiB|MiB) is free\."
    r".{0,200}?this process has (?P<own>[\d.]+) (?P<ou>GiB|MiB) memory in use"
)


def _gib(value: str, unit: str) -> float:
    v = float(value)
    return v / 1024 if unit == "MiB" else v


def others_in_oom(text: str) -> float | None:
    """GiB that *other* processes held on the GPU when torch ran out of memory, from its message
    (``… total capacity of T GiB of which F MiB is free. Including non-PyTorch memory, this process has
    P GiB memory in use …``: T − F − P); None when the text is not such a message."""
    m = _OOM.search(text[:20_000])
    if m is None:
        return None
    try:
        total, free, own = _gib(m["total"], m["tu"]), _gib(m["free"], m["fu"]), _gib(m["own"], m["ou"])
    except ValueError:
        return None
    if not all(math.isfinite(x) for x in (total, free, own)):
        return None
    return max(0.0, total - free - own)
