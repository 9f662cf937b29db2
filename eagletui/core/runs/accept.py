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

Two definitions of one run that differ by more than :data:`DISAGREE` (5 %) get a warning. The server's
cumulative ``avg_spec_accept_length`` gauge is never used: it mixes in warmup and earlier runs.

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
from eagletui.core.stats.sample import mean_stdev

if TYPE_CHECKING:
    from eagletui.core.runs.run import Run

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
        formula or "Σ completion_tokens ÷ Σ spec_verify_ct (pooled over requests)",
        source or "the benchmark's result",
    )
    for key, f, src in _FORMULAS:
        put(key, detail(key), f, src)
    values = [(k, d["value"]) for k, d in defs.items() if d["value"] > 0]
    out: dict[str, Any] = {"definitions": defs}
    for i, (ka, va) in enumerate(values):
        for kb, vb in values[i + 1 :]:
            if abs(va - vb) > DISAGREE * min(va, vb) and "warning" not in out:
                out["warning"] = (
                    f"accept length by {ka} ({va:.2f}) and by {kb} ({vb:.2f}) differ by more than 5 %"
                )
    logs = [v for r in g.results for v in run.log_accepts.get(r.bench, [])]
    if logs:
        defs["server_log"] = {
            "value": math.fsum(logs) / len(logs),
            "formula": "mean of the decode log lines' accept len (per logging interval)",
            "source": "server log (live and replay only)",
        }
    hist = g.histogram()
    if hist and sum(hist) > 0:
        out["histogram"] = hist
        out["per_position"] = [round(x, 4) for x in reach_from_histogram(hist)]
    return out


def position_deltas(run: Run, base: Run) -> list[float | None]:
    """``run``'s acceptance per draft position minus ``base``'s, in percentage points (None where the
    baseline has no such position or no histogram)."""
    mine = definitions(run).get("per_position") or []
    theirs = definitions(base).get("per_position") or []
    return [None if i >= len(theirs) else round((p - theirs[i]) * 100.0, 2) for i, p in enumerate(mine)]
