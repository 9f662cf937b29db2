"""A number from a profile table, checked against its range, its error located (``file:line:col``).

The ``[tune]`` and ``[sweep.max_rate]`` tables read their budgets and bounds through it, so a wrong type,
NaN, a boolean or a value out of range reads the same everywhere. No I/O.
"""

from __future__ import annotations

import math
from typing import Any

from eagletui.core.profile.model import ProfileError
from eagletui.core.tomlpos import locate


def bounded_number(
    raw: dict[str, Any],
    key: str,
    default: float | None,
    lo: float,
    hi: float,
    text: str,
    path: Any,
    *,
    section: str,
    integer: bool = False,
) -> float:
    """``raw[key]`` (``default`` when absent) as a float within [lo, hi]; an integer where ``integer``."""
    v: Any = raw.get(key, default)
    bad = isinstance(v, bool) or not isinstance(v, int | float) or (integer and not isinstance(v, int))
    if bad or not math.isfinite(v) or not lo <= v <= hi:
        kind = "an integer" if integer else "a number"
        raise ProfileError(
            f"{section}.{key} must be {kind} from {lo:g} to {hi:g}, got {v!r}", path, *locate(text, key, section)
        )
    return float(v)
