"""The SSH options every command that reaches a host takes, spelled the same everywhere."""

from __future__ import annotations

import argparse
from typing import Any


def add_ssh_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--accept-new-host-key", action="store_true", help="add an unknown host key to known_hosts"
    )
    parser.add_argument("--known-hosts", help="known_hosts file (default ~/.ssh/known_hosts)")
    parser.add_argument("--ssh-config", help="ssh config file (default ~/.ssh/config)")


def ssh_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for :func:`eagletui.remote.transport.open_transport`."""
    return {
        "accept_new_host_key": args.accept_new_host_key,
        "known_hosts": args.known_hosts,
        "config_file": args.ssh_config,
    }
