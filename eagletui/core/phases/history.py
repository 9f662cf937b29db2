"""Phase-duration history, so the timeline can say "load_target: ~3 min left" on the second launch.

Durations only compare between launches that should behave alike, so the key holds what changes load
and capture times (host, model, TP, speculative settings, CUDA graph sizes) and nothing else: an env
toggle such as NCCL_ALGO keeps its history. The median is the estimate because one slow launch
(a cold page cache, a busy disk) should not drag the ETA; p95 gives the "worst realistic" bound. Each
launch is also kept whole, with launch → ready and its page-cache state, for the cold/warm
distributions of :mod:`eagletui.core.phases.startup_stats` (the ETA of a launch whose state the
preflight measured rests on launches of the same state).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eagletui.core.host.page_cache import COLD, PART, WARM
from eagletui.core.phases.startup_stats import LaunchRecord, fmt
from eagletui.core.private_files import private_dir
from eagletui.core.profile.model import normalize_flag
from eagletui.core.servers.flags import KEY_FLAGS
from eagletui.core.servers.kinds import SERVER_KINDS, server_kind
from eagletui.core.stats.sample import percentile

#: Server flags that change how long loading or graph capture takes (the tuned flags but the memory
#: fraction). Part of the key: changing it would orphan every stored history.
TIMING_FLAGS: tuple[str, ...] = tuple(f for f in KEY_FLAGS if f != "--mem-fraction-static") + (
    # adaptive speculation captures one set of graphs per extra tier (core/state/adaptive.py)
    "--speculative-adaptive",
    "--speculative-adaptive-config",
    # the simulator's hardware preset and its clock: an H200 preset's launch and benchmarks are not a
    # PCIe one's (a demo-sweep on H200 took 0:32 where the PCIe sweep's history predicted 1:50); real
    # servers have neither flag, so their keys do not change
    "--sim-host",
    "--sim-time-scale",
)
#: No history for this launch's timing key: on launch #5 of a session it is still the first launch of
#: *this config* (the words say which, not "first launch").
FIRST_OF_CONFIG = "first launch of this config"
NO_ESTIMATE = f"{FIRST_OF_CONFIG}: no estimate"
MAX_SAMPLES = 50  # per key and phase: recent behaviour matters more than last year's driver
CACHE_STATES = (WARM, PART, COLD)


def _norm(value: Any) -> str | None:
    if value is None or value is False:
        return None
    if value is True:
        return "true"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


_KINDS = {k.name for k in SERVER_KINDS}


def history_key(snapshot: Mapping[str, Any]) -> str:
    """A stable string key from a config snapshot (``{"target","model","tp","args","env"}``).

    A string (canonical JSON) rather than a tuple so it can be stored as-is in the JSONL file.
    Flag spellings (a dest ``foo_bar`` and its flag ``--foo-bar``) and value types (``3`` vs ``"3"``) are normalised.
    """
    args = {normalize_flag(k, strict=False): v for k, v in (snapshot.get("args") or {}).items()}
    kind = server_kind(snapshot.get("server") if snapshot.get("server") in _KINDS else None)
    tp = snapshot.get("tp")
    if tp is None:
        tp = kind.tp(args)
    model = snapshot.get("model") or kind.model(args)
    flags = {f: n for f in TIMING_FLAGS if (n := _norm(args.get(f))) is not None}
    key = {
        "target": str(snapshot.get("target") or ""),
        "model": str(model),
        "tp": _norm(tp) or "1",
        "flags": flags,
    }
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def _valid(seconds: Any) -> bool:
    return (
        isinstance(seconds, int | float)
        and not isinstance(seconds, bool)
        and math.isfinite(seconds)
        and seconds >= 0
    )


class PhaseHistory:
    """In-memory samples per key and phase, optionally mirrored to an append-only JSONL file."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path).expanduser() if path is not None else None
        self.warnings: list[str] = []
        self._samples: dict[str, dict[str, list[float]]] = {}
        #: whole launches per key, with launch → ready and the page cache (core/phases/startup_stats.py)
        self._launches: dict[str, list[LaunchRecord]] = {}

    def _add(
        self, key: str, phase_durations: Mapping[str, Any], total: Any = None, cache: Any = None
    ) -> dict[str, float]:
        kept: dict[str, float] = {}
        phases = self._samples.setdefault(key, {})
        for phase, secs in phase_durations.items():
            if not _valid(secs):
                continue
            samples = phases.setdefault(str(phase), [])
            samples.append(float(secs))
            del samples[:-MAX_SAMPLES]
            kept[str(phase)] = float(secs)
        if kept:
            rows = self._launches.setdefault(key, [])
            rows.append(
                LaunchRecord(kept, float(total) if _valid(total) else None, cache if cache in CACHE_STATES else None)
            )
            del rows[:-MAX_SAMPLES]
        return kept

    def record(
        self, key: str, phase_durations: Mapping[str, float], *, total: float | None = None, cache: str | None = None
    ) -> None:
        """Add one launch's durations (negative/NaN ones are dropped), with its launch → ready seconds
        and page-cache state when known, and append them to the file. A file that cannot be written
        costs a warning, not the launch."""
        kept = self._add(key, phase_durations, total, cache)
        if not kept or self.path is None:
            return
        row: dict[str, Any] = {"key": key, "t": round(time.time(), 3), "phases": kept}
        if _valid(total):
            row["total"] = round(float(total or 0.0), 3)
        if cache in CACHE_STATES:
            row["cache"] = cache
        line = json.dumps(row, separators=(",", ":")) + "\n"
        try:
            private_dir(self.path.parent)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as exc:
            self.warnings.append(f"{self.path}: cannot append history: {exc.strerror or exc}")

    @classmethod
    def load(cls, path: str | Path) -> PhaseHistory:
        """Load a history file; damaged lines become ``warnings`` and a missing file is an empty history."""
        h = cls(path)
        assert h.path is not None
        try:
            text = h.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return h
        except OSError as exc:
            h.warnings.append(f"{h.path}: cannot read: {exc.strerror or exc}")
            return h
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key, phases = row["key"], row["phases"]
                if not isinstance(key, str) or not isinstance(phases, dict):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                h.warnings.append(f"{h.path}:{n}: not a history record, ignored")
                continue
            h._add(key, phases, row.get("total"), row.get("cache"))
        return h

    def keys(self) -> list[str]:
        """The launch signatures with launches, the most recently recorded last."""
        return list(self._launches)

    def launches(self, key: str) -> list[LaunchRecord]:
        """The recorded launches of one signature, oldest first (at most MAX_SAMPLES)."""
        return list(self._launches.get(key, []))

    def samples(self, key: str, phase: str) -> list[float]:
        return list(self._samples.get(key, {}).get(phase, []))

    def estimate(self, key: str, phase: str) -> float | None:
        s = self.samples(key, phase)
        return percentile(sorted(s), 50) if s else None

    def p95(self, key: str, phase: str) -> float | None:
        s = self.samples(key, phase)
        return percentile(sorted(s), 95) if s else None

    def estimate_total(self, key: str, phases: list[str] | tuple[str, ...]) -> float | None:
        """Sum of medians over ``phases``; None unless every phase has history (a partial sum would
        promise a launch that is faster than it will be)."""
        parts = [self.estimate(key, p) for p in phases]
        if not parts or any(p is None for p in parts):
            return None
        return sum(p for p in parts if p is not None)

    def phases(self, key: str) -> list[str]:
        """The phases that have samples under ``key``."""
        return list(self._samples.get(key, {}))

    def launch_estimate(self, key: str) -> float | None:
        """A whole launch (start → ready): the sum of the medians of every phase recorded under ``key``."""
        return self.estimate_total(key, self.phases(key)) if self.phases(key) else None

    def describe(self, key: str, phase: str) -> str:
        est = self.estimate(key, phase)
        if est is None:
            return NO_ESTIMATE
        n = len(self.samples(key, phase))
        p95 = self.p95(key, phase)
        return f"~{fmt(est)} (p95 {fmt(p95 or est)}, {n} launch{'es' if n != 1 else ''})"
