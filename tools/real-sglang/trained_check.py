"""The trained pair on the real server against its offline replay (issue 31): what eagletui measured
(bench --json: the pooled accept length, the histogram and per-position reach, the per-request accept by
prompt category) beside what ``trained_pair/check_pair.py`` computed for the same prompts by replaying
SGLang's greedy verify loop in plain PyTorch. One JSON line per check on stdout, like stall_check.py.

    python3 tools/real-sglang/trained_check.py EXPECTED.json BENCH.json [SERVER.log]

With the launch's server.log, eagletui's pooled accept is also checked against the server's own decode lines
(the mean of their ``accept len``: at concurrency 1 every logging interval holds the same number of
verifies, so that mean is the pooled figure) within 1 %.

The tolerances are the replay's, not eagletui's: the server's bf16 kernels and batching can send a greedy
near-tie down another path, which changes that request's acceptance, so pooled numbers are compared
(±0.15 accept length, ±5 points of reach per position, ±0.3 per category) and the shape claims are checked
too (acceptance falls with position; the categories differ the way the replay says).
"""

import json
import re
import sys


def out(check, ok, detail=""):
    print(json.dumps({"check": check, "ok": bool(ok), "detail": detail}, default=str))


def main():
    exp = json.load(open(sys.argv[1]))
    try:
        bench = json.load(open(sys.argv[2]))
    except (OSError, ValueError) as exc:
        out("trained: bench --json readable", False, str(exc))
        return
    acc = bench.get("accept") or {}
    shown = ((acc.get("definitions") or {}).get("shown") or {}).get("value")
    want = exp["overall"]
    out(
        "trained: accept length (pooled) within ±0.15 of the offline replay",
        isinstance(shown, (int, float)) and abs(shown - want["accept_length"]) <= 0.15,
        {"eagletui": shown, "replay": want["accept_length"]},
    )
    if len(sys.argv) > 3:
        try:
            lens = [float(m) for m in re.findall(r"accept len: ([0-9.]+)", open(sys.argv[3], errors="replace").read())]
        except OSError as exc:
            lens, shown_err = [], str(exc)
        else:
            shown_err = ""
        mean = sum(lens) / len(lens) if lens else None
        out(
            "trained: accept length within 1 % of the server's own decode lines",
            isinstance(shown, (int, float)) and mean is not None and abs(shown - mean) <= 0.01 * mean,
            {"eagletui": shown, "server_log_mean": mean and round(mean, 4), "lines": len(lens), "error": shown_err},
        )
    reach = acc.get("per_position") or []
    rw = want["per_position"]
    out(
        "trained: reach per draft position within ±5 points of the replay",
        len(reach) == len(rw) and all(abs(a - b) <= 0.05 for a, b in zip(reach, rw, strict=True)),
        {"eagletui": reach, "replay": rw},
    )
    out(
        "trained: acceptance falls with the draft position (a trained drafter, not a built one)",
        len(reach) >= 2 and all(a > b for a, b in zip(reach, reach[1:], strict=False)) and 0.0 < reach[-1] < 1.0,
        reach,
    )
    cats = (acc.get("by_category") or {})
    rows = exp.get("per_request") or []
    for name in sorted(exp.get("by_category") or {}):
        mine = [r["completion_tokens"] / r["verify_ct"] for r in rows if r["category"] == name and r["verify_ct"]]
        replay = sum(mine) / len(mine) if mine else None
        got = (cats.get(name) or {}).get("mean")
        out(
            f"trained: accept of the {name!r} prompts (mean per request) within ±0.3 of the replay",
            isinstance(got, (int, float)) and replay is not None and abs(got - replay) <= 0.3,
            {"eagletui": got, "replay": replay and round(replay, 3), "n": (cats.get(name) or {}).get("n")},
        )
    print(json.dumps({"figures": {"eagletui": {"accept": shown, "per_position": reach, "by_category": cats,
                                               "histogram": acc.get("histogram"), "tok_s": bench.get("tok_s")},
                                  "replay": {k: exp.get(k) for k in ("overall", "by_category",
                                                                     "distinct_8grams_by_category")}}}))


if __name__ == "__main__":
    main()
