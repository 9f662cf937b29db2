"""Every script in ``benchmarks/`` must keep running (issue 20 item 10): each has a short mode that CI
runs, and the simulator accepts the server flags the client-accuracy benchmark launches it with."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 9


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_benchmark_has_a_short_mode(script: Path):
    out = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert "--quick" in out.stdout, f"{script.name} has no --quick short mode"


def test_ci_runs_every_benchmark_in_its_short_mode():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "benchmarks/*.py" in ci and "--quick" in ci, "CI does not run the benchmarks"


def test_the_simulator_accepts_the_client_accuracy_benchmark_flags():
    """sglang 0.5.23's parser (the simulator's) refuses --cuda-graph-max-bs as ambiguous."""
    from eagletui.sim.cli import parse_args

    mod = _load(ROOT / "benchmarks" / "bench_client_accuracy.py")
    argv = mod.sim_argv(1234, 10.0, 32)
    i = argv.index("eagletui.sim")
    args = parse_args(argv[i + 1 :])  # SystemExit(2) on an ambiguous or unknown flag
    assert args.max_running_requests == 32


def test_a_short_benchmark_ends_on_a_json_line():
    """One cheap script end to end in its short mode, switched on by the environment as CI may."""
    env = {**os.environ, "EAGLETUI_BENCH_QUICK": "1"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "trace_summary.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last["trace_mb"] < 20  # the short mode, not the 520 MB default
