"""SIGTERM and SIGHUP end the headless commands that start a server as Ctrl-C does (issue 31 item 4).

Real: a sweep under ``timeout`` printed nothing and left its server holding the GPU; ``bench --launch``
on the simulator the same, with empty stdout. Now the server ``bench`` started is stopped, a sweep says
its server keeps running and how to resume, both print their JSON with what was measured and exit with
128 + the signal. Each command runs as a real process and gets a real signal.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from eagletui.commands.demo import free_port
from tests.conftest_sim import sim_profile_toml

ROOT = Path(__file__).resolve().parents[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class Command:
    """A headless command in a process of its own, its stderr read as it comes."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "eagletui", *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.err: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)

    def wait_for(self, needle: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(needle in line for line in self.err):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        pytest.fail(f"never said {needle!r}:\n{''.join(self.err)[-3000:]}")

    def finish(self, timeout: float = 120) -> tuple[int, dict, str]:
        """(exit status, the JSON on stdout, stderr); ``self.out``: stdout as printed."""
        assert self.proc.stdout is not None
        self.out = self.proc.stdout.read()
        rc = self.proc.wait(timeout=timeout)
        self._reader.join(5)
        return rc, json.loads(self.out) if self.out.startswith("{") else {}, "".join(self.err)

    def after_stop_line(self) -> list[str]:
        """The stderr lines after the command said it was stopping (the signal handler's line)."""
        i = next((i for i, line in enumerate(self.err) if ": stopping (what was started" in line), None)
        assert i is not None, "".join(self.err)[-3000:]
        return self.err[i + 1 :]

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)


@pytest.mark.slow
@pytest.mark.parametrize("sig,as_json", [(signal.SIGTERM, True), (signal.SIGHUP, False)])
def test_bench_launch_under_a_signal_stops_its_server_and_prints_what_it_measured(tmp_path, sig, as_json) -> None:
    """…as JSON, or as the terminal report (which died of a KeyError: no diagnosis yet, exit 1)."""
    port = free_port()
    rest = "[bench]\nnum_prompts = 8\nconcurrency = 2\nmax_new_tokens = 48\nwarmup = 0"
    prof = sim_profile_toml(tmp_path, port, args="enable-metrics = true\n", rest=rest, speed=5)
    json_arg = ["--json"] if as_json else []
    cmd = Command(["bench", "local", "--profile", prof, "--launch", "--repeats", "30", *json_arg, "--no-record"])
    try:
        cmd.wait_for("repeat 2/30")  # two measured, the third in flight
        cmd.proc.send_signal(sig)
        sent = time.monotonic()
        rc, doc, err = cmd.finish()
        took = time.monotonic() - sent
    finally:
        cmd.kill()
    assert rc == 128 + sig, err[-2000:]
    # at once: no repeat starts after the stop (a swallowed cancel ran 45 more), the server stopped in
    # its grace (a loaded machine's margin: the whole run's 30 repeats take longer)
    assert not [line for line in cmd.after_stop_line() if line.startswith("repeat ")], err[-2000:]
    assert took < 30, f"{took:.1f}s from the signal to the exit"
    assert "Traceback" not in err, err[-2000:]
    if as_json:
        assert doc["interrupted"] == {"signal": sig.name, "during": "benchmark", "exit_code": 128 + sig}
        assert doc["repeats"]["n"] >= 2 and doc["requests"] >= 16 and doc["output_throughput"] > 0, doc
        assert doc["stop"]["ok"] is True
    else:  # the two repeats measured, with their why lines, as a finished run prints them
        assert "output throughput" in cmd.out and "why: " in cmd.out, cmd.out
    assert not _listening(port)
    assert f"interrupted by {sig.name} during the benchmark" in err and "stopping the server" in err
    runs = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(runs) == 1 and ((runs[0] / "exit_code").exists() or (runs[0] / "exit_signal").exists())
    # the requests cut by the stop are aborted as SGLang aborts them: no error, no traceback in its log
    log = (runs[0] / "server.log").read_text(errors="replace")
    assert "Error handling request" not in log and "Traceback" not in log, log[-2000:]


def _stopped_at_once(cmd: Command, sent: float) -> None:
    """No benchmark (a sweep's repeat or attempt) started after the stop line, and the exit came in a
    bound a loaded machine keeps (a cancel swallowed on its way ran on through the queue)."""
    late = [line for line in cmd.after_stop_line() if line.lstrip().startswith(("repeat ", "attempt "))]
    assert late == [], "".join(cmd.err)[-3000:]
    assert time.monotonic() - sent < 30


def _variant(data: Path, i: int) -> dict:
    """Variant ``i`` of the sweep's saved queue, as the sweep wrote it ({} until then)."""
    for f in (data / "sweeps").glob("*.json"):
        try:
            return json.loads(f.read_text())["variants"][i]
        except (ValueError, KeyError, IndexError, OSError):
            return {}
    return {}


@pytest.mark.slow
def test_a_sweep_under_sigterm_says_how_to_resume_and_prints_its_report(tmp_path, monkeypatch, capsys) -> None:
    """…and the resume's frontier holds every variant's runs, the earlier session's too: the set its
    decisions rank (issue 35: it held only the resumed session's 2 of 3 configs)."""
    data = tmp_path / "data"
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(data))
    monkeypatch.setenv("EAGLETUI_CONFIG_DIR", str(tmp_path / "config"))
    port = free_port()
    rest = (
        "[server.env]\nNCCL_ALGO = \"Ring\"\n"
        "[[toggles]]\nenv = \"NCCL_ALGO\"\nchoices = [\"Ring\", \"Tree\", \"NVLS\"]\n"
        "[bench]\nnum_prompts = 4\nconcurrency = 2\nmax_new_tokens = 32\nwarmup = 0\n"
        "[sweep]\nrepeats = 1\n[sweep.matrix]\nNCCL_ALGO = [\"Ring\", \"Tree\", \"NVLS\"]\n"
    )
    prof = sim_profile_toml(tmp_path, port, name="sigsweep", filename="sweep.toml", rest=rest)
    cmd = Command(["sweep", "local", "--profile", prof, "--json", "--no-preflight", "--no-record"])
    try:
        deadline = time.monotonic() + 120
        while _variant(data, 1).get("state") != "benchmarking" or not _variant(data, 1).get("run_id"):
            assert time.monotonic() < deadline and cmd.proc.poll() is None, "".join(cmd.err)[-3000:]
            time.sleep(0.02)
        cmd.proc.send_signal(signal.SIGTERM)  # the first variant measured, the second's server up
        sent = time.monotonic()
        rc, doc, err = cmd.finish()
        assert rc == 143, err[-2000:]
        _stopped_at_once(cmd, sent)
        assert doc["interrupted"]["signal"] == "SIGTERM" and "--resume" in doc["interrupted"]["resume"]
        states = [v["state"] for v in doc["variants"]]
        assert states[0] == "done" and doc["variants"][0]["tok_s"] > 0, doc["variants"]
        assert "Resume with: eagletui sweep local --profile" in err and "keeps running" in err, err
        assert _listening(port)  # the variant in flight: left for --resume to follow
        # and the resume it names finishes the sweep, following that server
        from eagletui.commands.sweep import main

        assert main(["local", "--profile", prof, "--json", "--no-preflight", "--no-record", "--resume"]) == 0
        assert not _listening(port)
        resumed = json.loads(capsys.readouterr().out)
        ranked = {v["name"] for v in resumed["variants"] if v["state"] == "done"}
        assert len(ranked) == 3 and set(resumed["ranking"]) == ranked
        (front,) = resumed["frontier"]
        # one curve per variant (launch = its variant's number), variant 1's run from the first session
        assert sorted(n for c in front["curves"] for n in c["launches"]) == [1, 2, 3], front["curves"]
        assert all(p["runs"] == 1 for c in front["curves"] for p in c["points"])
        # the finished sweep's report again (no launch): the same frontier, from the runs kept
        assert main(["local", "--profile", prof, "--json", "--no-preflight", "--no-record"]) == 0
        again = json.loads(capsys.readouterr().out)
        assert again["frontier"] == resumed["frontier"] and again["ranking"] == resumed["ranking"]
    finally:
        cmd.kill()


TUNE = """[server.env]
NCCL_ALGO = "Ring"
[[toggles]]
env = "NCCL_ALGO"
choices = ["Ring", "Tree"]
[bench]
num_prompts = 8
concurrency = 2
max_new_tokens = 48
warmup = 0
[tune]
concurrency = [2]
repeats = 3
budget_launches = 2
[tune.space]
NCCL_ALGO = ["Ring", "Tree"]
"""


@pytest.mark.slow
def test_a_tune_under_sigterm_mid_benchmark_stops_at_once_and_says_how_to_resume(tmp_path, monkeypatch) -> None:
    """A tune step's benchmark in flight: no benchmark after the stop line, exit 143 with the report and
    its resume; the server in flight keeps running for ``--resume`` (as a sweep's), said on stderr."""
    data = tmp_path / "data"
    env = {"EAGLETUI_DATA_DIR": str(data), "EAGLETUI_CONFIG_DIR": str(tmp_path / "config")}
    port = free_port()
    prof = sim_profile_toml(tmp_path, port, name="sigtune", filename="tune.toml", rest=TUNE, speed=5)
    cmd = Command(["tune", "local", "--profile", prof, "--json", "--no-preflight", "--no-record"], env=env)
    try:
        cmd.wait_for("repeat 1")  # the first launch's first benchmark done, the next in flight
        cmd.proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        rc, doc, err = cmd.finish()
        assert rc == 143, err[-2000:]
        _stopped_at_once(cmd, sent)
        assert doc["interrupted"]["signal"] == "SIGTERM" and "--resume" in doc["interrupted"]["resume"], doc
        assert "keeps running" in err and _listening(port), err[-2000:]
    finally:
        cmd.kill()
        for pid_file in (tmp_path / "runs").glob("*/pid"):  # the server left for --resume: ended here
            with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
                os.killpg(json.loads(pid_file.read_text())["pgid"], signal.SIGKILL)
