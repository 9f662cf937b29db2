"""A sweep's counted benchmarks kept beside its queue (``<queue>.runs.jsonl``): what a resumed sweep's
frontier folds. Written 0600 and redacted; read back like a recording (a damaged line or an earlier
sweep's line at the same path is skipped, never the file lost); only the queue's counted runs fold."""

from __future__ import annotations

import stat
from pathlib import Path

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
