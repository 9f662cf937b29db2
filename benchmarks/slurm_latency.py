"""What running the server as a Slurm job costs: job start latency, and launch → ready as a job vs as a
detached process (the baseline, same simulator profile, same run).

Needs the emulated cluster (``tools/slurm_cluster.py``): it uses the one ``EAGLETUI_SLURM_DIR`` names
(``.ci/run`` starts it) or starts its own in a temp dir. Measured per round:

* ``sbatch --parsable`` → the job RUNNING (``squeue``): Slurm's own start latency;
* eagletui's launch of the simulator → ``ServerReady``, once as a single-node job, once as a process;
* the same as a two-node job (two ranks, merged logs);
* ``scancel`` → the job has left the queue (eagletui's stop).

Last line: JSON with the medians and the job/process ratio.

    PYTHONPATH=. python benchmarks/slurm_latency.py [--rounds 5] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eagletui.commands.demo import free_port
from eagletui.core.events import ServerReady
from eagletui.core.profile.load import load_profile
from eagletui.core.timings import FAST
from eagletui.workspace import Workspace
from tools.slurm_cluster import Cluster

PROFILE = """
name = "{name}"
[target]
python = "{python}"
workdir = "{tmp}"
[server]
command = ["{{python}}", "-m", "eagletui.sim"]
port = {port}
runs_dir = "{tmp}/runs"
[server.args]
model-path = "moonshotai/Kimi-K2.5"
tp = 8
speculative-algorithm = "EAGLE3"
speculative-draft-model-path = "lmsys/Kimi-K2.5-EAGLE3"
sim-time-scale = 0.003
{slurm}
"""


def _profile(tmp: Path, name: str, conf: str | None, nodes: int = 1):
    slurm = ""
    if conf:
        slurm = f'[slurm]\nnodes = {nodes}\nslurm_conf = "{conf}"\npoll_s = 0.2\ndist_port = {free_port()}\n'
    p = tmp / f"{name}.toml"
    p.write_text(PROFILE.format(name=name, python=sys.executable, tmp=tmp, port=free_port(), slurm=slurm))
    return load_profile(p)


async def _launch_to_ready(prof) -> tuple[float, float]:
    """(launch → ready s, stop s) through the workspace, as the UI does it."""
    ready = asyncio.Event()

    def emit(e) -> None:
        if isinstance(e, ServerReady):
            ready.set()

    ws = Workspace(prof, emit, target="local", preflight=False, timings=FAST)
    await ws.connect()
    try:
        t0 = time.perf_counter()
        await ws.launch()
        await asyncio.wait_for(ready.wait(), 120)
        up = time.perf_counter() - t0
        t1 = time.perf_counter()
        await ws.stop()
        return up, time.perf_counter() - t1
    finally:
        await ws.close(stop_server=True)


def _job_start(cluster: Cluster) -> float:
    t0 = time.perf_counter()
    jid = (
        cluster.run("sbatch", "--parsable", "--wrap", "sleep 30", "-o", "/dev/null")
        .stdout.strip()
        .split(";")[0]
    )
    try:
        while True:
            state = cluster.run("squeue", "-h", "-j", jid, "-o", "%T").stdout.strip()
            if state == "RUNNING":
                return time.perf_counter() - t0
            if time.perf_counter() - t0 > 60:
                raise RuntimeError(f"job {jid} not running after 60 s ({state})")
            time.sleep(0.02)
    finally:
        cluster.run("scancel", jid, check=False)


def med(values: list[float]) -> float:
    return round(statistics.median(values), 3)


async def main() -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds (CI)")
    args = ap.parse_args()
    rounds = 2 if args.quick else max(1, args.rounds)
    own = None
    shared = os.environ.get("EAGLETUI_SLURM_DIR")
    if shared:
        cluster = Cluster(shared)
    else:
        own = tempfile.mkdtemp(prefix="eagletui-slurm-bench-")
        cluster = Cluster(own)
        cluster.start()
    tmp = Path(tempfile.mkdtemp(prefix="eagletui-slurmlat-"))
    try:
        conf = str(cluster.conf)
        start, job, proc, job2, cancel = [], [], [], [], []
        for i in range(rounds):
            start.append(_job_start(cluster))
            up, down = await _launch_to_ready(_profile(tmp, f"bj{i}", conf))
            job.append(up)
            cancel.append(down)
            proc.append((await _launch_to_ready(_profile(tmp, f"bp{i}", None)))[0])
            job2.append((await _launch_to_ready(_profile(tmp, f"b2{i}", conf, nodes=2)))[0])
        out = {
            "rounds": rounds,
            "sbatch_to_running_s": med(start),
            "job_launch_to_ready_s": med(job),
            "two_node_job_launch_to_ready_s": med(job2),
            "process_launch_to_ready_s": med(proc),
            "scancel_to_left_s": med(cancel),
            "job_vs_process_ratio": round(med(job) / med(proc), 3) if med(proc) else None,
        }
        print(
            f"sbatch→running {out['sbatch_to_running_s']} s; launch→ready: job {out['job_launch_to_ready_s']} s, "
            f"two-node job {out['two_node_job_launch_to_ready_s']} s, process {out['process_launch_to_ready_s']} s; "
            f"scancel→left {out['scancel_to_left_s']} s"
        )
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if own is not None:
            cluster.stop()
            shutil.rmtree(own, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
