"""The profile a running server was launched with: the profile file, with the flags and env its run
recorded.

A reattach (``connect --profile P`` to a server eagletui started earlier) must show and relaunch what
the server runs, not what the file says: a toggle applied in an earlier session (steps 2 → 3) lives in
the run's recorded snapshot (``run.json``, :meth:`~eagletui.core.profile.model.Profile.snapshot`), never
in the file. So the running profile is the file's everything else (toggles, bench, verdict, sweep) with
the recorded ``args`` and ``env``, and what the file would change is kept beside it, to be shown and
staged on request, never applied behind the user's back.

The snapshot comes from a file on the host: it goes through the profile loader's checks (a flag name, a
value type, a newline in a value are refused) and, when it fails them, the file's config stays with the
reason said. Secrets were redacted before the snapshot was written: the file's value is used where the
file has the same name, and the name is reported as missing otherwise, so a relaunch never passes
``***`` as a token.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from eagletui.core.profile.load import profile_from_dict
from eagletui.core.profile.model import Profile, ProfileError, config_diff
from eagletui.core.profile.redact import REDACTED


@dataclass
class RunningProfile:
    """The profile a run was launched with, and how the profile file differs from it."""

    profile: Profile
    #: running → file, as :func:`~eagletui.core.profile.model.config_diff` spells it (empty: the same)
    file_diff: dict[str, list[Any]] = field(default_factory=dict)
    #: names whose values were redacted in the snapshot and that the file does not have
    dropped_secrets: list[str] = field(default_factory=list)
    #: why the recorded config could not be used (the file's is then the running one): "" when it was
    problem: str = ""


def recorded_values(recorded: Any, known: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A snapshot section (``args`` or ``env``) with each redacted value replaced by ``known``'s (the
    profile file's) under the same name; names redacted and not known are left out and returned."""
    values: dict[str, Any] = {}
    dropped: list[str] = []
    for name, value in (recorded if isinstance(recorded, dict) else {}).items():
        if value == REDACTED:
            if name in known:
                values[str(name)] = known[name]
            else:
                dropped.append(str(name))
            continue
        values[str(name)] = value
    return values, dropped


def running_profile(file: Profile, snapshot: Any) -> RunningProfile:
    """``file`` with the flags and env a run recorded in ``snapshot`` (the run's ``config``); the file
    itself when the run recorded none."""
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("args"), dict):
        return RunningProfile(file)
    args, dropped = recorded_values(snapshot["args"], file.args)
    env, dropped_env = recorded_values(snapshot.get("env") or {}, file.env)
    try:
        checked = profile_from_dict(
            {
                "server": {
                    "command": list(file.command),
                    "args": {str(k).removeprefix("--"): v for k, v in args.items()},
                    "env": env,
                }
            }
        )
    except (ProfileError, TypeError, ValueError) as exc:
        return RunningProfile(file, problem=f"the run's recorded config cannot be read ({exc})")
    running = copy.deepcopy(file)
    running.args, running.env = checked.args, checked.env
    return RunningProfile(
        running, config_diff(running.snapshot(), file.snapshot()), dropped + dropped_env
    )
