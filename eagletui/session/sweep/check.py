"""What a sweep queue file must hold before :class:`~eagletui.session.sweep.queue.SweepQueue` takes it.

The queue is a file in the user's data dir, but it is still a file: hand-edited, half-written by an
older eagletui, or planted. A ``repeats: -3`` passed the old ``int()`` conversion and launched every
variant's server to measure nothing; ``run_id: [1]`` or ``attempts: "many"`` travelled on into the
runner, and a variant that was itself a queue ended in a traceback. Every field is checked here for
its type and range, and the first problem is named by its place in the file
(``variants[2].attempts``), so the error says what to fix. Pure: no I/O.
"""

from __future__ import annotations

import math
from typing import Any

from eagletui.core.profile.objective import OBJECTIVES

#: The most repeats a queue may ask per variant, and variants it may hold (a [sweep] is far smaller).
MAX_REPEATS = 1000
MAX_VARIANTS = 10_000
STATES = ("pending", "launching", "benchmarking", "done", "failed", "skipped")


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", str: "a string", list: "a list", dict: "an object"}.get(
        type(v), type(v).__name__
    )


def _int(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and abs(v) <= 1e15


def _scalar(v: Any) -> bool:
    """A toggle's value: a string, a finite number, a boolean or null; never a list or a table."""
    return v is None or isinstance(v, str | bool) or _num(v)


def _repeat_problem(r: Any) -> str | None:
    if not isinstance(r, dict):
        return f"must be an object, got {_kind(r)}"
    for key in ("tok_s", "accept", "ttft_ms", "seconds", "goodput_tok_s"):
        if r.get(key) is not None and not _num(r[key]):
            return f".{key} must be a finite number, got {_kind(r[key])} {r[key]!r}"[:200]
    if r.get("concurrency") is not None and not _int(r["concurrency"], 1, 10**6):
        return f".concurrency must be a positive integer, got {_kind(r['concurrency'])} {r['concurrency']!r}"[:200]
    if "warm" in r and not isinstance(r["warm"], bool):
        return f".warm must be true or false, got {_kind(r['warm'])}"
    if r.get("error") not in (None, "") and not isinstance(r.get("error"), str):
        return f".error must be a string, got {_kind(r['error'])}"
    return None


_VARIANT_FIELDS: dict[str, tuple[str, Any]] = {
    # field: (what it must be, check)
    "index": ("a non-negative integer", lambda v: _int(v, 0, MAX_VARIANTS)),
    "name": ("a string", lambda v: isinstance(v, str)),
    "state": (f"one of {', '.join(STATES)}", lambda v: v in STATES),
    "phase": ("a string", lambda v: isinstance(v, str)),
    "run_id": ("a string", lambda v: isinstance(v, str)),
    "launches": ("a non-negative integer", lambda v: _int(v, 0, 1_000_000)),
    "attempts": ("a non-negative integer", lambda v: _int(v, 0, 1_000_000)),
    "failure_kind": ("a string", lambda v: isinstance(v, str)),
    "failure": ("a string", lambda v: isinstance(v, str)),
    "launch_s": ("a finite number or null", lambda v: v is None or _num(v)),
    "bench_s": ("a finite number or null", lambda v: v is None or _num(v)),
    "started_wall": ("a finite number or null", lambda v: v is None or _num(v)),
    "target": ("a string", lambda v: isinstance(v, str)),
    # queue version 2 (issue 21): launches with cells, the drift check, the GPU gate
    "overhead_s": ("a finite number or null", lambda v: v is None or _num(v)),
    "recheck_of": ("a variant index or null", lambda v: v is None or _int(v, 0, MAX_VARIANTS)),
    "cost": (
        "a list of integers",
        lambda v: isinstance(v, list) and len(v) <= 8 and all(_int(x, 0, 10**6) for x in v),
    ),
    "launch_key": ("a string", lambda v: isinstance(v, str)),
    "oom_retry": ("a string", lambda v: isinstance(v, str)),
    "profile_note": ("a string", lambda v: isinstance(v, str)),
    "gate": ("an object", lambda v: isinstance(v, dict) and all(_scalar(x) for x in v.values())),
    # eagletui tune's notes: read back by the tuner, which checks each value it uses
    "tune": ("an object", lambda v: isinstance(v, dict)),
    "max_rate": ("an object", lambda v: isinstance(v, dict)),
}

#: The most client points (cells) a launch may hold.
MAX_CELLS = 4096


def _repeats_problem(repeats: Any, where: str) -> str | None:
    """A list of benchmark runs (a variant's, or since queue version 2 a cell's)."""
    if not isinstance(repeats, list):
        return f"{where}.repeats must be a list, got {_kind(repeats)}"
    for j, r in enumerate(repeats):
        problem = _repeat_problem(r)
        if problem is not None:
            return f"{where}.repeats[{j}]{'' if problem.startswith('.') else ' '}{problem}"
    return None


def _cell_problem(c: Any, where: str) -> str | None:
    if not isinstance(c, dict):
        return f"{where} must be an object, got {_kind(c)}"
    client = c.get("client")
    if not isinstance(client, dict) or not all(_scalar(x) for x in client.values()):
        return f"{where}.client must be an object of client settings, got {_kind(client)}"
    for key in ("stop", "stop_text"):
        if key in c and not isinstance(c[key], str):
            return f"{where}.{key} must be a string, got {_kind(c[key])}"
    return _repeats_problem(c.get("repeats", []), where)


def _variant_problem(v: Any, i: int) -> str | None:
    where = f"variants[{i}]"
    if not isinstance(v, dict):
        return f"{where} must be an object, got {_kind(v)}"
    for key in ("index", "name", "settings"):
        if key not in v:
            return f"{where}.{key} is missing"
    for key, (what, ok) in _VARIANT_FIELDS.items():
        if key in v and not ok(v[key]):
            return f"{where}.{key} must be {what}, got {_kind(v[key])} {v[key]!r}"[:200]
    settings = v["settings"]
    if not isinstance(settings, dict):
        return f"{where}.settings must be an object, got {_kind(settings)}"
    for k, val in settings.items():
        if not _scalar(val):
            return f"{where}.settings[{k!r}] must be a string, number or boolean, got {_kind(val)}"[:200]
    problem = _repeats_problem(v.get("repeats", []), where)
    if problem is not None:
        return problem
    cells = v.get("cells", [])
    if not isinstance(cells, list) or len(cells) > MAX_CELLS:
        return f"{where}.cells must be a list of at most {MAX_CELLS} cells, got {_kind(cells)}"
    for j, c in enumerate(cells):
        problem = _cell_problem(c, f"{where}.cells[{j}]")
        if problem is not None:
            return problem
    return None


def queue_problem(d: Any) -> str | None:
    """The first thing wrong with a decoded queue file (a place and what it must be), or None."""
    if not isinstance(d, dict):
        return f"the file must hold an object, got {_kind(d)}"
    for key in ("target", "profile", "fingerprint", "repeats", "factors", "variants", "order"):
        if key not in d:
            return f"{key} is missing"
    for key in ("target", "profile", "fingerprint"):
        if not isinstance(d[key], str):
            return f"{key} must be a string, got {_kind(d[key])}"
    if not _int(d["repeats"], 1, MAX_REPEATS):
        return (
            f"repeats must be an integer from 1 to {MAX_REPEATS}, got {_kind(d['repeats'])} {d['repeats']!r}"[
                :200
            ]
        )
    if not isinstance(d["factors"], list) or not all(isinstance(f, str) for f in d["factors"]):
        return "factors must be a list of strings"
    variants = d["variants"]
    if not isinstance(variants, list) or not 1 <= len(variants) <= MAX_VARIANTS:
        return f"variants must be a list of 1 to {MAX_VARIANTS} variants, got {_kind(variants)}"
    for i, v in enumerate(variants):
        problem = _variant_problem(v, i)
        if problem is not None:
            return problem
    order = d["order"]
    if not isinstance(order, list) or not all(_int(i, 0, MAX_VARIANTS) for i in order):
        return "order must be a list of variant indices"
    if "aborted" in d and not isinstance(d["aborted"], bool):
        return f"aborted must be true or false, got {_kind(d['aborted'])}"
    if "created" in d and not _num(d["created"]):
        return f"created must be a finite number, got {_kind(d['created'])}"
    return _v2_problem(d)


def _v2_problem(d: dict[str, Any]) -> str | None:
    """The fields queue version 2 added (issue 21)."""
    policy = d.get("policy", {})
    if not isinstance(policy, dict):
        return f"policy must be an object, got {_kind(policy)}"
    for key in ("repeats", "min_repeats", "max_repeats"):
        if key in policy and not _int(policy[key], 1, MAX_REPEATS):
            return f"policy.{key} must be an integer from 1 to {MAX_REPEATS}, got {policy[key]!r}"[:200]
    if "confidence" in policy and not (_num(policy["confidence"]) and 0.5 <= policy["confidence"] < 1):
        return f"policy.confidence must be a number from 0.5 to below 1, got {policy['confidence']!r}"[:200]
    if "tie_pct" in policy and not (_num(policy["tie_pct"]) and 0 <= policy["tie_pct"] <= 50):
        return f"policy.tie_pct must be a percentage from 0 to 50, got {policy['tie_pct']!r}"[:200]
    if "adaptive" in policy and not isinstance(policy["adaptive"], bool):
        return "policy.adaptive must be true or false"
    cf = d.get("client_factors", [])
    if not isinstance(cf, list) or not all(isinstance(f, str) for f in cf):
        return "client_factors must be a list of strings"
    if "workers" in d and not _int(d["workers"], 1, 100_000):
        return f"workers must be a positive integer, got {_kind(d['workers'])} {d['workers']!r}"[:200]
    obj = d.get("objective", {})
    if not isinstance(obj, dict) or ("kind" in obj and obj["kind"] not in OBJECTIVES):
        return f"objective must be an object with a kind of {', '.join(OBJECTIVES)}, got {obj!r}"[:200]
    if "step_profile" in d and not isinstance(d["step_profile"], bool):
        return f"step_profile must be true or false, got {_kind(d['step_profile'])}"
    if "gpu_wait_s" in d and not (_num(d["gpu_wait_s"]) and d["gpu_wait_s"] >= 0):
        return f"gpu_wait_s must be a non-negative number, got {_kind(d['gpu_wait_s'])}"
    if "paused" in d and not isinstance(d["paused"], str):
        return f"paused must be a string, got {_kind(d['paused'])}"
    for key in ("started_wall", "finished_wall"):
        if d.get(key) is not None and not _num(d[key]):
            return f"{key} must be a finite number or null, got {_kind(d[key])}"
    first = d.get("first_eta", {})
    if not isinstance(first, dict) or not all(_scalar(x) for x in first.values()):
        return "first_eta must be an object of numbers"
    log = d.get("eta_log", [])
    if not isinstance(log, list) or not all(
        isinstance(x, list) and len(x) == 2 and all(_num(y) for y in x) for x in log
    ):
        return "eta_log must be a list of [wall, seconds] pairs"
    return None
