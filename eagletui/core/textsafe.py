"""Text that is safe to put in front of a terminal.

Server logs, HTTP error bodies, exception messages and trace kernel names are untrusted: a log line
holding ``ESC ] 52 ; … BEL`` rewrites the user's clipboard, ``ESC ] 0 ; … BEL`` the window title, and a
one-byte C1 CSI (U+009B) drives the cursor just like ``ESC [``. Every path that shows such text (the
failure box, toasts, run details) passes it through :func:`inert`; every command's stdout and stderr
go through the same rendering (``commands._stdout.InertStream``, installed by the entry point), and
so does a Markdown export. A CSV, read by other programs, gets :func:`escaped` cells instead. Pure:
no I/O.

The convention is the log pane's, so the same byte looks the same everywhere:

* C0 controls except TAB (newline and carriage return included) become their Unicode "control picture"
  (ESC → ``␛`` U+241B, BEL → ``␇``, LF → ``␊``): visible, one cell wide, never interpreted by a terminal.
  Callers that want several lines use :func:`inert_lines`.
* DEL becomes ``␡``; C1 controls (U+0080–U+009F) the four characters ``\\x9b``.
* The Unicode line/paragraph separators and the bidirectional overrides/isolates (which reorder what
  the user reads: "trojan source") become ``\\u202e``-style text.

This only neutralises the terminal. Rich markup is a separate matter: inert text that goes into Rich
must travel in a ``rich.text.Text`` or a ``markup=False`` API, never inside a markup string.
"""

from __future__ import annotations

import re

_UNSAFE_RE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _stand_in(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x20:
        return chr(0x2400 + c)  # ␛ for ESC, ␇ for BEL, ␊ for a newline, …
    if c == 0x7F:
        return "\u2421"
    return f"\\u{c:04x}" if c > 0xFF else f"\\x{c:02x}"


def inert(text: str) -> str:
    """``text`` with every terminal control character shown as a visible stand-in (see above)."""
    text = str(text)
    if _UNSAFE_RE.search(text) is None:
        return text
    return _UNSAFE_RE.sub(_stand_in, text)


def inert_lines(text: str) -> str:
    """Multi-line text made inert line by line: the newlines stay, everything else is neutralised
    (a ``\\r`` inside a line would let a later part overwrite an earlier one, so it is shown too)."""
    text = str(text)
    if _UNSAFE_RE.search(text) is None:
        return text
    return _UNSAFE_LINES_RE.sub(_stand_in, text)


# inert_lines in one pass: everything _UNSAFE_RE matches but the newline
_UNSAFE_LINES_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    named = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}.get(c)
    if named is not None:
        return named
    return f"\\u{c:04x}" if c > 0xFF else f"\\x{c:02x}"


_ESCAPE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escaped(text: str) -> str:
    """``text`` for a file other programs read (CSV): every control character written as a backslash
    escape (``\\x1b``, ``\\n``, ``\\t``, ``\\x9b``, ``\\u202e``), so neither a terminal that shows the
    file nor a reader that splits on them acts on it. Backslashes themselves are kept as they are
    (a Windows path stays readable), so the escape is for showing, not a reversible encoding."""
    text = str(text)
    if _ESCAPE_RE.search(text) is None:
        return text
    return _ESCAPE_RE.sub(_escape, text)


# What json.dumps(ensure_ascii=False) leaves raw: DEL, C1 and the Unicode separators/bidi controls
# (it escapes C0 itself). Outside strings a JSON document holds none of these, so escaping them is safe.
_JSON_UNSAFE_RE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_inert(doc: str) -> str:
    """A JSON document (from ``json.dumps``) with DEL, C1 and bidi controls written as ``\\uXXXX``."""
    if _JSON_UNSAFE_RE.search(doc) is None:
        return doc
    return _JSON_UNSAFE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", doc)
