"""The validity gate: may a benchmark result count at all?

A result that cannot count is ``invalid`` with its reason; it is never a baseline or an economics
reference, never part of a mean, and a sweep runs it again. The causes, each with the reason text
the views show:

* **nothing measured**: no request finished, or no token was generated;
* **failed requests** above :data:`MAX_FAILED_SHARE` of those sent;
* **incomplete**: fewer requests answered than the workload has (a stopped benchmark);
* **the drafter is not working**: speculation on and no draft token accepted (accept length
  ≤ :data:`ACCEPT_NOT_WORKING`, or the server's own count of correct drafts is 0): the wrong draft for
  the target, EAGLE where EAGLE3 was meant, a vocabulary mismatch;
* **impossible counts**: more tokens than the requests allowed (``max_new_tokens`` × requests), an accept
  length above what the speculative settings can accept per verify, or below 1;
* **the server or the link failed during the run**: the server died, was stopped or restarted, or the
  SSH link dropped between the benchmark's start and its result (:func:`interruption` words them; the
  run book sees those events, a result alone cannot).

A workload or concurrency that differs from the run a result is compared with does not make the
result itself invalid: that comparison is (see :meth:`eagletui.core.runs.book.RunBook.verdict_for`).

Pure: reads a :class:`~eagletui.core.events.BenchmarkResult` and the facts of its run.
"""

from __future__ import annotations

import math
from typing import Any

from eagletui.core.events import BenchmarkResult

#: More failed requests than this share of those sent makes a result invalid (one stray timeout in
#: a hundred is noise; a cut that failed 192 of 200 is not a measurement).
MAX_FAILED_SHARE = 0.05
#: With speculation on, an accept length at or below this means no draft token was accepted: 1.0 is
#: "only the target's own token per verify"; the margin covers the one prefill token that SGLang's
#: ``completion_tokens / spec_verify_ct`` counts on top (64 tokens in 63 verifies read 1.016).
ACCEPT_NOT_WORKING = 1.02
#: How the drafter's reason begins: a property of the launch (its draft model), not of one run, so
#: running the same launch again gives the same answer (see :func:`repeats_alike`).
DRAFTER_NOT_WORKING = "the drafter is not working"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def result_problems(
    r: BenchmarkResult,
    *,
    spec: bool,
    workload: dict[str, Any] | None = None,
    max_accept: int | None = None,
) -> list[str]:
    """Why ``r`` cannot count (empty: it can). ``spec``: the launch speculates; ``workload`` is the
    benchmark's own description (``BenchmarkStarted.workload``: ``num_prompts``, ``max_new_tokens``);
    ``max_accept`` the most tokens one verify can accept at the launch's settings."""
    out: list[str] = []
    wl = workload if isinstance(workload, dict) else {}
    tok_s = _num(r.output_throughput)
    requests = r.requests if isinstance(r.requests, int) and r.requests >= 0 else 0
    failed = r.failed if isinstance(r.failed, int) and r.failed >= 0 else 0
    if requests <= 0 or tok_s is None or tok_s <= 0:
        out.append("no tokens measured" + (f" ({r.error})" if r.error else ""))
        return out
    sent = requests + failed
    if failed and failed > MAX_FAILED_SHARE * sent:
        out.append(f"{failed} of {sent} requests failed" + (f": {r.error}" if r.error else ""))
    planned = wl.get("num_prompts")
    if isinstance(planned, int) and not isinstance(planned, bool) and 0 < sent < planned:
        out.append(f"incomplete: {sent} of {planned} requests sent")
    max_new = wl.get("max_new_tokens")
    duration = _num(r.duration_s)
    if (
        isinstance(max_new, int)
        and not isinstance(max_new, bool)
        and max_new > 0
        and duration
        and duration > 0
    ):
        tokens = tok_s * duration
        allowed = requests * max_new
        if tokens > allowed * 1.001 + 1:
            out.append(
                f"impossible count: {tokens:,.0f} tokens from {requests} requests of at most {max_new} each"
            )
    acc = _num(r.accept_length)
    if acc is not None:
        if acc < 1.0 - 1e-9:
            out.append(f"impossible accept length {acc:.3g} (below 1 token per verify)")
        elif max_accept is not None and acc > (max_accept + _first_token_share(r, requests, max_accept)) * 1.001:
            out.append(
                f"impossible accept length {acc:,.2f}: these settings accept at most {max_accept} per verify"
            )
    if spec:
        correct = (r.accept or {}).get("correct_drafts") if isinstance(r.accept, dict) else None
        if isinstance(correct, int) and not isinstance(correct, bool) and correct == 0:
            out.append(
                f"{DRAFTER_NOT_WORKING}: no draft token was accepted (wrong draft model for "
                "the target, EAGLE vs EAGLE3, or a vocabulary mismatch)"
            )
        elif acc is not None and acc <= ACCEPT_NOT_WORKING:
            out.append(
                f"{DRAFTER_NOT_WORKING}: accept length {acc:.2f} ≤ {ACCEPT_NOT_WORKING:g} (wrong "
                "draft model for the target, EAGLE vs EAGLE3, or a vocabulary mismatch)"
            )
    return out


def repeats_alike(problems: list[str]) -> bool:
    """True when a run of the same launch would be invalid for the same reason: a drafter that accepts
    nothing does so on every run (seen on a real server with a random-weight draft: three runs of each
    sweep cell, 1.01 every time), whereas failed requests, a cut run or a dropped link may not recur.
    A sweep does not run such a cell again; it reports it invalid at once."""
    return bool(problems) and all(p.startswith(DRAFTER_NOT_WORKING) for p in problems)


def timed_truly(problems: list[str]) -> bool:
    """A result whose cycles were timed truly: it counts, or the gate left it out only because the drafter
    accepted nothing (a random-weight draft: :func:`repeats_alike`). The cycle model reads such a result's
    timing, and a sweep profiles its launch."""
    return not problems or repeats_alike(problems)


def interruption(event_type: str, detail: str = "") -> str:
    """The reason a result is invalid when ``event_type`` happened while it was being measured."""
    what = {
        "server_failed": "the server failed during the run",
        "process_exited": "the server process exited during the run",
        "server_stopped": "the server was stopped during the run",
        "launch_detected": "the server restarted during the run",
        "connection": "the link to the host dropped during the run",
    }.get(event_type, f"{event_type} during the run")
    return what + (f" ({detail})" if detail else "")


def _first_token_share(r: Any, requests: int, max_accept: int) -> float:
    """How far Σ completion tokens ÷ Σ verifies may exceed the most a verify accepts: each request's first
    token comes from its prefill, not from a verify (the real server with a drafter that accepts
    everything: steps 2 measured 3.01 over 256 tokens, 256 ÷ 85 verifies). Exactly requests ÷ verifies
    where the benchmark counted the verifies, else at most one token over a request's fewest verifies."""
    acc = r.accept if isinstance(r.accept, dict) else {}
    verify = acc.get("verify_ct")
    if isinstance(verify, int) and not isinstance(verify, bool) and verify > 0 and requests > 0:
        return requests / verify
    tokens = _num(r.output_throughput)
    duration = _num(r.duration_s)
    per_request = tokens * duration / requests if tokens and duration and requests > 0 else None
    if per_request is None or per_request <= 1:
        return 0.0
    return max_accept / max(per_request - 1.0, 1.0)
