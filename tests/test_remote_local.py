"""Server control, tail and live source against the local machine (what ``eagletui demo`` uses)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagletui.core.events import LogStale, ProcessExited
from eagletui.core.profile.model import Profile
from eagletui.core.timings import FAST
from eagletui.remote.control import RunInfo, ServerControl
from eagletui.remote.local import LocalTransport
from eagletui.remote.source import LiveSource
from eagletui.remote.tail import LogTail
from eagletui.remote.transport import ConnectionLost, NotOurProcess, open_transport

PY = sys.executable

WRITER = (
    "import sys, time\n"
    "n = int(sys.argv[1]); d = float(sys.argv[2])\n"
    "for i in range(n):\n"
    "    sys.stdout.write('line %06d ' % i + 'x' * (i % 50) + '\\n'); sys.stdout.flush(); time.sleep(d)\n"
    "sys.stdout.write('tail-without-newline'); sys.stdout.flush()\n"
    "sys.exit(int(sys.argv[3]))\n"
)


def writer_profile(tmp: Path, n: int = 50, delay: float = 0.01, code: int = 0, **kw) -> Profile:
    return Profile(
        command=(PY, "-c", WRITER, str(n), str(delay), str(code)),
        python=PY,
        runs_dir=str(tmp / "runs"),
        workdir=str(tmp),
        port=kw.pop("port", 0) or 39999,
        **kw,
    )


def check_sequence(data: bytes, n: int) -> None:
    lines = data.split(b"\n")
    seqs = [int(line.split()[1]) for line in lines if line.startswith(b"line ")]
    assert seqs == list(range(len(seqs))), "lost or duplicated lines"
    if n:
        assert len(seqs) == n


async def collect(tail: LogTail, until: bytes, timeout: float = 20) -> bytes:
    data = bytearray()

    async def go() -> None:
        async for off, chunk in tail.chunks():
            assert off == len(data)
            data.extend(chunk)
            if until in data:
                return

    await asyncio.wait_for(go(), timeout)
    tail.stop()
    await tail.wait_closed()
    return bytes(data)


@pytest.fixture
def control(tmp_path: Path) -> ServerControl:
    return ServerControl(LocalTransport(), str(tmp_path / "runs"), python=PY, timings=FAST)


async def test_open_local_transport() -> None:
    states = []
    t = await open_transport("local", on_state=states.append, timings=FAST)
    res = await t.run(["echo", "a b"])
    assert res.exit_status == 0 and res.stdout == "a b\n"
    res = await t.run("exit 3")
    assert res.exit_status == 3
    res = await t.run(["cat"], input="hello")
    assert res.stdout == "hello"
    assert await t.forward_port(1234) == 1234
    assert [s.state for s in states] == ["connected"]
    with pytest.raises(TimeoutError):
        await t.run(["sleep", "5"], timeout=0.2)


@pytest.mark.slow
async def test_launch_tail_stop(tmp_path: Path, control: ServerControl) -> None:
    prof = writer_profile(
        tmp_path, n=100000, delay=0.005, env={"FOO": "a b;c", "HF_TOKEN": "hf_secretsecret"}
    )
    t0 = time.monotonic()
    run = await control.launch(prof, launch=1)
    assert time.monotonic() - t0 < 3
    assert run.pid == run.pgid and run.start_time and Path(run.log_path).exists()
    rd = Path(run.run_dir)
    assert json.loads((rd / "command.json").read_text()) == prof.argv()
    env = json.loads((rd / "env.json").read_text())
    assert env == {"FOO": "a b;c", "HF_TOKEN": "***"}
    # command.sh relaunches the server, so it holds the real value, readable by the user only
    assert "HF_TOKEN=hf_secretsecret" in (rd / "command.sh").read_text()
    assert (rd / "command.sh").stat().st_mode & 0o777 == 0o600
    environ = Path(f"/proc/{run.pid}/environ").read_bytes().split(b"\0")
    assert b"FOO=a b;c" in environ and b"PYTHONUNBUFFERED=1" in environ
    assert await control.liveness(run) == "alive"

    data = await collect(LogTail(control.transport, run.log_path, python=PY, timings=FAST), b"line 000200")
    check_sequence(data.rsplit(b"\n", 1)[0], 0)

    out = await control.stop(run, grace=5)
    assert out.exit == (None, 15) and out.ended_by == "leader"
    assert await control.liveness(run) == "dead"
    assert await control.exit_status(run) == 128 + 15


@pytest.mark.slow
async def test_exit_code_and_live_source(tmp_path: Path, control: ServerControl) -> None:
    run = await control.launch(writer_profile(tmp_path, n=30, delay=0.01, code=3), launch=7)
    src = LiveSource(control.transport, control, run, poll_s=0.1, timings=FAST)
    events = [ev async for ev in src.events()]
    text = b"\n".join(getattr(e, "text", "").encode() for e in events if e.type == "log")
    check_sequence(text, 30)
    assert b"tail-without-newline" in text
    exited = [e for e in events if isinstance(e, ProcessExited)]
    assert exited and exited[-1].code == 3 and exited[-1].launch == 7 and exited[-1].pid == run.pid
    assert events[-1] is exited[-1]
    assert await control.exit_info(run) == (3, None)


@pytest.mark.slow
async def test_live_source_stale(tmp_path: Path, control: ServerControl) -> None:
    prof = Profile(
        command=(PY, "-c", "import time; print('hi', flush=True); time.sleep(30)"),
        python=PY,
        runs_dir=str(tmp_path / "runs"),
        workdir=str(tmp_path),
        port=39998,
    )
    run = await control.launch(prof, launch=1)
    src = LiveSource(control.transport, control, run, poll_s=0.1, timings=FAST.replace(watch_stale_s=0.5))
    got = None
    async for ev in src.events():
        if isinstance(ev, LogStale):
            got = ev
            break
    src.stop()
    assert got is not None and got.seconds >= 0.5
    await control.stop(run, grace=2)


@contextlib.contextmanager
def foreign_sleeper():
    """A process eagletui did not start, and its start time as /proc gives it (what a RunInfo records)."""
    victim = subprocess.Popen([PY, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        time.sleep(0.1)
        yield victim, Path(f"/proc/{victim.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    finally:
        victim.kill()
        victim.wait()


def forged_run(
    victim: subprocess.Popen, start: str, *, run_id: str, run_dir: str, log_path: str = ""
) -> RunInfo:
    """A run record pointing at ``victim``: what a tampered or stale run dir could hold."""
    return RunInfo(
        run_id=run_id,
        run_dir=run_dir,
        log_path=log_path,
        pid=victim.pid,
        pgid=victim.pid,
        start_time=start,
        argv=[],
        port=0,
        launch=1,
    )


async def test_not_our_process(tmp_path: Path, control: ServerControl) -> None:
    with foreign_sleeper() as (victim, start):
        # a real launch gives us a genuine run dir to point the forgery at
        run = await control.launch(writer_profile(tmp_path, n=100000, delay=0.05), launch=1)
        forged = forged_run(victim, start, run_id=run.run_id, run_dir=run.run_dir, log_path=run.log_path)
        with pytest.raises(NotOurProcess):
            await control.stop(forged, grace=1)
        forged2 = forged_run(victim, start, run_id="x", run_dir=str(tmp_path))
        with pytest.raises(NotOurProcess):
            await control.stop(forged2, grace=1)
        forged3 = RunInfo(**{**forged.__dict__, "owned": False})
        with pytest.raises(NotOurProcess):
            await control.stop(forged3, grace=1)
        # a recycled pid: the record matches but the start time does not
        stale = RunInfo(**{**run.__dict__, "start_time": "1"})
        with pytest.raises(NotOurProcess):
            await control.stop(stale, grace=1)
        assert victim.poll() is None, "a foreign process was signalled"
        assert await control.liveness(run) == "alive"
        await control.stop(run, grace=2)


@pytest.mark.slow
async def test_list_runs_and_discover_foreign(tmp_path: Path, control: ServerControl) -> None:
    r1 = await control.launch(writer_profile(tmp_path, n=3, delay=0.01), launch=1)
    await asyncio.sleep(0.05)
    r2 = await control.launch(writer_profile(tmp_path, n=100000, delay=0.05, port=39997), launch=2)
    await asyncio.sleep(0.3)
    runs = await control.list_runs()
    assert [r.run_id for r in runs] == [r2.run_id, r1.run_id]
    assert runs[0].alive and not runs[1].alive
    assert runs[0].pid == r2.pid and runs[0].start_time == r2.start_time and runs[0].owned

    pkg = tmp_path / "fake" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    log = open(tmp_path / "foreign.log", "w")
    foreign = subprocess.Popen(
        [PY, "-m", "sglang.launch_server", "--port", "31234"],
        cwd=tmp_path / "fake",
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        await asyncio.sleep(0.3)
        found = {f.pid: f for f in await control.discover_foreign()}
        assert foreign.pid in found
        f = found[foreign.pid]
        assert f.port == 31234 and f.log_path == str(tmp_path / "foreign.log")
        assert r2.pid not in found  # ours never shows up as foreign
        with pytest.raises(NotOurProcess):
            await control.stop(f.as_run(), grace=1)
        assert foreign.poll() is None
    finally:
        foreign.kill()
        foreign.wait()
        await control.stop(r2, grace=2)


async def test_tail_truncate_replace_partial(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"")
    resets: list[str] = []
    tail = LogTail(LocalTransport(), str(path), on_reset=resets.append, python=PY, timings=FAST)
    got: list[tuple[int, bytes]] = []

    async def reader() -> None:
        async for item in tail.chunks():
            got.append(item)

    task = asyncio.create_task(reader())

    async def wait_for(pred, timeout: float = 5.0) -> None:
        t0 = time.monotonic()
        while not pred():
            assert time.monotonic() - t0 < timeout, got
            await asyncio.sleep(0.01)

    with open(path, "ab", buffering=0) as f:
        f.write(b"abc")
        await wait_for(lambda: b"".join(c for _, c in got) == b"abc")
        f.write(b"def\n")
        await wait_for(lambda: b"".join(c for _, c in got) == b"abcdef\n")
    os.truncate(path, 0)
    with open(path, "ab", buffering=0) as f:
        f.write(b"new\n")
    await wait_for(lambda: resets == ["truncated"] and got[-1] == (0, b"new\n"))
    repl = tmp_path / "log.new"
    repl.write_bytes(b"replacement\n")
    os.replace(repl, path)
    await wait_for(lambda: resets == ["truncated", "replaced"] and got[-1] == (0, b"replacement\n"))
    tail.stop()
    await asyncio.wait_for(task, 5)
    await tail.wait_closed()  # the reader process is gone and its pipes closed before the loop is


class FlakyTransport(LocalTransport):
    """Cuts every stream after a few chunks, like a dropped SSH connection."""

    def __init__(self, cut_after: int, max_cuts: int | None = None):
        super().__init__()
        self.cut_after = cut_after
        self.max_cuts = max_cuts  # after this many cuts the link holds (None: never)
        self.cuts = 0

    async def stream(self, argv):
        n = 0
        async with contextlib.aclosing(super().stream(argv)) as inner:
            async for chunk in inner:
                # split the chunk so a frame is in flight when the link "drops"
                half = max(1, len(chunk) // 2)
                yield chunk[:half]
                n += 1
                if n >= self.cut_after and (self.max_cuts is None or self.cuts < self.max_cuts):
                    self.cuts += 1
                    raise ConnectionLost("simulated drop")
                yield chunk[half:]


@pytest.mark.slow
async def test_tail_resumes_without_loss_or_duplicates(tmp_path: Path, control: ServerControl) -> None:
    # ~3 s of writing; each of the first three streams is cut in its first chunk, so there are three
    # cuts however the reads fall (cut after 3 chunks, a loaded machine read the whole log in one
    # chunk after the first reconnect: one cut, while another suite ran beside this one)
    run = await control.launch(writer_profile(tmp_path, n=1500, delay=0.002), launch=1)
    flaky = FlakyTransport(cut_after=1, max_cuts=3)
    states = []
    tail = LogTail(flaky, run.log_path, python=PY, on_state=states.append, timings=FAST.replace(link_backoff_initial_s=0.01))
    data = await collect(tail, b"tail-without-newline", timeout=60)
    check_sequence(data, 1500)
    assert flaky.cuts >= 3
    assert {"lost", "reconnecting", "connected"} <= {s.state for s in states}
