"""A stand-in ``nvidia-smi`` for hosts that run the simulator: the GPUs of :mod:`eagletui.sim.gpumem`.

``python -m eagletui.sim.nvidia_smi --query-gpu=index,uuid,memory.used,memory.total
--format=csv,noheader,nounits`` answers like the real tool (driver 580: the same field names, one line
per GPU, ``, `` between fields; ``--query-compute-apps`` one line per process holding memory; an unknown
field is refused with exit status 2 as nvidia-smi does). Tests put a two-line ``nvidia-smi`` script
on ``PATH`` that runs this module, so eagletui's own GPU code — the thing under test — reads it through
the same transport and parser as on a real host.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from eagletui.sim import gpumem

GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "memory.used",
    "memory.total",
    "memory.free",
    "utilization.gpu",
    "power.draw",
)
APP_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")


def uuid_of(i: int) -> str:
    return f"GPU-5e1a0000-0000-4000-8000-{i:012x}"


def _value(field: str, i: int, dev: dict, used: float, units: bool) -> str:
    total = float(dev["total_mib"])
    mib = " MiB" if units else ""
    if field == "index":
        return str(i)
    if field == "name":
        return str(dev["name"])
    if field == "uuid":
        return uuid_of(i)
    if field == "memory.used":
        return f"{used:.0f}{mib}"
    if field == "memory.total":
        return f"{total:.0f}{mib}"
    if field == "memory.free":
        return f"{max(0.0, total - used):.0f}{mib}"
    if field == "utilization.gpu":
        return "0" + (" %" if units else "")
    return "75.00" + (" W" if units else "")  # power.draw


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    d = gpumem.gpu_dir()
    if d is None:
        print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
        return 9
    query = next((a for a in args if a.startswith(("--query-gpu=", "--query-compute-apps="))), None)
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv")
    units = "nounits" not in fmt
    if query is None:
        print("simulated GPUs: use --query-gpu=... or --query-compute-apps=... (eagletui's simulator)")
        return 0
    kind, _, fields_text = query.partition("=")
    fields = [f.strip() for f in fields_text.split(",") if f.strip()]
    allowed = GPU_FIELDS if kind == "--query-gpu" else APP_FIELDS
    for f in fields:
        if f not in allowed:
            print(f'Field "{f}" is not a valid field to query.\n')
            return 2
    dev = gpumem.devices(d)
    held = gpumem.holders(d)
    lines: list[str] = []
    if "noheader" not in fmt:
        lines.append(", ".join(fields))
    if kind == "--query-gpu":
        for i in range(int(dev["count"])):
            used = float(dev.get("idle_mib", 0)) + sum(h["mib"] for h in held if h["gpu"] == i)
            lines.append(", ".join(_value(f, i, dev, used, units) for f in fields))
    else:
        for h in held:
            vals = {
                "gpu_uuid": uuid_of(h["gpu"]),
                "pid": str(h["pid"]),
                "process_name": h["name"],
                "used_memory": f"{h['mib']:.0f}" + (" MiB" if units else ""),
            }
            lines.append(", ".join(vals[f] for f in fields))
    if lines:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
