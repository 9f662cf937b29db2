"""Like for like: may two runs (of one session or of two) be compared, and if not, why not.

A Δ between runs only means something when the runs differ in the thing being tuned and nothing
else that moves tok/s by itself: the model, the tensor-parallel degree, the GPU type and the
benchmark workload (prompts, sampling, concurrency: the workload fingerprint). A baseline pinned
from an earlier session is exactly where these drift unnoticed, so the guard names every difference
it can see; a fact not recorded on one side is not a difference (it is unknown, not unequal).

Pure: reads :class:`~eagletui.core.runs.book.Run` fields, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # runs.py imports this module: the guard is part of its warnings
    from eagletui.core.runs.run import Run


def _norm(value: Any) -> str:
    return "" if value is None or value is False else str(value).strip()


def gpu_type(run: Run) -> str:
    """The GPU model a run was measured on, when the launch config recorded one (``gpu``)."""
    cfg = run.config if isinstance(run.config, dict) else {}
    return _norm(cfg.get("gpu") or cfg.get("gpu_type"))


def comparability(a: Run, b: Run, *, gpu_a: str = "", gpu_b: str = "") -> list[str]:
    """Why ``a`` vs ``b`` is not like for like (empty: comparable as far as the recordings say).

    Each reason reads ``different tp (8 vs 4)``: ``a``'s value first. ``gpu_a``/``gpu_b`` name the
    GPU type where the caller knows it from elsewhere (``nvidia-smi`` samples); else the runs' config."""
    out: list[str] = []

    def check(what: str, x: Any, y: Any) -> None:
        sx, sy = _norm(x), _norm(y)
        if sx and sy and sx != sy:
            out.append(f"different {what} ({sx} vs {sy})")

    check("model", a.model, b.model)
    check("tp", a.tp, b.tp)
    check("GPU type", gpu_a or gpu_type(a), gpu_b or gpu_type(b))
    fa, fb = a.fingerprint, b.fingerprint
    if fa and fb and fa != fb:
        out.append(f"different benchmark settings (workload {fa[:8]} vs {fb[:8]})")
    return out


# ------------------------------------------------------------------------- the no-spec reference

#: Server flags that do not change how fast a server decodes (where it listens, what it logs, the name
#: it answers to, its key): two launches that differ only in these are the same launch for a
#: comparison. Everything else (tp, memory fraction, attention backend, graph sizes, any other flag)
#: counts, and so does every environment variable but the logging ones below.
SPEED_NEUTRAL_ARGS = frozenset(
    {
        "--port",
        "--host",
        "--log-level",
        "--log-level-http",
        "--log-requests",
        "--log-requests-level",
        "--served-model-name",
        "--api-key",
    }
)
#: Environment variables that only change what is logged or recorded.
SPEED_NEUTRAL_ENV = frozenset(
    {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "SGLANG_LOG_MS", "SGLANG_RECORD_STEP_TIME"}
)


def _shown(value: Any) -> str:
    if value is None or value is False:
        return "unset"
    return "on" if value is True else str(value)


def launch_key(run: Run) -> dict[str, Any]:
    """What makes a launch this launch, minus its speculation: target, model, command, every
    speed-relevant server flag but the speculation family of its server kind (:mod:`eagletui.core.servers.spec`) and
    every speed-relevant environment variable. Two launches with equal keys differ at most in
    speculation: the one a spec run's economics may be computed against."""
    from eagletui.core.servers.spec import is_spec_flag

    cfg = run.config if isinstance(run.config, dict) else {}
    # the launch's own config, not what the server's args line adds: that line lists every default,
    # and some of them (the random seed, the NCCL port) change from one launch to the next
    raw: dict[str, Any] = cfg["args"] if isinstance(cfg.get("args"), dict) else {}
    args: dict[str, Any] = {}
    for k, v in raw.items():
        flag = "--" + str(k).strip().lstrip("-").replace("_", "-")
        if (
            not is_spec_flag(flag, run.kind)
            and flag not in SPEED_NEUTRAL_ARGS
            and v is not None
            and v is not False
        ):
            args[flag] = v
    env = {k: v for k, v in run.env.items() if k not in SPEED_NEUTRAL_ENV}
    cmd = cfg.get("command")
    return {
        "target": _norm(run.target),
        "model": _norm(run.model),
        "command": " ".join(str(c) for c in cmd) if isinstance(cmd, list | tuple) else _norm(cmd),
        "tp": _norm(run.tp),
        "GPU type": gpu_type(run),
        "args": args,
        "env": env,
        "configured": bool(cfg.get("args")) or bool(cfg.get("env")),
    }


def distinguishing(runs: Sequence[Run]) -> list[str]:
    """Per launch, what sets it apart from the others given: ``NCCL_ALGO=Tree
    enable-flashinfer-allreduce-fusion=on``, "" where nothing recorded does. Every flag of the launch's
    own config counts (speculation's too: two drafters of one step count are two curves; false reads
    ``off``) but those that change nothing of the speed (:data:`SPEED_NEUTRAL_ARGS`), and every
    speed-relevant environment variable; a value is shown to its last 32 characters (a path's tail).
    The frontier names curves of the same speculation settings by it, where ``(#3)`` alone made the
    reader look the launch up."""
    keys: list[dict[str, str]] = []
    for run in runs:
        cfg = run.config if isinstance(run.config, dict) else {}
        raw = cfg["args"] if isinstance(cfg.get("args"), dict) else {}
        key = {
            str(k).strip().lstrip("-").replace("_", "-"): "off" if v is False else _shown(v)
            for k, v in raw.items()
            if "--" + str(k).strip().lstrip("-").replace("_", "-") not in SPEED_NEUTRAL_ARGS
        }
        key.update({str(k): _shown(v) for k, v in run.env.items() if k not in SPEED_NEUTRAL_ENV})
        keys.append(key)
    out: list[list[str]] = [[] for _ in runs]
    for name in sorted({n for k in keys for n in k}, key=lambda n: (n.isupper(), n)):
        values = [k.get(name, "unset") for k in keys]
        if set(values) <= {"on", "off", "unset"}:
            values = ["off" if v == "unset" else v for v in values]  # a switch left out is off
        if len(set(values)) > 1:
            for said, v in zip(out, values, strict=True):
                said.append(f"{name}={v if len(v) <= 32 else '…' + v[-31:]}")
    return [" ".join(x) for x in out]


def launch_differences(a: Run, b: Run) -> list[str]:
    """What differs between two launches besides speculation, one item each, ``a``'s value first:
    ``--sim-host (h200-nvlink vs unset)``, ``NCCL_ALGO (Tree vs Ring)``, ``target (gpu-a vs gpu-b)``.
    Empty: ``b`` is ``a`` without speculation. A launch known only from the server's own args line
    (no recorded config) is compared on target, model, tp and GPU type only (where the recorded flags
    are compared, tp is one of them)."""
    ka, kb = launch_key(a), launch_key(b)
    configured = ka["configured"] and kb["configured"]
    out: list[str] = []
    for what in ("target", "model", "command", "GPU type", *(() if configured else ("tp",))):
        if ka[what] and kb[what] and ka[what] != kb[what]:
            out.append(f"{what} ({ka[what]} vs {kb[what]})")
    if not configured:
        return out
    for section in ("args", "env"):
        xa, xb = ka[section], kb[section]
        for name in sorted(set(xa) | set(xb)):
            va, vb = xa.get(name), xb.get(name)
            if _shown(va) != _shown(vb):
                out.append(f"{name} ({_shown(va)} vs {_shown(vb)})")
    return out
