"""``eagletui demo`` in a real terminal (a tmux pane) ends cleanly on SIGTERM/SIGHUP/SIGINT
(issue 11.9): the simulator it started is gone, its temp dir is gone, and the terminal is out of
the alternate screen with mouse reporting off."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def _wait(cond: Callable[[], object], what: str, timeout: float = 60.0) -> object:
    """Poll until ``cond()`` is truthy; the timeout only bounds a failure, nothing is timed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # it may be reaped between the two looks: /proc then answers ESRCH (a CI rehearsal, 2026-12-02)
        return not Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (FileNotFoundError, ProcessLookupError):
        return False


class Pane:
    def __init__(self, tmp: Path) -> None:
        self.sock = str(tmp / "tmux.sock")
        self.tmp = tmp

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-S", self.sock, *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    def flags(self) -> tuple[str, str]:
        return tuple(self.tmux("display", "-p", "-t", "t", "#{alternate_on} #{mouse_any_flag}").split())  # type: ignore[return-value]

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")


@pytest.fixture
def demo(tmp_path: Path):
    """``eagletui demo`` running in a tmux pane: ``(pane, eagletui pid, simulator pid, temp root)``."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    pidfile = tmp_path / "pid"
    launcher = (
        "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); "
        "os.execv(sys.executable, [sys.executable, '-m', 'eagletui', 'demo', '--no-record'])"
    )
    env = {
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(tmpdir),
        "EAGLETUI_CONFIG_DIR": str(tmp_path / "cfg"),
        "EAGLETUI_DATA_DIR": str(tmp_path / "data"),
        "TERM": "xterm-256color",
    }
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    cmd = (
        f"cd {shlex.quote(str(ROOT))} && env {exports} {shlex.quote(sys.executable)} -c "
        f"{shlex.quote(launcher)} {shlex.quote(str(pidfile))}; echo EXITED $?; sleep 600"
    )
    pane = Pane(tmp_path)
    pane.tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", cmd)
    try:
        pid = int(_wait(lambda: pidfile.exists() and pidfile.read_text(), "the pid file"))  # type: ignore[arg-type]
        _wait(lambda: pane.flags() == ("1", "1"), "the UI (alternate screen, mouse on)")
        sim = _wait(lambda: _children(pid), "the simulator to start")[0]  # type: ignore[index]
        assert len(list(tmpdir.glob("eagletui-demo-*"))) == 1
        yield pane, pid, sim, tmpdir
    finally:
        subprocess.run(["tmux", "-S", pane.sock, "kill-server"], capture_output=True)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_demo_signal_cleans_up(demo, sig: signal.Signals) -> None:
    pane, pid, sim, tmpdir = demo
    os.kill(pid, sig)
    _wait(lambda: not _alive(pid), "eagletui to exit")
    _wait(lambda: "EXITED" in pane.screen(), "the shell after eagletui")
    assert not _alive(sim), "the simulator outlived the demo"
    assert list(tmpdir.glob("eagletui-demo-*")) == [], "the demo's temp dir was left behind"
    assert pane.flags() == ("0", "0"), pane.flags()  # out of the alternate screen, mouse off
    assert f"EXITED {128 + sig}" in pane.screen()


@pytest.mark.slow
def test_demo_terminal_closed_cleans_up(demo) -> None:
    """A real hang-up: the pane (the terminal) goes away under the demo."""
    pane, pid, sim, tmpdir = demo
    pane.tmux("kill-server")
    _wait(lambda: not _alive(pid), "eagletui to exit")
    assert not _alive(sim), "the simulator outlived the demo"
    assert list(tmpdir.glob("eagletui-demo-*")) == [], "the demo's temp dir was left behind"
