"""The first token of every request comes from its prefill, not from a verify: Σ completion tokens ÷
Σ verifies may exceed the most one verify accepts by requests ÷ verifies. The real server (SGLang 0.5.17 on
the lent H200, the "work" drafter of shared/known-drafters: every draft accepted) measured 3.01 at steps 2
(3 per verify at most) over 32 requests of 256 tokens, and eagletui threw the run away as impossible."""

from __future__ import annotations

from eagletui.core import events as ev
from eagletui.core.runs.validity import result_problems

WL = {"num_prompts": 32, "max_new_tokens": 256}


def result(accept: float, verify_ct: int | None) -> ev.BenchmarkResult:
    return ev.BenchmarkResult(
        bench=1,
        launch=1,
        output_throughput=32 * 256 / 10.0,
        accept_length=accept,
        requests=32,
        duration_s=10.0,
        accept={"verify_ct": verify_ct} if verify_ct is not None else {},
    )


def test_every_draft_accepted_is_possible_with_the_prefill_token() -> None:
    # 255 decoded tokens a request at 3 a verify: 85 verifies; 256 ÷ 85 = 3.0118
    assert result_problems(result(32 * 256 / (32 * 85), 32 * 85), spec=True, workload=WL, max_accept=3) == []
    # without the verify count: bounded by one token over a request's fewest verifies
    assert result_problems(result(3.0118, None), spec=True, workload=WL, max_accept=3) == []


def test_more_than_that_is_still_impossible() -> None:
    problems = result_problems(result(3.2, 32 * 85), spec=True, workload=WL, max_accept=3)
    assert any("impossible accept length 3.20" in p for p in problems), problems
    problems = result_problems(result(3.2, None), spec=True, workload=WL, max_accept=3)
    assert any("impossible accept length" in p for p in problems), problems
