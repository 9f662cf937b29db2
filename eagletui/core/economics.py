"""Is speculation worth it here? The arithmetic of one spec run against a no-spec run of the same host.

For one request stream the baseline makes one token per step, so its step time is ``t_b = 1 / tok_s``.
A speculative cycle (draft steps + one verify) yields ``accept_len`` tokens on average, so the cycle time
is ``t_c = accept_len / tok_s_spec``. Speculation pays when ``t_c / accept_len < t_b``:

- speedup = ``tok_s_spec / tok_s_base``;
- break-even accept length at today's cycle cost = ``t_c / t_b`` (the drafter must be this good);
- cycle time needed at today's accept length = ``accept_len × t_b`` (the verify must be this fast).

tok/s here is per request (the benchmark's output throughput divided by its concurrency), so the times
are what one stream sees. Pure arithmetic: no I/O, no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Economics:
    speedup: float
    accept_len: float
    cycle_ms: float
    baseline_step_ms: float
    break_even_accept_len: float
    needed_cycle_ms: float
    concurrency: int | None = None

    @property
    def pays(self) -> bool:
        return self.speedup > 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "speedup": round(self.speedup, 4),
            "accept_len": round(self.accept_len, 4),
            "cycle_ms": round(self.cycle_ms, 3),
            "baseline_step_ms": round(self.baseline_step_ms, 3),
            "break_even_accept_len": round(self.break_even_accept_len, 3),
            "needed_cycle_ms": round(self.needed_cycle_ms, 3),
            "concurrency": self.concurrency,
        }

    def sentence(self, name: str = "EAGLE-3") -> str:
        """One line for the screen: the verdict and the two ways to reach break-even."""
        pct = (self.speedup - 1.0) * 100.0
        head = f"{name} {pct:+.0f} %"
        if self.pays:
            return (
                f"{head}: pays at this verify cost (accept {self.accept_len:.2f} ≥ break-even "
                f"{self.break_even_accept_len:.2f}; cycle {self.cycle_ms:.1f} ms ≤ {self.needed_cycle_ms:.1f})"
            )
        return (
            f"{head}: at this verify cost it needs accept ≥ {self.break_even_accept_len:.2f} "
            f"(has {self.accept_len:.2f}), or a cycle ≤ {self.needed_cycle_ms:.1f} ms (has {self.cycle_ms:.1f})"
        )


def _ok(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def economics(
    spec_tok_s: float | None,
    accept_len: float | None,
    base_tok_s: float | None,
    *,
    concurrency: int | None = None,
) -> Economics | None:
    """The economics of a spec run vs a baseline, both as per-request tok/s; None when not computable
    (no accept length, a zero or missing throughput)."""
    if not (_ok(spec_tok_s) and _ok(accept_len) and _ok(base_tok_s)):
        return None
    assert spec_tok_s is not None and accept_len is not None and base_tok_s is not None
    t_b = 1.0 / base_tok_s
    t_c = accept_len / spec_tok_s
    return Economics(
        speedup=spec_tok_s / base_tok_s,
        accept_len=accept_len,
        cycle_ms=t_c * 1000.0,
        baseline_step_ms=t_b * 1000.0,
        break_even_accept_len=t_c / t_b,
        needed_cycle_ms=accept_len * t_b * 1000.0,
        concurrency=concurrency,
    )


def per_request(tok_s: float | None, concurrency: int | None) -> float | None:
    """A benchmark's output tok/s for one stream: total / concurrency (1 when unknown or unbounded)."""
    if tok_s is None:
        return None
    c = concurrency if concurrency and concurrency > 0 else 1
    return tok_s / c


def crossover(points: list[tuple[int, Economics]]) -> int | None:
    """The lowest concurrency at which speculation stops paying, given (concurrency, economics) pairs;
    None when it pays everywhere measured (or nowhere is known)."""
    for conc, econ in sorted(points, key=lambda p: p[0]):
        if not econ.pays:
            return conc
    return None
