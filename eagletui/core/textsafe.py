"""Text from logs, servers and files made inert before it reaches a terminal.

A log line can carry escape sequences (``ESC ] 0;title BEL`` retitles the window, ``ESC ] 52;…`` writes
the clipboard, ``ESC [ …`` moves the cursor) and UTF-8 C1 controls (U+009B is a one-byte CSI for
terminals that honour C1). Printing it raw lets whoever wrote the log drive the user's terminal.
:func:`inert` shows every such character as a visible stand-in instead. Pure: no I/O.
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL, C1 controls, the Unicode line/paragraph separators and the bidirectional
# overrides/isolates (which reorder what the user reads: "trojan source").
_UNSAFE_RE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _stand_in(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x20:
        return chr(0x2400 + c)  # ␛ for ESC, ␇ for BEL, ␊ for a newline, …
    if c == 0x7F:
        return "␡"
    return f"\\u{c:04x}" if c > 0xFF else f"\\x{c:02x}"


def inert(text: str) -> str:
    """``text`` with every control character shown as a visible stand-in (ESC → ␛, U+009B → \\x9b)."""
    if _UNSAFE_RE.search(text) is None:
        return text
    return _UNSAFE_RE.sub(_stand_in, text)


# What json.dumps(ensure_ascii=False) leaves raw: DEL, C1 and the Unicode separators/bidi controls
# (it escapes C0 itself). Outside strings a JSON document holds none of these, so escaping them is safe.
_JSON_UNSAFE_RE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_inert(doc: str) -> str:
    """A JSON document (from ``json.dumps``) with DEL, C1 and bidi controls written as ``\\uXXXX``."""
    if _JSON_UNSAFE_RE.search(doc) is None:
        return doc
    return _JSON_UNSAFE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", doc)
