"""Build eagletui's per-version SGLang flag tables from the released wheels.

    python tools/flagtables/build.py                 # every release in wheels.txt
    python tools/flagtables/build.py 0.5.17 0.5.23   # only these
    python tools/flagtables/build.py --wheels DIR    # wheels already downloaded into DIR

For each release listed in ``tools/flagtables/wheels.txt`` (version, wheel file name, sha256), the wheel is
taken from ``--wheels DIR`` or fetched with ``pip download --no-deps sglang==VERSION`` into a cache, its
sha256 checked against the list, its ``sglang/`` package unpacked, and ``dump_parser.py`` run on it in an
isolated interpreter (``python -I -S``: the standard library, the unpacked wheel and the pinned real
dependencies of ``requirements.txt``, which the parser's own code cannot do without). The result is
written to ``eagletui/data/sglang-flags/sglang-VERSION.flags`` (format: the header of each file), and
``eagletui/core/servers/sglang_flagtable.py`` is regenerated from the newest release's table.

Nothing here runs at eagletui's run time and nothing is downloaded by the tests: the generated files are
committed. Needs network (PyPI) only when a wheel is not in ``--wheels``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT_DIR = REPO / "eagletui" / "data" / "sglang-flags"
FLAGTABLE_PY = REPO / "eagletui" / "core" / "servers" / "sglang_flagtable.py"
WHEELS_TXT = HERE / "wheels.txt"
REQUIREMENTS = HERE / "requirements.txt"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "eagletui-flagtables"

#: Help texts that open with "Deprecated" (the flag still parses, the server warns after parsing).
_HELP_DEPRECATED = re.compile(r"^\W*deprecated\b", re.IGNORECASE)
_HELP_USE = re.compile(r"\buse (--[\w-]+(?:=[^\s,;)]+)?)", re.IGNORECASE)

#: Flags whose value is a credential, by argparse dest (what SGLang itself treats as secret).
_SECRET_DESTS = ("api_key", "admin_api_key", "ssl_keyfile_password")


def read_wheel_list() -> list[tuple[str, str, str]]:
    rows = []
    for line in WHEELS_TXT.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            version, name, sha = line.split()
            rows.append((version, name, sha))
    return rows


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_wheel(version: str, name: str, want: str, wheels: Path | None) -> Path:
    for d in [wheels, CACHE / "wheels"]:
        if d is not None and (d / name).is_file():
            path = d / name
            break
    else:
        (CACHE / "wheels").mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                f"sglang=={version}",
                "-d",
                str(CACHE / "wheels"),
            ],
            check=True,
        )
        path = CACHE / "wheels" / name
        if not path.is_file():
            raise SystemExit(f"pip did not fetch {name} (a different wheel for this platform?)")
    got = sha256(path)
    if got != want:
        raise SystemExit(f"{path}: sha256 {got}, wheels.txt says {want}")
    return path


def deps_dir() -> Path:
    """The pinned real dependencies (requirements.txt), installed once into the cache."""
    reqs = REQUIREMENTS.read_text(encoding="utf-8")
    target = CACHE / ("deps-" + hashlib.sha256(reqs.encode()).hexdigest()[:12])
    if not (target / ".done").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--target",
                str(target),
                "-r",
                str(REQUIREMENTS),
            ],
            check=True,
        )
        (target / ".done").write_text("ok\n")
    return target


def dump(wheel: Path, deps: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="eagletui-flagtable-") as tmp:
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tmp, [n for n in z.namelist() if n.startswith("sglang/")])
        proc = subprocess.run(
            [sys.executable, "-I", "-S", str(HERE / "dump_parser.py"), tmp, str(deps)],
            capture_output=True,
            text=True,
            timeout=600,
            env={"PATH": os.environ.get("PATH", ""), "HOME": tmp},
        )
    if proc.returncode != 0:
        raise SystemExit(f"{wheel.name}: the parser dump failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


def table_lines(data: dict[str, Any]) -> list[str]:
    """One line per option string: the string, then tab-separated marks (see the file header)."""
    lines = []
    for o in data["options"]:
        flag = o["flag"]
        if not flag.startswith("--") and flag != "-h":
            continue
        if flag == "-h":
            continue
        marks = []
        if o["nargs"] == 0:
            marks.append("0")
        if o["dest_primary"] != flag and o["dest_primary"].startswith("--"):
            marks.append("=" + o["dest_primary"])
        new = o.get("new_flag")
        help_text = o.get("help", "")
        if o["action"].startswith("Deprecated") or _HELP_DEPRECATED.search(help_text):
            if not new:
                m = _HELP_USE.search(help_text)
                new = m.group(1) if m else ""
            marks.append("~" + (new or ""))
        if o["dest"] in _SECRET_DESTS:
            marks.append("secret")
        if o.get("choices"):
            marks.append(json.dumps(o["choices"], separators=(",", ":")))
        lines.append("\t".join([flag, *marks]))
    return lines


HEADER = """\
# sglang {version}: the server's command-line flags, as its own parser defines them.
# Source: ServerArgs.add_cli_args of {wheel} (sha256 {sha}).
# Generated by tools/flagtables/build.py; do not edit. Regenerate with: python tools/flagtables/build.py {version}
# allow_abbrev: {abbrev}
# Format: one option string per line in the parser's registration order, then tab-separated marks:
#   0        a switch (takes no value)
#   =FLAG    an alias: sets the same option (argparse dest) as FLAG
#   ~FLAG    deprecated: the server still takes it, warns, and means FLAG (~ alone: no replacement named)
#   secret   its value is a credential
#   [...]    a JSON list: the only values the parser accepts
"""


def write_table(version: str, wheel: str, sha: str, data: dict[str, Any]) -> Path:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"sglang-{version}.flags"
    head = HEADER.format(
        version=version, wheel=wheel, sha=sha, abbrev=str(bool(data["allow_abbrev"])).lower()
    )
    path.write_text(head + "\n".join(table_lines(data)) + "\n", encoding="utf-8")
    return path


def _set_literal(name: str, doc: str, items: list[str]) -> str:
    body = "".join(f"        {json.dumps(i)},\n" for i in sorted(items))
    return f"#: {doc}\n{name}: frozenset[str] = frozenset(\n    {{\n{body}    }}\n)\n"


def write_flagtable_py(version: str) -> None:
    FLAGTABLE_PY.write_text(render_flagtable_py(version), encoding="utf-8")


def render_flagtable_py(version: str) -> str:
    """``core/servers/sglang_flagtable.py``: the newest release's switches, secrets, aliases and option strings,
    as Python literals (redaction and profile loading need them at import time, without parsing)."""
    path = OUT_DIR / f"sglang-{version}.flags"
    rows = [
        ln.split("\t")
        for ln in path.read_text(encoding="utf-8").splitlines()
        if ln and not ln.startswith("#")
    ]
    flags = [r[0] for r in rows]
    switches = [r[0] for r in rows if "0" in r[1:] and r[0] != "--help"]
    secrets = [r[0] for r in rows if "secret" in r[1:]]
    same = [(r[0], m[1:]) for r in rows for m in r[1:] if m.startswith("=")]
    same_body = "".join(f"    {json.dumps(a)}: {json.dumps(b)},\n" for a, b in same)
    secret_items = ", ".join(json.dumps(s) for s in sorted(set(secrets) | {"--watermark-config"}))
    switch_block = _set_literal(
        "SWITCHES",
        "Every switch (store_true / BooleanOptionalAction, ``--no-…`` forms included): nargs 0.",
        switches,
    )
    flags_block = _set_literal(
        "ALL_FLAGS",
        "Every option string that starts with ``--``: argparse (allow_abbrev) accepts any unique prefix of\n"
        "#: one, so ``--api SECRET`` sets the API key; resolving prefixes needs the whole list.",
        flags,
    )
    text = f'''"""Facts from SGLang {version}'s real argument parser (``ServerArgs.add_cli_args``), kept as Python data.

Generated by tools/flagtables/build.py from eagletui/data/sglang-flags/sglang-{version}.flags (the newest
release's table in this repository); do not edit. Regenerate with: python tools/flagtables/build.py {version}

Two things need the real table rather than a guess from a flag's spelling: which flags are switches (nargs 0:
``--enable-metrics`` takes no value, so the word after it is NOT its value) and which flags hold a
credential (``--api-key`` does; ``--max-total-tokens`` or ``--tokenizer-path`` do not, whatever their
names contain). The per-release tables themselves are read by :mod:`eagletui.core.servers.flagtables`.
"""

from __future__ import annotations

#: The release these literals were generated from.
VERSION = "{version}"

#: Flags whose value is a credential (dest ``api_key``, ``admin_api_key``, ``ssl_keyfile_password``), plus
#: ``--watermark-config``, which SGLang itself redacts from its launch command (it carries the watermark
#: keys; ``sampling/watermarking/core.py``). Each takes exactly one value (nargs None). ``--ssl-keyfile``
#: is a path, not a secret.
SECRET_FLAGS: frozenset[str] = frozenset(
    {{{secret_items}}}
)

#: Server-args fields (dests, as in the ``server_args=ServerArgs(...)`` log line and /server_info) whose
#: value is secret: the secret flags' dests and the watermark fields SGLang hides from its own repr.
SECRET_DESTS: frozenset[str] = frozenset(
    {{
        "api_key",
        "admin_api_key",
        "ssl_keyfile_password",
        "watermark_config",
        "watermark_key",
        "watermark_key_b",
    }}
)

{switch_block}
{flags_block}
#: Spellings that set the same option (same argparse dest) → the primary spelling: a profile that gives
#: both ``tp-size`` and ``tensor-parallel-size`` (or ``--x`` and ``--no-x``) sets one thing twice.
SAME_DEST: dict[str, str] = {{
{same_body}}}
'''
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("versions", nargs="*", help="releases to (re)build (default: all of wheels.txt)")
    p.add_argument("--wheels", type=Path, default=None, help="a directory that already holds the wheels")
    ns = p.parse_args(argv)
    rows = read_wheel_list()
    known = {v for v, _, _ in rows}
    unknown = [v for v in ns.versions if v not in known]
    if unknown:
        print(
            f"not in {WHEELS_TXT.name}: {', '.join(unknown)} (add the wheel's name and sha256 there)",
            file=sys.stderr,
        )
        return 2
    deps = deps_dir()
    for version, name, sha in rows:
        if ns.versions and version not in ns.versions:
            continue
        data = dump(fetch_wheel(version, name, sha, ns.wheels), deps)
        out = write_table(version, name, sha, data)
        print(f"{version}: {len(data['options'])} option strings -> {out.relative_to(REPO)}")
    newest = rows[-1][0]
    if not ns.versions or newest in ns.versions:
        write_flagtable_py(newest)
        print(f"{FLAGTABLE_PY.relative_to(REPO)} regenerated from {newest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
