"""The host-side module imported directly (and run the way the host runs it: ``python -c SOURCE``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagletui.remote import hostside, hosttail
from eagletui.remote.transport import host_program

PY = sys.executable


def run_host(op: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run an operation exactly as the client does on a host: the module's source via ``-c``."""
    return subprocess.run(
        host_program(PY, op, *args), input=input, capture_output=True, text=True, timeout=60
    )


def own_start() -> str:
    return Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19]


def test_parse_stat_comm_with_spaces_and_parentheses() -> None:
    rest = " ".join(["S", "1", "4242"] + [str(i) for i in range(3, 19)] + ["987654", "0"])
    fields = hostside.parse_stat(f"123 (evil) name) (x) {rest}")
    assert fields is not None
    assert fields[0] == "S" and fields[2] == "4242" and fields[19] == "987654"


@pytest.mark.parametrize("text", ["", "123 no parenthesis S 1 2", "1 (a) S 1 2 3", "garbage)"])
def test_parse_stat_garbled_is_none(text: str) -> None:
    assert hostside.parse_stat(text) is None


def test_probe_alive_dead_reused() -> None:
    assert hostside.probe(os.getpid(), own_start())[0] == hostside.ALIVE
    verdict, why = hostside.probe(os.getpid(), "1")
    assert verdict == hostside.DEAD and "start time" in why
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    assert hostside.probe(pid_max + 1, "1")[0] == hostside.DEAD


def test_probe_zombie_is_dead() -> None:
    child = subprocess.Popen([PY, "-c", "pass"])
    start = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    for _ in range(500):  # not reaped: it stays a zombie until wait()
        if Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.01)
    try:
        assert hostside.probe(child.pid, start)[0] == hostside.DEAD
    finally:
        child.wait()


def test_environ_and_port_helpers() -> None:
    child = subprocess.Popen(
        [PY, "-c", "import time; time.sleep(30)", "--port", "31999"],
        env={**os.environ, "EAGLETUI_RUN_ID": "r-1"},
    )
    try:
        for _ in range(500):
            if hostside.cmdline(child.pid) and "--port" in (hostside.cmdline(child.pid) or []):
                break
            time.sleep(0.01)
        assert hostside.environ_has(child.pid, "EAGLETUI_RUN_ID", "r-1") is True
        assert hostside.environ_has(child.pid, "EAGLETUI_RUN_ID", "r-2") is False
        assert child.pid in hostside.processes_of_run("r-1")
        assert hostside.port_from_argv(hostside.cmdline(child.pid)) == 31999
    finally:
        child.kill()
        child.wait()
    assert hostside.port_from_argv(["x", "--port=123"]) == 123
    assert hostside.port_from_argv(["x", "--port", "abc"]) is None


def test_rewritten_checks_the_bytes_before_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"0123456789" * 1000)
    anchor = path.read_bytes()[-hosttail.ANCHOR :]
    crc = hosttail.anchor_crc(anchor)
    pos = path.stat().st_size
    fd = os.open(path, os.O_RDONLY)
    try:
        assert not hosttail.rewritten(fd, pos, len(anchor), crc)
        assert not hosttail.rewritten(fd, pos, 0, 0)  # nothing to compare yet
        path.write_bytes(b"abcdefghij" * 2000)  # truncated and rewritten bigger: size alone can't tell
        assert hosttail.rewritten(fd, pos, len(anchor), crc)
    finally:
        os.close(fd)


def test_probe_op_as_the_host_runs_it() -> None:
    res = run_host("probe", str(os.getpid()), own_start())
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["state"] == "alive"
    res = run_host("probe", str(os.getpid()), "1")
    assert json.loads(res.stdout)["state"] == "dead"


def test_unknown_op_is_an_error() -> None:
    res = run_host("nonsense")
    assert res.returncode == 2 and "unknown operation" in res.stderr


def _spec(tmp: Path, run_id: str, port: int = 38111) -> dict:
    argv = [PY, "-c", "import time; time.sleep(60)", "--port", str(port)]
    return {
        "runs_dir": str(tmp / "runs"),
        "run_id": run_id,
        "argv": argv,
        "env": {},
        "env_redacted": {},
        "command_sh": "#\n",
        "workdir": str(tmp),
        "client": "tester@here pid 1",
        "run": {"run_id": run_id, "argv": argv, "port": port, "launch": 1, "owned": True},
    }


def _kill(info: dict) -> None:
    if "pid" in info:
        os.killpg(int(info["pgid"]), signal.SIGKILL)


def test_launch_lock_refuses_while_the_holder_lives_and_find_reports(tmp_path: Path) -> None:
    first = json.loads(run_host("launch", "r-a", input=json.dumps(_spec(tmp_path, "r-a"))).stdout)
    try:
        assert first["pid"]
        res = json.loads(run_host("launch", "r-b", input=json.dumps(_spec(tmp_path, "r-b"))).stdout)
        assert "refused" in res and "r-a" in res["refused"] and "tester@here" in res["refused"]
        assert not (tmp_path / "runs" / "r-b").exists()
        found = json.loads(run_host("find", str(tmp_path / "runs"), "r-a").stdout)
        assert found["state"] == "running" and found["run"]["pid"] == first["pid"]
        assert json.loads(run_host("find", str(tmp_path / "runs"), "r-x").stdout)["state"] == "absent"
        # another port is another lock
        other = json.loads(run_host("launch", "r-c", input=json.dumps(_spec(tmp_path, "r-c", 38112))).stdout)
        _kill(other)
    finally:
        _kill(first)
    # the holder is gone (the kernel says so): the lock is stale and may be taken
    for _ in range(500):
        if hostside.probe(first["pid"], first["start_time"])[0] == hostside.DEAD:
            break
        time.sleep(0.01)
    second = json.loads(run_host("launch", "r-d", input=json.dumps(_spec(tmp_path, "r-d"))).stdout)
    try:
        assert second.get("pid"), second
    finally:
        _kill(second)


def test_source_is_old_python_compatible() -> None:
    """The host's python3 may be a distribution's 3.6: no syntax newer than that, no annotations
    evaluated at run time (``list[str]``), no ``from __future__`` that 3.6 lacks."""

    from eagletui.remote.transport import host_source

    for module in ("hostside", "hosttail"):
        check_old_python(host_source(module))


def check_old_python(source: str) -> None:
    import ast

    tree = ast.parse(source, feature_version=(3, 6))
    futures = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    assert not futures
    annotated = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and (n.returns or any(a.annotation for a in n.args.args))
    ]
    assert not annotated
