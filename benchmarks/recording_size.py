"""Size of a session recording against the log it holds, and the cost of reading it back.

Usage::

    python benchmarks/recording_size.py [--repeat N] [--log FILE]

The log is the real SGLang 0.5.17 EAGLE-3 launch + serving + SIGTERM log from the shared fixtures
(repeated N times), and a serving-heavy variant (its startup, then its Decode/Prefill/HTTP lines
repeated), which is what a long recording mostly holds. Every event the interpreter makes of it is
recorded twice in the same run: by ``Recorder`` (format v2: compact log rows, clock deltas, fields
changed since the last event of the type) and, as the baseline, as full event dicts (format v1, what
recordings were before). Ratios are recording bytes / log bytes. The last output line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eagletui.core.phases.interpreter import LogInterpreter  # noqa: E402
from eagletui.session.format import make_header, read_session, write_session  # noqa: E402
from eagletui.session.record import Recorder  # noqa: E402

DEFAULT_LOG = Path("/work/shared/fixtures/sglang-0.5.17-h200/eagle3-cudagraph-serve-profile-sigterm.log")


def events_of(log: bytes) -> list:
    interp = LogInterpreter(launch=1)
    out = []
    for i in range(0, len(log), 65536):
        out += interp.feed_bytes(log[i : i + 65536])
    return out + interp.flush()


def measure(name: str, log: bytes, tmp: Path) -> dict:
    events = events_of(log)
    new = tmp / f"{name}-v2.jsonl"
    t0 = time.perf_counter()
    with Recorder(new, target="t", profile_name="p") as rec:
        for e in events:
            rec.write(e)
    write_s = time.perf_counter() - t0
    old = write_session(tmp / f"{name}-v1.jsonl", make_header("t", "p"), events)
    t0 = time.perf_counter()
    _, back, warnings = read_session(new)
    read_new = time.perf_counter() - t0
    t0 = time.perf_counter()
    read_session(old)
    read_old = time.perf_counter() - t0
    assert len(back) == len(events) and not warnings
    rows = sum(len(line) for line in new.read_bytes().splitlines(keepends=True) if line.startswith(b"["))
    res = {
        "log_bytes": len(log),
        "events": len(events),
        "ratio_v2": round(new.stat().st_size / len(log), 3),
        "ratio_v1_baseline": round(old.stat().st_size / len(log), 3),
        "log_rows_ratio_v2": round(rows / len(log), 3),
        "record_events_per_s": round(len(events) / write_s),
        "read_s_v2": round(read_new, 3),
        "read_s_v1": round(read_old, 3),
    }
    print(f"{name:8} {json.dumps(res)}")
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--log", type=Path, default=DEFAULT_LOG)
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): the log once",
    )
    args = ap.parse_args()
    if args.quick:
        args.repeat = 1
    log = args.log.read_bytes()
    lines = log.split(b"\n")
    start = next((i for i, line in enumerate(lines) if b"fired up" in line), len(lines) - 1)
    serving = [
        line
        for line in lines[start + 1 :]
        if b"Decode batch" in line or b"Prefill batch" in line or b"POST" in line
    ]
    serve_log = b"\n".join(lines[: start + 1]) + b"\n" + b"\n".join(serving * (20 * args.repeat)) + b"\n"
    with tempfile.TemporaryDirectory() as d:
        out = {
            "full_log": measure("full", log * args.repeat, Path(d)),
            "serving": measure("serving", serve_log, Path(d)),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
