"""Opening and seeking a 1,000,000-event recording: the indexed reader against ``read_session``.

Usage::

    python benchmarks/replay_load.py [--events N] [--seeks N] [--gz] [--keep DIR]

A recording of ``--events`` events is written by the real ``Recorder`` from a realistic mix: five
launches (config change, launch, every phase with tqdm progress frames and their log lines, ready,
then serving: decode/prefill log lines with their DecodeStats/PrefillStats, HTTP access lines,
benchmark samples and a result; the third launch fails with a CUDA OOM). Each path is then measured
in a fresh subprocess (so peak RSS is its own):

* **indexed** (``ReplaySource`` + ``StreamReplayer``): ``open_s`` = open (the index pass) + the
  first frame's events; ``seek_*_ms`` over ``--seeks`` random targets (a ``StreamReplayer.seek``:
  bisect, block decode, the catch-up events to fold); ``seek_fold_*_ms`` the same plus folding the
  catch-up into a fresh ``SessionState`` (what the screen needs to stand there); ``peak_rss_mb``.
* **baseline** (``read_session`` + ``Replayer``, what ``eagletui replay`` did before): the same;
  its seek hands back a slice of everything before the target, and folding that is the real cost,
  so ``seek_fold`` is measured over ``--fold-seeks`` targets only (each folds up to every event).

The targets of issue 12.5 are open ≤ 2 s, seek p95 ≤ 100 ms, peak RSS ≤ 300 MB. The last output line
is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_PHASE_STEPS = {"load_target": 40, "load_draft": 4, "capture_target": 30, "capture_draft": 20}


def generate(path: Path, n_events: int, *, gz: bool = False) -> int:
    """Write ``n_events`` (about) with the real Recorder; returns the count written.

    One piece: it writes one synthetic session top to bottom in the order a live session records it
    (launch, phases, benchmarks), so the recording reads like a real one.
    """
    from eagletui.core import events as ev
    from eagletui.session.record import Recorder

    rng = random.Random(12)
    mono, wall = 1000.0, 1_800_000_000.0
    rec = Recorder(path, target="gpu-box", profile_name="bench")
    launches = 5
    per_launch = n_events // launches
    written = 0

    def put(e: ev.Event) -> None:
        nonlocal written
        rec.write(e)
        written += 1

    def tick(dt: float) -> dict[str, float]:
        nonlocal mono, wall
        mono += dt
        wall += dt
        return {"mono": mono, "wall": wall}

    seq = 0
    for launch in range(1, launches + 1):
        start = written
        steps = 3 if launch % 2 else 2
        if launch > 1:
            put(ev.ConfigChanged(changes={"arg:--speculative-num-steps": [steps + 1, steps]}, **tick(0.5)))
        config = {
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "args": {"--speculative-num-steps": steps, "--tp-size": 2},
            "env": {"NCCL_ALGO": "Ring"},
        }
        command = ("python3", "-m", "sglang.launch_server", "--model-path", config["model"])
        put(ev.LaunchStarted(launch=launch, target="gpu-box", command=command, config=config, **tick(0.05)))
        failed = launch == 3
        for phase in ev.PHASES:
            put(ev.PhaseStarted(phase=phase, launch=launch, **tick(0.2)))
            total = _PHASE_STEPS.get(phase, 0)
            for done in range(1, total + 1):
                text = f"[2026-11-30 05:00:00 TP0] {phase}: {done * 100 // total}%| {done}/{total} [00:0{done % 10}]"
                put(
                    ev.LogLine(
                        text=text, kind="progress", seq=seq, launch=launch, rank=0, frame=True, **tick(0.3)
                    )
                )
                seq += 1
                put(
                    ev.PhaseProgress(
                        phase=phase, done=done, total=total, unit="it", launch=launch, **tick(0.0)
                    )
                )
            if failed and phase == "capture_target":
                text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
                put(ev.LogLine(text=text, kind="error", seq=seq, launch=launch, **tick(0.1)))
                put(
                    ev.ServerFailed(
                        kind="oom", message="CUDA out of memory", phase=phase, launch=launch, **tick(0)
                    )
                )
                put(ev.ProcessExited(code=1, launch=launch, **tick(0.5)))
                break
            put(ev.PhaseFinished(phase=phase, seconds=total * 0.3, launch=launch, **tick(0.0)))
        if failed:
            continue
        put(ev.ServerReady(url="http://127.0.0.1:30000", launch=launch, **tick(0.1)))
        put(ev.BenchmarkStarted(bench=launch, launch=launch, workload={"prompts": 200}, **tick(0.1)))
        i = 0
        budget = per_launch if launch < launches else n_events - start
        while written - start < budget - 3:
            i += 1
            running = rng.randint(1, 64)
            thr = rng.uniform(800, 1600)
            acc = rng.uniform(2.2, 3.6)
            text = (
                f"[2026-11-30 05:00:00 TP0] Decode batch, #running-req: {running}, #token: {rng.randint(1000, 90000)}, "
                f"token usage: {rng.uniform(0.01, 0.9):.2f}, accept len: {acc:.2f}, accept rate: {acc / 4:.2f}, "
                f"cuda graph: True, gen throughput (token/s): {thr:.2f}, #queue-req: 0"
            )
            put(
                ev.LogLine(
                    text=text, kind="decode", seq=seq, launch=launch, rank=0, **tick(rng.uniform(0.001, 0.02))
                )
            )
            seq += 1
            put(
                ev.DecodeStats(
                    gen_throughput=round(thr, 2),
                    running_req=running,
                    accept_len=round(acc, 2),
                    accept_rate=round(acc / 4, 2),
                    token_usage=0.3,
                    cuda_graph=True,
                    launch=launch,
                    **tick(0),
                )
            )
            if i % 8 == 0:
                text = f"[2026-11-30 05:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: {rng.randint(100, 4000)}, #cached-token: 0, token usage: 0.30, #running-req: {running}, #queue-req: 0"
                put(ev.LogLine(text=text, kind="prefill", seq=seq, launch=launch, rank=0, **tick(0.002)))
                seq += 1
                put(
                    ev.PrefillStats(
                        new_seq=1,
                        new_token=rng.randint(100, 4000),
                        running_req=running,
                        launch=launch,
                        **tick(0),
                    )
                )
            if i % 5 == 0:
                text = '[2026-11-30 05:00:00] INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK'
                put(ev.LogLine(text=text, seq=seq, launch=launch, **tick(0.001)))
                seq += 1
                put(
                    ev.BenchmarkSample(
                        bench=launch,
                        t=i * 0.01,
                        tok_s=thr / 10,
                        accept_len=round(acc, 2),
                        ttft_ms=rng.uniform(20, 90),
                        launch=launch,
                        **tick(0),
                    )
                )
        put(
            ev.BenchmarkResult(
                bench=launch,
                launch=launch,
                output_throughput=1000.0 + 50 * launch,
                accept_length=3.0 - launch * 0.1,
                requests=200,
                duration_s=60.0,
                **tick(0.1),
            )
        )
        put(ev.ProcessExited(code=0, launch=launch, **tick(1.0)))
    rec.close()
    if gz:
        import gzip
        import os

        data = path.read_bytes()
        path.unlink()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(gzip.compress(data, 6))
    return written


def _rss_mb() -> float:
    """Peak RSS of this process. VmHWM where there is /proc: ``ru_maxrss`` survives fork+exec, so a
    child of the (large) generating parent would report the parent's peak."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pctl(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def measure_indexed(path: Path, seeks: int) -> dict:
    from eagletui.core.state.screen import SessionState
    from eagletui.session.index import ReplaySource
    from eagletui.session.replay import StreamReplayer

    t0 = time.perf_counter()
    src = ReplaySource.open(path)
    first = src.first_events()
    open_s = time.perf_counter() - t0
    r = StreamReplayer(src)
    rng = random.Random(7)
    times, fold_times = [], []
    folded = 0
    for _ in range(seeks):
        target = rng.uniform(0, src.duration)
        t0 = time.perf_counter()
        catch_up = r.seek(time=target)
        t1 = time.perf_counter()
        SessionState().apply_all(catch_up)
        t2 = time.perf_counter()
        folded += len(catch_up)
        times.append(t1 - t0)
        fold_times.append(t2 - t0)
    t0 = time.perf_counter()
    r.seek(launch=src.launches[-1])
    launch_ms = (time.perf_counter() - t0) * 1000
    out = {
        "open_s": round(open_s, 3),
        "first_events": len(first),
        "seek_p50_ms": round(_pctl(times, 0.5) * 1000, 2),
        "seek_p95_ms": round(_pctl(times, 0.95) * 1000, 2),
        "seek_launch_ms": round(launch_ms, 2),
        "seek_fold_p50_ms": round(_pctl(fold_times, 0.5) * 1000, 2),
        "seek_fold_p95_ms": round(_pctl(fold_times, 0.95) * 1000, 2),
        "catch_up_mean": folded // max(1, seeks),
        "events": src.events_count,
        "marks": len(src.marks),
        "duration_s": round(src.duration, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
    }
    src.close()
    return out


def measure_baseline(path: Path, seeks: int, fold_seeks: int) -> dict:
    from eagletui.core.state.screen import SessionState
    from eagletui.session.format import read_session
    from eagletui.session.replay import Replayer

    t0 = time.perf_counter()
    _header, events, _w = read_session(path)
    r = Replayer(events)
    open_s = time.perf_counter() - t0
    rng = random.Random(7)
    times = []
    for _ in range(seeks):
        target = rng.uniform(0, r.duration)
        t0 = time.perf_counter()
        r.seek(time=target)
        times.append(time.perf_counter() - t0)
    fold_times = []
    for _ in range(fold_seeks):
        target = rng.uniform(0, r.duration)
        t0 = time.perf_counter()
        SessionState().apply_all(r.seek(time=target))
        fold_times.append(time.perf_counter() - t0)
    return {
        "open_s": round(open_s, 3),
        "seek_p50_ms": round(_pctl(times, 0.5) * 1000, 2),
        "seek_p95_ms": round(_pctl(times, 0.95) * 1000, 2),
        "seek_fold_p50_ms": round(_pctl(fold_times, 0.5) * 1000, 2) if fold_times else None,
        "seek_fold_p95_ms": round(_pctl(fold_times, 0.95) * 1000, 2) if fold_times else None,
        "events": len(events),
        "peak_rss_mb": round(_rss_mb(), 1),
    }


def _child(which: str, path: Path, seeks: int, fold_seeks: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", which, "--file", str(path), "--seeks", str(seeks)]
        + ["--fold-seeks", str(fold_seeks)],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--seeks", type=int, default=200)
    ap.add_argument("--fold-seeks", type=int, default=10, help="baseline seeks that also fold (slow)")
    ap.add_argument("--gz", action="store_true", help="gzip the recording (the reader decompresses it once)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the read_session baseline")
    ap.add_argument("--keep", type=Path, help="write the recording here (and reuse it if it exists)")
    ap.add_argument("--child", choices=["indexed", "baseline"], help=argparse.SUPPRESS)
    ap.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): 20k events, 20 seeks",
    )
    args = ap.parse_args()
    if args.quick and not args.child:
        args.events, args.seeks, args.fold_seeks = 20_000, 20, 2
    if args.child:
        if args.child == "indexed":
            print(json.dumps(measure_indexed(args.file, args.seeks)))
        else:
            print(json.dumps(measure_baseline(args.file, args.seeks, args.fold_seeks)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        name = f"bench-{args.events}.jsonl" + (".gz" if args.gz else "")
        path = (args.keep or Path(tmp)) / name
        if not path.exists():
            t0 = time.perf_counter()
            n = generate(path, args.events, gz=args.gz)
            print(
                f"generated {n} events, {path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s"
            )
        indexed = _child("indexed", path, args.seeks, args.fold_seeks)
        print(f"indexed : {indexed}")
        result = {
            "events": indexed["events"],
            "file_mb": round(path.stat().st_size / 1e6, 1),
            "gz": args.gz,
            "open_s": indexed["open_s"],
            "seek_p50_ms": indexed["seek_p50_ms"],
            "seek_p95_ms": indexed["seek_p95_ms"],
            "seek_launch_ms": indexed["seek_launch_ms"],
            "seek_fold_p95_ms": indexed["seek_fold_p95_ms"],
            "peak_rss_mb": indexed["peak_rss_mb"],
        }
        if not args.no_baseline:
            base = _child("baseline", path, args.seeks, args.fold_seeks)
            print(f"baseline: {base}")
            keys = (
                "open_s",
                "seek_p50_ms",
                "seek_p95_ms",
                "seek_fold_p50_ms",
                "seek_fold_p95_ms",
                "peak_rss_mb",
            )
            result["baseline"] = {k: base[k] for k in keys}
            result["open_speedup"] = round(base["open_s"] / max(indexed["open_s"], 1e-9), 1)
            result["rss_ratio"] = round(base["peak_rss_mb"] / max(indexed["peak_rss_mb"], 1e-9), 1)
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
