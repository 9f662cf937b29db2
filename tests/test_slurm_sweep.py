"""Sweeps on the emulated Slurm cluster: the variants are jobs, ``slurm.max_parallel`` of them run at
once, and a sweep whose client was SIGKILLed resumes by following the very jobs that run its
variants (by run id, hence job id and name), launching nothing twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagletui.commands.sweep import main
from tests.conftest_slurm import SlurmCase, slurm_cluster_fixture, slurm_fixture  # noqa: F401

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]

SWEEP = """
[[toggles]]
env = "NCCL_ALGO"
choices = ["Ring", "Tree"]
[sweep]
repeats = {repeats}
[[sweep.variants]]
name = "ring"
set = {{ NCCL_ALGO = "Ring" }}
[[sweep.variants]]
name = "tree"
set = {{ NCCL_ALGO = "Tree" }}
"""


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    d = tmp_path / "data"
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(d))
    monkeypatch.setenv("EAGLETUI_CONFIG_DIR", str(tmp_path / "config"))
    return d


def _queue(data_dir: Path) -> dict:
    files = list((data_dir / "sweeps").glob("*.json"))
    try:
        return json.loads(files[0].read_text()) if files else {}
    except ValueError:
        return {}


def _job_ids(tmp: Path) -> dict[str, str]:
    """run id → job id, from every run dir's record."""
    out = {}
    for rd in (tmp / "runs").iterdir():
        if rd.is_dir() and not rd.name.startswith("."):
            rec = json.loads((rd / "run.json").read_text())
            out[rec["run_id"]] = rec.get("job_id", "")
    return out


def _start_sweep(prof: Path) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "eagletui",
        "sweep",
        "local",
        "--profile",
        str(prof),
        "--json",
        "--no-preflight",
    ]
    return subprocess.Popen(
        cmd, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


def _overlap(slurm: SlurmCase, proc: subprocess.Popen, timeout: float = 90) -> list[tuple[str, str, str]]:
    """Until two of the test's jobs are RUNNING at the same moment (squeue), or the sweep ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        running = [j for j in slurm.jobs() if j[1] == "RUNNING"]
        if len(running) >= 2:
            return running
        time.sleep(0.1)
    err = proc.stderr.read().decode()[-3000:] if proc.poll() is not None and proc.stderr else ""
    raise AssertionError(f"never two jobs running at once: {slurm.jobs()} {err}")


def test_a_two_variant_sweep_runs_both_jobs_at_once(slurm: SlurmCase, data_dir: Path) -> None:
    prof = slurm.profile(slurm="max_parallel = 2", extra=SWEEP.format(repeats=2), scale="0.01")
    proc = _start_sweep(prof)
    try:
        running = _overlap(slurm, proc)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert proc.returncode == 0, err.decode()[-3000:]
    report = json.loads(out)
    rows = report["variants"]
    assert [r["state"] for r in rows] == ["done", "done"]
    assert all(r["tok_s"] and len(r["repeats"]) == 2 for r in rows)
    assert {r["host"] for r in rows} == {"local job slot 1", "local job slot 2"}  # one variant per slot
    assert set(report["ranking"]) == {"ring", "tree"}
    assert len({j[0] for j in running}) == 2
    jobs = _job_ids(slurm.tmp)
    assert {r["run_id"] for r in rows} == set(jobs) and all(jobs.values())
    assert slurm.jobs() == []  # the sweep stopped both jobs at its end


def test_resume_after_the_client_is_killed_follows_the_running_jobs(
    slurm: SlurmCase, data_dir: Path, capsys
) -> None:
    prof = slurm.profile(slurm="max_parallel = 2", extra=SWEEP.format(repeats=2), scale="0.01")
    proc = _start_sweep(prof)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            vs = _queue(data_dir).get("variants", [])
            if len(vs) == 2 and all(
                v.get("run_id") and v.get("state") in ("launching", "benchmarking") for v in vs
            ):
                break
            time.sleep(0.02)
        else:
            pytest.fail(f"both variants never in flight: {_queue(data_dir)}")
        os.killpg(proc.pid, signal.SIGKILL)  # the client dies; its jobs do not
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    before = _queue(data_dir)
    runs_before = {v["name"]: v["run_id"] for v in before["variants"]}
    jobs_before = _job_ids(slurm.tmp)
    alive = {j[0] for j in slurm.jobs()}
    assert alive and alive <= set(jobs_before.values())  # the jobs outlived the client

    rc = main(["local", "--profile", str(prof), "--json", "--no-preflight", "--resume"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    rows = json.loads(out.out)["variants"]
    assert [r["state"] for r in rows] == ["done", "done"]
    assert {r["name"]: r["run_id"] for r in rows} == runs_before  # the same runs, followed
    assert [r["launches"] for r in rows] == [1, 1]  # nothing submitted twice
    assert _job_ids(slurm.tmp) == jobs_before  # no new job: the resume found them by id
    assert all(len(r["repeats"]) == 2 for r in rows)
    assert "following its running server" in out.err
    assert slurm.jobs() == []
