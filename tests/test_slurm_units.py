"""The Slurm target's parts that need no cluster: the [slurm] section, the two scripts, the host side's
parsing of Slurm's answers, the fold of job and node events, and the job source's routing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagletui.core import events as ev
from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.model import ProfileError
from eagletui.core.profile.slurm import SlurmSettings
from eagletui.core.profile.slurm_script import ScriptError, batch_script, job_name, node_script
from eagletui.core.state.launch import PhaseStatus, ServerState
from eagletui.core.state.screen import SessionState
from eagletui.core.timings import FAST
from eagletui.remote import hostslurmjob

BASE = """
name = "p"
[server]
command = ["python3", "-m", "sglang.launch_server"]
[server.args]
model-path = "m"
tp = 8
"""

# scontrol show job -o output of the emulated cluster (22.05.8), kept verbatim but for the paths
JOB_LINE = (
    "JobId=4 JobName=eagletui-p-20261201-L1-abc UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901756 Nice=0 Account=(null) QOS=(null) JobState=PENDING "
    "Reason=ReqNodeNotAvail,_UnavailableNodes:n3 Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:10:00 TimeMin=N/A SubmitTime=2026-12-01T11:56:17 "
    "Partition=nofree AllocNode:Sid=localhost:1996 ReqNodeList=(null) ExcNodeList=(null) NodeList=(null) "
    "NumNodes=1 NumCPUs=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 "
    "Command=/tmp/run dir/job.sh WorkDir=/tmp/run dir StdErr=/tmp/run dir/batch.log Power="
)


# ------------------------------------------------------------------------------ [slurm]


def test_a_full_slurm_section_parses() -> None:
    prof = parse_profile(
        BASE
        + """
[slurm]
partition = "gpu"
nodes = 2
gpus_per_node = 8
time = "1-02:00:00"
account = "proj42"
qos = "high"
sbatch_options = ["--exclusive", "--constraint=h200"]
srun_options = ["--mpi=none"]
container_image = "/shared/sglang.sqsh"
container_mounts = ["/models:/models", "/data:/data"]
max_parallel = 2
"""
    )
    s = prof.slurm
    assert isinstance(s, SlurmSettings) and s.multi_node
    assert s.sbatch_lines() == [
        "--partition=gpu",
        "--time=1-02:00:00",
        "--account=proj42",
        "--qos=high",
        "--gpus-per-node=8",
        "--exclusive",
        "--constraint=h200",
    ]
    assert s.srun_args() == [
        "--mpi=none",
        "--container-image=/shared/sglang.sqsh",
        "--container-mounts=/models:/models,/data:/data",
    ]
    assert prof.snapshot()["slurm"]["nodes"] == 2  # a run records its job's request
    assert "slurm" not in parse_profile(BASE).snapshot()  # and a process launch has none


@pytest.mark.parametrize(
    ("section", "wanted"),
    [
        ("nodes = 0", "slurm.nodes must be between 1 and 1024"),
        ("nodez = 2", "did you mean 'nodes'"),
        ('time = "two hours"', "slurm.time must be a Slurm time limit"),
        ('partition = "gpu; rm -rf"', "slurm.partition must be a partition name"),
        ('sbatch_options = ["--job-name=x"]', "--job-name is eagletui's to set"),
        ('sbatch_options = ["-N2"]', "-N is eagletui's to set"),
        ('sbatch_options = ["--output=/tmp/x"]', "--output is eagletui's to set"),
        ('sbatch_options = ["exclusive"]', "is not an option"),
        ('sbatch_options = ["--comment=a\\nb"]', "may not contain a newline"),
        ('container_mounts = ["/a:/a,/b:/b"]', "one mount per list item"),
        ("poll_s = 0.01", "slurm.poll_s must be a number of seconds"),
        ("max_parallel = true", "slurm.max_parallel must be an integer"),
    ],
)
def test_a_bad_slurm_section_names_the_key_and_the_line(section: str, wanted: str) -> None:
    text = BASE + "[slurm]\n" + section + "\n"
    with pytest.raises(ProfileError) as info:
        parse_profile(text, "p.toml")
    assert wanted in str(info.value)
    assert info.value.path == "p.toml" and info.value.line == len(text.splitlines())  # the bad key's line


def test_the_profile_picks_the_launcher() -> None:
    from eagletui.remote.control import ServerControl
    from eagletui.remote.launcher import make_launcher
    from eagletui.remote.local import LocalTransport
    from eagletui.remote.slurm import SlurmLauncher

    plain = make_launcher(parse_profile(BASE), LocalTransport(), timings=FAST)
    job = make_launcher(parse_profile(BASE + "[slurm]\nnodes = 2\n"), LocalTransport(), slot=1, timings=FAST)
    assert isinstance(plain, ServerControl) and isinstance(job, SlurmLauncher)
    assert job.slot == 1 and job.kind == "slurm job"


# ------------------------------------------------------------------------------ scripts


def test_the_batch_script_asks_for_the_nodes_and_holds_no_secret() -> None:
    s = SlurmSettings(partition="gpu", nodes=2, gpus_per_node=8, srun_options=("--container-image=/x y",))
    text = batch_script(s, name=job_name("my prof!", "RID"), run_id="RID", profile_name="my prof!")
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert "#SBATCH --job-name=eagletui-my_prof-RID" in lines
    assert "#SBATCH --nodes=2" in lines and "#SBATCH --ntasks-per-node=1" in lines
    assert "#SBATCH --partition=gpu" in lines and "#SBATCH --gpus-per-node=8" in lines
    srun = next(ln for ln in lines if ln.startswith("srun "))
    assert "--kill-on-bad-exit=1" in srun and '--output="$RD/node-%n.log"' in srun
    assert "'--container-image=/x y'" in srun  # quoted: a space cannot split the option
    assert 'exit "$rc"' in lines[-1]  # the job's ExitCode is srun's
    assert "scontrol show node" in text and "NodeAddr=" in text  # the head's address, as Slurm says


def test_the_node_script_holds_the_environment_and_the_rank_flags() -> None:
    s = SlurmSettings(nodes=2)
    text = node_script(
        s,
        run_id="RID",
        argv=["python3", "-m", "sglang.launch_server", "--model-path", "/m odels/k"],
        env={"HF_TOKEN": "hf_x'y", "NCCL_ALGO": "Ring"},
        workdir="~/work dir",
        dist_port=50001,
    )
    assert "cd \"$HOME\"/'work dir' ||" in text
    assert "'HF_TOKEN=hf_x'\"'\"'y'" in text and "NCCL_ALGO=Ring" in text
    assert "'/m odels/k'" in text
    assert ' --nnodes 2 --node-rank "$SLURM_NODEID" --dist-init-addr "$EAGLETUI_HEAD_ADDR:50001"' in text
    one = node_script(SlurmSettings(), run_id="R", argv=["x"], env={}, workdir="/w", dist_port=1)
    assert "--nnodes" not in one
    with pytest.raises(ScriptError, match="--nnodes"):
        node_script(s, run_id="R", argv=["x", "--nnodes", "2"], env={}, workdir="/w", dist_port=1)


# ------------------------------------------------------------------------------ host side


def test_scontrol_lines_parse_with_spaces_and_underscores() -> None:
    fields = hostslurmjob.parse_job_line(JOB_LINE)
    facts = hostslurmjob.job_facts(fields)
    assert facts["state"] == "PENDING" and facts["name"] == "eagletui-p-20261201-L1-abc"
    assert facts["reason"] == "ReqNodeNotAvail, UnavailableNodes:n3"
    assert facts["user"] == "root" and facts["uid"] == 0 and facts["nodelist"] == ""
    assert fields["Command"] == "/tmp/run dir/job.sh"  # a value with a space stays whole
    assert fields["ReqB:S:C:T"] == "0:0:*:*" and fields["CPUs/Task"] == "1"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("3:0", (3, None)),
        ("0:15", (None, 15)),
        ("0:0", (0, None)),
        ("137:0", (137, None)),
        ("x", (None, None)),
    ],
)
def test_exit_codes_split_as_slurm_writes_them(text: str, want: tuple) -> None:
    assert hostslurmjob.split_exit(text) == want


def test_a_forgotten_job_is_known_from_the_record_then_the_logs(tmp_path: Path) -> None:
    rd = tmp_path
    assert hostslurmjob.recorded_end(str(rd), "12") is None
    (rd / "job_exit").write_text("3\n")
    assert hostslurmjob.recorded_end(str(rd), "12")["state"] == "FAILED"
    # Slurm's own line (from the emulated cluster's batch log) outranks the script's exit
    (rd / "batch.log").write_text(
        "srun: error: n2: task 1: Exited with exit code 143\n"
        "slurmstepd-n1: error: *** JOB 12 ON n1 CANCELLED AT 2026-12-01T11:57:33 DUE TO TIME LIMIT ***\n"
    )
    assert hostslurmjob.recorded_end(str(rd), "12")["state"] == "TIMEOUT"
    (rd / "job_state.json").write_text(json.dumps({"job_id": "12", "state": "NODE_FAIL"}))
    rec = hostslurmjob.recorded_end(str(rd), "12")
    assert rec["state"] == "NODE_FAIL" and rec["source"] == "recorded"
    assert (
        hostslurmjob.recorded_end(str(rd), "13") is None
        or hostslurmjob.recorded_end(str(rd), "13")["state"] != "NODE_FAIL"
    )


# ------------------------------------------------------------------------------ the fold


def _fold(events: list[ev.Event]) -> SessionState:
    s = SessionState()
    for e in events:
        s.apply(ev.Event.from_dict(e.to_dict()))  # as a recording replays them
    return s


def test_a_job_waits_in_queued_and_its_launch_starts_with_the_job() -> None:
    t = 1000.0
    s = _fold(
        [
            ev.LaunchStarted(launch=1, target="login", job_id="7", nodes=2, wall=t),
            ev.JobStatus(launch=1, job_id="7", state="PENDING", reason="Resources", position=2, wall=t + 1),
        ]
    )
    la = s.launch
    assert la is not None and la.status == ServerState.QUEUED and la.job is not None
    assert la.phases["queued"].status == PhaseStatus.ACTIVE and la.phases["queued"].label == "resources #2"
    assert la.phases["launch"].status == PhaseStatus.PENDING
    assert la.shown_phases()[0] == "queued" and la.job.waited(t + 30) == 30
    s.apply(ev.JobStatus(launch=1, job_id="7", state="RUNNING", nodes=("n1", "n2"), wall=t + 40))
    assert la.phases["queued"].status == PhaseStatus.DONE and la.queued_seconds == 40
    assert la.phases["launch"].status == PhaseStatus.ACTIVE and la.started == t + 40
    assert la.status == ServerState.LAUNCHING and la.job.nodes == ("n1", "n2") and la.node_count == 2
    s.apply(ev.PhaseFinished(launch=1, phase="launch", seconds=5.0, wall=t + 45))
    s.apply(ev.ServerReady(launch=1, wall=t + 60))
    assert "queued" not in la.phase_durations()  # the wait is not launch time (nor an ETA sample)
    assert la.status == ServerState.READY


def test_a_process_launch_has_no_queue_row() -> None:
    s = _fold([ev.LaunchStarted(launch=1, target="h"), ev.ServerReady(launch=1)])
    la = s.launch
    assert la is not None and "queued" not in la.shown_phases()
    assert la.phases["queued"].status == PhaseStatus.SKIPPED


def test_the_straggler_is_the_node_still_in_a_phase_another_finished() -> None:
    t = 2000.0
    s = _fold(
        [
            ev.LaunchStarted(launch=1, target="h", job_id="1", nodes=2, wall=t),
            ev.NodeProgress(launch=1, node="n1", index=0, phase="load_target", status="active", wall=t + 1),
            ev.NodeProgress(launch=1, node="n2", index=1, phase="load_target", status="active", wall=t + 1),
            ev.NodeProgress(launch=1, node="n1", index=0, phase="load_target", status="done", wall=t + 10),
            ev.NodeProgress(launch=1, node="n1", index=0, phase="kv_cache", status="active", wall=t + 11),
        ]
    )
    la = s.launch
    assert la is not None and list(la.nodes) == ["n1", "n2"]
    assert la.straggler(t + 25) == ("n2", "load_target", 15.0)
    s.apply(ev.NodeProgress(launch=1, node="n2", index=1, phase="load_target", status="done", wall=t + 26))
    s.apply(ev.NodeProgress(launch=1, node="n2", index=1, phase="kv_cache", status="active", wall=t + 26))
    assert la.straggler(t + 27) is None  # caught up


# ------------------------------------------------------------------------------ the source's routing


def _source(nodes: int = 2):
    from eagletui.remote.control import RunInfo
    from eagletui.remote.jobsource import JobSource
    from eagletui.remote.local import LocalTransport
    from eagletui.remote.slurm import SlurmLauncher

    run = RunInfo(
        run_id="R",
        run_dir="/nonexistent",
        log_path="/nonexistent/node-0.log",
        pid=0,
        pgid=0,
        start_time="",
        argv=[],
        port=1,
        launch=1,
        launcher="slurm",
        job_id="9",
        job_name="eagletui-p-R",
        nodes=["n1", "n2"][:nodes],
        node_logs=[f"/nonexistent/node-{i}.log" for i in range(nodes)],
        batch_log="/nonexistent/batch.log",
        num_nodes=nodes,
    )
    t = LocalTransport()
    src = JobSource(t, SlurmLauncher(t, SlurmSettings(nodes=nodes), timings=FAST), run, timings=FAST)
    src._start_nodes()
    return src


OOM_TB = (
    "[2026-12-01 12:00:01 TP5] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 3261, in run_scheduler_process\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity "
    "of 139.81 GiB of which 10.00 MiB is free.\n"
    "[2026-12-01 12:00:01] Received sigquit from a child process. It usually means the child failed.\n"
)
NCCL_TB = (
    "[2026-12-01 12:00:05 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited\n"
)


def test_the_first_failing_node_is_the_root_cause_and_the_rest_its_cascade() -> None:
    src = _source()
    n1, n2 = src.nodes
    start = b"[2026-12-01 12:00:00 TP0] Init parallel begin.\n"
    out = src._route(n1, n1.interp.feed_bytes(start)) + src._route(
        n2, n2.interp.feed_bytes(start.replace(b"TP0", b"TP4"))
    )
    out += src._route(n2, n2.interp.feed_bytes(OOM_TB.encode()))
    out += src._route(n1, n1.interp.feed_bytes(NCCL_TB.encode()))  # node 1's peers vanished: cascade
    out += src._route(n1, n1.interp.flush()) + src._route(n2, n2.interp.flush())
    fails = [e for e in out if isinstance(e, ev.ServerFailed)]
    assert fails and {f.node for f in fails} == {"n2"}, fails
    assert fails[0].kind == "oom" and fails[0].message.startswith("node n2: ")
    lines = [e for e in out if isinstance(e, ev.LogLine)]
    assert {e.text[:5] for e in lines} == {"[n1] ", "[n2] "}
    assert [e.seq for e in lines] == sorted(e.seq for e in lines)
    assert any(isinstance(e, ev.NodeProgress) and e.node == "n2" and e.status == "failed" for e in out)


def test_our_own_scancel_is_not_a_failure_but_someone_elses_is() -> None:
    src = _source()
    src.control.cancelling.add("R")
    n1 = src.nodes[0]
    crash = b"[2026-12-01 12:00:01] Subprocess scheduler_1 (pid=5) crashed with exit code -15. Triggering SIGQUIT for cleanup...\n"
    assert not [e for e in src._route(n1, n1.interp.feed_bytes(crash)) if isinstance(e, ev.ServerFailed)]
    assert src._final_failure({"state": "CANCELLED"}) is None
    other = _source()
    f = other._final_failure({"state": "CANCELLED", "exit_raw": "0:15"})
    assert f is not None and f.kind == "signal" and "outside eagletui" in f.message


def test_slurm_names_the_node_when_no_log_does() -> None:
    src = _source()
    src._batch_lines(b"eagletui: job 9 started on n[1-2]\nsrun: error: n2: task 1: Exited with exit code 3\n")
    f = src._final_failure({"state": "FAILED", "exit_raw": "3:0", "exit_code": 3})
    assert f is not None and f.node == "n2" and "ended FAILED on node n2" in f.message and "3:0" in f.message
    t = src._final_failure({"state": "TIMEOUT", "exit_raw": "0:15"})
    assert t is not None and "time limit" in t.hint
    assert src._final_failure({"state": "COMPLETED", "exit_code": 0}) is None


def test_the_runs_table_counts_a_jobs_launch_from_its_start_not_its_submit() -> None:
    from eagletui.core.runs.book import RunBook

    book = RunBook()
    t, m = 5000.0, 100.0
    for e in [
        ev.LaunchStarted(launch=1, target="login", job_id="3", wall=t, mono=m),
        ev.JobStatus(launch=1, job_id="3", state="PENDING", reason="Priority", wall=t + 1, mono=m + 1),
        ev.JobStatus(launch=1, job_id="3", state="RUNNING", nodes=("n1",), queued_s=60.0, wall=t + 60, mono=m + 60),
        ev.PhaseStarted(launch=1, phase="launch", wall=t + 62, mono=m + 62),
        ev.ServerReady(launch=1, wall=t + 90, mono=m + 90),
    ]:
        book.apply(e)
    run = book.runs[1]
    assert run.job_id == "3" and run.queued_s == 60.0
    assert run.ready_after is not None and run.ready_after == pytest.approx(30.0, abs=0.01)  # not 90
