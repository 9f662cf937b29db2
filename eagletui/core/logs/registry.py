"""The registry of log formats: every known :class:`~eagletui.core.logs.seam.LogFormat`, found by name.

Apart from the seam so a format module can import the seam's vocabulary without importing every other
format (the registry imports them all).
"""

from __future__ import annotations

from eagletui.core.logs.seam import LogFormat


def formats() -> list[LogFormat]:
    """Every known log format, the default first."""
    from eagletui.core.logs.formats import FORMATS

    return FORMATS


def get_format(name: str | None = None) -> LogFormat:
    """The format called ``name`` (the default, the first registered, when None). KeyError if unknown."""
    fmts = formats()
    if name is None:
        return fmts[0]
    for f in fmts:
        if f.name == name:
            return f
    raise KeyError(f"unknown log format {name!r}; known: {', '.join(f.name for f in fmts)}")
