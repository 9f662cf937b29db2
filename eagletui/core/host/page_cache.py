"""Cold or warm: was the checkpoint in the host's page cache when a launch began?

The preflight measures it (``remote/preflight_scripts.py``: ``mincore`` over the checkpoint's shards,
``checkpoint.cached`` = the byte-weighted share resident just before the launch). That is the one sure
sign: a weight load from memory takes a fraction of one from storage, so a launch's time is only
comparable with launches of the same state. The thresholds are here once, for the launch's diagnosis
(``core/diagnosis/launch.py``) and the startup distributions (``core/phases/startup_stats.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

WARM, PART, COLD = "warm", "part-warm", "cold"
#: at least this share resident: warm; at most COLD_AT: cold; between: part-warm
WARM_AT, COLD_AT = 0.9, 0.1


def cached_share(checkpoint: Any) -> float | None:
    """The measured share of the checkpoint in the page cache, None when it was not measured."""
    frac = checkpoint.get("cached") if isinstance(checkpoint, Mapping) else None
    if not isinstance(frac, int | float) or isinstance(frac, bool) or not math.isfinite(frac):
        return None
    return min(1.0, max(0.0, float(frac)))


def cache_state(checkpoint: Any) -> str | None:
    """``warm`` / ``part-warm`` / ``cold`` from the preflight's checkpoint facts; None when unmeasured."""
    frac = cached_share(checkpoint)
    if frac is None:
        return None
    return WARM if frac >= WARM_AT else COLD if frac <= COLD_AT else PART
