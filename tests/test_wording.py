"""User-facing wording of failure kinds and phases: no raw identifiers reach a sentence."""

from __future__ import annotations

import re

from eagletui.core.events import FAILURE_KINDS, PHASES
from eagletui.core.wording import describe_failure, phase_label


def test_examples_from_the_issue() -> None:
    assert describe_failure("port_in_use", "warmup", port=30000) == "port 30000 already in use during warmup"
    assert describe_failure("died", "ready") == "the server died while ready"
    assert describe_failure("port_in_use", None) == "a port is already in use"
    assert describe_failure("oom", "capture_draft") == "out of GPU memory during CUDA graph capture (draft)"


def test_phase_labels_are_words() -> None:
    assert phase_label("load_target") == "target weight loading"
    assert phase_label("kv_cache") == "KV cache allocation"
    assert phase_label(None) == "unknown phase"
    assert phase_label("some_new_phase") == "some new phase"


def test_no_identifier_leaks_for_any_kind_and_phase() -> None:
    identifier = re.compile(r"[a-z]+_[a-z_]+|[A-Z]{2,}_[A-Z_]+")
    for kind in (*FAILURE_KINDS, "brand_new_kind"):
        for phase in (None, *PHASES):
            text = describe_failure(kind, phase, port=8000)
            assert not identifier.search(text), text
            assert "_" not in kind or kind.upper() not in text
