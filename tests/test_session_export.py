"""CSV and Markdown exports computed straight from events."""

from __future__ import annotations

import csv
from pathlib import Path

from eagletui.core import events as ev
from eagletui.session.export import export_markdown, export_runs_csv, summarize_runs


def _session() -> list[ev.Event]:
    t = 1_700_000_000.0
    cfg = {
        "target": "box",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "tp": 2,
        "args": {"--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3, "--enable-foo": True},
        "env": {"NCCL_ALGO": "Tree", "HF_TOKEN": "***"},
    }
    return [
        ev.LaunchStarted(launch=1, target="box", config=cfg, wall=t, mono=0.0),
        ev.PhaseStarted(phase="load_target", launch=1, wall=t + 1, mono=1.0),
        ev.PhaseFinished(phase="load_target", launch=1, wall=t + 31, mono=31.0),  # seconds computed
        ev.PhaseFinished(phase="capture_target", seconds=12.5, launch=1, wall=t + 44, mono=44.0),
        ev.ServerReady(url="http://x", launch=1, wall=t + 50, mono=50.0),
        ev.BenchmarkResult(
            bench=1,
            launch=1,
            output_throughput=1234.5,
            accept_length=3.21,
            requests=64,
            duration_s=30.0,
            stats={"ttft_ms": {"median": 45.0}, "itl_ms": {"median": 7.5}},
            wall=t + 90,
            mono=90.0,
        ),
        ev.ConfigChanged(changes={"arg:--speculative-num-steps": [3, 5]}, wall=t + 100, mono=100.0),
        ev.LaunchStarted(
            launch=2,
            target="box",
            config=cfg | {"args": {"--speculative-num-steps": 5}},
            diff={"arg:--speculative-num-steps": [3, 5]},
            wall=t + 110,
            mono=110.0,
        ),
        ev.ServerFailed(kind="oom", message="CUDA out of memory | big", launch=2, wall=t + 140, mono=140.0),
    ]


def test_summaries() -> None:
    runs = summarize_runs(_session())
    assert [r.launch for r in runs] == [1, 2]
    assert runs[0].phases == {"load_target": 30.0, "capture_target": 12.5}
    assert runs[0].ready_after == 50.0 and runs[0].outcome == "ready"
    assert runs[1].outcome == "failed" and runs[1].failure.startswith("oom")


def test_csv(tmp_path: Path) -> None:
    p = tmp_path / "runs.csv"
    assert export_runs_csv(_session(), p) == 2
    rows = list(csv.DictReader(p.open()))
    assert rows[0]["output_throughput"] == "1234.5"
    assert rows[0]["ttft_median_ms"] == "45.0"
    assert rows[0]["load_target_s"] == "30.0"
    assert rows[0]["--speculative-algorithm"] == "EAGLE3"
    assert rows[1]["--speculative-num-steps"] == "5"
    assert rows[1]["outcome"] == "failed" and rows[1]["output_throughput"] == ""
    assert "speculative-num-steps 3→5" in rows[1]["changes"]


def test_csv_neutralises_formulas(tmp_path: Path) -> None:
    p = tmp_path / "runs.csv"
    export_runs_csv([ev.LaunchStarted(launch=1, target="=HYPERLINK(1)")], p)
    assert next(csv.DictReader(p.open()))["target"] == "'=HYPERLINK(1)"


def test_markdown() -> None:
    md = export_markdown(_session())
    assert md.startswith("# eagletui session")
    assert "## Launch 1 on `box`" in md and "## Launch 2" in md
    assert "| load_target | 30.0 |" in md
    assert "1234.5" in md and "3.21" in md
    assert "CUDA out of memory \\| big" in md  # pipes escaped: the table stays a table
    assert "NCCL_ALGO=Tree" in md


def test_markdown_empty() -> None:
    assert "No launches recorded." in export_markdown([])
