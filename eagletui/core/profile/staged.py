"""The next launch's config: toggles staged against the running profile until they are applied.

A relaunch costs minutes, so a user stages several toggles and pays for one launch, and can always
see exactly what will change. This object is the one source of truth for what is staged: the Tune
panel renders it and calls :meth:`StagedConfig.stage`; the screen's diff/apply actions read
:meth:`diff` and :meth:`apply`; headless callers (a sweep) can use it with no UI at all.

Speculation is one switch: unsetting the server kind's speculation flag (SGLang's
``--speculative-algorithm``) stages the launch's no-spec counterpart (its whole flag family goes,
:mod:`eagletui.core.servers.spec`), and setting it again
brings back the speculative flags the last speculating launch had, so a drafter comparison can go
spec → no-spec → spec without retyping the draft model.

Pure: no I/O, no UI; a refused value comes back as a message instead of an exception.
"""

from __future__ import annotations

from typing import Any

from eagletui.core.profile.model import Profile, Toggle, config_diff
from eagletui.core.profile.toggles import ENV, split_key
from eagletui.core.servers.flags import check_flags
from eagletui.core.servers.spec import spec_flags, speculates, without_speculation


class NothingStaged(Exception):
    """:meth:`StagedConfig.apply` with nothing (or no profile) to apply; the message is for the user."""


def _unset(value: Any) -> bool:
    return value is None or value is False


class StagedConfig:
    """Staged toggle values (``env:NAME`` / ``arg:--flag`` → value; None = unset) over ``profile``."""

    def __init__(self, profile: Profile | None = None, server_version: str | None = None) -> None:
        self.profile = profile
        #: the sglang version the preflight found on the host: flags newer or older than it are refused
        self.server_version = server_version
        self._pending: dict[str, Any] = {}
        self.version = 0  # bumped on every change, so a view can tell whether to redraw
        #: the speculative flags of the last speculating profile (restored when speculation comes back)
        self._spec_memory: dict[str, Any] = {}
        #: the profile file, once the running config is known to be another one (a reattach): what it
        #: would change is shown beside the running values and can be staged (:meth:`stage_file`)
        self.file: Profile | None = None
        self._file_diff: tuple[tuple[int, int, int], dict[str, list[Any]]] | None = None
        self._remember(profile)

    def _remember(self, profile: Profile | None) -> None:
        if profile is not None and speculates(profile.args, profile.kind):
            switches = set(profile.kind.spec_flags)
            self._spec_memory = {
                k: v for k, v in spec_flags(profile.args, profile.kind).items() if k not in switches
            }

    # ------------------------------------------------------------------ queries

    @property
    def pending(self) -> dict[str, Any]:
        """A copy of what is staged (the caller cannot change it behind this object's back)."""
        return dict(self._pending)

    def __len__(self) -> int:
        return len(self._pending)

    def is_staged(self, key: str) -> bool:
        return key in self._pending

    def staged_value(self, key: str) -> Any:
        return self._pending.get(key)

    def value(self, toggle: Toggle) -> Any:
        """What the next launch will use for ``toggle``: the staged value, else the running one."""
        if toggle.key in self._pending:
            return self._pending[toggle.key]
        return self.profile.toggle_value(toggle) if self.profile is not None else None

    def preview(self) -> Profile | None:
        """The profile the next launch would use (None without a profile)."""
        if self.profile is None:
            return None
        new = self.profile.with_values(self._pending)
        kind = self.profile.kind
        if not speculates(new.args, kind):
            new.args = without_speculation(new.args, kind)  # the one meaning of "no spec"
        elif not speculates(self.profile.args, kind):
            for key, value in self._spec_memory.items():
                if f"arg:{key}" not in self._pending:
                    new.args.setdefault(key, value)
        return new

    def implied(self, toggle: Toggle) -> tuple[bool, Any]:
        """(True, value) when the next launch changes ``toggle`` without it being staged itself: a
        ``--speculative-*`` flag that goes with the algorithm, or comes back with it."""
        new = self.preview()
        if new is None or self.profile is None or toggle.key in self._pending:
            return False, None
        after, before = new.toggle_value(toggle), self.profile.toggle_value(toggle)
        return (after != before and not (_unset(after) and _unset(before))), after

    def diff(self) -> dict[str, list[Any]]:
        """Running → staged, as :func:`~eagletui.core.profile.model.config_diff` reports it."""
        new = self.preview()
        if new is None or self.profile is None:
            return {}
        return config_diff(self.profile.snapshot(), new.snapshot())

    def file_diff(self) -> dict[str, list[Any]]:
        """Running → the profile file (empty: no file set, or the server runs the file's config).
        Kept until either profile or anything staged changes: the Tune tab asks once per toggle."""
        if self.file is None or self.profile is None:
            return {}
        key = (self.version, id(self.profile), id(self.file))
        if self._file_diff is None or self._file_diff[0] != key:
            self._file_diff = (key, config_diff(self.profile.snapshot(), self.file.snapshot()))
        return dict(self._file_diff[1])

    def file_value(self, toggle: Toggle) -> tuple[bool, Any]:
        """(True, the file's value) when the profile file differs from the running config on ``toggle``."""
        if self.file is None or toggle.key not in self.file_diff():
            return False, None
        return True, self.file.toggle_value(toggle)

    # ------------------------------------------------------------------ changes

    def stage(self, key: str | Toggle, value: Any) -> str | None:
        """Stage ``value`` for a toggle; returns the reason it was refused, or None when staged.

        Staging the running value unstages the toggle (nothing would change)."""
        if self.profile is None:
            return "no profile: nothing to stage"
        toggle = key if isinstance(key, Toggle) else self.profile.toggle(key)
        if toggle is None:
            return f"unknown toggle {key!r}"
        try:
            value = toggle.validate(value) if not _unset(value) else value
        except ValueError as exc:
            return str(exc)
        if toggle.kind == "arg" and not _unset(value):
            errors, _warnings = check_flags([toggle.name], self.server_version)
            if errors:
                return errors[0]
        running = self.profile.toggle_value(toggle)
        if value == running or (_unset(value) and _unset(running)):
            self._pending.pop(toggle.key, None)
        else:
            self._pending[toggle.key] = value
        self.version += 1
        return None

    def rebase(self, profile: Profile, *, file: Profile | None = None) -> None:
        """The server now runs ``profile`` (``file``: the profile file, after a reattach; shown beside
        the running values when they differ): keep only what still names one of its toggles, or a
        value staged from the file."""
        self.profile = profile
        if file is not None:  # kept only where it differs: a file the server runs says nothing new
            self.file = file if config_diff(profile.snapshot(), file.snapshot()) else None
        self._remember(profile)
        from_file = self.file_diff()
        self._pending = {
            k: v for k, v in self._pending.items() if profile.toggle(k) is not None or k in from_file
        }
        self.version += 1

    def stage_file(self) -> str | None:
        """Stage every value where the profile file differs from the running config (a flag that is
        no toggle too), so ``a`` launches the file's config; returns why nothing was staged, or None.
        The values are the file's own, not its redacted snapshot: a secret is never staged as ``***``."""
        if self.file is None or self.profile is None:
            return "the server runs the profile file's config"
        diff = self.file_diff()
        if not diff:
            return "the server runs the profile file's config"
        for key in diff:
            kind, name = split_key(key)
            if kind is None:
                continue  # target or command: a reattach only follows runs whose command is the file's
            toggle = self.profile.toggle(key)
            if toggle is not None:  # as the toggle reads it (an env switch's "1" is on)
                self._pending[key] = self.file.toggle_value(toggle)
            else:
                source: dict[str, Any] = self.file.env if kind is ENV else self.file.args  # type: ignore[assignment]
                self._pending[key] = source.get(name)
        self.version += 1
        return None

    def apply(self) -> Profile:
        """The profile to launch with what is staged. Staged values stay until :meth:`applied` is
        called once the relaunch has started, so a refused preflight loses nothing."""
        new = self.preview()
        if new is None:
            raise NothingStaged("no profile")
        if not self.diff():
            raise NothingStaged("nothing to apply: no pending changes")
        return new

    def applied(self, keys: Any) -> None:
        """The relaunch with these staged keys has started: they are the running config now."""
        for key in keys:
            self._pending.pop(key, None)
        self.version += 1

    def discard(self) -> None:
        self._pending.clear()
        self.version += 1
