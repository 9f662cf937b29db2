"""``eagletui trace`` on real torch-profiler traces: categories add up to the plain kernel sum, the
launching op decides what a kernel's name does not, ranks and steps are found, bad files fail clearly."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from eagletui.commands.trace import main as trace_main
from eagletui.profiler import chrome, summarize_file
from eagletui.profiler.chrome import TraceError
from eagletui.profiler.summary import report_json

TRACES = Path(__file__).resolve().parent / "fixtures" / "traces"  # real traces, see README.md there
GPU = H200 = TRACES
REAL = [
    GPU / "decode-graph-TP-0.trace.json.gz",
    GPU / "decode-graph-TP-1.trace.json.gz",
    GPU / "decode-eager-TP-0.trace.json.gz",
    H200 / "eagle3-TP-0-EXTEND.trace.json.gz",
]


def plain_kernel_ms(path: Path) -> float:
    with gzip.open(path) as fh:
        events = json.load(fh)["traceEvents"]
    return sum(e["dur"] for e in events if e.get("cat") == "kernel") / 1000.0


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_categories_add_up_to_the_plain_kernel_sum(path: Path) -> None:
    r = summarize_file(path)
    plain = plain_kernel_ms(path)
    assert r.kernel_ms == pytest.approx(plain, rel=1e-9)
    assert sum(r.ms(c) for c in r.categories) == pytest.approx(plain, rel=0.01)
    assert sum(t.count for t in r.categories.values()) == r.kernels


def test_nccl_gemm_attention_by_kernel_name() -> None:
    r = summarize_file(GPU / "decode-graph-TP-0.trace.json.gz")
    top = {name.split("(")[0]: cat for name, cat, _ms, _n in r.top_kernels}
    assert top["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"] == "communication"
    assert any(cat == "gemm" for name, cat in top.items() if name.startswith("nvjet"))
    assert r.categories["attention"].count == 48  # one SDPA per layer per step, 8 × 6
    assert r.categories["communication"].count == 96  # two all-reduces per layer per step


def test_triton_attention_is_categorised_by_its_launching_op() -> None:
    """SGLang's triton attention kernel is just ``_fwd_kernel``: its op says attention."""
    r = summarize_file(H200 / "eagle3-TP-0-EXTEND.trace.json.gz")
    cats = {name: cat for name, cat, _ms, _n in r.top_kernels}
    assert cats["_fwd_kernel"] == "attention"
    assert r.categories["moe"].count == 0  # a dense Llama: no MoE, even though moe/ helpers appear in frames
    assert r.rank == 0


def test_ranks_steps_and_skew() -> None:
    ranks = [summarize_file(p) for p in REAL[:2]]
    assert [r.rank for r in ranks] == [0, 1]
    for r in ranks:
        assert r.steps is not None and [s.name for s in r.steps] == [f"decode_step_{i}" for i in range(6)]
        # steady-state steps of a graph replay: ~2.5 ms of kernels each (measured 2.6 ms per replay)
        assert 2.0 < r.steps[-1].kernel_ms < 3.0
    rep = report_json(ranks)
    skew = rep["skew"]
    waits = {x["rank"]: x["wait_ms"] for x in skew["ranks"]}
    assert waits[1] == 0.0 and waits[0] > 10.0  # rank 0 waited for rank 1 in the first step
    assert set(rep["ranks"][0]["categories"]) == {"communication", "gemm", "attention", "moe", "other"}
    assert set(rep["ranks"][0]["categories"]["gemm"]) == {"ms", "share", "count"}


def test_small_chunks_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events and UTF-8 characters split across read chunks decode the same as in one piece."""
    path = REAL[2]
    whole = summarize_file(path)
    monkeypatch.setattr(chrome, "CHUNK", 777)
    small = summarize_file(path)
    assert small.to_json() == whole.to_json()


def test_plain_json_and_unicode_names(tmp_path: Path) -> None:
    ev = [
        {"ph": "X", "cat": "kernel", "name": "ncclKernel_ÄllReduce", "ts": 1.0, "dur": 2.5, "args": {}},
        {"ph": "X", "cat": "kernel", "name": "gemm_☃", "ts": 5.0, "dur": 1.5, "args": {}},
    ]
    f = tmp_path / "x-TP-3.trace.json"
    f.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}, ensure_ascii=False))
    r = summarize_file(f)
    assert r.rank == 3
    assert r.categories["communication"].us == 2.5 and r.categories["gemm"].us == 1.5


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", "not a Chrome trace"),
        (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "a", "ts": 1, "dur"', "truncated"),
        (b'{"schemaVersion": 1}', "no traceEvents"),
        (b"[1, 2, 3]", "not a Chrome trace"),
        (b'{"traceEvents": 5}', "not a list"),
    ],
)
def test_bad_files_fail_with_a_clear_error(tmp_path: Path, content: bytes, words: str) -> None:
    f = tmp_path / "bad.trace.json"
    f.write_bytes(content)
    with pytest.raises(TraceError, match=words):
        summarize_file(f)


def test_truncated_gzip_and_oversized_event(tmp_path: Path) -> None:
    data = gzip.compress(REAL[0].read_bytes()[:0] or gzip.decompress(REAL[0].read_bytes()))
    cut = tmp_path / "cut.trace.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError):
        summarize_file(cut)
    huge = tmp_path / "huge.trace.json"
    huge.write_text('{"traceEvents": [{"name": "' + "x" * (5 << 20) + '"}]}')
    with pytest.raises(TraceError, match="over"):
        summarize_file(huge)


def test_cli_text_json_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = tmp_path / "h-TP-0.trace.json"
    name = "evil\x1b]52;c;aGVsbG8=\x07kernel\x9b31m"
    hostile.write_text(json.dumps({"traceEvents": [{"cat": "kernel", "name": name, "ts": 0, "dur": 1}]}))
    assert trace_main([str(hostile), *map(str, REAL[:2])]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "rank skew" in out and "communication" in out
    assert trace_main(["--json", *map(str, REAL[:2]), "--baseline", str(REAL[2])]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["schema"] == 2 and len(rep["ranks"]) == 2 and rep["delta"]["communication"]["delta_ms"] < 0
    assert trace_main([str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


def test_cli_pipe_to_head_is_quiet() -> None:
    proc = subprocess.run(
        f"{sys.executable} -m eagletui trace --json {REAL[2]} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.stdout.strip() == "{"
    assert "Traceback" not in proc.stderr
