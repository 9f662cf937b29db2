"""``eagletui serve [--port N] COMMAND ARGS…``: the same UI in a browser, for ``demo``, ``connect`` or
``replay``.

It listens on 127.0.0.1 (anything else needs ``--allow-remote``) and prints one URL with a random
access token; every request must carry it. Reach it from a laptop through ``ssh -L``: the page's
URLs are relative, so any local port works. The first tab gets the session (the command runs behind
it, exactly as in a terminal); further tabs are read-only views that follow it; closing the owner's
tab quits its app the way ``q`` does. Errors the command would print before its UI opens (a missing
recording, a bad profile, an unreachable host, a host key to accept) are checked here first, in the
terminal, so the browser does not meet them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import secrets
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from eagletui.commands._args import ArgumentParser
from eagletui.core.timings import Timings
from eagletui.web.page import DEFAULT_MAX_TABS

SERVED = ("demo", "connect", "replay")
DEFAULT_PORT = 8765


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="eagletui serve",
        description="Serve the UI to a browser: the first tab controls the session, more tabs are "
        "read-only views. Listens on 127.0.0.1; reach it through 'ssh -L PORT:127.0.0.1:PORT HOST'.",
        epilog="examples: eagletui serve replay demo-eagle3 · eagletui serve demo · "
        "eagletui serve --port 9000 connect root@gpu-host --profile kimi.toml",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}; 0: any free)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow an address beyond loopback: anyone who can reach it and has the URL controls the "
        "session, over plain HTTP (prefer ssh -L)",
    )
    p.add_argument("--title", default=None, help="the page's title (default: the command)")
    p.add_argument(
        "--max-tabs",
        type=_max_tabs,
        default=DEFAULT_MAX_TABS,
        help=f"tabs open at once, each an eagletui process of about 28 MB (default {DEFAULT_MAX_TABS}); "
        "the next one gets a page that says so",
    )
    p.add_argument("command", choices=SERVED, help="the UI command to serve")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments, as in a terminal")
    return p


def _int_between(what: str, low: int, high: int) -> Any:
    """An argparse type: a whole number from ``low`` to ``high``, or an error that names ``what``."""

    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} is a whole number, not {value!r}") from None
        if not low <= n <= high:
            raise argparse.ArgumentTypeError(f"{what} is {low}-{high}, not {n}")
        return n

    return parse


_port = _int_between("a port", 0, 65535)
_max_tabs = _int_between("--max-tabs", 1, 64)


def loopback(host: str) -> bool:
    """Whether listening on ``host`` stays on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def precheck(command: str, argv: list[str]) -> str | None:
    """What the command would refuse before its UI opens, checked in this terminal; None when fine.
    Usage errors exit here with the command's own argparse message."""
    import importlib

    module: Any = importlib.import_module(f"eagletui.commands.{command}")
    args = module.build_parser().parse_args(argv)
    if command == "replay":
        if getattr(args, "follow", False):
            return "serve replay plays a finished recording; --follow is what the read-only tabs run"
        from eagletui.commands._ui import load_config

        opened = module.open_replay(args, load_config())
        if isinstance(opened, str):
            return opened
        opened[0].close()
    elif command == "connect":
        return _precheck_connect(module, args)
    return None


def _precheck_connect(module: Any, args: argparse.Namespace) -> str | None:
    """The host must be reachable and its key known before a tab connects: the question about an
    unknown key is asked here, where there is a terminal to answer it."""
    from eagletui.core.profile.load import load_profile
    from eagletui.core.profile.model import ProfileError

    profile = None
    if args.profile:
        try:
            profile = load_profile(args.profile)
        except ProfileError as exc:
            return str(exc)
    target = args.target or (profile.target if profile is not None else None)
    if not target:
        return "connect needs a target ([user@]host[:port], an ssh config alias or 'local') or --profile FILE"
    error, _recorded = asyncio.run(module.probe(target, args, want_recorded=False))
    if error is not None:
        return (
            error
            if error.startswith(f"cannot connect to {target}")
            else f"cannot connect to {target}: {error}"
        )
    return None


def banner(command: str, argv: list[str], port: int, token: str, host: str) -> str:
    shown = "[::1]" if host == "::1" else host
    url = f"http://{shown}:{port}/{token}/"
    lines = [
        f"eagletui serve: {' '.join(['eagletui', command, *argv])}",
        f"  open {url}",
        f"  from your laptop: ssh -N -L {port}:127.0.0.1:{port} THIS-HOST, then open "
        f"http://localhost:{port}/{token}/",
        "  the first tab controls the session; more tabs are read-only views. Ctrl+C stops.",
    ]
    if not loopback(host):
        lines.append(
            "  WARNING: listening beyond loopback over plain HTTP: anyone with the URL controls the session"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from eagletui.core.textsafe import inert

    if not loopback(args.host) and not args.allow_remote:
        sys.stderr.write(
            f"eagletui serve: refusing to listen on {inert(args.host)}: that is beyond loopback, and anyone "
            "who reaches it with the URL controls the session. Use ssh -L (see --help), or pass "
            "--allow-remote if you mean it.\n"
        )
        return 2
    try:
        import textual_serve  # noqa: F401  (the front end the page uses)
    except ImportError:  # pragma: no cover - a dependency of eagletui
        sys.stderr.write("eagletui serve needs textual-serve: pip install textual-serve\n")
        return 2
    inner = args.args[1:] if args.args[:1] == ["--"] else list(args.args)
    problem = precheck(args.command, inner)
    if problem is not None:
        sys.stderr.write(f"eagletui serve {args.command}: {inert(problem)}\n")
        return 2
    token = secrets.token_urlsafe(24)
    runtime = Path(tempfile.mkdtemp(prefix="eagletui-serve-"))  # 0700
    try:
        return asyncio.run(_serve(args, inner, token, runtime))
    except OSError as exc:
        sys.stderr.write(
            f"eagletui serve: cannot listen on {inert(args.host)}:{args.port}: {exc.strerror or exc}\n"
        )
        return 1
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


async def _serve(args: argparse.Namespace, inner: list[str], token: str, runtime: Path) -> int:
    import logging

    from eagletui.web.floor import Floor
    from eagletui.web.server import serve

    logging.basicConfig(level=logging.INFO, format="eagletui serve: %(message)s", stream=sys.stderr)
    owner_argv = [sys.executable, "-m", "eagletui", args.command, *inner]
    floor = Floor(runtime, owner_argv, timings=Timings.from_env())
    stop = asyncio.Event()
    got: list[int] = []
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):

        def on_signal(signum: int = sig) -> None:
            got.append(signum)
            if len(got) == 1:
                sys.stderr.write("eagletui serve: stopping (the tabs' apps quit first)…\n")
            stop.set()

        with contextlib.suppress(ValueError, OSError, NotImplementedError):
            loop.add_signal_handler(sig, on_signal)

    def ready(port: int) -> None:
        sys.stdout.write(banner(args.command, inner, port, token, args.host))
        sys.stdout.flush()

    title = args.title or " ".join([args.command, *inner])
    await serve(
        floor,
        token=token,
        title=title,
        host=args.host,
        port=args.port,
        stop=stop,
        ready=ready,
        max_tabs=args.max_tabs,
    )
    return 128 + got[0] if got and got[0] != signal.SIGINT else 0
