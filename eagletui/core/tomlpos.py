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


def syntax_errors(text: str, limit: int = 50) -> tuple[str | None, list[tuple[int, int, str]], bool]:
    """Every TOML syntax error of ``text`` in one pass, each ``(line, col, message)``: each bad line is
    blanked (the line count kept, so every other position stays true) and the rest read again; a
    parser stops at its first error, which made a user fix a file one error per run (issue 33 item 19).

    Returns the text as read once every bad line is blank (None when even that does not read: an
    error with no line to blank, or past ``limit``), the errors, and whether a blanked line was a
    ``[table]`` header (then the keys under it landed in the table above, and what a later check says
    about them is not to be trusted)."""
    import tomllib

    lines = text.split("\n")
    errors: list[tuple[int, int, str]] = []
    header = False
    while len(errors) < limit:
        try:
            loads("\n".join(lines))
        except tomllib.TOMLDecodeError as exc:
            line, col, msg = decode_error_position(exc, "\n".join(lines))
            if msg.startswith("Unclosed") or not 1 <= line <= len(lines) or not lines[line - 1].strip():
                # an array or inline table left open ends where the next statement (or the file) does:
                # the statement that opened it is the line to name and blank
                line, col = _statement_above(lines, min(line, len(lines)) - (1 if col == 1 else 0))
                if line == 0:
                    errors.append((len(lines), 1, msg))
                    return None, errors, header
            errors.append((line, col, msg))
            header = header or lines[line - 1].lstrip().startswith("[")
            lines[line - 1] = ""
            continue
        return "\n".join(lines), errors, header
    return None, errors, header


_STATEMENT = re.compile(r"^\s*(\[|[A-Za-z0-9_\"'.-][^=]*=)")


def _statement_above(lines: list[str], line: int) -> tuple[int, int]:
    """(line, 1) of the nearest statement (``key =`` or ``[table]``) at or above 1-based ``line``; (0, 0)
    when there is none."""
    for i in range(min(line, len(lines)), 0, -1):
        if _STATEMENT.match(lines[i - 1]):
            return i, 1
    return 0, 0
