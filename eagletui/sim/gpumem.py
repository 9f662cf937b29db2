"""Simulated GPU memory that outlives the server, as a real host's does for a while.

On a real host a stopped SGLang server's memory is not free the instant its main process exits: the
scheduler processes tear down their CUDA contexts, the driver releases the allocations, and a stuck
child can hold 70 GiB a GPU for minutes. A sweep that launches the next variant too early gets an
out-of-memory crash while loading (or a smaller KV cache and a slower, incomparable run).

With ``EAGLETUI_SIM_GPU_DIR`` set, the simulator keeps a lease file per server in that directory —
the scheduler of each TP rank holding memory on GPU ``rank`` — updated as it loads weights, allocates
the KV cache and captures graphs, and marked with the time it exited; the memory then counts as held
for ``--sim-gpu-release-s`` more seconds. A server that starts while another's memory is held sees
less free memory, as ``torch.cuda.mem_get_info`` would, and runs out of it while loading.

:mod:`eagletui.sim.nvidia_smi` reads the same directory and answers nvidia-smi's queries from it, so
eagletui's GPU telemetry (``nvidia-smi`` on the host) sees what a real driver would show. Nothing of
eagletui is imported here (the simulator runs on a host without eagletui's dependencies).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_DIR = "EAGLETUI_SIM_GPU_DIR"
DEVICES_FILE = "devices.json"
DEFAULT_DEVICES = {"count": 8, "name": "NVIDIA H200", "total_mib": 143771, "idle_mib": 0}
MIB_PER_GB = 1e9 / 2**20


def gpu_dir(env: dict[str, str] | None = None) -> Path | None:
    d = (env if env is not None else os.environ).get(ENV_DIR)
    return Path(d) if d else None


def devices(d: Path) -> dict[str, Any]:
    """The simulated host's GPUs (``devices.json`` when a test wrote one, else 8 × H200)."""
    try:
        data = json.loads((d / DEVICES_FILE).read_text())
        if isinstance(data, dict):
            return {**DEFAULT_DEVICES, **data}
    except (OSError, ValueError):
        pass
    return dict(DEFAULT_DEVICES)


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot); None when the process is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if not rest or rest[0] in ("Z", "X"):
        return None
    return rest[19] if len(rest) > 19 else None


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


@dataclass
class Proc:
    pid: int
    name: str
    gpu: int
    start: str | None = None


class Lease:
    """One server's hold on GPU memory: ``gb[rank]`` used on GPU ``rank`` by that rank's scheduler."""

    def __init__(self, d: Path, procs: list[Proc], release_s: float, owner: int | None = None) -> None:
        self.dir = d
        self.procs = procs
        self.release_s = max(0.0, release_s)
        self.owner = owner or os.getpid()
        self.path = d / f"lease-{self.owner}.json"
        self.gb: dict[int, float] = {p.gpu: 0.0 for p in procs}

    @classmethod
    def open(
        cls, d: Path, procs: list[tuple[int, str, int]], release_s: float, owner: int | None = None
    ) -> Lease:
        """A lease of ``owner`` (default: this process; a test may register another process's memory)."""
        d.mkdir(parents=True, exist_ok=True)
        lease = cls(d, [Proc(pid, name, gpu, _start_time(pid)) for pid, name, gpu in procs], release_s, owner)
        lease.save()
        return lease

    def save(self, exited_at: float | None = None) -> None:
        with contextlib.suppress(OSError):
            _write(
                self.path,
                {
                    "owner": self.owner,
                    "owner_start": _start_time(self.owner),
                    "procs": [
                        {
                            "pid": p.pid,
                            "name": p.name,
                            "gpu": p.gpu,
                            "start": p.start,
                            "gb": round(self.gb.get(p.gpu, 0.0), 3),
                        }
                        for p in self.procs
                    ],
                    "release_s": self.release_s,
                    "exited_at": exited_at,
                },
            )

    def use(self, gpu: int, gb: float) -> None:
        """Rank ``gpu`` now holds ``gb`` (the whole of what it allocated so far)."""
        if gpu in self.gb:
            self.gb[gpu] = max(0.0, gb)
            self.save()

    def exited(self) -> None:
        """The server is gone: its memory stays held for ``release_s`` more seconds."""
        self.save(exited_at=time.time())

    def held_by_others(self) -> dict[int, float]:
        """GB other servers hold on each GPU right now (as the driver would report them)."""
        out: dict[int, float] = {}
        for h in holders(self.dir, exclude=self.path.name):
            out[h["gpu"]] = out.get(h["gpu"], 0.0) + h["mib"] / MIB_PER_GB
        return out


def holders(d: Path, now: float | None = None, exclude: str = "") -> list[dict[str, Any]]:
    """Every process holding simulated memory now: ``{pid, name, gpu, mib}``. A lease counts while any of
    its processes lives and for ``release_s`` after its exit; an owner that died without saying so (a
    SIGKILL) is noticed here and its release time starts then. Expired leases are removed."""
    now = time.time() if now is None else now
    out: list[dict[str, Any]] = []
    try:
        files = sorted(d.glob("lease-*.json"))
    except OSError:
        return out
    for f in files:
        if f.name == exclude:
            continue
        try:
            lease = json.loads(f.read_text())
            procs = lease["procs"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        alive = _start_time(int(lease.get("owner", 0))) == lease.get("owner_start") and lease.get(
            "owner_start"
        )
        alive = alive or any(p.get("start") and _start_time(int(p["pid"])) == p["start"] for p in procs)
        exited = lease.get("exited_at")
        if not alive:
            if exited is None:
                exited = now
                lease["exited_at"] = now
                with contextlib.suppress(OSError):
                    _write(f, lease)
            if now >= float(exited) + float(lease.get("release_s") or 0.0):
                with contextlib.suppress(OSError):
                    f.unlink()
                continue
        for p in procs:
            mib = float(p.get("gb") or 0.0) * MIB_PER_GB
            if mib > 0:
                out.append(
                    {"pid": int(p["pid"]), "name": str(p.get("name", "")), "gpu": int(p["gpu"]), "mib": mib}
                )
    return out
