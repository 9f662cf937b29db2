"""``SESSION:RUN`` baselines: resolved like replay, folded through the run book, compared with the guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.core import events as ev
from eagletui.core.runs.run import Run
from eagletui.session.baseline import BaselineError, compare, load_run, parse_ref, warning
from eagletui.session.record import Recorder

SPEC = {"--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3}


def _record(path: Path, *, tp: int = 8, gpu: str = "NVIDIA H200", bench: bool = True, spec=False) -> Path:
    t = [1000.0]

    def at() -> dict[str, float]:
        t[0] += 1.0
        return {"wall": 1.8e9 + t[0], "mono": t[0]}

    cfg = {"target": "box", "model": "org/Model-8B", "tp": tp, "args": dict(SPEC if spec else {})}
    with Recorder(path, target="box", profile_name="p") as rec:
        rec.write(ev.LaunchStarted(launch=1, target="box", config=cfg, **at()))
        rec.write(ev.GpuStats(gpus=({"index": 0, "name": gpu},), **at()))
        rec.write(ev.ServerReady(launch=1, **at()))
        if bench:
            rec.write(ev.BenchmarkStarted(bench=1, launch=1, workload_fingerprint="w1", **at()))
            rec.write(
                ev.BenchmarkResult(
                    bench=1,
                    launch=1,
                    output_throughput=400.0,
                    accept_length=None if not spec else 3.0,
                    requests=10,
                    workload_fingerprint="w1",
                    **at(),
                )
            )
    return path


def current(tp: int = 8, tok: float = 500.0, spec: bool = True, fp: str = "w1") -> Run:
    r = Run(launch=3, config={"model": "org/Model-8B", "tp": tp, "args": dict(SPEC if spec else {})})
    r.results.append(
        ev.BenchmarkResult(
            bench=1, launch=3, output_throughput=tok, accept_length=3.2, requests=10, workload_fingerprint=fp
        )
    )
    return r


def test_parse_ref():
    assert parse_ref("demo-eagle3:2") == ("demo-eagle3", 2)
    assert parse_ref("/tmp/a:b/s.jsonl:1") == ("/tmp/a:b/s.jsonl", 1)
    for bad in ("demo-eagle3", ":1", "x:two", "x:0"):
        with pytest.raises(BaselineError):
            parse_ref(bad)


def test_bare_name_resolves_in_the_sessions_dir(tmp_path):
    _record(tmp_path / "20261129-gpu.jsonl")
    base = load_run("20261129-gpu:1", [tmp_path])
    assert (base.session, base.run.launch, base.gpu) == ("20261129-gpu", 1, "NVIDIA H200")
    assert base.run.metric("tok_s").mean == 400.0 and base.run.model == "org/Model-8B"


def test_unknown_session_run_or_unbenchmarked_run_is_a_clear_error(tmp_path):
    _record(tmp_path / "s1.jsonl")
    _record(tmp_path / "nobench.jsonl", bench=False)
    with pytest.raises(LookupError, match="no session 'nope'"):
        load_run("nope:1", [tmp_path])
    with pytest.raises(BaselineError, match=r"no run 7 in session s1 \(runs: 1\)"):
        load_run("s1:7", [tmp_path])
    with pytest.raises(BaselineError, match="no benchmark results"):
        load_run("nobench:1", [tmp_path])
    (tmp_path / "junk.jsonl").write_text("not a session\n")
    with pytest.raises(BaselineError, match="baseline junk:1"):
        load_run("junk:1", [tmp_path])


def test_like_for_like_compare_has_delta_and_no_reasons(tmp_path):
    base = load_run(str(_record(tmp_path / "s.jsonl", spec=True)) + ":1", [])
    got = compare(current(tok=500.0), base, gpu="NVIDIA H200")
    assert got["session"] == "s" and got["run"] == 1 and got["tok_s"] == 400.0
    assert got["delta_pct"] == pytest.approx(25.0)
    assert got["comparable"] is True and got["reasons"] == [] and warning(got) is None
    assert "economics" not in got  # a spec baseline: no economics


def test_not_like_for_like_names_every_difference(tmp_path):
    base = load_run(str(_record(tmp_path / "s.jsonl", tp=4)) + ":1", [])
    got = compare(current(tp=8, fp="w2"), base, gpu="NVIDIA H100 80GB HBM3")
    assert got["comparable"] is False
    assert got["reasons"][0] == "different tp (8 vs 4)"
    assert "different GPU type (NVIDIA H100 80GB HBM3 vs NVIDIA H200)" in got["reasons"]
    assert any(r.startswith("different benchmark settings") for r in got["reasons"])
    assert "not like for like: different tp (8 vs 4)" in (warning(got) or "")


def test_nospec_baseline_gives_economics(tmp_path):
    base = load_run(str(_record(tmp_path / "s.jsonl")) + ":1", [])
    got = compare(current(tok=600.0), base)
    econ = got["economics"]
    assert econ["speedup"] == pytest.approx(1.5) and "vs no-spec s:1" in econ["sentence"]


def test_shipped_demo_recording():
    base = load_run("sessions/demo-eagle3.jsonl:1", [])
    assert base.run.model == "moonshotai/Kimi-K2.5" and not base.run.is_spec
