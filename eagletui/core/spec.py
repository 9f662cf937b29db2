"""What "without speculation" means: the one definition every part of eagletui uses.

A tuner asks "is EAGLE-3 worth it here?", so a spec run is judged against the same launch without
speculative decoding. That launch must be the same everywhere: the Tune tab's toggle (unsetting
``--speculative-algorithm``), ``bench --vs-no-spec``, a sweep variant that unsets the algorithm and the
rule that picks a spec run's no-spec reference. Here it is, once:

* a launch **speculates** when ``--speculative-algorithm`` is set to an algorithm (not unset, ``false``,
  ``""`` or ``NONE``);
* its **no-spec counterpart** is the same launch with **every** ``--speculative-*`` flag removed (the
  draft model, ``-num-steps``, ``-eagle-topk``, ``-num-draft-tokens``, and the rest of the family):
  a draft path left behind without an algorithm is a different command line to compare against, and
  SGLang versions differ in what they do with it.

Flags are spelled as in profiles (``--speculative-num-steps``); names read back from logs
(``speculative_num_steps``) are normalised first. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SPEC_PREFIX = "--speculative-"
ALGORITHM = "--speculative-algorithm"
STEPS = "--speculative-num-steps"
TOPK = "--speculative-eagle-topk"
DRAFT_TOKENS = "--speculative-num-draft-tokens"
DRAFT_MODEL = "--speculative-draft-model-path"

_OFF = ("", "none", "null", "false", "0")


def flag_name(name: Any) -> str:
    """``speculative_num_steps`` / ``--speculative-num-steps`` → ``--speculative-num-steps``."""
    return "--" + str(name).strip().lstrip("-").replace("_", "-")


def is_spec_flag(name: Any) -> bool:
    """Is this flag one of the speculative family (removed in the no-spec counterpart)?"""
    return flag_name(name).startswith(SPEC_PREFIX)


def algorithm(args: Mapping[str, Any]) -> str | None:
    """The speculative algorithm these server args turn on (``EAGLE3``), None when they speculate not."""
    value: Any = None
    for key, v in args.items():
        if flag_name(key) == ALGORITHM:
            value = v
    if value is None or value is False or value is True:
        return None
    text = str(value).strip()
    return None if text.lower() in _OFF else text


def speculates(args: Mapping[str, Any]) -> bool:
    return algorithm(args) is not None


def without_speculation(args: Mapping[str, Any]) -> dict[str, Any]:
    """The same args with every ``--speculative-*`` flag removed (keys keep their spelling)."""
    return {k: v for k, v in args.items() if not is_spec_flag(k)}


def spec_flags(args: Mapping[str, Any]) -> dict[str, Any]:
    """Only the ``--speculative-*`` flags (set ones: ``None``/``False`` are absent)."""
    return {k: v for k, v in args.items() if is_spec_flag(k) and v is not None and v is not False}


def _int(args: Mapping[str, Any], flag: str) -> int | None:
    for key, v in args.items():
        if flag_name(key) == flag and not isinstance(v, bool):
            try:
                n = int(str(v))
            except ValueError:
                return None
            return n if n > 0 else None
    return None


def settings(args: Mapping[str, Any]) -> tuple[int | None, int | None, int | None]:
    """(``--speculative-num-steps``, ``-eagle-topk``, ``-num-draft-tokens``) as set; None where unset.

    With ``topk`` 1 SGLang runs a chain, and makes the draft tokens ``steps + 1`` whatever was given
    (0.5.17 ``srt/arg_groups/speculative_hook.py``: "speculative_num_draft_tokens is adjusted to
    speculative_num_steps + 1 when speculative_eagle_topk == 1")."""
    steps, topk, ndt = _int(args, STEPS), _int(args, TOPK), _int(args, DRAFT_TOKENS)
    if steps is not None and topk == 1:
        ndt = steps + 1
    return steps, topk, ndt


def max_accept(args: Mapping[str, Any]) -> int | None:
    """The most tokens one verify can accept at these settings (bonus included), None when unknown.

    A verify checks a tree ``steps`` deep; a request can keep at most one token per level plus the
    target's own (bonus) token, and never more than the ``num-draft-tokens`` the tree holds."""
    steps, _topk, ndt = settings(args)
    if steps is None and ndt is None:
        return None
    if steps is None:
        return ndt
    if ndt is None:
        return steps + 1
    return min(steps + 1, ndt)
