"""The SSH options every command that reaches a host takes, spelled the same everywhere."""

from __future__ import annotations

import argparse

from eagletui.remote.transport import SSHOptions


def add_ssh_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--accept-new-host-key", action="store_true", help="add an unknown host key to known_hosts"
    )
    parser.add_argument("--known-hosts", help="known_hosts file (default ~/.ssh/known_hosts)")
    parser.add_argument("--ssh-config", help="ssh config file (default ~/.ssh/config)")


def ssh_options(args: argparse.Namespace) -> SSHOptions:
    """The :class:`~eagletui.remote.transport.SSHOptions` the command line asked for."""
    return SSHOptions(
        accept_new_host_key=args.accept_new_host_key,
        known_hosts=args.known_hosts,
        config_file=args.ssh_config,
    )
