"""Issue 32, "What was wrong" item 1: steps 3 → 1 on the real server, predicted from what a steps-3 launch
measured and its step profile. The old cycle model priced a draft step as its kernel time and let the
rest of the cycle be drafting, so dropping two steps saved too little (profile path) or far too much
(estimate path); here the prediction from both real steps-3 launches of run 2 and the DECODE trace of one
of them must come within the issue's ±10 % of what the steps-1 launch measured (mean of its two repeats),
at concurrency 1 and 4."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from eagletui.core import events as ev
from eagletui.core.predict.forecast import forecasts
from eagletui.core.runs.book import RunBook
from eagletui.profiler import summarize_file
from eagletui.profiler.summary import step_breakdown

HERE = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-turn4-run2"
REAL = json.loads((HERE / "measurements.json").read_text())
TRACE = HERE / "steps3-TP-0-DECODE.trace.json.gz"
TOKENS = 128  # output tokens per request in every benchmark of run 2
BAND = 0.10  # the "within ±10 %"


def _ttft_ms(c: int) -> float:
    """The sweep printed tok/s only: its requests' first-token wait is taken as the --vs-no-spec steps-3
    launch's mean at the same concurrency (the same setting, launched four minutes earlier)."""
    v = [r["ttft_ms_mean"] for r in REAL["steps3_vs_no_spec"] if r["concurrency"] == c]
    return sum(v) / len(v)


def _result(n: int, i: int, r: dict[str, Any]) -> ev.BenchmarkResult:
    """One benchmark as a session records it, with the per-request statistics the client keeps: a
    stream's decode rate from the aggregate and the first-token wait (16 requests of 128 tokens, one
    after another per stream: the run's duration is 16 ÷ c × (TTFT + decode) within 0.1 % here)."""
    c, tok = r["concurrency"], r["output_throughput"]
    ttft = r.get("ttft_ms_mean", _ttft_ms(c))
    stream = (TOKENS - 1) / ((1000.0 * c * TOKENS / tok - ttft) / 1000.0)
    acc = r["accept_length"]
    return ev.BenchmarkResult(
        bench=100 * n + i,
        launch=n,
        output_throughput=tok,
        accept_length=acc,
        requests=16,
        duration_s=16 * TOKENS / tok,
        workload_fingerprint=f"c{c}",
        stats={"tok_s": {"mean": stream}, "ttft_ms": {"mean": ttft}},
        accept={"histogram": [0] * int(acc) + [1000]} if acc else {},
    )


def _launch(book: RunBook, n: int, args: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    book.apply(
        ev.LaunchStarted(launch=n, target="local", config={"args": args, "env": {}, "target": "local"})
    )
    book.apply(ev.ServerReady(launch=n))
    for i, r in enumerate(rows):
        book.apply(
            ev.BenchmarkStarted(bench=100 * n + i, launch=n, workload={"concurrency": r["concurrency"]})
        )
        book.apply(_result(n, i, r))


def _measured_steps1(c: int) -> float:
    v = [r["output_throughput"] for r in REAL["steps1_sweep"] if r["concurrency"] == c]
    return sum(v) / len(v)


@functools.cache
def _profile() -> dict[str, Any]:
    return step_breakdown([summarize_file(str(TRACE))])


def _steps3_book() -> RunBook:
    """Both steps-3 launches of run 2 (four benchmarks at each concurrency: the mean of two launches, as
    the issue measures) and the DECODE trace of the sweep's."""
    book = RunBook()
    _launch(book, 1, REAL["spec_args"], REAL["steps3_vs_no_spec"] + REAL["steps3_sweep"])
    book.apply(ev.ProfileCaptured(launch=1, summary=_profile()))
    return book


@pytest.mark.parametrize("c", [1, 4])
def test_steps_1_from_a_steps_3_launch_and_its_profile_within_the_band(c: int) -> None:
    fs, why = forecasts(_steps3_book(), 1)
    f = next((f for f in fs if f.label == "steps 1" and f.concurrency == c), None)
    assert f is not None, why
    measured = _measured_steps1(c)
    err = f.tok_s / measured - 1.0
    # the old model: −26 % / −20 % (kernel time per step), here −12.8 % at c = 1 even holding TTFT fixed
    assert abs(err) <= BAND, (
        f"steps 1 at c={c}: predicted {f.tok_s:.1f}, measured {measured:.1f} ({err:+.1%})"
    )
    assert "draft runner" in f.source, f.source  # priced from the profile's parts, the runner's work named
