"""What ``eagletui sweep`` prints on the terminal: the finished sweep's report (each launch with its
cells, the decisions, the effects, the drift check and the crossover), the predictions checked against
the measurements, and the ``--plan`` of the launches with their ETA.

Apart from :mod:`eagletui.commands.sweep` (which plans, runs the hosts over the queue and writes the
crossover) because it only formats what the queue and its report already hold.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from eagletui.core.profile.toggles import split_key
from eagletui.core.runs.frontier_text import frontier_lines
from eagletui.core.textsafe import inert


def _fmt_settings(settings: dict[str, Any]) -> str:
    from eagletui.core.profile.sweep import variant_label

    return variant_label(settings)


def _cell_text(c: dict[str, Any]) -> str:
    tok = f"{c['tok_s']:.1f}" if c["tok_s"] is not None else "-"
    ci = f" ± {c['ci_pct']:.1f} %" if c.get("ci_pct") is not None else ""
    acc = f"{c['accept_length']:.2f}" if c["accept_length"] is not None else "-"
    d = f"{c['delta_pct']:+.1f}%" if c["delta_pct"] is not None else "-"
    runs = c.get("runs", 0)
    return f"{tok}{ci} tok/s ({runs} run{'s' if runs != 1 else ''})  accept {acc}  Δ {d}"


def print_human(report: dict[str, Any]) -> None:
    from eagletui.core.profile.sweep import fmt_value as show

    pol = report.get("policy") or {}
    print(
        f"sweep of {report['profile']} on {report['target']} ({pol.get('text') or str(report['repeats']) + ' repeat(s)'})"
    )
    for r in report["variants"]:
        why = f" ({'; '.join(r['reasons'])})" if r["reasons"] else ""
        retry = " [launched twice: out of GPU memory the first time]" if r.get("oom_retry") else ""
        cells = r.get("cells") or []
        if len(cells) == 1:
            print(
                f"  {r['index'] + 1:>2}. {inert(r['name'])}: {_cell_text(cells[0])}  {r['verdict']}{inert(why)}{retry}"
            )
            continue
        print(f"  {r['index'] + 1:>2}. {inert(r['name'])}: {r['verdict']}{inert(why)}{retry}")
        for c in cells:
            print(f"        {inert(c['label'])}: {_cell_text(c)}")
    for r in report["variants"]:
        if r.get("step_profile"):
            print(f"  step profile of {inert(r['name'])}: {inert(r['step_profile'])}")
        if r.get("max_rate"):
            print(f"  max rate of {inert(r['name'])}: {inert(str(r['max_rate'].get('text', '')))}")
    decisions = report.get("decisions") or []
    goal = report.get("objective") or {}
    if decisions and goal.get("kind", "tok_s") != "tok_s":
        print(f"decisions by the objective: {inert(str(goal.get('text', '')))}")
    for d in decisions:
        if d.get("winner") is None:
            continue
        where = f" at {inert(d['label'])}" if len(decisions) > 1 else ""
        # the margin and how sure are against the nearest competitor by mean: named
        vs = f"vs {inert(d['rival'])}: " if d.get("rival") and d.get("margin_pct") is not None else ""
        print(f"decision{where}: {inert(d['winner'])} — {vs}{inert(d['how_sure'])}")
        if len(d["ranking"]) > 1:
            print("  ranked: " + " > ".join(inert(n) for n in d["ranking"]))
        for r in d.get("reordered") or []:  # where the ranking departs from the means: why
            print(f"  not by the means: {inert(r['text'])}")
    for e in report["effects"]:
        name = split_key(e["factor"])[1].lstrip("-")
        # the band printed is the one the rule used (twice the effect's error), and its reading
        print(f"effect of {name} {show(e['from'])}→{show(e['to'])}: {e['delta_pct']:+.1f}% ({e['band']})")
    if report.get("drift"):
        print(inert(report["drift"]["text"]))
    xo = report.get("crossover")
    if xo and xo["rows"]:
        print(f"crossover by {xo['factor']}:")
        for row in xo["rows"]:
            print(f"  {inert(row['range'])}: {inert(row['winner'])}  ({inert('; '.join(row['how_sure']))})")
        if xo.get("sglang_adaptive_config"):
            print(
                "  SGLang: "
                + inert(_adaptive_flags(xo["launch_args"], "FILE"))
                + " with FILE = "
                + json.dumps(xo["sglang_adaptive_config"], separators=(",", ":"))
            )
        elif xo.get("why_not"):
            print(f"  no --speculative-adaptive-config: {inert(xo['why_not'])}")
    if report["best"]:
        print(
            f"best: {inert(report['best']['name'])} at {report['best']['tok_s']:.1f} tok/s ({inert(report['best']['how_sure'])})"
        )
    for f in report.get("frontier") or []:  # each host's points, the frontier marked, the SLO answer
        print("\n".join(frontier_lines(f, all_points=True)))
    pooled = report.get("noise")
    runs = f"{report.get('runs', 0)} benchmarks in {report.get('launches', 0)} launches for {report.get('cells', 0)} cells"
    print(runs + (f"; {pooled['text']}" if pooled else ""))
    eta = report.get("eta_check")
    if eta and eta.get("actual_s") is not None:
        from eagletui.core.sweep.plan import fmt_duration

        print(
            f"ETA check: {fmt_duration(eta['predicted_s'])} predicted at {eta['when']}, "
            f"{fmt_duration(eta['actual_s'])} taken ({eta['error_pct']:+.1f} %)"
        )
    if report.get("paused"):
        print(f"paused: {inert(report['paused'])}")


def _adaptive_flags(args: dict[str, Any], path: str) -> str:
    """The launch flags that serve the crossover: ``--speculative-adaptive --speculative-adaptive-config PATH …``."""
    parts: list[str] = []
    for k, v in args.items():
        if v is True:
            parts.append(k)
        else:
            parts.extend([k, path if k == "--speculative-adaptive-config" else str(v)])
    return shlex.join(parts)


def points_raw(queue: Any) -> list[dict[str, Any]]:
    return [dict(c.client) for c in queue.variants[0].cells] if queue.variants else []


def plan_lines(queue: Any, history: Any, targets: list[str], profile: Any = None) -> list[str]:
    """``sweep --plan``: the launches in order with their cells and estimates, and the whole-sweep ETA."""
    from eagletui.core.sweep.plan import fmt_duration

    q = queue
    eta = q.eta(history=history)
    configs = sum(1 for v in q.variants if v.recheck_of is None)
    points = [c.label for c in q.variants[0].cells] if q.variants else []
    cells = configs * len(points)
    pol = q.repeat_policy
    runs = pol.repeats if not pol.adaptive else eta.runs_per_cell
    out = [
        f"sweep plan of {q.profile} on {', '.join(targets)}: {len(q.variants)} launch"
        f"{'es' if len(q.variants) != 1 else ''} for {configs} server config{'s' if configs != 1 else ''}"
        + (" (+1 drift check)" if len(q.variants) > configs else "")
        + f", {cells} cell{'s' if cells != 1 else ''} ({len(points)} client setting{'s' if len(points) != 1 else ''} a launch, "
        f"no relaunch between them)",
        f"repeats: {pol.describe()}; ~{runs:.1f} runs a cell expected",
        "client settings: " + ", ".join(inert(p) for p in points),
    ]
    if profile is not None:
        for p in points_raw(q):
            c = p.get("concurrency")
            n = p.get("num_prompts", profile.bench.num_prompts)
            if isinstance(c, int) and c > n:
                out.append(
                    f"note: at concurrency={c} only {n} prompts are sent: at most {n} requests are in flight "
                    "(raise bench.num_prompts to the highest concurrency)"
                )
    if q.goal.kind != "tok_s":
        out.append(f"decided by: {q.goal.describe()} ([sweep] objective)")
    mr = getattr(getattr(profile, "sweep", None), "max_rate", None)
    if mr is not None:
        out.append(
            f"then in each launch: {mr.describe()} ([sweep.max_rate]; its benchmarks are not in the ETA below)"
        )
    for pos, i in enumerate(q.order):
        v = q.variants[i]
        est = eta.per_launch.get(i)
        if est is None:
            when = v.state
        elif est <= 0 and not eta.complete:  # nothing of it learned yet: not "~0:00"
            when = "time not known yet"
        else:
            when = f"{'~' if eta.complete else '≥ '}{fmt_duration(est)}"
        tag = " (baseline)" if v.index == 0 else (" (drift check)" if v.recheck_of is not None else "")
        left = sum(1 for c in v.cells if not c.stop) if v.state not in ("done", "failed", "skipped") else 0
        out.append(
            f"  {pos + 1:>2}. {inert(v.name)}{tag}: {v.state}; {left} cell{'s' if left != 1 else ''} to benchmark, {when}"
        )
    hosts = f"{q.workers} host{'s' if q.workers != 1 else ''}"
    if eta.complete:
        out.append(
            f"ETA {fmt_duration(eta.seconds)} on {hosts} (learned launch times and benchmark durations)"
        )
    else:
        least = f"≥ {fmt_duration(eta.seconds)}" if eta.seconds > 0 else "not known yet"
        out.append(
            f"ETA {least} on {hosts}; not yet known: {'; '.join(eta.unknown)} (learned as the sweep runs)"
        )
    return out


def _print_predictions(predictions: list[dict[str, Any]]) -> None:
    """Each variant the cycle model predicted from an earlier one: predicted vs measured (issue 25)."""
    for p in predictions:
        over = p.get("over_launches")
        tail = (
            f"; over launches {', '.join(map(str, over['launches']))} and {', '.join(map(str, over['source_launches']))}: "
            f"{over['predicted_tok_s']:.1f} vs {over['measured_tok_s']:.1f} ({over['error_pct']:+.1f} %; one setting's "
            f"launches spread {max(over['spread_pct'], over['source_spread_pct']):.0f} %)"
            if over
            else ""
        )
        print(
            f"  predicted {p['setting']} at concurrency {p['concurrency']} from launch {p['predicted_from']}: "
            f"{p['predicted_tok_s']:.1f} tok/s, measured {p['measured_tok_s']:.1f} ({p['error_pct']:+.1f} %){tail}"
        )
