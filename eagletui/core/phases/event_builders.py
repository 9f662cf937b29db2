"""The events of the interpreter's fast paths, built without their keyword constructors.

The events are frozen slotted dataclasses; their generated __init__ (keyword arguments, one
object.__setattr__ per field) costs more than the rest of the fast path. The builders below create
the very same objects (same class, every field set, the wall/mono default factories called in
field order) through the slot descriptors. They are used only if the classes still look exactly as
written for (fields, no __post_init__), else the builders are the plain constructors.

Apart from the interpreter because it is generated code of its own kind (one template, exec'd per event
class) with its own test; the live fast path (:mod:`eagletui.core.phases.live_path`) calls the builders.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from eagletui.core import events as ev


def slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Any, ...] | None:
    fields = dataclasses.fields(cls)
    if (
        tuple(f.name for f in fields) != ("wall", "mono") + names
        or getattr(cls, "__post_init__", None) is not None
        or "__slots__" not in cls.__dict__
    ):
        return None
    out = []
    for name in ("wall", "mono") + names:
        desc = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
        if desc is None or type(desc) is not _MEMBER:
            return None
        out.append(desc.__set__)
    return (fields[0].default_factory, fields[1].default_factory, *out)


_MEMBER = type(ev.LogLine.__dict__["text"])
_new = object.__new__


def builder(cls: type, params: tuple[str, ...], fixed: dict[str, Any] | None = None) -> Any:
    """A positional constructor for ``cls``: ``build(*params)`` with ``fixed`` fields set to constants.

    Generated from one template (exec of a few lines) so every event class gets the same fast code:
    the wall/mono factories called first, in field order, then one slot setter per field. Falls back
    to the plain keyword constructor when the class does not look as expected (see slot_setters).
    """
    fixed = fixed or {}
    names = tuple(f.name for f in dataclasses.fields(cls))[2:]
    if set(params) | set(fixed) != set(names) or set(params) & set(fixed):
        raise ValueError(f"{cls.__name__}: params {params} + fixed {tuple(fixed)} != fields {names}")
    s = slot_setters(cls, names)
    if s is None:

        def build(*args: Any) -> Any:
            return cls(**dict(zip(params, args, strict=True)), **fixed)

        return build
    env: dict[str, Any] = {"_new": _new, "_cls": cls, "_now_wall": s[0], "_now_mono": s[1]}
    env["_s_wall"], env["_s_mono"] = s[2], s[3]
    body = ["    o = _new(_cls)", "    _s_wall(o, _now_wall())", "    _s_mono(o, _now_mono())"]
    for name, setter in zip(names, s[4:], strict=True):
        env["_s_" + name] = setter
        if name in fixed:
            env["_v_" + name] = fixed[name]
            body.append(f"    _s_{name}(o, _v_{name})")
        else:
            body.append(f"    _s_{name}(o, {name})")
    src = f"def build({', '.join(params)}):\n" + "\n".join(body) + "\n    return o\n"
    exec(compile(src, f"<{cls.__name__} builder>", "exec"), env)  # a fixed template, no outside text
    return env["build"]


# Argument orders as the fast paths call them.
build_log_line = builder(
    ev.LogLine,
    ("text", "kind", "rank", "seq", "launch", "prefix_end", "rank_start", "rank_end"),
    {"frame": False},
)
build_decode_stats = builder(
    ev.DecodeStats,
    (
        "gen_throughput",
        "running_req",
        "queue_req",
        "accept_len",
        "accept_rate",
        "token_usage",
        "num_tokens",
        "cuda_graph",
        "launch",
    ),
)
build_prefill_stats = builder(
    ev.PrefillStats,
    ("new_seq", "new_token", "cached_token", "running_req", "queue_req", "input_throughput", "launch"),
)
