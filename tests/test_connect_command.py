"""``eagletui connect`` before the UI: fail fast on a bad host, refuse to run without a terminal,
and find the profile a running server was launched with. Real sshd (tests/sshd.py), real launches."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eagletui.commands.connect import build_parser, probe
from eagletui.core.profile.load import load_profile
from eagletui.core.timings import FAST
from eagletui.remote.control import ServerControl
from eagletui.remote.local import LocalTransport
from eagletui.remote.reattach import profile_from_run
from tests.sshd import SshdServer, free_port, sshd_server_fixture  # noqa: F401

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]


def _eagletui(tmp_path: Path, *argv: str, tty_override: bool = True) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        EAGLETUI_DATA_DIR=str(tmp_path / "data"),
        EAGLETUI_CONFIG_DIR=str(tmp_path / "config"),
    )
    env.pop("EAGLETUI_ALLOW_NO_TTY", None)
    if tty_override:
        env["EAGLETUI_ALLOW_NO_TTY"] = "1"  # the check under test comes after the terminal check
    return subprocess.run(
        [PY, "-m", "eagletui", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _nothing_recorded(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert not data.exists() or not any(data.rglob("*.jsonl*")), list(data.rglob("*"))


def _ssh_args(srv: SshdServer) -> list[str]:
    return ["--ssh-config", str(srv.config_file), "--known-hosts", str(srv.known_hosts)]


@pytest.mark.slow
@pytest.mark.sshd
def test_connect_to_a_closed_port_fails_before_the_ui(tmp_path: Path, sshd_server: SshdServer) -> None:
    port = free_port()  # nothing listens there
    res = _eagletui(tmp_path, "connect", f"{sshd_server.user}@127.0.0.1:{port}", *_ssh_args(sshd_server))
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"eagletui: cannot connect to {sshd_server.user}@127.0.0.1:{port}: "
    )
    assert lines[0].count("cannot connect") == 1  # said once
    assert "\x1b[" not in res.stdout + res.stderr  # no UI was drawn
    _nothing_recorded(tmp_path)


@pytest.mark.slow
def test_connect_to_an_invalid_address_fails_before_the_ui(tmp_path: Path) -> None:
    res = _eagletui(tmp_path, "connect", "root@256.1.1.1")
    assert res.returncode == 1
    assert res.stderr.startswith("eagletui: cannot connect to root@256.1.1.1: "), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "\x1b[" not in res.stdout
    _nothing_recorded(tmp_path)
    bad = _eagletui(tmp_path, "connect", "not a host")
    assert bad.returncode == 1 and "not an SSH target" in bad.stderr
    _nothing_recorded(tmp_path)


@pytest.mark.sshd
async def test_probe_reaches_the_sshd_and_asks_about_an_unknown_key(
    tmp_path: Path, sshd_server: SshdServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = build_parser().parse_args([sshd_server.alias, *_ssh_args(sshd_server)])
    assert await probe(sshd_server.alias, args, want_recorded=False) == (None, None)
    # unknown host key: the question is asked on the terminal, before the UI; "no" refuses
    kh = tmp_path / "kh"
    cfg = sshd_server.write_config(tmp_path / "cfg", known_hosts=kh)
    args = build_parser().parse_args([sshd_server.alias, "--ssh-config", str(cfg), "--known-hosts", str(kh)])
    monkeypatch.setattr(sys, "stdin", io.StringIO("no\n"))
    error, _ = await probe(sshd_server.alias, args, want_recorded=False)
    assert error is not None and "was not accepted" in error and not kh.exists()
    monkeypatch.setattr(sys, "stdin", io.StringIO("yes\n"))
    assert await probe(sshd_server.alias, args, want_recorded=False) == (None, None)
    assert sshd_server.host_pub in kh.read_text()  # the UI's own connection will not ask again


@pytest.mark.slow
def test_connect_needs_a_target_or_a_profile(tmp_path: Path) -> None:
    res = _eagletui(tmp_path, "connect")
    assert res.returncode == 2 and "give a target" in res.stderr
    prof = tmp_path / "p.toml"
    prof.write_text('[target]\nhost = "root@256.1.1.1"\n')
    res = _eagletui(tmp_path, "connect", "--profile", str(prof))  # the profile's target is used
    assert res.returncode == 1 and "cannot connect to root@256.1.1.1" in res.stderr


@pytest.mark.parametrize(
    "command", [["connect", "local"], ["demo"], ["replay", "sessions/example-demo.jsonl"]]
)
def test_ui_commands_refuse_to_run_without_a_terminal(tmp_path: Path, command: list[str]) -> None:
    command = [str(ROOT / c) if c.startswith("sessions/") else c for c in command]
    res = _eagletui(tmp_path, *command, tty_override=False)
    assert res.returncode == 2
    assert f"eagletui {command[0]} needs a terminal" in res.stderr
    assert "eagletui bench" in res.stderr and "eagletui parse" in res.stderr
    assert res.stdout == "" and "\x1b" not in res.stderr
    _nothing_recorded(tmp_path)


async def test_a_running_launch_gives_back_its_profile(tmp_path: Path) -> None:
    """Without --profile, connect reattaches with the snapshot the launch recorded on the host."""
    from eagletui.commands.demo import write_demo_profile

    prof = load_profile(write_demo_profile(tmp_path, time_scale=50.0))  # stays loading for a long time
    prof.env["HF_TOKEN"] = "hf_abcdefghijklmnopqrstuvwxyz0123"
    t = LocalTransport()
    control = ServerControl(t, runs_dir=prof.runs_dir, python=prof.python, timings=FAST)
    run = await control.launch(prof, launch=1)
    try:
        runs = await ServerControl(t, runs_dir=prof.runs_dir, timings=FAST).list_runs()
        rec = profile_from_run(runs[0], "local")
        assert rec is not None and rec.run.run_id == run.run_id
        got = rec.profile
        assert got.argv() == prof.argv()  # same command, flags and port: a relaunch is the same launch
        assert got.python == prof.python and got.port == prof.port
        assert got.args == prof.args
        assert "HF_TOKEN" not in got.env and rec.dropped_secrets == ["HF_TOKEN"]
        assert got.env["NCCL_ALGO"] == "Ring"
        assert got.runs_dir == prof.runs_dir.rstrip("/")
        assert got.toggles  # the Tune tab has something to tune
        assert got.verdict == prof.verdict
    finally:
        await control.stop(run, grace=5)
        await t.close()


def _after(events, run):
    from types import SimpleNamespace

    from eagletui.core.state.screen import SessionState

    state = SessionState(target="gpu-box")
    state.apply_all(events)
    return SimpleNamespace(workspace=SimpleNamespace(run=run), state=state)


def test_exit_note_says_keeps_running_only_for_a_running_server() -> None:
    from eagletui.commands.connect import exit_note
    from eagletui.core.events import LaunchStarted, ServerFailed, ServerStopped
    from eagletui.remote.control import RunInfo

    run = RunInfo("r1", "/runs/r1", "/runs/r1/server.log", 42, 42, "1", ["python3"], 30000, 1)
    started = LaunchStarted(launch=1, target="gpu-box")
    assert "keeps running on gpu-box; 'eagletui connect gpu-box' reattaches" in exit_note(
        _after([started], run), "gpu-box"
    )
    run.alive = False  # what ServerControl.stop leaves behind after `s`
    assert (
        exit_note(_after([started, ServerStopped(reason="stopped by user", launch=1)], run), "gpu-box") == ""
    )
    failed = ServerFailed(kind="port_in_use", message="[Errno 98] …", phase="warmup", launch=1)
    note = exit_note(_after([started, failed], RunInfo(**{**run.to_dict(), "alive": True})), "gpu-box", 30000)
    assert note == "the server failed: port 30000 already in use during warmup (log: /runs/r1/server.log)\n"
    assert "PORT_IN_USE" not in note and "port_in_use" not in note


@pytest.mark.slow
@pytest.mark.sshd
async def test_probe_over_ssh_finds_the_running_launch_and_its_profile(
    tmp_path: Path, sshd_server: SshdServer
) -> None:
    from eagletui.commands.demo import write_demo_profile
    from eagletui.remote.transport import SSHOptions, open_transport

    prof = load_profile(write_demo_profile(tmp_path, time_scale=50.0))
    t = await open_transport(
        sshd_server.alias,
        SSHOptions(config_file=str(sshd_server.config_file), known_hosts=str(sshd_server.known_hosts)), timings=FAST,
    )
    control = ServerControl(t, runs_dir=prof.runs_dir, python=prof.python, timings=FAST)
    run = await control.launch(prof, launch=2)
    try:
        args = build_parser().parse_args([sshd_server.alias, *_ssh_args(sshd_server)])
        error, rec = await probe(sshd_server.alias, args, want_recorded=True, runs_dir=prof.runs_dir)
        assert error is None and rec is not None
        assert rec.run.run_id == run.run_id and rec.run.launch == 2
        assert rec.profile.target == sshd_server.alias
        assert rec.profile.argv() == prof.argv() and rec.profile.env == prof.env
        # nothing live: connect goes on with an empty profile, as before
        empty = str(tmp_path / "no-runs")
        assert await probe(sshd_server.alias, args, want_recorded=True, runs_dir=empty) == (None, None)
    finally:
        await control.stop(run, grace=5)
        await t.close()


def test_exit_note_names_the_profile_when_its_runs_dir_is_not_the_default(tmp_path: Path) -> None:
    """Issue 20 item 12: the quit message promised a reattach that a plain reconnect could not do
    (it looks only in ~/.eagletui/runs)."""
    from types import SimpleNamespace

    from eagletui.commands.connect import exit_note
    from eagletui.core.events import LaunchStarted
    from eagletui.remote.control import RunInfo

    run = RunInfo("r1", "/data/runs/r1", "/data/runs/r1/server.log", 42, 42, "1", ["python3"], 30000, 1)
    app = _after([LaunchStarted(launch=1, target="gpu-box")], run)
    custom = SimpleNamespace(runs_dir="/data/runs", path=str(tmp_path / "k.toml"))
    note = exit_note(app, "gpu-box", profile=custom)
    assert f"'eagletui connect gpu-box --profile {tmp_path / 'k.toml'}' reattaches" in note, note
    assert "its runs are in /data/runs" in note and "~/.eagletui/runs" in note
    default = SimpleNamespace(runs_dir="~/.eagletui/runs", path=str(tmp_path / "k.toml"))
    assert "'eagletui connect gpu-box' reattaches" in exit_note(app, "gpu-box", profile=default)


async def test_a_reconnect_that_finds_no_run_says_where_it_looked(tmp_path: Path) -> None:
    from eagletui.core.profile.model import Profile
    from eagletui.session.drivers import LiveDriver
    from eagletui.session.model import SessionModel
    from eagletui.workspace import Workspace

    said: list[str] = []

    class Host:
        def dispatch(self, ev) -> None:
            pass

        def notify(self, message, *, title="", severity="information", timeout=None) -> None:
            said.append(message)

        async def ask(self, question: str) -> bool:
            return False

        def config_changed(self) -> None:
            pass

        def settled(self) -> None:
            pass

    runs = tmp_path / "runs"
    prof = Profile(name="(no profile)", target="local", runs_dir=str(runs))
    driver = LiveDriver(lambda emit: Workspace(prof, emit, target="local", preflight=False, timings=FAST), autolaunch=False)
    try:
        await driver.run(SessionModel(target="local"), Host())
    finally:
        await driver.close()
    assert any(f"no running server that eagletui started in {runs} on local" in m for m in said), said
