"""What eagletui predicts from the grid's steps 3 launch, against the means of every launch of each setting
(tools/real-sglang/grid.py's output: grid-rR-NAME.json from ``eagletui bench --json``, trace-s3/).

    python3 tools/real-sglang/grid_eval.py GRID_DIR [--json] [--loo]

Three bases, as eagletui meets them: the steps 3 launch with its step profile (profile path), the same
with the no-spec launch of its round beside it (the run book's like-for-like reference), and both
without the profile (the fit and estimate paths). Each prediction is printed with its band and the
measured mean over the launches of that setting, with how far those launches spread; then the one
ranking's decisions (``next_launch``) and ``adaptive_config`` from the same book, which must agree.

``--loo``: the leave-one-out check
instead: every setting predicted from each single other spec launch and the no-spec launch of its round,
against the mean of both launches of the predicted setting; per row the error and whether that mean lies
in the shown band, then the mean and largest |error| and the band's coverage and mean width.
"""

import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from eagletui.core import events as ev
from eagletui.core.predict.forecast import forecasts
from eagletui.core.predict.next_launch import prediction_diagnoses
from eagletui.core.predict.ranking import adaptive_config
from eagletui.core.runs.book import RunBook
from eagletui.profiler import summarize_file
from eagletui.profiler.summary import step_breakdown

D = sys.argv[1]
AS_JSON = "--json" in sys.argv
LABEL = {"s1": "steps 1", "s2": "steps 2", "s3": "steps 3", "s4": "steps 4", "s5": "steps 5", "off": "speculation off"}


def load(rnd: int, name: str) -> dict | None:
    try:
        with open(os.path.join(D, f"grid-r{rnd}-{name}.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def runs_of(data: dict) -> list[dict]:
    return list((data.get("repeats") or {}).get("runs", []))  # the run book judges them again


def launch(book: RunBook, n: int, data: dict) -> None:
    book.apply(ev.LaunchStarted(launch=n, target="local", config={"args": data["config"]["args"], "env": {}, "target": "local"}))
    book.apply(ev.ServerReady(launch=n))
    for i, r in enumerate(runs_of(data)):
        b = 100 * n + i
        c = r["concurrency"]
        book.apply(ev.BenchmarkStarted(bench=b, launch=n, workload={"concurrency": c}))
        ttft = (r.get("ttft_ms") or {}).get("mean")
        itl = (r.get("itl_ms") or {}).get("mean")
        stats = {}
        if itl:
            stats["tok_s"] = {"mean": 1000.0 / itl}
        if ttft is not None:
            stats["ttft_ms"] = {"mean": ttft}
        acc = r.get("accept_length")
        book.apply(
            ev.BenchmarkResult(
                bench=b, launch=n, output_throughput=r["output_throughput"], accept_length=acc,
                requests=r["requests"], duration_s=r["duration_s"], workload_fingerprint=f"c{c}", stats=stats,
            )
        )


def measured() -> dict[tuple[str, int], list[float]]:
    out: dict[tuple[str, int], list[float]] = {}
    for path in sorted(glob.glob(os.path.join(D, "grid-r*-*.json"))):
        name = os.path.basename(path)[:-5].split("-", 2)[2]
        rnd = int(os.path.basename(path).split("-")[1][1:])
        data = load(rnd, name)
        if not data:
            continue
        for r in runs_of(data):
            out.setdefault((LABEL[name], r["concurrency"]), []).append(r["output_throughput"])
    return out


def profile_summary() -> dict | None:
    files = glob.glob(os.path.join(D, "trace-s3", "*DECODE*"))
    return step_breakdown([summarize_file(files[0])]) if files else None


def book_for(with_profile: bool, with_nospec: bool) -> RunBook | None:
    base = load(1, "s3")
    if base is None:
        return None
    book = RunBook()
    launch(book, 1, base)
    prof = profile_summary() if with_profile else None
    if prof:
        book.apply(ev.ProfileCaptured(launch=1, summary=prof))
    off = load(1, "off") if with_nospec else None
    if off is not None:
        launch(book, 2, off)
    return book


meas = measured()


def loo() -> None:
    """Every spec launch with the no-spec launch of its round, predicting every other setting."""
    rows = []
    for rnd in (1, 2):
        off = load(rnd, "off")
        for base in ("s1", "s2", "s3", "s4", "s5"):
            data = load(rnd, base)
            if data is None or off is None:
                continue
            book = RunBook()
            launch(book, 1, data)
            launch(book, 2, off)
            for f in forecasts(book, 1)[0]:
                got = meas.get((f.label, f.concurrency))
                if not got or f.measured or f.label == LABEL[base]:
                    continue
                mean = sum(got) / len(got)
                lo, hi = f.shown()
                rows.append((rnd, LABEL[base], f.label, f.concurrency, f.tok_s, mean, lo, hi))
    errs = []
    inside = 0
    widths = []
    for rnd, base, label, c, pred, mean, lo, hi in rows:
        err = (pred / mean - 1) * 100
        errs.append(abs(err))
        ok = lo <= mean <= hi
        inside += ok
        widths.append((hi - lo) / pred * 100)
        if not AS_JSON:
            print(f"r{rnd} {base:8} -> {label:16} c={c:<2} pred {pred:7.1f} [{lo:7.1f}-{hi:7.1f}] meas {mean:7.1f} "
                  f"err {err:+6.1f} %{'' if ok else '  OUTSIDE'}")
    summary = {
        "predictions": len(rows),
        "mean_abs_error_pct": round(sum(errs) / len(errs), 1) if errs else None,
        "max_abs_error_pct": round(max(errs), 1) if errs else None,
        "within_10pct": sum(e <= 10 for e in errs),
        "inside_band": inside,
        "mean_band_width_pct": round(sum(widths) / len(widths), 1) if widths else None,
        "mean_half_width_pct": round(sum(widths) / len(widths) / 2, 1) if widths else None,
    }
    print(json.dumps(summary))


if "--loo" in sys.argv:
    loo()
    sys.exit(0)
rows = []
for name, wp, wn in (("profile", True, False), ("profile + no-spec", True, True), ("fit + no-spec", False, True), ("estimate", False, False)):
    book = book_for(wp, wn)
    if book is None:
        print("no steps 3 launch in", D)
        sys.exit(1)
    fs, why = forecasts(book, 1)
    for f in fs:
        got = meas.get((f.label, f.concurrency))
        if not got:
            continue
        mean = sum(got) / len(got)
        spread = (max(got) - min(got)) / mean * 100 if mean else 0.0
        err = (f.tok_s / mean - 1) * 100 if mean else float("nan")
        # the model's own error: the base launch's distance from its setting's mean taken out (a base
        # launch 10 % below the steps 3 mean puts every prediction from it 10 % low, whatever the model)
        own = meas.get((LABEL["s3"], f.concurrency))
        norm = (f.tok_s / f.base_tok_s) / (mean / (sum(own) / len(own))) * 100 - 100 if own and f.base_tok_s else None
        low, high = f.shown() if f.low is not None and f.high is not None else (None, None)
        rows.append({
            "base": name, "setting": f.label, "concurrency": f.concurrency, "predicted": round(f.tok_s, 1),
            "low": None if low is None else round(low, 1), "high": None if high is None else round(high, 1),
            "measured_mean": round(mean, 1), "launches": len(got), "spread_pct": round(spread, 1),
            "error_pct": round(err, 1), "model_error_pct": None if norm is None else round(norm, 1),
            "measured_here": bool(getattr(f, "measured", False)), "source": f.source,
        })
    if why:
        rows.append({"base": name, "why_none": why})

book = book_for(True, True)
diag = [d for d in prediction_diagnoses(book, 1) if d.kind == "next_launch"] if book else []
result = {
    "rows": rows,
    "next_launch": diag[0].text if diag else None,
    "adaptive_config": adaptive_config(book, 1) if book else None,
    "measured": {f"{k[0]} c={k[1]}": v for k, v in sorted(meas.items())},
}
judged = [r for r in rows if "why_none" not in r and not r["measured_here"] and r["low"] is not None]
for name in dict.fromkeys(r["base"] for r in judged):
    mine = [r for r in judged if r["base"] == name]
    inside = sum(r["low"] <= r["measured_mean"] <= r["high"] for r in mine)
    half = sum((r["high"] - r["low"]) / 2 / r["predicted"] * 100 for r in mine) / len(mine)
    errs = [abs(r["error_pct"]) for r in mine]
    own = [abs(r["model_error_pct"]) for r in mine if r["model_error_pct"] is not None]
    result.setdefault("coverage", {})[name] = {
        "predictions": len(mine), "inside_band": inside, "mean_half_width_pct": round(half, 1),
        "mean_abs_error_pct": round(sum(errs) / len(errs), 1), "within_10pct": sum(e <= 10 for e in errs),
        "mean_abs_model_error_pct": round(sum(own) / len(own), 1) if own else None,
        "model_within_10pct": sum(e <= 10 for e in own),
    }
if AS_JSON:
    print(json.dumps(result, indent=1))
else:
    for r in rows:
        if "why_none" in r:
            print(f"{r['base']:18} no prediction: {r['why_none']}")
            continue
        band = f"[{r['low']}-{r['high']}]" if r["low"] is not None else ""
        tag = " (measured)" if r["measured_here"] else ""
        print(f"{r['base']:18} c={r['concurrency']:<2} {r['setting']:16} pred {r['predicted']:8.1f} {band:20} "
              f"meas {r['measured_mean']:8.1f} over {r['launches']} (spread {r['spread_pct']:.0f} %) "
              f"err {r['error_pct']:+.1f} %{tag}"
              + ("" if r["model_error_pct"] is None or tag else f" (base-normalised {r['model_error_pct']:+.1f} %)"))
    print("next_launch:", result["next_launch"])
    print("adaptive_config:", json.dumps(result["adaptive_config"]))
    for name, cov in result.get("coverage", {}).items():
        print(f"coverage {name}: {json.dumps(cov)}")
