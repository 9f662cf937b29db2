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
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from eagletui.core.profile.load import load_profile

P, OUT = sys.argv[1], sys.argv[2]
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
T0 = time.time()
SETTINGS = [("s3", 3), ("off", None), ("s1", 1), ("s2", 2), ("s4", 4), ("s5", 5)][: int(os.environ.get("GRID_N", "6"))]
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


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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
            r = subprocess.run(
                [sys.executable, "-m", "eagletui", "bench", "local", "--profile", path, "--concurrency", "1,4",
                 "--json", "--no-record"], capture_output=True, text=True, timeout=240,
            )
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
base_text = open(P).read()
for rnd in range(1, ROUNDS + 1):
    if DEADLINE_S and time.time() - T0 > DEADLINE_S - 120:
        log(f"round {rnd} not started: the call's deadline ({DEADLINE_S:.0f} s) is near")
        break
    run_round(rnd, base_text)
log("done")
