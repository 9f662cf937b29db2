"""A sweep's counted benchmarks kept beside its queue (``<queue>.runs.jsonl``): what a resumed sweep's
frontier folds. Written 0600 and redacted; read back like a recording (a damaged line or an earlier
sweep's line at the same path is skipped, never the file lost); only the queue's counted runs fold."""

from __future__ import annotations

import random
import stat
from pathlib import Path

import pytest

from eagletui.core.events import BenchmarkResult, BenchmarkStarted, LaunchStarted
from eagletui.core.profile.load import load_profile
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.frontier import frontiers
from eagletui.session.model import SessionModel
from eagletui.session.sweep.cells import CellState, VariantState
from eagletui.session.sweep.kept_runs import keep_run, kept_book, kept_path
from eagletui.session.sweep.queue import SweepQueue

PROFILE = Path(__file__).resolve().parents[1] / "eagletui" / "profiles" / "demo.toml"


def _live_book(launch: int, algo: str, tok_s: float) -> tuple[RunBook, BenchmarkResult]:
    book = RunBook()
    env = {"HF_TOKEN": "hf_secretvalue123", "NCCL_ALGO": algo}
    config = {"server": "sglang", "model": "m", "tp": 2, "args": {"--tp": 2}, "env": env}
    book.apply(LaunchStarted(launch=launch, target="local", config=config))
    book.apply(BenchmarkStarted(bench=7, launch=launch, workload={"concurrency": 4, "prompts": "x"}))
    r = BenchmarkResult(bench=7, launch=launch, output_throughput=tok_s, requests=8, duration_s=2.0)
    book.apply(r)
    return book, r


def test_kept_runs_fold_into_one_book_and_skip_what_they_must(tmp_path: Path) -> None:
    profile = load_profile(PROFILE)
    vs = [VariantState(i, f"v{i}", {}, run_id=f"run{i}", cells=[CellState({})]) for i in range(3)]
    q = SweepQueue("local", str(PROFILE), "fp", 1, [], vs, [0, 1, 2], path=tmp_path / "q.json")
    for v, (algo, tok) in zip(vs, [("Ring", 100.0), ("Tree", 150.0), ("NVLS", 90.0)], strict=True):
        book, r = _live_book(1, algo, tok)  # each session numbers its launches from 1
        model = SessionModel(target="local", profile=profile)
        model.runbook = book
        kept = keep_run(q, v, model, r, profile)
        v.cells[0].repeats.append({"tok_s": tok, "kept": kept})
    vs[2].cells[0].repeats[0]["invalid"] = ["a restart"]  # not counted by the queue: not folded
    path = kept_path(q.path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and "hf_secretvalue123" not in path.read_text()
    with open(path, "a") as f:
        f.write("{not json\n")
        f.write('{"created": 1.0, "variant": 0, "id": "x", "events": []}\n')  # an earlier sweep's line
    book, n, problems = kept_book(q, profile)
    assert n == 2
    assert problems == [f"{path}: 1 damaged line(s) skipped"]
    assert sorted(book.runs) == [1, 2]  # one launch per variant, its benchmarks renumbered
    (front,) = frontiers(book)
    assert sorted(n for c in front.curves for n in c.launches) == [1, 2]
    assert {p.tok_s_per_gpu for c in front.curves for p in c.points} == {50.0, 75.0}
    # a missing file is said: the frontier then holds only the session's own runs
    path.unlink()
    assert "missing" in kept_book(q, profile)[2][0]


def test_a_restart_starts_a_new_kept_book_and_keeps_the_old_one_aside(tmp_path: Path) -> None:
    """``sweep --restart`` (a new queue, another ``created``, at the same path): its first kept run starts
    a new ``<queue>.runs.jsonl``; the earlier sweep's goes aside as ``<queue>.runs.prev.jsonl`` (one
    generation: a second restart replaces it). A resume (the same ``created``, a new process) appends."""
    import json

    from eagletui.session.sweep import kept_runs

    profile = load_profile(PROFILE)

    def keep(created: float, tok_s: float) -> SweepQueue:
        v = VariantState(0, "v0", {}, run_id="r", cells=[CellState({})])
        q = SweepQueue(
            "local", str(PROFILE), "fp", 1, [], [v], [0], path=tmp_path / "q.json", created=created
        )
        book, r = _live_book(1, "Ring", tok_s)
        model = SessionModel(target="local", profile=profile)
        model.runbook = book
        v.cells[0].repeats.append({"tok_s": tok_s, "kept": keep_run(q, v, model, r, profile)})
        return q

    def sweeps_in(path: Path) -> list[float]:
        return [json.loads(line)["created"] for line in path.read_text().splitlines()]

    path = kept_path(tmp_path / "q.json")
    prev = kept_runs.prev_kept_path(tmp_path / "q.json")
    keep(1.0, 100.0)  # the first sweep: two runs
    keep(1.0, 110.0)
    q2 = keep(2.0, 120.0)  # --restart: a new queue
    assert sweeps_in(path) == [2.0] and sweeps_in(prev) == [1.0, 1.0]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert kept_book(q2, profile)[1] == 1
    kept_runs._CHECKED.clear()  # a resume is a new process: the file's first line is its own sweep's
    keep(2.0, 130.0)
    assert sweeps_in(path) == [2.0, 2.0] and sweeps_in(prev) == [1.0, 1.0]
    keep(3.0, 140.0)  # restarted again: the previous sweep's file replaces the older one aside
    assert sweeps_in(path) == [3.0] and sweeps_in(prev) == [2.0, 2.0]


@pytest.mark.slow
async def test_the_frontier_view_after_a_resume_shows_the_reports_frontier(tmp_path: Path) -> None:
    """A resumed queue in the TUI: two variants were measured by an earlier session (kept beside the
    queue), one by this one. ``v`` and the charts column's frontier chart fold the runs the decisions
    rank, every session's: their points are ``sweep``'s report's frontier, not only this session's curve."""
    import shutil

    from eagletui.commands.sweep import _frontier
    from eagletui.session.sweep.cells import DONE
    from eagletui.session.sweep.files import queue_path
    from eagletui.ui.screens.frontier import FrontierScreen
    from eagletui.ui.widgets.charts import FrontierMiniChart
    from tests.replay_apps import replayed
    from tests.test_slo_frontier import SPEC, _bench, _launch, _requests

    path = tmp_path / "demo-sweep.toml"
    shutil.copy(PROFILE.with_name("demo-sweep.toml"), path)
    profile = load_profile(path)
    assert profile.sweep is not None and profile.slo
    q = SweepQueue.plan(profile.sweep, target="local", profile_path=str(path), profile=profile)
    q.path = queue_path("local", str(path))
    rng, bench, here = random.Random(3), 0, []
    for v, steps in zip(q.variants[:3], (2, 3, 5), strict=True):
        events = [_launch(1, {**SPEC, "--speculative-num-steps": steps}, target="local")]
        for conc in (1, 8):
            bench += 1
            events += _bench(1, bench, conc, _requests(rng, conc, 1 + steps / 4), duration=8 / conc**0.5)
        model = SessionModel(target="local", profile=profile)
        for e in events:
            model.runbook.apply(e)
        for r in (e for e in events if isinstance(e, BenchmarkResult)):
            kept = keep_run(q, v, model, r, profile)
            v.cells[0].repeats.append({"tok_s": r.output_throughput, "kept": kept})
        v.state = DONE
        here = events  # the last variant is this session's
    q.save()
    report = _frontier(SweepQueue.load(q.path), profile, [])
    assert len(report[0]["curves"]) == 3
    async with replayed((200, 50), events=here, profile=profile) as (app, pilot):
        await pilot.press("4", "v")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FrontierScreen)
        assert [f.to_json() for f in screen.frontiers] == report
        # the charts column's frontier chart folds the same runs (behind the view it waits: closed, it paints)
        await pilot.press("escape")
        app.screen.painter.force_charts = app.screen.painter.dirty = True
        app.screen.painter.paint()
        chart = app.screen.query_one("#chart-frontier-wide", FrontierMiniChart)
        assert chart.frontier is not None and chart.frontier.to_json() == report[0]
