"""The one error a :class:`~eagletui.workspace.Workspace` command raises for the user.

Apart from the workspace because its benchmark and step-profile halves (:mod:`eagletui.workspace.benchmark`,
:mod:`eagletui.workspace.step_profile`) raise it too, and the drivers catch it without the engine.
"""

from __future__ import annotations


class WorkspaceError(Exception):
    """A command could not be carried out; the message is for the user. ``stage`` says what stopped a
    launch (``preflight``, ``refused``, ``stop``), ``checks`` the failed preflight lines."""

    def __init__(self, message: str, *, stage: str = "other", checks: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.stage = stage
        self.checks = checks
