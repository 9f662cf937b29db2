"""Turning a pasted shell launch command into profile parts, and the default tunables for it.

``eagletui profile new`` and reattaching to a running server start from a command line someone already
has; this splits it (``shlex``, never a shell) into command, env, args, port and host, and proposes the
usual EAGLE/NCCL toggles seeded with the command's own values. Kept apart from the TOML loader because
it validates a different input. Callers import these names from :mod:`eagletui.core.profile.model`.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from eagletui.core.profile.model import ProfileError, ScalarValue, normalize_flag, validate_env_name
from eagletui.core.profile.redact import is_switch
from eagletui.core.servers.kinds import kind_of_command, server_kind

_PY_RE = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)?)?$")
_NUM_INT_RE = re.compile(r"^[+-]?\d+$")
_NUM_FLOAT_RE = re.compile(r"^[+-]?(?:\d+\.\d*|\.\d+|\d+(?:\.\d*)?[eE][+-]?\d+)$")


@dataclass
class LaunchCommand:
    """A pasted ``[ENV=V …] python -m sglang.launch_server --flag v …`` split into profile parts."""

    command: list[str]
    python: str = "python3"
    args: dict[str, ScalarValue | list[ScalarValue]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    port: int | None = None
    host: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: the server kind the command runs (``sglang``, ``vllm``; :mod:`eagletui.core.servers.kinds`)
    kind: str = "sglang"


def _scalar(text: str) -> ScalarValue:
    """Numbers become TOML numbers so toggles can step them; everything else stays a verbatim string."""
    if _NUM_INT_RE.match(text) and not (len(text.lstrip("+-")) > 1 and text.lstrip("+-").startswith("0")):
        return int(text)
    if _NUM_FLOAT_RE.match(text):
        return float(text)
    return text


def parse_launch_command(text: str) -> LaunchCommand:
    """Split a shell-style launch command into argv parts without ever running a shell.

    Accepts env prefixes (``NCCL_ALGO=Tree python -m …``, ``env A=B …``), backslash line continuations,
    ``python[3[.x]] -m module``, ``sglang serve`` and ``--flag=value``/``--flag v1 v2``/bare ``--flag``.
    """
    cleaned = re.sub(r"\\\r?\n", " ", text.strip())
    cleaned = re.sub(r"^\s*\$\s+", "", cleaned)
    try:
        tokens = [t for t in shlex.split(cleaned, comments=False) if t.strip()]
    except ValueError as exc:
        raise ProfileError(f"cannot split the launch command: {exc}") from None
    env, i = _env_prefix(tokens)
    rest = tokens[i:]
    if not rest:
        raise ProfileError("the launch command is empty")
    python, command, rest = _program(rest)
    if not command:
        raise ProfileError("the launch command has no program before its flags")
    found = kind_of_command(command)
    out = LaunchCommand(command=command, python=python, env=env, kind=(found or server_kind()).name)
    _read_flags(rest, out)
    return out


def _env_prefix(tokens: list[str]) -> tuple[dict[str, str], int]:
    """The ``NAME=value`` assignments (after an optional ``env``) before the program, and where the
    program starts."""
    env: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "env" and i == 0:
            i += 1
            continue
        name, eq, value = tok.partition("=")
        if eq and not tok.startswith("-") and "/" not in name:
            validate_env_name(name)
            if "\n" in value or "\x00" in value:
                raise ProfileError(f"environment value of {name} contains a newline")
            env[name] = value
            i += 1
            continue
        break
    return env, i


def _program(rest: list[str]) -> tuple[str, list[str], list[str]]:
    """(the python, the command, the tokens after it): ``python -m module``, ``sglang serve`` /
    ``vllm serve``, or everything before the first ``--flag``."""
    python = "python3"
    if _PY_RE.match(rest[0]) and len(rest) >= 3 and rest[1] == "-m":
        python = rest[0]
        command = ["{python}", "-m", rest[2]]
        rest = rest[3:]
    elif (
        (rest[0].endswith("sglang") or rest[0].rsplit("/", 1)[-1] == "vllm")
        and len(rest) >= 2
        and rest[1] == "serve"
    ):
        command = rest[:2]
        rest = rest[2:]
    else:
        n = next((k for k, t in enumerate(rest) if t.startswith("--")), len(rest))
        command = rest[:n]
        rest = rest[n:]
    return python, command, rest


def _read_flags(rest: list[str], out: LaunchCommand) -> None:
    """The flags after the program into ``out``: ``--port``/``--host`` apart, the model positional of
    ``serve`` as the model flag, numbers as numbers."""
    model_flag = server_kind(out.kind).model_flag
    k = 0
    while k < len(rest):
        tok = rest[k]
        if not tok.startswith("--"):
            if model_flag not in out.args:
                out.args[model_flag] = tok  # `sglang serve MODEL` / `vllm serve MODEL` positional
            else:
                out.warnings.append(f"ignored stray argument {tok!r}")
            k += 1
            continue
        flag, eq, inline = tok.partition("=")
        flag = normalize_flag(flag)
        values: list[str] = []
        if eq:
            values = [inline]
            k += 1
        else:
            k += 1
            # A switch (nargs 0 in SGLang's table) takes no value: in ``sglang serve --trust-remote-code
            # MODEL`` the model is the positional, not the switch's value.
            while k < len(rest) and not rest[k].startswith("--") and not is_switch(flag):
                values.append(rest[k])
                k += 1
        for v in values:
            if "\n" in v or "\x00" in v:
                raise ProfileError(f"value of {flag} contains a newline")
        if flag == "--port" and len(values) == 1 and _NUM_INT_RE.match(values[0]):
            out.port = int(values[0])
            continue
        if flag == "--host" and len(values) == 1:
            out.host = values[0]
            continue
        if not values:
            out.args[flag] = True
        elif len(values) == 1:
            out.args[flag] = _scalar(values[0])
        else:
            out.args[flag] = [_scalar(v) for v in values]


def default_toggles(args: dict[str, Any], env: dict[str, str], kind: str = "sglang") -> list[dict[str, Any]]:
    """Sensible starting tunables for an EAGLE tp=N server, seeded with the command's own values."""

    def choices(current: Any, base: list[str]) -> list[str]:
        return base if current is None or str(current) in base else [str(current), *base]

    if kind == "vllm":
        return _seeded(_vllm_toggles(args, env, choices), args, env)

    out: list[dict[str, Any]] = [
        {
            "env": "NCCL_ALGO",
            "choices": choices(env.get("NCCL_ALGO"), ["Ring", "Tree", "NVLS"]),
            "help": "NCCL collective algorithm",
        },
        {
            "env": "NCCL_PROTO",
            "choices": choices(env.get("NCCL_PROTO"), ["LL", "LL128", "Simple"]),
            "help": "NCCL protocol",
        },
        {"env": "NCCL_MIN_NCHANNELS", "type": "int", "min": 1, "max": 32, "step": 1},
    ]
    algo = args.get("--speculative-algorithm")
    if algo:
        out.append(
            {
                "arg": "speculative-algorithm",
                "choices": [str(algo)],
                "help": "unset = no speculative decoding (the baseline)",
            }
        )
        draft = args.get("--speculative-draft-model-path")
        if isinstance(draft, str):
            out.append(
                {"arg": "speculative-draft-model-path", "choices": [draft], "help": "drafter to evaluate"}
            )
        out.append({"arg": "speculative-num-steps", "type": "int", "min": 1, "max": 8})
        out.append({"arg": "speculative-eagle-topk", "type": "int", "min": 1, "max": 8})
        out.append({"arg": "speculative-num-draft-tokens", "type": "int", "min": 2, "max": 16})
    graph = "cuda-graph-max-bs" if "--cuda-graph-max-bs" in args else "cuda-graph-max-bs-decode"
    out.append({"arg": graph, "type": "int", "min": 8, "max": 256, "step": 8})
    out.append({"arg": "mem-fraction-static", "type": "float", "min": 0.5, "max": 0.95, "step": 0.05})
    if "--enable-flashinfer-allreduce-fusion" in args:
        out.append(
            {
                "arg": "enable-flashinfer-allreduce-fusion",
                "type": "bool",
                "help": "FlashInfer all-reduce + RMSNorm fusion",
            }
        )
    else:
        out.append(
            {
                "arg": "flashinfer-allreduce-fusion-backend",
                "choices": ["auto", "trtllm", "mnnvl", "cutedsl"],
                "help": "FlashInfer all-reduce fusion backend (0.5.20+)",
            }
        )
    return _seeded(out, args, env)


def _seeded(toggles: list[dict[str, Any]], args: dict[str, Any], env: dict[str, str]) -> list[dict[str, Any]]:
    """Each numeric toggle's range widened to hold the command's own value (``--mem-fraction-static 0.3``
    under a default of 0.5–0.95): the running value must be one its toggle can come back to, which
    ``profile check`` enforces."""
    for t in toggles:
        if "min" not in t or "max" not in t:
            continue
        raw = args.get("--" + t["arg"]) if "arg" in t else env.get(t["env"])
        try:
            value = float(raw) if raw is not None and not isinstance(raw, bool | list) else None
        except ValueError:
            value = None
        if value is None or not math.isfinite(value):
            continue
        as_type = int if t.get("type") == "int" and value.is_integer() else float
        if value < t["min"]:
            t["min"] = as_type(value)
        if value > t["max"]:
            t["max"] = as_type(value)
    return toggles


def _vllm_toggles(args: dict[str, Any], env: dict[str, str], choices: Any) -> list[dict[str, Any]]:
    """vLLM's: NCCL, speculation on/off (the baseline) with the command's config, memory, batch size."""
    out: list[dict[str, Any]] = [
        {
            "env": "NCCL_ALGO",
            "choices": choices(env.get("NCCL_ALGO"), ["Ring", "Tree", "NVLS"]),
            "help": "NCCL collective algorithm",
        },
    ]
    spec = args.get("--speculative-config")
    if isinstance(spec, str) and spec:
        out.append(
            {
                "arg": "speculative-config",
                "choices": [spec],
                "help": "unset = no speculative decoding (the baseline)",
            }
        )
    out.append({"arg": "gpu-memory-utilization", "type": "float", "min": 0.5, "max": 0.95, "step": 0.05})
    out.append({"arg": "max-num-seqs", "type": "int", "min": 8, "max": 512, "step": 8})
    return out
