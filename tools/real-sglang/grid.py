"""Issue 32's check on the real server: steps 1-5 and speculation off, each launched twice, measured at
concurrency 1 and 4 by ``eagletui bench``; the steps 3 launch of the first round also gets a step profile.
What eagletui predicts from the steps 3 launch is compared offline (tools/real-sglang/grid_eval.py) with
the means of the launches of each setting.

    python3 tools/real-sglang/grid.py PROFILE OUTDIR [ROUNDS]

The six servers of a round are launched side by side on one GPU (each with a small static memory
fraction) and benchmarked one after another, so a round costs one launch's wait instead of six; while
one is measured the others are stopped (SIGSTOP: an idle SGLang server puts no kernels on the GPU, but its
scheduler polls a CPU core without sleeping). Each server's own log is kept
(OUTDIR/grid-rR-NAME.log) and so is each benchmark's JSON (OUTDIR/grid-rR-NAME.json). With the
simulator's profile (tools/real-sglang/sim-dryrun.toml) the same flow runs here as a dry run.

``GRID_PIN=1``: while a server is measured its scheduler gets ``GRID_PIN_CORES`` (1) physical cores of its
own (nobody else on them) on the GPU's NUMA node, and its other processes and the benchmark client the rest.
Launches of one setting spread 25-56 % on the lent H200 with each launch steady within itself, the mark of
where a CPU-bound scheduler landed rather than of the model. Either way each benchmark's placement is
recorded (OUTDIR/grid-rR-NAME.place.json): the scheduler's CPU sampled every 0.2 s, every CPU's busy share
over the benchmark, and the GPU's SM clock (read-only ``nvidia-smi`` queries).
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from eagletui.commands.demo import free_port  # outside the ephemeral range (its docstring)
from eagletui.core.profile.load import load_profile
from eagletui.remote.hostproc import parse_stat, proc_table

P, OUT = sys.argv[1], sys.argv[2]
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
# GRID_FIRST_ROUND=2: this call measures round 2 (files grid-r2-*; no step profile, which round 1 takes), so
# two device calls of one round each make one grid (a larger target's round does not fit two in a call)
FIRST = int(os.environ.get("GRID_FIRST_ROUND", "1"))
T0 = time.time()
SETTINGS = [("s3", 3), ("off", None), ("s1", 1), ("s2", 2), ("s4", 4), ("s5", 5)][: int(os.environ.get("GRID_N", "6"))]
# GRID_ONLY=s5,s4: only these settings this call (a round the previous call's deadline cut short)
if os.environ.get("GRID_ONLY"):
    SETTINGS = [st for st in SETTINGS if st[0] in os.environ["GRID_ONLY"].split(",")]
MEM = os.environ.get("GRID_MEM_FRACTION")  # the real GPU: 0.1 each (six servers share it)
READY_S = float(os.environ.get("GRID_READY_S", "300"))
# the device call's limit (device.sh's step timeout less a margin): no benchmark starts that it would cut
# short, and the servers are stopped here rather than left to the step's SIGTERM
DEADLINE_S = float(os.environ.get("GRID_DEADLINE_S", "0")) or None
BENCH_S = 45  # the longest one server's bench took on the H200 (32 x 256 tokens at c = 1 and 4, warm-up 8)
# the benchmark's size: 12 x 128 tokens ran 0.6-2 s a point on the H200 and launches of one setting
# spread 25-80 %; the warm-up runs at the benchmark's concurrency, so its batch shapes are compiled
# (Triton JIT on a fresh machine) before the measured run
BENCH = {
    "num_prompts": os.environ.get("GRID_PROMPTS"),
    "max_new_tokens": os.environ.get("GRID_TOKENS"),
    "warmup": os.environ.get("GRID_WARMUP"),
}


def log(msg):
    line = f"[{time.time() - T0:6.1f}s] {msg}"
    print(line, flush=True)
    with open(os.path.join(OUT, "grid.txt"), "a") as f:
        f.write(line + "\n")


def profile_text(base: str, port: int, steps) -> str:
    """The profile with its port, its step count (topk 1: draft tokens = steps + 1) or no speculation."""
    out = []
    for line in base.splitlines():
        key = line.split("=", 1)[0].strip()
        if key == "port":
            line = f"port = {port}"
        elif key == "mem-fraction-static" and MEM:
            line = f"mem-fraction-static = {MEM}"
        elif key == "speculative-num-steps":
            line = "" if steps is None else f"speculative-num-steps = {steps}"
        elif key == "speculative-num-draft-tokens":
            line = "" if steps is None else f"speculative-num-draft-tokens = {steps + 1}"
        elif key.startswith("speculative-") and steps is None and not line.startswith("#"):
            line = ""
        elif BENCH.get(key):
            line = f"{key} = {BENCH[key]}"
        out.append(line)
    return "\n".join(out) + "\n"


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def step_profile(port: int) -> None:
    """Five decode cycles of the steps 3 server through its own /start_profile, with eagletui's own load
    (eagletui.profiler.live: ``trace --capture`` profiles only servers eagletui launched, and these were
    launched here): the server idle when the profile is asked for, then one burst of 5 requests, nothing
    more until the DECODE trace is there. A load already decoding when the profile was asked for made
    SGLang 0.5.17 start the DECODE stage first and, at the next prefill, write a restarted profile (two
    prefill batches) over the DECODE trace (issue 32; eagletui.profiler.stage_lines). The trace is
    summarised with ``eagletui trace FILE --json``; the server's own lines say whether it was overwritten."""
    import asyncio
    import glob

    import aiohttp

    from eagletui.profiler.live import ProfileRequest, burst_tokens, drive_load, start_profile

    out_dir = os.path.join(OUT, "trace-s3")
    os.makedirs(out_dir, exist_ok=True)
    base = f"http://127.0.0.1:{port}"

    async def capture() -> None:
        async with aiohttp.ClientSession() as http:
            req = ProfileRequest(num_steps=5)
            await start_profile(http, base, req, out_dir)
            load = asyncio.create_task(
                drive_load(http, base, requests=req.num_steps, max_new_tokens=burst_tokens(req.num_steps), waves=1)
            )
            deadline = time.time() + 120
            while time.time() < deadline and not glob.glob(os.path.join(out_dir, "*DECODE*")):
                await asyncio.sleep(1)
            await asyncio.sleep(5)  # the file is written in one go, then closed
            load.cancel()

    try:
        asyncio.run(capture())
    except Exception as exc:  # the grid's other measurements still count
        log(f"step profile failed: {exc!r}")
    for f in glob.glob(os.path.join(out_dir, "*DECODE*")):
        j = subprocess.run([sys.executable, "-m", "eagletui", "trace", f, "--json"], capture_output=True, text=True)
        with open(os.path.join(OUT, "trace-s3.json"), "w") as fh:
            fh.write(j.stdout)
        log(f"step profile: {os.path.basename(f)} ({os.path.getsize(f)} bytes), summary rc {j.returncode}")


PIN = os.environ.get("GRID_PIN") == "1"


def _cpus(text: str) -> set:
    out = set()
    for part in text.strip().split(","):
        if part:
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    return out


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def topology() -> dict:
    """The CPUs this process may use, grouped by physical core, and the GPU's NUMA node's CPUs."""
    allowed = os.sched_getaffinity(0)
    cores = []
    for cpu in sorted(allowed):
        sib = _cpus(_read(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")) or {cpu}
        sib &= allowed
        if sib not in cores:
            cores.append(sib)
    node_cpus = set()
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.split()[0]
        dom, rest = bus.lower().split(":", 1)
        node = _read(f"/sys/bus/pci/devices/{dom[-4:]}:{rest}/numa_node").strip()
        if node and int(node) >= 0:
            node_cpus = _cpus(_read(f"/sys/devices/system/node/node{node}/cpulist")) & allowed
    except (OSError, IndexError, ValueError, subprocess.SubprocessError):
        pass
    return {"allowed": sorted(allowed), "cores": [sorted(c) for c in cores], "gpu_node_cpus": sorted(node_cpus)}


def _stat(path: str):
    """The fields after ``(comm)`` of a /proc stat file (eagletui's own parser), or None."""
    text = _read(path)
    return parse_stat(text) if text else None


def group_pids(pgid: int) -> list:
    return [pid for pid, f in proc_table().items() if int(f[2]) == pgid]


def scheduler_pid(pgid: int):
    for pid in group_pids(pgid):
        if _read(f"/proc/{pid}/cmdline").startswith("sglang::scheduler"):
            return pid
    return None


PIN_CORES = int(os.environ.get("GRID_PIN_CORES", "1"))


def pin(pgid: int, topo: dict):
    """The scheduler's threads on ``GRID_PIN_CORES`` physical cores of the GPU's node (not its first:
    interrupts), every other process of the server's group and the client (returned) on the rest. On the
    lent H200 (2026-12-03) one core gave two launches of a setting within 0.5-15 %; four gave 25-51 % again,
    though the main thread (the only busy one) stayed on one CPU there too: why is not known yet."""
    cores = [set(c) for c in topo["cores"]]
    node = set(topo["gpu_node_cpus"]) or set(topo["allowed"])
    mine = [c for c in cores if c <= node] or cores
    pick = mine[1 : 1 + PIN_CORES] if len(mine) > PIN_CORES else mine[:1]
    sched = set().union(*pick)
    rest = (set(topo["allowed"]) - sched) or set(topo["allowed"])
    spid = scheduler_pid(pgid)
    for pid in group_pids(pgid):
        cpus = sched if pid == spid else rest
        for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else []:
            try:
                os.sched_setaffinity(int(tid), cpus)
            except OSError:
                pass
    return sorted(sched), sorted(rest)


class Placement:
    """Where the measured scheduler ran and how busy every CPU was over one benchmark, and the GPU's clock."""

    def __init__(self, pgid: int) -> None:
        import threading

        self.spid = scheduler_pid(pgid)
        self._threads0 = self._thread_times()
        self.samples: list = []
        self.clocks: list = []
        self._stop = threading.Event()
        self._cpu0 = self._cpu_times()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _thread_times(self) -> dict:
        """CPU seconds of each of the scheduler's threads, by tid, with its name."""
        out = {}
        if not self.spid or not os.path.isdir(f"/proc/{self.spid}/task"):
            return out
        for tid in os.listdir(f"/proc/{self.spid}/task"):
            f = _stat(f"/proc/{self.spid}/task/{tid}/stat")
            if f:
                name = _read(f"/proc/{self.spid}/task/{tid}/comm").strip()
                out[tid] = (name, (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"))
        return out

    @staticmethod
    def _cpu_times() -> dict:
        out = {}
        for line in _read("/proc/stat").splitlines():
            if line.startswith("cpu") and line[3:4].isdigit():
                f = line.split()
                vals = [int(x) for x in f[1:]]
                out[int(f[0][3:])] = (sum(vals) - vals[3] - vals[4], sum(vals))
        return out

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(0.2):
            if self.spid:
                f = _stat(f"/proc/{self.spid}/stat")
                if f:
                    self.samples.append(int(f[36]))  # the CPU it last ran on
            n += 1
            if n % 5 == 0:
                try:
                    q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,utilization.gpu",
                                        "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5)
                    self.clocks.append(q.stdout.strip())
                except (OSError, subprocess.SubprocessError):
                    pass

    def finish(self, path: str, extra: dict) -> dict:
        self._stop.set()
        self._thread.join(5)
        cpu1 = self._cpu_times()
        busy = {c: round((cpu1[c][0] - self._cpu0[c][0]) / max(1, cpu1[c][1] - self._cpu0[c][1]), 3)
                for c in cpu1 if c in self._cpu0}
        counts: dict = {}
        for c in self.samples:
            counts[c] = counts.get(c, 0) + 1
        moves = sum(1 for a, b in zip(self.samples, self.samples[1:], strict=False) if a != b)
        t1 = self._thread_times()
        threads = sorted(
            ((name, round(s - self._threads0.get(tid, (name, 0.0))[1], 2)) for tid, (name, s) in t1.items()),
            key=lambda x: -x[1],
        )[:6]
        out = {"scheduler_pid": self.spid, "scheduler_cpus": counts, "scheduler_moves": moves,
               "samples": len(self.samples), "scheduler_threads_cpu_s": threads, "cpu_busy": busy, "gpu": self.clocks, **extra}
        with open(path, "w") as f:
            json.dump(out, f)
        return out


def hold_others(servers, measured) -> list:
    """Stop (SIGSTOP) every other server of the round while one is measured. An idle SGLang 0.5.17
    scheduler polls its sockets without sleeping (``sleep_on_idle`` is off by default: server_args.py), so
    five idle servers kept five cores busy beside the measured one, and launches of one setting spread
    25-42 % at concurrency 1 (a CPU-bound tiny model). Stopped, they take no CPU and put nothing on the GPU;
    their flags stay exactly the measured ones (``--sleep-on-idle`` would have changed the config)."""
    held = []
    for _name, _port, _path, proc in servers:
        if proc is not measured and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGSTOP)
                held.append(proc)
            except ProcessLookupError:
                pass
    return held


def resume(held) -> None:
    for proc in held:
        try:
            os.killpg(proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def run_round(rnd: int, base: str) -> None:
    servers = []
    for name, steps in SETTINGS:
        port = free_port()
        path = os.path.join(OUT, f"grid-r{rnd}-{name}.toml")
        with open(path, "w") as f:
            f.write(profile_text(base, port, steps))
        prof = load_profile(path)
        env = {**os.environ, **{k: str(v) for k, v in prof.env.items()}}
        logf = open(os.path.join(OUT, f"grid-r{rnd}-{name}.log"), "w")
        proc = subprocess.Popen(
            prof.argv(), stdout=logf, stderr=subprocess.STDOUT, env=env, cwd=prof.workdir or None,
            start_new_session=True,
        )
        servers.append((name, port, path, proc))
        log(f"round {rnd}: {name} launched on port {port} (pid {proc.pid})")
    try:
        waiting = {name for name, *_ in servers}
        deadline = time.time() + READY_S
        while waiting and time.time() < deadline:
            for name, port, _, proc in servers:
                if name in waiting and (healthy(port) or proc.poll() is not None):
                    waiting.discard(name)
                    log(f"round {rnd}: {name} {'ready' if proc.poll() is None else f'exited {proc.returncode}'}")
            time.sleep(1)
        if waiting:
            log(f"round {rnd}: not ready after {READY_S:.0f} s: {sorted(waiting)}")
        for name, port, path, proc in servers:
            if proc.poll() is not None or not healthy(port):
                continue
            if DEADLINE_S and time.time() - T0 > DEADLINE_S - BENCH_S:
                log(f"round {rnd}: {name} not measured: the call's deadline ({DEADLINE_S:.0f} s) is near")
                continue
            paused = hold_others(servers, proc)
            out = os.path.join(OUT, f"grid-r{rnd}-{name}.json")
            pinned = pin(proc.pid, TOPO) if PIN else None
            client = (lambda cpus=pinned[1]: os.sched_setaffinity(0, cpus)) if pinned else None
            place = Placement(proc.pid)
            r = subprocess.run(
                [sys.executable, "-m", "eagletui", "bench", "local", "--profile", path, "--concurrency", "1,4",
                 "--json", "--no-record"], capture_output=True, text=True, timeout=240, preexec_fn=client,
            )
            pl = place.finish(os.path.join(OUT, f"grid-r{rnd}-{name}.place.json"), {"pinned": pinned})
            top = sorted(pl["scheduler_cpus"].items(), key=lambda kv: -kv[1])[:3]
            log(f"round {rnd}: {name} scheduler on cpus {top} ({pl['scheduler_moves']} moves), its busiest "
                f"threads {pl['scheduler_threads_cpu_s'][:3]} CPU s, gpu {pl['gpu'][:1]}")
            with open(out, "w") as f:
                f.write(r.stdout)
            tok = {}
            try:
                for res in json.loads(r.stdout).get("repeats", {}).get("runs", []):
                    tok[res["concurrency"]] = round(res["output_throughput"], 1)
            except (ValueError, AttributeError, KeyError, TypeError):
                pass
            log(f"round {rnd}: {name} bench rc {r.returncode} tok/s {tok} {r.stderr.strip()[-200:]}")
            if rnd == 1 and name == "s3":
                step_profile(port)
            resume(paused)
    finally:
        resume([proc for *_, proc in servers if proc.poll() is None])  # a stopped group would not see its SIGTERM
        for _name, _, _, proc in servers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for _name, _, _, proc in servers:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        log(f"round {rnd}: servers stopped")


def _terminated(signum, _frame):
    raise SystemExit(128 + signum)  # the round's finally stops its servers (they may be SIGSTOPped)


signal.signal(signal.SIGTERM, _terminated)
os.makedirs(OUT, exist_ok=True)
TOPO = topology()
with open(os.path.join(OUT, "topology.json"), "w") as _f:
    json.dump(TOPO, _f)
log(f"cpus {len(TOPO['allowed'])}, physical cores {len(TOPO['cores'])}, gpu node cpus {TOPO['gpu_node_cpus']}, pin {PIN}")
base_text = open(P).read()
for rnd in range(FIRST, FIRST + ROUNDS):
    if DEADLINE_S and time.time() - T0 > DEADLINE_S - 120:
        log(f"round {rnd} not started: the call's deadline ({DEADLINE_S:.0f} s) is near")
        break
    run_round(rnd, base_text)
log("done")
