"""Where a sweep's queue lives and who may write it: the queue file's path (``<data dir>/sweeps/``) and
the lock that keeps two eagletui from running one sweep.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from eagletui.session.sweep.cells import SweepError

QUEUE_VERSION = 2


MAX_QUEUE_BYTES = 4 * 1024 * 1024


def queue_path(target: str, profile_path: str, root: str | Path | None = None) -> Path:
    """``<data dir>/sweeps/<target>-<profile stem>-<hash>.json``, one queue per target + profile."""
    if root is None:
        from eagletui.config import data_dir

        root = data_dir() / "sweeps"
    full = str(Path(profile_path).expanduser().resolve())
    h = hashlib.sha256(f"{target}\0{full}".encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{target}-{Path(profile_path).stem}")[:60]
    return Path(root).expanduser() / f"{slug}-{h}.json"


class QueueLock:
    """One runner per queue: an exclusive ``flock`` on ``<queue>.lock`` (released by the kernel when
    the process dies, SIGKILL included, so a killed sweep never blocks its resume)."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(path.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl

        from eagletui.core.private_files import private_dir

        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise SweepError(f"another eagletui sweep is running this queue ({self.path})") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
