"""Accept length per request: its distribution over a run, and whether it has two modes.

A run's accept length is one number (Σ completion ÷ Σ verify, pooled), but a drafter can fit some
prompts and not others: the "half" drafter of ``shared/known-drafters`` accepts every draft token of a
request whose prompt ends in "." and none of one ending in "?", so half the requests accept 4.0 and the
rest 1.0, and the pooled 1.89 describes no request at all. The per-request definitions then disagree
(the mean of the requests' own ratios weighs a short request as much as a long one), which is a fact
about the drafter, not a fault of either definition: it is said as a **bimodal** distribution.

A request's accept length is ``1 + spec_num_correct_drafts ÷ spec_verify_ct`` (SGLang's ``meta_info`` at
the end of each request; vLLM's ``metrics.speculative_decoding`` with ``--per-request-spec-decode-metrics``
from 0.29): accepted draft tokens per verify plus the bonus token. SGLang's own ``spec_accept_length``
(``completion_tokens ÷ spec_verify_ct``) also counts the token the prefill made, so it reads high by
``1 ÷ spec_verify_ct``; where the server sends no correct-draft count, ``(completion_tokens − 1) ÷
spec_verify_ct`` stands in.

The wire format (a benchmark result's ``accept_by["per_request"]``, and each split's): ``n`` requests,
``sum`` of their accept lengths, and ``bins``: counts of requests per :data:`WIDTH` from 1.0
(``bins[i]`` holds the accept lengths nearest ``1 + i·WIDTH``, the last bin anything above).
Results of one setting merge by adding them (:func:`merge`), so repeats pool like the run's numbers do.

**Two modes** (:func:`modes`): the histogram is split where the two sides are most apart (Otsu's
threshold: the largest between-class variance), and it is bimodal when both sides hold at least
:data:`MIN_SHARE` of the requests (and two requests each), their means lie :data:`MIN_GAP` apart, and
they are separated by Ashman's ``D = √2·|μ₁ − μ₂| ÷ √(σ₁² + σ₂²) ≥`` :data:`MIN_D` (each σ at least a
bin's own spread, ``WIDTH ÷ √12``): a unimodal bell split at its mean gives 2.7, a flat spread 3.5, two
spikes (a drafter that fits a prompt or does not) far more.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Bin width of the per-request histogram (accept-length units).
WIDTH = 0.1
#: Bins kept: accept lengths from 1.0 to 1 + MAX_BINS·WIDTH (17.0; SGLang's draft trees are shallower).
MAX_BINS = 160
#: Each mode of a bimodal distribution holds at least this share of the requests…
MIN_SHARE = 0.1
#: …and at least this many requests.
MIN_MODE_N = 2
#: Ashman's D at which two sides of a split count as two modes.
MIN_D = 4.0
#: …and their means this far apart (accept-length units): two neighbouring bins are no two modes.
MIN_GAP = 0.5


def request_accept(verify_ct: int | None, correct: int | None, completion: int) -> float | None:
    """One request's accept length (see the module docstring), None when it had no verify."""
    if not verify_ct or verify_ct <= 0:
        return None
    if correct is not None and correct >= 0:
        return 1.0 + correct / verify_ct
    if completion <= 0:
        return None
    return max(1.0, (completion - 1) / verify_ct)


def distribution(values: Iterable[float]) -> dict[str, Any] | None:
    """The wire format of some requests' accept lengths; None when there are none."""
    bins: list[int] = []
    n, total = 0, 0.0
    for v in values:
        if not (isinstance(v, int | float) and math.isfinite(v) and v >= 1.0):
            continue
        i = min(round((v - 1.0) / WIDTH), MAX_BINS - 1)
        while len(bins) <= i:
            bins.append(0)
        bins[i] += 1
        n += 1
        total += float(v)
    if n == 0:
        return None
    return {"n": n, "sum": round(total, 6), "bins": bins}


def _valid(d: Any) -> bool:
    if not isinstance(d, Mapping):
        return False
    n, bins = d.get("n"), d.get("bins")
    return (
        isinstance(n, int)
        and not isinstance(n, bool)
        and n > 0
        and isinstance(bins, list)
        and len(bins) <= MAX_BINS
        and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in bins)
        and sum(bins) == n
        and isinstance(d.get("sum"), int | float)
        and math.isfinite(float(d["sum"]))
    )


def merge(dists: Iterable[Any]) -> dict[str, Any] | None:
    """Several results' distributions as one (damaged ones left out); None when none is usable."""
    bins: list[int] = []
    n, total = 0, 0.0
    for d in dists:
        if not _valid(d):
            continue
        for i, c in enumerate(d["bins"]):
            while len(bins) <= i:
                bins.append(0)
            bins[i] += c
        n += d["n"]
        total += float(d["sum"])
    return {"n": n, "sum": round(total, 6), "bins": bins} if n else None


def _mid(i: int) -> float:
    """The accept length bin ``i`` stands for."""
    return 1.0 + i * WIDTH


def quantile(d: Mapping[str, Any], q: float) -> float:
    """The accept length below which a share ``q`` of the requests lies (to a bin's width)."""
    bins: list[int] = d["bins"]
    want = q * d["n"]
    seen = 0
    for i, c in enumerate(bins):
        seen += c
        if c and seen >= want:
            return _mid(i)
    return _mid(len(bins) - 1)


@dataclass(frozen=True)
class Mode:
    """One side of a bimodal split: how many requests, around which accept length."""

    n: int
    mean: float
    lo: float
    hi: float


@dataclass(frozen=True)
class Modes:
    """A bimodal distribution: the low and the high mode and how far apart (Ashman's D)."""

    low: Mode
    high: Mode
    d: float

    def to_json(self) -> dict[str, Any]:
        def m(x: Mode) -> dict[str, Any]:
            return {"n": x.n, "mean": round(x.mean, 3), "lo": round(x.lo, 2), "hi": round(x.hi, 2)}

        return {"low": m(self.low), "high": m(self.high), "ashman_d": round(self.d, 2)}


def _side(bins: list[int], lo: int, hi: int) -> tuple[int, float, float]:
    """(count, mean, variance) of bins[lo:hi] at their middles."""
    n = sum(bins[lo:hi])
    if n == 0:
        return 0, 0.0, 0.0
    m = sum(c * _mid(i) for i, c in enumerate(bins[lo:hi], lo)) / n
    var = sum(c * (_mid(i) - m) ** 2 for i, c in enumerate(bins[lo:hi], lo)) / n
    return n, m, var


def modes(d: Mapping[str, Any] | None) -> Modes | None:
    """The two modes of a distribution (the module docstring's rule), None when it has one."""
    if d is None or not _valid(d):
        return None
    bins: list[int] = d["bins"]
    n = d["n"]
    best: tuple[float, int] | None = None
    for cut in range(1, len(bins)):
        n1, m1, _ = _side(bins, 0, cut)
        n2, m2, _ = _side(bins, cut, len(bins))
        if not n1 or not n2:
            continue
        between = n1 * n2 * (m1 - m2) ** 2
        if best is None or between > best[0]:
            best = (between, cut)
    if best is None:
        return None
    cut = best[1]
    n1, m1, v1 = _side(bins, 0, cut)
    n2, m2, v2 = _side(bins, cut, len(bins))
    if min(n1, n2) < max(MIN_MODE_N, MIN_SHARE * n):
        return None
    floor = WIDTH * WIDTH / 12.0  # a bin holds values a bin wide, not one point
    d_value = math.sqrt(2.0) * abs(m2 - m1) / math.sqrt(max(v1, floor) + max(v2, floor))
    if d_value < MIN_D or abs(m2 - m1) < MIN_GAP:
        return None

    def span(lo: int, hi: int) -> tuple[float, float]:
        used = [i for i in range(lo, hi) if bins[i]]
        return _mid(used[0]), _mid(used[-1])

    return Modes(Mode(n1, m1, *span(0, cut)), Mode(n2, m2, *span(cut, len(bins))), d_value)


def describe(d: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What the run details and the exports show of a distribution: ``n``, ``mean``, ``p10``/``p50``/
    ``p90``, the ``bins`` (``width``), and ``modes`` when it is bimodal; None without one."""
    if d is None or not _valid(d):
        return None
    out: dict[str, Any] = {
        "n": d["n"],
        "mean": round(float(d["sum"]) / d["n"], 4),
        "p10": round(quantile(d, 0.1), 2),
        "p50": round(quantile(d, 0.5), 2),
        "p90": round(quantile(d, 0.9), 2),
        "width": WIDTH,
        "bins": list(d["bins"]),
    }
    two = modes(d)
    if two is not None:
        out["modes"] = two.to_json()
    return out


def bimodal_text(two: Modes, pooled: float | None, splits: Mapping[str, Mapping[str, Any]]) -> str:
    """The sentence for a bimodal run: the two modes, where the pooled number falls, and which split
    (category, prompt length) lines up with them."""
    lo, hi = two.low, two.high
    text = (
        f"accept length per request is bimodal: {lo.n} requests near {lo.mean:.2f}, "
        f"{hi.n} near {hi.mean:.2f}"
    )
    if pooled is not None and lo.hi < pooled < hi.lo:
        text += f"; the run's {pooled:.2f} lies between them, where no request is"
    for name, groups in splits.items():
        parts = [(k, g.get("median")) for k, g in groups.items() if isinstance(g, Mapping)]
        lows = [k for k, m in parts if isinstance(m, int | float) and m < lo.hi + WIDTH]
        highs = [k for k, m in parts if isinstance(m, int | float) and m >= hi.lo - WIDTH]
        if lows and highs and len(lows) + len(highs) == len(parts):
            text += f"; by {name}: {', '.join(lows)} low, {', '.join(highs)} high"
            break
    return text
