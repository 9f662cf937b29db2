"""``benchmarks/ui_load.py --ab-keypath``: the keys pressed through Textual's bubbling beside those that
took the app's direct key path, in the same run: their figures and the ratios, and the report's row.

Apart so the script stays under the house limit; its name starts with ``_`` so CI does not run it.
"""

from __future__ import annotations

from benchmarks._ui_load_drive import pct


def keypath_ab(keys: dict, burst: list[float], idle: list[float]) -> dict:
    """``--ab-keypath``: the keys pressed with the app's direct key path off (Textual's bubbling), beside
    the others of the same run, and the ratios direct / bubbling (below 1: the direct path is faster)."""

    def ratio(a: float, b: float | None) -> float | None:
        return round(a / b, 2) if b and a == a else None

    def q(xs: list[float], p: float) -> float | None:
        return round(pct(xs, p), 1) if xs else None  # no NaN in the JSON line

    b50, b95, i50, i95 = q(burst, 0.5), q(burst, 0.95), q(idle, 0.5), q(idle, 0.95)
    return {
        "burst_n": len(burst),
        "burst_p50_ms": b50,
        "burst_p95_ms": b95,
        "idle_n": len(idle),
        "idle_p50_ms": i50,
        "idle_p95_ms": i95,
        "burst_p50_ratio": ratio(keys["key_p50_ms"], b50),
        "burst_p95_ratio": ratio(keys["key_p95_ms"], b95),
        "idle_p50_ratio": ratio(keys["idle_key_p50_ms"], i50),
        "idle_p95_ratio": ratio(keys["idle_key_p95_ms"], i95),
    }


def keypath_rows(ab: dict | None) -> list[tuple[str, str]]:
    if not ab:
        return []
    return [
        (
            "keys via bubbling",
            f"burst p50 {ab['burst_p50_ms']} p95 {ab['burst_p95_ms']} ms (n={ab['burst_n']}), idle p50 "
            f"{ab['idle_p50_ms']} p95 {ab['idle_p95_ms']} ms (n={ab['idle_n']}); direct/bubbling: burst p50 "
            f"{ab['burst_p50_ratio']} p95 {ab['burst_p95_ratio']}, idle p50 {ab['idle_p50_ratio']} "
            f"p95 {ab['idle_p95_ratio']}",
        )
    ]
