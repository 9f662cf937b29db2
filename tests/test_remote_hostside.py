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

from eagletui.remote import hostproc, hosttail
from eagletui.remote.transport import HOST_PARTS, host_program, host_source, without_local_imports

PY = sys.executable


def run_host(op: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run an operation exactly as the client does on a host: the program's source via ``-c``, by an
    interpreter that cannot import eagletui (``-I -S``: no site-packages, no current directory), as on
    a host without an eagletui install."""
    argv = host_program(PY, op, *args)
    return subprocess.run(
        [argv[0], *ISOLATED, *argv[1:]], input=input, capture_output=True, text=True, timeout=60
    )


#: A Python that sees the standard library only: eagletui (installed in the venv) is not importable.
ISOLATED = ("-I", "-S")


def own_start() -> str:
    return Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19]


def test_parse_stat_comm_with_spaces_and_parentheses() -> None:
    rest = " ".join(["S", "1", "4242"] + [str(i) for i in range(3, 19)] + ["987654", "0"])
    fields = hostproc.parse_stat(f"123 (evil) name) (x) {rest}")
    assert fields is not None
    assert fields[0] == "S" and fields[2] == "4242" and fields[19] == "987654"


@pytest.mark.parametrize("text", ["", "123 no parenthesis S 1 2", "1 (a) S 1 2 3", "garbage)"])
def test_parse_stat_garbled_is_none(text: str) -> None:
    assert hostproc.parse_stat(text) is None


def test_probe_alive_dead_reused() -> None:
    assert hostproc.probe(os.getpid(), own_start())[0] == hostproc.ALIVE
    verdict, why = hostproc.probe(os.getpid(), "1")
    assert verdict == hostproc.DEAD and "start time" in why
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    assert hostproc.probe(pid_max + 1, "1")[0] == hostproc.DEAD


def test_probe_zombie_is_dead() -> None:
    child = subprocess.Popen([PY, "-c", "pass"])
    start = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    for _ in range(500):  # not reaped: it stays a zombie until wait()
        if Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.01)
    try:
        assert hostproc.probe(child.pid, start)[0] == hostproc.DEAD
    finally:
        child.wait()


def test_environ_and_port_helpers() -> None:
    child = subprocess.Popen(
        [PY, "-c", "import time; time.sleep(30)", "--port", "31999"],
        env={**os.environ, "EAGLETUI_RUN_ID": "r-1"},
    )
    try:
        for _ in range(500):
            if hostproc.cmdline(child.pid) and "--port" in (hostproc.cmdline(child.pid) or []):
                break
            time.sleep(0.01)
        assert hostproc.environ_has(child.pid, "EAGLETUI_RUN_ID", "r-1") is True
        assert hostproc.environ_has(child.pid, "EAGLETUI_RUN_ID", "r-2") is False
        assert child.pid in hostproc.processes_of_run("r-1")
        assert hostproc.port_from_argv(hostproc.cmdline(child.pid)) == 31999
    finally:
        child.kill()
        child.wait()
    assert hostproc.port_from_argv(["x", "--port=123"]) == 123
    assert hostproc.port_from_argv(["x", "--port", "abc"]) is None


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
        if hostproc.probe(first["pid"], first["start_time"])[0] == hostproc.DEAD:
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

    for module in HOST_PARTS:
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


def _isolated(module: str, *args: str, **kw) -> subprocess.CompletedProcess[str]:
    """The assembled program ``module`` run as the host runs it, by a Python without eagletui."""
    return subprocess.run(
        [PY, *ISOLATED, "-c", host_source(module), *args], capture_output=True, text=True, timeout=60, **kw
    )


def test_isolated_python_cannot_import_eagletui() -> None:
    """The premise of the tests below: what runs there runs without eagletui, as on a host."""
    res = subprocess.run([PY, *ISOLATED, "-c", "import eagletui"], capture_output=True, text=True)
    assert res.returncode != 0 and "No module named 'eagletui'" in res.stderr


@pytest.mark.parametrize("module", sorted(HOST_PARTS))
def test_each_host_program_runs_as_one_text(module: str) -> None:
    """Split into parts, a program is still one text on the host: an unknown operation is answered by
    its own main (usage error, exit 2), not by an ImportError of a part it fails to carry."""
    res = _isolated(module, "nonsense")
    assert res.returncode == 2, res.stderr
    assert f"eagletui {module}: unknown operation ['nonsense']" in res.stderr


def test_hostside_parts_work_together_without_eagletui(tmp_path: Path) -> None:
    """One harmless operation per part of hostside, in the assembled text: probe (hostproc), find
    (hostlaunch), stop of a run with no record (hoststop), list (hostside, hostfiles)."""
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    res = _isolated("hostside", "probe", str(pid_max + 1), "1")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["state"] == "dead"
    runs = tmp_path / "runs"
    (runs / "r-old").mkdir(parents=True)
    (runs / "r-old" / "run.json").write_text(json.dumps({"run_id": "r-old", "pid": pid_max + 1, "start_time": "1"}))
    res = _isolated("hostside", "find", str(runs), "r-none")
    assert res.returncode == 0 and json.loads(res.stdout) == {"state": "absent"}, res.stderr
    res = _isolated("hostside", "stop", str(runs / "r-old"), str(pid_max + 1), "1", "1", "1", "0", "r-old")
    assert res.returncode == 0 and json.loads(res.stdout)["result"] == "not_ours", res.stderr
    res = _isolated("hostside", "list", str(runs))
    assert res.returncode == 0, res.stderr
    assert [(r["run_id"], r["state"]) for r in json.loads(res.stdout)] == [("r-old", "dead")]


def test_hostslurm_parts_work_together_without_eagletui(tmp_path: Path) -> None:
    """slurm_state reads the job through hostslurmjob; with no Slurm on the PATH it is ``unknown``
    (never "ended"), said by the part that runs the commands."""
    (tmp_path / "bin").mkdir()
    res = _isolated("hostslurm", "slurm_state", str(tmp_path), "12", env={"PATH": str(tmp_path / "bin")})
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["state"] == "unknown" and "scontrol: command not found" in out["detail"]


def test_hosttail_runs_without_eagletui(tmp_path: Path) -> None:
    """The reader streams the file (an ``I`` frame, then the data) and exits when its stdin closes."""
    log = tmp_path / "server.log"
    log.write_bytes(b"hello\n")
    res = subprocess.run(
        [PY, *ISOLATED, "-c", host_source("hosttail"), "tail", str(log), "0", "0", "0", "0", "0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    kinds, data, rest = [], b"", res.stdout
    while rest:
        kind, a, n = hosttail.HEADER.unpack(rest[: hosttail.HEADER.size])
        payload = rest[hosttail.HEADER.size : hosttail.HEADER.size + n]
        rest = rest[hosttail.HEADER.size + n :]
        kinds.append(kind)
        if kind == b"D":
            data += payload
    assert kinds[0] == b"I" and data == b"hello\n"


def test_host_program_parts_import_only_the_standard_library_and_share_no_name() -> None:
    """On the host the parts are one namespace: a name defined in two parts would silently be the
    later one, and an import of anything but the standard library (eagletui included) fails there."""
    import ast

    for module, parts in HOST_PARTS.items():
        seen: dict[str, str] = {}
        for part in parts:
            text = (Path(hostproc.__file__).parent / f"{part}.py").read_text()
            tree = ast.parse(without_local_imports(text, part))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                else:
                    continue
                for name in names:
                    assert name.split(".")[0] in sys.stdlib_module_names, f"{part}: imports {name}"
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    defined = [node.name]
                elif isinstance(node, ast.Assign):
                    defined = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                else:
                    continue
                for name in defined:
                    assert seen.setdefault(name, part) == part, f"{module}: {name} in {seen[name]} and {part}"


_RACE_DRIVER = r"""
import os, sys
from eagletui.remote import hosttail
path, old_size = sys.argv[1], int(sys.argv[2])
real_pread = os.pread
done = []
def pread(fd, n, pos):
    # the file is rewritten (truncated, then longer new content) between the reader's check of the
    # old content and its next read at the old end: the read itself sees only the new file
    if pos == old_size and not done:
        done.append(1)
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(b"new " * 50_000)
    return real_pread(fd, n, pos)
os.pread = pread
hosttail.op_tail([path, "0", "0", "0", "0", "0"])
"""


def _frames(data: bytes) -> list[tuple[bytes, int, bytes]]:
    out, i = [], 0
    while i + hosttail.HEADER.size <= len(data):
        k, a, n = hosttail.HEADER.unpack_from(data, i)
        i += hosttail.HEADER.size
        out.append((k, a, data[i : i + n]))
        i += n
    return out


def test_a_rewrite_between_the_check_and_the_read_is_caught(tmp_path: Path) -> None:
    """Seen while another suite ran beside this one: a log truncated and rewritten longer right after
    the reader had checked it was read on from the old end, so the client got the new file's tail
    after the old content and never a reset. The reader now checks the old content after each read."""
    import subprocess
    import sys
    import time

    path = tmp_path / "server.log"
    old = b"old line\n" * 1000
    path.write_bytes(old)
    proc = subprocess.Popen(
        [sys.executable, "-c", _RACE_DRIVER, str(path), str(len(old))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    new = b"new " * 50_000
    got = b""
    try:
        deadline = time.monotonic() + 60
        data = b""
        while time.monotonic() < deadline:
            data += os.read(proc.stdout.fileno(), 1 << 20)  # type: ignore[union-attr]
            frames = _frames(data)
            got = b"".join(p for k, _a, p in frames if k == b"D")
            if len(got) >= len(old) + len(new):
                break
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(10)
    kinds = [k for k, _a, _p in frames]
    assert b"T" in kinds, kinds
    after = b"".join(p for k, _a, p in frames[kinds.index(b"T") :] if k == b"D")
    assert got[: len(old)] == old and after == new
    assert [a for k, a, _p in frames[kinds.index(b"T") :] if k == b"D"][0] == 0  # read again from 0
