"""``eagletui connect [TARGET]``: the tuning workspace on a remote host (or ``local``).

The host is reached once before the UI starts, so an unreachable or mistyped target is one clear
line and a non-zero exit instead of a full-screen UI stuck in "lost" (and a recorded empty session).
That first connection also answers an unknown host key on the terminal and, without ``--profile``,
finds the newest run eagletui started there, whose recorded profile the UI then uses.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shlex
import sys
from typing import TYPE_CHECKING, Any

from eagletui.commands._args import ArgumentParser, command_timings, timings_from_env

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile


def build_parser() -> argparse.ArgumentParser:
    from eagletui.commands._ssh import add_ssh_options
    from eagletui.commands._ui import add_ui_options

    p = ArgumentParser(
        prog="eagletui connect",
        description="Connect to [user@]host[:port], an ~/.ssh/config alias, or 'local'; reattach to a running "
        "server eagletui started there (with the profile it was launched with), or launch the profile's "
        "server.",
    )
    p.add_argument(
        "target",
        nargs="?",
        help="[user@]host[:port], an ssh config alias, or 'local' (default: the profile's)",
    )
    p.add_argument("--profile", "-p", help="profile TOML (see 'eagletui profile init')")
    add_ssh_options(p)
    p.add_argument("--no-launch", action="store_true", help="do not launch a server when none is running")
    p.add_argument("--no-preflight", action="store_true", help="skip the pre-launch checks")
    add_ui_options(p)
    return p


async def ask_host_key_on_terminal(host: str, fingerprint: str) -> bool:
    """OpenSSH's question, asked before the UI owns the terminal. Behind a browser tab there is no
    terminal to ask on (stdin is the web driver's protocol): ``eagletui serve`` asked already."""
    from eagletui.commands._tty import web_driver

    if web_driver():
        sys.stderr.write(f"eagletui: unknown host key for {host!r} ({fingerprint}): not trusted\n")
        return False
    sys.stderr.write(
        f"The authenticity of host {host!r} can't be established.\n"
        f"Its key fingerprint is {fingerprint}.\n"
        "Add it to known_hosts and continue connecting (yes/no)? "
    )
    sys.stderr.flush()
    try:
        answer = await asyncio.to_thread(sys.stdin.readline)
    except (OSError, ValueError):
        return False
    return answer.strip().lower() in ("y", "yes")


async def probe(
    target: str, args: argparse.Namespace, *, want_recorded: bool, runs_dir: str | None = None
) -> tuple[str | None, Any]:
    """Connect once: ``(error, recorded)`` where ``error`` is the message to print (None when the host
    answered) and ``recorded`` the newest live run's :class:`RecordedProfile` (when asked for)."""
    from eagletui.commands._ssh import ssh_options
    from eagletui.remote.reattach import DEFAULT_RUNS_DIR, recorded_profile
    from eagletui.remote.transport import TransportError, open_transport

    try:
        ssh = dataclasses.replace(ssh_options(args), ask_host_key=ask_host_key_on_terminal)
        transport = await open_transport(target, ssh, timings=command_timings(args))
    except (TransportError, OSError, ValueError) as exc:
        return str(exc), None
    try:
        res = await transport.run(["true"], timeout=command_timings(args).link.reach_s)
        if res.exit_status != 0:
            return f"{target}: running a command failed: {res.stderr.strip()[:300]}", None
        if not want_recorded:
            return None, None
        try:
            return None, await recorded_profile(transport, target, runs_dir or DEFAULT_RUNS_DIR)
        except (TransportError, TimeoutError, OSError):
            return None, None  # no run list: connect without one, the UI says what it finds
    except (TransportError, TimeoutError, OSError) as exc:
        return f"{target}: {exc}", None
    finally:
        await transport.close()


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    args.timings = timings_from_env()
    from eagletui.commands._ssh import ssh_options
    from eagletui.commands._ui import load_config, make_history, make_recorder, run_app
    from eagletui.core.profile.load import load_profile
    from eagletui.core.profile.model import ProfileError

    profile: Profile | None = None
    if args.profile:
        try:
            profile = load_profile(args.profile)
        except ProfileError as exc:
            sys.stderr.write(f"eagletui: {exc}\n")
            return 2
    target = args.target or (profile.target if profile is not None else None)
    if not target:
        sys.stderr.write(
            "eagletui connect: give a target ([user@]host[:port], an ssh config alias or 'local') "
            "or --profile FILE\n"
        )
        return 2
    from eagletui.commands._tty import require_terminal

    if rc := require_terminal("connect"):  # after the argument checks, before reaching the host
        return rc
    error, recorded = asyncio.run(probe(target, args, want_recorded=profile is None))
    if error is not None:
        if not error.startswith(f"cannot connect to {target}"):
            error = f"cannot connect to {target}: {error}"
        sys.stderr.write(f"eagletui: {error}\n")
        return 1
    if profile is None:
        profile = _recorded_profile(recorded, target)
    cfg = load_config()
    if args.profile:
        _say_pending_sweep(target, args.profile)

    from eagletui.session.drivers import LiveDriver
    from eagletui.ui.app import EagleApp
    from eagletui.workspace import Workspace

    app: EagleApp

    def factory(emit):
        return Workspace(
            profile,
            emit,
            target=target,
            ssh=dataclasses.replace(ssh_options(args), ask_host_key=app.ask_host_key),
            preflight=not args.no_preflight,
            timings=command_timings(args),
        )

    app = EagleApp(
        profile=profile,
        target=target,
        driver=LiveDriver(factory, autolaunch=bool(args.profile) and not args.no_launch),
        user_config=cfg,
        theme_name=args.theme,
        history=make_history(cfg),
        recorder=make_recorder(cfg, target, profile, enabled=not args.no_record),
        timings=command_timings(args),
    )
    signum = run_app(app)  # SIGTERM/SIGHUP/SIGINT: the q path (the server keeps running), terminal restored
    sys.stderr.write(exit_note(app, target, profile.port, profile=profile))
    if app.recorder is not None:
        sys.stderr.write(app.recorder.outcome()[0] + "\n")
    return 128 + signum if signum else 0


def _recorded_profile(recorded: Any, target: str) -> Profile:
    """Without ``--profile``: the profile the running server was launched with (said on stderr, with
    the secrets it lacks), or an empty one when eagletui started no server there."""
    from eagletui.core.profile.model import Profile

    if recorded is not None:
        profile: Profile = recorded.profile
        sys.stderr.write(
            f"eagletui: reattaching to run {recorded.run.run_id} with the profile it was launched with\n"
        )
        if recorded.dropped_secrets:
            sys.stderr.write(
                "eagletui: its secrets were not recorded ("
                + ", ".join(recorded.dropped_secrets)
                + "); pass --profile to relaunch with them\n"
            )
    else:
        from eagletui.remote.reattach import DEFAULT_RUNS_DIR

        sys.stderr.write(
            f"eagletui: no running server that eagletui started in {DEFAULT_RUNS_DIR} on {target}; "
            "a profile with another runs_dir needs --profile\n"
        )
        profile = Profile(name="(no profile)", target=target)
    return profile


def _say_pending_sweep(target: str, profile_path: str) -> None:
    """A sweep of this profile on this target left unfinished: the command that resumes it."""
    from eagletui.core.textsafe import inert
    from eagletui.session.sweep.queue import pending_sweep

    if pending_sweep(target, profile_path) is not None:
        resume = shlex.join(["eagletui", "sweep", target, "--profile", profile_path, "--resume"])
        sys.stderr.write(
            inert(f"eagletui: a sweep of this profile on {target} is unfinished: {resume}") + "\n"
        )


def exit_note(app: Any, target: str, port: int | None = None, *, profile: Any = None) -> str:
    """What is left on the host after the UI quits: a running server (and how to get back to it), or
    how the last launch ended. Says "keeps running" only for a server that was not stopped or exited.
    The way back is what reattaching needs: without ``--profile`` connect looks for runs only in the
    default runs dir, so a profile with another ``runs_dir`` is named in the command."""
    from eagletui.core.wording import describe_failure

    ws = app.workspace
    run = ws.run if ws is not None else None
    la = app.state.launch
    status = la.status if la is not None else None
    if la is not None and status == "failed" and la.failure is not None:
        f = la.failure
        note = f"the server failed: {describe_failure(f.kind, f.phase, port=port)}"
        return note + (f" (log: {run.log_path})\n" if run is not None and run.log_path else "\n")
    if run is None or not run.alive or status in ("stopped", "exited"):
        return ""
    if not run.owned:
        return f"the server (pid {run.pid}) on {target} was followed read-only and keeps running\n"
    if run.job_id:
        # a Slurm job is found again through its profile's [slurm] section (the cluster it runs on)
        path = getattr(profile, "path", None) or (ws.profile.path if ws is not None else None) or "PROFILE"
        cmd = shlex.join(["eagletui", "connect", target, "--profile", str(path)])
        return f"the server (run {run.run_id}, Slurm job {run.job_id}) keeps running on {target}; '{cmd}' reattaches\n"
    return f"the server (run {run.run_id}) keeps running on {target}; {reattach_hint(target, profile)}\n"


def reattach_hint(target: str, profile: Any = None) -> str:
    """The command that finds this profile's runs again (``--profile`` when its runs_dir is not the
    default one, which is the only place connect looks without it)."""
    from eagletui.remote.reattach import DEFAULT_RUNS_DIR

    runs_dir = str(getattr(profile, "runs_dir", "") or DEFAULT_RUNS_DIR).rstrip("/")
    path = getattr(profile, "path", None)
    if runs_dir == DEFAULT_RUNS_DIR or not path:
        return f"'eagletui connect {target}' reattaches"
    cmd = shlex.join(["eagletui", "connect", target, "--profile", str(path)])
    return (
        f"'{cmd}' reattaches (its runs are in {runs_dir}; without --profile connect looks only in "
        f"{DEFAULT_RUNS_DIR})"
    )
