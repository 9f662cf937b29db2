"""Terminal notifications: the bell and OSC 9 / OSC 777 desktop notifications.

Titles and bodies often come from server log text, which is untrusted: a crafted log line must not
be able to smuggle escape sequences (retitle the terminal, rewrite the clipboard via OSC 52...)
into the terminal, so every control character is removed before the sequence is built.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from eagletui.config import DESKTOP_KINDS, NotifyChannels, NotifyConfig
from eagletui.core.events import BenchmarkResult, Event, Notice, ServerFailed, ServerReady, TaskFailed
from eagletui.ui.words import describe_failure

if TYPE_CHECKING:
    from eagletui.session.model import Problem
    from eagletui.ui.app import EagleApp

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


#: Seconds a toast stays: information is read at a glance; a warning or error needs a moment longer.
TOAST_TIMEOUT = {"information": 3.0, "warning": 5.0, "error": 7.0}
#: Toasts on screen at once: a third pushes the oldest out (they cover the log's right edge).
MAX_TOASTS = 2

_MILESTONES = frozenset({ServerReady, ServerFailed, BenchmarkResult, Notice, TaskFailed})


class Announcer:
    """The session model's observer for milestones (ready, failed, benchmark done, warnings) and its
    problems: toasts, plus the bell and desktop notifications the user config asks for. The fold
    itself never notifies; this is the only place the UI turns events into attention."""

    def __init__(self, app: EagleApp) -> None:
        self.app = app

    def on_event(self, ev: Event) -> None:
        if type(ev) not in _MILESTONES:  # log lines, samples: the hot path does one set lookup
            return
        if isinstance(ev, ServerReady):
            self.announce("ready", "server ready", f"launch #{self.app.model.state.current} is ready")
        elif isinstance(ev, ServerFailed):
            # The failure box under the phases shows the hint and the evidence: the toast only points
            # there (a desktop notification, seen away from the screen, carries the hint).
            what = describe_failure(ev.kind, ev.phase)
            self.announce(
                "failed",
                f"launch #{ev.launch or self.app.model.state.current} failed",
                f"{what}: see the failure box",
                severity="error",
                desktop_body=f"{what}. {ev.hint}" if ev.hint else what,
            )
        elif isinstance(ev, BenchmarkResult):
            msg = f"{ev.output_throughput:.1f} tok/s"
            if ev.accept_length:
                msg += f", accept {ev.accept_length:.2f}"
            if ev.error:
                msg += f" ({ev.error})"
            else:
                msg += _decide_hint(self.app)
            self.announce("bench_done", "benchmark done", msg)
        elif isinstance(ev, TaskFailed):
            # lasting news, like a stopped recording: it stays until read; the status line keeps it
            self.app.notify(ev.message, title=f"{ev.task} stopped", severity="error", timeout=30)
        elif isinstance(ev, Notice) and ev.level in ("warning", "error"):
            self.app.notify(ev.message, severity="error" if ev.level == "error" else "warning")

    def on_problem(self, problem: Problem) -> None:
        # A stopped recording or history is lasting news: it stays until read, not 5 s.
        title = _PROBLEM_TITLES.get(problem.source, problem.source)
        timeout = 30 if problem.severity == "error" else None
        self.app.notify(problem.message, title=title, severity=problem.severity, timeout=timeout)

    def announce(
        self, what: str, title: str, body: str, severity: str = "information", desktop_body: str | None = None
    ) -> None:
        """Toast, bell and desktop notification as the user config's channels for ``what`` say."""
        app = self.app
        if not app.driver.toasts_milestones:
            return
        config = getattr(app.user_config, "notifications", None) or NotifyConfig()
        channels = getattr(config, what, None) or NotifyChannels()
        if channels.toast:
            app.notify(body, title=title, severity=severity, timeout=TOAST_TIMEOUT.get(severity, 4))
        terminal = app._driver  # Textual's terminal driver: the bell and OSC sequences go straight out
        if not app.driver.rings_bells or app.is_headless or terminal is None:
            return
        out = notification_output(channels, f"eagletui: {title}", desktop_body or body, config.desktop_kind)
        if out:
            terminal.write(out)


def _decide_hint(app: EagleApp) -> str:
    """Where this benchmark leaves a spec launch's comparison with the server up now within its noise and
    more runs could tell: the key that repeats it until decided (a replay cannot benchmark: no hint)."""
    from eagletui.session.decide import spec_launch_for

    model = app.model
    if not getattr(app.driver, "can_bench", False) or not model.state.current:
        return ""
    spec = spec_launch_for(model.runbook, model.state.current)
    return "" if spec is None else f"; vs spec #{spec} within noise: D repeats it until decided"


#: The session model's problem sources, as a toast title says them.
_PROBLEM_TITLES = {"record": "recording", "runs": "runs table", "history": "phase history"}
