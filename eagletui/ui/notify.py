"""Terminal notifications: the bell and OSC 9 / OSC 777 desktop notifications.

Titles and bodies often come from server log text, which is untrusted: a crafted log line must not
be able to smuggle escape sequences (retitle the terminal, rewrite the clipboard via OSC 52...)
into the terminal, so every control character is removed before the sequence is built.
"""

from __future__ import annotations

import re

from eagletui.config import DESKTOP_KINDS, NotifyChannels

# C0 controls, DEL and C1 controls (0x9b is a one-byte CSI, 0x9c a one-byte ST, 0x9d a one-byte OSC).
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
MAX_TITLE = 120
MAX_BODY = 400


def clean(text: str, limit: int) -> str:
    """One line of printable text: controls become spaces, runs of space collapse, length capped."""
    text = _CONTROL_RE.sub(" ", str(text))
    text = re.sub(r" {2,}", " ", text).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def desktop_notify_sequence(title: str, body: str, kind: str = "osc9") -> str:
    if kind not in DESKTOP_KINDS:
        raise ValueError(f"unknown desktop notification kind {kind!r} (use {' or '.join(DESKTOP_KINDS)})")
    t = clean(title, MAX_TITLE)
    b = clean(body, MAX_BODY)
    if kind == "osc777":
        # ';' separates the title from the body in OSC 777, so a title may not contain one.
        return f"\x1b]777;notify;{t.replace(';', ',')};{b}\x07"
    message = f"{t}: {b}" if t and b else (t or b)
    # "OSC 9 ; 4 ; ..." is a progress report in ConEmu/Windows Terminal: never start with "<digits>;".
    if re.match(r"^\d+;", message):
        message = " " + message
    return f"\x1b]9;{message}\x07"


def bell() -> str:
    return "\a"


def notification_output(channels: NotifyChannels, title: str, body: str, kind: str = "osc9") -> str:
    """What to write to the terminal for one notification (toasts are the app's business)."""
    out = ""
    if channels.bell:
        out += bell()
    if channels.desktop:
        out += desktop_notify_sequence(title, body, kind)
    return out
