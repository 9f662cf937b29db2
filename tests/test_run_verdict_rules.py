"""Issue 31 items 6 and 7: what the runs table, every export and a replay say of a run, by one rule.

* Item 6: with no baseline (both runs invalid: the random drafter of run 1 on the real H200, steps 2
  then 3) the "config vs baseline" column said ``=``: nothing was compared, so nothing is equal.
* Item 7: a run measured before its server died flipped from ``pass`` to ``fail`` (run 4 on the real
  H200: kill -9 of the scheduler during a later benchmark). The rule: a result the validity gate let
  through was measured while the server ran well and keeps its verdict; the death is the launch's, after
  it, and is said beside the verdict. The recording of that session is the fixture.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from eagletui.core.events import (
    BenchmarkResult,
    BenchmarkStarted,
    Event,
    LaunchStarted,
    ServerFailed,
    ServerReady,
)
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.run import RunVerdict
from eagletui.session.export import build_report, report_json
from eagletui.session.export_render import render_csv, render_markdown
from eagletui.session.format import read_session
from eagletui.ui.widgets.runs import RunsTable
from tests.replay_apps import replay_app

FIXTURE = Path(__file__).parent / "fixtures" / "real-0.5.17-turn4-ui"
DIED_AFTER = "the launch failed after this run was measured (the server died while ready)"

# ------------------------------------------------------------------------------------------ item 6

ARGS = {
    "--model-path": "/tmp/sgw/tiny/target",
    "--speculative-algorithm": "EAGLE3",
    "--speculative-num-steps": 2,
    "--speculative-eagle-topk": 2,
    "--speculative-num-draft-tokens": 6,
}


def _run(n: int, steps: int, accept: float, t0: float) -> list[Event]:
    """One launch and one benchmark of it, as run 1 did them (the random drafter accepts nothing)."""
    cfg = {"target": "local", "server": "sglang", "args": {**ARGS, "--speculative-num-steps": steps}, "env": {}}
    return [
        LaunchStarted(launch=n, target="local", command=("python3",), config=cfg, wall=t0, mono=t0),
        ServerReady(launch=n, wall=t0 + 60, mono=t0 + 60),
        BenchmarkStarted(bench=n, launch=n, workload={"concurrency": 4, "num_prompts": 16}, wall=t0 + 61, mono=t0 + 61),
        BenchmarkResult(
            bench=n, launch=n, output_throughput=728.0, accept_length=accept, requests=16, duration_s=2.0,
            wall=t0 + 63, mono=t0 + 63,
        ),
    ]


def _book(events: list[Event]) -> RunBook:
    book = RunBook()
    for ev in events:
        book.apply(ev)
    return book


def test_no_baseline_is_said_not_equal_in_the_table_and_every_export() -> None:
    events = _run(1, 2, 1.01, 100.0) + _run(2, 3, 1.01, 200.0)
    book = _book(events)
    assert [r.verdict for r in book.rows()] == [RunVerdict.INVALID] * 2 and book.baseline is None
    assert [r.diff for r in book.rows()] == ["no baseline", "no baseline"]
    report = build_report(events)
    assert [r["diff_text"] for r in report_json(report)["runs"]] == ["no baseline", "no baseline"]
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert "=" not in {v for row in rows for v in row.values()}
    # a valid run comes: it is the baseline; "=" only for a run compared with it and the same
    events += _run(3, 3, 2.5, 300.0)
    book = _book(events)
    assert [r.diff for r in book.rows()] == ["--speculative-num-steps 3→2", "=", "baseline"]
    assert [r["diff_text"] for r in report_json(build_report(events))["runs"]] == [r.diff for r in book.rows()]


@pytest.mark.slow
async def test_the_runs_table_says_no_baseline() -> None:
    app = replay_app(_run(1, 2, 1.01, 100.0) + _run(2, 3, 1.01, 200.0))
    async with app.run_test(size=(200, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.press("4")
        await pilot.pause()
        table = app.query_one(RunsTable)
        cells = [str(table.get_cell_at((row, len(table.columns) - 1))) for row in range(table.row_count)]
        assert cells == ["no baseline", "no baseline"]


# ------------------------------------------------------------------------------------------ item 7


def _kill9_session() -> list[Event]:
    _header, events, warnings = read_session(FIXTURE / "session-kill9.jsonl")
    assert not warnings
    return events


def test_a_run_measured_before_its_server_died_keeps_its_verdict() -> None:
    """The real recording: run #1 passed (accept 1.89 ≥ 1.5), then the scheduler was killed during a
    benchmark of another process. Its verdict is the same after the death as before it."""
    book = RunBook()
    verdicts: list[tuple[str, RunVerdict]] = []
    for ev in _kill9_session():
        book.apply(ev)
        if isinstance(ev, BenchmarkResult | ServerFailed) or ev.type == "process_exited":
            verdicts.append((ev.type, book.verdict_for(1)[0]))
    assert verdicts == [
        ("bench_result", RunVerdict.PASS),
        ("server_failed", RunVerdict.PASS),
        ("process_exited", RunVerdict.PASS),
    ]
    row = book.row(1)
    assert row.reasons == ("accept len 1.89 ≥ 1.5",) and row.is_baseline
    assert row.failure and row.failure.startswith("died: Subprocess scheduler_0 (pid=2029) crashed")
    assert row.failed_after is not None and row.failed_after.startswith(DIED_AFTER)


def test_the_exports_judge_it_as_the_table_does() -> None:
    report = build_report(_kill9_session())
    run = report_json(report)["runs"][0]
    assert (run["verdict"], run["outcome"], run["baseline"]) == ("pass", "failed", True)
    assert run["failed_after_measurement"].startswith(DIED_AFTER)
    md = render_markdown(report)
    assert "- verdict: **pass**: accept len 1.89 ≥ 1.5" in md and f"- ✘ {DIED_AFTER}" in md
    assert "(the launch failed)" not in md
    row = next(csv.DictReader(io.StringIO(render_csv(report))))
    assert (row["verdict"], row["outcome"]) == ("pass", "failed")


def test_a_death_during_the_benchmark_or_before_it_is_still_not_a_pass() -> None:
    """The other side of the rule: a result the death cut is invalid, a launch that died before any
    measurement fails, and neither says it was measured first."""
    during = _run(1, 3, 2.5, 100.0)
    during.insert(3, ServerFailed(launch=1, kind="died", message="scheduler crashed", phase="ready"))
    book = _book(during)
    assert book.verdict_for(1)[0] == RunVerdict.INVALID and book.failed_after(1) is None
    before = _run(1, 3, 2.5, 100.0)[:2] + [ServerFailed(launch=1, kind="oom", message="CUDA OOM", phase="ready")]
    book = _book(before)
    verdict, reasons = book.verdict_for(1)
    assert verdict == RunVerdict.FAIL and reasons[0].startswith("launch failed:") and book.failed_after(1) is None


@pytest.mark.slow
async def test_a_replay_shows_the_rule_in_the_table_and_the_details() -> None:
    app = replay_app(_kill9_session())
    async with app.run_test(size=(200, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.press("4")
        await pilot.pause()
        table = app.query_one(RunsTable)
        cells: list[Any] = [str(c) for c in table.get_row_at(0)]
        assert cells[7] == "pass" and "✘ the server died while ready" in cells[-1]
        details = table.details(app.screen.model.runbook, app.screen.model.state, 1).plain  # type: ignore[attr-defined]
        assert details.startswith("verdict pass  accept len 1.89 ≥ 1.5\n✘ " + DIED_AFTER), details[:300]
