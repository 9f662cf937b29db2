"""Accept length by prompt length and by prompt category: where the drafter fits and where it does not.

Each group pools its requests as SGLang pools a run (Σ ``completion_tokens`` ÷ Σ ``spec_verify_ct``), so a
group's number is the same kind of accept length as the run's, and carries the distribution of its requests'
own accept lengths (``dist``, :mod:`eagletui.core.runs.accept_dist`: ``1 + correct drafts ÷ verifies`` per
request) and their median; the whole run's distribution is ``per_request``. Prompt lengths come from each answer's
``meta_info.prompt_tokens`` (the server's own count) and fall into power-of-two buckets from 128 tokens; a
request's category is the ``category`` field of its line in the prompt file (MT-bench's question files
have one) or the prompt set's name. Groups of fewer than :data:`MIN_N` requests are left out: one request
is not a drafter's fit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eagletui.core.runs.accept_dist import distribution, quantile

MIN_N = 2
#: Bucket edges in prompt tokens (the last bucket is open-ended).
EDGES = (0, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


def _bucket(tokens: int) -> tuple[int, int | None]:
    for lo, hi in zip(EDGES, EDGES[1:], strict=False):
        if tokens < hi:
            return lo, hi
    return EDGES[-1], None


def _group(acc: list[Any]) -> dict[str, Any]:
    """One group's numbers: pooled accept, request count, and its requests' distribution and median."""
    c, v, n, per = acc
    out: dict[str, Any] = {"accept": round(c / v, 4), "n": n}
    dist = distribution(per)
    if dist is not None:
        out["median"] = round(quantile(dist, 0.5), 2)
        out["dist"] = dist
    return out


def accept_groups(rows: Iterable[tuple[int | None, str, int, int | None, float | None]]) -> dict[str, Any]:
    """``rows``: (prompt tokens, category, completion tokens, verify count, the request's own accept
    length) per finished request. Returns ``{"per_request": dist, "prompt_len": [{lo, hi, accept, n,
    median, dist}], "category": {name: {accept, n, median, dist}}}``, the splits only with two groups or
    more (one group says nothing the run's own accept length does not)."""
    by_len: dict[tuple[int, int | None], list[Any]] = {}
    by_cat: dict[str, list[Any]] = {}
    every: list[float] = []
    for prompt, cat, ct, vc, own in rows:
        if not vc or vc <= 0 or ct <= 0:
            continue
        if own is not None:
            every.append(own)
        for acc in (
            by_len.setdefault(_bucket(prompt), [0, 0, 0, []]) if prompt is not None and prompt >= 0 else None,
            by_cat.setdefault(cat[:64], [0, 0, 0, []]) if cat else None,
        ):
            if acc is None:
                continue
            acc[0] += ct
            acc[1] += vc
            acc[2] += 1
            if own is not None:
                acc[3].append(own)
    out: dict[str, Any] = {}
    whole = distribution(every)
    if whole is not None:
        out["per_request"] = whole
    lens = [
        {"lo": lo, "hi": hi, **_group(acc)}
        for (lo, hi), acc in sorted(by_len.items(), key=lambda kv: kv[0][0])
        if acc[2] >= MIN_N
    ]
    if len(lens) >= 2:
        out["prompt_len"] = lens
    cats = {k: _group(acc) for k, acc in sorted(by_cat.items()) if acc[2] >= MIN_N}
    if len(cats) >= 2 and len(cats) <= 64:
        out["category"] = cats
    return out
