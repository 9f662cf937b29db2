"""Ask the host's own argument parser which flags the server accepts, so a typo is refused before launch.

A misspelt flag (``--speculative-num-step``) otherwise costs a relaunch that dies in argparse. The
parser is built on the host from the installed server (sglang's ``ServerArgs.add_cli_args`` or the
simulator's ``build_parser``), so the answer is right for whatever version is installed there.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from eagletui.remote.transport import TransportError

# Runs on the host with the profile's python: prints the option strings as JSON, or {"error": …}.
HOST_SCRIPT = r"""
import argparse, json, sys
mod = sys.argv[1]
try:
    if mod == "eagletui.sim":
        from eagletui.sim.cli import build_parser
        p = build_parser()
    else:
        from sglang.srt.server_args import ServerArgs
        p = argparse.ArgumentParser()
        ServerArgs.add_cli_args(p)
    opts = sorted({o for a in p._actions for o in a.option_strings if o.startswith("--")})
    print(json.dumps({"flags": opts}))
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
"""


async def host_flags(transport: Any, python: str, module: str, timeout: float = 25.0) -> set[str] | None:
    """The server's accepted ``--flags`` on the host; None when they cannot be learned (then nothing is
    refused: a missing answer must not block a launch)."""
    try:
        res = await transport.run([python, "-c", HOST_SCRIPT, module], timeout=timeout)
    except (TransportError, TimeoutError, OSError):
        return None
    try:
        data = json.loads(res.stdout.strip().splitlines()[-1]) if res.stdout.strip() else {}
    except (ValueError, IndexError):
        return None
    flags = data.get("flags") if isinstance(data, dict) else None
    return set(flags) if isinstance(flags, list) and flags else None


def unknown_flags(flags: list[str], known: set[str] | None) -> list[str]:
    """One message per flag the server would reject, with the closest spelling it accepts."""
    if not known:
        return []
    out = []
    for flag in flags:
        if flag in known:
            continue
        close = difflib.get_close_matches(flag, sorted(known), n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]}?)" if close else ""
        out.append(f"the server does not accept {flag}{hint}")
    return out
