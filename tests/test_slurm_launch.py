"""The Slurm target against a real cluster (tests/conftest_slurm.py: slurmctld + slurmd n1, n2 on
127.0.0.1) with the simulator as the server: launch and benchmark, two nodes merged, a failing node
named, cancel and relaunch, a pending job, ownership, reattach by job id and name."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import time
from pathlib import Path

import pytest

from eagletui.core import events as ev
from eagletui.core.profile.load import load_profile
from eagletui.core.state.launch import PhaseStatus, ServerState
from eagletui.core.timings import FAST
from eagletui.remote.control import LaunchRefused, RunInfo
from eagletui.remote.local import LocalTransport
from eagletui.remote.slurm import SlurmLauncher
from eagletui.remote.transport import NotOurProcess
from eagletui.session.model import SessionModel
from eagletui.workspace import Workspace
from tests.conftest_slurm import SlurmCase, slurm_cluster_fixture, slurm_fixture  # noqa: F401
from tests.sshd import sshd_server_fixture  # noqa: F401

pytestmark = pytest.mark.slow


async def _until(pred, timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@contextlib.asynccontextmanager
async def session(profile_path: Path, *, stop: bool = True):
    """A connected workspace whose events fold into a model (and are kept in ``events``)."""
    prof = load_profile(profile_path)
    model = SessionModel(target="local", profile=prof, learn_history=False)
    events: list[ev.Event] = []
    model.subscribe(events.append)
    ws = Workspace(prof, model.dispatch, target="local", preflight=False, timings=FAST)
    await ws.connect()
    try:
        yield ws, model, events
    finally:
        await ws.close(stop_server=stop)
        model.close()


def _ready(model: SessionModel) -> bool:
    la = model.state.launch
    return la is not None and la.status == ServerState.READY


def _exited(model: SessionModel) -> bool:
    la = model.state.launch
    return la is not None and (la.exit_code is not None or la.exit_signal is not None)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_bench_launch_json_runs_the_simulator_as_a_job(slurm: SlurmCase, capsys) -> None:
    """`eagletui bench local --profile P --launch --json` with [slurm]: a job, its id and final state in
    the JSON, benchmarked, and no job left in squeue; the run dir is private and only node.sh holds
    the secret."""
    from eagletui.commands.bench import main

    prof = slurm.profile(env='HF_TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123"')
    t0 = time.monotonic()
    rc = main(["local", "--profile", str(prof), "--launch", "--json"])
    took = time.monotonic() - t0
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    job = data["job"]
    assert job["id"].isdigit() and job["name"].startswith(f"eagletui-{slurm.slug}-")
    assert job["state"] == "CANCELLED" and job["signal"] == 15  # our scancel ended it
    assert job["nodes"] == ["n1"] or job["nodes"] == ["n2"]
    assert f"job {job['id']} RUNNING on {job['nodes'][0]}" in out.err  # the job's progress on stderr
    assert f"job {job['id']} CANCELLED" in out.err or "stopped" in out.err
    assert data["output_throughput"] > 0 and data["requests"] == 6 and data["failed"] == 0
    assert data["stop"]["ok"] and data["stop"]["ended_by"] == "scancel"
    assert slurm.jobs() == []  # scancel waited until the job had left
    rd = Path(job["run_dir"])
    assert _mode(rd) == 0o700
    for name in ("job.sh", "node.sh", "run.json", "batch.log", "node-0.log", "env.json"):
        assert _mode(rd / name) == 0o600, name
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" in (rd / "node.sh").read_text()
    for name in ("job.sh", "env.json", "run.json", "command.json"):
        assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in (rd / name).read_text(), name
    assert "CANCELLED" in (rd / "job_state.json").read_text()  # recorded before Slurm forgets it
    print(f"SLURM-FIGURES bench_launch_s={took:.2f}")


async def test_two_node_launch_merges_both_logs_and_reaches_ready(slurm: SlurmCase) -> None:
    prof = slurm.profile(nodes=2)
    async with session(prof) as (ws, model, events):
        t0 = time.monotonic()
        await ws.launch()
        await _until(lambda: _ready(model), 90, "the two-node server to be ready")
        ready_s = time.monotonic() - t0
        la = model.state.launch
        assert la is not None and la.job is not None and la.job.nodes == ("n1", "n2")
        assert la.phases["queued"].status == PhaseStatus.DONE and la.queued_seconds is not None
        assert ws.run is not None and ws.run.nodes == ["n1", "n2"] and ws.run.node_addrs == ["127.0.0.1"] * 2
        lines = [e.text for e in events if isinstance(e, ev.LogLine)]
        n1 = [t for t in lines if t.startswith("[n1] ")]
        n2 = [t for t in lines if t.startswith("[n2] ")]
        assert any("TP0]" in t for t in n1) and not any("TP0]" in t for t in n2)
        assert any("TP4]" in t for t in n2) and not any("TP4]" in t for t in n1)  # node 1 runs TP4-7
        assert any("The server is fired up" in t for t in n1)
        assert any("Dummy health check server started" in t for t in n2)
        assert any(t.startswith("[slurm] eagletui: job ") for t in lines)
        assert {n: v.status for n, v in la.nodes.items()} == {"n1": "ready", "n2": "ready"}
        progress = [e for e in events if isinstance(e, ev.NodeProgress) and e.node == "n2"]
        assert {"load_target", "kv_cache"} <= {e.phase for e in progress}
        seqs = [e.seq for e in events if isinstance(e, ev.LogLine)]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # one numbering for the merged log
        result = await ws.benchmark()
        assert result.output_throughput > 0 and not result.error
        run_dir = Path(ws.run.run_dir)
        await ws.stop()
        assert ws.last_stop is not None and ws.last_stop.ended_by == "scancel"
    assert slurm.jobs() == []
    # scancel reached both nodes' servers with SIGTERM. On node 0 the group SIGTERM also kills the
    # schedulers (-15), and which the server logs first is a race, as in SGLang: its own handler's line, or
    # its watchdog's "crashed with exit code -15" and the SIGQUIT teardown (a loaded run saw only the latter)
    node0 = (run_dir / "node-0.log").read_text()
    assert "SIGTERM received. signum=None frame=None" in node0 or "crashed with exit code -15" in node0, node0[-2000:]
    assert "SIGTERM received on node_rank 1" in (run_dir / "node-1.log").read_text()
    print(f"SLURM-FIGURES two_node_ready_s={ready_s:.2f}")


async def test_a_failing_node_is_named_and_the_job_fails(slurm: SlurmCase) -> None:
    prof = slurm.profile(nodes=2, env='EAGLETUI_SIM_FAIL = "oom-load"\nEAGLETUI_SIM_FAIL_NODE = "1"')
    async with session(prof) as (ws, model, events):
        await ws.launch()
        await _until(lambda: _exited(model), 90, "the failed job's exit")
        la = model.state.launch
        assert la is not None and la.failure is not None
        assert la.failure.kind == "oom" and la.failure.node == "n2", la.failure
        assert "out of memory" in la.failure.message.lower()
        assert la.job is not None and la.job.state == "FAILED"
        assert la.nodes["n2"].status == "failed"
        final = [e for e in events if isinstance(e, ev.JobStatus) and e.state == "FAILED"]
        assert final and final[-1].exit_code not in (None, 0)
        # the message every report quotes (runs table, bench JSON, sweep) names the node too
        assert la.failure.message.startswith("node n2: ")
        run = model.runbook.runs[la.launch]
        assert run.failure is not None and "node n2" in run.failure
    assert slurm.jobs() == []


async def test_cancel_and_relaunch_go_through_scancel_and_sbatch(slurm: SlurmCase) -> None:
    prof = slurm.profile()
    async with session(prof) as (ws, model, events):
        await ws.launch()
        await _until(lambda: _ready(model), 90, "the first job to be ready")
        first = ws.run
        assert first is not None
        await ws.launch()  # a relaunch: scancel, wait until it has left, sbatch again
        second = ws.run
        assert second is not None and second.job_id != first.job_id
        stopped = [e for e in events if isinstance(e, ev.ServerStopped)]
        assert stopped and stopped[-1].ended_by == "scancel"
        ids = [j[0] for j in slurm.jobs()]
        assert first.job_id not in ids and second.job_id in ids
        await _until(lambda: _ready(model), 90, "the relaunched job to be ready")
        assert model.state.launch is not None and model.state.launch.launch == 2
    assert slurm.jobs() == []


async def test_a_pending_job_shows_why_and_where_it_waits(slurm: SlurmCase) -> None:
    prof = slurm.profile(partition="nofree")  # its only node is never up
    async with session(prof) as (ws, model, events):
        await ws.launch()
        await _until(
            lambda: any(isinstance(e, ev.JobStatus) and e.state == "PENDING" and e.reason for e in events),
            30,
            "a PENDING job status with a reason",
        )
        la = model.state.launch
        assert la is not None and la.status == ServerState.QUEUED
        assert la.phases["queued"].status == PhaseStatus.ACTIVE
        assert la.phases["launch"].status == PhaseStatus.PENDING
        pending = [e for e in events if isinstance(e, ev.JobStatus) and e.state == "PENDING"][-1]
        assert pending.position == 1
        assert "ReqNodeNotAvail" in pending.reason or "Nodes required" in pending.reason, pending.reason
        assert la.job is not None and la.job.waited(time.time()) > 0
        await ws.stop()
        assert ws.last_stop is not None and ws.last_stop.ended_by == "dequeued"
        assert "before it started" in ws.last_stop.describe()
    assert slurm.jobs() == []


async def test_never_cancels_a_job_it_did_not_submit(slurm: SlurmCase, tmp_path: Path) -> None:
    res = slurm.cluster.run(
        "sbatch",
        "--parsable",
        f"--job-name=eagletui-{slurm.slug}-other",
        "-o",
        "/dev/null",
        "--wrap",
        "sleep 120",
    )
    other = res.stdout.strip().split(";")[0]
    prof = load_profile(slurm.profile())
    launcher = SlurmLauncher(
        LocalTransport(), prof.slurm, runs_dir=str(tmp_path / "runs"), python=prof.python, timings=FAST
    )
    # a record that names another job id, a right id with the wrong name, an unowned run: all refused
    rd = tmp_path / "runs" / "fake"
    rd.mkdir(parents=True)
    (rd / "run.json").write_text(json.dumps({"job_id": "999999", "job_name": "x", "launcher": "slurm"}))
    base = dict(
        run_id="fake", run_dir=str(rd), log_path="", pid=0, pgid=0, start_time="", argv=[], port=0, launch=1
    )
    with pytest.raises(NotOurProcess):
        await launcher.stop(RunInfo(**base, job_id=other, job_name="x", launcher="slurm"))
    (rd / "run.json").write_text(
        json.dumps({"job_id": other, "job_name": "eagletui-x-fake", "launcher": "slurm"})
    )
    with pytest.raises(NotOurProcess, match="now named"):
        await launcher.stop(RunInfo(**base, job_id=other, job_name="eagletui-x-fake", launcher="slurm"))
    with pytest.raises(NotOurProcess):
        await launcher.stop(RunInfo(**base, job_id=other, job_name="x", launcher="slurm", owned=False))
    assert [j[0] for j in slurm.jobs("RUNNING,PENDING")] == [other]  # still there
    slurm.cluster.run("scancel", other)


async def test_a_second_submit_of_the_profile_is_refused_while_its_job_runs(slurm: SlurmCase) -> None:
    prof = load_profile(slurm.profile())
    a = SlurmLauncher(LocalTransport(), prof.slurm, runs_dir=prof.runs_dir, python=prof.python, timings=FAST)
    b = SlurmLauncher(LocalTransport(), prof.slurm, runs_dir=prof.runs_dir, python=prof.python, timings=FAST)
    run = await a.launch(prof, launch=1)
    try:
        with pytest.raises(LaunchRefused, match=f"job {run.job_id}"):
            await b.launch(prof, launch=1)
        # another sweep slot is another job
        c = SlurmLauncher(LocalTransport(), prof.slurm, runs_dir=prof.runs_dir, python=prof.python, slot=1, timings=FAST)
        other = await c.launch(prof, launch=1)
        await c.stop(other)
    finally:
        await a.stop(run)
    assert slurm.jobs() == []


async def test_reattach_finds_the_job_by_id_and_name(slurm: SlurmCase) -> None:
    prof = slurm.profile()
    async with session(prof, stop=False) as (ws, model, _events):
        await ws.launch()
        await _until(lambda: _ready(model), 90, "ready")
        job_id = ws.run.job_id if ws.run else ""
    assert [j[0] for j in slurm.jobs()] == [job_id]  # quitting left the job running
    async with session(prof) as (ws, model, events):
        assert await ws.attach_newest()
        assert ws.run is not None and ws.run.job_id == job_id and not ws.run.launched_here
        await _until(
            lambda: any(isinstance(e, ev.JobStatus) and e.state == "RUNNING" for e in events), 30, "RUNNING"
        )
        await _until(lambda: _ready(model), 30, "the reattached log to reach ready")
        assert await ws.needs_consent()  # not launched in this session: stopping it asks first
        ws.consent_given()
        await ws.stop()
    assert slurm.jobs() == []


async def test_a_job_ended_by_slurm_after_ready_is_a_failure(slurm: SlurmCase) -> None:
    """The log says ready, the job ends FAILED (a scheduler died): a failure, never a pass."""
    prof = slurm.profile(env='EAGLETUI_SIM_FAIL = "crash-after-ready"\nEAGLETUI_SIM_FAIL_DELAY = "1"')
    async with session(prof) as (ws, model, events):
        await ws.launch()
        await _until(lambda: _ready(model), 90, "ready")
        await _until(lambda: _exited(model), 60, "exit")
        la = model.state.launch
        assert la.status == ServerState.FAILED and la.failure is not None
        assert la.job is not None and la.job.state == "FAILED"
    assert slurm.jobs() == []


def test_slurm_forgets_but_eagletui_remembers(slurm: SlurmCase, tmp_path: Path) -> None:
    """Without accounting Slurm forgets a finished job after MinJobAge: the recorded state answers."""
    from eagletui.remote import hostslurmjob

    rd = tmp_path / "rd"
    rd.mkdir()
    os.environ["SLURM_CONF"] = slurm.conf
    try:
        assert hostslurmjob.job_state(str(rd), "987654", slurm.conf) == {
            "state": "gone",
            "job": None,
            "nodes": [],
        }
        (rd / "batch.log").write_text(
            "slurmstepd-n1: error: *** JOB 987654 ON n1 CANCELLED AT 2026-12-01T11:57:33 DUE TO TIME LIMIT ***\n"
        )
        out = hostslurmjob.job_state(str(rd), "987654", slurm.conf)
        assert (
            out["state"] == "gone"
            and out["job"]["state"] == "TIMEOUT"
            and out["job"]["source"] == "batch log"
        )
        (rd / "job_state.json").write_text(json.dumps({"job_id": "987654", "state": "NODE_FAIL"}))
        out = hostslurmjob.job_state(str(rd), "987654", slurm.conf)
        assert out["job"]["state"] == "NODE_FAIL" and out["job"]["source"] == "recorded"
    finally:
        os.environ.pop("SLURM_CONF", None)


async def test_a_slow_node_is_named_the_straggler(slurm: SlurmCase) -> None:
    prof = slurm.profile(nodes=2, env='EAGLETUI_SIM_NODE_SLOW = "1:6"', scale="0.01")
    async with session(prof) as (ws, model, events):
        await ws.launch()
        seen: list[tuple[str, str, float]] = []

        def lagging() -> bool:
            la = model.state.launch
            lag = la.straggler(time.time()) if la is not None else None
            if lag is not None and lag[2] >= 1.0:
                seen.append(lag)
            return bool(seen) or _ready(model)

        await _until(lagging, 120, "a straggler or ready")
        assert seen and seen[0][0] == "n2", seen  # node 1 (n2) is six times slower
        await _until(lambda: _ready(model), 120, "ready")
        await ws.stop()
    assert slurm.jobs() == []


async def test_the_preflight_asks_slurm_not_the_login_nodes_gpus(slurm: SlurmCase) -> None:
    async with session(slurm.profile(nodes=2)) as (ws, _model, _events):
        checks = await ws.control.adapt_preflight([])
        by = {c.name: c for c in checks}
        assert by["slurm"].status == "pass" and "partition debug: 2 node(s)" in by["slurm"].message
    async with session(slurm.profile(nodes=3)) as (ws, _model, _events):
        by = {c.name: c for c in await ws.control.adapt_preflight([])}
        assert by["slurm"].status == "fail" and "asks for 3 nodes" in by["slurm"].message
    async with session(slurm.profile(partition="nosuch")) as (ws, _model, _events):
        by = {c.name: c for c in await ws.control.adapt_preflight([])}
        assert by["slurm"].status == "fail" and "does not exist" in by["slurm"].message
        # and if it were submitted all the same, Slurm's refusal is the launch's error
        from eagletui.remote.control import LaunchError

        with pytest.raises(LaunchError, match="Slurm did not take the job: .*invalid partition"):
            await ws.launch()
    assert slurm.jobs() == []


@pytest.mark.sshd
def test_bench_through_the_login_node_over_ssh(slurm: SlurmCase, capsys, sshd_server) -> None:
    """The login node reached over SSH: sbatch there, the benchmark through the SSH tunnel to the head
    node's address as Slurm reports it, scancel there."""
    from eagletui.commands.bench import main

    prof = slurm.profile(nodes=2)
    ssh = ["--ssh-config", str(sshd_server.config_file), "--known-hosts", str(sshd_server.known_hosts)]
    rc = main([sshd_server.alias, "--profile", str(prof), "--launch", "--json", *ssh])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    assert data["job"]["nodes"] == ["n1", "n2"] and data["job"]["state"] == "CANCELLED"
    assert data["requests"] == 6 and data["failed"] == 0 and data["output_throughput"] > 0
    assert slurm.jobs() == []


async def test_a_submit_whose_answer_was_lost_is_found_not_submitted_again(slurm: SlurmCase) -> None:
    """sbatch ran on the login node but the answer never came back (the link dropped): the launcher asks
    what became of the run and follows its job; nothing is submitted twice."""
    from eagletui.remote.transport import ConnectionLost

    class LosesTheSubmitAnswer(LocalTransport):
        async def run(self, argv, *, timeout=30, input=None):
            res = await super().run(argv, timeout=timeout, input=input)
            if isinstance(argv, list) and "slurm_submit" in argv:
                raise ConnectionLost("the link dropped before the answer")
            return res

    prof = load_profile(slurm.profile())
    launcher = SlurmLauncher(LosesTheSubmitAnswer(), prof.slurm, runs_dir=prof.runs_dir, python=prof.python, timings=FAST)
    run = await launcher.launch(prof, launch=1)
    try:
        assert run.job_id and run.launched_here
        assert [j[0] for j in slurm.jobs()] == [run.job_id]  # one job, the one that was lost
    finally:
        await launcher.stop(run)
    assert slurm.jobs() == []
