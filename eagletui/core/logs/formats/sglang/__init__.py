"""SGLang's log format (0.3.x – 0.5.23): the :class:`~eagletui.core.logs.seam.LogFormat` of
``python -m sglang.launch_server`` / ``sglang serve`` output.

* :mod:`.lines` — cutting and classifying lines (tqdm frames, foreign prefixes, uvicorn, failures);
* :mod:`.prefix` — the ``[date time ranks]`` record start, TP rank, timestamps;
* :mod:`.serving` — Decode/Prefill fields and the serving fast path;
* :mod:`.failures` — the failure table, priorities, hints naming flags of the guessed version;
* :mod:`.versions` — which releases print which wording, and the launch facts of ``server_args``;
* :mod:`.notes` — what startup lines and launch args say that is no phase (all-reduce, loader, capture
  sizes, adaptive speculation);
* :mod:`.advice` — the diagnoses' hints, naming only flags of the running version.
"""

from __future__ import annotations

from typing import Any

from eagletui.core.logs.formats.sglang import advice as _advice
from eagletui.core.logs.formats.sglang import failures, lines, prefix, serving, versions
from eagletui.core.logs.formats.sglang import notes as _notes
from eagletui.core.logs.formats.sglang.capture_stage import more_specific, stage_of
from eagletui.core.logs.seam import Failure, LaunchFacts, LogFormat


class SGLangFormat(LogFormat):
    """The SGLang log format (see :class:`~eagletui.core.logs.seam.LogFormat` for the members)."""

    name = "sglang"
    label = "SGLang"
    classifies_failures = True
    classify = staticmethod(lines.classify)
    match_failure = staticmethod(failures.match_failure)

    def parse_server_args(self, raw: Any) -> LaunchFacts:
        return versions.launch_facts(raw if isinstance(raw, str) else "")

    def facts_from_args(self, args: dict[str, Any]) -> LaunchFacts:
        return versions.facts_from_args(args)

    split_glued = staticmethod(lines.split_glued)
    is_bar = staticmethod(lines.is_bar)
    bar_marks = lines.BAR_MARKS
    ts_seconds = staticmethod(prefix.ts_seconds)
    exception_line = staticmethod(lines.exception_line)
    frame_phase = staticmethod(lines.frame_phase)
    message_phase = staticmethod(lines.message_phase)
    capture_hint = staticmethod(failures.capture_hint)

    def capture_stage(self, line: str, current: str | None) -> str | None:
        return more_specific(stage_of(line), current)

    terminal_tags = failures.TERMINAL_TAGS
    own_tags = failures.OWN_TAGS
    evidence = staticmethod(failures.sglang_evidence)
    comm_backend_mention = staticmethod(failures.comm_backend_mention)
    comm_failure: Failure = failures.NCCL_IN_TRACEBACK
    hint_for = staticmethod(failures.hint_for)
    hint_for_launch = staticmethod(failures.hint_for)  # takes args= (the flag a bad path sits in), draft=

    version_from_prefix = staticmethod(versions.version_from_prefix)
    version_marks = staticmethod(versions.version_marks)
    decode_version = staticmethod(versions.decode_version)
    draft_types: tuple[str, ...] = versions.DRAFT_TYPES
    stop_marks: tuple[str, ...] = versions.STOP_MARKS

    fast = serving.FAST_PATH
    record_start = prefix.RECORD_START_RE
    nested_records = True
    note_topics = frozenset({"allreduce", "load", "capture", "adaptive"})
    notes = staticmethod(_notes.notes)
    notes_from_args = staticmethod(_notes.notes_from_args)
    advice = staticmethod(_advice.advice)
    summary_keys = (
        "model_path",
        "tp_size",
        "speculative_algorithm",
        "speculative_draft_model_path",
        "speculative_num_steps",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
        "mem_fraction_static",
        "cuda_graph_max_bs",
        "max_running_requests",
        "attention_backend",
    )

    # kept for callers of the old attribute names (tests, benchmarks)
    parse_decode = staticmethod(serving.parse_decode)
    parse_prefill = staticmethod(serving.parse_prefill)
    tp_of = staticmethod(prefix.tp_of)


SGLANG = SGLangFormat()

__all__ = ["SGLANG", "SGLangFormat"]
