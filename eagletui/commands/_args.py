"""argparse for every ``eagletui`` subcommand, with "did you mean" for typos.

Plain argparse checks required options before it complains about unknown ones, so ``bench
--proflie p.toml`` said only "the following arguments are required: --profile", and ``profile
chek`` listed the choices without pointing at the close one (the top-level command name already got
a suggestion). :class:`ArgumentParser` keeps the arguments it was given; when it errors it first
names each unknown option with the closest real one, and an invalid choice with the closest choice.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from eagletui.core.timings import Timings, TimingsError

_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors suggest the option or choice that was meant."""

    _given: list[str]

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _options(self) -> list[str]:
        """Long options of this parser and of the subcommand given (a subcommand's unknown option
        is reported by its parent)."""
        out = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        given = set(getattr(self, "_given", []))
        for a in self._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    if name in given:
                        out += [s for b in sub._actions for s in b.option_strings if s.startswith("--")]
        return out

    def unknown_options(self) -> list[tuple[str, str | None]]:
        """``(typed, closest real option or None)`` for each ``--option`` this parser does not know."""
        known = self._options()
        out: list[tuple[str, str | None]] = []
        for arg in getattr(self, "_given", []):
            if arg == "--":
                break
            if not arg.startswith("--") or len(arg) < 3:
                continue
            name = arg.split("=", 1)[0]
            if name in known or any(k.startswith(name) for k in known):  # exact, or an abbreviation
                continue
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            out.append((name, close[0] if close else None))
        return out

    def error(self, message: str) -> NoReturn:
        hints: list[str] = []
        for typed, close in self.unknown_options():
            hints.append(f"unknown option {typed}" + (f" (did you mean {close}?)" if close else ""))
        m = _CHOICE.search(message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            meant = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
            if meant:
                message += f"; did you mean {meant[0]!r}?"
        if hints:
            message = "; ".join(hints) + ("" if "unrecognized arguments" in message else f"; {message}")
        super().error(message)


def timings_from_env() -> Timings:
    """The command's :class:`~eagletui.core.timings.Timings` (``EAGLETUI_TIMINGS``, real by default),
    read once where the command starts and passed down; a malformed value ends the command with the
    reason (exit 2), like a bad option."""
    try:
        return Timings.from_env()
    except TimingsError as exc:
        sys.stderr.write(f"eagletui: {exc}\n")
        raise SystemExit(2) from None


def command_timings(ns: argparse.Namespace) -> Timings:
    """The timings a command's parsed arguments carry (``main`` sets them); a part of the command called
    on its own (a test, another command) reads ``EAGLETUI_TIMINGS`` once and keeps it there."""
    timings = getattr(ns, "timings", None)
    if not isinstance(timings, Timings):
        timings = ns.timings = timings_from_env()
    return timings
