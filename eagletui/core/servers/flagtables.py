"""The real flag tables of the SGLang releases users run, and which one decides a check.

A flag's fate depends on the release: ``--cuda-graph-max-bs`` is a deprecated alias of
``--cuda-graph-max-bs-decode`` from 0.5.14 to 0.5.19 (the server warns and takes it) and an ambiguous
prefix from 0.5.20 on (the server stops). So a check against one bundled table is wrong for every other
release. ``eagletui/data/sglang-flags/sglang-VERSION.flags`` holds each release's parser as its own code
defines it (generated from the PyPI wheels by ``tools/flagtables/build.py``; the format is in each file's
header), and :func:`table_for` picks the one that decides:

1. the server's version as the host reports it (the preflight learns it without importing sglang);
2. else the version the profile declares (``[server] version``);
3. else the newest shipped release.

A version that is not shipped exactly gets the nearest shipped release, and its refusals only warn (see
:func:`eagletui.core.servers.flag_rule.check_server_flags`). The table's ``source`` always says which release
decided and why (``sglang 0.5.17's flags (host)``), so every message can name it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from eagletui.core.servers.flag_rule import FlagTable
from eagletui.core.servers.flags import parse_version

_DIR = ("data", "sglang-flags")
_NAME = re.compile(r"^sglang-(\d+\.\d+\.\d+(?:\.post\d+)?)\.flags$")
#: Hard bounds on a packaged table (a damaged install must not hang a check).
_MAX_BYTES = 2 << 20
_MAX_LINES = 20000

Origin = str  # "host" | "profile" | "" (nothing known)


@dataclass(frozen=True)
class FlagInfo:
    """One option string of one release."""

    flag: str
    switch: bool = False
    same_as: str | None = None  # another option string with the same argparse dest
    deprecated: str | None = None  # None: not deprecated; "": deprecated, no replacement named
    secret: bool = False
    choices: tuple[str, ...] = ()


def _sort_key(version: str) -> tuple[int, ...]:
    nums = [int(x) for x in re.findall(r"\d+", version)]
    return tuple(nums + [0] * (4 - len(nums)))


@lru_cache(maxsize=1)
def shipped_versions() -> tuple[str, ...]:
    """The releases with a table in this install, oldest first (``0.5.13``, ``0.5.13.post1``, …)."""
    root = resources.files("eagletui").joinpath(*_DIR)
    names = [p.name for p in root.iterdir()] if root.is_dir() else []
    found = [m.group(1) for n in names if (m := _NAME.match(n))]
    return tuple(sorted(found, key=_sort_key))


def _parse(version: str, text: str) -> tuple[bool, dict[str, FlagInfo]]:
    abbrev = True
    infos: dict[str, FlagInfo] = {}
    for n, line in enumerate(text.splitlines()):
        if n > _MAX_LINES:
            break
        if line.startswith("#"):
            if line.startswith("# allow_abbrev:"):
                abbrev = line.split(":", 1)[1].strip() != "false"
            continue
        parts = line.rstrip("\n").split("\t")
        flag = parts[0].strip()
        if not flag.startswith("-"):
            continue
        switch, secret = False, False
        same: str | None = None
        dep: str | None = None
        choices: tuple[str, ...] = ()
        for mark in parts[1:]:
            if mark == "0":
                switch = True
            elif mark == "secret":
                secret = True
            elif mark.startswith("="):
                same = mark[1:]
            elif mark.startswith("~"):
                dep = mark[1:]
            elif mark.startswith("["):
                try:
                    raw = json.loads(mark)
                except ValueError:
                    continue
                if isinstance(raw, list):
                    choices = tuple(str(x) for x in raw)
        infos[flag] = FlagInfo(flag, switch, same, dep, secret, choices)
    return abbrev, infos


@lru_cache(maxsize=32)
def _load(version: str) -> tuple[bool, dict[str, FlagInfo]]:
    path = resources.files("eagletui").joinpath(*_DIR, f"sglang-{version}.flags")
    data = path.read_bytes()[:_MAX_BYTES]
    return _parse(version, data.decode("utf-8", "replace"))


def flag_infos(version: str) -> dict[str, FlagInfo]:
    """Every option string of a shipped release, in its parser's registration order."""
    return _load(version)[1]


def shipped_table(version: str, source: str | None = None, *, assumed: bool = False) -> FlagTable:
    """The parser of one shipped release as a :class:`FlagTable` (raises ``KeyError`` if not shipped)."""
    if version not in shipped_versions():
        raise KeyError(version)
    abbrev, infos = _load(version)
    return FlagTable(
        options=tuple(infos),
        allow_abbrev=abbrev,
        source=source or f"sglang {version}'s flags",
        version=version,
        choices={f: i.choices for f, i in infos.items() if i.choices},
        deprecated={f: i.deprecated for f, i in infos.items() if i.deprecated is not None},
        assumed=assumed,
    )


def nearest_shipped(version: str | None) -> str | None:
    """The shipped release that best stands for ``version``: the same one; else the newest shipped release
    of the same major.minor.patch (``0.5.13`` for ``0.5.13rc0``); else the closest below it, else the oldest
    above it. None when nothing is shipped or the version cannot be read."""
    shipped = shipped_versions()
    if not shipped:
        return None
    if version in shipped:
        return version
    v = parse_version(version)
    if v is None:
        return None
    post = re.search(r"\.post(\d+)", version or "")
    want = (*v, *([0] * (3 - len(v))), int(post.group(1)) if post else 0)
    keys = [_sort_key(s) for s in shipped]
    same_release = [s for s, k in zip(shipped, keys, strict=True) if k[:3] == want[:3]]
    if same_release:
        exact = [s for s in same_release if _sort_key(s) == want]
        return exact[0] if exact else same_release[-1]
    below = [s for s, k in zip(shipped, keys, strict=True) if k < want]
    return below[-1] if below else shipped[0]


def table_for(host_version: str | None = None, declared: str | None = None) -> FlagTable:
    """The table that decides a flag check, its ``source`` naming the release and why.

    ``host_version``: what the host reports (the preflight). ``declared``: the profile's
    ``[server] version``. The host wins: it is what will parse the flags."""
    for origin, version in (("host", host_version), ("profile server.version", declared)):
        if not version:
            continue
        pick = nearest_shipped(version)
        if pick is None:
            continue
        if pick == version or _sort_key(pick) == _sort_key(version):
            return shipped_table(pick, f"sglang {pick}'s flags ({origin})")
        who = "the host has" if origin == "host" else "the profile declares"
        return shipped_table(pick, f"sglang {pick}'s flags ({who} {version}: the nearest shipped release)")
    newest = shipped_versions()[-1]
    return shipped_table(
        newest, f"sglang {newest}'s flags (the newest shipped: the server's version is unknown)", assumed=True
    )


def accepted_in(flag: str) -> list[str]:
    """The shipped releases whose parser has ``flag`` as an option string (exact), oldest first."""
    return [v for v in shipped_versions() if flag in flag_infos(v)]


def span(versions: list[str]) -> str:
    """``0.5.13–0.5.19`` for a run of releases (``0.5.17`` for one)."""
    if not versions:
        return ""
    return versions[0] if len(versions) == 1 else f"{versions[0]}–{versions[-1]}"


def iter_tables() -> Iterator[tuple[str, dict[str, FlagInfo]]]:
    for v in shipped_versions():
        yield v, flag_infos(v)
