"""Cost of scrubbing secrets from every recorded line: ``Redactor.text`` on a real SGLang log.

Usage::

    python benchmarks/redact_throughput.py [--log FILE] [--repeat N] [--old-record FILE]

The log defaults to the real SGLang 0.5.17 EAGLE-3 launch+serve log in /work/shared/fixtures (or any
log given). Reported: lines/s for a fresh Redactor, for one that has learnt 5 secrets (the usual case:
the profile's key and tokens), and for the plain JSON encoding of the same LogLine events, which every
recording pays anyway (the ratio is the overhead redaction adds). ``--old-record`` takes the previous
``eagletui/session/record.py`` (``git show 3a3ea11:eagletui/session/record.py > old.py``) to compare
with the substring-based redactor it replaces. The last output line is a JSON object.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eagletui.core.events import LogLine  # noqa: E402
from eagletui.core.profile.redact import Redactor  # noqa: E402

DEFAULT_LOG = Path("/work/shared/fixtures/sglang-0.5.17-h200/eagle3-cudagraph-serve-profile-sigterm.log")


def rate(fn, lines: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for line in lines:
            fn(line)
        best = min(best, time.perf_counter() - t0)
    return len(lines) / best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", default=str(DEFAULT_LOG))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--min-lines", type=int, default=50_000, help="the log is repeated up to this many lines")
    ap.add_argument("--old-record", default=None, help="previous record.py, to time its Redactor too")
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): 5k lines, one repeat",
    )
    ns = ap.parse_args()
    if ns.quick:
        ns.repeat, ns.min_lines = 1, 5_000
    base = Path(ns.log).read_text(encoding="utf-8", errors="replace").splitlines()
    lines = list(base)
    while len(lines) < ns.min_lines:
        lines += base
    learnt = Redactor(
        ["sk-proj-abcdefgh12345678", "plainKey-4242", "hf_AbCdEfGhIjKlMnOpQrSt", "zz9z", "p4ssw0rd!"]
    )
    out: dict[str, float | int | str] = {"lines": len(lines), "log": Path(ns.log).name}
    out["json_only_lines_per_s"] = rate(lambda s: json.dumps(LogLine(text=s).to_dict()), lines, ns.repeat)
    out["text_fresh_lines_per_s"] = rate(Redactor().text, lines, ns.repeat)
    out["text_learnt_lines_per_s"] = rate(learnt.text, lines, ns.repeat)
    out["record_path_lines_per_s"] = rate(
        lambda s: json.dumps(learnt.event_dict(LogLine(text=s))), lines, ns.repeat
    )
    out["record_path_vs_json_only"] = out["record_path_lines_per_s"] / out["json_only_lines_per_s"]
    if ns.old_record:
        spec = importlib.util.spec_from_file_location("old_record", ns.old_record)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        old = mod.Redactor(
            ["sk-proj-abcdefgh12345678", "plainKey-4242", "hf_AbCdEfGhIjKlMnOpQrSt", "zz9z", "p4ssw0rd!"]
        )
        out["old_text_learnt_lines_per_s"] = rate(old.text, lines, ns.repeat)
        out["text_learnt_vs_old"] = out["text_learnt_lines_per_s"] / out["old_text_learnt_lines_per_s"]
        out["old_record_path_lines_per_s"] = rate(
            lambda s: json.dumps(old.event_dict(LogLine(text=s))), lines, ns.repeat
        )
        out["record_path_vs_old"] = out["record_path_lines_per_s"] / out["old_record_path_lines_per_s"]
    for k, v in out.items():
        print(f"{k:32} {v:,.2f}" if isinstance(v, float) else f"{k:32} {v}")
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
