"""Text that is safe to put in front of a terminal.

Server logs, HTTP error bodies and exception messages are untrusted: a log line holding
``ESC ] 52 ; … BEL`` rewrites the user's clipboard, ``ESC ] 0 ; … BEL`` the window title, and a
one-byte C1 CSI (U+009B) drives the cursor just like ``ESC [``. Every path that shows such text
(the failure box, toasts, ``bench``'s stderr, ``parse`` output) passes it through :func:`inert`.

The convention is the log pane's, so the same byte looks the same everywhere:

* C0 controls except TAB (U+0000–U+001F, newline and carriage return included) become their Unicode
  "control picture" (ESC → ``␛`` U+241B, BEL → ``␇``, LF → ``␊``): visible, one cell wide, and never
  interpreted by a terminal. Callers that want several lines split first and make each line inert.
* DEL (U+007F) becomes ``␡``.
* C1 controls (U+0080–U+009F, e.g. the one-byte CSI U+009B) become the four characters ``\\x9b``.

This only neutralises the terminal. Rich markup is a separate matter: inert text that goes into Rich
must travel in a ``rich.text.Text`` (``Text(inert(s))`` / ``Text.append``) or a ``markup=False`` API,
never inside a markup string.
"""

from __future__ import annotations

import re

_CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _visible(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x20:
        return chr(0x2400 + c)
    if c == 0x7F:
        return "\u2421"
    return f"\\x{c:02x}"


def inert(text: str) -> str:
    """``text`` with every terminal control character replaced by a visible stand-in (see above)."""
    text = str(text)
    if _CONTROL_RE.search(text) is None:
        return text
    return _CONTROL_RE.sub(_visible, text)


def inert_lines(text: str) -> str:
    """Multi-line text made inert line by line: the newlines stay, everything else is neutralised
    (a ``\\r`` inside a line would let a later part overwrite an earlier one, so it is shown too)."""
    return "\n".join(inert(line) for line in str(text).split("\n"))
