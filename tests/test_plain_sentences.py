"""Issue 33 item 19: the why line and the economics sentence read as plain sentences, one fact each, with
no brackets inside brackets (d26d01f: ``why (launch #1, benchmark 1): decode all-reduce (tp 8): …`` and
``pays (accept 4.00 ≥ break-even 2.26; at most 4 per verify at these settings)``). Pure and quick."""

from __future__ import annotations

import inspect
import re

import pytest

from eagletui.core.cycle.economics import economics
from eagletui.core.cycle.model import SpecSettings
from eagletui.core.diagnosis.fold import why_line
from tests.test_diagnosis import REAL, diagnose, kinds


def _depth(text: str) -> int:
    """The deepest nesting of round brackets in ``text``."""
    deepest = now = 0
    for ch in text:
        now += {"(": 1, ")": -1}.get(ch, 0)
        deepest = max(deepest, now)
    return deepest


@pytest.mark.parametrize(
    ("spec", "accept", "base", "steps"),
    [
        (52.0, 1.5, 82.0, None),  # the brief's drafter: needs accept ≥ …, a cycle that would pay
        (70.0, 1.6, 80.0, 3),  # needs accept, a verify that would pay, see next launch
        (62.0, 3.2, 86.0, 3),  # break-even beyond what steps 3 can accept: out of reach
        (140.0, 3.0, 100.0, 3),  # pays
        (30.0, 1.1, 100.0, 3),  # no accept length pays
    ],
)
def test_the_economics_sentence_is_short_plain_sentences(spec, accept, base, steps) -> None:
    e = economics(spec, accept, base, settings=SpecSettings(steps=steps, topk=1) if steps else None)
    assert e is not None
    s = e.sentence(context=" vs no-spec #2 at concurrency 4")
    assert "(" not in s and ";" not in s, s  # d26d01f: "(accept 1.50 ≥ …; at most 4 per verify …)"
    assert s.endswith("."), s
    assert all(len(part) <= 90 for part in s.split(". ")), s  # one fact a sentence, not a paragraph


def test_the_why_line_names_its_run_without_brackets_and_the_allreduce_text_is_flat() -> None:
    text = (REAL / "pcie-l4x4-customar-0434.log").read_text()
    d = kinds(diagnose(text))["allreduce"]
    line = why_line([d], launch=3, bench=5, newer=4)
    assert line.startswith("why for launch #3, benchmark 5, stale until #4 is benchmarked: decode all-reduce at tp 4: ")
    assert _depth(line) <= 1, line  # d26d01f: "why (launch #3 …): decode all-reduce (tp 4): … (details: Runs tab)"
    assert "(details" not in line and "; custom all-reduce off" not in line, line



def test_a_read_only_view_of_a_live_session_says_no_recording(tmp_path) -> None:
    """d26d01f: the second browser tab of a live ``serve`` said "no benchmark in this recording yet"."""
    from eagletui.core.runs.book import RunBook
    from eagletui.session.feed import FeedFollower
    from eagletui.session.follow import FollowDriver
    from eagletui.ui.repaint import compare_text

    follower = FeedFollower(tmp_path / "feed.jsonl")
    view = FollowDriver(follower)
    line = compare_text(RunBook(), None, "ready", can_bench=view.can_bench, not_here=view.no_bench_here()).plain
    assert line == "no benchmark yet in this session: the tab in control runs them (this view is read-only)"
    follower.source = "replay"  # a view of a served replay: that one is a recording
    assert view.no_bench_here() == "no benchmark in this recording yet"


def test_the_run_details_accept_definitions_and_the_nospec_estimate_nest_no_brackets() -> None:
    """Seen in the first hour after round 4: "accept len (per logging interval) (server log (live and replay
    only))" in the run details, and "(ranking from #1, estimate: … cycle (the GPU bounds it), 11.92 ms (10.00:
    …); …)" in the ``n`` window: each is shown inside one pair of brackets, so it may hold none."""
    from pathlib import Path

    from eagletui.bench import client
    from eagletui.core.runs import accept
    from tests.conftest_grid import grid_eval

    # every accept formula and source as written (the details show "formula (source)")
    texts = [t for src in (inspect.getsource(accept), inspect.getsource(client)) for t in _quoted_accept(src)]
    assert len(texts) >= 8, texts
    # every estimate a real grid's forecasts give (the n window shows "(ranking from #N, source)")
    grid = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-7b" / "grid2"
    texts += [r["source"] for r in grid_eval(grid)["rows"] if r.get("setting") == "speculation off" and r.get("source")]
    assert any(t.startswith("estimate: a no-spec step") for t in texts), texts
    for t in texts:
        assert _depth(t) == 0, t


def _quoted_accept(src: str) -> list[str]:
    """The string literals of the accept-length definitions' formulas and sources in ``src``."""
    pat = r'(?:formula|source)"\]? ?[:=]? ?f?"([^"]*)"|"((?:mean|Σ|Δ|1 \+|meta_info|/metrics|server log)[^"]*)"'
    return [re.sub(r"\{[^}]*\}", "N", a or b) for a, b in re.findall(pat, src)]  # an f-string's fields: a value
