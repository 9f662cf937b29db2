"""Why the drafter misses: accept ≈ 1, acceptance past the draft's context, by prompt category and by
draft position, and a prompt format the draft was not trained on.

Inputs: the benchmarks of the launch (``accept_length``; ``accept["histogram"]``, the summed
``spec_correct_drafts_histogram``; ``accept_by``: accept length by prompt-length bucket and by prompt
category, from each request's ``prompt_tokens``, ``completion_tokens`` and ``spec_verify_ct``), the decode
lines' ``accept len`` when no benchmark ran, the launch facts (algorithm, steps, topk) and the preflight's
``models`` host fact (the target's and the draft's ``config.json``: architecture, vocabulary, hidden size,
``max_position_embeddings``).
"""

from __future__ import annotations

from typing import Any

from eagletui.core.diagnosis.fold import Diagnosis, LaunchObs, as_dict

#: A spec run at or below this accept length accepts (almost) nothing.
ACCEPT_ONE = 1.05
#: A draft position accepted in fewer verifies than this is not paying for its draft step.
POSITION_FLOOR = 0.10


def _results(o: LaunchObs) -> list[Any]:
    return [b for b in o.benches if not b.error and b.requests > 0 and b.failed < b.requests]


def _models(o: LaunchObs) -> tuple[dict[str, Any], dict[str, Any]]:
    m = as_dict(o.host.get("models"))
    return as_dict(m.get("target")), as_dict(m.get("draft"))


def _reach(hist: list[Any]) -> list[float]:
    counts = [float(c) for c in hist if isinstance(c, int | float) and not isinstance(c, bool) and c >= 0]
    if len(counts) != len(hist) or sum(counts) <= 0:
        return []
    total = sum(counts)
    out = []
    for j in range(1, len(counts)):
        out.append(sum(counts[j:]) / total)
    return out


def draft_diagnoses(o: LaunchObs, fmt: Any) -> list[Diagnosis]:
    if not o.speculates:
        return []
    out: list[Diagnosis] = []
    results = _results(o)
    accepts = [r.accept_length for r in results if isinstance(r.accept_length, int | float)]
    if accepts:
        acc = accepts[-1]
        src, how = "benchmark", f"accept {acc:.2f} over {results[-1].requests} requests (benchmark)"
    else:
        if o.accept_lines < 5:
            return out
        acc = o.accept_sum / o.accept_lines
        src, how = "log", f"mean accept len {acc:.2f} over {o.accept_lines} Decode lines (log)"
    hist = []
    for r in reversed(results):
        h = (
            (getattr(r, "accept", None) or {}).get("histogram")
            if isinstance(getattr(r, "accept", None), dict)
            else None
        )
        if isinstance(h, list) and h:
            hist = h
            break
    reach = _reach(hist)
    tcfg, dcfg = _models(o)
    algo = str(o.facts.get("spec_algorithm") or "")
    if acc <= ACCEPT_ONE:
        out.append(_accept_one(o, fmt, acc, how, src, reach, algo, tcfg, dcfg))
    elif reach:
        out.extend(_positions(o, fmt, reach, hist))
    for r in reversed(results):
        by = getattr(r, "accept_by", None)
        if isinstance(by, dict) and by:
            out.extend(_by_length(o, fmt, by, dcfg))
            out.extend(_by_category(by))
            break
    if ACCEPT_ONE < acc < 2.0 and results:
        wl = next(iter(o.workloads.values()), {})
        if not wl.get("chat_template"):
            out.append(
                Diagnosis(
                    kind="prompt_format",
                    text=(
                        f"accept {acc:.2f} was measured on bare prompts (no chat template): a draft trained on chat-"
                        "formatted conversations accepts more on them (2.42 on a bare prompt → 5.88 on MT-bench in "
                        "one SGLang report)"
                    ),
                    evidence=f"{how}; the benchmark sent raw text to /generate",
                    hint=fmt.advice("chat_template", o.version, {}),
                    source="benchmark",
                    data={"accept": acc},
                )
            )
    return out


def _accept_one(
    o: LaunchObs,
    fmt: Any,
    acc: float,
    how: str,
    src: str,
    reach: list[float],
    algo: str,
    tcfg: dict[str, Any],
    dcfg: dict[str, Any],
) -> Diagnosis:
    ev = [how]
    if reach:
        ev.append(
            f"the first draft token accepted in {reach[0] * 100:.1f} % of verifies (spec_correct_drafts_histogram)"
        )
    arch = str(dcfg.get("arch") or "")
    cause = "the draft does not predict this target: a draft trained for another model, or untrained weights"
    if arch:
        ev.append(f"draft config.json: {arch} (preflight)")
        eagle3 = "eagle3" in arch.lower()
        if algo.upper() == "EAGLE" and eagle3:
            cause = f"an EAGLE-3 draft ({arch}) runs as --speculative-algorithm EAGLE"
        elif algo.upper() == "EAGLE3" and "eagle" in arch.lower() and not eagle3:
            cause = f"an EAGLE (not EAGLE-3) draft ({arch}) runs as --speculative-algorithm EAGLE3"
    tv, dv, ddv = tcfg.get("vocab"), dcfg.get("vocab"), dcfg.get("draft_vocab")
    if isinstance(tv, int) and isinstance(dv, int) and tv != dv and not ddv:
        cause = f"the vocabularies differ (target {tv}, draft {dv}) and the draft names no mapping"
        ev.append("vocab sizes from config.json (preflight)")
    th, dh = tcfg.get("hidden"), dcfg.get("hidden")
    if isinstance(th, int) and isinstance(dh, int) and th != dh:
        cause = f"the draft was built for another target (hidden size {dh}, the target's {th})"
    return Diagnosis(
        kind="draft_accept_one",
        text=f"accept {acc:.2f}: the drafter is not working ({cause})",
        evidence="; ".join(ev),
        hint=fmt.advice("draft_mismatch", o.version, {"algorithm": algo or "?", "draft_arch": arch or None}),
        source=src,
        level="warn",
        data={"accept": acc, "first_position": reach[0] if reach else None, "draft_arch": arch or None},
    )


def _positions(o: LaunchObs, fmt: Any, reach: list[float], hist: list[Any]) -> list[Diagnosis]:
    fs, ft = o.facts.get("spec_steps"), o.facts.get("spec_topk")
    steps: int = fs if isinstance(fs, int) else len(reach)
    topk: int = ft if isinstance(ft, int) else 1
    shown = " ".join(f"{p * 100:.0f}%" for p in reach[:8])
    ev = f"spec_correct_drafts_histogram {list(hist)[:9]} (benchmark)"
    weak = [j for j, p in enumerate(reach[:steps], start=1) if p < POSITION_FLOOR]
    if weak and weak[0] <= steps:
        keep = max(1, weak[0] - 1)
        return [
            Diagnosis(
                kind="draft_positions",
                text=(
                    f"acceptance by draft position {shown}: position {weak[0]} and deeper are accepted in under "
                    f"{POSITION_FLOOR * 100:.0f} % of verifies, so steps {steps}"
                    + (f" with topk {topk}" if topk > 1 else "")
                    + " draft more than they keep"
                ),
                evidence=ev,
                hint=fmt.advice("spec_settings", o.version, {"steps": keep, "topk": 1 if topk > 1 else None}),
                source="benchmark",
                level="warn",
                data={"per_position": reach, "weak_from": weak[0], "steps": steps},
            )
        ]
    return [
        Diagnosis(
            kind="draft_positions",
            text=f"acceptance by draft position {shown} (share of verifies that kept each position)",
            evidence=ev,
            source="benchmark",
            data={"per_position": reach, "steps": steps},
        )
    ]


def _by_length(o: LaunchObs, fmt: Any, by: dict[str, Any], dcfg: dict[str, Any]) -> list[Diagnosis]:
    rows = [
        r
        for r in by.get("prompt_len") or []
        if isinstance(r, dict) and isinstance(r.get("accept"), int | float)
    ]
    rows = [r for r in rows if isinstance(r.get("n"), int) and r["n"] > 0]
    if len(rows) < 2:
        return []
    mp = dcfg.get("max_position")
    mpe: int | None = mp if isinstance(mp, int) and mp > 0 else None
    shown = ", ".join(
        f"{r.get('lo', 0)}–{r.get('hi', '…')} tok: {r['accept']:.2f} (n {r['n']})" for r in rows
    )
    if mpe:
        below = [r for r in rows if isinstance(r.get("hi"), int) and int(r["hi"]) <= mpe]
        above = [r for r in rows if isinstance(r.get("lo"), int) and int(r["lo"]) >= mpe]
        if below and above:
            a_lo = sum(r["accept"] * r["n"] for r in below) / sum(r["n"] for r in below)
            a_hi = sum(r["accept"] * r["n"] for r in above) / sum(r["n"] for r in above)
            if a_hi < 0.8 * a_lo:
                return [
                    Diagnosis(
                        kind="draft_context",
                        text=(
                            f"accept {a_lo:.2f} for prompts within the draft's {mpe} positions, {a_hi:.2f} past them: the "
                            "draft was not trained that far"
                        ),
                        evidence=f"accept by prompt length {shown} (benchmark); draft max_position_embeddings {mpe} (preflight)",
                        hint=fmt.advice("draft_context", o.version, {"draft_context": mpe}),
                        source="benchmark",
                        level="warn",
                        data={"below": a_lo, "above": a_hi, "draft_context": mpe, "buckets": rows},
                    )
                ]
    first, last = rows[0]["accept"], rows[-1]["accept"]
    if last < 0.8 * first:
        return [
            Diagnosis(
                kind="draft_context",
                text=f"accept falls with prompt length: {first:.2f} for the shortest prompts, {last:.2f} for the longest",
                evidence=f"accept by prompt length {shown} (benchmark)"
                + ("" if mpe else "; the draft's max_position_embeddings unknown (no preflight)"),
                source="benchmark",
                data={"buckets": rows, "draft_context": mpe},
            )
        ]
    return [
        Diagnosis(
            kind="draft_by_length",
            text=f"accept by prompt length: {shown}",
            evidence="each request's prompt_tokens and spec_verify_ct (benchmark)",
            source="benchmark",
            data={"buckets": rows, "draft_context": mpe},
        )
    ]


def _by_category(by: dict[str, Any]) -> list[Diagnosis]:
    cats = by.get("category")
    if not isinstance(cats, dict) or len(cats) < 2:
        return []
    rows = [
        (str(k), v)
        for k, v in cats.items()
        if isinstance(v, dict) and isinstance(v.get("accept"), int | float)
    ]
    rows = [(k, v) for k, v in rows if isinstance(v.get("n"), int) and v["n"] > 0]
    if len(rows) < 2:
        return []
    rows.sort(key=lambda kv: -kv[1]["accept"])
    shown = ", ".join(f"{k} {v['accept']:.2f} (n {v['n']})" for k, v in rows[:8])
    hi, lo = rows[0][1]["accept"], rows[-1][1]["accept"]
    spread = hi / lo if lo > 0 else 0.0
    return [
        Diagnosis(
            kind="draft_by_category",
            text=f"accept by prompt category: {shown}"
            + (f": the draft fits {rows[0][0]} best and {rows[-1][0]} worst" if spread >= 1.3 else ""),
            evidence="each request's category and spec_verify_ct (benchmark)",
            source="benchmark",
            level="info",
            data={"categories": {k: v for k, v in rows}},
        )
    ]
