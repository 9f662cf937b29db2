"""The simulated SGLang release as a comparable tuple: what the startup lines, the answers and adaptive
speculation's default tiers each look up by release."""

from __future__ import annotations


def version_tuple(v: str) -> tuple[int, ...]:
    """``0.5.17`` → (0, 5, 17); the digits of each of the first three parts, 0 where a part has none."""
    out = []
    for part in str(v).split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits or 0))
    return tuple(out)
