"""Helpers for the simulator tests: start ``python -m eagletui.sim`` as a real process on a free port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eagletui.commands.demo import free_port

REPO = Path(__file__).resolve().parents[1]
FAST = "0.003"
READY = "The server is fired up and ready to roll!"

SPEC_ARGS = [
    "--model-path",
    "moonshotai/Kimi-K2-Instruct",
    "--tp",
    "8",
    "--speculative-algorithm",
    "EAGLE3",
    "--speculative-draft-model-path",
    "lmsys/Kimi-K2-EAGLE3",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
]


class SimProc:
    """One simulator process; stdout and stderr go to one log file (like the eagletui launcher)."""

    def __init__(
        self, args: list[str], env: dict[str, str] | None = None, scale: str = FAST, port: int | None = None
    ) -> None:
        self.port = port or free_port()
        self.dir = tempfile.TemporaryDirectory(prefix="simtest-")
        self.log_path = Path(self.dir.name) / "server.log"
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env["PYTHONUNBUFFERED"] = "1"
        full_env.pop("EAGLETUI_SIM_FAIL", None)
        full_env.update(env or {})
        cmd = [sys.executable, "-m", "eagletui.sim", *args, "--host", "127.0.0.1", "--port", str(self.port)]
        if "--sim-time-scale" not in args:
            cmd += ["--sim-time-scale", scale]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=self._log, env=full_env, cwd=str(REPO))
        self.base = f"http://127.0.0.1:{self.port}"

    def text(self) -> str:
        return self.log_path.read_bytes().decode("utf-8", "replace")

    def wait_for(self, needle: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            t = self.text()
            if needle in t:
                return t
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"sim exited with {self.proc.returncode} before {needle!r}:\n{t[-3000:]}"
                )
            time.sleep(0.05)
        raise AssertionError(f"timeout waiting for {needle!r}:\n{self.text()[-3000:]}")

    def wait_exit(self, timeout: float = 30.0) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"sim did not exit:\n{self.text()[-3000:]}") from e

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._log.close()
        self.dir.cleanup()

    def __enter__(self) -> SimProc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def sim_profile_toml(
    tmp_path: Path,
    port: int,
    *,
    name: str = "simtest",
    filename: str = "sim.toml",
    draft: str = "lmsys/Kimi-K2.5-EAGLE3",
    args: str = "",
    rest: str = "",
    speed: float = 20,
) -> str:
    """Write the profile most end-to-end tests launch: the simulator as Kimi-K2.5 + EAGLE-3 at tp=8,
    the whole launch in a fraction of a second. ``args`` goes on in ``[server.args]``, ``rest`` after
    it (``[bench]``, ``[[toggles]]``, ``[sweep]``…); ``speed`` is ``--sim-speed`` (the NVLink preset's short
    steps want less than 20 on a busy machine). Returns the file's path."""
    p = tmp_path / filename
    p.write_text(
        f"""
name = "{name}"
[target]
python = "{sys.executable}"
workdir = "{tmp_path}"
[server]
command = ["{{python}}", "-m", "eagletui.sim"]
port = {port}
runs_dir = "{tmp_path}/runs"
ready_timeout_s = 60
[server.args]
model-path = "moonshotai/Kimi-K2.5"
tp = 8
speculative-algorithm = "EAGLE3"
speculative-draft-model-path = "{draft}"
speculative-num-steps = 3
speculative-eagle-topk = 1
speculative-num-draft-tokens = 4
sim-time-scale = 0.003
sim-speed = {speed}
{args}
{rest}
"""
    )
    return str(p)
