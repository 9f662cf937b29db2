"""Writing a command's report to stdout so that ``… | head`` ends quietly instead of in a traceback.

When the reader of a pipe goes away, the next write raises ``BrokenPipeError`` and so does the flush at
interpreter exit. The report is written in one go; on a broken pipe stdout is pointed at /dev/null so
the exit flush has nowhere to fail, as the Python docs recommend for SIGPIPE-free programs.
"""

from __future__ import annotations

import os
import sys


def write_stdout(text: str) -> bool:
    """Write and flush ``text``; False when the reader has gone (the caller's exit status stands)."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        return False
    return True
