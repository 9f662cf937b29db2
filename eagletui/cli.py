"""The ``eagletui`` command. Sub-commands are imported only when used, so ``--help``, ``parse`` and
``bench`` never pay for Textual, plotext or the simulator."""

from __future__ import annotations

import importlib
import sys

from eagletui import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("eagletui.commands.demo", "run the bundled SGLang simulator and open the UI on it"),
    "connect": ("eagletui.commands.connect", "open the UI on a host: [user@]host[:port] or 'local'"),
    "replay": ("eagletui.commands.replay", "replay a recorded session in the UI"),
    "serve": ("eagletui.commands.serve", "serve demo, connect or replay to a browser (127.0.0.1, token)"),
    "sessions": ("eagletui.commands.sessions", "list recorded sessions (start, model, launches, best tok/s)"),
    "export": ("eagletui.commands.export", "export a recorded session's runs as Markdown, CSV or JSON"),
    "parse": (
        "eagletui.commands.parse",
        "classify server log files (SGLang, vLLM): phases, failure, decode stats",
    ),
    "bench": ("eagletui.commands.bench", "headless benchmark (optionally launch first)"),
    "sweep": ("eagletui.commands.sweep", "run a profile's [sweep] unattended: variants, ranking, effects"),
    "tune": (
        "eagletui.commands.tune",
        "find the best setting of a profile's [tune] space in as few launches as the cycle model allows",
    ),
    "preflight": ("eagletui.commands.preflight", "run the pre-launch checks for a profile"),
    "profile": ("eagletui.commands.profile", "create or check a profile (TOML)"),
    "trace": ("eagletui.commands.trace", "where a decode step's GPU time goes, from SGLang profiler traces"),
}

USAGE = """usage: eagletui [--version] [--help] COMMAND [ARGS…]

Tune SGLang + EAGLE-3 servers from one keyboard-driven screen.

commands:
{commands}

Run 'eagletui COMMAND --help' for a command's options.
"""


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [f"  {name.ljust(width)}  {desc}" for name, (_, desc) in COMMANDS.items()]
    return USAGE.format(commands="\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(usage())
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        print(f"eagletui {__version__}")
        return 0
    from eagletui.commands._stdout import inert_stdio

    with inert_stdio():  # every text a command prints reaches the terminal inert (core.textsafe)
        return _run(args[0], args[1:])


def _run(name: str, rest: list[str]) -> int:
    if name not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        sys.stderr.write(f"eagletui: unknown command {name!r}{hint}\n\n{usage()}")
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    try:
        return int(module.main(rest) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception:
        # An unexpected error's traceback quotes the data that caused it: print it here, through the
        # inert stream, rather than let the interpreter print it raw after the stream is restored.
        import traceback

        traceback.print_exc()
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
