"""The like-for-like guard: every difference that moves tok/s by itself is named; unknowns are not."""

from __future__ import annotations

from eagletui.core.events import BenchmarkResult, LaunchStarted
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.compare import comparability
from eagletui.core.runs.run import Run


def run(model="meta/Llama-3.1-8B", tp=8, fp="w1", gpu=None, detected=None, n=1) -> Run:
    cfg = {"model": model, "tp": tp, "args": {}}
    if gpu is not None:
        cfg["gpu"] = gpu
    r = Run(launch=n, config=cfg if detected is None else {}, detected_args=detected or {})
    r.results.append(
        BenchmarkResult(bench=1, launch=n, output_throughput=100.0, requests=10, workload_fingerprint=fp)
    )
    return r


def test_same_setup_is_like_for_like():
    assert comparability(run(), run(n=2)) == []


def test_each_difference_is_named_with_both_values():
    assert comparability(run(tp=8), run(tp=4)) == ["different tp (8 vs 4)"]
    assert comparability(run(model="a/X"), run(model="b/Y")) == ["different model (a/X vs b/Y)"]
    assert comparability(run(gpu="NVIDIA H200"), run(gpu="NVIDIA H100 80GB HBM3")) == [
        "different GPU type (NVIDIA H200 vs NVIDIA H100 80GB HBM3)"
    ]
    (why,) = comparability(run(fp="aaaaaaaaaaaa"), run(fp="bbbbbbbbbbbb"))
    assert why.startswith("different benchmark settings") and "aaaaaaaa vs bbbbbbbb" in why


def test_several_differences_all_listed():
    got = comparability(run(model="a/X", tp=8, fp="w1"), run(model="b/Y", tp=2, fp="w2"))
    assert [g.split(" (")[0] for g in got] == [
        "different model",
        "different tp",
        "different benchmark settings",
    ]


def test_unknown_is_not_a_difference():
    # GPU type not recorded on one side, no fingerprint on the other: nothing to say
    assert comparability(run(gpu="NVIDIA H200"), run(gpu=None)) == []
    assert comparability(run(fp=""), run(fp="w2")) == []


def test_gpu_from_the_caller_wins_over_config():
    assert comparability(run(), run(), gpu_a="NVIDIA H200", gpu_b="NVIDIA A100") == [
        "different GPU type (NVIDIA H200 vs NVIDIA A100)"
    ]


def test_model_and_tp_from_the_servers_own_args_line():
    a = run(detected={"model_path": "m/A", "tp_size": 8})
    b = run(detected={"model_path": "m/A", "tp_size": 4})
    assert comparability(a, b) == ["different tp (8 vs 4)"]


def test_runbook_pins_a_run_of_another_session_and_warns_when_not_like_for_like():
    book = RunBook()
    for ev in (
        LaunchStarted(launch=1, target="box", config={"model": "meta/Llama-3.1-8B", "tp": 8, "args": {}}),
        BenchmarkResult(bench=1, launch=1, output_throughput=120.0, requests=10, workload_fingerprint="w1"),
    ):
        book.apply(ev)
    assert book.baseline == 1 and book.baseline_label == "#1"
    old = run(tp=4)  # 100 tok/s, an earlier session's tp=4 run
    book.pin_external(old, "old-session:3")
    assert book.base_run() is old and book.baseline is None and book.baseline_label == "old-session:3"
    row = book.row(1)
    assert not row.is_baseline and row.deltas["tok_s"].pct == 20.0
    assert row.warnings == ("not like for like vs old-session:3: different tp (8 vs 4)",)
    book.apply(
        BenchmarkResult(bench=2, launch=1, output_throughput=121.0, requests=10, workload_fingerprint="w1")
    )
    assert book.baseline is None  # a new event does not take the pin back
    book.pin_baseline(1)
    assert book.base_run() is book.runs[1] and book.external is None and book.baseline_label == "#1"
