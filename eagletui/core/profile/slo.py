"""The ``[slo]`` table of a profile: the latency a deployment promises its users, validated.

A tuner's real question is not "which launch is fastest" but "which launch serves the most users at
the latency I promised them". The promise is a few latency bounds at a percentile::

    [slo]
    ttft_ms = { p = 99, max = 2000 }     # time to first token
    itl_ms = { p = 99, max = 50 }        # inter-token latency (a request's mean gap between tokens)
    tpot_ms = 40                         # a bare number: the bound at p99
    e2e_ms = { p = 90, max = 30000 }     # request sent → last token

Every bound is judged over the benchmark's *requests* (one value per request: its TTFT, its mean ITL,
its TPOT = (e2e − TTFT) ÷ (tokens − 1), its end-to-end latency), so a run's numbers can be recomputed
from its per-request records (:mod:`eagletui.core.runs.latency`). A request *meets the SLO* when each of
its values is within every bound; a run (one concurrency) *meets the SLO* when each metric's percentile is
within its bound. Errors name ``file:line:col``.

No I/O, no UI.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from eagletui.core.profile.model import ProfileError, _fmt_num
from eagletui.core.tomlpos import locate

#: the latencies an SLO may bound, in the order they are printed, with the words a sentence uses
METRICS: dict[str, str] = {"ttft_ms": "ttft", "itl_ms": "itl", "tpot_ms": "tpot", "e2e_ms": "e2e"}
DEFAULT_P = 99.0
_MAX_MS = 86_400_000.0  # a day


@dataclass(frozen=True)
class SloBound:
    """``metric`` (a key of :data:`METRICS`) at percentile ``p`` must be at most ``max_ms``."""

    metric: str
    p: float
    max_ms: float

    def describe(self) -> str:
        """``ttft p99 ≤ 2 s``: seconds from a second up, else ms."""
        bound = f"{_fmt_num(self.max_ms / 1000)} s" if self.max_ms >= 1000 else f"{_fmt_num(self.max_ms)} ms"
        return f"{METRICS[self.metric]} p{_fmt_num(self.p)} ≤ {bound}"


@dataclass(frozen=True)
class Slo:
    """The profile's bounds (none: no SLO, and nothing is judged against one)."""

    bounds: tuple[SloBound, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.bounds)

    def describe(self) -> str:
        """``ttft p99 ≤ 2 s and itl p99 ≤ 50 ms`` ("" for no SLO)."""
        return " and ".join(b.describe() for b in self.bounds)

    def to_dict(self) -> dict[str, Any]:
        return {b.metric: {"p": b.p, "max": b.max_ms} for b in self.bounds}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Slo:
        """From :meth:`to_dict` (a recording's launch snapshot); what is malformed is left out."""
        bounds = []
        for metric in METRICS:
            v = (d or {}).get(metric)
            if not isinstance(v, Mapping):
                continue
            p, mx = v.get("p"), v.get("max")
            if isinstance(p, int | float) and isinstance(mx, int | float) and _number(p) and _number(mx):
                if 0 < p <= 100 and 0 < mx <= _MAX_MS:
                    bounds.append(SloBound(metric, float(p), float(mx)))
        return cls(tuple(bounds))


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def parse_slo(raw: Any, text: str = "", path: Any = None) -> Slo:
    """``[slo]`` → :class:`Slo`; an unknown key, a wrong type or an out-of-range number is a
    :class:`ProfileError` at its ``file:line:col``."""

    def where(key: str) -> tuple[int | None, int | None]:
        return locate(text, key, "slo")

    if not isinstance(raw, dict):
        raise ProfileError(f"slo must be a table, got {type(raw).__name__}", path, *locate(text, "slo"))
    bounds: list[SloBound] = []
    for key, value in raw.items():
        if key not in METRICS:
            allowed = ", ".join(METRICS)
            raise ProfileError(f"unknown key {key!r} in [slo] (allowed: {allowed})", path, *where(key))
        if isinstance(value, int | float) and not isinstance(value, bool):
            p, mx = DEFAULT_P, value
        elif isinstance(value, dict):
            extra = sorted(set(value) - {"p", "max"})
            if extra:
                raise ProfileError(
                    f"slo.{key}: unknown key {extra[0]!r} (give p = PERCENTILE and max = MS)", path, *where(key)
                )
            if "max" not in value:
                raise ProfileError(f"slo.{key} needs max = MS", path, *where(key))
            p, mx = value.get("p", DEFAULT_P), value["max"]
        else:
            raise ProfileError(
                f"slo.{key} must be a number of ms or {{ p = 99, max = MS }}, got {type(value).__name__}",
                path,
                *where(key),
            )
        if not _number(p) or not 0 < p <= 100:
            raise ProfileError(f"slo.{key}: p must be a percentile in (0, 100], got {p!r}", path, *where(key))
        if not _number(mx) or not 0 < mx <= _MAX_MS:
            raise ProfileError(
                f"slo.{key}: max must be more than 0 and at most {_fmt_num(_MAX_MS)} ms, got {mx!r}",
                path,
                *where(key),
            )
        bounds.append(SloBound(key, float(p), float(mx)))
    order = list(METRICS)
    return Slo(tuple(sorted(bounds, key=lambda b: order.index(b.metric))))
