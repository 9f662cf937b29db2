"""Fault suite, instances: eagletui killed with SIGKILL mid-launch, and two instances started at once.

Each instance is a real process (the headless driver in tests/conftest_fault.py: the UI's live start
order, connect → reattach to eagletui's live run or launch → record every event). The server is the
simulator; it must outlive the killed instance and be found again, never launched twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagletui.commands.demo import write_demo_profile
from eagletui.core.events import LogLine
from eagletui.core.state.screen import SessionState
from eagletui.session.format import read_session
from tests.conftest_fault import REPO, FileWatch, pick, reference_lines, report, sim_pids, wait_pid_gone

pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.timeout(pick(300, 1200))]


class Instance:
    """One headless eagletui process; its stdout says what it did (LAUNCHED/ATTACHED/REFUSED)."""

    def __init__(self, profile: Path, sessions: Path, *, wait_go: bool = False) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        env.pop("EAGLETUI_SIM_FAIL", None)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.conftest_fault",
                "--profile",
                str(profile),
                "--sessions",
                str(sessions),
                *(["--wait-go"] if wait_go else []),
            ],
            cwd=str(REPO),
            env=env,
            stdin=subprocess.PIPE if wait_go else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.recording: Path | None = None

    def connected(self, timeout: float = 60) -> None:
        """Wait for the CONNECTED line of ``wait_go``."""
        word, _rest = self.outcome(timeout, words=("CONNECTED",))
        assert word == "CONNECTED"

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def outcome(
        self, timeout: float = 60, words: tuple[str, ...] = ("LAUNCHED", "ATTACHED", "REFUSED")
    ) -> tuple[str, list[str]]:
        """The first LAUNCHED / ATTACHED / REFUSED line (or one of ``words``), split."""
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(
                    f"instance ended: rc={self.proc.wait()} {self.proc.stderr.read()[-3000:]}"
                )
            word, _, rest = line.strip().partition(" ")
            if word == "RECORDING":
                self.recording = Path(rest)
            elif word in words:
                return word, rest.split()
        raise AssertionError("instance said nothing in time")

    def kill(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _stop_servers(port: int) -> None:
    for pid in sim_pids(port):
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        wait_pid_gone(pid)


def _recorded_lines(path: Path) -> tuple[list[str], list[str]]:
    _header, events, warnings = read_session(path)
    return [e.text for e in events if isinstance(e, LogLine)], warnings


@pytest.mark.serial  # kills the UI mid-launch of a simulator timed in real seconds: run last, in a lane
def test_sigkill_mid_launch_then_reattach(tmp_path: Path) -> None:
    """Issue 11: SIGKILL of eagletui mid-launch → a new eagletui reattaches (the server kept running,
    no second launch) and the killed session's recording replays up to ≤ 0.5 s before the kill."""
    rounds = pick(1, 5)
    gaps = []
    for r in range(rounds):
        d = tmp_path / f"r{r}"
        d.mkdir()
        profile = write_demo_profile(d, time_scale=0.03)
        port = int(next(x for x in profile.read_text().splitlines() if x.startswith("port = ")).split("=")[1])
        sessions = d / "sessions"
        first = Instance(profile, sessions)
        try:
            word, (run_id, pid) = first.outcome()
            assert word == "LAUNCHED"
            pid_i = int(pid)
            log_path = next((d / "runs").glob(f"{run_id}/*.log"), None) or next((d / "runs").rglob("*.log"))
            watch = FileWatch(log_path).start()
            # Mid-launch: weights are loading (the log moves), the server is far from ready.
            deadline = time.monotonic() + 60
            while b"Load weight begin" not in log_path.read_bytes() and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.3 + 0.4 * (r % 3) / 2)
            t_kill = time.monotonic()
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(10)
            time.sleep(0.2)
            watch.stop()
            assert b"ready to roll" not in log_path.read_bytes(), "the launch ended before the kill"
            assert sim_pids(port) == [pid_i], "the server must outlive the killed instance"

            # The killed session's recording: every line the server had written until shortly before
            # the kill is in it, and it reads back without damage.
            assert first.recording is not None
            recorded, warnings = _recorded_lines(first.recording)
            assert not warnings, warnings
            data = log_path.read_bytes()
            ref = reference_lines(data, 1)
            assert recorded == ref[: len(recorded)], "the recording is not the log's prefix"
            missing_from = len(recorded)
            if missing_from < len(ref):
                # when the first unrecorded line reached the disk, relative to the kill
                first_missing = ref[missing_from].encode()
                at = data.find(first_missing, sum(len(x.encode()) for x in ref[:missing_from]))
                written = watch.written_at(at + len(first_missing))
                gap = max(0.0, t_kill - written) if written is not None and written < t_kill else 0.0
            else:
                gap = 0.0
            gaps.append(gap)
            # Target 0.5 s (measured ~0.15 s); CI allows 5 s, the long variant holds the target.
            assert gap <= pick(5.0, 0.5), f"the recording stops {gap:.2f} s before the kill"
            _hdr, events, _w = read_session(first.recording)
            state = SessionState()
            state.apply_all(events)
            assert state.launch is not None and state.launch.status in ("launching", "loading")

            second = Instance(profile, sessions)
            try:
                word, (run2, pid2) = second.outcome()
                assert (word, run2, int(pid2)) == ("ATTACHED", run_id, pid_i)
                # its tail follows the log: wait for the first line it recorded (a loaded machine took
                # more than the 0.5 s this once slept; the bound only stops a hang)
                assert second.recording is not None
                deadline = time.monotonic() + 60
                while not _recorded_lines(second.recording)[0] and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(0.5)
                assert sim_pids(port) == [pid_i], "a second server was started"
                # one run dir (names starting with "." are eagletui's own bookkeeping, e.g. locks)
                assert len([p for p in (d / "runs").iterdir() if p.is_dir() and p.name[:1] != "."]) == 1
            finally:
                second.kill()
            assert second.recording is not None and second.recording != first.recording
            again, _w = _recorded_lines(second.recording)
            assert again and again == reference_lines(log_path.read_bytes(), 1)[: len(again)]
        finally:
            first.kill()
            _stop_servers(port)
    report("sigkill_reattach", rounds=rounds, recording_gap_max_s=round(max(gaps), 3))


def test_two_instances_same_second_one_server(tmp_path: Path) -> None:
    """Issue 11 item 2a: two instances on one host and profile started in the same second: exactly one
    server is launched; the other instance follows it or says clearly why it did not launch."""
    rounds = pick(1, 5)
    seen = []
    for r in range(rounds):
        d = tmp_path / f"r{r}"
        d.mkdir()
        profile = write_demo_profile(d, time_scale=0.03)
        port = int(next(x for x in profile.read_text().splitlines() if x.startswith("port = ")).split("=")[1])
        a = Instance(profile, d / "sessions", wait_go=True)
        b = Instance(profile, d / "sessions", wait_go=True)
        try:
            # Both connected, then both released at once: the same instant, not just the same second
            # (process start-up alone would otherwise separate them by up to a second).
            a.connected()
            b.connected()
            a.go()
            b.go()
            outcomes = [a.outcome(), b.outcome()]
            time.sleep(1.0)
            servers = sim_pids(port)
            words = sorted(w for w, _ in outcomes)
            assert len(servers) == 1, f"{len(servers)} servers launched: {outcomes}"
            assert words.count("LAUNCHED") == 1, outcomes
            launched = next(rest for w, rest in outcomes if w == "LAUNCHED")
            other = next((w, rest) for w, rest in outcomes if w != "LAUNCHED")
            if other[0] == "ATTACHED":
                assert other[1] == launched
            else:
                assert other[1], "a refusal must say why"
            assert servers == [int(launched[1])]
            seen.append(" ".join([other[0], *other[1]])[:200])
        finally:
            a.kill()
            b.kill()
            _stop_servers(port)
    report("two_instances", rounds=rounds, servers_per_round=1, other_instance=seen)
