"""Accept length, defined: which formula each number is, where it comes from, and per draft position.

Tools disagree on what "accept length" means, and so do the numbers one run yields:

* ``shown`` — what eagletui shows for the run: Σ ``completion_tokens`` ÷ Σ ``spec_verify_ct`` over the
  requests that reported verify counts (pooled, as SGLang's own ``spec_accept_length`` and vLLM's
  mean acceptance length compute it), or, where the server reports no per-request counts, the next one;
* ``metrics`` — Δ ``sglang:generation_tokens`` ÷ Δ ``sglang:spec_verify_ct`` (or ``…_calls``) of the
  server's ``/metrics`` counters over the run (includes other clients' traffic);
* ``per_request_mean`` — the unweighted mean of each request's ``completion_tokens ÷ spec_verify_ct``
  (short requests weigh as much as long ones);
* ``from_drafts`` — 1 + Σ ``spec_num_correct_drafts`` ÷ Σ ``spec_verify_ct`` (without the one token each
  request's prefill makes, which the pooled count includes);
* ``server_log`` — the mean of the ``accept len`` the server's decode log lines print while the run
  went (one value per logging interval, other traffic included; seen live and in a replay, never by an
  export, so it is shown but takes no part in the warning).

Two definitions of one run that differ by more than :data:`DISAGREE` (5 %) get a warning, unless the
requests' own accept lengths are **bimodal** (:mod:`eagletui.core.runs.accept_dist`): then the definitions
differ because the requests do (a drafter that fits some prompts and not others), and that is what is
said, with the split (category, prompt length) that lines up with the two modes. The server's
cumulative ``avg_spec_accept_length`` gauge is never used: it mixes in warmup and earlier runs.

**Per request** (``per_request``): the distribution of the requests' own accept lengths over the
setting's results, and the same by prompt category and by prompt-length bucket (``by_category``,
``by_prompt_len``: ``n``, ``mean``, ``p10``/``p50``/``p90`` each), from each result's ``accept_by``.

**Acceptance per draft position** comes from ``spec_correct_drafts_histogram`` (``meta_info`` of
SGLang 0.5.17's final answer: element ``k`` counts the verifies that accepted exactly ``k`` draft
tokens, the bonus token not counted), summed over requests: position ``j`` was accepted in
Σ_{k≥j} hist[k] ÷ Σ hist of the verifies.

Pure: reads a run's results.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from eagletui.core.cycle.model import reach_from_histogram
from eagletui.core.runs.accept_dist import Modes, bimodal_text, describe, merge, modes
from eagletui.core.stats.sample import mean_stdev

if TYPE_CHECKING:
    from eagletui.core.runs.run import Group, Run

#: Two definitions of one run's accept length that differ by more than this share get a warning.
DISAGREE = 0.05

_FORMULAS: tuple[tuple[str, str, str], ...] = (
    ("per_request_mean", "mean over requests of completion_tokens ÷ spec_verify_ct", "meta_info"),
    ("from_drafts", "1 + Σ spec_num_correct_drafts ÷ Σ spec_verify_ct", "meta_info"),
    ("metrics", "Δ generation_tokens ÷ Δ spec_verify_ct over the run", "/metrics counters"),
)


def definitions(run: Run) -> dict[str, Any]:
    """``{"definitions": {name: {value, formula, source}}, "warning"?, "histogram"?, "per_position"?}``
    for the run's headline setting; {} when it has no valid result."""
    g = run.headline()
    if g is None:
        return {}
    defs: dict[str, dict[str, Any]] = {}

    def put(key: str, values: list[float | None], formula: str, source: str) -> None:
        m, _s, n = mean_stdev(values)
        if m is not None and n:
            defs[key] = {"value": m, "formula": formula, "source": source}

    def detail(key: str) -> list[Any]:
        return [r.accept.get(key) if isinstance(r.accept, dict) else None for r in g.results]

    formula = next((str(x) for x in detail("formula") if x), "")
    source = next((str(x) for x in detail("source") if x), "")
    put(
        "shown",
        [r.accept_length for r in g.results],
        formula or "Σ completion_tokens ÷ Σ spec_verify_ct, pooled over requests",
        source or "the benchmark's result",
    )
    for key, f, src in _FORMULAS:
        put(key, detail(key), f, src)
    values = [(k, d["value"]) for k, d in defs.items() if d["value"] > 0]
    out: dict[str, Any] = {"definitions": defs}
    splits, two = per_request(g)
    out.update(splits)
    if two is not None:
        shown = defs.get("shown", {}).get("value")
        out["bimodal"] = bimodal_text(
            two,
            shown,
            {"category": out.get("by_category") or {}, "prompt length": _lens(out.get("by_prompt_len"))},
        )
    for i, (ka, va) in enumerate(values):
        for kb, vb in values[i + 1 :]:
            if abs(va - vb) > DISAGREE * min(va, vb) and "warning" not in out and two is None:
                out["warning"] = (
                    f"accept length by {ka} ({va:.2f}) and by {kb} ({vb:.2f}) differ by more than 5 %"
                )
    logs = [v for r in g.results for v in run.log_accepts.get(r.bench, [])]
    if logs:
        defs["server_log"] = {
            "value": math.fsum(logs) / len(logs),
            "formula": "mean of the decode log lines' accept len, one per logging interval",
            "source": "server log, live and replay only",
        }
    hist = g.histogram()
    if hist and sum(hist) > 0:
        out["histogram"] = hist
        out["per_position"] = [round(x, 4) for x in reach_from_histogram(hist)]
    return out


def per_request(g: Group) -> tuple[dict[str, Any], Modes | None]:
    """The requests' own accept lengths over the setting's results (``per_request``) and by category and
    prompt length (``by_category``, ``by_prompt_len``), from each result's ``accept_by``, and the two
    modes when there are two; ({}, None) when no result carries them (another runner, a recording made
    before them)."""
    bys = [r.accept_by for r in g.results if isinstance(r.accept_by, dict)]
    out: dict[str, Any] = {}
    merged = merge(b.get("per_request") for b in bys)
    whole = describe(merged)
    if whole is None:
        return out, None
    out["per_request"] = whole
    cats: dict[str, list[Any]] = {}
    lens: dict[tuple[Any, Any], list[Any]] = {}
    for b in bys:
        cat = b.get("category")
        for name, grp in (cat.items() if isinstance(cat, dict) else ()):
            if isinstance(grp, dict):
                cats.setdefault(str(name)[:64], []).append(grp.get("dist"))
        for grp in b.get("prompt_len") or []:
            if isinstance(grp, dict):
                lens.setdefault((grp.get("lo"), grp.get("hi")), []).append(grp.get("dist"))
    by_cat = {k: _short(describe(merge(v))) for k, v in sorted(cats.items())}
    by_cat = {k: v for k, v in by_cat.items() if v is not None}
    if len(by_cat) >= 2:
        out["by_category"] = by_cat
    by_len = []
    for (lo, hi), v in sorted(lens.items(), key=lambda kv: kv[0][0] if isinstance(kv[0][0], int) else 0):
        d = _short(describe(merge(v)))
        if d is not None:
            by_len.append({"lo": lo, "hi": hi, **d})
    if len(by_len) >= 2:
        out["by_prompt_len"] = by_len
    return out, modes(merged)


def _short(d: dict[str, Any] | None) -> dict[str, Any] | None:
    """A split's group: its numbers without the histogram."""
    if d is None:
        return None
    return {k: d[k] for k in ("n", "mean", "p10", "p50", "p90") if k in d} | {"median": d["p50"]}


def _lens(groups: Any) -> dict[str, Any]:
    """The prompt-length split keyed by its buckets' names (``128–255``)."""
    out: dict[str, Any] = {}
    for grp in groups or []:
        hi = grp.get("hi")
        out[f"{grp.get('lo')}–{hi - 1 if isinstance(hi, int) else ''}"] = grp
    return out


def position_deltas(run: Run, base: Run) -> list[float | None]:
    """``run``'s acceptance per draft position minus ``base``'s, in percentage points (None where the
    baseline has no such position or no histogram)."""
    mine = definitions(run).get("per_position") or []
    theirs = definitions(base).get("per_position") or []
    return [None if i >= len(theirs) else round((p - theirs[i]) * 100.0, 2) for i, p in enumerate(mine)]
