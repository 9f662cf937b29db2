"""What decisions optimise: the one objective type of ``[sweep] objective`` and ``[tune] objective``.

Three kinds, each a number per benchmark at one concurrency:

* ``tok_s``: the aggregate output tok/s (what the hardware earns; the default).
* ``tok_s_per_user``: the output tok/s ÷ the concurrency (what one user sees, TTFT included; the
  frontier's y axis is the decode speed instead: :mod:`eagletui.core.runs.decode_axis`).
  At one concurrency it ranks settings as ``tok_s`` does; it changes what the numbers say and how
  ``tune`` weighs its concurrencies.
* ``goodput``: the output tok/s of the requests that met every bound of the profile's ``[slo]``
  (:func:`eagletui.core.runs.latency.slo_stats`): a setting that is fast but misses the SLO for most
  requests serves little. Needs an ``[slo]`` and per-request records (the built-in client keeps them).
  The cycle model predicts tok/s, not latencies: under this objective a prediction never wins a
  decision on its own; only a launch measures goodput (:mod:`eagletui.core.predict.ranking`).

One type so the sweep, ``tune`` and the ranking of the next launch cannot disagree on what "better"
means. No I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from eagletui.core.profile.model import ProfileError
from eagletui.core.tomlpos import locate

#: every kind, in the order an error lists them
OBJECTIVES = ("tok_s", "tok_s_per_user", "goodput")
_UNITS = {"tok_s": "tok/s", "tok_s_per_user": "tok/s per user", "goodput": "goodput tok/s"}


@dataclass(frozen=True)
class Objective:
    """``kind`` at each of ``concurrencies`` (``tune``: combined by the geometric mean, so a configuration
    10 % better at one concurrency and 10 % worse at another is no better; a sweep: empty, its client
    points say where)."""

    kind: str = "tok_s"
    concurrencies: tuple[int, ...] = ()

    @property
    def unit(self) -> str:
        """``tok/s``, ``tok/s per user`` or ``goodput tok/s``: what a decision's numbers are."""
        return _UNITS.get(self.kind, "tok/s")

    def value(self, tok_s: float, concurrency: int, goodput_tok_s: float | None = None) -> float | None:
        """The objective of one benchmark at ``concurrency`` from its aggregate tok/s and, for
        ``goodput``, its goodput tok/s (None: not judged, no per-request records or no SLO)."""
        if self.kind == "tok_s_per_user":
            return tok_s / max(1, concurrency)
        if self.kind == "goodput":
            ok = isinstance(goodput_tok_s, int | float) and math.isfinite(goodput_tok_s)
            return float(goodput_tok_s) if ok else None  # type: ignore[arg-type]
        return tok_s

    def combine(self, values: list[float]) -> float | None:
        """One number over the concurrencies (None when one is missing or not positive)."""
        if not values or len(values) != max(1, len(self.concurrencies)) or min(values) <= 0:
            return None
        return math.exp(sum(math.log(v) for v in values) / len(values))

    def describe(self) -> str:
        if not self.concurrencies:
            return self.unit + (" under the SLO" if self.kind == "goodput" else "") + " at each concurrency"
        where = ", ".join(str(c) for c in self.concurrencies)
        return f"{self.unit} at concurrency {where}" + (" (geometric mean)" if len(self.concurrencies) > 1 else "")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "concurrencies": list(self.concurrencies)}

    @classmethod
    def from_json(cls, d: Any) -> Objective:
        """Back from :meth:`to_json` (a queue file, a recording: not trusted); the default on anything else."""
        if not isinstance(d, dict) or d.get("kind") not in OBJECTIVES:
            return cls()
        conc = d.get("concurrencies")
        ok = isinstance(conc, list) and all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in conc)
        return cls(str(d["kind"]), tuple(conc) if ok else ())  # type: ignore[arg-type]


def parse_kind(raw: dict[str, Any], section: str, text: str, path: Any, *, has_slo: bool) -> str:
    """``objective`` of ``[section]``: one of :data:`OBJECTIVES` (``tok_s`` when absent); ``goodput``
    only with an ``[slo]`` to judge the requests by. ProfileError with file:line:col."""
    kind = raw.get("objective", "tok_s")
    where = locate(text, "objective", section)
    if kind not in OBJECTIVES:
        raise ProfileError(f"{section}.objective must be one of {', '.join(OBJECTIVES)}, got {kind!r}", path, *where)
    if kind == "goodput" and not has_slo:
        raise ProfileError(
            f"{section}.objective = 'goodput' needs an [slo] table: goodput counts the requests that meet it",
            path,
            *where,
        )
    return str(kind)
