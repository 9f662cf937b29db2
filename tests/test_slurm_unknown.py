"""Slurm: unknown is never dead, and one job per profile by the scheduler's word (issue 33 item 2).

Against the real cluster (tests/conftest_slurm.py) with the simulator as the server. The hostile
scheduler is Slurm's own commands behind a wrapper on PATH that answers ``scontrol show job`` with
"Invalid job id" (what a restarted slurmctld or a federation answers for a job that runs), and, for
the last case, an ``squeue`` that lists nothing: the job's server still answers ``/health``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from eagletui.core import events as ev
from eagletui.core.profile.load import load_profile
from eagletui.core.timings import FAST
from eagletui.remote.control import LaunchRefused, Liveness
from eagletui.remote.local import LocalTransport
from eagletui.remote.slurm import SlurmLauncher
from tests.conftest_slurm import SlurmCase, slurm_cluster_fixture, slurm_fixture  # noqa: F401
from tests.test_slurm_launch import _ready, _until, session

pytestmark = pytest.mark.slow

SCONTROL = shutil.which("scontrol") or "/usr/bin/scontrol"
SQUEUE = shutil.which("squeue") or "/usr/bin/squeue"


def hostile_scheduler(where: Path, *, squeue_lists_nothing: bool = False) -> str:
    """A PATH entry whose ``scontrol show job`` says "Invalid job id" (the rest is the real command)."""
    where.mkdir(exist_ok=True)
    sc = where / "scontrol"
    sc.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = show ] && [ "$2" = job ]; then\n'
        '  echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1\n'
        "fi\n"
        f'exec {SCONTROL} "$@"\n'
    )
    sc.chmod(0o755)
    sq = where / "squeue"
    if squeue_lists_nothing:
        sq.write_text('#!/bin/sh\ncase "$*" in *" -u "*) exit 0;; esac\nexec ' + SQUEUE + ' "$@"\n')
        sq.chmod(0o755)
    elif sq.exists():
        sq.unlink()
    return str(where)


async def test_one_invalid_job_id_is_not_death_and_relaunch_keeps_one_job(
    slurm: SlurmCase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prof = slurm.profile()
    async with session(prof) as (ws, model, events):
        await ws.launch()
        await _until(lambda: _ready(model), 90, "the job to be ready")
        job = ws.run.job_id if ws.run else ""
        bin_dir = tmp_path / "bin"
        monkeypatch.setenv("PATH", hostile_scheduler(bin_dir) + ":" + __import__("os").environ["PATH"])
        assert ws.control is not None and ws.run is not None
        # squeue still lists it: Slurm knows the job after all, it is alive
        assert await ws.control.liveness(ws.run) is Liveness.ALIVE
        await asyncio.sleep(2.0)  # four polls of the watcher, each answered "Invalid job id"
        assert not [e for e in events if isinstance(e, ev.ProcessExited)]
        # neither scontrol nor squeue knows it, but its server answers /health: unknown, not dead
        hostile_scheduler(bin_dir, squeue_lists_nothing=True)
        assert await ws.control.liveness(ws.run) is Liveness.UNKNOWN
        assert "answers /health" in ws.control.last_check_detail
        await asyncio.sleep(1.5)
        assert not [e for e in events if isinstance(e, ev.ProcessExited)]
        # `r` now: the stop cannot tell, so nothing is submitted beside the running job
        with pytest.raises(Exception, match="cannot tell"):
            await ws.launch()
        assert [j[0] for j in slurm.jobs()] == [job]
        # with squeue back, `r` cancels the job and submits one: never two at once
        hostile_scheduler(bin_dir)
        await ws.launch()
        assert ws.run is not None and ws.run.job_id != job
        assert [j[0] for j in slurm.jobs()] == [ws.run.job_id]
    assert slurm.jobs() == []


async def test_the_one_job_guard_reads_the_scheduler_not_a_record(slurm: SlurmCase, tmp_path: Path) -> None:
    """Two sessions of one profile with different runs dirs (a record each): Slurm's queue decides."""
    prof = load_profile(slurm.profile())
    a = SlurmLauncher(LocalTransport(), prof.slurm, runs_dir=str(tmp_path / "a"), python=prof.python, timings=FAST)
    b = SlurmLauncher(LocalTransport(), prof.slurm, runs_dir=str(tmp_path / "b"), python=prof.python, timings=FAST)
    prof_a = load_profile(slurm.profile())
    prof_a.runs_dir = str(tmp_path / "a")
    prof_b = load_profile(slurm.profile())
    prof_b.runs_dir = str(tmp_path / "b")
    run = await a.launch(prof_a, launch=1)
    try:
        with pytest.raises(LaunchRefused, match=f"job {run.job_id}"):
            await b.launch(prof_b, launch=1)
        assert [j[0] for j in slurm.jobs()] == [run.job_id]
    finally:
        await a.stop(run)
    assert slurm.jobs() == []


def test_bench_launch_obeys_the_guard(slurm: SlurmCase, tmp_path: Path, capsys) -> None:
    from eagletui.commands.bench import main

    prof = slurm.profile()
    other = load_profile(prof)
    other.runs_dir = str(tmp_path / "elsewhere")
    launcher = SlurmLauncher(LocalTransport(), other.slurm, runs_dir=other.runs_dir, python=other.python, timings=FAST)
    run = asyncio.run(launcher.launch(other, launch=1))
    try:
        rc = main(["local", "--profile", str(prof), "--launch", "--json"])
        out = capsys.readouterr()
        assert rc != 0
        assert f"job {run.job_id}" in out.err or f"job {run.job_id}" in json.dumps(json.loads(out.out))
        assert [j[0] for j in slurm.jobs()] == [run.job_id]  # no second job
    finally:
        asyncio.run(launcher.stop(run))
    assert slurm.jobs() == []
