"""Toggle kinds: what a tunable is (an environment variable, a server flag) and everything that depends
on it, in one object: the profile key and the ``kind:name`` key prefix of staged values and diffs, the
snapshot section its values live in, how a value is written, whether a name holds a secret.

Staged configs, diffs, the runs table, the apply dialog and the redactor all split keys with
:func:`split_key` instead of testing for ``"env:"``/``"arg:"`` themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToggleKind:
    #: ``[[toggles]] env = …`` / ``arg = …`` and the key prefix (``env:NCCL_ALGO``, ``arg:--tp``)
    name: str
    #: the profile snapshot's section holding such values
    section: str
    #: between a name and its value when written out (``NCCL_ALGO=Ring``, ``--tp 8``)
    sep: str

    def key(self, name: str) -> str:
        return f"{self.name}:{name}"

    def render(self, name: str, value: Any) -> str:
        return f"{name}{self.sep}{value}"

    def stored(self, value: Any) -> Any:
        """A staged value as the profile stores it (an env var is a string; ``True`` is ``1``)."""
        if self.name == "env":
            if value is True:
                return "1"
            if isinstance(value, float):
                return repr(value) if not value.is_integer() else str(value)
            return str(value)
        return value

    def is_secret(self, name: str) -> bool:
        """Whether this kind's ``name`` holds a credential (``HF_TOKEN``, ``--api-key``)."""
        from eagletui.core.profile.redact import is_secret_flag, is_secret_name  # redact splits keys with us

        if self.name == "arg" or name.startswith("--"):
            return is_secret_flag(name)
        return is_secret_name(name)


ENV = ToggleKind("env", "env", "=")
ARG = ToggleKind("arg", "args", " ")
#: Every kind, by its name.
TOGGLE_KINDS: dict[str, ToggleKind] = {k.name: k for k in (ENV, ARG)}


def split_key(key: str) -> tuple[ToggleKind | None, str]:
    """``env:NCCL_ALGO`` → (ENV, "NCCL_ALGO"); a key of no kind → (None, key)."""
    name, sep, rest = str(key).partition(":")
    kind = TOGGLE_KINDS.get(name) if sep else None
    return (kind, rest) if kind is not None else (None, str(key))
