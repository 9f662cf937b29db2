"""Directories and files that only their user may read: recordings, history and preferences hold
server args, host names and (scrubbed, but still) the shape of someone's experiments.

``Path.mkdir(mode=0o700, parents=True)`` applies the mode to the last component only, and through the
umask: the data dir above ``sessions/`` came out 0755. These helpers create every missing component
0700 and every file 0600 whatever the umask.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: str | Path, tighten: Iterable[str | Path] = ()) -> Path:
    """Create ``path`` and its missing parents 0700. Directories that already exist are left alone,
    except those listed in ``tighten`` (the app's own data/config dirs, made by an older version 0755),
    which are set to 0700 when they are ``path`` or one of its parents."""
    p = Path(path).expanduser()
    missing: list[Path] = []
    q = p
    while not q.exists() and q != q.parent:
        missing.append(q)
        q = q.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(d, DIR_MODE)  # the umask may have taken bits away; never added any
    own = {Path(t).expanduser().resolve() for t in tighten}
    if own:
        resolved = p.resolve()
        for d in (resolved, *resolved.parents):
            if d in own and d.is_dir() and os.stat(d).st_mode & 0o077:
                try:
                    os.chmod(d, DIR_MODE)
                except OSError:
                    pass  # not ours to change (another owner): leave it, the files are still 0600
    return p


def write_private(path: str | Path, data: str | bytes, *, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` as a 0600 file (an existing file's looser mode is tightened too)."""
    p = Path(path).expanduser()
    payload = data.encode(encoding) if isinstance(data, str) else data
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(payload)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)
    return p
