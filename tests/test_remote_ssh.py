"""Integration tests against a real OpenSSH sshd on 127.0.0.1 (see tests/sshd.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import sys
import time
from pathlib import Path

import pytest

from eagletui.core.events import ProcessExited
from eagletui.core.profile.model import Profile
from eagletui.core.timings import FAST
from eagletui.remote.control import LaunchRefused, RunInfo, ServerControl
from eagletui.remote.source import LiveSource
from eagletui.remote.ssh import SSHTransport
from eagletui.remote.tail import LogTail
from eagletui.remote.transport import (
    AuthFailed,
    HostKeyChanged,
    HostKeyRejected,
    NotOurProcess,
    SSHOptions,
    open_transport,
)
from tests.sshd import SshdServer, free_port, keygen, sshd_server_fixture  # noqa: F401
from tests.test_remote_local import check_sequence, collect, foreign_sleeper, forged_run, writer_profile

pytestmark = pytest.mark.sshd
PY = sys.executable


async def connect(srv: SshdServer, *, on_state=None, **kw):
    kw.setdefault("config_file", str(srv.config_file))
    kw.setdefault("known_hosts", str(srv.known_hosts))
    return await open_transport(srv.alias, SSHOptions(**kw), on_state=on_state, timings=FAST)


async def test_connect_alias_and_state(sshd_server: SshdServer) -> None:
    states = []
    t = await connect(sshd_server, on_state=states.append)
    try:
        res = await t.run(["echo", "it's; $HOME"])
        assert res.exit_status == 0 and res.stdout == "it's; $HOME\n"
        assert (await t.run("exit 4")).exit_status == 4
        assert (await t.run(["cat"], input="xyz")).stdout == "xyz"
    finally:
        await t.close()
    assert [s.state for s in states] == ["connecting", "connected", "closed"]
    assert all(s.target == sshd_server.alias for s in states)


async def test_unknown_host_key_ask_and_accept(sshd_server: SshdServer, tmp_path: Path) -> None:
    kh = tmp_path / "kh"
    cfg = sshd_server.write_config(tmp_path / "cfg", known_hosts=kh)
    with pytest.raises(HostKeyRejected) as exc:
        await connect(sshd_server, config_file=str(cfg), known_hosts=str(kh))
    assert sshd_server.fingerprint() in str(exc.value)
    asked = []

    async def ask(host: str, fp: str) -> bool:
        asked.append((host, fp))
        return True

    t = await connect(sshd_server, config_file=str(cfg), known_hosts=str(kh), ask_host_key=ask)
    await t.close()
    assert asked == [(f"[127.0.0.1]:{sshd_server.port}", sshd_server.fingerprint())]
    assert sshd_server.host_pub in kh.read_text()
    # now known: no question asked
    t = await connect(sshd_server, config_file=str(cfg), known_hosts=str(kh), ask_host_key=ask)
    await t.close()
    assert len(asked) == 1

    kh2 = tmp_path / "sub" / "kh2"
    t = await connect(sshd_server, config_file=str(cfg), known_hosts=str(kh2), accept_new_host_key=True)
    assert (await t.run(["true"])).exit_status == 0
    await t.close()
    assert sshd_server.host_pub in kh2.read_text()


async def test_changed_host_key_refused(sshd_server: SshdServer, tmp_path: Path) -> None:
    other = tmp_path / "other"
    keygen(other)
    kh = tmp_path / "kh"
    pub = " ".join(other.with_suffix(".pub").read_text().split()[:2])
    kh.write_text(f"[127.0.0.1]:{sshd_server.port} {pub}\n")
    before = kh.read_text()
    with pytest.raises(HostKeyChanged) as exc:
        await connect(sshd_server, known_hosts=str(kh), accept_new_host_key=True)
    assert sshd_server.fingerprint() in str(exc.value)
    assert "CHANGED" in str(exc.value)
    assert kh.read_text() == before


async def test_auth_failure_names_methods(sshd_server: SshdServer, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    keygen(wrong)
    cfg = sshd_server.write_config(tmp_path / "cfg", known_hosts=sshd_server.known_hosts, identity=wrong)
    with pytest.raises(AuthFailed) as exc:
        await connect(sshd_server, config_file=str(cfg))
    msg = str(exc.value)
    assert "publickey" in msg and sshd_server.user in msg


@pytest.mark.slow
async def test_launch_tail_stop_over_ssh(sshd_server: SshdServer, tmp_path: Path) -> None:
    t = await connect(sshd_server)
    try:
        control = ServerControl(t, str(tmp_path / "runs"), python=PY, timings=FAST)
        run = await control.launch(
            writer_profile(tmp_path, n=100000, delay=0.005, env={"A": "x y"}), launch=1
        )
        assert await control.liveness(run) == "alive"
        data = await collect(LogTail(t, run.log_path, python=PY, timings=FAST), b"line 000100")
        check_sequence(data.rsplit(b"\n", 1)[0], 0)
        assert (await control.stop(run, grace=5)).exit == (None, 15)
        assert await control.liveness(run) == "dead"
    finally:
        await t.close()


UNTIL = (
    "import os, sys, time\n"
    "i = 0\n"
    "while not os.path.exists(sys.argv[1]):\n"
    "    sys.stdout.write('line %06d ' % i + 'x' * (i % 50) + '\\n'); sys.stdout.flush(); time.sleep(0.003)\n"
    "    i += 1\n"
    "sys.stdout.write('tail-without-newline'); sys.stdout.flush()\n"
)


def until_profile(tmp: Path, stop: Path):
    prof = writer_profile(tmp)
    return dataclasses.replace(prof, command=(PY, "-c", UNTIL, str(stop)))


@pytest.mark.slow
async def test_tail_survives_20_connection_cuts(sshd_server: SshdServer, tmp_path: Path) -> None:
    """Kill the sshd process serving our connection 20 times while lines are written: 0 lost, 0 dup."""
    t = await connect(sshd_server)
    states = []
    try:
        control = ServerControl(t, str(tmp_path / "runs"), python=PY, timings=FAST)
        # writes until the cuts are done (however slow reconnects are), then ends with a partial line
        stop = tmp_path / "stop-writing"
        run = await control.launch(until_profile(tmp_path, stop), launch=1)
        tail = LogTail(t, run.log_path, python=PY, on_state=states.append, timings=FAST.replace(link_backoff_initial_s=0.05))
        cuts = 0

        async def cutter() -> None:
            nonlocal cuts
            rng = random.Random(4)
            while cuts < 20:
                before = tail.offset
                t0 = time.monotonic()
                while tail.offset == before and time.monotonic() - t0 < 10:
                    await asyncio.sleep(0.01)
                await asyncio.sleep(rng.uniform(0.02, 0.15))
                if await asyncio.to_thread(sshd_server.kill_connections):
                    cuts += 1

        cut_task = asyncio.create_task(cutter())
        collecting = asyncio.create_task(collect(tail, b"tail-without-newline", timeout=240))
        await asyncio.wait_for(cut_task, 230)
        stop.write_text("")
        data = await collecting
        assert cuts == 20
        check_sequence(data, 0)
        assert data.endswith(b"tail-without-newline")
        assert tail.reconnects >= 20
        kinds = {s.state for s in states}
        assert {"lost", "reconnecting", "connected"} <= kinds
        assert any(s.retry_in for s in states if s.state == "reconnecting")
        # the server never noticed
        assert (await control.exit_info(run)) == (0, None)
    finally:
        await t.close()


@pytest.mark.slow
async def test_server_survives_disconnect_and_reattach(sshd_server: SshdServer, tmp_path: Path) -> None:
    t = await connect(sshd_server)
    control = ServerControl(t, str(tmp_path / "runs"), python=PY, timings=FAST)
    run = await control.launch(writer_profile(tmp_path, n=100000, delay=0.01), launch=3)
    await t.close()
    sshd_server.kill_connections()
    await asyncio.sleep(0.5)

    t2 = await connect(sshd_server)
    try:
        c2 = ServerControl(t2, str(tmp_path / "runs"), python=PY, timings=FAST)
        runs = await c2.list_runs()
        assert [r.run_id for r in runs] == [run.run_id]
        found = runs[0]
        assert (
            found.alive and found.pid == run.pid and found.start_time == run.start_time and found.launch == 3
        )
        src = LiveSource(t2, c2, found, poll_s=0.2, timings=FAST)
        seen = 0
        async for ev in src.events():
            if ev.type == "log" and ev.text.startswith("line"):
                seen += 1
                if seen == 60:
                    break
        src.stop()
        assert (await c2.stop(found, grace=5)).exit == (None, 15)
        assert not (await c2.list_runs())[0].alive
    finally:
        await t2.close()


async def test_foreign_process_never_signalled_over_ssh(sshd_server: SshdServer, tmp_path: Path) -> None:
    t = await connect(sshd_server)
    try:
        with foreign_sleeper() as (victim, start):
            control = ServerControl(t, str(tmp_path / "runs"), python=PY, timings=FAST)
            forged = forged_run(victim, start, run_id="20990101-000000-L1-abcdef", run_dir=str(tmp_path))
            with pytest.raises(NotOurProcess):
                await control.stop(forged, grace=1)
            assert victim.poll() is None
    finally:
        await t.close()


HTTP_SERVER = (
    "import sys, http.server\n"
    "port = int(sys.argv[sys.argv.index('--port') + 1])\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        self.send_response(200); self.end_headers(); self.wfile.write(b'ok from host')\n"
    "http.server.HTTPServer(('127.0.0.1', port), H).serve_forever()\n"
)


@pytest.mark.slow
async def test_forward_port_and_exit_event(sshd_server: SshdServer, tmp_path: Path) -> None:
    import aiohttp

    t = await connect(sshd_server)
    try:
        control = ServerControl(t, str(tmp_path / "runs"), python=PY, timings=FAST)
        port = free_port()
        prof = Profile(
            command=(PY, "-c", HTTP_SERVER),
            python=PY,
            runs_dir=str(tmp_path / "runs"),
            workdir=str(tmp_path),
            port=port,
        )
        run = await control.launch(prof, launch=1)
        local = await t.forward_port(port)
        assert local != port
        assert await t.forward_port(port) == local
        body = None
        async with aiohttp.ClientSession() as http:
            for _ in range(100):
                try:
                    async with http.get(f"http://127.0.0.1:{local}/health") as resp:
                        body = await resp.text()
                        break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.05)
        assert body == "ok from host"
        src = LiveSource(t, control, run, poll_s=0.1, timings=FAST)

        async def stop_soon() -> tuple[int | None, int | None]:
            await asyncio.sleep(0.3)
            return (await control.stop(run, grace=5)).exit

        stopper = asyncio.create_task(stop_soon())
        events = [ev async for ev in src.events()]
        assert await stopper == (None, 15)
        assert isinstance(events[-1], ProcessExited) and events[-1].signal == 15
    finally:
        await t.close()


async def test_two_instances_launch_at_once_over_ssh(sshd_server: SshdServer, tmp_path: Path) -> None:
    """Issue 11.2(a): two instances, one host + port, the same moment: exactly one server."""
    t1, t2 = await connect(sshd_server), await connect(sshd_server)
    try:
        a = ServerControl(t1, str(tmp_path / "runs"), python=PY, timings=FAST)
        b = ServerControl(t2, str(tmp_path / "runs"), python=PY, timings=FAST)
        prof = writer_profile(tmp_path, n=100000, delay=0.05, port=39555)
        results = await asyncio.gather(
            a.launch(prof, launch=1), b.launch(prof, launch=1), return_exceptions=True
        )
        runs = [r for r in results if isinstance(r, RunInfo)]
        refused = [r for r in results if isinstance(r, LaunchRefused)]
        assert len(runs) == 1 and len(refused) == 1, results
        assert runs[0].run_id in str(refused[0])
        dirs = [d.name for d in (tmp_path / "runs").iterdir() if not d.name.startswith(".")]
        assert dirs == [runs[0].run_id]
        await a.stop(runs[0], grace=2)
    finally:
        await t1.close()
        await t2.close()


class CutDuringLaunch(SSHTransport):
    """Kills the sshd serving the launch command while it runs (once the run dir exists)."""

    def __init__(self, srv: SshdServer, runs: Path, **kw):
        super().__init__(
            srv.alias, SSHOptions(config_file=str(srv.config_file), known_hosts=str(srv.known_hosts))
        )
        self.srv = srv
        self.runs = runs
        self.launches = 0

    async def run(self, argv, *, timeout=30, input=None):
        if isinstance(argv, list) and len(argv) > 3 and argv[3] == "launch":
            self.launches += 1
            task = asyncio.create_task(super().run(argv, timeout=timeout, input=input))
            for _ in range(2000):
                if task.done() or (
                    self.runs.exists() and any(not d.name.startswith(".") for d in self.runs.iterdir())
                ):
                    break
                await asyncio.sleep(0.005)
            await asyncio.to_thread(self.srv.kill_connections)
            return await task  # usually ConnectionLost; a finished command's answer may slip through
        return await super().run(argv, timeout=timeout, input=input)


@pytest.mark.slow
async def test_ssh_drop_during_launch_is_reconciled(sshd_server: SshdServer, tmp_path: Path) -> None:
    """Issue 11.2(c): the connection drops during the launch command; the server starts anyway and
    eagletui finds it by run id over a new connection instead of reporting failure."""
    runs = tmp_path / "runs"
    t = CutDuringLaunch(sshd_server, runs)
    await t.connect()
    try:
        control = ServerControl(t, str(runs), python=PY, timings=FAST.replace(control_reconcile_s=0.2))
        run = await control.launch(writer_profile(tmp_path, n=100000, delay=0.05, port=39556), launch=2)
        assert t.launches == 1
        # Right after the cut the transport may still be reconnecting: "unknown" is asked again.
        verdict = await control.liveness(run)
        for _ in range(50):
            if verdict != "unknown":
                break
            await asyncio.sleep(0.2)
            verdict = await control.liveness(run)
        assert run.pid and run.alive and verdict == "alive"
        dirs = [d.name for d in runs.iterdir() if not d.name.startswith(".")]
        assert dirs == [run.run_id]
        await control.stop(run, grace=2)
    finally:
        await t.close()
