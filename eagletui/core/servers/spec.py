"""What "without speculation" means: the one definition every part of eagletui uses.

A tuner asks "is EAGLE-3 worth it here?", so a spec run is judged against the same launch without
speculative decoding. That launch must be the same everywhere: the Tune tab's toggle (unsetting the
speculation flag), ``bench --vs-no-spec``, a sweep variant that unsets it and the rule that picks a spec
run's no-spec reference. Here it is, once, in the words of the launch's server kind
(:class:`~eagletui.core.servers.kinds.ServerKind`; SGLang when none is given):

* a launch **speculates** when one of the kind's speculation flags is set to something (not unset,
  ``false``, ``""``, ``none``/``null``): SGLang's ``--speculative-algorithm``;
* its **no-spec counterpart** is the same launch with **every** flag of the kind's speculation family
  removed (SGLang: every ``--speculative-*``, the draft model, ``-num-steps``, ``-eagle-topk``,
  ``-num-draft-tokens`` and the rest): a draft path left behind without an algorithm is a different
  command line to compare against, and server versions differ in what they do with it.

Flags are spelled as in profiles (``--speculative-num-steps``); names read back from logs
(``speculative_num_steps``) are normalised first. The settings helpers below (steps, topk, draft tokens,
the most one verify can accept) are SGLang's EAGLE flags. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eagletui.core.servers.flags import parse_version
from eagletui.core.servers.kinds import ServerKind, kind_or_default

STEPS = "--speculative-num-steps"
TOPK = "--speculative-eagle-topk"
DRAFT_TOKENS = "--speculative-num-draft-tokens"
DRAFT_MODEL = "--speculative-draft-model-path"
ADAPTIVE = "--speculative-adaptive"
#: The largest tier of SGLang's default adaptive config, in every release that has one (0.5.11 to 0.5.23)
ADAPTIVE_DEFAULT_MAX_STEPS = 7


def flag_name(name: Any) -> str:
    """``speculative_num_steps`` / ``--speculative-num-steps`` → ``--speculative-num-steps``."""
    return "--" + str(name).strip().lstrip("-").replace("_", "-")


def _kind(kind: ServerKind | str | None) -> ServerKind:
    return kind if isinstance(kind, ServerKind) else kind_or_default(kind)


def is_spec_flag(name: Any, kind: ServerKind | str | None = None) -> bool:
    """Is this flag one of the kind's speculation family (removed in the no-spec counterpart)?"""
    return flag_name(name).startswith(_kind(kind).spec_prefixes)


def _normal(args: Mapping[str, Any]) -> dict[str, Any]:
    return {flag_name(k): v for k, v in args.items()}


def speculates(args: Mapping[str, Any], kind: ServerKind | str | None = None) -> bool:
    """Do these server args turn speculation on (:meth:`ServerKind.is_spec`)?"""
    return _kind(kind).is_spec(_normal(args))


def without_speculation(args: Mapping[str, Any], kind: ServerKind | str | None = None) -> dict[str, Any]:
    """The same args with every flag of the speculation family removed (keys keep their spelling)."""
    return {k: v for k, v in args.items() if not is_spec_flag(k, kind)}


def spec_flags(args: Mapping[str, Any], kind: ServerKind | str | None = None) -> dict[str, Any]:
    """Only the speculation family's flags (set ones: ``None``/``False`` are absent)."""
    return {k: v for k, v in args.items() if is_spec_flag(k, kind) and v is not None and v is not False}


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
    target's own (bonus) token, and never more than the ``num-draft-tokens`` the tree holds. Under
    adaptive speculation the deepest tier counts (its default config's, unknown with a config file)."""
    named = _normal(args)
    if _on(named, ADAPTIVE) and adaptive_fallback(args) is None:
        # adaptive speculation runs tiers up to the config's largest step, whatever --speculative-num-steps
        # says (that is only the first tier): 7 in every default config (0.5.11's [1, 3, 7] to 0.5.23's
        # [1, 3, 5, 7]); a config file of the user's may hold more, and it is on the host, not here
        return None if named.get("--speculative-adaptive-config") else ADAPTIVE_DEFAULT_MAX_STEPS + 1
    steps, _topk, ndt = settings(args)
    if steps is None and ndt is None:
        return None
    if steps is None:
        return ndt
    if ndt is None:
        return steps + 1
    return min(steps + 1, ndt)


#: Flags that bound the decode batch sizes SGLang captures CUDA graphs for (newest spelling first).
CAPTURE_FLAGS = ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs")


def captured_max_bs(args: Mapping[str, Any]) -> int | None:
    """The largest running batch a launch decodes under CUDA graphs, where its flags say: 0 with
    ``--disable-cuda-graph``, the largest of ``--cuda-graph-bs``, else the max-bs flag; None when the
    flags leave it to SGLang (it then picks by GPU memory, and the log's capture lines say)."""
    named = {flag_name(k): v for k, v in args.items()}
    if named.get("--disable-cuda-graph") in (True, "true", "True", "1"):
        return 0
    listed = named.get("--cuda-graph-bs")
    if isinstance(listed, list | tuple) and listed:
        sizes = [int(v) for v in listed if isinstance(v, int | str) and str(v).isdigit()]
        if sizes:
            return max(sizes)
    for flag in CAPTURE_FLAGS:
        v = _int(args, flag)
        if v is not None:
            return v
    return None



def _on(named: Mapping[str, Any], flag: str) -> bool:
    v = named.get(flag)
    return v is True or str(v).strip().lower() in ("true", "1", "yes")


def adaptive_fallback(args: Mapping[str, Any], version: str | None = None) -> str | None:
    """Why SGLang would run these args with **static** steps although ``--speculative-adaptive`` is set,
    in the server's own words; None when adaptive runs (or is not asked for).

    SGLang 0.5.23 (``speculative/adaptive_spec_params.py`` ``adaptive_unsupported_reason``, called by
    ``arg_groups/speculative_hook.py`` ``_maybe_disable_adaptive``) does not refuse these launches: it logs
    one WARNING, ``speculative_adaptive disabled: {reason}. Falling back to static speculative params.``,
    and serves the fixed steps. A tuner who asked for adaptive then compares the wrong thing without
    knowing, so the profile check, the preflight and the launch's diagnosis all ask this one function
    (the diagnosis also reads the server's own line). The checks are the wheel's, in its order, on the
    flags as given: the algorithm, a ``topk`` set to anything but 1, attention DP over more than one
    rank, multi-layer EAGLE, two-batch overlap and PD multiplexing (the platform-worker check needs the
    host and is left to the server's line)."""
    named = _normal(args)
    if not _on(named, ADAPTIVE) or not speculates(args):
        return None
    algo = str(named.get("--speculative-algorithm") or "").upper()
    algo = "EAGLE" if algo == "NEXTN" else algo  # SGLang reads NEXTN as EAGLE before this check
    if algo not in ("EAGLE", "EAGLE3"):
        return f"speculative_algorithm={algo} (only EAGLE/EAGLE3 are supported)"
    raw_topk = named.get(TOPK)
    if raw_topk is not None and str(raw_topk).strip() != "1":
        return f"speculative_eagle_topk={raw_topk} (only topk=1 is supported)"
    if _on(named, "--enable-dp-attention") and _dp_attention_blocks_adaptive(args, version):
        if _before_0523(version):  # 0.5.17's wording: any --enable-dp-attention
            return (
                "enable_dp_attention=True is not supported "
                "(adaptive tier decisions are not synchronized across DP ranks)"
            )
        return "attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)"
    if _on(named, "--enable-multi-layer-eagle"):
        return "enable_multi_layer_eagle=True is not supported (MultiLayerEagleWorkerV2 does not implement adaptive)"
    if _on(named, "--enable-two-batch-overlap"):
        return (
            "enable_two_batch_overlap=True is not supported "
            "(adaptive state swap would discard the TboAttnBackend wrapper)"
        )
    if _on(named, "--enable-pdmux"):
        return "enable_pdmux=True is not supported (adaptive state swap does not update decode_attn_backend_group)"
    return None


def _before_0523(version: str | None) -> bool:
    """The host runs a release before 0.5.23 (False when unknown: the newest rule is assumed)."""
    v = parse_version(version)
    return v is not None and v < (0, 5, 23)


def _dp_attention_blocks_adaptive(args: Mapping[str, Any], version: str | None) -> bool:
    """0.5.17 refuses adaptive for any ``--enable-dp-attention`` (``resolved_view(...).enable_dp_attention``);
    0.5.23 only where attention DP spans more than one rank (``attn_dp_enabled_of``: ``attn_dp_size > 1``)."""
    if _before_0523(version):
        return True
    return (_int(args, "--dp-size") or _int(args, "--dp") or 1) > 1


def adaptive_fallback_text(reason: str) -> str:
    """The warning eagletui shows for :func:`adaptive_fallback` (and for the server's own line)."""
    return (
        f"--speculative-adaptive will not adapt: {reason}; SGLang falls back to static steps "
        "with only a WARNING in its log"
    )
