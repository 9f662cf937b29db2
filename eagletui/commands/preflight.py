"""``eagletui preflight TARGET --profile FILE``: the pre-launch checks, scriptable (exit 1 on failure)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from eagletui.commands._args import ArgumentParser, command_timings, timings_from_env
from eagletui.commands._ssh import add_ssh_options, ssh_options
from eagletui.commands._stdout import write_stdout

SYMBOL = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "unknown": "????"}


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="eagletui preflight", description="Check a host before launching a server.")
    p.add_argument(
        "target",
        nargs="?",
        help="[user@]host[:port], an ssh config alias, or 'local' (default: the profile's)",
    )
    p.add_argument("--profile", "-p", required=True, help="profile TOML")
    add_ssh_options(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print the checks as a JSON list of {name, status, message} (status: pass|warn|fail|unknown)",
    )
    return p


async def _run(args: argparse.Namespace) -> int:
    from eagletui.core.profile.load import load_profile
    from eagletui.core.profile.model import ProfileError
    from eagletui.core.textsafe import inert
    from eagletui.remote.preflight import Check, connection_check_name, run_preflight_with_flags
    from eagletui.remote.transport import TransportError, open_transport

    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        sys.stderr.write(f"eagletui: {exc}\n")
        return 2
    target = args.target or profile.target
    try:
        transport = await open_transport(target, ssh_options(args), timings=command_timings(args))
    except (TransportError, OSError, ValueError) as exc:
        checks = [Check(connection_check_name(target), "fail", str(exc))]
    else:
        try:
            checks, _ = await run_preflight_with_flags(transport, profile)
        finally:
            await transport.close()
    if args.json:
        out = json.dumps([c.__dict__ for c in checks], indent=1) + "\n"
    else:
        width = max(len(c.name) for c in checks)
        # host text: inert
        lines = [f"{SYMBOL[c.status]}  {c.name:<{width}}  {inert(c.message)}" for c in checks]
        fails = sum(c.status == "fail" for c in checks)
        warns = sum(c.status == "warn" for c in checks)
        unknown = sum(c.status == "unknown" for c in checks)
        unsure = f", {unknown} could not be checked" if unknown else ""
        passed = len(checks) - fails - warns - unknown
        lines.append(f"{target}: {passed} passed, {warns} warnings, {fails} failed{unsure}")
        out = "\n".join(lines) + "\n"
    write_stdout(out)
    return 1 if any(c.status == "fail" for c in checks) else 0


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    args.timings = timings_from_env()
    return asyncio.run(_run(args))
