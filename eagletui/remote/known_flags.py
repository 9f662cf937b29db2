"""Ask the host's own argument parser which flags the server accepts, so a refusal comes before launch.

A misspelt flag (``--speculative-num-stepz``) or an ambiguous prefix (``--pp``) otherwise costs a
relaunch that dies in argparse. The parser is built on the host from the installed server (sglang's
``ServerArgs.add_cli_args`` on a plain ``ArgumentParser``, exactly as ``prepare_server_args`` does;
vLLM's ``make_arg_parser`` on its ``FlexibleArgumentParser``, as ``vllm serve`` builds it; or the
simulator's ``build_parser``), so the answer is right for whatever version is installed there. The
rule applied to the answer (exact, unique prefix, ambiguous, unknown) is argparse's own and lives in
:mod:`eagletui.core.servers.flag_rule`.
"""

from __future__ import annotations

import json
from typing import Any

from eagletui.core.servers.flag_rule import FlagTable, check_server_flags
from eagletui.remote.transport import TransportError

# Runs on the host with the profile's python: prints the option strings in registration order (argparse
# lists ambiguous candidates in that order) and whether abbreviations are allowed, or {"error": …}.
HOST_SCRIPT = r"""
import argparse, json, sys
mod = sys.argv[1]
try:
    if mod == "eagletui.sim":
        from eagletui.sim.cli import build_parser
        p = build_parser()
    elif mod == "eagletui.sim.vllm":
        from eagletui.sim.vllm import build_parser
        p = build_parser()
    elif mod == "vllm":
        # vllm serve's own parser (FlexibleArgumentParser moved to argparse_utils in 0.11)
        try:
            from vllm.utils.argparse_utils import FlexibleArgumentParser
        except ImportError:
            from vllm.utils import FlexibleArgumentParser
        from vllm.entrypoints.openai.cli_args import make_arg_parser
        p = make_arg_parser(FlexibleArgumentParser())
    else:
        from sglang.srt.server_args import ServerArgs
        p = argparse.ArgumentParser()
        ServerArgs.add_cli_args(p)
    opts = list(p._option_string_actions)
    choices = {}
    for a in p._actions:
        c = a.choices
        if isinstance(c, (set, frozenset)):
            c = sorted(c, key=str)
        if isinstance(c, (list, tuple, range)) and 0 < len(c) <= 1000:
            for o in a.option_strings:
                choices[o] = [str(x) for x in c]
    print(json.dumps({"flags": opts, "allow_abbrev": bool(getattr(p, "allow_abbrev", True)), "choices": choices}))
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
"""


def table_from_answer(stdout: str) -> FlagTable | None:
    """The host script's last output line → a table; None for an error, junk or an empty list."""
    text = stdout.strip()
    try:
        data = json.loads(text.splitlines()[-1]) if text else {}
    except (ValueError, IndexError):
        return None
    flags = data.get("flags") if isinstance(data, dict) else None
    if not isinstance(flags, list) or not flags or not all(isinstance(f, str) for f in flags):
        return None
    raw = data.get("choices")
    choices = {
        k: tuple(str(x) for x in v)
        for k, v in (raw.items() if isinstance(raw, dict) else [])
        if isinstance(k, str) and isinstance(v, list) and v
    }
    return FlagTable(
        options=tuple(dict.fromkeys(flags)),
        allow_abbrev=data.get("allow_abbrev", True) is not False,
        source="the host's parser",
        choices=choices,
    )


async def host_flags(transport: Any, python: str, module: str) -> tuple[FlagTable | None, str]:
    """The server's option strings on the host, or None and why not (the caller then falls back to a
    bundled table, or checks nothing: a missing answer alone must not block a launch). Bounded by the
    transport's ``timings.preflight.host_flags_s``: building sglang's parser imports
    ``sglang.srt.server_args`` (torch with it), ~20 s on a GPU host measured with sglang 0.5.17, more
    on network storage; only the first launch of a session waits."""
    timeout = transport.timings.preflight.host_flags_s
    try:
        res = await transport.run([python, "-c", HOST_SCRIPT, module], timeout=timeout)
    except TimeoutError:
        return None, f"the host's parser did not answer within {timeout:.0f} s"
    except (TransportError, OSError) as exc:
        return None, f"the host's parser could not be run ({exc or type(exc).__name__})"
    table = table_from_answer(res.stdout)
    if table is None:
        tail = (res.stdout.strip().splitlines() or res.stderr.strip().splitlines() or [""])[-1]
        return None, f"the host's parser gave no flag list ({tail[:200]})"
    return table, ""


def unknown_flags(flags: list[str], known: set[str] | FlagTable | None) -> list[str]:
    """One message per flag the server would refuse (unknown or ambiguous), argparse's rule."""
    if not known:
        return []
    table = known if isinstance(known, FlagTable) else FlagTable(options=tuple(sorted(known)))
    return check_server_flags(flags, table, None).errors
