"""Helpers for the fault suite (tests/test_fault_*.py): whole-system scenarios on real processes.

The suite runs a reduced count in CI; ``EAGLETUI_FAULTS=long`` (or ``pytest --faults=long``) runs the
long variants the issue asks for (50 SSH cuts, sshd down 60 s, ...). Measured figures are printed as
``FAULT-FIGURES {json}`` lines and, when ``EAGLETUI_FAULT_FIGURES`` names a file, appended there as
JSON lines: that is where docs/reliability.md takes its numbers from.

This module is also a small headless eagletui (``python -m tests.conftest_fault --profile P
--sessions D``): connect, reattach to eagletui's live run or launch one, record every event, exactly
the order of the UI's live start (without the foreign-server question, which needs a terminal). The
SIGKILL scenario kills it with -9 and starts a second one.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eagletui.core.timings import FAST

REPO = Path(__file__).resolve().parents[1]


def fault_mode() -> str:
    """``ci`` (reduced counts, the default) or ``long`` (the issue's counts)."""
    return "long" if os.environ.get("EAGLETUI_FAULTS", "").strip().lower() == "long" else "ci"


def pick(ci: Any, long: Any) -> Any:
    return long if fault_mode() == "long" else ci


def report(scenario: str, **figures: Any) -> None:
    """Publish measured figures (see the module docstring)."""
    row = {
        "scenario": scenario,
        "mode": fault_mode(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    row.update(figures)
    line = json.dumps(row, default=str)
    print(f"FAULT-FIGURES {line}")
    out = os.environ.get("EAGLETUI_FAULT_FIGURES")
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def fault_profile(
    directory: Path,
    *,
    time_scale: float = 0.01,
    port: int | None = None,
    env: dict[str, str] | None = None,
    args: dict[str, Any] | None = None,
) -> Any:
    """The demo profile (the simulator as the server) with this checkout as the host's working dir.

    ``workdir`` = the repo and ``PYTHONPATH`` in the server env make ``python -m eagletui.sim`` import
    this tree on the host too (over SSH the test's own environment is not inherited).
    """
    from eagletui.commands.demo import write_demo_profile
    from eagletui.core.profile.load import load_profile

    directory.mkdir(parents=True, exist_ok=True)
    prof = load_profile(write_demo_profile(directory, port=port, time_scale=time_scale))
    prof.workdir = str(REPO)
    prof.env = {**prof.env, "PYTHONPATH": str(REPO), **(env or {})}
    for k, v in (args or {}).items():
        prof.args[k] = v
    return prof


class Collector:
    """The one ``emit`` callback a Workspace gets: every event, in order, with helpers to wait on them."""

    def __init__(self, also: Callable[[Any], None] | None = None) -> None:
        self.events: list[Any] = []
        self.also = also

    def __call__(self, ev: Any) -> None:
        self.events.append(ev)
        if self.also is not None:
            self.also(ev)

    def of(self, type_: str, start: int = 0) -> list[Any]:
        return [e for e in self.events[start:] if e.type == type_]

    async def wait(self, pred: Callable[[Any], bool], timeout: float, start: int = 0, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        i = start
        while True:
            while i < len(self.events):
                ev = self.events[i]
                i += 1
                if pred(ev):
                    return ev
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timeout ({timeout} s) waiting for {what or pred}: last events "
                    f"{[e.type for e in self.events[-15:]]}"
                )
            await asyncio.sleep(0.005)

    def server_lines(self, launch: int) -> list[str]:
        """The session's log lines of one launch (the benchmark's echoed ``[bench]`` lines left out)."""
        return [
            e.text
            for e in self.events
            if e.type == "log" and e.launch == launch and not e.text.startswith("[bench] ")
        ]


def reference_lines(data: bytes, launch: int) -> list[str]:
    """The log lines a fresh interpreter gets from the file on disk (the unterminated tail held back,
    as the live one holds it): the same framing (``\\r`` frames, glued lines) as the live stream, so
    the live list must start with exactly this list."""
    from eagletui.core.phases.interpreter import LogInterpreter

    interp = LogInterpreter(launch=launch)
    return [e.text for e in interp.feed_bytes(data) if e.type == "log"]


def compare_lines(live: list[str], ref: list[str]) -> tuple[int, int]:
    """(lost, duplicated) of ``live`` against the on-disk ``ref`` prefix; 0, 0 when identical."""
    if live[: len(ref)] == ref:
        return 0, 0
    from collections import Counter

    want, got = Counter(ref), Counter(live[: len(ref) + 50])
    lost = sum((want - got).values())
    dup = sum((got - want).values())
    return max(lost, 1), dup


_WATCHER = r"""
import os, sys, time
path, period = sys.argv[1], float(sys.argv[2])
last = -1
while True:
    try:
        size = os.stat(path).st_size
    except OSError:
        size = -1
    if size != last and size >= 0:
        sys.stdout.write("%d %.6f\n" % (size, time.monotonic()))
        sys.stdout.flush()
        last = size
    time.sleep(period)
"""


class FileWatch:
    """When each byte of a file reached the disk: a separate process samples its size every
    ``period`` s (its own GIL and scheduling, so the event loop under test does not delay the
    samples) and reports ``size monotonic-time`` pairs; CLOCK_MONOTONIC is the same for all
    processes of the host."""

    def __init__(self, path: str | Path, period: float = 0.001) -> None:
        self.path = str(path)
        self.period = period
        self.sizes: list[int] = []
        self.times: list[float] = []
        self._proc: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            size, t = line.split()
            self.sizes.append(int(size))
            self.times.append(float(t))

    def start(self) -> FileWatch:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _WATCHER, self.path, str(self.period)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(5)
        self._thread.join(2)

    def written_at(self, end_offset: int) -> float | None:
        """Monotonic time at which the file first held ``end_offset`` bytes (within one period)."""
        i = bisect.bisect_left(self.sizes, end_offset)
        return self.times[i] if i < len(self.times) else None


def ssh_kwargs(srv: Any) -> dict[str, Any]:
    """Workspace keyword arguments that reach the test sshd: ``ssh=SSHOptions(...)`` where the
    transport has that type, the separate ``config_file``/``known_hosts`` arguments before it."""
    try:
        from eagletui.remote.transport import SSHOptions  # type: ignore[attr-defined]
    except ImportError:
        return {"target": srv.alias, "config_file": str(srv.config_file), "known_hosts": str(srv.known_hosts)}
    return {
        "target": srv.alias,
        "ssh": SSHOptions(config_file=str(srv.config_file), known_hosts=str(srv.known_hosts)),
    }


def pid_alive(pid: int) -> bool:
    """The host is this machine: ask its kernel directly (not eagletui's own check under test)."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_pid_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def sim_pids(port: int) -> list[int]:
    """Simulator servers serving ``port`` on this host (launched by anyone), their own children left out.

    The simulator forks its scheduler and detokenizer children (``eagletui/sim/children.py``), which
    carry the server's command line until they rename themselves; on a loaded machine that took more than
    the second a test waits (a CI run counted one server and its four children as five servers)."""
    found: dict[int, int] = {}  # pid -> parent pid
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = Path(f"/proc/{d}/cmdline").read_bytes().split(b"\0")
            ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"eagletui.sim" in argv and b"--port" in argv:
            i = argv.index(b"--port")
            if i + 1 < len(argv) and argv[i + 1] == str(port).encode():
                found[int(d)] = ppid
    return sorted(pid for pid, ppid in found.items() if ppid not in found)


# ------------------------------------------------------------------ the headless driver


async def _drive(ns: argparse.Namespace) -> int:
    from eagletui.core.profile.load import load_profile
    from eagletui.session.record import Recorder
    from eagletui.workspace import Workspace

    profile = load_profile(ns.profile)
    profile.workdir = str(REPO)
    rec = Recorder.create(ns.sessions, target="local", profile_name=profile.name)
    print(f"RECORDING {rec.path}", flush=True)
    ws = Workspace(profile, rec.write, target="local", preflight=False, timings=FAST)
    await ws.connect()
    if ns.wait_go:  # a start line for races: both instances look at the host in the same instant
        print("CONNECTED", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
    try:
        if await ws.attach_newest():
            print(f"ATTACHED {ws.run.run_id} {ws.run.pid}", flush=True)
        else:
            await ws.launch()
            print(f"LAUNCHED {ws.run.run_id} {ws.run.pid}", flush=True)
    except Exception as exc:  # what the UI would show in its "launch failed/refused" toast
        print(f"REFUSED {type(exc).__name__}: {exc}", flush=True)
        return 3
    await asyncio.Event().wait()  # until killed
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.conftest_fault")
    p.add_argument("--profile", required=True)
    p.add_argument("--sessions", required=True)
    p.add_argument("--wait-go", action="store_true", help="after connecting, wait for a line on stdin")
    ns = p.parse_args(argv)
    return asyncio.run(_drive(ns))


if __name__ == "__main__":
    sys.exit(main())
