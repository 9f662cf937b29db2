"""SGLang 0.5.23 log formatting: ``[date time TPn EPn] msg`` records, uvicorn lines and tqdm ``\\r`` frames.

uvicorn's lines carry SGLang's timestamp too: ``sglang/srt/utils/common.py:set_uvicorn_logging_configs`` sets
uvicorn's formats to ``[%(asctime)s] %(levelprefix)s %(message)s`` (access: ``… %(client_addr)s -
"%(request_line)s" %(status_code)s``) with datefmt ``%Y-%m-%d %H:%M:%S`` (no milliseconds, whatever
``SGLANG_LOG_MS`` says).

Every write is flushed immediately so a tail of the log file sees lines live.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
INFO = 20
WARNING = 30
ERROR = 40


def level_value(name: str | None) -> int:
    return _LEVELS.get((name or "info").lower(), INFO)


class SimLog:
    """Writes SGLang-style records. ``rank=None`` is the main process (no prefix token)."""

    def __init__(
        self,
        tp_size: int,
        *,
        ep_size: int = 1,
        log_level: str = "info",
        log_level_http: str | None = None,
        err: TextIO | None = None,
        out: TextIO | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        env = env if env is not None else dict(os.environ)
        self.tp_size = tp_size
        self.ep_size = max(1, ep_size)
        self.level = level_value(log_level)
        self.http_level = level_value(log_level_http or log_level)
        self.err = err or sys.stderr
        self.out = out or sys.stdout
        self.ms = env.get("SGLANG_LOG_MS", "").strip().lower() in ("1", "true", "yes")
        self.bar_open = False  # an unterminated tqdm frame is the last thing on stderr
        #: tqdm bars are global rank 0's: a multi-node launch's other nodes print none
        self.bars = True

    def prefix(self, rank: int | None, now: float | None = None) -> str:
        now = time.time() if now is None else now
        ts = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        if self.ms:
            ts += f".{int((now % 1) * 1000):03d}"
        ranks = ""
        if rank is not None:
            # sglang/srt/managers/scheduler.py (scheduler logger prefix): " TP{tp}" when tp_size > 1,
            # then " EP{moe_ep_rank}" when ep_size > 1.
            if self.tp_size > 1:
                ranks += f" TP{rank}"
            if self.ep_size > 1:
                ranks += f" EP{rank // max(1, self.tp_size // self.ep_size)}"
        return f"[{ts}{ranks}]"

    def line(self, msg: str, rank: int | None = None, level: int = INFO) -> None:
        if level < self.level:
            return
        self.err.write(f"{self.prefix(rank)} {msg}\n")
        self.err.flush()

    def raw(self, text: str, stream: TextIO | None = None) -> None:
        s = stream or self.err
        s.write(text)
        s.flush()

    def frame(self, text: str) -> None:
        """One tqdm refresh (rank 0 only): ``\\r`` + text, no newline."""
        if self.level > INFO or not self.bars:
            return
        self.raw("\r" + text)
        self.bar_open = True

    def close_bar(self) -> None:
        if self.level > INFO or not self.bar_open:
            return
        self.raw("\n")
        self.bar_open = False

    @staticmethod
    def uvicorn_ts(now: float | None = None) -> str:
        return time.strftime("[%Y-%m-%d %H:%M:%S]", time.localtime(time.time() if now is None else now))

    def uvicorn(self, msg: str, level: str = "INFO") -> None:
        """A uvicorn lifecycle line on stderr: ``[ts] INFO:     Started server process [pid]``."""
        if level_value(level) < self.http_level:
            return
        self.raw(f"{self.uvicorn_ts()} {level + ':':<9} {msg}\n")

    def access(self, peer: str, method: str, path: str, status: int, phrase: str) -> None:
        """A uvicorn access line (uvicorn's ``access`` handler writes to stdout)."""
        if INFO < self.http_level:
            return
        self.raw(
            f'{self.uvicorn_ts()} INFO:     {peer} - "{method} {path} HTTP/1.1" {status} {phrase}\n', self.out
        )


# --- tqdm ---------------------------------------------------------------------------------------------


def fmt_interval(t: float) -> str:
    mins, s = divmod(int(t), 60)
    h, m = divmod(mins, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _rate_fmt(n: int, elapsed: float) -> str:
    if n <= 0 or elapsed <= 0:
        return "?it/s"
    rate = n / elapsed
    return f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"


def _times(n: int, total: int, elapsed: float) -> tuple[str, str, str]:
    if n <= 0 or elapsed <= 0:
        return fmt_interval(elapsed), "?", "?it/s"
    remaining = (total - n) * elapsed / n
    return fmt_interval(elapsed), fmt_interval(remaining), _rate_fmt(n, elapsed)


def shard_frame(desc: str, n: int, total: int, elapsed: float) -> str:
    """SGLang BAR_FORMAT: ``{desc}: {percentage:3.0f}% Completed | {n}/{total} [{elapsed}<{remaining}, {rate}]``."""
    el, rem, rate = _times(n, total, elapsed)
    pct = 100.0 * n / total if total else 100.0
    return f"{desc}: {pct:3.0f}% Completed | {n}/{total} [{el}<{rem}, {rate}]"


_BAR_CHARS = " ▏▎▍▌▋▊▉█"


def _bar(frac: float, width: int = 10) -> str:
    frac = min(max(frac, 0.0), 1.0)
    filled, part = divmod(int(frac * width * 8), 8)
    out = "█" * filled
    if filled < width:
        out += _BAR_CHARS[part] + " " * (width - filled - 1)
    return out


def tqdm_frame(desc: str | None, n: int, total: int, elapsed: float) -> str:
    """Default tqdm format with ``ncols`` unknown (file output): bar width 10."""
    el, rem, rate = _times(n, total, elapsed)
    frac = n / total if total else 1.0
    l_bar = f"{desc}: " if desc else ""
    return f"{l_bar}{frac * 100:3.0f}%|{_bar(frac)}| {n}/{total} [{el}<{rem}, {rate}]"
