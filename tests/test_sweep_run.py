"""`eagletui sweep` end to end on the real simulator: a 2 × 2 sweep unattended, a failed launch that
does not stop the sweep, and a sweep SIGKILLed mid-way then resumed (no variant run twice, none lost)."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagletui.commands.demo import free_port
from eagletui.commands.sweep import main
from eagletui.core.timings import FAST
from tests.conftest_sim import sim_profile_toml

ROOT = Path(__file__).resolve().parents[1]


def _profile(tmp_path: Path, port: int, sweep: str, repeats: int = 1) -> str:
    rest = SWEEP_REST.replace("{repeats}", str(repeats)).replace("{sweep}", sweep)
    return sim_profile_toml(tmp_path, port, name="sweeptest", filename="sweep.toml", rest=rest)


SWEEP_REST = """[server.env]
NCCL_ALGO = "Ring"
SGLANG_LOG_MS = "1"
[[toggles]]
env = "NCCL_ALGO"
choices = ["Ring", "Tree"]
[[toggles]]
arg = "enable-flashinfer-allreduce-fusion"
type = "bool"
[[toggles]]
env = "EAGLETUI_SIM_FAIL"
choices = ["oom-load", "nccl"]
[bench]
num_prompts = 4
concurrency = 2
max_new_tokens = 32
warmup = 0
[verdict]
min_accept_len = 2.0
[sweep]
repeats = {repeats}
{sweep}
"""


MATRIX = (
    '[sweep.matrix]\n"enable-flashinfer-allreduce-fusion" = [false, true]\nNCCL_ALGO = ["Ring", "Tree"]\n'
)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    d = tmp_path / "data"
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(d))
    monkeypatch.setenv("EAGLETUI_CONFIG_DIR", str(tmp_path / "config"))  # no user config.toml
    return d


@pytest.mark.slow
def test_2x2_sweep_runs_unattended_and_ranks_with_effects(tmp_path, data_dir, capsys):
    port = free_port()
    rc = main(["local", "--profile", _profile(tmp_path, port, MATRIX, repeats=2), "--json", "--no-preflight"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    rep = json.loads(out.out)
    rows = rep["variants"]
    assert [r["state"] for r in rows] == ["done"] * 4
    assert all(r["verdict"] == "pass" and r["tok_s"] > 0 and r["launches"] == 1 for r in rows)
    assert all(len(r["repeats"]) == 2 and r["tok_s_stdev"] is not None for r in rows)
    assert all(2.0 < r["accept_length"] < 4.5 for r in rows)
    assert rows[0]["delta_pct"] == 0.0 and all(r["delta_pct"] is not None for r in rows)
    assert rows[3]["settings"] == {"arg:--enable-flashinfer-allreduce-fusion": True, "env:NCCL_ALGO": "Tree"}
    assert sorted(rep["ranking"]) == sorted(r["name"] for r in rows)
    assert rep["best"]["name"] == rep["ranking"][0]
    factors = {e["factor"] for e in rep["effects"]}
    assert factors == {"arg:--enable-flashinfer-allreduce-fusion", "env:NCCL_ALGO"}
    assert all(e["pairs"] == 2 and e["noise_pct"] is not None for e in rep["effects"])
    # each variant launched its own server; the last one is stopped at the end
    assert len({r["run_id"] for r in rows}) == 4 and not _listening(port)
    q = Path(rep["queue"])
    assert stat.S_IMODE(q.stat().st_mode) == 0o600
    assert "[4/4]" in out.err and "session recorded to" in out.err
    recordings = list((data_dir / "sessions").glob("*.jsonl"))
    assert len(recordings) == 1 and recordings[0].read_text().count('"bench_result"') == 8


@pytest.mark.slow
def test_failed_launch_is_recorded_and_the_sweep_goes_on(tmp_path, data_dir, capsys):
    sweep = (
        '[[sweep.variants]]\nname = "base"\n'
        '[[sweep.variants]]\nname = "oom"\nset = { EAGLETUI_SIM_FAIL = "oom-load" }\n'
        '[[sweep.variants]]\nname = "tree"\nset = { NCCL_ALGO = "Tree" }\n'
    )
    port = free_port()
    rc = main(["local", "--profile", _profile(tmp_path, port, sweep), "--json", "--no-preflight"])
    out = capsys.readouterr()
    rep = json.loads(out.out)
    rows = {r["name"]: r for r in rep["variants"]}
    assert rc == 3, out.err  # launch failures only
    assert rows["oom"]["state"] == "failed" and rows["oom"]["verdict"] == "launch-failed"
    assert rows["oom"]["triage_kind"] == "oom" and rows["oom"]["tok_s"] is None
    assert rows["base"]["verdict"] == "pass" and rows["tree"]["verdict"] == "pass"
    assert rep["ranking"] == sorted(["base", "tree"], key=lambda n: -rows[n]["tok_s"])
    assert not _listening(port)


def _queue(data_dir: Path) -> dict:
    files = list((data_dir / "sweeps").glob("*.json"))
    if not files:
        return {}
    try:
        return json.loads(files[0].read_text())
    except ValueError:
        return {}


@pytest.mark.slow
@pytest.mark.parametrize("kill_in", ["launching", "benchmarking"])
def test_sigkill_mid_sweep_then_resume_runs_each_variant_once(tmp_path, data_dir, kill_in, capsys):
    port = free_port()
    prof = _profile(tmp_path, port, MATRIX, repeats=2)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the fixture's data/config dirs are in os.environ
    cmd = [sys.executable, "-m", "eagletui", "sweep", "local", "--profile", prof, "--json", "--no-preflight"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        # wait (bounded) until variant 2 is in the state to kill in, with its server known
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            q = _queue(data_dir)
            v = q.get("variants", [{}, {}])[1]
            if v.get("state") == kill_in and v.get("run_id"):
                break
            time.sleep(0.02)
        else:
            pytest.fail(
                f"the sweep never reached {kill_in}: {proc.stderr.read().decode()[-2000:] if proc.poll() is not None else ''}"
            )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    before = _queue(data_dir)
    assert before["variants"][0]["state"] == "done" and before["variants"][1]["state"] == kill_in
    killed_run = before["variants"][1]["run_id"]
    assert _listening(port) or kill_in == "launching"  # its server outlived the sweep

    # without --resume the unfinished queue is not overwritten
    assert main(["local", "--profile", prof, "--json", "--no-preflight"]) == 2
    assert "--resume" in capsys.readouterr().err

    rc = main(["local", "--profile", prof, "--json", "--no-preflight", "--resume"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    rows = json.loads(out.out)["variants"]
    assert [r["state"] for r in rows] == ["done"] * 4
    assert [r["launches"] for r in rows] == [1, 1, 1, 1]  # the killed variant's server was followed
    assert rows[1]["run_id"] == killed_run
    assert rows[0]["repeats"] == before["variants"][0]["cells"][0]["repeats"]  # done work kept, not redone
    assert all(len(r["repeats"]) == 2 for r in rows)
    assert "following its running server" in out.err
    runs = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(runs) == 4  # four servers launched in all, across both processes
    assert not _listening(port)


@pytest.mark.slow
async def test_two_hosts_share_one_queue_and_each_takes_the_next_variant(tmp_path, data_dir):
    """Two runners (two "hosts": the simulator on two ports) drain one queue: every variant runs
    exactly once, both take some, and the queue says which host ran what."""
    import asyncio

    from eagletui.core.profile.load import load_profile
    from eagletui.session.model import SessionModel
    from eagletui.session.sweep.queue import SweepQueue
    from eagletui.session.sweep.runner import SweepRunner
    from eagletui.workspace import Workspace

    profiles = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        profiles.append(load_profile(_profile(tmp_path / name, free_port(), MATRIX)))
    queue = SweepQueue.plan(profiles[0].sweep, target="a+b", profile_path=profiles[0].path)
    queue.save(tmp_path / "queue.json")
    runners, workspaces = [], []
    for name, prof in zip(("a", "b"), profiles, strict=True):
        model = SessionModel(target="local", profile=prof, learn_history=False)
        ws = Workspace(prof, model.dispatch, target="local", preflight=False, timings=FAST)
        await ws.connect()
        workspaces.append(ws)
        runners.append(SweepRunner(prof, queue, ws, model, worker=name))
    try:
        await asyncio.gather(*(r.run() for r in runners))
    finally:
        for ws in workspaces:
            if ws.run is not None and ws.run.owned:
                await ws.stop()
            await ws.close()
    assert [v.state for v in queue.variants] == ["done"] * 4
    assert [v.launches for v in queue.variants] == [1, 1, 1, 1]
    assert {v.target for v in queue.variants} == {"a", "b"}
    for name in ("a", "b"):  # each host launched exactly the variants it is credited with
        runs = [p for p in (tmp_path / name / "runs").iterdir() if not p.name.startswith(".")]
        assert len(runs) == sum(1 for v in queue.variants if v.target == name)
    report = queue.report(profiles[0].verdict, profiles[0])
    assert {r["host"] for r in report["variants"]} == {"a", "b"} and len(report["effects"]) == 2


@pytest.mark.slow
def test_a_drafter_that_accepts_nothing_is_reported_at_once_not_rerun(tmp_path, data_dir, capsys):
    # seen on the real server (sglang 0.5.17, a random-weight draft): every run of such a launch reads
    # accept 1.01, and the sweep ran each cell three times before giving up; a cause that a rerun of the
    # same launch repeats ends the cell after one attempt, while a working variant still gets its repeats
    sweep = (
        '[[toggles]]\narg = "sim-draft-quality"\ntype = "float"\n'
        '[[sweep.variants]]\nname = "base"\n'
        '[[sweep.variants]]\nname = "broken"\nset = { "sim-draft-quality" = 0.0 }\n'
    )
    port = free_port()
    rc = main(["local", "--profile", _profile(tmp_path, port, sweep, repeats=2), "--json", "--no-preflight"])
    out = capsys.readouterr()
    rep = json.loads(out.out)
    rows = {r["name"]: r for r in rep["variants"]}
    assert rc == 1, out.err
    assert rows["base"]["verdict"] == "pass" and len(rows["base"]["repeats"]) == 2
    broken = rows["broken"]
    assert broken["state"] == "failed" and broken["tok_s"] is None
    assert len(broken["repeats"]) == 1 and broken["repeats"][0]["invalid"]
    assert broken["repeats"][0]["invalid"][0].startswith("the drafter is not working")
    assert "not run again" in out.err and "running it again" not in out.err
    assert rep["ranking"] == ["base"] and not _listening(port)


@pytest.mark.slow
def test_a_sweep_whose_recording_lost_events_exits_non_zero(tmp_path, data_dir, capsys):
    """Issue 33 item 10: a full disk while the sweep records: what was not recorded is said, exit 1.
    A real 64 KiB tmpfs as the sessions dir, nearly full; the simulator as the server."""
    import subprocess

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(sessions)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (sessions / "filler").write_bytes(b"x" * (56 * 1024))
        port = free_port()
        one = '[[sweep.variants]]\nname = "ring"\n'
        rc = main(
            ["local", "--profile", _profile(tmp_path, port, one), "--json", "--no-preflight",
             "--record", str(sessions)]
        )
        out = capsys.readouterr()
        assert rc == 1, out.err
        assert "incomplete:" in out.err and "could not be written" in out.err, out.err
        assert "recording of local is incomplete" in out.err
        assert json.loads(out.out)["variants"][0]["verdict"] != "fail"  # the sweep itself passed
    finally:
        subprocess.run(["umount", "-l", str(sessions)])
