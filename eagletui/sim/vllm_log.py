"""vLLM's log records as the vLLM simulator (:mod:`eagletui.sim.vllm`) writes them: ``(Actor pid=N) LEVEL
MM-DD HH:MM:SS [file.py:N] message``, raw lines, tqdm bars and uvicorn's lines.

Apart because both the startup log (:mod:`eagletui.sim.vllm`) and the serving side
(:mod:`eagletui.sim.vllm_http`) write through it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any


class Log:
    """vLLM's record format: ``(Actor pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] message``."""

    def __init__(self, out: Any = None) -> None:
        self.out = out or sys.stderr
        self.api_pid = os.getpid()
        self.core_pid = os.getpid() + 1

    def rec(self, actor: str, level: str, where: str, msg: str) -> None:
        pid = self.api_pid if actor == "APIServer" else self.core_pid
        ts = time.strftime("%m-%d %H:%M:%S")
        self.out.write(f"({actor} pid={pid}) {level} {ts} [{where}] {msg}\n")
        self.out.flush()

    def raw(self, actor: str, text: str, end: str = "\n") -> None:
        pid = self.api_pid if actor == "APIServer" else self.core_pid
        self.out.write(f"({actor} pid={pid}) {text}{end}")
        self.out.flush()

    def bar(self, actor: str, desc: str, total: int, seconds: float, completed: bool = False) -> None:
        """A tqdm bar: ``\\r`` frames, then the newline."""
        pid = self.core_pid
        start = time.monotonic()
        for i in range(total + 1):
            el = time.monotonic() - start
            pct = int(100 * i / max(1, total))
            mid = (
                f"{pct:3d}% Completed | {i}/{total}"
                if completed
                else f"{pct:3d}%|{'█' * (pct // 10):<10}| {i}/{total}"
            )
            frame = f"{desc}: {mid} [{int(el) // 60:02d}:{int(el) % 60:02d}<00:00,  1.00it/s]"
            self.out.write((f"({'EngineCore'} pid={pid}) " if i == 0 else "\r") + frame)
            self.out.flush()
            if i < total:
                time.sleep(seconds / max(1, total))
        self.out.write("\n")
        self.out.flush()

    def uvicorn(self, msg: str) -> None:
        self.raw("APIServer", "INFO:     " + msg)
