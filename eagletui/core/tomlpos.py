"""Where in a TOML file a problem is: every config error names ``file:line:col`` so it can be fixed at once."""

from __future__ import annotations

import re
from typing import Any

_AT = re.compile(r"\s*\(at (?:line \d+, column \d+|end of document)\)")
_LINE_COL = re.compile(r"line (\d+), column (\d+)")


def decode_error_position(exc: Exception, text: str) -> tuple[int, int, str]:
    """(line, column, message) of a ``tomllib.TOMLDecodeError`` on any Python version (3.14 adds attributes;
    older ones only put the position in the message)."""
    line = getattr(exc, "lineno", None)
    col = getattr(exc, "colno", None)
    msg = getattr(exc, "msg", None) or _AT.sub("", str(exc))
    if line is None or col is None:
        m = _LINE_COL.search(str(exc))
        if m:
            line, col = int(m.group(1)), int(m.group(2))
        else:  # "at end of document"
            lines = text.splitlines() or [""]
            line, col = len(lines), len(lines[-1]) + 1
    return line, col, msg


def locate(text: str, key: str, section: str | None = None) -> tuple[int | None, int | None]:
    """Best-effort line/column of ``key`` (searching from ``[section]`` / ``[[section]]`` if given)."""
    lines = text.splitlines()
    start = 0
    if section:
        pat = re.compile(r"^\s*\[\[?\s*" + re.escape(section) + r"\s*\]\]?\s*(#.*)?$")
        start = next((i for i, line in enumerate(lines) if pat.match(line)), 0)
    key_re = re.compile(r"^\s*([\"']?)" + re.escape(key) + r"\1\s*=")
    for i in range(start, len(lines)):
        if key_re.match(lines[i]):
            return i + 1, lines[i].index(key) + 1
    for i, line in enumerate(lines):
        m = re.search(r"\[\s*(?:[\w.]+\.)?" + re.escape(key) + r"\s*\]", line)
        if m:
            return i + 1, m.start() + 1
    for i, line in enumerate(lines):
        if key in line:
            return i + 1, line.index(key) + 1
    return None, None


_ANY_HEADER = re.compile(r"^\s*\[")


def locate_in_array(
    text: str, tables: tuple[str, ...], index: int, key: str
) -> tuple[int | None, int | None]:
    """Line/column of ``key`` inside the ``index``-th ``[[table]]`` block (any of ``tables``' spellings),
    else that block's header, else anywhere: an error in the fifth toggle points at the fifth toggle."""
    lines = text.splitlines()
    names = "|".join(re.escape(t) for t in tables)
    header = re.compile(r"^\s*\[\[\s*(?:" + names + r")\s*\]\]\s*(#.*)?$")
    starts = [i for i, line in enumerate(lines) if header.match(line)]
    if index < len(starts):
        start = starts[index]
        key_re = re.compile(r"^\s*([\"']?)" + re.escape(key) + r"\1\s*=")
        for i in range(start + 1, len(lines)):
            if _ANY_HEADER.match(lines[i]):
                break
            if key_re.match(lines[i]):
                return i + 1, lines[i].index(key) + 1
        return start + 1, lines[start].index("[") + 1
    return locate(text, key)


#: Arrays/inline tables nested deeper than this are refused: tomllib recurses per level, and a
#: 5000-deep array ended ``profile check`` in a RecursionError (real profiles nest two or three).
MAX_TOML_DEPTH = 64
_NEST = re.compile(r"""#[^\n]*|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[\[\]{}]|\n""")


def too_deep(text: str, limit: int = MAX_TOML_DEPTH) -> tuple[int, int] | None:
    """``(line, column)`` where inline nesting first goes past ``limit``, or None. Table headers
    (``[server]``, ``[[toggles]]``) start at a line's first non-space and are not nesting; comments
    and strings are skipped. A cheap scan: run before parsing, it never recurses."""
    depth, line, line_start = 0, 1, 0
    for m in _NEST.finditer(text):
        tok = m.group()
        if tok == "\n":
            line, line_start = line + 1, m.end()
        elif tok in "[{":
            if depth == 0 and tok == "[" and not text[line_start : m.start()].strip():
                continue  # a table header: not a value
            depth += 1
            if depth > limit:
                return line, m.start() - line_start + 1
        elif tok in "]}":
            depth = max(0, depth - 1)
    return None


def loads(text: str) -> dict[str, Any]:
    """``tomllib.loads`` that refuses nesting past :data:`MAX_TOML_DEPTH` with a positioned
    ``TOMLDecodeError`` instead of recursing until Python gives up."""
    import tomllib

    at = too_deep(text)
    if at is not None:
        raise tomllib.TOMLDecodeError(
            f"arrays or inline tables nested deeper than {MAX_TOML_DEPTH} levels (at line {at[0]}, column {at[1]})"
        )
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("nested too deep to read (at end of document)") from None
