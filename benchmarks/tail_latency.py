"""Latency from a line appended on the host to its arrival in the client: LogTail vs plain ``ssh tail -F``.

Starts its own sshd on 127.0.0.1 (same setup as the test fixture), appends sequence-numbered lines to
a log file and timestamps their arrival through (a) eagletui's LogTail over asyncssh and (b) a plain
``ssh -F cfg HOST tail -F`` subprocess, both reading the same writes in the same run.
Last line of output: a JSON object with p50/p99 for both and their ratio.

    PYTHONPATH=. python benchmarks/tail_latency.py [--lines 400] [--interval 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eagletui.core.timings import FAST
from eagletui.remote.tail import LogTail
from eagletui.remote.transport import SSHOptions, open_transport
from tests.sshd import start_sshd, stop_sshd


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


async def main() -> dict:
    """One piece: the sshd, the writer and the tail live for the whole measurement and each figure is
    taken against the same baseline in this run; the last line is the JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=400)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): 40 lines",
    )
    args = ap.parse_args()
    if args.quick:
        args.lines = 40

    base = Path(tempfile.mkdtemp(prefix="eagletui-taillat-"))
    srv = start_sshd(base / "sshd")
    log = base / "server.log"
    log.write_bytes(b"")
    sent: dict[int, float] = {}
    got_tail: dict[int, float] = {}
    got_base: dict[int, float] = {}

    def on_lines(buf: bytearray, sink: dict[int, float]) -> None:
        now = time.perf_counter()
        while b"\n" in buf:
            line, _, rest = bytes(buf).partition(b"\n")
            del buf[: len(line) + 1]
            if line.startswith(b"seq "):
                sink.setdefault(int(line.split()[1]), now)

    transport = await open_transport(
        srv.alias, SSHOptions(config_file=str(srv.config_file), known_hosts=str(srv.known_hosts)), timings=FAST
    )
    tail = LogTail(transport, str(log), python=sys.executable, timings=FAST)

    async def run_tail() -> None:
        buf = bytearray()
        async for _off, chunk in tail.chunks():
            buf += chunk
            on_lines(buf, got_tail)

    ssh = await asyncio.create_subprocess_exec(
        "ssh",
        "-F",
        str(srv.config_file),
        srv.alias,
        "tail",
        "-c",
        "+0",
        "-F",
        str(log),
        stdout=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )

    async def run_base() -> None:
        buf = bytearray()
        assert ssh.stdout is not None
        while True:
            chunk = await ssh.stdout.read(65536)
            if not chunk:
                return
            buf += chunk
            on_lines(buf, got_base)

    tasks = [asyncio.create_task(run_tail()), asyncio.create_task(run_base())]
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        # warm-up: both readers connected and streaming before anything is measured
        seq = -1
        while -1 not in got_tail or -1 not in got_base:
            os.write(fd, b"seq -1 warmup\n")
            await asyncio.sleep(0.1)
        rng = random.Random(1)
        for seq in range(args.lines):
            await asyncio.sleep(args.interval * rng.uniform(0.5, 1.5))
            sent[seq] = time.perf_counter()
            os.write(fd, b"seq %d %s\n" % (seq, b"x" * rng.randint(10, 200)))
        t0 = time.monotonic()
        while (len(got_tail) <= args.lines or len(got_base) <= args.lines) and time.monotonic() - t0 < 10:
            await asyncio.sleep(0.05)
    finally:
        os.close(fd)
        tail.stop()
        ssh.kill()
        await ssh.wait()
        for t in tasks:
            t.cancel()
        await transport.close()
        stop_sshd(srv)
        shutil.rmtree(base, ignore_errors=True)

    lat = [(got_tail[s] - sent[s]) * 1000 for s in sent if s in got_tail]
    blat = [(got_base[s] - sent[s]) * 1000 for s in sent if s in got_base]
    res = {
        "lines": args.lines,
        "received": len(lat),
        "baseline_received": len(blat),
        "p50_ms": round(statistics.median(lat), 3),
        "p99_ms": round(pct(lat, 0.99), 3),
        "mean_ms": round(statistics.fmean(lat), 3),
        "baseline_p50_ms": round(statistics.median(blat), 3),
        "baseline_p99_ms": round(pct(blat, 0.99), 3),
        "baseline_mean_ms": round(statistics.fmean(blat), 3),
    }
    res["ratio"] = round(res["p50_ms"] / res["baseline_p50_ms"], 3) if res["baseline_p50_ms"] else None
    res["p99_ratio"] = round(res["p99_ms"] / res["baseline_p99_ms"], 3) if res["baseline_p99_ms"] else None
    return res


if __name__ == "__main__":
    result = asyncio.run(main())
    print(
        f"LogTail over asyncssh : p50 {result['p50_ms']} ms  p99 {result['p99_ms']} ms  ({result['received']} lines)"
    )
    print(f"ssh tail -F (baseline): p50 {result['baseline_p50_ms']} ms  p99 {result['baseline_p99_ms']} ms")
    print(json.dumps(result))
