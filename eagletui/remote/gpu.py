"""GPU telemetry from ``nvidia-smi``: one sample per interval, nothing at all on GPU-less hosts.

A missing nvidia-smi is normal (the simulator, a laptop), so it ends the stream quietly instead of
raising; the UI simply shows no GPU panel.

:func:`wait_released` is the sweep's gate between launches: it polls memory until every GPU is back
to its reading from before the previous launch (:mod:`eagletui.core.host.gpu_memory`), bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from eagletui.core.events import GpuStats
from eagletui.core.host.gpu_memory import (
    MAX_MIB,
    MAX_POWER_W,
    MAX_UTIL_PCT,
    TOLERANCE_MIB,
    Reading,
    describe_held,
    gpu_value,
    parse_reading,
)
from eagletui.core.timings import Timings
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


def parse_query(text: str) -> list[dict[str, Any]]:
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 6 or not (parts[0].isascii() and parts[0].isdigit()):  # "²".isdigit() is True
            continue
        used, total = gpu_value(parts[2], MAX_MIB), gpu_value(parts[3], MAX_MIB)
        util, power = gpu_value(parts[4], MAX_UTIL_PCT), gpu_value(parts[5], MAX_POWER_W)
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


async def gpu_events(transport: Transport, timings: Timings) -> AsyncIterator[GpuStats]:
    """A sample every ``timings.watch.gpu_poll_s``; a read that fails (timed out, a transport error, a non-zero
    exit) yields a ``stale`` event instead, so the last numbers on screen are marked old, not shown
    as current."""
    interval, timeout = timings.watch.gpu_poll_s, timings.watch.gpu_read_s
    sleep = timings.clock.sleep
    while True:
        try:
            res = await transport.run(QUERY, timeout=timeout)
        except TimeoutError:
            yield GpuStats(stale=f"nvidia-smi gave no answer within {timeout:g}s")
            await sleep(interval)
            continue
        except (TransportError, OSError) as exc:
            yield GpuStats(stale=f"nvidia-smi could not be run: {exc}")
            await sleep(interval)  # the link state is reported elsewhere; keep sampling
            continue
        if res.exit_status != 0:
            if missing_nvidia_smi(res.exit_status, res.stderr):
                return
            first = (res.stderr or res.stdout).strip().splitlines()[:1]
            yield GpuStats(
                stale=f"nvidia-smi exited {res.exit_status}" + (f": {first[0][:120]}" if first else "")
            )
            await sleep(interval)  # a transient driver hiccup: try again
            continue
        yield GpuStats(gpus=tuple(parse_query(res.stdout)))
        await sleep(interval)


# ------------------------------------------------------------------ the GPU gate between launches

MEMORY_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,uuid,memory.used,memory.total",
    "--format=csv,noheader,nounits",
]


async def read_memory(transport: Transport, timeout: float) -> Reading | None:
    """Used/total memory per GPU and the processes holding it, in one round trip each; None when the
    host cannot tell (no nvidia-smi, a failing driver, a dropped link): the gate then says "unknown"."""
    try:
        res, apps = await asyncio.gather(
            transport.run(MEMORY_QUERY, timeout=timeout), transport.run(APPS_QUERY, timeout=timeout)
        )
    except (TransportError, TimeoutError, OSError):
        return None
    if res.exit_status != 0:
        return None
    reading = parse_reading(res.stdout[:1_000_000], apps.stdout[:1_000_000] if apps.exit_status == 0 else "")
    return reading if reading.used else None


@dataclass(frozen=True)
class GateResult:
    """How the wait for released GPU memory ended: ``clean`` (back to the reference), ``held`` (the bound
    passed with memory still held: ``message`` names the holders), ``unknown`` (no telemetry)."""

    status: str
    waited_s: float
    reading: Reading | None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "waited_s": round(self.waited_s, 2), "message": self.message}


async def wait_released(
    transport: Transport,
    before: Reading | None,
    *,
    timeout: float,
    timings: Timings,
    tolerance_mib: float = TOLERANCE_MIB,
    say: Callable[[str], None] | None = None,
    say_every: float = 10.0,
    label: str = "the previous launch",
) -> GateResult:
    """Until every GPU's used memory is back within ``tolerance_mib`` of ``before`` (the reading taken
    right before the previous launch), at most ``timeout`` seconds. Without a reference the current
    reading is taken as it (nothing to wait for); without telemetry the result is ``unknown``."""
    clock, poll = timings.clock, timings.sweep.gate_poll_s
    t0 = clock.monotonic()
    last_say = t0
    reading: Reading | None = None
    while True:
        reading = await read_memory(transport, timings.sweep.gate_read_s)
        waited = clock.monotonic() - t0
        if reading is not None:
            if before is None:
                return GateResult("clean", waited, reading, "no earlier reading: taken as the reference")
            held = describe_held(before, reading, tolerance_mib)
            if not held:
                return GateResult(
                    "clean", waited, reading, f"released after {waited:.1f} s" if waited >= 0.05 else ""
                )
            if waited >= timeout:
                return GateResult(
                    "held",
                    waited,
                    reading,
                    f"GPU memory of {label} is still held after {waited:.0f} s (sweep.gpu_wait_s = {timeout:g}): {held}",
                )
            if say is not None and clock.monotonic() - last_say >= say_every:
                say(f"  waiting for GPU memory ({waited:.0f} s of {timeout:g}): {held}")
                last_say = clock.monotonic()
        elif before is None or waited >= min(timeout, 5 * poll):  # it answered before: a few more tries
            return GateResult("unknown", waited, None, "no GPU telemetry (nvidia-smi) to wait on")
        await clock.sleep(poll)
