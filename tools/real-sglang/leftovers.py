"""What eagletui started that is still alive, as one JSON line: every run's members (proven as the stop
proves them), any ``sglang::`` process, anything carrying ``EAGLETUI_RUN_ID``, and who holds GPU memory.

    python3 tools/real-sglang/leftovers.py STEP [--kill] [--runs-only]

``--kill`` (the script's last step only) SIGKILLs what it found, so the next part starts clean; the line
still says what was left, which is a failure of whatever step left it. ``--runs-only`` (a dry run on a
shared machine) looks at this HOME's runs alone, not at every process.
"""

import glob
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from eagletui.remote import hostproc

step = sys.argv[1]
found = {}
for f in glob.glob(os.path.expanduser("~/.eagletui/runs/*/pid")):
    rd = os.path.dirname(f)
    try:
        rec = json.load(open(f))
    except (OSError, ValueError):
        continue
    for pid, proof in hostproc.run_members(rec, os.path.basename(rd), rd):
        found[pid] = {"pid": pid, "run": os.path.basename(rd), "proof": proof}
for pid in [] if "--runs-only" in sys.argv else hostproc.pids():
    if pid == os.getpid() or pid in found:
        continue
    cmd = hostproc.cmdline(pid) or []
    text = " ".join(cmd)
    try:
        env = open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        env = b""
    if text.startswith("sglang::") or "sglang.launch_server" in text or b"EAGLETUI_RUN_ID=" in env:
        found[pid] = {"pid": pid, "cmd": text[:120]}
for d in found.values():
    d["name"] = (hostproc.cmdline(d["pid"]) or ["?"])[0][:60]
try:
    gpu = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()
except (OSError, subprocess.TimeoutExpired) as exc:
    gpu = f"nvidia-smi: {exc}"
killed = []
if "--kill" in sys.argv:
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            pass
print(json.dumps({"step": step, "alive": sorted(found.values(), key=lambda d: d["pid"]), "gpu_apps": gpu, "killed": killed}))
