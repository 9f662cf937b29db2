"""``eagletui connect TARGET``: the tuning workspace on a remote host (or ``local``)."""

from __future__ import annotations

import argparse
import dataclasses
import sys


def build_parser() -> argparse.ArgumentParser:
    from eagletui.commands._ssh import add_ssh_options
    from eagletui.commands._ui import add_ui_options

    p = argparse.ArgumentParser(
        prog="eagletui connect",
        description="Connect to [user@]host[:port], an ~/.ssh/config alias, or 'local'; reattach to a running "
        "server eagletui started there, or launch the profile's server.",
    )
    p.add_argument("target", help="[user@]host[:port], an ssh config alias, or 'local'")
    p.add_argument("--profile", "-p", help="profile TOML (see 'eagletui profile init')")
    add_ssh_options(p)
    p.add_argument("--no-launch", action="store_true", help="do not launch a server when none is running")
    p.add_argument("--no-preflight", action="store_true", help="skip the pre-launch checks")
    add_ui_options(p)
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from eagletui.commands._ssh import ssh_options
    from eagletui.commands._ui import load_config, make_history, make_recorder, run_app
    from eagletui.core.profile import Profile, ProfileError, load_profile

    if args.profile:
        try:
            profile = load_profile(args.profile)
        except ProfileError as exc:
            sys.stderr.write(f"eagletui: {exc}\n")
            return 2
    else:
        profile = Profile(name="(no profile)", target=args.target)
    target = args.target
    cfg = load_config()

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
        )

    app = EagleApp(
        profile=profile,
        target=target,
        driver=LiveDriver(factory, autolaunch=bool(args.profile) and not args.no_launch),
        user_config=cfg,
        theme_name=args.theme,
        history=make_history(cfg),
        recorder=make_recorder(cfg, target, profile, enabled=not args.no_record),
    )
    signum = run_app(app)  # SIGTERM/SIGHUP/SIGINT: the q path (the server keeps running), terminal restored
    if app.workspace is not None and app.workspace.run is not None:
        run = app.workspace.run
        la = app.model.state.launches.get(run.launch)
        sys.stderr.write(exit_note(run.run_id, la.status if la is not None else None, target, run.log_path))
    if app.recorder is not None:
        sys.stderr.write(f"session recorded to {app.recorder.path}\n")
    return 128 + signum if signum else 0


def exit_note(run_id: str, status: str | None, target: str, log_path: str = "") -> str:
    """What became of the server we leave behind, from its launch's state: only a server that may still
    be running is announced as such (a stopped, exited or failed one is not, and needs no reattach)."""
    from eagletui.core.state import ServerState

    log = f" (log: {log_path})" if log_path else ""
    if status == ServerState.STOPPED:
        return f"the server (run {run_id}) was stopped on {target}{log}\n"
    if status == ServerState.EXITED:
        return f"the server (run {run_id}) has exited on {target}{log}\n"
    if status == ServerState.FAILED:
        return f"the server (run {run_id}) failed on {target}{log}\n"
    return f"the server (run {run_id}) keeps running on {target}; 'eagletui connect {target}' reattaches\n"
