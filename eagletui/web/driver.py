"""The Textual driver an app behind a browser tab draws through: Textual's web driver, quitting the
way ``q`` does.

Textual's :class:`~textual.drivers.web_driver.WebDriver` ends the app on the server's ``quit``
message (a closed tab) and on SIGTERM/SIGINT by posting ``ExitApp``: the app is gone before its
driver is closed, so a demo's simulator or a live connection's transport would only be cleaned up
by whatever runs after ``app.run()``. Here all three go through the app's ``quit_now`` (the path
``q`` takes: the driver closed, the recording flushed, then exit). When the server itself is gone
(stdin at EOF, nobody will ever say ``quit``) the app quits too rather than live on without a tab.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from textual.drivers.web_driver import WebDriver


class EagleWebDriver(WebDriver):
    _eagle_loop: asyncio.AbstractEventLoop | None = None

    def start_application_mode(self) -> None:
        super().start_application_mode()
        loop = self._eagle_loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._quit)  # replaces WebDriver's ExitApp handler

    def _quit(self) -> None:
        """On the app's loop: the app's own quit (falls back to Textual's exit for other apps)."""
        app: Any = self._app
        quit_now = getattr(app, "quit_now", None)
        if callable(quit_now):
            quit_now()
        else:  # pragma: no cover - every eagletui app has quit_now
            app.exit()

    def _quit_threadsafe(self) -> None:
        loop = self._eagle_loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._quit)

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        if packet_type == "quit":
            self._quit_threadsafe()  # the input thread: hand it to the loop
            return
        super().on_meta(packet_type, payload)

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():
            self._quit_threadsafe()  # stdin closed under us: the server is gone
