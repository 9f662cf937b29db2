"""vLLM's launch facts: its ``non-default args`` dict or the engine's config line → :class:`LaunchFacts`.

Part of vLLM's log format (:mod:`eagletui.core.logs.formats.vllm`), apart from the line classifier: it
reads a whole argument list (Python literals), not lines.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from eagletui.core.logs.seam import LaunchFacts

_KW_RE = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\w+\([^()]*\)|\{[^{}]*\}|[^,()\[\]{}]+)")


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text.strip()


def parse_args_text(raw: str) -> dict[str, Any]:
    """``{'model': …}`` (``non-default args``) or ``model='…', tensor_parallel_size=1, …`` (the engine
    config) → dict; a ``SpeculativeConfig(method='eagle3', …)`` value becomes a dict too."""
    raw = raw.strip()[:200_000]
    if raw.startswith("{"):
        val = _literal(raw)
        if isinstance(val, dict):
            return {str(k): v for k, v in val.items()}
    out: dict[str, Any] = {}
    for k, v in _KW_RE.findall(raw):
        v = v.strip()
        if v.startswith("SpeculativeConfig("):
            out[k] = {kk: _literal(vv) for kk, vv in _KW_RE.findall(v[len("SpeculativeConfig(") : -1])}
        else:
            out[k] = _literal(v)
    return out


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str) and v.isdigit():
        v = int(v)
    return v if isinstance(v, int) and v > 0 else None


def launch_facts(raw: Any) -> LaunchFacts:
    """Launch facts of a ``non-default args`` dict or an engine config line (vLLM's names in raw)."""
    args = parse_args_text(raw) if isinstance(raw, str) else {}
    return facts_from_args(args, non_default=isinstance(raw, str) and raw.strip().startswith("{"))


def facts_from_args(args: dict[str, Any], non_default: bool = True) -> LaunchFacts:
    spec = args.get("speculative_config")
    if isinstance(spec, str) and spec.strip().startswith("{"):
        import json

        try:
            spec = json.loads(spec)
        except ValueError:
            spec = None
    spec = spec if isinstance(spec, dict) else {}
    steps = _int(spec.get("num_speculative_tokens", spec.get("num_spec_tokens")))
    algo = spec.get("method")
    if not algo and spec.get("model"):
        algo = "draft_model"
    model = args.get("model") or args.get("model_tag")
    draft = spec.get("model")
    tp = _int(args.get("tensor_parallel_size"))
    return LaunchFacts(
        model=model if isinstance(model, str) and model else None,
        draft_model=draft if isinstance(draft, str) and draft and draft != model else None,
        # "non-default args" leave out what is at its default: one rank, one stage, one replica
        tp=tp if tp is not None else (1 if non_default else None),
        pp=_int(args.get("pipeline_parallel_size")) or (1 if non_default else None),
        dp=_int(args.get("data_parallel_size")) or (1 if non_default else None),
        spec_algorithm=str(algo) if algo else None,
        spec_steps=steps,
        spec_topk=1 if steps else None,  # vLLM drafts one chain
        spec_draft_tokens=steps,
        port=_int(args.get("port")),
        raw=args,
    )
