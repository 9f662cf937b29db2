"""The crashes the spec-config preflight exists to prevent, recognised when a log shows one.

A launch started without eagletui's preflight (by hand, from a script, before eagletui was used) still
crashes the way the public issues describe, in words that do not say which flag did it: an
``AttributeError`` about ``set_embed`` when no draft path was given, an ``AssertionError`` about draft
token counts for ``--enable-multi-layer-eagle``, a ``ValueError`` about MLA from a draft that inherited
the target's attention backend. Triage names the preflight check (:mod:`eagletui.core.servers.spec_preflight`)
and its issue, and, when the launch's own flags are known (its ``server_args`` line), the finding those
flags trigger, so the log and the preflight say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eagletui.core.servers.spec_preflight import ISSUES, spec_config_findings

#: The failure table's tag for these crashes (:data:`eagletui.core.logs.formats.sglang.failures.FAILURE_RULES`).
TAG = "spec_config"

_DRAFT_PATH = (
    "no --speculative-draft-model-path: SGLang loaded the target itself as the EAGLE-3 draft, which an "
    "ordinary target is not; pass an EAGLE-3 head made for this target"
)
#: (text of the crash as SGLang or Python words it, the preflight check it is, the remedy)
SIGNATURES: tuple[tuple[str, str, str], ...] = (
    # 0.5.18 MultiLayerEagleDraftWorker (#36536): the auto-filled steps/topk of a target without MTP layers
    (
        "multi-layer EAGLE requires",
        "multi-layer eagle",
        "--enable-multi-layer-eagle needs a target that bundles its own MTP layers; drop it for this target "
        "(or give --speculative-num-draft-tokens = --speculative-num-steps + 1 on one that has them)",
    ),
    # #36528: Qwen2ForCausalLM has no set_embed; LlamaForCausalLM has no hot_token_id
    ("object has no attribute 'set_embed'", "draft path", _DRAFT_PATH),
    ("object has no attribute 'hot_token_id'", "draft path", _DRAFT_PATH),
    # model_runner / attention registry: a non-MLA draft on the MLA target's trtllm_mla (or another
    # MLA-only backend), #23490
    (
        "backend can only be used with MLA models",
        "draft attention",
        "the non-MLA draft inherited the MLA target's attention backend: set "
        "--speculative-draft-attention-backend (trtllm_mha or flashinfer on Blackwell, fa3 on Hopper)",
    ),
)


def crash_check(text: str) -> str | None:
    """The preflight check whose crash ``text`` shows, or None."""
    head = text[:4000]
    return next((check for needle, check, _ in SIGNATURES if needle in head), None)


def launch_finding(args: Mapping[str, Any] | None, version: str | None, check: str | None = None) -> str | None:
    """The refusal the launch's own flags trigger (of ``check``, or of any check), as the preflight
    words it; None without flags or when they trigger none. Only flag-level facts are known here (no
    config.json): a check that needs the models' facts says nothing."""
    if not args:
        return None
    found = [f for f in spec_config_findings(args, version) if f.status == "fail"]
    if check is not None:
        found = [f for f in found if f.check == check]
    return found[0].text() if found else None


def hint(text: str, args: Mapping[str, Any] | None, version: str | None) -> str | None:
    """The hint for a crash that :data:`SIGNATURES` knows: its issue and remedy (the launch's own finding
    when its flags are known and trigger it); None for any other crash."""
    check = crash_check(text)
    if check is None:
        return None
    own = launch_finding(args, version, check)
    if own is not None:
        return f"{own} (the spec-config preflight refuses this launch)"
    remedy = next(r for _, c, r in SIGNATURES if c == check)
    return f"{ISSUES[check]}: {remedy} (the spec-config preflight's '{check}' check)"
