"""Speculative configurations SGLang accepts and then crashes on (or silently ignores), said before the
launch spends its ten minutes: each finding names the public issue it comes from.

Pure: the launch's flags, the host's SGLang version and the facts the host script read from the target's
and the draft's ``config.json`` (and the draft's safetensors header) go in; findings come out. The
preflight (:mod:`eagletui.remote.preflight`) turns them into its check lines; anything else that knows the
flags (the adaptive fallback shown live) calls :func:`adaptive_fallback_reason` directly.

Each check carries the release that fixes it (``FIXED_IN``): on a host whose version has the fix the check
says nothing. Only the adaptive tiers' crash is fixed in the newest wheel read (0.5.23): the sources are
named per check.
Where the facts are missing (a Hugging Face id not on the host, an unknown version) a check that would
refuse warns instead: a refusal must be certain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from eagletui.core.servers.flags import parse_version
from eagletui.core.servers.spec import flag_name

Severity = Literal["fail", "warn"]


@dataclass(frozen=True)
class SpecFinding:
    """One refusal (``fail``: the launch would crash) or warning (it would run, not as asked)."""

    check: str
    status: Severity
    message: str
    #: the public thread the rule comes from, ``sgl-project/sglang#36528``
    issue: str

    def text(self) -> str:
        """The issue first: a view that clips the line (the phase panel's failure box) still names it."""
        return f"{self.issue}: {self.message}"


#: The release that fixes each check; None: not fixed in any release read.
FIXED_IN: dict[str, tuple[int, ...] | None] = {
    # #36528 open; fix PR #36593 open. 0.5.17 and 0.5.23 arg_groups/speculative_hook.py still default the
    # draft path to the target only for the bundled-MTP architectures and leave it None otherwise.
    "draft path": None,
    # #36536 open; fix PRs #36594 / #36634 not in a release. 0.5.23 speculative_hook.py has no
    # architecture check for enable_multi_layer_eagle.
    "multi-layer eagle": None,
    # #23490 closed with the workaround only; 0.5.17 attention_backend_setup.py / 0.5.23 model_runner.py
    # resolve_draft_attention_backend still give the draft the target's backends when
    # --speculative-draft-attention-backend is unset (PR #20298's fallback was closed unmerged).
    "draft attention": None,
    # #32105 closed as inactive, fix PR #32106 open; 0.5.23 eplb/expert_distribution.py
    # _on_forward_pass_start still records during capture (should_record_forward_pass returns True unless
    # the megamoe prefill-only recorder is on).
    "expert metrics": None,
    # by design (PR #21599 "adaptive speculative_num_steps for EAGLE topk=1"): 0.5.17 and 0.5.23
    # speculative/adaptive_spec_params.py adaptive_unsupported_reason, a WARNING and fixed steps.
    "adaptive": None,
    "draft architecture": None,
    # #30549 closed as inactive, PR #30554 open; 0.5.23 model_runner.py max_decode_logits_rows adds every
    # adaptive candidate's steps + 1 (resolve_candidate_steps_from_config); 0.5.17's sizes for the launch's
    # draft tokens only and crashed so on the lent H200 (docs/real-sglang.md, 2026-12-02 third session)
    "adaptive tiers": (0, 5, 23),
}

ISSUES = {
    "draft path": "sgl-project/sglang#36528",
    "multi-layer eagle": "sgl-project/sglang#36536",
    "draft attention": "sgl-project/sglang#23490",
    "expert metrics": "sgl-project/sglang#32105",
    "adaptive": "sgl-project/sglang#21599",
    "draft architecture": "sgl-project/sglang#21272",
    "adaptive tiers": "sgl-project/sglang#30549",
}

#: The candidate steps of SGLang's default adaptive config (0.5.17 and 0.5.23
#: ``speculative/adaptive_spec_params.py`` DEFAULT_ADAPTIVE_CONFIG, the union over its batch-size slots)
DEFAULT_ADAPTIVE_STEPS = (0, 1, 3, 7)

#: Targets whose checkpoint may carry its own draft (MTP/NextN layers): SGLang defaults the draft path to
#: the target for these (0.5.17 speculative_hook.py L561-577) or rewrites their config into a draft class
#: when it loads the target as the draft (0.5.17 configs/model_config.py, ``is_draft_model`` branches).
#: Every other target loaded as its own draft crashes (#36528: Qwen2ForCausalLM, LlamaForCausalLM).
BUNDLED_DRAFT = frozenset(
    {
        "BailingMoeForCausalLM",
        "BailingMoeV2ForCausalLM",
        "BailingMoeV2_5ForCausalLM",
        "DeepseekV32ForCausalLM",
        "DeepseekV3ForCausalLM",
        "DeepseekV4ForCausalLM",
        "Ernie4_5_MoeForCausalLM",
        "ExaoneMoEForCausalLM",
        "Glm4MoeForCausalLM",
        "Glm4MoeLiteForCausalLM",
        "GlmMoeDsaForCausalLM",
        "GlmOcrForConditionalGeneration",
        "HYV3ForCausalLM",
        "InklingForConditionalGeneration",
        "InternS2PreviewForConditionalGeneration",
        "LongcatFlashForCausalLM",
        "MiMoForCausalLM",
        "MiMoV2ForCausalLM",
        "MiMoV2FlashForCausalLM",
        "MistralLarge3ForCausalLM",
        "NemotronHForCausalLM",
        "NemotronHPuzzleForCausalLM",
        "PixtralForConditionalGeneration",
        "Qwen3MoeForCausalLM",
        "Qwen3NextForCausalLM",
        "Qwen3_5ForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForCausalLM",
        "Qwen3_5MoeForConditionalGeneration",
        "Step3p5ForCausalLM",
        "Step3p7ForConditionalGeneration",
    }
)
#: … and what 0.5.23 adds to both lists.
BUNDLED_DRAFT_0523 = frozenset(
    {
        "BailingMoeV3ForCausalLM",
        "ExaoneMoeForCausalLM",
        "GigaChat35ForCausalLM",
        "Glm5NextForConditionalGeneration",
        "HYV4ForCausalLM",
        "InternS2MobiusForConditionalGeneration",
        "NemotronH_Omni_Reasoning_V3",
        "Qwen4ExpForConditionalGeneration",
    }
)

#: Targets the multi-layer EAGLE worker can draft from: their draft config is rewritten to an MTP class
#: taking ``draft_model_idx`` (0.5.17 configs/model_config.py L631-647: MiMoV2, Step3p5, Step3p7,
#: Inkling; 0.5.23 L1093-1120 adds GigaChat35).
MULTI_LAYER = frozenset(
    {
        "MiMoV2ForCausalLM",
        "MiMoV2FlashForCausalLM",
        "Step3p5ForCausalLM",
        "Step3p7ForConditionalGeneration",
        "InklingForConditionalGeneration",
    }
)
MULTI_LAYER_0523 = frozenset({"GigaChat35ForCausalLM"})

#: EAGLE-3 draft heads SGLang registers (models/llama_eagle3.py, models/kimi_k25_eagle3.py: 0.5.17, 0.5.23).
EAGLE3_HEADS = frozenset({"LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM"})

#: Attention backends that refuse a non-MLA model ("… backend can only be used with MLA models",
#: layers/attention/attention_registry.py) or run MLA kernels only (flashmla, cutlass_mla).
MLA_ONLY_BACKENDS = frozenset({"trtllm_mla", "tokenspeed_mla", "cutedsl_mla", "flashmla", "cutlass_mla"})
#: GPUs on which SGLang picks trtllm_mla for a DeepSeek-V3-style target when no backend is named
#: (arg_groups/overrides.py: is_sm100_supported()).
SM100_NAMES = ("B200", "B300", "GB200", "GB300")

ATTENTION_FLAGS = ("--attention-backend", "--decode-attention-backend", "--prefill-attention-backend")


@dataclass(frozen=True)
class ModelFacts:
    """What the host script read of one model's ``config.json`` (its text config for a multimodal one)."""

    archs: tuple[str, ...] = ()
    hidden: int | None = None
    #: a draft's ``target_hidden_size`` (the width it reads from the target), when it names one
    target_hidden: int | None = None
    vocab: int | None = None
    draft_vocab: int | None = None
    #: multi-head latent attention (``kv_lora_rank`` set)
    mla: bool = False
    #: a draft's ``d2t`` / ``t2d`` lengths from its safetensors header
    d2t: int | None = None
    t2d: int | None = None

    @classmethod
    def from_facts(cls, value: Any) -> ModelFacts | None:
        """From the ``models`` fact of the host script (``{"arch": "A,B", "hidden": …}``); None if absent."""
        if not isinstance(value, dict):
            return None
        arch = value.get("arch")
        archs = tuple(a for a in str(arch).split(",") if a) if isinstance(arch, str) else ()
        return cls(
            archs=archs,
            hidden=_count(value.get("hidden")),
            target_hidden=_count(value.get("target_hidden")),
            vocab=_count(value.get("vocab")),
            draft_vocab=_count(value.get("draft_vocab")),
            mla=value.get("mla") is True,
            d2t=_count(value.get("d2t")),
            t2d=_count(value.get("t2d")),
        )


def _count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _named(args: Mapping[str, Any]) -> dict[str, Any]:
    return {flag_name(k): v for k, v in args.items() if v is not None and v is not False}


def _on(v: Any) -> bool:
    return v is True or str(v).lower() in ("true", "1", "yes")


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    try:
        return int(str(v))
    except ValueError:
        return None


def _fixed(check: str, version: tuple[int, ...] | None) -> bool:
    fix = FIXED_IN.get(check)
    return fix is not None and version is not None and version >= fix


def _newer(version: tuple[int, ...] | None, release: tuple[int, ...]) -> bool:
    """The host's release has what ``release`` added, or its version is unknown (then refuse nothing)."""
    return version is None or version >= release


def adaptive_fallback_reason(args: Mapping[str, Any], version: str | None = None) -> str | None:
    """Why ``--speculative-adaptive`` would fall back to fixed steps with these flags on this version, None
    when it would run: :func:`eagletui.core.servers.spec.adaptive_fallback` (the one rule the profile
    check, the preflight and the live diagnosis share), silenced where a release fixes it."""
    from eagletui.core.servers.spec import adaptive_fallback

    if _fixed("adaptive", parse_version(version)):
        return None
    return adaptive_fallback(args, version)


def spec_config_findings(
    args: Mapping[str, Any],
    version: str | None,
    target: ModelFacts | None = None,
    draft: ModelFacts | None = None,
    gpus: Sequence[str] = (),
) -> list[SpecFinding]:
    """Every speculative-config finding for an SGLang launch with these flags on this host's version."""
    a = _named(args)
    ver = parse_version(version)
    algo = str(a.get("--speculative-algorithm", "")).upper()
    out: list[SpecFinding] = []
    if algo in ("EAGLE", "EAGLE3", "NEXTN", "MTP"):
        out += _draft_path(a, algo, ver, target)
        out += _multi_layer(a, ver, target)
        out += _expert_metrics(a, ver)
    if algo in ("EAGLE", "EAGLE3"):
        out += _draft_architecture(algo, draft, target)
        out += _draft_attention(a, ver, target, draft, gpus)
        out += _adaptive_tiers(a, ver, version)
    # the adaptive fall-back is not repeated here: the preflight's flag check says it once
    # (eagletui.remote.preflight.flag_checks, from adaptive_fallback_reason)
    return [f for f in out if not _fixed(f.check, ver)]


def _finding(check: str, status: Severity, message: str) -> SpecFinding:
    return SpecFinding(check, status, message, ISSUES[check])


def _draft_path(
    a: dict[str, Any], algo: str, ver: tuple[int, ...] | None, target: ModelFacts | None
) -> list[SpecFinding]:
    if a.get("--speculative-draft-model-path") or algo not in ("EAGLE", "EAGLE3"):
        return []
    if _on(a.get("--enable-multi-layer-eagle", False)):
        return []  # the multi-layer check says whether the target carries the layers it drafts with
    bundled = BUNDLED_DRAFT | (BUNDLED_DRAFT_0523 if _newer(ver, (0, 5, 23)) else frozenset())
    arch = target.archs[0] if target is not None and target.archs else None
    if arch in bundled:
        return []
    what = (
        f"on {arch}, which bundles no draft"
        if arch
        else "(fine only if the target bundles its draft, as DeepSeek-V3 does)"
    )
    return [
        _finding(
            "draft path",
            "fail" if arch else "warn",
            f"{algo} without --speculative-draft-model-path {what}: SGLang loads the target as its draft and "
            "crashes after loading the weights twice",
        )
    ]


def _multi_layer(
    a: dict[str, Any], ver: tuple[int, ...] | None, target: ModelFacts | None
) -> list[SpecFinding]:
    if not _on(a.get("--enable-multi-layer-eagle", False)):
        return []
    ok = MULTI_LAYER | (MULTI_LAYER_0523 if _newer(ver, (0, 5, 23)) else frozenset())
    arch = target.archs[0] if target is not None and target.archs else None
    if arch in ok:
        return []
    names = ", ".join(sorted(ok))
    if arch is None:
        return [
            _finding(
                "multi-layer eagle",
                "warn",
                f"--enable-multi-layer-eagle needs a target with bundled MTP layers ({names}); this one's "
                "architecture is unknown here",
            )
        ]
    return [
        _finding(
            "multi-layer eagle",
            "fail",
            f"--enable-multi-layer-eagle on {arch}, which has no bundled MTP layers: the multi-layer EAGLE "
            f"worker crashes at start-up (only {names} have them); drop the flag",
        )
    ]


def _expert_metrics(a: dict[str, Any], ver: tuple[int, ...] | None) -> list[SpecFinding]:
    if not _on(a.get("--enable-expert-distribution-metrics", False)) or _on(
        a.get("--disable-cuda-graph", False)
    ):
        return []
    steps = _int(a.get("--speculative-num-steps")) if "--speculative-num-steps" in a else None
    if steps is not None and steps < 2:
        return []
    why = "the recorder syncs the GPU inside the draft's CUDA-graph capture: a crash loop at start-up"
    if steps is None:
        return [
            _finding(
                "expert metrics",
                "warn",
                f"--enable-expert-distribution-metrics with the steps SGLang picks (2+ for most models): "
                f"{why}; set --speculative-num-steps 1 or drop the metrics",
            )
        ]
    return [
        _finding(
            "expert metrics",
            "fail",
            f"--enable-expert-distribution-metrics with --speculative-num-steps {steps}: {why}; use "
            "--speculative-num-steps 1 or drop the metrics",
        )
    ]


def _draft_architecture(algo: str, draft: ModelFacts | None, target: ModelFacts | None) -> list[SpecFinding]:
    if draft is None:
        return []
    out: list[SpecFinding] = []
    arch = draft.archs[0] if draft.archs else None
    if arch is not None and algo == "EAGLE3" and arch not in EAGLE3_HEADS:
        out.append(
            _finding(
                "draft architecture",
                "fail",
                f"the draft is a {arch}, not an EAGLE-3 head (SGLang has {', '.join(sorted(EAGLE3_HEADS))}): "
                "--speculative-algorithm EAGLE3 cannot load it",
            )
        )
    elif arch in EAGLE3_HEADS and algo == "EAGLE":
        out.append(
            _finding(
                "draft architecture",
                "warn",
                f"the draft is an EAGLE-3 head ({arch}) but --speculative-algorithm is EAGLE: the target's "
                "three hidden states are not captured and the draft accepts about nothing; use EAGLE3",
            )
        )
    # the hidden size it reads (target_hidden_size, else its own) and the vocabularies against the
    # target's are the host check's "draft compatibility" line (preflight_scripts.HOST_SCRIPT)
    dv = draft.draft_vocab
    if draft.d2t is not None and dv is not None and draft.d2t != dv:
        out.append(
            _finding(
                "draft architecture",
                "fail",
                f"the draft's d2t mapping has {draft.d2t} entries for draft_vocab_size {dv}",
            )
        )
    tv = target.vocab if target is not None else None
    if draft.t2d is not None and tv is not None and draft.t2d != tv:
        out.append(
            _finding(
                "draft architecture",
                "fail",
                f"the draft's t2d mapping has {draft.t2d} entries, the target's vocabulary {tv}: it maps "
                "another tokenizer",
            )
        )
    return out


def _draft_attention(
    a: dict[str, Any],
    ver: tuple[int, ...] | None,
    target: ModelFacts | None,
    draft: ModelFacts | None,
    gpus: Sequence[str],
) -> list[SpecFinding]:
    if (
        target is None
        or draft is None
        or not target.mla
        or draft.mla
        or a.get("--speculative-draft-attention-backend")
    ):
        return []
    named = [str(a[f]) for f in ATTENTION_FLAGS if a.get(f)]
    mla_only = sorted({b for b in named if b in MLA_ONLY_BACKENDS})
    fix = "set --speculative-draft-attention-backend (trtllm_mha or flashinfer on Blackwell, fa3 on Hopper)"
    if mla_only:
        return [
            _finding(
                "draft attention",
                "fail",
                f"the non-MLA draft inherits the MLA target's {', '.join(mla_only)} attention and fails to "
                f"start; {fix}",
            )
        ]
    blackwell = [g for g in gpus if any(n in g.upper() for n in SM100_NAMES)]
    if not named and blackwell:
        return [
            _finding(
                "draft attention",
                "warn",
                f"on {blackwell[0]} the MLA target gets trtllm_mla and the non-MLA draft inherits it and fails "
                f"to start; {fix}",
            )
        ]
    return []


def _adaptive_tiers(a: dict[str, Any], ver: tuple[int, ...] | None, version: str | None) -> list[SpecFinding]:
    """``--speculative-adaptive`` builds the CUDA graphs of every candidate tier at start-up
    (``AdaptiveController.init_states``: a tier of ``steps`` drafts ``steps + 1`` tokens), but before 0.5.23
    the logits buffer all graph runners share is sized for the launch's own draft tokens
    (``model_runner.max_decode_logits_rows``: the largest captured batch × ``speculative_num_draft_tokens``).
    A tier with more draft tokens than the launch then asserts "shared logits buffer holds N rows but caller
    needs M" and the server dies before it is ready: on the lent H200, 0.5.17 at steps 3 (4 draft tokens)
    with the default tiers died building steps 7 (32 rows, 64 needed), as sglang#30549 reports for a 2026-07
    nightly (128 rows, 256 needed). No tiers are built where the launch falls back to static steps."""
    from eagletui.core.servers.spec import adaptive_fallback

    if not _on(a.get("--speculative-adaptive", False)) or _on(a.get("--disable-cuda-graph", False)):
        return []
    if adaptive_fallback(a, version) is not None:
        return []
    steps = _int(a.get("--speculative-num-steps"))
    tokens = _int(a.get("--speculative-num-draft-tokens"))
    tokens = tokens if tokens is not None else (steps + 1 if steps is not None else None)
    own_config = a.get("--speculative-adaptive-config")
    top = max(DEFAULT_ADAPTIVE_STEPS)
    if tokens is not None and not own_config and tokens >= top + 1:
        return []
    most = "the launch's steps" if tokens is None else str(tokens - 1)
    fix = (
        f"launch at the largest tier (--speculative-num-steps {top} --speculative-num-draft-tokens {top + 1}: "
        f"adaptive steps down from there), give --speculative-adaptive-config candidate_steps of at most {most}, "
        "or use SGLang 0.5.23+"
    )
    if own_config:
        if tokens is None:
            return []
        return [
            _finding(
                "adaptive tiers",
                "warn",
                f"--speculative-adaptive-config {str(own_config)[:120]}: a candidate of more than "
                f"{tokens - 1} steps has more draft tokens than this launch's {tokens}, and SGLang before 0.5.23 "
                "dies capturing it (shared logits buffer too small)",
            )
        ]
    asked = "the steps SGLang picks" if tokens is None else f"this launch's {tokens} draft tokens"
    return [
        _finding(
            "adaptive tiers",
            "fail" if ver is not None and tokens is not None else "warn",
            f"--speculative-adaptive builds its steps-{top} tier ({top + 1} draft tokens) at start-up, but "
            f"SGLang before 0.5.23 sizes the shared logits buffer for {asked}: the capture asserts "
            f'"shared logits buffer holds … rows" and the server dies before it is ready; {fix}',
        )
    ]

