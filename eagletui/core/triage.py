"""Compatibility name: SGLang's failure table and hints live in
:mod:`eagletui.core.formats.sglang.failures` (one server's rules behind the LogFormat seam)."""

from eagletui.core.formats.sglang.failures import (
    FAILURE_RULES,
    graph_bs_flag,
    hint_for,
    match_failure,
    version_at_least,
)

__all__ = ["FAILURE_RULES", "graph_bs_flag", "hint_for", "match_failure", "version_at_least"]
