"""Startup, cold and warm: the distribution of launch time and of each phase per launch signature.

A launch signature is :func:`eagletui.core.phases.history.history_key` (host, model, TP and the flags
that change loading or capture): the one definition the ETA, the sweep's plan and these distributions
share. Within a signature, launches are split by the page cache (:mod:`eagletui.core.host.page_cache`:
the preflight's ``mincore`` share of the checkpoint just before the launch): a warm load reads the
weights from memory, a cold one from storage, and a p50 over both describes neither. Launches whose
state was not measured (no preflight, a Hugging Face id rather than a local checkpoint, a reattach)
are ``unknown``: counted, never guessed into a side.

Pure: :class:`LaunchRecord` rows in, p50/p90 out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from eagletui.core.host.page_cache import COLD, PART, WARM
from eagletui.core.stats.sample import percentile

UNKNOWN = "unknown"
#: the order states are listed in
STATES = (WARM, PART, COLD, UNKNOWN)


@dataclass(frozen=True)
class LaunchRecord:
    """One launch that reached ready: its phases' seconds, launch → ready, its page-cache state."""

    phases: Mapping[str, float]
    total: float | None = None
    cache: str | None = None

    @property
    def state(self) -> str:
        return self.cache if self.cache in (WARM, PART, COLD) else UNKNOWN


@dataclass(frozen=True)
class Spread:
    """p50 and p90 of ``n`` samples (seconds)."""

    p50: float
    p90: float
    n: int

    def text(self) -> str:
        return f"p50 {fmt(self.p50)} p90 {fmt(self.p90)}"


def record_of(row: Any) -> LaunchRecord | None:
    """A recorded launch's startup (``Summary.startup``'s rows) as a :class:`LaunchRecord`; None when the
    row is not one (a hostile or damaged summary cache)."""
    if not isinstance(row, Mapping) or not isinstance(row.get("signature"), str):
        return None
    phases = row.get("phases")
    if not isinstance(phases, Mapping):
        return None
    kept = {
        str(p): float(v)
        for p, v in list(phases.items())[:32]
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    }
    raw = row.get("total")
    total = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
    if total is not None and not (math.isfinite(total) and total >= 0):
        total = None
    cache = row.get("cache")
    return LaunchRecord(kept, total, cache if cache in (WARM, PART, COLD) else None) if kept else None


def spread(values: Iterable[float]) -> Spread | None:
    vals = sorted(v for v in values if isinstance(v, int | float) and math.isfinite(v) and v >= 0)
    if not vals:
        return None
    return Spread(percentile(vals, 50), percentile(vals, 90), len(vals))


@dataclass
class StateStats:
    """The launches of one signature in one page-cache state."""

    state: str
    launches: int = 0
    total: Spread | None = None
    phases: dict[str, Spread] = field(default_factory=dict)
    #: ``total`` is launch → ready (False: only the sum of the phases was recorded, gaps left out)
    measured_total: bool = True


def by_state(records: Iterable[LaunchRecord]) -> dict[str, StateStats]:
    """Per page-cache state (in :data:`STATES` order, only those with launches): launch → ready and each
    phase's p50/p90. Launch → ready over the launches that recorded it (history written before it was
    kept has only phases: then the sum of the phases, said as such)."""
    groups: dict[str, list[LaunchRecord]] = {}
    for r in records:
        groups.setdefault(r.state, []).append(r)
    return {state: _stats(state, groups[state]) for state in STATES if groups.get(state)}


def _stats(state: str, rs: list[LaunchRecord]) -> StateStats:
    names: list[str] = []
    for r in rs:
        names += [p for p in r.phases if p not in names]
    totals = [r.total for r in rs if r.total is not None]
    return StateStats(
        state,
        len(rs),
        spread(totals) if totals else spread(sum(r.phases.values()) for r in rs),
        {p: s for p in names if (s := spread(r.phases[p] for r in rs if p in r.phases)) is not None},
        bool(totals),
    )


def estimates_for(records: Iterable[LaunchRecord], cache: str | None) -> tuple[dict[str, tuple[float, float]], str]:
    """Phase → (p50, p90) for the ETA of a launch whose page cache is ``cache``, and what they rest
    on in words. The launches of the same state when there are any; else every launch, saying the
    state is unmatched (a warm ETA for a cold launch is minutes short)."""
    rows = list(records)
    if not rows:
        return {}, ""
    stats = by_state(rows)
    same = stats.get(cache) if cache in (WARM, PART, COLD) else None
    if same is not None:
        basis, picked = f"{cache} page cache, {_n(same.launches)}", same
    else:
        picked = _stats("all", rows)
        if cache in (WARM, PART, COLD):
            basis = f"{_n(len(rows))}, none with a {cache} page cache"
        else:
            known = sorted({r.state for r in rows} - {UNKNOWN})
            basis = _n(len(rows)) + (f" ({', '.join(known)} page cache; this one's not measured)" if known else "")
    ests = {p: (s.p50, s.p90) for p, s in picked.phases.items()}
    return ests, basis


def _n(n: int) -> str:
    return f"{n} launch{'es' if n != 1 else ''}"


def fmt(s: float) -> str:
    if s < 60:
        return f"{s:.0f}s"
    m, sec = divmod(round(s), 60)
    return f"{m}m{sec:02d}s"


def signature_label(key: str) -> str:
    """A history key (canonical JSON) in a line: ``host · model · tp N · flag=value …``."""
    import json

    try:
        d: Any = json.loads(key)
    except ValueError:
        return key[:120]
    if not isinstance(d, dict):
        return key[:120]
    raw = d.get("flags")
    flags: dict[str, Any] = raw if isinstance(raw, dict) else {}
    short = " ".join(
        f"{str(k).removeprefix('--speculative-').removeprefix('--')}={v}" for k, v in sorted(flags.items())
    )
    model = str(d.get("model") or "?").rsplit("/", 1)[-1]
    return " · ".join(x for x in (str(d.get("target") or "?"), model, f"tp {d.get('tp', '?')}", short) if x)


#: Signatures listed by ``eagletui sessions`` (the most recently recorded), and phases per line.
MAX_SIGNATURES = 20
PHASES_SHOWN = 3


def startup_lines(signatures: Iterable[tuple[str, list[LaunchRecord]]]) -> list[str]:
    """``eagletui sessions``' startup table: per signature, per page-cache state, how many launches, launch
    → ready p50/p90 and the longest phases' p50/p90 (the cold/warm split startup sweeps report)."""
    out: list[str] = []
    for key, records in signatures:
        stats = by_state(records)
        if not stats:
            continue
        out.append(f"  {signature_label(key)}")
        for state, st in stats.items():
            total = (st.total.text() if st.total else "?") + ("" if st.measured_total else " (Σ phases)")
            longest = sorted(st.phases.items(), key=lambda kv: -kv[1].p50)[:PHASES_SHOWN]
            phases = "  ".join(f"{name} {s.text()}" for name, s in longest)
            out.append(f"    {state:<9} {_n(st.launches):<12} ready {total:<20}  {phases}".rstrip())
    return out
