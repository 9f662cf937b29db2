"""ETA history: keys from config snapshots, median/p95 estimates, and the JSONL store."""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

import pytest

from eagletui.core.phases.history import NO_ESTIMATE, PhaseHistory, history_key

SNAP = {
    "target": "box",
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "tp": 2,
    "args": {"--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3, "--cuda-graph-max-bs": 48},
    "env": {"NCCL_ALGO": "Tree"},
}


def test_key_normalises_and_ignores_irrelevant_settings() -> None:
    k = history_key(SNAP)
    same = dict(SNAP, env={"NCCL_ALGO": "Ring"}, args={**SNAP["args"], "--log-level": "debug"})
    assert history_key(same) == k  # env and non-key flags do not split the history
    spelled = dict(
        SNAP,
        args={"speculative_algorithm": "EAGLE3", "speculative-num-steps": "3", "cuda_graph_max_bs": 48.0},
    )
    assert history_key(spelled) == k
    assert history_key(dict(SNAP, args={**SNAP["args"], "--speculative-num-steps": 5})) != k
    assert history_key(dict(SNAP, tp=4)) != k
    assert history_key(dict(SNAP, target="other")) != k
    assert history_key(dict(SNAP, args={**SNAP["args"], "--disable-cuda-graph": True})) != k
    assert history_key(dict(SNAP, args={**SNAP["args"], "--disable-cuda-graph": False})) == k
    # the simulator's hardware preset and clock split it (an H200 preset's times are not a PCIe one's)
    pcie = dict(SNAP, args={**SNAP["args"], "--sim-host": "pcie-rtx6000", "--sim-time-scale": 0.004})
    assert history_key(pcie) != k
    assert history_key(dict(pcie, args={**pcie["args"], "--sim-host": "h200-nvlink"})) != history_key(pcie)
    assert history_key(dict(pcie, args={**pcie["args"], "--sim-time-scale": 0.02})) != history_key(pcie)
    # tp falls back to the args when the snapshot has none
    assert history_key({"args": {"--tp-size": 2}}) == history_key({"tp": 2})


def test_first_launch_has_no_estimate() -> None:
    h = PhaseHistory()
    k = history_key(SNAP)
    assert h.estimate(k, "load_target") is None and h.p95(k, "load_target") is None
    assert h.describe(k, "load_target") == NO_ESTIMATE


def test_median_and_p95() -> None:
    h = PhaseHistory()
    k = history_key(SNAP)
    for secs in (10, 12, 11, 100, 13):
        h.record(k, {"load_target": secs, "warmup": 2.0})
    assert h.estimate(k, "load_target") == 12
    assert h.p95(k, "load_target") == pytest.approx(82.6)
    assert h.estimate_total(k, ["load_target", "warmup"]) == 14
    assert h.estimate_total(k, ["load_target", "capture_draft"]) is None
    assert h.describe(k, "load_target").startswith("~12s (p95 1m23s, 5 launches)")


def test_bad_durations_are_dropped() -> None:
    h = PhaseHistory()
    h.record("k", {"a": -1, "b": math.nan, "c": "5", "d": True, "e": 3.5})
    assert h.samples("k", "e") == [3.5]
    assert all(h.samples("k", p) == [] for p in "abcd")


def test_store_round_trip_and_damage(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "history.jsonl"
    h = PhaseHistory(path)
    k = history_key(SNAP)
    h.record(k, {"load_target": 30.0})
    h.record(k, {"load_target": 40.0})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with path.open("a") as fh:
        fh.write('not json\n{"key": 1, "phases": {}}\n{"key": "k", "phases": {"x"')
    loaded = PhaseHistory.load(path)
    assert loaded.samples(k, "load_target") == [30.0, 40.0]
    assert loaded.estimate(k, "load_target") == 35.0
    assert len(loaded.warnings) == 3 and loaded.warnings[0].startswith(f"{path}:3:")
    assert PhaseHistory.load(tmp_path / "missing.jsonl").warnings == []


def test_unwritable_store_is_a_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    h = PhaseHistory(blocker / "history.jsonl")  # parent is a file: cannot create
    h.record("k", {"a": 1.0})
    assert h.estimate("k", "a") == 1.0 and len(h.warnings) == 1
