"""Shared set-up for the commands that open the UI (demo, connect, replay)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from eagletui.core.profile.model import Profile


def load_config() -> Any:
    from eagletui.config import load_user_config

    cfg, problems = load_user_config()
    for p in problems:
        sys.stderr.write(f"eagletui: config: {p}\n")
    return cfg


def make_recorder(cfg: Any, target: str, profile: Profile | None, enabled: bool = True) -> Any:
    if not enabled or not getattr(cfg, "record", True):
        return None
    from eagletui.core.profile.redact import Redactor
    from eagletui.session.record import Recorder

    # Learns the profile's secrets (env, --api-key, its command) so log lines echoing them are scrubbed.
    redactor = Redactor.for_profile(profile) if profile else Redactor()
    try:
        return Recorder.create(
            cfg.sessions_dir, target=target, profile_name=profile.name if profile else "", redactor=redactor
        )
    except OSError as exc:
        sys.stderr.write(f"eagletui: not recording: {exc}\n")
        return None


def make_history(cfg: Any) -> Any:
    try:
        from eagletui.core.phases.history import PhaseHistory

        return PhaseHistory.load(cfg.history_path)
    except Exception:
        return None


def add_ui_options(parser: Any) -> None:
    parser.add_argument("--theme", help="theme name (see themes/; t cycles in the app)")
    parser.add_argument("--no-record", action="store_true", help="do not record this session")


#: Signals that end the UI the way ``q`` does (terminal restored, the demo's server stopped).
QUIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
#: What a terminal needs to be usable again if the app could not restore it itself: mouse reporting
#: (all modes), bracketed paste and the alternate screen off, cursor visible.
RESET_TERMINAL = "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?2004l\x1b[?25h\x1b[?1049l"


def run_app(app: Any, on_force: Callable[[], None] | None = None) -> int | None:
    """``app.run()`` with SIGTERM/SIGHUP/SIGINT turned into a clean quit; returns the signal that
    ended it (None for a normal quit).

    Python's default for these signals kills the process on the spot: the terminal stays in the
    alternate screen with mouse reporting on, and ``demo`` leaves its simulator and temp dir behind.
    Here the first signal asks the app to quit (``quit_now``: the ``q`` path, no confirmation);
    repeats are ignored (a hang-up often comes twice: from the kernel and from the terminal). Nothing
    is raised from the handler: an exception at an arbitrary point can leave Textual's output queue
    locked. If the quit has not finished after the app's ``timings.session.force_quit_s`` (a terminal
    that is gone can block the app's last writes; the quit path itself waits for a launch in flight
    and the server's stop, each bounded, so this is a backstop), a watchdog thread runs ``on_force``
    (the caller's emergency cleanup), resets the terminal and ends the process.
    """
    got: list[int] = []

    def force() -> None:
        with contextlib.suppress(Exception):
            if on_force is not None:
                on_force()
        reset_terminal()
        os._exit(128 + got[0])

    def on_signal(signum: int, _frame: Any) -> None:
        got.append(signum)
        if len(got) > 1:
            return
        if signum == signal.SIGHUP and terminal_gone():
            detach_terminal()  # the app's last writes must not block on (or die of) a dead tty
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise SystemExit(128 + signum) from None  # the UI is not running: nothing to interrupt
        loop.call_soon_threadsafe(getattr(app, "quit_now", None) or app.exit)
        watchdog = threading.Timer(app.timings.session.force_quit_s, force)
        watchdog.daemon = True
        watchdog.start()
        timers.append(watchdog)

    timers: list[threading.Timer] = []
    previous = {}
    for sig in QUIT_SIGNALS:
        with contextlib.suppress(ValueError, OSError):  # not the main thread (tests): no handlers
            previous[sig] = signal.signal(sig, on_signal)
    from eagletui.commands._served import attach_owner_feed

    feed = attach_owner_feed(app)  # under eagletui serve: what the read-only tabs follow
    try:
        app.run()
    finally:
        if feed is not None:
            feed.end("the tab that controlled it closed or quit")
        for sig, handler in previous.items():
            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, handler)
        for t in timers:
            t.cancel()
    return got[0] if got else None


def reset_terminal() -> None:
    """Best effort: leave the alternate screen, mouse reporting off (the terminal may be gone)."""
    with contextlib.suppress(Exception):
        if sys.__stdout__ is not None and sys.__stdout__.isatty():
            sys.__stdout__.write(RESET_TERMINAL)
            sys.__stdout__.flush()
    with contextlib.suppress(Exception):
        import termios

        fd = sys.__stdin__.fileno() if sys.__stdin__ is not None else -1
        if fd >= 0 and os.isatty(fd):
            attrs = termios.tcgetattr(fd)
            attrs[3] |= termios.ECHO | termios.ICANON | termios.ISIG
            termios.tcsetattr(fd, termios.TCSANOW, attrs)


def terminal_gone() -> bool:
    """True when the controlling terminal hung up (its fds answer EIO), not for ``kill -HUP``."""
    import termios

    for fd in (2, 1, 0):
        try:
            termios.tcgetattr(fd)
            return False
        except termios.error as exc:
            if exc.args and exc.args[0] == 5:  # EIO: the other end of the pty is closed
                return True
        except OSError:
            continue
    return False


def detach_terminal() -> None:
    """Point stdin/stdout/stderr at /dev/null: writes succeed (into nothing) instead of EIO."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
