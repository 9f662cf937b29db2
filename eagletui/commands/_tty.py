"""The UI commands need a terminal on both ends: without one Textual runs headless, spins a core
and writes escape codes into a pipe or file. Say so up front instead.

A browser is a terminal too: under ``eagletui serve`` (or a plain ``textual-serve``) the app runs on
pipes with ``TEXTUAL_DRIVER`` naming Textual's web driver, which speaks a framed protocol to the
server over those pipes. That is not a pipe to refuse."""

from __future__ import annotations

import os
import sys

#: Set to 1 to skip the check (tests that drive the UI through something that is a terminal anyway).
OVERRIDE_ENV = "EAGLETUI_ALLOW_NO_TTY"

_SCRIPTABLE = "for scripts use 'eagletui bench' / 'eagletui parse'"

#: ``TEXTUAL_DRIVER`` values that draw in a browser over stdin/stdout pipes (textual-serve's, ours).
WEB_DRIVERS = frozenset({"textual.drivers.web_driver:WebDriver", "eagletui.web.driver:EagleWebDriver"})


def web_driver() -> bool:
    """True when Textual will draw through a web driver (the pipes are its protocol, not a mistake)."""
    return os.environ.get("TEXTUAL_DRIVER", "").strip() in WEB_DRIVERS


def no_terminal_message(command: str) -> str | None:
    """The error to print when stdin or stdout is not a terminal, or None when the UI may start."""
    if os.environ.get(OVERRIDE_ENV, "") not in ("", "0") or web_driver():
        return None
    missing = [name for name, f in (("stdin", sys.stdin), ("stdout", sys.stdout)) if not _isatty(f)]
    if not missing:
        return None
    return (
        f"eagletui {command} needs a terminal ({' and '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} not one); {_SCRIPTABLE}\n"
    )


def require_terminal(command: str) -> int:
    """0 when the UI may start; otherwise prints why not and returns the exit status 2."""
    msg = no_terminal_message(command)
    if msg is None:
        return 0
    sys.stderr.write(msg)
    return 2


def _isatty(f: object) -> bool:
    try:
        return bool(f is not None and f.isatty())  # type: ignore[attr-defined]
    except (ValueError, OSError):  # closed stream
        return False
