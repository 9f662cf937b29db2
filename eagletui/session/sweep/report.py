"""The sweep's report (``eagletui sweep --json``, the human summary, the Queue tab's end state).

Per launch: its settings, state, cells (tok/s, accept, Δ % vs the baseline at the same client point,
the confidence interval, runs, why it ran no more) and verdict. Then what the sweep decided — per
client point the ranking, the winner and how sure that is (:mod:`eagletui.core.sweep.decide`) — the
main effects, the drift check, the crossover per concurrency range with SGLang's
``--speculative-adaptive-config`` where the winners allow one, the run and launch counts and how the
first complete ETA compared with the time the sweep took.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from eagletui.core.profile.sweep import Variant, client_label, variant_profile
from eagletui.core.stats.confidence import estimate, fmt_sure
from eagletui.core.stats.sample import mean_stdev
from eagletui.core.sweep.crossover import crossover
from eagletui.core.sweep.decide import drift, noise_for
from eagletui.core.sweep.effects import delta_pct, judge, main_effects
from eagletui.session.sweep.cells import DONE, FAILED, why_not_counted

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile
    from eagletui.core.sweep.decide import Cell, Decision
    from eagletui.session.sweep.cells import VariantState
    from eagletui.session.sweep.queue import SweepQueue

#: The JSON shape of the report; bumped when a key changes meaning (docs/sweeps.md lists them).
REPORT_SCHEMA = 2


def _r(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def _base_cell_values(q: SweepQueue, ci: int) -> list[float]:
    """The baseline's runs at client point ``ci``: its first launch and its drift check, pooled."""
    out: list[float] = []
    for v in q.variants:
        if v.config == 0 and v.state == "done":
            out.extend(v.cells[ci].values())
    return out


def build_report(q: SweepQueue, verdict: Any = None, profile: Profile | None = None) -> dict[str, Any]:
    policy = q.repeat_policy
    decisions = q.decisions()
    noise_cells = q.launch_cells()
    noise = noise_for(noise_cells)
    names = {v.index: v.name for v in q.variants}
    rows = [_variant_row(q, v, verdict, profile, names, noise_cells) for v in q.variants]
    measured = q.measured()
    one_group = len(decisions) == 1
    top = decisions[0] if one_group and decisions and decisions[0].winner is not None else None
    top_mean = top.means.get(top.winner) if top is not None and top.winner is not None else None
    return {
        "schema": REPORT_SCHEMA,
        "target": q.target,
        "profile": q.profile,
        "repeats": q.repeats,
        "policy": {**policy.to_dict(), "text": policy.describe()},
        # what "best" means in the decisions and the crossover ([sweep] objective)
        "objective": {**q.goal.to_json(), "unit": q.goal.unit, "text": q.goal.describe()},
        "baseline": q.variants[0].name if q.variants else None,
        "client_factors": list(q.client_factors),
        "variants": rows,
        "decisions": _decisions(q, decisions, names),
        "ranking": [names[k] for k in decisions[0].ranking] if one_group and decisions else [],
        "effects": [e.to_dict() for e in main_effects(measured, q.factors)],
        "best": None
        if top is None or top.winner is None
        else {
            "name": names[top.winner],
            "settings": dict(q.variants[top.winner].settings),
            "tok_s": _r(top_mean if q.goal.kind == "tok_s" else _config_tok_s(q, top.winner), 2),
            "objective_value": _r(top_mean, 2),
            "how_sure": top.how_sure(),
        },
        "noise": None
        if noise is None
        else {"cv_pct": round(noise.cv * 100, 3), "df": noise.df, "cells": noise.cells, "text": noise.text()},
        "drift": _drift(q),
        "crossover": _crossover(q, decisions, profile),
        "runs": q.runs(),
        "good_runs": sum(len(c.good) for v in q.variants for c in v.cells),
        "launches": q.launches(),
        "cells": sum(len(v.cells) for v in q.variants if v.recheck_of is None),
        "eta_check": _eta_check(q),
        "counts": q.counts(),
        "aborted": q.aborted,
        "paused": q.paused or None,
    }


def _config_tok_s(q: SweepQueue, config: int) -> float | None:
    """The mean tok/s of a config's counted runs (its launches pooled) at the one client point."""
    return mean_stdev([x for v in q.variants if v.config == config for x in v.cells[0].values()])[0]


def _variant_row(
    q: SweepQueue,
    v: VariantState,
    verdict: Any,
    profile: Profile | None,
    names: dict[int, str],
    noise_cells: list[Cell],
) -> dict[str, Any]:
    """One launch of the report: its settings, state, cells and verdict (with the reasons), and what
    it cost."""
    from eagletui.session.sweep.queue import _is_spec

    cells_out: list[dict[str, Any]] = []
    verdicts: list[str] = []
    reasons: list[str] = []
    spec_on = _is_spec(profile, v) if profile is not None else None
    for ci in range(len(v.cells)):
        cell, cell_verdict, cell_reasons = _cell(q, v, ci, verdict, spec_on, noise_cells)
        verdicts.append(cell_verdict)
        prefix = f"{v.cells[ci].label}: " if len(v.cells) > 1 else ""
        reasons.extend(prefix + r for r in cell_reasons)
        cells_out.append(cell)
    if v.state == DONE:
        verdict_s = "fail" if "fail" in verdicts else "pass"
    elif v.state == FAILED and v.failure_kind == "benchmark":
        verdict_s, reasons = "fail", [v.failure]
    elif v.state == FAILED:
        verdict_s, reasons = "launch-failed", [f"{v.failure_kind}: {v.failure}".strip(": ")]
    else:
        verdict_s, reasons = v.state, [v.failure] if v.failure else []
    one = cells_out[0] if len(cells_out) == 1 else None
    return {
        "index": v.index,
        "name": v.name,
        "settings": dict(v.settings),
        "state": v.state,
        "drift_check_of": None if v.recheck_of is None else names.get(v.recheck_of),
        "tok_s": one["tok_s"] if one else None,
        "tok_s_stdev": one["tok_s_stdev"] if one else None,
        "accept_length": one["accept_length"] if one else None,
        "ttft_ms": one["ttft_ms"] if one else None,
        "delta_pct": one["delta_pct"] if one else None,
        "verdict": verdict_s,
        "reasons": reasons,
        "triage_kind": v.failure_kind or None,
        "run_id": v.run_id or None,
        "max_rate": v.max_rate or None,  # [sweep.max_rate]: the highest request rate meeting the SLO
        "host": v.target or None,
        "launches": v.launches,
        "oom_retry": v.oom_retry or None,
        "step_profile": v.profile_note or None,
        "gpu_gate": v.gate or None,
        "repeats": one["repeats"] if one else [r for c in cells_out for r in c["repeats"]],
        "cells": cells_out,
        "launch_s": _r(v.launch_s, 2),
        "bench_s": _r(v.bench_s, 2),
        "overhead_s": _r(v.overhead_s, 2),
    }


def _cell(
    q: SweepQueue, v: VariantState, ci: int, verdict: Any, spec_on: bool | None, noise_cells: list[Cell]
) -> tuple[dict[str, Any], str, list[str]]:
    """Client point ``ci`` of a launch: its numbers (Δ % against the baseline there, the confidence
    interval of its runs), and its verdict with the reasons."""
    policy = q.repeat_policy
    c = v.cells[ci]
    mean, sd, n = c.tok_s()
    base_vals = _base_cell_values(q, ci)
    base = sum(base_vals) / len(base_vals) if base_vals else None
    est = estimate(c.values(), noise_for(noise_cells, ci))
    half = est.half_pct(policy.confidence) if est is not None else None
    accept, ttft = c.accept(), c.ttft_ms()
    cell_verdict = v.state
    cell_reasons: list[str] = []
    if v.state == DONE:
        if mean is None:
            cell_verdict, cell_reasons = (
                "fail",
                ["; ".join(sorted({why_not_counted(r) for r in c.repeats}))[:300] or "no run"],
            )
        else:
            is_spec = spec_on if spec_on is not None else accept is not None
            _bm, base_sd, base_n = mean_stdev(base_vals)
            cell_verdict, cell_reasons = judge(
                mean,
                accept,
                ttft,
                base if v.config else None,
                verdict,
                is_spec=is_spec,
                stdev=sd,
                n=n,
                base_stdev=base_sd,
                base_n=base_n,
            )
    cell = {
        "client": dict(c.client),
        "label": c.label,
        "tok_s": _r(mean, 2),
        "tok_s_stdev": _r(sd, 2),
        "ci_pct": _r(half, 2),
        "runs": len(c.good),
        "attempts": len(c.repeats),
        "accept_length": _r(accept, 3),
        "ttft_ms": _r(ttft, 1),
        "delta_pct": (0.0 if base else None)
        if v.config == 0 and v.recheck_of is None
        else _r(delta_pct(mean, base), 2),
        "stop": c.stop or None,
        "stop_text": c.stop_text or None,
        "verdict": cell_verdict,
        "repeats": c.repeats,
    }
    return cell, cell_verdict, cell_reasons


def _decisions(q: SweepQueue, decisions: list[Decision], names: dict[int, str]) -> list[dict[str, Any]]:
    """What the sweep decided per client point, the launches by name."""
    points = [c.client for c in q.variants[0].cells] if q.variants else []
    dec_out = []
    for ci, d in enumerate(decisions):
        dd = d.to_dict()
        dd.update(
            client=points[ci] if ci < len(points) else {},
            label=client_label(points[ci]) if ci < len(points) else "",
            winner=names.get(d.winner) if d.winner is not None else None,
            runner_up=names.get(d.runner_up) if d.runner_up is not None else None,
            rival=names.get(d.rival) if d.rival is not None else None,
            leader=names.get(d.leader) if d.leader is not None else None,
            ranking=[names[k] for k in d.ranking],
            reordered=[
                {"config": names.get(a), "above": names.get(b), "tied_with": names.get(t), "text": text}
                for (a, b, t), text in zip(d.reordered, d.reorder_texts(names, q.goal.unit), strict=True)
            ],
        )
        dec_out.append(dd)
    return dec_out


def _drift(q: SweepQueue) -> dict[str, Any] | None:
    """The baseline's drift check: its late runs vs its early ones, per client point."""
    late = next((v for v in q.variants if v.recheck_of is not None), None)
    if late is None:
        return None
    early = q.variants[late.recheck_of or 0]
    if late.state != DONE or early.state != DONE:
        return {"state": late.state, "detected": None, "points": [], "text": f"drift check {late.state}"}
    conf = q.repeat_policy.confidence
    noise_cells = q.launch_cells()
    points = []
    detected = False
    worst = None
    for ci, (a, b) in enumerate(zip(early.cells, late.cells, strict=True)):
        d = drift(a.values(), b.values(), noise_for(noise_cells, ci), conf)
        sep = None if d is None else d.separated
        detected = detected or bool(sep)
        if d is not None and d.pct is not None and (worst is None or abs(d.pct) > abs(worst.pct or 0)):
            worst = d
        points.append(
            {
                "label": a.label,
                "early_tok_s": _r(a.tok_s()[0], 2),
                "late_tok_s": _r(b.tok_s()[0], 2),
                "delta_pct": None if d is None else _r(d.pct, 2),
                "ci_pct": None if d is None else _r(d.half_pct, 2),
                "drifted": sep,
                "text": "" if d is None else d.text(),
            }
        )
    if worst is None:
        text = "drift check: noise unknown"
    elif detected:
        text = (
            f"drift: the baseline moved {worst.pct:+.1f} % between its first and its last launch "
            f"({fmt_sure(worst.sure or 0.5)} sure): differences smaller than that are not trustworthy"
        )
    else:
        text = f"no drift: the baseline's last launch is within the noise of its first ({worst.text()})"
    return {"state": late.state, "detected": detected, "points": points, "text": text}


def _crossover(q: SweepQueue, decisions: list[Any], profile: Profile | None) -> dict[str, Any] | None:
    """The best setting per range of the one numeric client factor (concurrency) and the form the
    host's SGLang takes it in (``--speculative-adaptive-config``) where the winners allow it."""
    if len(q.client_factors) != 1 or not q.variants or len(q.variants[0].cells) < 2:
        return None
    factor = q.client_factors[0]
    levels = [c.client.get(factor) for c in q.variants[0].cells]
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in levels):
        return None
    args_of: dict[int, dict[str, Any]] = {}
    env_of: dict[int, dict[str, str]] = {}
    if profile is not None:
        for v in q.variants:
            if v.recheck_of is not None:
                continue
            try:
                p = variant_profile(profile, Variant(v.name, v.settings))
            except ValueError:
                continue
            args_of[v.index] = dict(p.args)
            env_of[v.index] = dict(p.env)
    xo = crossover(decisions, levels, factor, args_of, env_of if profile is not None else None)
    kind = getattr(getattr(profile, "kind", None), "name", "sglang")
    if kind != "sglang" and xo.adaptive_config is not None:
        xo = dataclasses.replace(
            xo,
            adaptive_config=None,
            launch_args=None,
            why_not=f"--speculative-adaptive-config is SGLang's; this is {kind}",
        )
    names = {v.index: v.name for v in q.variants}
    table = []
    for i, row in enumerate(xo.rows):
        nxt = xo.rows[i + 1].start if i + 1 < len(xo.rows) else None
        d = row.to_dict(names)
        d["to"] = nxt
        d["range"] = f"{factor} {row.start}–{nxt - 1}" if isinstance(nxt, int) else f"{factor} ≥ {row.start}"
        d["settings"] = dict(q.variants[row.winner].settings)
        table.append(d)
    return {
        "factor": factor,
        "rows": table,
        "sglang_adaptive_config": xo.adaptive_config,
        "launch_args": xo.launch_args,
        "why_not": xo.why_not or None,
    }


def _eta_check(q: SweepQueue) -> dict[str, Any] | None:
    """The first complete ETA against the time the sweep then took (once it finished)."""
    first = q.first_eta
    if not first:
        return None
    out: dict[str, Any] = {
        "predicted_s": _r(float(first["eta_s"]), 1),
        "at_wall": first.get("wall"),
        "launches_done_then": first.get("launches_done", 0),
        "when": first.get("when") or f"after {first.get('launches_done', 0)} launch(es)",
    }
    if q.finished_wall is not None:
        actual = q.finished_wall - float(first["wall"])
        out["actual_s"] = _r(actual, 1)
        out["error_pct"] = _r((float(first["eta_s"]) - actual) / actual * 100.0, 1) if actual > 0 else None
    return out


def cell_line(v: VariantState, ci: int, q: SweepQueue) -> str:
    """One cell in words, for the human summary and the Queue tab: ``concurrency=4: 310.2 tok/s ± 1.1 %
    (2 runs) · accept 3.20 · Δ +5.0 %``."""
    c = v.cells[ci]
    mean, _sd, _n = c.tok_s()
    if mean is None:
        return f"{c.label}: -"
    noise_cells = q.launch_cells()
    est = estimate(c.values(), noise_for(noise_cells, ci))
    half = est.half_pct(q.repeat_policy.confidence) if est is not None else None
    band = f" ± {half:.1f} %" if half is not None else ""
    acc = c.accept()
    base_vals = _base_cell_values(q, ci)
    base = sum(base_vals) / len(base_vals) if base_vals else None
    parts = [f"{c.label}: {mean:.1f} tok/s{band} ({len(c.good)} run{'s' if len(c.good) != 1 else ''})"]
    if acc:
        parts.append(f"accept {acc:.2f}")
    if v.config and base:
        parts.append(f"Δ {(mean - base) / base * 100:+.1f} %")
    return " · ".join(parts)
