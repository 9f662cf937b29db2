"""What a real SGLang server does to itself, and eagletui's control surviving it (issue 18).

Seen on sglang 0.5.17 on an H200 (``shared/fixtures/sglang-0.5.17-h200-eagletui``): the scheduler and
detokenizer rename themselves with setproctitle, which wipes their environ, so a stop that demanded
``EAGLETUI_RUN_ID`` in every process refused to stop eagletui's own server; a group SIGTERM made every
log end in SGLang's crash wording; the preflight imported sglang (18 s) to find it, and took TIME_WAIT
sockets for a listener. The simulator now does the same things (``eagletui/sim/children.py``, its
``EAGLETUI_SIM_IMPORT_DELAY``, aiohttp's server-side close), so each of these tests failed before the fix.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from eagletui.commands.demo import free_port
from eagletui.core.profile.model import Profile
from eagletui.core.timings import FAST
from eagletui.remote import hostproc
from eagletui.remote.control import RunInfo, ServerControl
from eagletui.remote.local import LocalTransport
from eagletui.remote.preflight import run_preflight

PY = sys.executable
REPO = Path(__file__).resolve().parent.parent


def sim_profile(tmp: Path, port: int | None = None, tp: int = 2, **args) -> Profile:
    return Profile(
        name="sim",
        command=(PY, "-m", "eagletui.sim"),
        python=PY,
        runs_dir=str(tmp / "runs"),
        workdir=str(REPO),
        port=port or free_port(),
        env={"PYTHONPATH": str(REPO)},
        args={
            "--model-path": "meta-llama/Llama-3.1-8B-Instruct",
            "--tp-size": tp,
            "--sim-time-scale": 0.01,
            "--host": "127.0.0.1",
            **args,
        },
    )


@pytest.fixture
def control(tmp_path: Path) -> ServerControl:
    return ServerControl(LocalTransport(), str(tmp_path / "runs"), python=PY, timings=FAST)


async def until_ready(run: RunInfo, timeout: float = 60) -> str:
    log = Path(run.log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "ready to roll" in text:
            return text
        if hostproc.probe(run.pid, run.start_time)[0] == hostproc.DEAD:
            break
        await asyncio.sleep(0.05)
    raise AssertionError("not ready:\n" + log.read_text(errors="replace")[-2000:])


def children_of(pid: int) -> list[int]:
    out = []
    for p in hostproc.pids():
        verdict, fields = hostproc.read_stat(p)
        if verdict == hostproc.ALIVE and int(fields[1]) == pid and fields[0] not in "ZX":
            out.append(p)
    return out


def alive(pid: int, start: str) -> bool:
    return hostproc.probe(pid, start)[0] == hostproc.ALIVE


@pytest.mark.slow
async def test_children_renamed_with_their_environ_wiped_are_stopped(
    tmp_path: Path, control: ServerControl
) -> None:
    run = await control.launch(sim_profile(tmp_path, tp=2), launch=1)
    await until_ready(run)
    kids = children_of(run.pid)
    assert len(kids) == 3, kids  # two schedulers and a detokenizer, as SGLang at --tp 2
    for k in kids:
        cmd = Path(f"/proc/{k}/cmdline").read_bytes()
        assert cmd.startswith(b"sglang::"), cmd
        # what setproctitle leaves: the environ area is NUL bytes, the run id is gone
        assert not Path(f"/proc/{k}/environ").read_bytes().strip(b"\0")
        assert hostproc.environ_has(k, hostproc.RUN_ID_VAR, run.run_id) is False
    starts = {k: hostproc.read_stat(k)[1][19] for k in kids}
    proofs = {m["pid"]: m["proof"] for m in await control.members(run)}
    assert proofs[run.pid] == "leader" and all(proofs[k] == "child" for k in kids), proofs

    out = await control.stop(run, grace=10)
    assert out.ended_by == "leader", out
    assert not any(alive(k, s) for k, s in starts.items())
    assert await control.liveness(run) == "dead"


@pytest.mark.slow
async def test_stop_takes_sglang_own_shutdown_path(tmp_path: Path, control: ServerControl) -> None:
    """SIGTERM to the leader alone: SGLang drains and kills its tree. A group SIGTERM instead kills the
    schedulers first, and the log ends in the crash wording (and 5 s of crash diagnostics)."""
    run = await control.launch(sim_profile(tmp_path), launch=1)
    await until_ready(run)
    out = await control.stop(run, grace=10)
    text = Path(run.log_path).read_text()
    assert "SIGTERM received" in text and "Gracefully exiting" in text
    assert "crashed with exit code" not in text and "SIGQUIT received" not in text
    assert out.ended_by == "leader" and out.steps[0]["step"] == "leader"
    assert out.describe().startswith("stopped in ")

    # what eagletui used to do: the whole group at once
    run2 = await control.launch(sim_profile(tmp_path), launch=2)
    await until_ready(run2)
    os.killpg(run2.pgid, signal.SIGTERM)
    for _ in range(200):
        if await control.liveness(run2, confirm=False) == "dead":
            break
        await asyncio.sleep(0.05)
    text2 = Path(run2.log_path).read_text()
    assert re.search(r"Subprocess (scheduler_\d|detokenizer) \(pid=\d+\) crashed with exit code -15", text2)
    assert "Sleeping 5 seconds before crash diagnostics" in text2


STUBBORN = r"""
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from eagletui.sim.children import set_proc_title
if sys.argv[2] == "deaf-leader":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN if sys.argv[2] == "child" else signal.SIG_DFL)
    set_proc_title("sglang::scheduler")
    while True:
        time.sleep(1)
print("up", flush=True)
while True:
    time.sleep(1)
"""


@pytest.mark.parametrize(
    ("who", "ended"),
    [
        ("leader-dies-alone", "group"),  # the leader exits on SIGTERM, its child does not follow
        ("child", "kill"),  # the child ignores SIGTERM
        ("deaf-leader", "kill"),  # the leader ignores SIGTERM
    ],
)
@pytest.mark.slow
async def test_stop_escalates_one_step_at_a_time(
    tmp_path: Path, control: ServerControl, who: str, ended: str
) -> None:
    prof = Profile(
        command=(PY, "-c", STUBBORN, str(REPO), who),
        python=PY,
        runs_dir=str(tmp_path / "runs"),
        workdir=str(tmp_path),
        port=free_port(),
    )
    run = await control.launch(prof, launch=1)
    for _ in range(100):
        if children_of(run.pid):
            break
        await asyncio.sleep(0.05)
    (kid,) = children_of(run.pid)
    kid_start = hostproc.read_stat(kid)[1][19]
    out = await control.stop(run, grace=1, group_wait=1, kill_wait=5)
    assert out.ended_by == ended, out
    steps = ["leader", "group", "kill"]
    assert [s["step"] for s in out.steps] == steps[: steps.index(ended) + 1]
    assert not alive(kid, kid_start)


ORPHAN = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
from eagletui.sim.children import set_proc_title
if os.fork() == 0:
    os.setsid()               # its own session: out of the leader's, as a daemonising child does
    if os.fork() == 0:
        set_proc_title("sglang::detokenizer")
        open(sys.argv[2], "w").write(str(os.getpid()))
        while True:
            time.sleep(1)
    os._exit(0)
time.sleep(0.5)
print("leader exits, its grandchild lives on", flush=True)
"""


@pytest.mark.slow
async def test_an_orphan_of_the_server_is_still_ours(tmp_path: Path, control: ServerControl) -> None:
    """The leader exited; a grandchild in a session of its own, environ wiped, holds on. It was
    re-parented to eagletui's waiter (the subreaper), so the stop can prove it and end it; a stranger
    started the same way outside eagletui is never touched."""
    marker = tmp_path / "orphan.pid"
    prof = Profile(
        command=(PY, "-c", ORPHAN, str(REPO), str(marker)),
        python=PY,
        runs_dir=str(tmp_path / "runs"),
        workdir=str(tmp_path),
        port=free_port(),
    )
    stranger = subprocess.Popen([PY, "-c", ORPHAN, str(REPO), str(tmp_path / "stranger.pid")])
    run = await control.launch(prof, launch=1)
    for _ in range(100):
        if marker.exists() and marker.read_text() and (tmp_path / "stranger.pid").exists():
            if await control.liveness(run, confirm=False) == "dead":
                break
        await asyncio.sleep(0.05)
    orphan = int(marker.read_text())
    other = int((tmp_path / "stranger.pid").read_text())
    try:
        orphan_start = hostproc.read_stat(orphan)[1][19]
        proofs = {m["pid"]: m["proof"] for m in await control.members(run)}
        assert proofs == {orphan: "child"}, proofs
        out = await control.stop(run, grace=1)
        assert out.ended_by in ("group", "kill") and not alive(orphan, orphan_start)
        assert hostproc.read_stat(other)[0] == hostproc.ALIVE, (
            "a process eagletui did not start was signalled"
        )
    finally:
        os.kill(other, signal.SIGKILL)
        stranger.wait()


async def test_preflight_finds_sglang_without_importing_it(tmp_path: Path, monkeypatch) -> None:
    """``import sglang`` costs 17-19 s on a GPU host: the preflight must find the module and its
    version without it (here a package whose import would take a minute)."""
    site = tmp_path / "site"
    pkg = site / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    (pkg / "launch_server.py").write_text("")
    dist = site / "sglang-0.5.17.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.17\n")
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    prof = Profile(
        command=("{python}", "-m", "sglang.launch_server"),
        python=PY,
        workdir=str(tmp_path),
        runs_dir=str(tmp_path / "runs"),
        port=free_port(),
    )
    t0 = time.monotonic()
    checks = {c.name: c for c in await run_preflight(LocalTransport(), prof)}
    assert time.monotonic() - t0 < 15
    mod = checks["server module"]
    assert mod.status == "pass" and "version 0.5.17" in mod.message, mod

    # the simulator, made as slow to import as sglang
    monkeypatch.setenv("EAGLETUI_SIM_IMPORT_DELAY", "60")
    sim = Profile(command=("{python}", "-m", "eagletui.sim"), python=PY, workdir=str(REPO), port=free_port())
    t0 = time.monotonic()
    checks = {c.name: c for c in await run_preflight(LocalTransport(), sim)}
    assert time.monotonic() - t0 < 15
    assert checks["server module"].status == "pass", checks["server module"]


@pytest.mark.slow
async def test_preflight_port_check_ignores_time_wait_after_a_stop(
    tmp_path: Path, control: ServerControl
) -> None:
    """Right after a server stopped, its port has TIME_WAIT sockets for a minute. They are no listener:
    uvicorn binds with SO_REUSEADDR, so the next launch can bind; only a listening socket is "in use"."""
    prof = sim_profile(tmp_path)
    run = await control.launch(prof, launch=1)
    await until_ready(run)
    async with aiohttp.ClientSession() as s:
        for _ in range(3):
            async with s.get(f"http://127.0.0.1:{prof.port}/health") as r:
                await r.read()
        await control.stop(run, grace=10)
    states = [
        line.split()[3]
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
        if int(line.split()[1].rsplit(":", 1)[1], 16) == prof.port
    ]
    assert "06" in states, states  # the server closed first: TIME_WAIT on its port
    port = {c.name: c for c in await run_preflight(LocalTransport(), prof)}["port"]
    assert port.status == "pass" and "TIME_WAIT" in port.message, port

    # the old check, a bind without SO_REUSEADDR, is refused right now: that was the false "in use"
    with socket.socket() as probe, pytest.raises(OSError):
        probe.bind(("127.0.0.1", prof.port))
    with socket.socket() as listener:  # a real listener (bound as uvicorn binds) is "in use"
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", prof.port))
        listener.listen()
        port = {c.name: c for c in await run_preflight(LocalTransport(), prof)}["port"]
        assert port.status == "fail" and "in use" in port.message


def sim_toml(tmp: Path, port: int, *, env: str = "", name: str = "simtest", model: str = "") -> str:
    p = tmp / f"{name}.toml"
    p.write_text(
        f"""
name = "{name}"
[target]
python = "{PY}"
workdir = "{REPO}"
[server]
command = ["{{python}}", "-m", "eagletui.sim"]
port = {port}
host = "127.0.0.1"
runs_dir = "{tmp}/runs"
ready_timeout_s = 60
[server.args]
model-path = "{model or "meta-llama/Llama-3.1-8B-Instruct"}"
tp = 2
speculative-algorithm = "EAGLE3"
speculative-draft-model-path = "lmsys/EAGLE3-LLaMA3.1-Instruct-8B"
enable-metrics = true
sim-time-scale = 0.01
[server.env]
PYTHONPATH = "{REPO}"
{env}
[bench]
num_prompts = 4
concurrency = 2
max_new_tokens = 32
warmup = 1
"""
    )
    return str(p)


async def launched(profile_path: str, control: ServerControl) -> RunInfo:
    from eagletui.core.profile.load import load_profile

    run = await control.launch(load_profile(profile_path), launch=1)
    await until_ready(run)
    return run


@pytest.mark.slow
async def test_trace_capture_reports_a_server_that_dies_after_the_profile(tmp_path: Path, capsys) -> None:
    """sglang 0.5.17's scheduler segfaulted in the torch profiler's destructor 0-2 s after "Profiling
    done" and eagletui printed the breakdown and exited 0. Now it watches the server and says."""
    from eagletui.commands import trace

    port = free_port()
    control = ServerControl(LocalTransport(), str(tmp_path / "runs"), python=PY, timings=FAST)
    prof = sim_toml(tmp_path, port, env='EAGLETUI_SIM_FAIL = "segv-after-profile"')
    run = await launched(prof, control)
    argv = [
        "--capture",
        "local",
        "--profile",
        prof,
        "--steps",
        "3",
        "--out",
        str(tmp_path / "tr"),
        "--watch",
        "10",
    ]
    rc = await asyncio.to_thread(trace.main, argv)
    out = capsys.readouterr()
    assert rc == 3, out.err
    assert "the server died after the capture" in out.err, out.err
    assert "kernel time" in out.out  # the traces fetched before the death are still shown
    assert await control.liveness(run) == "dead"

    # a healthy server: the same capture says so and exits 0
    prof2 = sim_toml(tmp_path, free_port(), name="healthy")
    run2 = await launched(prof2, control)
    argv2 = [
        "--capture",
        "local",
        "--profile",
        prof2,
        "--steps",
        "3",
        "--out",
        str(tmp_path / "t2"),
        "--watch",
        "2",
    ]
    rc = await asyncio.to_thread(trace.main, argv2)
    out = capsys.readouterr()
    assert rc == 0 and "the server is still alive" in out.err, out.err
    await control.stop(run2, grace=10)


@pytest.mark.slow
async def test_reattach_follows_only_this_profiles_run(tmp_path: Path) -> None:
    """Profile B (other port, other model) must not take profile A's server, nor stop it."""
    from eagletui.core.events import Notice
    from eagletui.core.profile.load import load_profile
    from eagletui.workspace import Workspace

    control = ServerControl(LocalTransport(), str(tmp_path / "runs"), python=PY, timings=FAST)
    prof_a = sim_toml(tmp_path, free_port(), name="a")
    run_a = await launched(prof_a, control)
    prof_b = sim_toml(tmp_path, free_port(), name="b", model="Qwen/Qwen2.5-7B-Instruct")
    seen: list = []
    ws = Workspace(load_profile(prof_b), seen.append, target="local", preflight=False, timings=FAST)
    await ws.connect()
    try:
        assert await ws.attach_newest() is False
        warn = [e.message for e in seen if isinstance(e, Notice) and e.source == "attach"]
        assert warn and run_a.run_id in warn[0] and "not this profile's" in warn[0] and "port" in warn[0], (
            warn
        )
        assert ws.run is None
    finally:
        await ws.close()
    seen.clear()
    ws = Workspace(load_profile(prof_a), seen.append, target="local", preflight=False, timings=FAST)
    await ws.connect()
    try:
        assert await ws.attach_newest() is True
        msg = [e.message for e in seen if isinstance(e, Notice) and e.source == "attach"][0]
        assert f"reattached to run {run_a.run_id}" in msg and "same port" in msg and "asks first" in msg
        assert await ws.needs_consent() is True  # not launched in this session
    finally:
        await ws.close()
    assert await control.liveness(run_a) == "alive"
    await control.stop(run_a, grace=10)


TAMPER = r"""
import json, os, sys, time
rd = os.path.join(sys.argv[1], os.environ["EAGLETUI_RUN_ID"])
print("The server is fired up and ready to roll!", flush=True)
time.sleep(1.0)
rec = json.load(open(os.path.join(rd, "pid")))
rec["start_time"] = "1"  # the run record no longer names this process: the stop must refuse
json.dump(rec, open(os.path.join(rd, "pid"), "w"))
time.sleep(60)
"""


@pytest.mark.slow
def test_bench_exits_non_zero_when_its_stop_fails(tmp_path: Path, capsys) -> None:
    """``stopping the server failed … exits 0`` was a silent success that left the server running."""
    from eagletui.commands.bench import main

    script = tmp_path / "tamper.py"
    script.write_text(TAMPER)
    p = tmp_path / "t.toml"
    p.write_text(
        f"""
name = "tamper"
[target]
python = "{PY}"
workdir = "{tmp_path}"
[server]
command = ["{PY}", "{script}", "{tmp_path}/runs"]
port = {free_port()}
runs_dir = "{tmp_path}/runs"
ready_timeout_s = 20
[bench]
num_prompts = 1
"""
    )
    rc = main(["local", "--profile", str(p), "--launch", "--json"])
    out = capsys.readouterr()
    assert rc == 4, out.err
    assert "stopping the server failed" in out.err
    import json as _json

    doc = _json.loads(out.out)
    assert doc["stop"]["ok"] is False and "refusing" in doc["stop"]["error"]
    # clean up the process the test made unstoppable for eagletui
    for p_ in hostproc.pids():
        if str(script) in (hostproc.cmdline(p_) or []):
            os.kill(p_, signal.SIGKILL)


@pytest.mark.slow
async def test_apply_preflight_does_not_warn_about_our_own_server(
    tmp_path: Path, control: ServerControl, monkeypatch
) -> None:
    """The preflight of an apply warned "GPU memory is in use: pid 832 sglang::scheduler" about eagletui's
    own server, the one the relaunch stops first. Only other processes' memory is a warning."""
    from eagletui.remote.preflight import OwnServer

    run = await control.launch(sim_profile(tmp_path), launch=1)
    await until_ready(run)
    scheduler = children_of(run.pid)[0]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\ncase "$1" in\n'
        "  --query-gpu*) printf '0, NVIDIA H200, 81000, 143771, 97, 612.40\\n' ;;\n"
        f"  --query-compute-apps*) printf 'GPU-abc, {scheduler}, sglang::scheduler, 80990\\n' ;;\nesac\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    prof = sim_profile(tmp_path, port=free_port())
    pids = frozenset(m["pid"] for m in await control.members(run))
    checks = {c.name: c for c in await run_preflight(LocalTransport(), prof, OwnServer(pids, "launch #1"))}
    assert (
        checks["gpus free"].status == "pass"
        and "only launch #1 holds GPU memory" in checks["gpus free"].message
    )
    checks = {c.name: c for c in await run_preflight(LocalTransport(), prof)}
    assert (
        checks["gpus free"].status == "warn"
        and f"pid {scheduler} sglang::scheduler" in checks["gpus free"].message
    )
    await control.stop(run, grace=10)


REAL_RUN = REPO / "tests" / "fixtures" / "real-sglang-0.5.17-run1"


@pytest.mark.parametrize("log", sorted((REAL_RUN / "logs").glob("*.log")), ids=lambda p: p.stem)
def test_real_server_logs_of_eagletui_stops_read_as_clean_shutdowns(log: Path) -> None:
    """The real 0.5.17 logs of servers eagletui stopped: SGLang's own shutdown path, read as "stopped";
    before the fix every one ended in the crash wording of a group SIGTERM (shared/fixtures/...)."""
    text = log.read_text()
    out = subprocess.run(
        [PY, "-m", "eagletui", "parse", str(log), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert out.returncode in (0, 1), out.stderr
    import json

    doc = json.loads(out.stdout)
    doc = doc[0] if isinstance(doc, list) else doc
    if "no-such-draft" in text:
        assert doc["state"] == "failed" and doc["failure"]["kind"] == "exception"
        return
    assert "SIGTERM received" in text and "Gracefully exiting" in text
    assert "crashed with exit code" not in text and "SIGQUIT received" not in text
    assert doc["state"] == "stopped", doc["state"]
    rec = json.loads(log.with_suffix(".pid").read_text())
    assert rec["sid"] == rec["pid"] and rec["waiter_pid"] and rec["subreaper"] is True


@pytest.mark.slow
async def test_trace_capture_says_at_once_when_the_server_dies_during_the_capture(tmp_path: Path, capsys) -> None:
    """sglang 0.5.17's scheduler aborted (``munmap_chunk(): invalid pointer``) one second into a DECODE
    capture and wrote no trace; ``trace --capture`` waited its whole 120 s for the traces before it said
    the server had died. It now asks whether the server lives while it waits."""
    from eagletui.commands import trace

    port = free_port()
    control = ServerControl(LocalTransport(), str(tmp_path / "runs"), python=PY, timings=FAST)
    prof = sim_toml(tmp_path, port, env='EAGLETUI_SIM_FAIL = "abort-during-profile"')
    run = await launched(prof, control)
    argv = ["--capture", "local", "--profile", prof, "--steps", "3", "--out", str(tmp_path / "tr")]
    argv += ["--timeout", "120", "--watch", "10", "--no-with-stack"]  # as on the real server
    t0 = time.monotonic()
    rc = await asyncio.to_thread(trace.main, argv)
    took = time.monotonic() - t0
    out = capsys.readouterr()
    assert rc == 3, out.err
    assert "note: with_stack off: on sglang 0.5.17" in out.err  # the risk is said before the capture
    assert "the server died during the capture" in out.err, out.err
    assert "no complete DECODE traces" not in out.err and "watching the server" not in out.err
    assert "native_crash" in out.err or "Aborted" in out.err, out.err
    assert took < 60, f"waited {took:.0f} s for traces from a dead server"
    assert await control.liveness(run) == "dead"
