"""RunBook: folding, baseline diffs, noise-aware deltas, verdicts, alarms, comparability."""

from __future__ import annotations

import pytest

from eagletui.core.events import (
    BenchmarkResult,
    BenchmarkStarted,
    LaunchStarted,
    PhaseFinished,
    ServerFailed,
)
from eagletui.core.profile.model import Verdict
from eagletui.core.runs.baseline import delta
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.run import Metric

SPEC = {"--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3, "--tp": 8}


def cfg(args=None, env=None):
    return {"target": "local", "command": ["python"], "args": dict(args or {}), "env": dict(env or {})}


def launch(book, n, args=None, env=None):
    book.apply(LaunchStarted(launch=n, target="local", config=cfg(args, env)))
    book.apply(PhaseFinished(phase="load_target", seconds=10.0, launch=n))
    book.apply(PhaseFinished(phase="capture_target", seconds=5.5, launch=n))


def result(book, n, tok, acc=None, ttft=100.0, fp="w1", bench=1, requests=10):
    book.apply(BenchmarkStarted(bench=bench, launch=n, workload_fingerprint=fp))
    book.apply(
        BenchmarkResult(
            bench=bench,
            launch=n,
            output_throughput=tok,
            accept_length=acc,
            requests=requests,
            stats={"ttft_ms": {"mean": ttft, "median": ttft, "p90": ttft, "p99": ttft}},
            workload_fingerprint=fp,
        )
    )


def test_fold_diff_and_deltas():
    book = RunBook(Verdict(min_accept_len=2.0, min_speedup=1.1))
    launch(book, 1, {"--tp": 8})
    result(book, 1, 100.0)
    launch(book, 2, SPEC, {"NCCL_ALGO": "Tree"})
    result(book, 2, 250.0, acc=3.1, ttft=90.0)
    rows = book.rows()
    assert [r.launch for r in rows] == [1, 2]
    base, spec = rows
    assert base.is_baseline and base.diff == "baseline" and base.phase_total_s == pytest.approx(15.5)
    assert "NCCL_ALGO=Tree" in spec.diff and "--speculative-algorithm EAGLE3" in spec.diff
    assert spec.deltas["tok_s"].pct == pytest.approx(150.0) and spec.deltas["tok_s"].flagged
    assert spec.deltas["tok_s"].better is True
    assert spec.deltas["ttft_ms"].pct == pytest.approx(-10.0) and spec.deltas["ttft_ms"].better is True
    # vs baseline it passed; vs no-spec its only no-spec run (#1) also differs in NCCL_ALGO: unjudged
    assert spec.verdict == "unjudged" and spec.reasons[0].startswith("unjudged: differs in NCCL_ALGO")
    assert any("speedup 2.50×" in r for r in spec.reasons)
    assert spec.alarms == () and spec.warnings == ()
    assert isinstance(spec.to_dict()["deltas"]["tok_s"]["pct"], float)


def test_pin_baseline_changes_reference():
    book = RunBook()
    launch(book, 1, {"--tp": 8})
    result(book, 1, 100.0)
    launch(book, 2, SPEC)
    result(book, 2, 200.0, acc=3.0)
    book.pin_baseline(2)
    row1 = book.row(1)
    assert row1.deltas["tok_s"].pct == pytest.approx(-50.0)
    assert book.row(2).diff == "baseline"
    with pytest.raises(KeyError):
        book.pin_baseline(9)


def test_single_runs_have_no_noise_estimate_and_an_assumed_band():
    """Issue 19: a single run has no band of its own; the Δ is judged against an assumed ±5 %, and says
    so ("1 run, no noise estimate"), so −2.6 % is not a regression while −6 % is flagged."""
    assert not delta(Metric(101.5, None, 1), Metric(100.0, None, 1)).flagged
    assert not delta(Metric(98.7, None, 1), Metric(100.0, None, 1)).flagged
    d = delta(Metric(97.4, None, 1), Metric(100.0, None, 1))
    assert not d.flagged and d.band.text() == "1 run, no noise estimate: assumed ±5.0 %"
    assert delta(Metric(94.0, None, 1), Metric(100.0, None, 1)).flagged


def test_verdict_judges_the_speedup_only_outside_the_noise_band():
    """Pinning run 2 must not fail run 1 for being 1.3 % slower when min_speedup is 1.0 (issue 13)."""
    book = RunBook(Verdict(min_speedup=1.0))
    launch(book, 1)
    result(book, 1, 98.7)
    launch(book, 2)
    result(book, 2, 100.0)
    book.pin_baseline(2)
    verdict, reasons = book.verdict_for(1)
    assert verdict == "pass" and any("noise" in r for r in reasons), reasons
    # with repeats, the band is the combined spread: −6 % against a ±10 % baseline is noise too
    book = RunBook(Verdict(min_speedup=1.0))
    launch(book, 1)
    for i, t in enumerate((100.0, 110.0, 90.0)):
        result(book, 1, t, bench=i)
    launch(book, 2)
    for i, t in enumerate((94.0, 104.0, 84.0)):
        result(book, 2, t, bench=10 + i)
    assert book.verdict_for(2)[0] == "pass"
    # a real shortfall still fails
    launch(book, 3)
    for i, t in enumerate((50.0, 51.0, 49.0)):
        result(book, 3, t, bench=20 + i)
    verdict, reasons = book.verdict_for(3)
    assert verdict == "fail" and any("speedup 0.50× < 1×" in r for r in reasons), reasons


def test_repeats_report_mean_stdev_and_noise_band():
    book = RunBook()
    launch(book, 1)
    for i, t in enumerate((100.0, 110.0, 90.0)):
        result(book, 1, t, bench=i)
    launch(book, 2)
    for i, t in enumerate((104.0, 114.0, 94.0)):  # +4 %, well inside 2·combined stdev (~28)
        result(book, 2, t, bench=10 + i)
    r1, r2 = book.rows()
    assert r1.tok_s.mean == pytest.approx(100.0) and r1.tok_s.stdev == pytest.approx(10.0) and r1.repeats == 3
    assert r2.deltas["tok_s"].pct == pytest.approx(4.0) and not r2.deltas["tok_s"].flagged
    assert "±" in r1.tok_s.text()
    launch(book, 3)
    for i, t in enumerate((200.0, 201.0, 199.0)):
        result(book, 3, t, bench=20 + i)
    assert book.row(3).deltas["tok_s"].flagged


def test_workload_mismatch_warns_and_blocks_speedup_verdict():
    book = RunBook(Verdict(min_speedup=1.2))
    launch(book, 1)
    result(book, 1, 100.0, fp="a")
    launch(book, 2, SPEC)
    result(book, 2, 300.0, acc=3.0, fp="b")
    row = book.row(2)
    assert any("workload differs" in w for w in row.warnings)
    assert not any("speedup" in r for r in row.reasons)


def test_alarms_accept_near_one_and_spec_slower_than_nospec():
    book = RunBook(Verdict(min_accept_len=2.0))
    launch(book, 1, {"--tp": 8})
    result(book, 1, 100.0)
    launch(book, 2, SPEC)
    result(book, 2, 80.0, acc=1.05)
    row = book.row(2)
    assert any("speculation is not working" in a for a in row.alarms)
    assert any("slower than no-spec #1" in a for a in row.alarms)
    assert row.verdict == "fail" and any("accept len 1.05 < 2" in r for r in row.reasons)


def test_failed_launch_and_failed_bench_verdicts():
    book = RunBook()
    launch(book, 1)
    book.apply(ServerFailed(kind="oom", message="CUDA out of memory", launch=1))
    assert (
        book.row(1).verdict == "fail" and "out of GPU memory (CUDA out of memory)" in book.row(1).reasons[0]
    )
    launch(book, 2)
    book.apply(BenchmarkResult(bench=5, launch=2, failed=4, error="4 request(s) failed: HTTP 500"))
    row = book.row(2)
    # issue 19's validity gate: a benchmark that measured nothing is invalid (with why), not a fail
    assert row.verdict == "invalid" and "HTTP 500" in row.reasons[0] and row.tok_s.mean is None


def test_no_thresholds_is_dash_and_thresholds_on_tok_ttft():
    book = RunBook()
    launch(book, 1)
    result(book, 1, 100.0)
    assert book.row(1).verdict == "—"
    book.verdict = Verdict(min_tok_s=150.0, max_ttft_ms=50.0)
    v, reasons = book.verdict_for(1)
    assert v == "fail" and len(reasons) == 2


def test_bench_without_launch_creates_run():
    book = RunBook()
    result(book, 0, 50.0, acc=2.5)
    assert book.rows()[0].launch == 0 and book.rows()[0].accept_len.mean == 2.5
