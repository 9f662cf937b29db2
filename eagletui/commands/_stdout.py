"""Writing a command's report to stdout so that ``… | head`` ends quietly instead of in a traceback.

When the reader of a pipe goes away, the next write raises ``BrokenPipeError`` and so does the flush at
interpreter exit. The report is written in one go; on a broken pipe stdout is pointed at /dev/null so
the exit flush has nowhere to fail, as the Python docs recommend for SIGPIPE-free programs.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from eagletui.core.textsafe import inert_lines


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


class InertStream:
    """A text stream that shows terminal controls instead of passing them on (``core.textsafe``).

    Every command's stdout and stderr go through one of these (:func:`inert_stdio`, installed by the
    ``eagletui`` entry point), so a failure message, a target name, a profile's ``name`` or an
    argparse echo of the user's argv reaches the terminal inert whatever path printed it: the same
    rendering as the UI (ESC → ``␛``, C1 → ``\\x9b``; newlines and tabs kept). JSON that went through
    :func:`~eagletui.core.textsafe.json_inert` passes unchanged (``json.dumps`` escapes C0 itself).
    The UI is not affected: Textual and the terminal reset write to ``sys.__stdout__``/``__stderr__``.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(inert_lines(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding, buffer, …
        return getattr(self._stream, name)


@contextlib.contextmanager
def inert_stdio() -> Iterator[None]:
    """``sys.stdout``/``sys.stderr`` as :class:`InertStream` for the duration (restored after)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout = InertStream(out) if out is not None and not isinstance(out, InertStream) else out  # type: ignore[assignment]
    sys.stderr = InertStream(err) if err is not None and not isinstance(err, InertStream) else err  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
