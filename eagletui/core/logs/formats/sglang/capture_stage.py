"""Which CUDA-graph capture stage a failure happened in, and that stage's own remedy.

SGLang captures up to four kinds of graph at startup, each by its own runner class (0.5.17 / 0.5.23
wheels, /work/staging/sglang-wheel-notes.md question 5), and all of them fail with the same text
(``Capture cuda graph failed: …`` and one generic list of solutions). The stage is named by the
runner's file in the traceback; a traceback through a subclass also passes through the base class
(``cuda_graph_runner.py``), so the most specific runner seen wins.
"""

from __future__ import annotations

#: (file in a frame, stage), the most specific first.
_RUNNERS: tuple[tuple[str, str], ...] = (
    ("draft_extend_cuda_graph_runner", "draft extend"),  # EAGLEDraftExtendCudaGraphRunner (+ multi-layer)
    ("eagle_draft_cuda_graph_runner", "draft decode"),  # EAGLEDraftCudaGraphRunner
    ("prefill_cuda_graph_runner", "target prefill"),  # PrefillCudaGraphRunner (0.5.16+)
    ("piecewise_cuda_graph_runner", "target prefill"),
    ("decode_cuda_graph_runner", "target decode/verify"),  # DecodeCudaGraphRunner (0.5.14+)
    ("cuda_graph_runner.py", "target decode/verify"),  # CudaGraphRunner (≤ 0.5.13), the base class
)
STAGES = tuple(dict.fromkeys(s for _, s in _RUNNERS))
#: (runner class, stage), the most specific first: the code line of a frame that builds a runner
#: (``self.cuda_graph_runner_for_draft_extend = EAGLEDraftExtendCudaGraphRunner(``) names it when the
#: traceback was cut before the runner's own frames (sgl-project/sglang#12421's excerpt ends there).
_CLASSES: tuple[tuple[str, str], ...] = (
    ("DraftExtendCudaGraphRunner(", "draft extend"),
    ("EAGLEDraftCudaGraphRunner(", "draft decode"),
    ("PrefillCudaGraphRunner(", "target prefill"),
    ("PiecewiseCudaGraphRunner(", "target prefill"),
    ("DecodeCudaGraphRunner(", "target decode/verify"),
    ("CudaGraphRunner(", "target decode/verify"),
)


def stage_of(line: str) -> str | None:
    """The stage a traceback frame line's runner file captures (or a code line's runner class), or None."""
    head = line[:1000]
    if "cuda_graph_runner" in head:
        for needle, stage in _RUNNERS:
            if needle in head:
                return stage
    if "CudaGraphRunner(" in head:
        for needle, stage in _CLASSES:
            if needle in head:
                return stage
    return None


def more_specific(a: str | None, b: str | None) -> str | None:
    """The more specific of two stages (a subclass's runner over its base class's)."""
    if a is None or b is None:
        return a or b
    return a if STAGES.index(a) <= STAGES.index(b) else b


def stage_remedy(stage: str, decode_bs: str, has_env: bool | None) -> str:
    """The stage's own remedy: ``decode_bs`` is this version's decode batch-size flag, ``has_env``
    whether it has ``SGLANG_DISABLE_DRAFT_EXTEND_CUDA_GRAPH`` (None: not known)."""
    if stage == "draft extend":
        # the kill-switch exists in 0.5.17 … 0.5.23 (environ.py; PR #30944)
        env = (
            "set SGLANG_DISABLE_DRAFT_EXTEND_CUDA_GRAPH=1 (draft extend then runs eagerly; sglang ≥ 0.5.17)"
            if has_env is not False
            else "upgrade to sglang ≥ 0.5.17 for SGLANG_DISABLE_DRAFT_EXTEND_CUDA_GRAPH=1"
        )
        return f"{env}, or lower {decode_bs} or --mem-fraction-static"
    if stage == "draft decode":
        return (
            f"lower {decode_bs} (the draft's decode graphs use the same batch sizes) or "
            "--speculative-num-steps (draft decode graphs are captured only for steps > 1), or --mem-fraction-static"
        )
    if stage == "target prefill":
        return "lower --cuda-graph-max-bs-prefill, or --cuda-graph-backend-prefill=disabled, or --mem-fraction-static"
    return f"lower {decode_bs} (e.g. 16) or --mem-fraction-static (e.g. 0.8 or 0.7)"
