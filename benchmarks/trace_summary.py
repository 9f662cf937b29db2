"""How fast and how lean is ``eagletui trace`` on a big trace, against Holistic Trace Analysis?

Synthesises a ≥ 500 MB (uncompressed) Chrome trace from the event shapes of the real eager decode trace
in tests/fixtures/traces (kernels, CPU ops, runtime launches, annotations — repeated with shifted times
and fresh correlation ids), then, each in a fresh process so peak RSS is that tool's alone:

- eagletui's streaming summary (``eagletui.profiler.summarize_file``);
- HTA's kernel breakdown (``TraceAnalysis.get_gpu_kernel_breakdown``) on the same file, when the
  ``hta`` package is importable (install ``holistictraceanalysis`` for the benchmark only; pass
  ``--hta-python`` to use another interpreter that has it).

Targets (issue 15): ≤ 10 s and ≤ 300 MB peak RSS. Last line: JSON with ``seconds``, ``peak_rss_mb``,
``hta_seconds``, ``hta_peak_rss_mb`` (null when HTA is not available), ``trace_mb``, ``kernels``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tests" / "fixtures" / "traces" / "decode-eager-TP-0.trace.json.gz"

OURS = """
import json, resource, sys, time
t = time.perf_counter()
from eagletui.profiler import summarize_file
r = summarize_file(sys.argv[1])
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "kernels": r.kernels, "kernel_ms": r.kernel_ms,
                  "categories": {k: r.ms(k) for k in r.categories}}))
"""

HTA = """
import json, resource, sys, time, os, logging
logging.disable(logging.CRITICAL)
t = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
kernel_type_df, kernel_df = ta.get_gpu_kernel_breakdown(visualize=False)
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "kernel_types": kernel_type_df.to_dict(orient="records")}, default=str))
"""


def synthesise(dest: Path, target_mb: int) -> tuple[int, int]:
    """Write a trace of at least ``target_mb`` MB; returns (bytes, kernel events)."""
    with gzip.open(SOURCE) as fh:
        doc = json.load(fh)
    events = doc["traceEvents"]
    ts0 = min(e["ts"] for e in events if isinstance(e.get("ts"), (int, float)))
    span = max(e["ts"] + e.get("dur", 0) for e in events if isinstance(e.get("ts"), (int, float))) - ts0
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    written = kernels = 0
    with dest.open("w") as out:
        head = json.dumps(header)[:-1]
        out.write(head + ', "traceEvents": [\n')
        written += len(head) + 20
        rep = 0
        first = True
        while written < target_mb * 1_000_000:
            shift = rep * (span + 1000.0)
            idshift = rep * 1_000_000
            for e in events:
                e2 = dict(e)
                if isinstance(e2.get("ts"), (int, float)):
                    e2["ts"] = e2["ts"] + shift
                args = e2.get("args")
                if isinstance(args, dict):
                    args = dict(args)
                    for key in ("correlation", "External id"):
                        if isinstance(args.get(key), int):
                            args[key] += idshift
                    e2["args"] = args
                if e2.get("cat") == "kernel":
                    kernels += 1
                s = json.dumps(e2)
                out.write(("" if first else ",\n") + s)
                first = False
                written += len(s) + 2
            rep += 1
        out.write("\n]}\n")
    return dest.stat().st_size, kernels


def run(python: str, code: str, arg: str, env: dict[str, str]) -> dict | None:
    proc = subprocess.run([python, "-c", code, arg], capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-2000:])
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=520, help="size of the synthetic trace (uncompressed MB)")
    ap.add_argument("--hta-python", default=sys.executable, help="an interpreter with the hta package")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): a 5 MB trace, no HTA",
    )
    args = ap.parse_args()
    if args.quick:
        args.mb, args.no_hta = 5, True
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory(prefix="eagletui-trace-bench-") as tmp:
        trace_dir = Path(tmp) / "traces"
        trace_dir.mkdir()
        path = trace_dir / "bench-TP-0.trace.json"
        size, kernels = synthesise(path, args.mb)
        print(f"synthetic trace: {size / 1e6:.0f} MB, {kernels} kernel events", file=sys.stderr)
        ours = run(sys.executable, OURS, str(path), env)
        if ours is None:
            print(json.dumps({"error": "eagletui trace failed"}))
            return 1
        print(
            f"eagletui: {ours['seconds']:.2f} s, peak RSS {ours['rss_mb']:.0f} MB, "
            f"{ours['kernels']} kernels, {ours['kernel_ms']:.1f} ms",
            file=sys.stderr,
        )
        hta = None
        if not args.no_hta:
            probe = subprocess.run([args.hta_python, "-c", "import hta"], capture_output=True)
            if probe.returncode == 0:
                hta = run(args.hta_python, HTA, str(trace_dir), env)
                if hta is not None:
                    print(
                        f"HTA:      {hta['seconds']:.2f} s, peak RSS {hta['rss_mb']:.0f} MB", file=sys.stderr
                    )
            else:
                print(
                    "HTA not importable: pass --hta-python or pip install holistictraceanalysis",
                    file=sys.stderr,
                )
    result = {
        "trace_mb": round(size / 1e6, 1),
        "kernels": ours["kernels"],
        "seconds": round(ours["seconds"], 3),
        "peak_rss_mb": round(ours["rss_mb"], 1),
        "hta_seconds": round(hta["seconds"], 3) if hta else None,
        "hta_peak_rss_mb": round(hta["rss_mb"], 1) if hta else None,
        "speedup_vs_hta": round(hta["seconds"] / ours["seconds"], 2) if hta else None,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
