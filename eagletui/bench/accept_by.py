"""Accept length by prompt length and by prompt category: where the drafter fits and where it does not.

Each group pools its requests as SGLang pools a run (Σ ``completion_tokens`` ÷ Σ ``spec_verify_ct``), so a
group's number is the same kind of accept length as the run's. Prompt lengths come from each answer's
``meta_info.prompt_tokens`` (the server's own count) and fall into power-of-two buckets from 128 tokens; a
request's category is the ``category`` field of its line in the prompt file (MT-bench's question files
have one) or the prompt set's name. Groups of fewer than :data:`MIN_N` requests are left out: one request
is not a drafter's fit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MIN_N = 2
#: Bucket edges in prompt tokens (the last bucket is open-ended).
EDGES = (0, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


def _bucket(tokens: int) -> tuple[int, int | None]:
    for lo, hi in zip(EDGES, EDGES[1:], strict=False):
        if tokens < hi:
            return lo, hi
    return EDGES[-1], None


def accept_groups(rows: Iterable[tuple[int | None, str, int, int | None]]) -> dict[str, Any]:
    """``rows``: (prompt tokens, category, completion tokens, verify count) per finished request.
    Returns ``{"prompt_len": [{lo, hi, accept, n}], "category": {name: {accept, n}}}``, only the parts
    with two groups or more (one group says nothing the run's own accept length does not)."""
    by_len: dict[tuple[int, int | None], list[int]] = {}
    by_cat: dict[str, list[int]] = {}
    for prompt, cat, ct, vc in rows:
        if not vc or vc <= 0 or ct <= 0:
            continue
        if prompt is not None and prompt >= 0:
            acc = by_len.setdefault(_bucket(prompt), [0, 0, 0])
            acc[0] += ct
            acc[1] += vc
            acc[2] += 1
        if cat:
            acc = by_cat.setdefault(cat[:64], [0, 0, 0])
            acc[0] += ct
            acc[1] += vc
            acc[2] += 1
    out: dict[str, Any] = {}
    lens = [
        {"lo": lo, "hi": hi, "accept": round(c / v, 4), "n": n}
        for (lo, hi), (c, v, n) in sorted(by_len.items(), key=lambda kv: kv[0][0])
        if n >= MIN_N
    ]
    if len(lens) >= 2:
        out["prompt_len"] = lens
    cats = {k: {"accept": round(c / v, 4), "n": n} for k, (c, v, n) in sorted(by_cat.items()) if n >= MIN_N}
    if len(cats) >= 2 and len(cats) <= 64:
        out["category"] = cats
    return out
