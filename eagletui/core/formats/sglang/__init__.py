"""SGLang's log format (0.3.x – 0.5.23): the :class:`~eagletui.core.logformat.LogFormat` of
``python -m sglang.launch_server`` / ``sglang serve`` output.

* :mod:`.lines` — cutting and classifying lines (tqdm frames, foreign prefixes, uvicorn, failures);
* :mod:`.prefix` — the ``[date time ranks]`` record start, TP rank, timestamps;
* :mod:`.serving` — Decode/Prefill fields and the serving fast-path patterns;
* :mod:`.failures` — the failure table, priorities, hints naming flags of the guessed version;
* :mod:`.versions` — which releases print which wording.
"""

from __future__ import annotations

from eagletui.core.formats.sglang import failures, lines, prefix, serving, versions
from eagletui.core.logformat import Failure


class SGLangFormat:
    """The SGLang log format (see :class:`~eagletui.core.logformat.LogFormat` for the members)."""

    name = "sglang"
    classify = staticmethod(lines.classify)
    split_glued = staticmethod(lines.split_glued)
    is_bar = staticmethod(lines.is_bar)
    tp_of = staticmethod(prefix.tp_of)
    ts_seconds = staticmethod(prefix.ts_seconds)
    exception_line = staticmethod(lines.exception_line)
    parse_decode = staticmethod(serving.parse_decode)
    parse_prefill = staticmethod(serving.parse_prefill)
    frame_phase = staticmethod(lines.frame_phase)
    message_phase = staticmethod(lines.message_phase)

    match_failure = staticmethod(failures.match_failure)
    terminal_tags = failures.TERMINAL_TAGS
    own_tags = failures.OWN_TAGS
    evidence = staticmethod(failures.sglang_evidence)
    comm_backend_mention = staticmethod(failures.comm_backend_mention)
    comm_failure: Failure = failures.NCCL_IN_TRACEBACK
    hint_for = staticmethod(failures.hint_for)

    version_from_prefix = staticmethod(versions.version_from_prefix)
    version_marks = staticmethod(versions.version_marks)
    decode_version = staticmethod(versions.decode_version)
    parse_server_args = staticmethod(versions.parse_server_args)
    draft_types: tuple[str, ...] = versions.DRAFT_TYPES
    stop_marks: tuple[str, ...] = versions.STOP_MARKS

    serving_line_re = serving.SERVING_LINE_RE
    serving_groups = serving.SERVING_GROUPS
    record_prefix_re = prefix.PREFIX_RE
    serving_scan_re = staticmethod(serving.serving_scan_re)
    input_throughput_re = serving.INPUT_THROUGHPUT_RE
    decode_marker = "] Decode batch"
    prefill_marker = "] Prefill batch"
    access_prefix = "INFO:     "
    access_marker = "HTTP/1."


SGLANG = SGLangFormat()

__all__ = ["SGLANG", "SGLangFormat"]
