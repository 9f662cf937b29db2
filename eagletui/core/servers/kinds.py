"""Server kinds: what eagletui must know of a server program beyond its log (profile key ``server.kind``).

Its log is a :class:`~eagletui.core.logs.seam.LogFormat`; everything else a launch, a preflight and a
benchmark need is here, one :class:`ServerKind` per program: how it is started, which flags name the
model, the parallelism and speculation, where its flags come from (the host's own parser), which HTTP
API a benchmark speaks and which Prometheus counters say how many drafted tokens were accepted. Upper
layers look a kind up by name instead of testing for SGLang's flag names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ServerKind:
    """One server program (see the module docstring)."""

    name: str
    label: str
    #: the log format that reads its output (:func:`eagletui.core.logs.seam.get_format`)
    log_format: str
    #: the launch command when a profile gives none (``{python}`` is the profile's interpreter)
    command: tuple[str, ...]
    port: int
    model_flag: str
    draft_flags: tuple[str, ...]
    tp_flags: tuple[str, ...]
    #: a flag whose presence (any value but off) turns speculation on
    spec_flags: tuple[str, ...]
    #: flags that only matter with speculation (dropped for the no-spec baseline of ``bench --vs-no-spec``)
    spec_prefixes: tuple[str, ...]
    #: the benchmark API: ``sglang`` (native /generate) or ``openai`` (/v1/completions)
    api: str
    #: the Python module whose parser decides its flags on the host (``known_flags``)
    flag_module: str
    #: the flag that caps the context length (checked against the model's config)
    context_flag: str = ""

    def is_spec(self, args: dict[str, Any]) -> bool:
        """Whether a launch with these ``--flag`` args speculates."""
        for flag in self.spec_flags:
            v = args.get(flag)
            if v is not None and v is not False and v != "" and str(v).lower() not in ("none", "null"):
                return True
        return False

    def model(self, args: dict[str, Any]) -> str:
        v = args.get(self.model_flag)
        return "" if v is None or isinstance(v, bool) else str(v)

    def draft(self, args: dict[str, Any]) -> str:
        """The draft model a launch names (its own flag, or the ``model`` of a JSON speculative config)."""
        for flag in self.draft_flags:
            v = args.get(flag)
            if isinstance(v, str) and v:
                return v
        for flag in self.spec_flags:
            v = args.get(flag)
            if isinstance(v, str) and v.lstrip().startswith("{"):
                try:
                    cfg = json.loads(v)
                except ValueError:
                    continue
                model = cfg.get("model") if isinstance(cfg, dict) else None
                if isinstance(model, str) and model:
                    return model
        return ""

    def tp(self, args: dict[str, Any]) -> Any:
        """The tensor-parallel size the args ask for (1 when they do not say)."""
        for flag in self.tp_flags:
            if flag in args:
                return args[flag]
        return 1

    def without_spec(self, args: dict[str, Any]) -> dict[str, Any]:
        """The same args with every speculation flag removed: the launch's no-spec baseline."""
        return {k: v for k, v in args.items() if not k.startswith(self.spec_prefixes)}


SGLANG = ServerKind(
    name="sglang",
    label="SGLang",
    log_format="sglang",
    command=("{python}", "-m", "sglang.launch_server"),
    port=30000,
    model_flag="--model-path",
    draft_flags=("--speculative-draft-model-path",),
    tp_flags=("--tp", "--tp-size"),
    spec_flags=("--speculative-algorithm",),
    spec_prefixes=("--speculative-",),
    api="sglang",
    flag_module="sglang",
    context_flag="--context-length",
)

VLLM = ServerKind(
    name="vllm",
    label="vLLM",
    log_format="vllm",
    # ``vllm serve`` through the profile's interpreter (the console script need not be on PATH)
    command=("{python}", "-m", "vllm.entrypoints.cli.main", "serve"),
    port=8000,
    model_flag="--model",
    draft_flags=(),
    tp_flags=("--tensor-parallel-size",),
    spec_flags=("--speculative-config", "--speculative-model"),
    spec_prefixes=("--speculative-", "--num-speculative-tokens"),
    api="openai",
    flag_module="vllm",
    context_flag="--max-model-len",
)

#: Every known kind, the default first.
SERVER_KINDS: tuple[ServerKind, ...] = (SGLANG, VLLM)


def server_kind(name: str | None = None) -> ServerKind:
    """The kind called ``name`` (the default, the first, for None or ""). KeyError if unknown."""
    if not name:
        return SERVER_KINDS[0]
    for k in SERVER_KINDS:
        if k.name == name:
            return k
    raise KeyError(f"unknown server kind {name!r}; known: {', '.join(k.name for k in SERVER_KINDS)}")


def kind_or_default(name: str | None) -> ServerKind:
    """The kind called ``name``; a name this eagletui does not know reads as the default kind (a
    recording or a run made by a newer eagletui still folds)."""
    try:
        return server_kind(name)
    except KeyError:
        return SERVER_KINDS[0]


def kind_of_command(command: tuple[str, ...] | list[str]) -> ServerKind | None:
    """The kind a launch command runs, when it says (``-m sglang.launch_server``, ``vllm serve``)."""
    parts = [str(p) for p in command]
    for i, part in enumerate(parts):
        base = part.rsplit("/", 1)[-1]
        if part == "-m" and i + 1 < len(parts):
            mod = parts[i + 1]
            if mod.startswith("sglang"):
                return SGLANG
            if mod.startswith("vllm"):
                return VLLM
        if base == "vllm" and i + 1 < len(parts) and parts[i + 1] == "serve":
            return VLLM
        if base == "sglang" and i + 1 < len(parts) and parts[i + 1] == "serve":
            return SGLANG
    return None
