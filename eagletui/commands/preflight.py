"""``eagletui preflight TARGET --profile FILE``: the pre-launch checks, scriptable (exit 1 on failure)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from eagletui.commands._ssh import add_ssh_options, ssh_options

SYMBOL = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="eagletui preflight", description="Check a host before launching a server."
    )
    p.add_argument(
        "target",
        nargs="?",
        help="[user@]host[:port], an ssh config alias, or 'local' (default: the profile's)",
    )
    p.add_argument("--profile", "-p", required=True, help="profile TOML")
    add_ssh_options(p)
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    return p


async def _run(args: argparse.Namespace) -> int:
    from eagletui.core.profile import ProfileError, load_profile
    from eagletui.remote.preflight import Check, run_preflight
    from eagletui.remote.transport import TransportError, open_transport

    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        sys.stderr.write(f"eagletui: {exc}\n")
        return 2
    target = args.target or profile.target
    try:
        transport = await open_transport(target, ssh_options(args))
    except (TransportError, OSError, ValueError) as exc:
        checks = [Check("ssh", "fail", str(exc))]
    else:
        try:
            checks = await run_preflight(transport, profile)
        finally:
            await transport.close()
    if args.json:
        print(json.dumps([c.__dict__ for c in checks], indent=1))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            print(f"{SYMBOL[c.status]}  {c.name:<{width}}  {c.message}")
        fails = sum(c.status == "fail" for c in checks)
        warns = sum(c.status == "warn" for c in checks)
        print(f"{target}: {len(checks) - fails - warns} passed, {warns} warnings, {fails} failed")
    return 1 if any(c.status == "fail" for c in checks) else 0


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    return asyncio.run(_run(args))
