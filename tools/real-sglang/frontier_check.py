"""Issue 35's frontier on a real sweep's report (``sweep --json``): the SLO's line on the decode axis splits
the points by their per-token bound (every point under ``y_axis.slo_line`` misses that bound and the SLO,
every point on or over it meets that bound), the frontier's points meet the SLO, and a second report of the
same queue (a new process: its frontier from the runs kept beside the queue) has the same frontier.

    python3 frontier_check.py SWEEP.json [AGAIN.json]

One JSON line per check on stdout ({"check", "ok", "detail"}); exit 1 when one failed.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _report(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return json.loads(text[text.index("{") :])


def checks(report: dict[str, Any], again: dict[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    for f in report.get("frontier") or []:
        axis = f.get("y_axis") or {}
        line, metric = axis.get("slo_line"), axis.get("metric")
        points = [(c["label"], p) for c in f.get("curves", []) for p in c.get("points", [])]
        bad = []
        for label, p in points:
            y = p.get("decode_tok_s_per_user")
            if y is None or line is None:
                continue
            met = (p.get("meets") or {}).get(metric)
            if (y < line and (met is not False or p.get("meets_slo") is not False)) or (y >= line and met is False):
                bad.append(f"{label} c={p.get('concurrency')}: y {y:.1f} vs line {line:.1f}, meets {met}")
        out.append({"check": f"line splits by {metric} ({f.get('target')})", "ok": not bad, "detail": bad or axis})
        off = [f"{lb} c={p.get('concurrency')}" for lb, p in points if p.get("on_frontier") and p.get("meets_slo") is False]
        out.append({"check": "frontier points meet the SLO", "ok": not off, "detail": off})
    if again is not None:
        same = again.get("frontier") == report.get("frontier")
        out.append({"check": "the report again: the same frontier", "ok": same, "detail": ""})
    return out


def main(argv: list[str]) -> int:
    report = _report(argv[0])
    again = _report(argv[1]) if len(argv) > 1 else None
    results = checks(report, again)
    for r in results:
        print(json.dumps(r, default=str))
    return 0 if results and all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
