"""A profile for reattaching without ``--profile``: rebuilt from the snapshot a launch recorded.

Every launch writes its redacted profile snapshot into ``run.json`` on the host
(:meth:`eagletui.core.profile.model.Profile.snapshot`), so ``eagletui connect HOST`` can bring back the
command, flags, env, port and verdict of the server it finds there instead of an empty profile whose
relaunch would run a default command. Secrets were redacted before they were written; they are left
out here (and named), so a relaunch never passes ``***`` as a token.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from eagletui.core.profile.launch import default_toggles
from eagletui.core.profile.load import profile_from_dict
from eagletui.core.profile.model import Profile, ProfileError
from eagletui.core.profile.running import recorded_values
from eagletui.remote.control import RunInfo, ServerControl
from eagletui.remote.transport import Transport

DEFAULT_RUNS_DIR = "~/.eagletui/runs"


@dataclass
class RecordedProfile:
    run: RunInfo
    profile: Profile
    #: Flags and env vars whose values were redacted at launch and are therefore missing here.
    dropped_secrets: list[str] = field(default_factory=list)


def run_differences(run: RunInfo, profile: Profile) -> list[str]:
    """What makes ``run`` another profile's server: port, launch command or model (empty: it is this
    profile's run, possibly with other toggles applied). Flags and env may differ: an applied toggle
    is still this profile's run."""
    snap = run.config if isinstance(run.config, dict) else {}
    mine = profile.snapshot()
    out = []
    port = snap.get("port") if isinstance(snap.get("port"), int) else run.port
    if port and port != profile.port:
        out.append(f"port {port} (the profile's is {profile.port})")
    command = snap.get("command")
    if isinstance(command, list) and command and command != mine["command"]:
        out.append(f"command {' '.join(map(str, command))[:120]!r}")
    model = snap.get("model")
    if isinstance(model, str) and model and model != mine["model"]:
        out.append(f"model {model!r} (the profile's is {mine['model']!r})")
    return out


async def newest_live_run(
    transport: Transport, runs_dir: str = DEFAULT_RUNS_DIR, python: str = "python3"
) -> RunInfo | None:
    """The newest run eagletui started under ``runs_dir`` that is still alive (None if there is none)."""
    runs = await ServerControl(transport, runs_dir=runs_dir, python=python, timings=transport.timings).list_runs()
    live = [r for r in runs if r.alive and r.owned]
    return live[0] if live else None


def profile_from_run(run: RunInfo, target: str) -> RecordedProfile | None:
    """The launch profile recorded in ``run``, or None when the run carries no usable snapshot."""
    snap = run.config
    if not isinstance(snap, dict) or not snap.get("command"):
        return None
    command = [str(c) for c in snap["command"]] if isinstance(snap["command"], list) else []
    if not command:
        return None
    # no profile file to take a redacted value from: every secret is dropped (and named)
    recorded_args, dropped = recorded_values(snap.get("args") or {}, {})
    args = {flag.removeprefix("--"): value for flag, value in recorded_args.items()}
    env, dropped_env = recorded_values(snap.get("env") or {}, {})
    dropped += dropped_env
    target_section: dict[str, Any] = {"host": target}
    # "{python}" in the recorded command is the interpreter argv[0] was expanded to at launch.
    if command[0] == "{python}" and run.argv:
        target_section["python"] = str(run.argv[0])
    for key in ("python", "workdir"):  # recorded by newer launches
        if isinstance(snap.get(key), str):
            target_section[key] = snap[key]
    server: dict[str, Any] = {"command": command, "args": args, "env": env}
    if isinstance(snap.get("port"), int):
        server["port"] = snap["port"]
    elif run.port:
        server["port"] = int(run.port)
    if run.run_dir:
        server["runs_dir"] = os.path.dirname(run.run_dir.rstrip("/"))
    toggles = snap.get("toggles")
    if not isinstance(toggles, list):
        flags = {f if f.startswith("--") else f"--{f}": v for f, v in args.items()}
        toggles = default_toggles(flags, {k: str(v) for k, v in env.items()})
    data = {
        "name": f"run {run.run_id}",
        "target": target_section,
        "server": server,
        "toggles": toggles,
        "verdict": snap.get("verdict") or {},
    }
    try:
        profile = profile_from_dict(data)
    except (ProfileError, TypeError, ValueError):
        return None
    return RecordedProfile(run=run, profile=profile, dropped_secrets=dropped)


async def recorded_profile(
    transport: Transport, target: str, runs_dir: str = DEFAULT_RUNS_DIR
) -> RecordedProfile | None:
    """The profile of the newest live run eagletui started on the host, for a connect without one."""
    run = await newest_live_run(transport, runs_dir)
    return profile_from_run(run, target) if run is not None else None
