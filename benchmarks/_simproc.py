"""The SGLang simulator in a subprocess on a free port, for the benchmarks that measure against it
(``bench_client_accuracy.py``, ``prediction_error.py``): started in its own session so a stop ends it and
its children, its log in a temporary file named in every error. A benchmark ended by SIGTERM or SIGHUP
(``timeout``, a closed terminal) stops its simulators first: the default action ended the benchmark and
left them running in their own sessions (five, after a timed-out ``prediction_error.py``)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from eagletui.commands.demo import free_port

REPO = Path(__file__).resolve().parents[1]
_LIVE: set[SimProcess] = set()


def _stop_all(signum: int, _frame: object) -> None:
    for sim in list(_LIVE):
        sim.stop()
    raise SystemExit(128 + signum)


def _install_handlers() -> None:
    """SIGTERM and SIGHUP stop every live simulator, where nobody else handles them (main thread only)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) == signal.SIG_DFL:
                signal.signal(sig, _stop_all)
        except ValueError:  # not the main thread: the caller's own handling stands
            return


class SimProcess:
    def __init__(self, flags: list[str], prefix: str = "eagletui-sim-") -> None:
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix=prefix, suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "eagletui.sim", "--port", str(self.port), *flags],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=REPO,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        _install_handlers()
        _LIVE.add(self)

    async def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as s:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"simulator exited ({self.proc.returncode}); log: {self.log.name}")
                try:
                    async with s.get(self.url + "/health", timeout=aiohttp.ClientTimeout(total=2)) as r:
                        if r.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.2)
        raise TimeoutError(f"simulator not ready after {timeout}s; log: {self.log.name}")

    def stop(self) -> None:
        _LIVE.discard(self)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
        Path(self.log.name).unlink(missing_ok=True)  # a second stop is a no-op
