"""Which ``--flags`` the server will take, decided by the rule its own parser applies.

SGLang's ``prepare_server_args`` builds a plain ``argparse.ArgumentParser`` (``allow_abbrev=True``), so
the server accepts more than the exact names: ``--tp 8`` is a unique prefix of ``--tp-size`` and is
taken, while ``--pp`` could mean ``--pp-size``, ``--pp-max-micro-batch-size`` or
``--pp-async-batch-depth`` and stops the launch. A check that wants exact names refuses launches the
server would run; one that ignores ambiguity lets through launches that die after the user waited for
them. This module reproduces argparse's lookup (``_parse_optional`` / ``_get_option_tuples``) over an
ordered list of option strings, and the list comes from the host's own parser when it can be asked, or
from the bundled table of the real sglang 0.5.23 parser when it cannot.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from eagletui.core.servers.flags import CHANGES, check_flags, parse_version

Kind = Literal["exact", "abbrev", "ambiguous", "unknown"]

#: The sglang release whose parser the bundled table was taken from.
BUNDLED_VERSION = "0.5.23"
_BUNDLED_FILE = "sglang-0.5.23-server-args.json"


@dataclass(frozen=True)
class FlagVerdict:
    """What argparse makes of one command-line option (the part before ``=`` when there is one)."""

    given: str
    kind: Kind
    flag: str | None = None  # the option string it means (exact or expanded prefix)
    candidates: tuple[str, ...] = ()  # ambiguous: every option string it could match, parser order
    closest: str | None = None  # unknown: the nearest spelling the parser knows

    @property
    def ok(self) -> bool:
        return self.kind in ("exact", "abbrev")

    def message(self, instead: str = "") -> str:
        """One line for the user; ``instead`` names a replacement known from the version notes."""
        if self.kind == "exact":
            return f"{self.given} is accepted"
        if self.kind == "abbrev":
            return f"{self.given} is accepted as {self.flag} (a unique prefix)"
        if self.kind == "ambiguous":
            what = f"use {instead}" if instead else "write the full flag"
            return f"ambiguous option: {self.given} could match {', '.join(self.candidates)} ({what})"
        hint = f"use {instead}" if instead else (f"did you mean {self.closest}?" if self.closest else "")
        return f"the server does not accept {self.given}" + (f" ({hint})" if hint else "")


@dataclass(frozen=True)
class FlagTable:
    """The option strings of a server's parser, in the order argparse registered them.

    The order matters only for messages: argparse lists the candidates of an ambiguous prefix in it.
    """

    options: tuple[str, ...]
    allow_abbrev: bool = True
    source: str = "the server's parser"
    version: str | None = None  # the release the table belongs to, when known
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # option string → allowed values
    #: Deprecated option strings → what the server reads them as ("" when it names nothing); None when the
    #: table does not know (a host's answer, the simulator): then the version notes of core.flags speak.
    deprecated: Mapping[str, str] | None = None
    #: The release is a guess (the server's version is unknown): a refusal names the shipped releases that
    #: would accept the flag.
    assumed: bool = False

    def resolve(self, arg: str) -> FlagVerdict:
        return resolve_flag(arg, self.options, allow_abbrev=self.allow_abbrev)

    def bad_choices(self, flag: str, value: Any) -> str | None:
        """argparse's ``invalid choice`` for ``flag value`` (each item of a list), or None."""
        verdict = self.resolve(flag)
        allowed = self.choices.get(verdict.flag or "") if verdict.ok else None
        if not allowed or value is None or isinstance(value, bool):
            return None
        for item in value if isinstance(value, list | tuple) else [value]:
            if not _in_choices(item, allowed):
                if len(allowed) <= 12:
                    hint = "choose from " + ", ".join(allowed)
                else:
                    close = difflib.get_close_matches(str(item), allowed, n=1, cutoff=0.6)
                    hint = (f"did you mean {close[0]!r}? " if close else "") + f"{len(allowed)} choices"
                return f"invalid choice for {verdict.flag}: {str(item)!r} ({hint})"
        return None


def _in_choices(item: Any, allowed: tuple[str, ...]) -> bool:
    """argparse compares after the type conversion: ``int`` choices accept ``08`` as 8."""
    text = str(item)
    if text in allowed:
        return True
    try:
        return str(int(text)) in allowed
    except ValueError:
        return False


def resolve_flag(arg: str, options: Sequence[str], *, allow_abbrev: bool = True) -> FlagVerdict:
    """argparse's reading of ``arg`` (``--name`` or ``--name=value``) against ``options``.

    Same order of tests as ``ArgumentParser._parse_optional``: the whole string, then the part before
    ``=``, then (with ``allow_abbrev``) every option string starting with that part.
    """
    known = set(options)
    name = arg.split("=", 1)[0] if "=" in arg else arg
    if arg in known:
        return FlagVerdict(arg, "exact", arg)
    if name in known:
        return FlagVerdict(name, "exact", name)
    matches: tuple[str, ...] = ()
    if allow_abbrev and name.startswith("--"):
        matches = tuple(o for o in options if o.startswith(name))
    if len(matches) > 1:
        return FlagVerdict(name, "ambiguous", candidates=matches)
    if len(matches) == 1:
        return FlagVerdict(name, "abbrev", matches[0])
    long_opts = [o for o in options if o.startswith("--")]
    close = difflib.get_close_matches(name, long_opts, n=1, cutoff=0.75)
    return FlagVerdict(name, "unknown", closest=close[0] if close else None)


@lru_cache(maxsize=1)
def bundled_table() -> FlagTable:
    """The real sglang 0.5.23 parser's option strings (read once, only when a check needs them)."""
    text = resources.files("eagletui").joinpath("data", _BUNDLED_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    actions = data["actions"]  # insertion order = the parser's registration order
    return FlagTable(
        options=tuple(actions),
        allow_abbrev=True,
        source=f"the bundled sglang {BUNDLED_VERSION} flag table",
        version=BUNDLED_VERSION,
        choices={
            opt: tuple(str(c) for c in spec["choices"])
            for opt, spec in actions.items()
            if isinstance(spec.get("choices"), list) and spec["choices"]
        },
    )


@dataclass
class FlagReport:
    """Errors stop a launch; warnings are recorded with it; notes say how a prefix was read."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: int = 0


def _replacement(flag: str) -> str:
    """What to write instead of a flag the parser refuses: the version notes, else the replacement a
    shipped release names for it where it was a deprecated alias."""
    change = next((c for c in CHANGES if c.flag == flag), None)
    if change:
        return change.use
    from eagletui.core.servers.flagtables import iter_tables

    for _version, infos in reversed(list(iter_tables())):
        info = infos.get(flag)
        if info is not None and info.deprecated:
            return info.deprecated
    return ""


def _accepted_elsewhere(flag: str, table: FlagTable) -> str:
    """``sglang 0.5.13–0.5.19 accept it`` when other shipped releases take ``flag`` exactly."""
    from eagletui.core.servers.flagtables import accepted_in, span

    others = [v for v in accepted_in(flag) if v != table.version]
    return f"sglang {span(others)} accept{'s' if len(others) == 1 else ''} it" if others else ""


def _deprecation(flag: str, table: FlagTable) -> str | None:
    """The table's own word on a deprecated flag (what that release's parser does with it)."""
    if table.deprecated is None or flag not in table.deprecated:
        return None
    new = table.deprecated[flag]
    where = f"sglang {table.version}" if table.version else "this server"
    if new:
        return f"{flag} is deprecated in {where}: the server warns and reads it as {new}"
    return f"{flag} is deprecated in {where}: the server warns (it names no replacement)"


def check_values(args: Mapping[str, Any], table: FlagTable | None, version: str | None = None) -> list[str]:
    """``invalid choice`` errors for flag values (``{"--reasoning-parser": "kimi2"}``); a table of another
    release than the host's says nothing (its choices may differ)."""
    if table is None:
        return []
    table_v, host_v = parse_version(table.version), parse_version(version)
    if table_v is not None and host_v is not None and table_v != host_v:
        return []
    out = []
    for flag, value in args.items():
        msg = table.bad_choices(flag, value)
        if msg:
            out.append(msg + (f" [{table.source}]" if table_v is not None else ""))
    return out


def check_server_flags(flags: Iterable[str], table: FlagTable | None, version: str | None) -> FlagReport:
    """Every flag read as the server's parser reads it, plus the version-dependent notes of core.flags.

    ``table`` None: the parser could not be learned, only the version table speaks. A table from another
    release than the host's (the bundled one on an older server) cannot refuse anything: its refusals
    become warnings and the version table decides.
    """
    report = FlagReport()
    host_v = parse_version(version)
    table_v = parse_version(table.version) if table is not None else None
    foreign = table is not None and table_v is not None and host_v is not None and host_v != table_v
    for arg in flags:
        name = arg.split("=", 1)[0]
        report.checked += 1
        v_errors, v_warnings = check_flags([name], version)
        if table is None:
            report.errors += v_errors
            report.warnings += v_warnings
            continue
        verdict = table.resolve(arg)
        # A release-specific table knows its own deprecations even when the host's version is unknown.
        warn_version = version or table.version
        if not verdict.ok:
            msg = verdict.message(_replacement(name))
            if foreign:
                report.warnings.append(f"{msg} [{table.source}; the host has {version}]")
                report.errors += v_errors
                report.warnings += v_warnings
            else:
                where = msg if table_v is None else f"{msg} [{table.source}]"
                elsewhere = _accepted_elsewhere(name, table) if table.assumed else ""
                if elsewhere:
                    where += f"; {elsewhere}: set [server] version if the server is one of those"
                report.errors.append(where)
            continue
        full = verdict.flag or name
        if verdict.kind == "abbrev":
            report.notes.append(verdict.message())
        if foreign:
            report.errors += v_errors
        # Deprecation notes follow the flag the server will actually read: the release's own parser when
        # the table is that release's, else the version notes.
        own = None if foreign else _deprecation(full, table)
        if own is not None:
            report.warnings.append(own)
        elif foreign or table.deprecated is None:
            report.warnings += check_flags([full], warn_version)[1]
    return report
