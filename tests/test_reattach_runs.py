"""Issue 33 item 19: a reattach starts with the runs this server already has, read from the earlier
session's recording (d26d01f: the runs table started empty). Real recordings written by the Recorder,
the real driver method and session model; no server (the reattach itself is covered elsewhere)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from eagletui.core import events as ev
from eagletui.session.drivers import LiveDriver
from eagletui.session.model import SessionModel
from eagletui.session.past_runs import earlier_benchmarks
from eagletui.session.record import Recorder

RUN_DIR = "/home/u/.eagletui/runs/7"
CFG = {"target": "local", "model": "m", "args": {"--speculative-algorithm": "EAGLE3"}}


def _recording(path: Path, *, run_dir: str = RUN_DIR, launch: int = 2) -> Path:
    with Recorder(path, target="local", profile_name="p") as rec:
        # launch 1 (another server, gone now) and launch 2, the one found running later
        rec.write(ev.LaunchStarted(launch=1, target="local", config=CFG, run_dir="/home/u/.eagletui/runs/6"))
        rec.write(ev.BenchmarkStarted(bench=1, launch=1, workload={"concurrency": 1}))
        rec.write(ev.BenchmarkResult(bench=1, launch=1, output_throughput=50.0, requests=8))
        rec.write(ev.LaunchStarted(launch=launch, target="local", config=CFG, run_dir=run_dir))
        for b, tok in ((2, 120.0), (3, 124.0)):
            rec.write(ev.BenchmarkStarted(bench=b, launch=launch, workload={"concurrency": 1}))
            rec.write(ev.BenchmarkResult(bench=b, launch=launch, output_throughput=tok, accept_length=3.1, requests=8))
        rec.write(ev.BenchmarkStarted(bench=4, launch=launch, workload={"concurrency": 1}))  # quit mid-run
    return path


class _Host:
    def __init__(self, model: SessionModel) -> None:
        self.model, self.notes = model, []  # type: ignore[var-annotated]

    def dispatch(self, e: ev.Event) -> None:
        self.model.dispatch(e)

    def notify(self, message: str, **_: Any) -> None:
        self.notes.append(message)


def test_the_newest_recording_of_this_run_dir_gives_its_benchmarks(tmp_path: Path) -> None:
    _recording(tmp_path / "a.jsonl")
    past = earlier_benchmarks(tmp_path, target="local", run_dir=RUN_DIR, launch=2)
    assert past.session == "a" and past.benchmarks == 2 and past.last_bench == 3
    assert [e.bench for e in past.events if isinstance(e, ev.BenchmarkResult)] == [2, 3]  # launch 1's left out
    # another run dir (a relaunch since), another target or this session's own file: nothing
    assert not earlier_benchmarks(tmp_path, target="local", run_dir="/other", launch=2).events
    assert not earlier_benchmarks(tmp_path, target="root@h", run_dir=RUN_DIR, launch=2).events
    assert not earlier_benchmarks(tmp_path, target="local", run_dir=RUN_DIR, launch=2, exclude=tmp_path / "a.jsonl").events


def test_a_reattach_shows_them_in_the_runs_table_and_numbers_the_next_benchmark_after_them(tmp_path: Path) -> None:
    _recording(tmp_path / "earlier.jsonl")
    (tmp_path / "broken.jsonl").write_bytes(b"\x00\x01 not a recording\n")
    recorder = Recorder(tmp_path / "now.jsonl", target="local", profile_name="p")  # this session's, beside them
    model = SessionModel(target="local", recorder=recorder)
    host = _Host(model)
    model.dispatch(ev.LaunchStarted(launch=2, target="local", config=CFG, run_dir=RUN_DIR, started_ago=60.0))
    ws = SimpleNamespace(run=SimpleNamespace(run_dir=RUN_DIR, launch=2), target="local", bench_no=0)
    driver = LiveDriver(None)
    asyncio.run(driver._earlier_benchmarks(model, host, ws))  # type: ignore[arg-type]
    run = model.runbook.runs[2]
    assert [r.output_throughput for r in run.good_results] == [120.0, 124.0]
    assert ws.bench_no == 3  # the next b is benchmark 4, never a second "benchmark 2"
    assert model.state.bench_running is None  # the benchmark that session never finished is left out
    assert host.notes == ["run #2: 2 benchmark(s) from session earlier shown"]
    assert any("broken" in n.message for n in model.state.notices)  # the unreadable file is said
    recorder.close()
