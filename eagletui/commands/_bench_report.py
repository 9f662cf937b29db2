"""What ``eagletui bench`` reports: one launch's benchmarks summed up for the JSON contract
(:func:`summarize_repeats`) and the lines it prints on the terminal (the result, the spec-vs-no-spec
table, the baseline comparison).

Apart from :mod:`eagletui.commands.bench` (which launches, measures and fills the summary) because it
is pure formatting of numbers already measured: no workspace, no waiting.
"""

from __future__ import annotations

from typing import Any

from eagletui.core.events import BenchmarkResult
from eagletui.core.profile.model import Profile
from eagletui.core.profile.slo import Slo
from eagletui.core.runs.accept import definitions as accept_definitions
from eagletui.core.runs.run import Group, Run
from eagletui.core.stats.sample import mean_stdev
from eagletui.core.textsafe import inert


def _mean_stats(results: list[BenchmarkResult], metric: str) -> dict[str, float] | None:
    blocks = [r.stats[metric] for r in results if isinstance(r.stats.get(metric), dict)]
    if not blocks:
        return None
    return {k: sum(b[k] for b in blocks if k in b) / len(blocks) for k in blocks[0]}


def summarize_repeats(
    results: list[BenchmarkResult], profile: Profile, target: str, run: Run | None = None
) -> dict[str, Any]:
    """One launch's benchmarks for the terminal and ``--json``. With ``run`` (the run book's fold of
    the launch) only valid results count and the numbers are per concurrency (``by_concurrency``);
    the top-level ones are that setting's when there is one, null when several (never a mean across
    concurrencies)."""
    good = run.good_results if run is not None else [r for r in results if r.requests > 0]
    groups = run.groups() if run is not None else []
    concs = sorted({g.concurrency for g in groups})
    single = len(concs) <= 1
    tok_m, tok_s, _ = mean_stdev([r.output_throughput for r in good]) if single else (None, None, 0)
    acc_m, acc_s, _ = mean_stdev([r.accept_length for r in good]) if single else (None, None, 0)
    ttft_m, ttft_s, _ = (
        mean_stdev([(r.stats.get("ttft_ms") or {}).get("median") for r in good])
        if single
        else (None, None, 0)
    )
    fps = sorted({r.workload_fingerprint for r in results if r.workload_fingerprint})
    problems = dict(zip(map(id, run.results), run.problems, strict=False)) if run is not None else {}
    return {
        "target": target,
        "profile": profile.name,
        "runner": profile.bench.runner,
        "output_throughput": tok_m if single else None,
        "accept_length": acc_m,
        "ttft_ms": _mean_stats(good, "ttft_ms") if single else None,
        "itl_ms": _mean_stats(good, "itl_ms") if single else None,
        "tok_s": _mean_stats(good, "tok_s") if single else None,
        "requests": sum(r.requests for r in results),
        "failed": sum(r.failed for r in results),
        "workload_fingerprint": fps[0] if len(fps) == 1 else fps,
        "config": profile.snapshot(),
        "by_concurrency": [
            _group_json(g, run, profile.slo) for g in sorted(groups, key=lambda g: g.concurrency) if run is not None
        ],
        "slo": profile.slo.to_dict() if profile.slo else None,
        "slo_text": profile.slo.describe() if profile.slo else "",
        "invalid": sorted({p for r in results for p in problems.get(id(r), ())}),
        # which accept length, by each definition, and per request (docs/export-json.md's ``accept``)
        "accept": accept_definitions(run) if run is not None and run.is_spec else {},
        "repeats": {
            "n": len(results),
            "output_throughput": {"mean": tok_m, "stdev": tok_s},
            "accept_length": {"mean": acc_m, "stdev": acc_s},
            "ttft_ms_median": {"mean": ttft_m, "stdev": ttft_s},
            "runs": [
                {
                    "output_throughput": r.output_throughput,
                    "accept_length": r.accept_length,
                    "ttft_ms": r.stats.get("ttft_ms"),
                    "itl_ms": r.stats.get("itl_ms"),
                    "requests": r.requests,
                    "failed": r.failed,
                    "duration_s": r.duration_s,
                    "error": r.error,
                    "concurrency": run.concurrency_of(r) if run is not None else None,
                    "valid": not problems.get(id(r)),
                    "invalid_reasons": list(problems.get(id(r), ())),
                }
                for r in results
            ],
        },
        "error": "; ".join(sorted({r.error for r in results if r.error})),
    }


def _group_json(g: Group, run: Run, slo: Slo | None) -> dict[str, Any]:
    """One concurrency: its tok/s over the repeats, and its per-request latencies under the SLO
    (``slo_attainment`` and ``goodput`` null without an ``[slo]`` or per-request records)."""
    tok, acc = g.metric("tok_s"), g.metric("accept_len")
    return {
        "concurrency": g.concurrency,
        "output_throughput": tok.mean,
        "output_throughput_stdev": tok.stdev,
        "accept_length": acc.mean,
        "runs": tok.n,
        **run.slo_stats(g, slo).to_json(),
    }


def _slo_line(g: dict[str, Any], text: str) -> str:
    """``meets ttft p99 ≤ 2 s and itl p99 ≤ 50 ms: 97.5 % of requests within it, goodput 6.10 req/s 780.0
    tok/s  ttft p99 812 ms  itl p99 31 ms`` (the percentiles alone without an SLO)."""
    lat = g.get("latency_ms") or {}
    pcts = "  ".join(f"{k[:-3]} p99 {v['p99']:.0f} ms" for k, v in lat.items() if k in ("ttft_ms", "itl_ms"))
    if g.get("slo_attainment") is None:
        unrecorded = [inert(str(k)) for k, v in (g.get("meets") or {}).items() if v is None]
        if unrecorded and g.get("sampled"):
            return f"cannot tell {text}: no request recorded {', '.join(unrecorded)}  {pcts}".rstrip()
        return pcts
    gp = g["goodput"]
    verdict = {True: "meets", False: "misses", None: "cannot tell"}[g.get("meets_slo")]
    return (
        f"{verdict} {text}: {g['slo_attainment'] * 100:.1f} % of requests within it, goodput "
        f"{gp['req_s']:.2f} req/s {gp['tok_s']:.1f} tok/s  {pcts}"
    )


def _print_accept(accept: dict[str, Any]) -> None:
    """The requests' own accept lengths (``accept.per_request``) and what they say: two modes
    (``bimodal``), or two definitions that disagree (``warning``)."""
    pr = accept.get("per_request")
    if isinstance(pr, dict) and pr.get("n"):
        q = "  ".join(f"{k} {pr[k]:.2f}" for k in ("p10", "p50", "p90") if isinstance(pr.get(k), int | float))
        print(f"  accept per request n {pr['n']}  {q}  (1 + correct drafts ÷ verifies)")
    for key in ("bimodal", "warning"):
        if accept.get(key):
            print(f"  {inert(str(accept[key]))}")


def _print_human(summary: dict[str, Any]) -> None:
    rep = summary["repeats"]
    tok = rep["output_throughput"]
    acc = rep["accept_length"]
    print(f"{summary['profile']} on {summary['target']} ({summary['runner']}, {rep['n']} run(s))")
    if summary["output_throughput"] is not None:
        pm = f" ± {tok['stdev']:.1f}" if tok["stdev"] is not None else " (1 run, no noise estimate)"
        print(f"  output throughput  {summary['output_throughput']:.1f}{pm} tok/s")
        if acc["mean"] is not None:
            apm = f" ± {acc['stdev']:.2f}" if acc["stdev"] is not None else ""
            print(f"  accept length      {acc['mean']:.2f}{apm}")
        for key, label in (("ttft_ms", "TTFT"), ("itl_ms", "ITL")):
            s = summary.get(key)
            if s:
                print(
                    f"  {label:<5} ms          mean {s['mean']:.1f}  p50 {s['median']:.1f}  p99 {s['p99']:.1f}"
                )
    elif not summary["by_concurrency"]:
        print("  no valid result")
    else:  # several concurrencies: one line each, never a mean across them
        for g in summary["by_concurrency"]:
            sd = g["output_throughput_stdev"]
            pm = f" ± {sd:.1f}" if sd is not None else ""
            a = f"  accept {g['accept_length']:.2f}" if g["accept_length"] is not None else ""
            print(
                f"  concurrency {g['concurrency']:>4}  {g['output_throughput']:9.1f}{pm} tok/s ({g['runs']} run(s)){a}"
            )
    many = len(summary["by_concurrency"]) > 1
    for g in summary["by_concurrency"]:
        line = _slo_line(g, summary.get("slo_text") or "")
        if line:
            print((f"  concurrency {g['concurrency']:>4}: " if many else "  ") + line)
    _print_accept(summary.get("accept") or {})
    print(f"  requests {summary['requests']}  failed {summary['failed']}")
    for why in summary.get("invalid") or []:
        print(f"  invalid: {inert(why)}")
    if summary["error"]:
        print(f"  error: {inert(summary['error'])}")


def print_table(rows: list[dict[str, Any]], ref: str) -> None:
    """The spec run vs its no-spec reference, one line per concurrency (``ConcurrencyRow.to_json``)."""
    print(f"per concurrency, vs no-spec {inert(ref)}:")
    print(
        f"  {'conc':>4}  {'spec tok/s':>16}  {'no-spec tok/s':>16}  {'speedup':>7}  {'call':<12}  "
        f"{'decode':>7}  {'accept':>6}  break-even accept"
    )

    def m(x: dict[str, Any] | None) -> str:
        if not x or x.get("mean") is None:
            return "—"
        return f"{x['mean']:.1f}" + (f" ± {x['stdev']:.1f}" if x.get("stdev") is not None else "")

    for r in rows:
        sp = f"{r['speedup']:.2f}×" if r.get("speedup") is not None else "—"
        acc = r["accept_len"]["mean"]
        be, most = r.get("break_even_accept_len"), r.get("max_accept")
        if r.get("speedup") is None:
            be_text = "—"
        elif be is None:
            be_text = "none pays at this cost"
        elif r.get("break_even_reachable") is False:
            be_text = f"{be:.2f}: out of reach (at most {most} per verify)"
        else:
            be_text = f"{be:.2f}" + (f" (at most {most})" if most else "")
        st = r.get("steady") or {}
        decode = f"{st['speedup']:.2f}×" if st.get("speedup") is not None else "—"
        call = "not judged" if r.get("left_out") else (r.get("call") or "—")
        print(
            f"  {r['concurrency']:>4}  {m(r['spec_tok_s']):>16}  {m(r['nospec_tok_s']):>16}  {sp:>7}  "
            f"{call:<12}  {decode:>7}  {(f'{acc:.2f}' if acc is not None else '—'):>6}  {be_text}"
        )
    for r in rows:
        if r.get("noise"):
            print(f"  {r['concurrency']:>4}  aggregate {inert(str(r['noise']))}")
        st = r.get("steady") or {}
        if st.get("band"):
            print(f"        decode ({inert(str(st['source']))}) {inert(str(st['band']))}")
        for why in r.get("left_out") or []:
            print(f"        not judged: {inert(str(why))}")


def _print_baseline(b: dict[str, Any]) -> None:
    pct = b.get("delta_pct")
    tok = b.get("tok_s")
    delta_text = f"{pct:+.1f} %" if pct is not None else "Δ —"
    print(
        f"vs baseline {inert(str(b['session']))}:{b['run']} ({tok:.1f} tok/s): {delta_text}"
        + ("" if b["comparable"] else " (not like for like)")
    )
    if "economics" in b:
        print(inert(b["economics"]["sentence"]))


def print_report(summary: dict[str, Any], base_summary: dict[str, Any] | None, baseline: bool) -> None:
    """The whole terminal report of ``eagletui bench`` without ``--json``: the result, the no-spec one,
    the economics table, the diagnoses and the baseline comparison (when there is one)."""
    _print_human(summary)
    if base_summary is not None:
        print("without speculation:")
        _print_human(base_summary)
    if "economics" in summary:
        print_table(summary["economics"]["by_concurrency"], summary["economics"]["vs"])
        if summary["economics"]["crossover_text"]:
            print(f"  {summary['economics']['crossover_text']}")
        print(inert(summary["economics"]["sentence"]))
    for d in summary.get("diagnosis") or []:  # none yet: a run interrupted before its first launch
        print(inert(f"why: {d['text']}" + (f" → {d['hint']}" if d.get("hint") else "")))
    if baseline:
        _print_baseline(summary["baseline"])
