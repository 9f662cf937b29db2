"""Real SGLang logs from public reports (tests/fixtures/real/NAME.log + NAME.expect.json) read right.

Each excerpt was posted publicly (issues, pull requests, repositories) and carries its provenance and the
reading an SGLang expert gives it: ``state``, ``failure_kind``, optionally ``phases`` that must appear and
the uvicorn ``url``. The parser runs exactly as ``eagletui parse --json`` does
(:func:`eagletui.commands.parse.parse_path`). Generated fixtures (tests/fixtures/logs) test details; these
decide whether the parser is right about the real server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagletui.commands.parse import parse_path
from eagletui.core.events import FAILURE_KINDS, PHASES

REAL = Path(__file__).parent / "fixtures" / "real"
LOGS = sorted(REAL.glob("*.log"))
STATES = {"ready", "loading", "failed", "stopped", "unknown"}

#: Expected phase names written before the target's prefill graph got its own phase (capture_prefill,
#: 0.5.16+) mean "the target's CUDA graphs": either target phase satisfies them.
PHASE_MEANS: dict[str, set[str]] = {"capture_target": {"capture_target", "capture_prefill"}}

#: Expectations the parser does not meet yet, with the reason; strict, so fixing one fails loudly here.
KNOWN_GAPS: dict[str, str] = {}


def _expect(log: Path) -> dict[str, Any]:
    return json.loads(log.with_suffix(".expect.json").read_text(encoding="utf-8"))


def test_every_log_has_a_valid_expectation() -> None:
    """The corpus itself is well formed: provenance, a known state/kind, phases from the vocabulary."""
    for log in LOGS:
        e = _expect(log)
        assert e.get("source", "").startswith("http"), log.name
        assert e["state"] in STATES, log.name
        kind = e.get("failure_kind")
        assert kind is None or kind in FAILURE_KINDS, log.name
        assert (kind is not None) == (e["state"] == "failed"), log.name
        for p in e.get("phases") or ():
            assert p in PHASES, (log.name, p)


@pytest.mark.parametrize(
    "log",
    [
        pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN_GAPS[p.stem], strict=True))
        if p.stem in KNOWN_GAPS
        else p
        for p in LOGS
    ],
    ids=[p.stem for p in LOGS],
)
def test_real_log_reads_right(log: Path) -> None:
    e = _expect(log)
    got = parse_path(str(log))
    failure = got["failure"]
    summary = f"{got['state']}/{failure and failure['kind']}: {failure and failure['message'][:200]}"
    assert got["state"] == e["state"], summary
    assert (failure and failure["kind"]) == e.get("failure_kind"), summary
    seen = [p["name"] for p in got["phases"]]
    missing = [p for p in e.get("phases") or () if not PHASE_MEANS.get(p, {p}) & set(seen)]
    assert not missing, f"phases missing: {missing}; seen {seen}"
    if e.get("url"):
        assert got["url"] == e["url"]


@pytest.mark.parametrize("log", [p for p in LOGS if "key_line" in _expect(p)], ids=lambda p: p.stem)
def test_the_key_line_named_is_the_posters_own_text(log: Path) -> None:
    """The key line a collector named is in the excerpt verbatim (the excerpt was not edited)."""
    assert _expect(log)["key_line"] in log.read_text(encoding="utf-8")
