"""The GPU gate between a sweep's launches, on the real simulator whose memory outlives it.

The simulator (``EAGLETUI_SIM_GPU_DIR``, ``--sim-gpu-release-s``) keeps holding its simulated GPU memory
for a while after it exits and makes a server that starts meanwhile run out of memory while loading;
a stand-in ``nvidia-smi`` on PATH reads that state. What is tested is eagletui's own gate — its
nvidia-smi queries over the local transport, its wait, its OOM retry and its pause — not the stand-in.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagletui.commands.demo import free_port
from eagletui.commands.sweep import main
from eagletui.sim import gpumem
from tests.conftest_sim import sim_profile_toml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

REST = """[server.env]
NCCL_ALGO = "Ring"
[[toggles]]
env = "NCCL_ALGO"
choices = ["Ring", "Tree"]
[bench]
num_prompts = 4
concurrency = 2
max_new_tokens = 24
warmup = 0
[sweep]
repeats = 1
gpu_wait_s = {wait}
[[sweep.variants]]
name = "ring"
[[sweep.variants]]
name = "tree"
set = { NCCL_ALGO = "Tree" }
"""


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("EAGLETUI_CONFIG_DIR", str(tmp_path / "config"))
    gpus = tmp_path / "gpus"
    gpus.mkdir()
    monkeypatch.setenv(gpumem.ENV_DIR, str(gpus))
    return tmp_path


def fake_smi(tmp_path: Path, monkeypatch) -> None:
    """``nvidia-smi`` on PATH answering from the simulator's GPU state."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m eagletui.sim.nvidia_smi "$@"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def _profile(tmp_path: Path, wait: float, release: float = 3.0) -> str:
    return sim_profile_toml(
        tmp_path,
        free_port(),
        name="gputest",
        filename="gpu.toml",
        args=f"sim-gpu-release-s = {release}",
        rest=REST.replace("{wait}", str(wait)),
    )


def _load_begin_avail(tmp_path: Path) -> list[float]:
    """Per launch (in order), the free memory rank 0 saw when it began loading weights."""
    out = []
    logs = sorted((tmp_path / "runs").glob("*/server.log"), key=lambda p: p.stat().st_mtime)
    for log in logs:
        m = re.search(r"Load weight begin\. avail mem=([\d.]+) GB", log.read_text(errors="replace"))
        assert m, f"{log}: no Load weight begin line"
        out.append(float(m.group(1)))
    return out


def test_a_launch_waits_until_the_previous_servers_memory_is_released(dirs, monkeypatch, capsys):
    fake_smi(dirs, monkeypatch)
    rc = main(["local", "--profile", _profile(dirs, wait=60), "--json", "--no-preflight"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    rows = json.loads(out.out)["variants"]
    assert [r["state"] for r in rows] == ["done", "done"] and [r["launches"] for r in rows] == [1, 1]
    gate = rows[1]["gpu_gate"]
    # the stop returned while the simulated driver still held the memory: the gate waited for it
    assert gate["status"] == "clean" and gate["waited_s"] >= 1.0, gate
    assert "GPU memory released after" in out.err
    assert rows[1]["oom_retry"] is None
    # and the second server saw every byte its predecessor had used: nothing was held when it loaded
    first, second = _load_begin_avail(dirs)
    assert abs(first - second) < 0.2, (first, second)


def test_without_telemetry_the_held_memory_ooms_and_is_retried_once(dirs, capsys, monkeypatch):
    # no nvidia-smi on PATH: the gate cannot see the release, the second launch runs out of memory
    # while loading (the simulator still holds its predecessor's), eagletui launches it once more after
    # min(gpu_wait_s, sweep.oom_settle_s) = 9 s. The margins hold on a busy machine: the second launch
    # reaches its weights within 6 s of the stop (about 1.5 s when idle), the retry comes after 9 s.
    monkeypatch.setenv("EAGLETUI_TIMINGS", "fast,sweep.oom_settle_s=9")
    rc = main(["local", "--profile", _profile(dirs, wait=20, release=6), "--json", "--no-preflight"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    rows = json.loads(out.out)["variants"]
    assert rows[1]["state"] == "done" and rows[1]["launches"] == 2
    assert "ran out of GPU memory while other processes still held" in rows[1]["oom_retry"]
    assert rows[1]["gpu_gate"]["status"] == "unknown"
    assert rows[0]["launches"] == 1 and rows[0]["oom_retry"] is None
    assert "launching once more" in out.err


def _queue(data: Path) -> dict:
    files = list((data / "sweeps").glob("*.json"))
    try:
        return json.loads(files[0].read_text()) if files else {}
    except ValueError:
        return {}


def _pause_on_a_held_gpu(dirs: Path, monkeypatch) -> tuple[str, subprocess.Popen, str, str]:
    """Run a sweep until its gate pauses it: someone else's job takes 40 GB of GPU 2 while the first
    variant benchmarks. (profile, the holder, the sweep's stdout, its stderr)."""
    fake_smi(dirs, monkeypatch)
    prof = _profile(dirs, wait=2, release=0.5)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "eagletui", "sweep", "local", "--profile", prof, "--json", "--no-preflight"]
    sweep = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    holder = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and sweep.poll() is None:
            if _queue(dirs / "data").get("variants", [{}])[0].get("state") == "benchmarking":
                break
            time.sleep(0.05)
        holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        gpumem.Lease.open(
            Path(os.environ[gpumem.ENV_DIR]),
            [(holder.pid, "python3 train.py", 2)],
            release_s=0,
            owner=holder.pid,
        ).use(2, 40.0)
        out, err = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait(timeout=30)
    assert sweep.returncode == 1, err
    return prof, holder, out, err


def _server_runs(dirs: Path) -> list[Path]:
    return [p for p in (dirs / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]


def test_memory_that_is_never_released_pauses_the_sweep_and_names_the_holder(dirs, monkeypatch, capsys):
    prof, holder, out, err = _pause_on_a_held_gpu(dirs, monkeypatch)
    report = json.loads(out)
    assert [r["state"] for r in report["variants"]] == ["done", "pending"]
    assert f"pid {holder.pid} python3 train.py" in report["paused"] and "GPU 2" in report["paused"]
    assert "the sweep is paused" in err
    assert len(_server_runs(dirs)) == 1  # the second server was never started on the held GPU

    holder.kill()
    holder.wait(timeout=30)
    rc = main(["local", "--profile", prof, "--json", "--no-preflight", "--resume"])
    res = capsys.readouterr()
    assert rc == 0, res.err
    rows = json.loads(res.out)["variants"]
    assert [r["state"] for r in rows] == ["done", "done"] and rows[1]["launches"] == 1


@pytest.mark.parametrize("kept", [True, False], ids=["reading-kept", "no-reading-kept"])
def test_a_resume_on_a_gpu_still_held_waits_and_pauses_again(dirs, monkeypatch, capsys, kept):
    """``sweep --resume`` reads the GPUs before its launch like the gate mid-sweep: the holder is still
    there, so it waits, pauses again naming it and launches nothing (issue 33 item 3). Without the
    reading from before the pause (an older queue) every process's memory must be gone."""
    prof, holder, _out, _err = _pause_on_a_held_gpu(dirs, monkeypatch)
    try:
        if not kept:
            qfile = next((dirs / "data" / "sweeps").glob("*.json"))
            data = json.loads(qfile.read_text())
            data.pop("gpu_reference", None)
            qfile.write_text(json.dumps(data))
        rc = main(["local", "--profile", prof, "--json", "--no-preflight", "--resume"])
        res = capsys.readouterr()
        assert rc == 1, res.err
        report = json.loads(res.out)
        assert [r["state"] for r in report["variants"]] == ["done", "pending"]
        assert f"pid {holder.pid} python3 train.py" in report["paused"] and "GPU 2" in report["paused"]
        assert len(_server_runs(dirs)) == 1  # nothing was launched on the held GPU
    finally:
        holder.kill()
        holder.wait(timeout=30)
