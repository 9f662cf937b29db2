"""``[sweep.max_rate]``: search each launch for the highest request rate that still meets the ``[slo]``.

A sweep at fixed concurrencies says how fast each launch is; a deployment is asked "how many requests a
second can it take before the promised latency breaks". After a launch's cells, the sweep benchmarks
the same server with Poisson arrivals (``request_rate``) and bisects over the rate::

    [sweep.max_rate]
    low = 0.5          # req/s: the first step; if even this misses the SLO, the search ends there
    high = 16          # req/s: the second step, and the most it ever tries
    steps = 6          # benchmarks at most per launch (a step within the noise of a bound runs twice)
    concurrency = 64   # requests in flight at most (default: no cap, as a real arrival process)
    num_prompts = 200  # per step (default: the profile's [bench])

The search is :mod:`eagletui.core.sweep.maxrate`, its answer per launch config
:mod:`eagletui.core.runs.max_rate` (shown on the frontier). It needs an ``[slo]`` to judge by and the
built-in client, whose per-request records the judgement reads. An overloaded server queues requests:
their TTFT grows, so an SLO with a ``ttft_ms`` bound is what tells an overload (per-token bounds alone
may hold while the queue grows). Errors name ``file:line:col``. No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eagletui.core.profile.model import ProfileError
from eagletui.core.profile.numbers import bounded_number
from eagletui.core.tomlpos import locate

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile

_KEYS = ("low", "high", "steps", "concurrency", "num_prompts")
MAX_STEPS = 12
_MAX_RATE = 1e5


@dataclass(frozen=True)
class MaxRateSpec:
    """The search's bounds (req/s), its step budget, the client's cap on requests in flight (None: no
    cap) and the prompts per step (None: the profile's)."""

    low: float
    high: float
    steps: int = 6
    concurrency: int | None = None
    num_prompts: int | None = None

    def describe(self) -> str:
        return f"the highest request rate meeting the SLO, {self.low:g}–{self.high:g} req/s in ≤ {self.steps} steps"


def parse_max_rate(raw: Any, profile: Profile, text: str, path: Any) -> MaxRateSpec:
    """Validate ``[sweep.max_rate]``; ProfileError with file:line:col."""
    section = "sweep.max_rate"
    if not isinstance(raw, dict):
        raise ProfileError("sweep.max_rate must be a table ([sweep.max_rate])", path, *locate(text, "max_rate", "sweep"))
    for key in raw:
        if key not in _KEYS:
            raise ProfileError(
                f"unknown key {key!r} in [sweep.max_rate] (allowed: {', '.join(_KEYS)})", path, *locate(text, key, section)
            )
    where = locate(text, "max_rate", "sweep")
    if not profile.slo:
        raise ProfileError(
            "[sweep.max_rate] needs an [slo] table: the search finds the highest rate that meets it", path, *where
        )
    if profile.bench.runner != "builtin":
        raise ProfileError(
            f"[sweep.max_rate] needs the built-in benchmark client (bench.runner = 'builtin'): the SLO is judged "
            f"from its per-request records, and {profile.bench.runner!r} keeps none",
            path,
            *where,
        )
    for key in ("low", "high"):
        if key not in raw:
            raise ProfileError(f"sweep.max_rate.{key} is required (req/s)", path, *where)
    low = bounded_number(raw, "low", None, 0.001, _MAX_RATE, text, path, section=section)
    high = bounded_number(raw, "high", None, 0.001, _MAX_RATE, text, path, section=section)
    if high <= low:
        raise ProfileError(
            f"sweep.max_rate.high ({high:g}) must be above low ({low:g})", path, *locate(text, "high", section)
        )
    steps = int(bounded_number(raw, "steps", 6, 2, MAX_STEPS, text, path, section=section, integer=True))
    conc = n = None
    if raw.get("concurrency") is not None:
        conc = int(bounded_number(raw, "concurrency", None, 1, 10_000, text, path, section=section, integer=True))
    if raw.get("num_prompts") is not None:
        n = int(bounded_number(raw, "num_prompts", None, 1, 1_000_000, text, path, section=section, integer=True))
    return MaxRateSpec(low, high, steps, conc, n)

