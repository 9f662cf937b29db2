"""Speculation economics in the run book, the runs details, the exports: per-request tok/s vs the
no-spec reference run, and where speculation stops paying across concurrencies."""

from __future__ import annotations

import csv
import io
import json

import pytest

from eagletui.core.events import BenchmarkResult, BenchmarkStarted, LaunchStarted
from eagletui.core.runs.book import RunBook
from eagletui.session.export import build_report
from eagletui.session.export_render import render_csv, render_json, render_markdown

MODEL = "moonshotai/Kimi-K2-Instruct"
SPEC = {"--model-path": MODEL, "--tp": 8, "--speculative-algorithm": "EAGLE3"}
NOSPEC = {"--model-path": MODEL, "--tp": 8}


def _launch(n, args, target="local", model=MODEL):
    return LaunchStarted(
        launch=n, target=target, config={"target": target, "model": model, "args": dict(args), "env": {}}
    )


def _bench(n, bench, tok, acc=None, conc=1):
    return [
        BenchmarkStarted(
            bench=bench, launch=n, workload={"concurrency": conc}, workload_fingerprint=f"c{conc}"
        ),
        BenchmarkResult(
            bench=bench,
            launch=n,
            output_throughput=tok,
            accept_length=acc,
            requests=8,
            workload_fingerprint=f"c{conc}",
        ),
    ]


def _book(events):
    book = RunBook()
    for e in events:
        book.apply(e)
    return book


def _issue_example():
    # the issue's case: baseline 82 tok/s single-stream; a poor drafter accepts 1.5 at 52 tok/s
    return [_launch(1, SPEC), *_bench(1, 1, 52.0, 1.5), _launch(2, NOSPEC), *_bench(2, 2, 82.0)]


def test_spec_run_gets_economics_vs_latest_nospec_run_even_when_baseline_is_spec():
    book = _book(_issue_example())
    assert book.baseline == 1  # the spec run is the (default) baseline: the reference is the no-spec run
    assert book.nospec_reference(1).launch == 2
    assert book.nospec_reference(2) is None  # a no-spec run has no economics
    e = book.economics(1)
    assert e.speedup == pytest.approx(52 / 82)
    assert e.cycle_ms == pytest.approx(1.5 / 52 * 1000)
    assert e.baseline_step_ms == pytest.approx(1000 / 82)
    assert e.break_even_accept_len == pytest.approx(82 * 1.5 / 52)
    assert e.needed_cycle_ms == pytest.approx(1.5 / 82 * 1000)
    s = book.row(1).economics
    assert s.startswith("EAGLE-3 -37 %") and "needs accept ≥ 2.37. It accepts 1.50." in s
    assert "A cycle ≤ 18.3 ms would pay. The cycle takes 28.8 ms." in s and "vs no-spec #2" in s
    assert book.row(2).economics is None


def test_pinned_nospec_baseline_wins_over_latest_and_other_hosts_or_models_are_ignored():
    events = [
        _launch(1, NOSPEC),
        *_bench(1, 1, 80.0),
        _launch(2, NOSPEC, target="otherhost"),
        *_bench(2, 2, 200.0),
        _launch(3, {**NOSPEC, "--model-path": "x/other"}, model="x/other"),
        *_bench(3, 3, 300.0),
        _launch(4, NOSPEC),
        *_bench(4, 4, 90.0),
        _launch(5, SPEC),
        *_bench(5, 5, 120.0, 3.0),
    ]
    book = _book(events)
    assert book.nospec_reference(5).launch == 1  # the pinned baseline (first run) is no-spec
    book.pin_baseline(5)
    assert book.nospec_reference(5).launch == 4  # latest no-spec run of the same host and model
    assert book.economics(5).speedup == pytest.approx(120 / 90)
    assert "pays" in book.economics_sentence(5)


def test_per_request_tok_s_and_crossover_over_concurrencies():
    events = [_launch(1, NOSPEC), _launch(2, SPEC)]
    bench = 0
    # spec wins 2× at 1, 1.25× at 8, loses at 32 (total tok/s; per request divides by concurrency)
    for conc, base_tok, spec_tok in ((1, 70.0, 140.0), (8, 480.0, 600.0), (32, 1600.0, 1400.0)):
        bench += 1
        events += _bench(1, bench, base_tok, conc=conc)
        bench += 1
        events += _bench(2, bench, spec_tok, 3.0, conc=conc)
    book = _book(events)
    points = dict(book.economics_points(2))
    assert set(points) == {1, 8, 32}
    assert points[8].baseline_step_ms == pytest.approx(1000 / (480 / 8))
    assert points[8].cycle_ms == pytest.approx(3.0 / (600 / 8) * 1000)
    assert book.economics(2).concurrency == 32  # the last benchmark's concurrency
    s = book.economics_sentence(2)
    assert "at concurrency 32" in s and "Stops paying at concurrency 32." in s


def test_exports_carry_the_run_books_economics():
    events = _issue_example()
    report = build_report(events)
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert rows[0]["economics_vs"] == "2" and float(rows[0]["speedup"]) == pytest.approx(52 / 82, abs=1e-3)
    assert float(rows[0]["break_even_accept_len"]) == pytest.approx(2.365, abs=1e-2)
    assert rows[1]["speedup"] == ""
    data = json.loads(render_json(report))
    econ = data["runs"][0]["economics"]
    assert econ["needed_cycle_ms"] == pytest.approx(18.293, abs=1e-2) and econ["pays"] is False
    assert econ["sentence"] == _book(events).economics_sentence(1) and econ["crossover"] is None
    assert data["runs"][1]["economics"] is None
    assert "economics vs no-spec #2" in render_markdown(report)


def test_recorded_events_round_trip_to_the_same_economics():
    from eagletui.core.events import Event

    events = [Event.from_dict(e.to_dict()) for e in _issue_example()]
    assert _book(events).economics_sentence(1) == _book(_issue_example()).economics_sentence(1)


def test_runs_details_and_comparison_line_show_the_sentence():
    from eagletui.core.state.screen import SessionState
    from eagletui.ui.repaint import compare_text
    from eagletui.ui.widgets.runs import RunsTable

    events = [_launch(2, NOSPEC), *_bench(2, 2, 82.0), _launch(3, SPEC), *_bench(3, 3, 52.0, 1.5)]
    book = _book(events)
    details = RunsTable().details(book, SessionState(target="local"), 3).plain
    assert "needs accept ≥ 2.37. It accepts 1.50." in details
    assert "#3 EAGLE-3 -37 %" in compare_text(book).plain  # the latest benchmarked run: #3
    # the no-spec run benchmarked last: the line still says what it means for the spec run
    book = _book(_issue_example())
    line = compare_text(book).plain
    assert line.startswith("run #2") and "#1 EAGLE-3 -37 %" in line and "needs accept ≥ 2.37" in line


def test_step_bars_beside_the_baseline_with_delta_per_category():
    from eagletui.core.events import ProfileCaptured
    from eagletui.ui.widgets.stepbars import step_bars

    def prof(comm, gemm):
        cats = {"communication": comm, "gemm": gemm, "attention": 1.0, "moe": 2.0, "other": 0.5}
        return {"ranks": 8, "steps": 5, "step_ms": sum(cats.values()), "categories": cats, "skew_ms": 0.2}

    events = [*_issue_example(), ProfileCaptured(launch=1, summary=prof(25.0, 2.0))]
    events += [ProfileCaptured(launch=2, summary=prof(8.0, 2.0)), ProfileCaptured(launch=2, error="x")]
    book = _book(events)
    assert book.runs[2].step_profile["categories"]["communication"] == 8.0  # an error keeps the last
    text = step_bars(book, 2).plain
    assert "#2 " in text and "#1★" in text and "ms/step" in text
    comm = next(line for line in text.splitlines() if "communication" in line)
    assert "Δ  -17.00 ms (-68 %)" in comm
    assert "no step profile" in step_bars(_book(_issue_example()), 1).plain
