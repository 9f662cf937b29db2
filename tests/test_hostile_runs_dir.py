"""A shared runs dir that others can write (issue 33 items 1 and 9): real files with real owners and
modes, real processes, the host program as the host runs it (locally and through a real sshd).

- a runs dir someone else can write is refused like OpenSSH's StrictModes, with the fix in the
  message, unless the profile names the group it is shared with;
- a run record planted with a stranger's pid and start time (both readable from /proc) is never taken
  for ours: the run dir's owner and the run id in the leader's environment decide, before any signal;
- a planted ``server.log`` symlink is never followed: the file it points to never reaches the screen;
- a stale record whose pid is now another run's is set aside, and the live run is found by its own id.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagletui.core.events import Event, LogLine, Notice, TaskFailed
from eagletui.core.profile.model import Profile
from eagletui.core.timings import FAST
from eagletui.remote import hostproc
from eagletui.remote.control import LaunchRefused, RunInfo, ServerControl, UntrustedRunsDir
from eagletui.remote.local import LocalTransport
from eagletui.remote.source import LiveSource
from eagletui.remote.transport import NotOurProcess, SSHOptions, open_transport
from eagletui.workspace import Workspace
from tests.sshd import SshdServer, sshd_server_fixture  # noqa: F401
from tests.test_remote_faults import SLEEPER

PY = sys.executable
#: a user and a group that are not us (the tests run as root: Debian's ``nobody`` and ``users``)
STRANGER = 65534
GROUP = "users"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="planting files of another user needs root")


def sleeper_profile(tmp: Path, runs: Path, port: int = 39621, group: str = "") -> Profile:
    return Profile(
        name="hostile",
        command=(PY, "-c", SLEEPER, str(tmp / "signals")),
        python=PY,
        runs_dir=str(runs),
        runs_dir_group=group,
        workdir=str(tmp),
        port=port,
    )


def start_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def stranger_process(tmp: Path) -> subprocess.Popen:
    """A process eagletui did not start, which records every signal it gets (and survives it)."""
    return subprocess.Popen([PY, "-c", SLEEPER, str(tmp / "stranger-signals")], start_new_session=True)


def plant(runs: Path, run_id: str, victim: subprocess.Popen, *, owner: int | None, log_to: Path | None = None) -> Path:
    """What a planter writes: a run dir with a record naming ``victim``'s pid and start time."""
    rd = runs / run_id
    rd.mkdir()
    ident = {"pid": victim.pid, "pgid": victim.pid, "sid": victim.pid, "start_time": start_of(victim.pid)}
    (rd / "pid").write_text(json.dumps(ident))
    (rd / "run.json").write_text(
        json.dumps({"run_id": run_id, "port": 39621, "launch": 1, "owned": True, "argv": [], **ident})
    )
    if log_to is not None:
        (rd / "server.log").symlink_to(log_to)
    if owner is not None:
        for p in (rd, rd / "pid", rd / "run.json"):
            os.chown(p, owner, owner)
    return rd


def as_run(rd: Path, victim: subprocess.Popen) -> RunInfo:
    return RunInfo(
        run_id=rd.name,
        run_dir=str(rd),
        log_path=str(rd / "server.log"),
        pid=victim.pid,
        pgid=victim.pid,
        start_time=start_of(victim.pid),
        argv=[],
        port=39621,
        launch=1,
    )


def signals_of(path: Path) -> str:
    return path.read_text() if path.exists() else ""


@pytest.fixture
def control() -> ServerControl:
    return ServerControl(LocalTransport(timings=FAST), timings=FAST)


def test_a_runs_dir_someone_else_can_write_is_refused_with_the_fix(tmp_path: Path) -> None:
    runs = tmp_path / "shared-runs"
    runs.mkdir()
    os.chown(runs, STRANGER, STRANGER)
    runs.chmod(0o777)
    control = ServerControl(LocalTransport(timings=FAST), runs_dir=str(runs), timings=FAST)
    with pytest.raises(UntrustedRunsDir) as err:
        asyncio.run(control.list_runs())
    msg = str(err.value)
    assert "writable by everyone" in msg or "belongs to" in msg
    assert "StrictModes" in msg and "chmod go-w" in msg and "runs_dir_group" in msg
    with pytest.raises(LaunchRefused, match="StrictModes"):
        asyncio.run(control.launch(sleeper_profile(tmp_path, runs), launch=1))
    assert sorted(p.name for p in runs.iterdir()) == []  # nothing was written there, nothing started
    # a directory above it that others can write (no sticky bit) is refused as well
    above = tmp_path / "open"
    above.mkdir()
    above.chmod(0o777)
    mine = above / "runs"
    mine.mkdir(mode=0o700)
    with pytest.raises(UntrustedRunsDir, match="above the runs dir"):
        asyncio.run(ServerControl(LocalTransport(timings=FAST), runs_dir=str(mine), timings=FAST).list_runs())


async def test_a_runs_dir_shared_with_a_named_group_is_used(tmp_path: Path) -> None:
    import grp

    gid = grp.getgrnam(GROUP).gr_gid
    runs = tmp_path / "team-runs"
    runs.mkdir()
    os.chown(runs, STRANGER, gid)
    runs.chmod(0o2770)
    plain = ServerControl(LocalTransport(timings=FAST), runs_dir=str(runs), timings=FAST)
    with pytest.raises(UntrustedRunsDir, match="belongs to nobody"):
        await plain.list_runs()
    shared = ServerControl(LocalTransport(timings=FAST), runs_dir=str(runs), runs_group=GROUP, timings=FAST)
    run = await shared.launch(sleeper_profile(tmp_path, runs, group=GROUP), launch=1)
    try:
        assert [r.run_id for r in await shared.list_runs() if r.alive] == [run.run_id]
        assert (Path(run.run_dir).stat().st_mode & 0o777) == 0o700  # its own run dir stays private
    finally:
        await shared.stop(run, grace=1)
    # the group must exist: a typo is an error, not a silently open door
    typo = ServerControl(LocalTransport(timings=FAST), runs_dir=str(runs), runs_group="no-such-grp", timings=FAST)
    with pytest.raises(UntrustedRunsDir, match="no such group"):
        await typo.list_runs()


async def test_a_planted_record_never_gets_a_strangers_process_signalled(tmp_path: Path, control: ServerControl) -> None:
    runs = tmp_path / "runs"
    runs.mkdir(mode=0o700)
    control.runs_dir = str(runs)
    victim = stranger_process(tmp_path)
    try:
        time.sleep(0.2)
        # planted by another user (the dir is theirs), and one the user's own account holds (a copy)
        theirs = plant(runs, "20261201-000000-L1-aaaaaa", victim, owner=STRANGER)
        ours = plant(runs, "20261201-000001-L1-bbbbbb", victim, owner=None)
        listed = {r.run_id: r for r in await control.list_runs()}
        assert listed[theirs.name].state == "untrusted" and not listed[theirs.name].alive
        assert "belongs to" in listed[theirs.name].note
        assert listed[ours.name].state == "stale" and not listed[ours.name].owned
        assert "nothing proves" in listed[ours.name].note
        for rd in (theirs, ours):
            with pytest.raises(NotOurProcess):
                await control.stop(as_run(rd, victim), grace=0.5, group_wait=0.5, kill_wait=0.5)
            assert await control.members(as_run(rd, victim)) == []
        time.sleep(0.3)
        assert victim.poll() is None and signals_of(tmp_path / "stranger-signals") == ""
    finally:
        victim.kill()
        victim.wait()


async def test_a_planted_server_log_link_is_never_read(tmp_path: Path, control: ServerControl) -> None:
    secret = tmp_path / "root-only"
    secret.write_text("SECRET-4242 root's file\n")
    secret.chmod(0o600)
    prof = sleeper_profile(tmp_path, tmp_path / "runs")
    run = await control.launch(prof, launch=1)
    try:
        log = Path(run.log_path)
        log.unlink()
        log.symlink_to(secret)  # the planter swaps the log for a link to a file only root may read
        events: list[Event] = []
        source = LiveSource(LocalTransport(timings=FAST), control, run, timings=FAST)

        async def follow() -> None:
            async for ev in source.events():
                events.append(ev)
                if isinstance(ev, TaskFailed) or (isinstance(ev, Notice) and "symbolic link" in ev.message):
                    return

        task = asyncio.ensure_future(follow())
        deadline = time.monotonic() + 20
        while not task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        source.stop()
        task.cancel()
        text = " ".join(getattr(e, "text", "") + getattr(e, "message", "") for e in events)
        assert "SECRET-4242" not in text
        assert not [e for e in events if isinstance(e, LogLine)]
        assert "symbolic link" in text, events  # the user is told why nothing is shown
    finally:
        await control.stop(run, grace=1)


async def test_a_stale_record_is_set_aside_and_the_live_run_is_found_by_its_own_id(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    prof = sleeper_profile(tmp_path, runs)
    notes: list[Event] = []
    ws = Workspace(prof, notes.append, target="local", preflight=False, timings=FAST)
    await ws.connect()
    assert ws.control is not None
    live = await ws.control.launch(prof, launch=2)
    try:
        # an older run's record whose pid (and start time) the live server now has: as after a reboot
        # that handed out the same pid, or a record copied by hand
        stale = Path(runs) / "20261201-000000-L1-cccccc"
        shutil.copytree(live.run_dir, stale, symlinks=True)
        for name in ("pid", "run.json"):
            data = json.loads((stale / name).read_text())
            data["run_id"] = stale.name
            (stale / name).write_text(json.dumps(data))
        future = time.time() + 60
        os.utime(stale / "run.json", (future, future))  # the newest record: what attach used to pick
        assert await ws.attach_newest()
        assert ws.run is not None and ws.run.run_id == live.run_id
        assert any(
            isinstance(e, Notice) and stale.name in e.message and "set aside" in e.message for e in notes
        ), [getattr(e, "message", "") for e in notes]
        ws.consent_given()
        await ws.stop()  # the session that found it can stop it
        assert hostproc.probe(live.pid, live.start_time)[0] == hostproc.DEAD
    finally:
        await ws.close()


@pytest.mark.sshd
@pytest.mark.slow
async def test_over_ssh_a_world_writable_runs_dir_is_refused(sshd_server: SshdServer, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    runs.chmod(0o777)
    t = await open_transport(
        sshd_server.alias,
        SSHOptions(config_file=str(sshd_server.config_file), known_hosts=str(sshd_server.known_hosts)),
        timings=FAST,
    )
    try:
        control = ServerControl(t, runs_dir=str(runs), python=PY, timings=FAST)
        with pytest.raises(UntrustedRunsDir, match="writable by everyone"):
            await control.list_runs()
        with pytest.raises(LaunchRefused, match="chmod go-w"):
            await control.launch(sleeper_profile(tmp_path, runs), launch=1)
    finally:
        await t.close()
