"""GPU telemetry from ``nvidia-smi``: one sample per interval, nothing at all on GPU-less hosts.

A missing nvidia-smi is normal (the simulator, a laptop), so it ends the stream quietly instead of
raising; the UI simply shows no GPU panel.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

from eagletui.core.events import GpuStats
from eagletui.remote.transport import Transport, TransportError

QUERY = [
    "nvidia-smi",
    "--query-gpu=index,name,memory.used,memory.total,utilization.gpu,power.draw",
    "--format=csv,noheader,nounits",
]
APPS_QUERY = [
    "nvidia-smi",
    "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
    "--format=csv,noheader,nounits",
]


def _num(text: str) -> float | None:
    """A reading, or None when unknown: "[N/A]", "[Not Supported]", and non-finite values ("nan",
    "inf", "1e999") that a broken driver or a wrapper script prints."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_query(text: str) -> list[dict[str, Any]]:
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 6 or not (parts[0].isascii() and parts[0].isdigit()):  # "²".isdigit() is True
            continue
        used, total, util, power = (_num(p) for p in parts[2:6])
        gpus.append(
            {
                "index": int(parts[0]),
                "name": parts[1],
                "mem_used_mb": used,
                "mem_total_mb": total,
                "util_pct": util,
                "power_w": power,
            }
        )
    return gpus


def missing_nvidia_smi(exit_status: int | None, stderr: str) -> bool:
    return exit_status == 127 or "not found" in stderr or "No such file" in stderr


async def gpu_events(
    transport: Transport, interval: float = 2.0, timeout: float | None = None
) -> AsyncIterator[GpuStats]:
    """A sample every ``interval``; a read that fails (timed out, a transport error, a non-zero
    exit) yields a ``stale`` event instead, so the last numbers on screen are marked old, not shown
    as current."""
    timeout = timeout or max(10.0, interval * 3)
    while True:
        try:
            res = await transport.run(QUERY, timeout=timeout)
        except TimeoutError:
            yield GpuStats(stale=f"nvidia-smi gave no answer within {timeout:g}s")
            await asyncio.sleep(interval)
            continue
        except (TransportError, OSError) as exc:
            yield GpuStats(stale=f"nvidia-smi could not be run: {exc}")
            await asyncio.sleep(interval)  # the link state is reported elsewhere; keep sampling
            continue
        if res.exit_status != 0:
            if missing_nvidia_smi(res.exit_status, res.stderr):
                return
            first = (res.stderr or res.stdout).strip().splitlines()[:1]
            yield GpuStats(
                stale=f"nvidia-smi exited {res.exit_status}" + (f": {first[0][:120]}" if first else "")
            )
            await asyncio.sleep(interval)  # a transient driver hiccup: try again
            continue
        yield GpuStats(gpus=tuple(parse_query(res.stdout)))
        await asyncio.sleep(interval)
