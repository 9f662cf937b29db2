"""Peak memory and throughput when a tailed log grows by 1 M lines at once (issue 11, item 4).

A log is followed by a :class:`~eagletui.remote.source.LiveSource` (tail + log interpreter +
process watcher), through the local transport and, when an OpenSSH sshd is available, through a
real sshd on 127.0.0.1. Once it is following, another process appends ``--lines`` SGLang-like
lines in one go. The consumer mimics the UI's pump (it yields every 256 events); with
``--consumer-us 15`` it also spends 15 µs per event (a fold-and-render budget), so a slow consumer
shows how a source without backpressure piles events up in memory, as it did in the app. Each case runs in a fresh child process;
reported: RSS before the burst, peak RSS (VmHWM), and lines/s from the append to the last line.

With ``--baseline-tree DIR`` (an export of an older commit, e.g. ``git archive <rev> | tar -x -C
DIR``) the same cases also run against that tree, in the same run, and the ratios are reported.

    PYTHONPATH=. python benchmarks/tail_memory.py [--lines 1000000] [--baseline-tree DIR]

Last line of output: a JSON object. Targets: peak RSS <= 250 MB, >= 30,000 lines/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eagletui.core.timings import FAST

ROOT = Path(__file__).resolve().parents[1]

LINE = (
    "[2026-11-30 05:26:{s:02d} TP0] Decode batch. #running-req: 8, #token: {n}, token usage: 0.04, "
    "accept len: 3.12, gen throughput (token/s): 812.40, #queue-req: 0\n"
)


def rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def write_burst(path: str, n: int) -> None:
    """Child: append ``n`` lines as fast as the disk takes them (1 MB writes)."""
    buf: list[str] = []
    size = 0
    with open(path, "a", encoding="utf-8") as f:
        for i in range(n):
            line = LINE.format(s=i % 60, n=i)
            buf.append(line)
            size += len(line)
            if size > 1 << 20:
                f.write("".join(buf))
                buf, size = [], 0
        f.write("".join(buf))


async def child(mode: str, lines: int, consumer_us: float) -> dict:
    """One piece: the child process's whole measurement, from its start to the figures it prints; the
    parent reads only what it prints."""
    from eagletui.core.events import LogLine
    from eagletui.remote.control import RunInfo, ServerControl
    from eagletui.remote.local import LocalTransport
    from eagletui.remote.source import LiveSource

    base = Path(tempfile.mkdtemp(prefix="eagletui-tailmem-"))
    srv = None
    log = base / "server.log"
    log.write_text("".join(LINE.format(s=0, n=i) for i in range(10)))
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        if mode == "ssh":
            sys.path.insert(0, str(ROOT))
            from eagletui.remote import transport as tr
            from tests.sshd import start_sshd

            srv = start_sshd(base / "sshd")
            opts = {"config_file": str(srv.config_file), "known_hosts": str(srv.known_hosts)}
            if hasattr(tr, "SSHOptions"):
                transport = await tr.open_transport(srv.alias, tr.SSHOptions(**opts), timings=FAST)
            else:  # the baseline tree: keyword arguments
                transport = await tr.open_transport(srv.alias, **opts)
        else:
            transport = LocalTransport()
        start = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        run = RunInfo(
            run_id="bench", run_dir="", log_path=str(log), pid=sleeper.pid, pgid=sleeper.pid,
            start_time=start, argv=[], port=0, launch=1, owned=False,
        )  # fmt: skip
        control = ServerControl(transport, str(base / "runs"), python=sys.executable, timings=FAST)
        src = LiveSource(transport, control, run, poll_s=2.0, timings=FAST)
        total = 10 + lines
        seen = 0
        writer = None
        t_append = 0.0
        rss_before = 0.0
        cpu0 = 0.0
        spin = consumer_us / 1e6
        n = 0
        async for ev in src.events():
            n += 1
            if n % 256 == 0:
                await asyncio.sleep(0)
            if spin:
                t = time.perf_counter() + spin
                while time.perf_counter() < t:
                    pass
            if not isinstance(ev, LogLine):
                continue
            seen += 1
            if seen == 10 and writer is None:
                rss_before = rss_mb("VmRSS")
                t_append = time.perf_counter()
                cpu0 = time.process_time()
                writer = subprocess.Popen(
                    [sys.executable, __file__, "--write-burst", str(log), str(lines)], cwd=ROOT
                )
            if seen >= total:
                break
        elapsed = time.perf_counter() - t_append
        cpu = time.process_time() - cpu0
        src.stop()
        with_writer = writer.wait() if writer else None
        await transport.close()
        return {
            "mode": mode,
            "lines": lines,
            "received": seen - 10,
            "writer_rc": with_writer,
            "rss_before_mb": round(rss_before, 1),
            "peak_rss_mb": round(rss_mb("VmHWM"), 1),
            "seconds": round(elapsed, 2),
            "lines_per_s": round(lines / elapsed),
            "cpu_s": round(cpu, 2),
            "lines_per_cpu_s": round(lines / cpu) if cpu else None,
        }
    finally:
        sleeper.kill()
        sleeper.wait()
        if srv is not None:
            from tests.sshd import stop_sshd

            stop_sshd(srv)
        shutil.rmtree(base, ignore_errors=True)


def run_case(tree: Path, mode: str, lines: int, consumer_us: float, timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{ROOT}"}
    cmd = [
        sys.executable,
        __file__,
        "--child",
        mode,
        "--lines",
        str(lines),
        "--consumer-us",
        str(consumer_us),
    ]
    try:
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=tree)
    except subprocess.TimeoutExpired:
        return {"mode": mode, "error": f"timed out after {timeout}s"}
    last = res.stdout.strip().splitlines()[-1:] or [""]
    try:
        return json.loads(last[0])
    except ValueError:
        return {"mode": mode, "error": (res.stderr or res.stdout)[-800:]}


def sshd_available() -> bool:
    return shutil.which("sshd") is not None or Path("/usr/sbin/sshd").exists()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument(
        "--consumer-us", type=float, default=0.0, help="per-event cost of the consumer (15: a slow UI)"
    )
    ap.add_argument("--baseline-tree", type=Path, help="an export of an older commit to compare with")
    ap.add_argument("--modes", default="local,ssh")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--write-burst", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): 20k lines",
    )
    args = ap.parse_args()
    if args.quick and not args.child and not args.write_burst:
        args.lines, args.timeout = 20_000, 120
    if args.write_burst:
        write_burst(args.write_burst[0], int(args.write_burst[1]))
        return
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args.lines, args.consumer_us))))
        return
    modes = [m for m in args.modes.split(",") if m != "ssh" or sshd_available()]
    trees = [("current", ROOT)] + ([("baseline", args.baseline_tree.resolve())] if args.baseline_tree else [])
    out: dict = {"lines": args.lines, "consumer_us": args.consumer_us, "cases": {}}
    for mode in modes:
        for name, tree in trees:
            r = run_case(tree, mode, args.lines, args.consumer_us, args.timeout)
            out["cases"][f"{mode}/{name}"] = r
            print(
                f"{mode:5} {name:8} before {r.get('rss_before_mb')} MB  peak {r.get('peak_rss_mb')} MB  "
                f"{r.get('lines_per_s')} lines/s ({r.get('lines_per_cpu_s')} per CPU s)  {r.get('error', '')}",
                flush=True,
            )
    for mode in modes:
        cur, old = out["cases"].get(f"{mode}/current", {}), out["cases"].get(f"{mode}/baseline", {})
        if cur.get("peak_rss_mb") and old.get("peak_rss_mb"):
            out[f"{mode}_peak_rss_ratio"] = round(cur["peak_rss_mb"] / old["peak_rss_mb"], 3)
            out[f"{mode}_lines_per_s_ratio"] = round(cur["lines_per_s"] / old["lines_per_s"], 3)
            out[f"{mode}_lines_per_cpu_s_ratio"] = round(cur["lines_per_cpu_s"] / old["lines_per_cpu_s"], 3)
    cur_cases = [v for k, v in out["cases"].items() if k.endswith("/current")]
    out["meets_targets"] = bool(cur_cases) and all(
        c.get("peak_rss_mb", 1e9) <= 250 and c.get("lines_per_s", 0) >= 30_000 for c in cur_cases
    )
    print(json.dumps(out))
    broken = [k for k, v in out["cases"].items() if v.get("error")]
    if broken:  # a case that could not run is a rotted benchmark, not a slow one: CI must see it
        sys.exit(f"tail_memory: {', '.join(broken)} did not run")


if __name__ == "__main__":
    main()
