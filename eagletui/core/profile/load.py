"""Loading a profile: TOML text → a validated :class:`~eagletui.core.profile.model.Profile`.

This is the strict half of profiles, kept apart from the data types so the types stay short to read:
every unknown key, wrong type and out-of-range number becomes a :class:`ProfileError` pointing at
``file:line:col`` (located with :mod:`eagletui.core.tomlpos`), so a typo costs a message, not a
ten-minute launch. Callers import these names from :mod:`eagletui.core.profile.model`, which re-exports them.
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

from eagletui.core.profile.model import (
    ENV_NAME_RE,
    BenchSettings,
    Profile,
    ProfileError,
    Toggle,
    Verdict,
    _fmt_num,
    normalize_flag,
)
from eagletui.core.profile.redact import resolve_flag
from eagletui.core.profile.slo import parse_slo
from eagletui.core.servers.kinds import SERVER_KINDS, ServerKind, kind_of_command, server_kind
from eagletui.core.servers.sglang_flagtable import SAME_DEST
from eagletui.core.tomlpos import decode_error_position, locate, locate_in_array
from eagletui.core.tomlpos import loads as toml_loads

_TOP_KEYS = {"name", "target", "server", "toggles", "toggle", "bench", "verdict", "sweep", "slurm", "slo", "tune"}
_TARGET_KEYS = {"host", "workdir", "python"}
_SERVER_KEYS = {
    "kind",
    "command",
    "port",
    "host",
    "runs_dir",
    "runs_dir_group",
    "log_dir",
    "args",
    "env",
    "ready_timeout_s",
    "version",
}
#: ``[server] version``: a release as pip spells it (``0.5.17``, ``0.5.13.post1``, ``0.5.24rc0``).
_VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)?(?:(?:\.post|\.dev|rc|a|b)\d+)*(?:\+[0-9A-Za-z.]+)?")
_TOGGLE_KEYS = {"env", "arg", "type", "choices", "min", "max", "step", "help"}
_BENCH_KEYS = set(BenchSettings.__dataclass_fields__)
_VERDICT_KEYS = set(Verdict.__dataclass_fields__)


def _locate(text: str, key: str, section: str | None = None) -> tuple[int | None, int | None]:
    return locate(text, key, section)


def load_profile(path: str | Path) -> Profile:
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError("no such profile file", p) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read profile: {exc}", p) from None
    return parse_profile(text, p)


def parse_profile(text: str, path: str | Path | None = None) -> Profile:
    try:
        data = toml_loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, col, msg = decode_error_position(exc, text)
        raise ProfileError(f"invalid TOML: {msg}", path, line, col) from None
    return profile_from_dict(data, text, path)


def _check_keys(
    data: dict[str, Any], allowed: set[str], where: str, text: str, path: Any, section: str | None
):
    for key in data:
        if key not in allowed:
            line, col = _locate(text, key, section)
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            hint += f" (allowed: {', '.join(sorted(allowed))})"
            raise ProfileError(f"unknown key {key!r} in {where}{hint}", path, line, col)


def _expect(value: Any, types: Any, key: str, text: str, path: Any, section: str | None) -> Any:
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        line, col = _locate(text, key.split(".")[-1], section)
        names = types.__name__ if isinstance(types, type) else " or ".join(t.__name__ for t in types)
        raise ProfileError(f"{key} must be {names}, got {type(value).__name__}", path, line, col)
    return value


#: Sane ranges (low, high, low exclusive?) for every numeric setting: NaN, infinities, negative
#: timeouts and absurd counts are refused at load instead of hanging or exploding mid-session.
_DAY = 86400.0
_RANGES: dict[str, tuple[float, float, bool]] = {
    "server.port": (1, 65535, False),
    "server.ready_timeout_s": (0, _DAY, True),
    "bench.num_prompts": (1, 100_000, False),
    "bench.concurrency": (1, 10_000, False),
    "bench.max_new_tokens": (1, 1_048_576, False),
    "bench.temperature": (0, 2, False),
    "bench.seed": (0, 2**32 - 1, False),
    "bench.warmup": (0, 10_000, False),
    "bench.repeats": (1, 1_000, False),
    "bench.input_len": (1, 2_097_152, False),
    "bench.request_rate": (0, 1e6, False),
    "bench.timeout_s": (0, _DAY, True),
    "verdict.min_accept_len": (0, 64, False),
    "verdict.min_speedup": (0, 1_000, True),
    "verdict.min_spec_speedup": (0, 1_000, True),
    "verdict.min_tok_s": (0, 1e9, False),
    "verdict.max_ttft_ms": (0, _DAY * 1000, True),
}


def _in_range(value: Any, key: str, text: str, path: Any, section: str | None) -> Any:
    """``value`` if it is finite and inside ``_RANGES[key]``, else a located ProfileError."""
    where = _locate(text, key.split(".")[-1], section)
    if isinstance(value, float) and not math.isfinite(value):
        raise ProfileError(f"{key} must be a finite number, got {value}", path, *where)
    lo, hi, lo_open = _RANGES[key]
    if value < lo or value > hi or (lo_open and value == lo):
        low = f"greater than {_fmt_num(lo)}" if lo_open else f"at least {_fmt_num(lo)}"
        raise ProfileError(f"{key} must be {low} and at most {_fmt_num(hi)}, got {value}", path, *where)
    return value


def _same_option(flag: str) -> str:
    """The option argparse sets for ``flag``: ``--tp`` (a unique prefix) and ``--tensor-parallel-size``
    both set ``--tp-size``."""
    full = resolve_flag(flag)
    return SAME_DEST.get(full, full)


def profile_from_dict(data: dict[str, Any], text: str = "", path: str | Path | None = None) -> Profile:
    _check_keys(data, _TOP_KEYS, "the profile", text, path, None)
    prof = Profile(path=str(path) if path else None)
    name = _expect(data.get("name", ""), str, "name", text, path, None)
    prof.name = name or (Path(path).stem if path else "profile")

    _read_target(data, prof, text, path)
    _read_server(data, prof, text, path)
    _read_toggles(data, prof, text, path)
    _read_bench(data, prof, text, path)
    _read_verdict(data, prof, text, path)
    if "slurm" in data:
        from eagletui.core.profile.slurm import parse_slurm

        prof.slurm = parse_slurm(data["slurm"], text, path)
    if "slo" in data:
        prof.slo = parse_slo(data["slo"], text, path)
    if "sweep" in data:  # late import: core.sweep stages values through core.staged, which imports us
        from eagletui.core.profile.sweep import parse_sweep

        prof.sweep = parse_sweep(data["sweep"], prof, text, path)
    if "tune" in data:
        from eagletui.core.profile.tune import parse_tune

        prof.tune = parse_tune(data["tune"], prof, text, path)
    return prof


def _read_target(data: dict[str, Any], prof: Profile, text: str, path: str | Path | None) -> None:
    """``[target]`` (or ``target = "host"``): the host, its work directory and python."""
    target = data.get("target", {})
    if isinstance(target, str):
        target = {"host": target}
    _expect(target, dict, "target", text, path, None)
    _check_keys(target, _TARGET_KEYS, "[target]", text, path, "target")
    prof.target = str(_expect(target.get("host", "local"), str, "target.host", text, path, "target"))
    prof.workdir = str(_expect(target.get("workdir", "~"), str, "target.workdir", text, path, "target"))
    prof.python = str(_expect(target.get("python", "python3"), str, "target.python", text, path, "target"))
    if prof.python == "{sys_python}":
        # Shipped example profiles mean "the interpreter eagletui itself runs under".
        prof.python = sys.executable


def _read_server(data: dict[str, Any], prof: Profile, text: str, path: str | Path | None) -> None:
    """``[server]``: which server and its command, port, host, runs directory, ready timeout and
    version, then its ``args`` and ``env``."""
    server = _expect(data.get("server", {}), dict, "server", text, path, None)
    _check_keys(server, _SERVER_KEYS, "[server]", text, path, "server")
    kind = _server_kind(server, prof, text, path)
    prof.server = kind.name
    port = _expect(server.get("port", kind.port), int, "server.port", text, path, "server")
    prof.port = _in_range(port, "server.port", text, path, "server")
    prof.host = str(_expect(server.get("host", "127.0.0.1"), str, "server.host", text, path, "server"))
    if "runs_dir" in server and "log_dir" in server:
        raise ProfileError(
            "give server.runs_dir or server.log_dir (its old name), not both",
            path,
            *_locate(text, "log_dir", "server"),
        )
    runs_key = "log_dir" if "log_dir" in server else "runs_dir"
    runs_dir = _expect(server.get(runs_key, prof.runs_dir), str, f"server.{runs_key}", text, path, "server")
    if not runs_dir.strip() or "\n" in runs_dir or "\x00" in runs_dir:
        raise ProfileError(
            f"server.{runs_key} must be a directory path", path, *_locate(text, runs_key, "server")
        )
    prof.runs_dir = runs_dir
    group = _expect(server.get("runs_dir_group", ""), str, "server.runs_dir_group", text, path, "server")
    if group and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", group):
        raise ProfileError(
            f"server.runs_dir_group must be a group name, got {group!r}",
            path,
            *_locate(text, "runs_dir_group", "server"),
        )
    prof.runs_dir_group = group
    timeout = _expect(
        server.get("ready_timeout_s", 3600.0), (int, float), "server.ready_timeout_s", text, path, "server"
    )
    prof.ready_timeout_s = float(_in_range(timeout, "server.ready_timeout_s", text, path, "server"))
    if "version" in server:
        version = _expect(server["version"], str, "server.version", text, path, "server").strip()
        if not _VERSION_RE.fullmatch(version):
            raise ProfileError(
                f'server.version must be a release such as "0.5.17", got {version[:40]!r}',
                path,
                *_locate(text, "version", "server"),
            )
        prof.server_version = version
    _read_args(server, prof, text, path)
    _read_env(server, prof, text, path)


def _server_kind(server: dict[str, Any], prof: Profile, text: str, path: str | Path | None) -> ServerKind:
    """``server.kind`` and ``server.command`` (into ``prof.command``): the kind named, else the one the
    command runs."""
    kind_name = _expect(server.get("kind", ""), str, "server.kind", text, path, "server")
    if kind_name:
        try:
            kind = server_kind(kind_name)
        except KeyError:
            known = ", ".join(k.name for k in SERVER_KINDS)
            line, col = _locate(text, "kind", "server")
            raise ProfileError(
                f"server.kind must be one of {known}, not {kind_name!r}", path, line, col
            ) from None
    else:
        kind = None
    cmd = server.get("command", " ".join((kind or server_kind()).command))
    if isinstance(cmd, str):
        try:
            prof.command = tuple(shlex.split(cmd))
        except ValueError as exc:
            line, col = _locate(text, "command", "server")
            raise ProfileError(f"server.command: {exc}", path, line, col) from None
    elif isinstance(cmd, list) and all(isinstance(c, str) for c in cmd):
        prof.command = tuple(cmd)
    else:
        line, col = _locate(text, "command", "server")
        raise ProfileError("server.command must be a string or a list of strings", path, line, col)
    if not prof.command:
        raise ProfileError("server.command is empty", path, *_locate(text, "command", "server"))
    # without server.kind the command says which server it runs (a custom command: the default)
    kind = kind or kind_of_command(prof.command) or server_kind()
    return kind


def _read_args(server: dict[str, Any], prof: Profile, text: str, path: str | Path | None) -> None:
    """``[server.args]``: each flag normalized, once (no two spellings of one option), plain values."""
    args = _expect(server.get("args", {}), dict, "server.args", text, path, "server")
    for key, value in args.items():
        try:
            flag = normalize_flag(key)
        except ProfileError as exc:
            raise ProfileError(exc.message, path, *_locate(text, key, "server.args")) from None
        if flag in ("--port", "--host"):
            line, col = _locate(text, key, "server.args")
            raise ProfileError(f"set {flag} in [server] (port/host), not in server.args", path, line, col)
        if not isinstance(value, str | int | float | bool | list):
            line, col = _locate(text, key, "server.args")
            raise ProfileError(
                f"server.args.{key}: unsupported value type {type(value).__name__}", path, line, col
            )
        if flag in prof.args:
            line, col = _locate(text, key, "server.args")
            raise ProfileError(
                f"server.args: {flag} is given twice ({key!r} is another spelling)", path, line, col
            )
        option = _same_option(flag)
        twin = next((f for f in prof.args if _same_option(f) == option), None)
        if twin is not None:
            line, col = _locate(text, key, "server.args")
            raise ProfileError(
                f"server.args: {key!r} and {twin[2:]!r} both set {option}: keep one", path, line, col
            )
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str | int | float | bool) for v in items):
            line, col = _locate(text, key, "server.args")
            raise ProfileError(f"server.args.{key}: list items must be plain values", path, line, col)
        if any(isinstance(v, float) and not math.isfinite(v) for v in items):
            line, col = _locate(text, key, "server.args")
            raise ProfileError(f"server.args.{key} must be a finite number, got {value}", path, line, col)
        if any(isinstance(v, str) and ("\n" in v or "\x00" in v) for v in items):
            raise ProfileError(
                f"server.args.{key}: value may not contain newlines", path, *_locate(text, key)
            )
        prof.args[flag] = value


def _read_env(server: dict[str, Any], prof: Profile, text: str, path: str | Path | None) -> None:
    """``[server.env]``: safe names, string values (a bool as 1/0)."""
    env = _expect(server.get("env", {}), dict, "server.env", text, path, "server")
    for key, value in env.items():
        if not ENV_NAME_RE.match(key):
            line, col = _locate(text, key, "server.env")
            raise ProfileError(f"unsafe environment variable name {key!r}", path, line, col)
        if isinstance(value, bool):
            value = "1" if value else "0"
        if not isinstance(value, str | int | float):
            line, col = _locate(text, key, "server.env")
            raise ProfileError(f"server.env.{key} must be a string", path, line, col)
        value = str(value)
        if "\n" in value or "\x00" in value:
            raise ProfileError(f"server.env.{key}: value may not contain newlines", path, *_locate(text, key))
        prof.env[key] = value


def _read_toggles(data: dict[str, Any], prof: Profile, text: str, path: str | Path | None) -> None:
    """``[[toggles]]`` (or ``[[toggle]]``): each checked, none twice."""
    if "toggles" in data and "toggle" in data:
        raise ProfileError("use [[toggles]] or [[toggle]], not both", path, *_locate(text, "toggle"))
    toggles_raw = data.get("toggles", data.get("toggle", []))
    _expect(toggles_raw, list, "toggles", text, path, None)
    toggles: list[Toggle] = []
    for index, raw in enumerate(toggles_raw):
        _expect(raw, dict, "toggles[]", text, path, None)
        _check_keys(raw, _TOGGLE_KEYS, "[[toggles]]", text, path, None)
        toggles.append(_toggle_from(raw, text, path, index))
    seen: set[str] = set()
    for t in toggles:
        if t.key in seen:
            raise ProfileError(f"duplicate toggle {t.name}", path, *_locate(text, t.name.lstrip("-")))
        seen.add(t.key)
    prof.toggles = tuple(toggles)


def _read_bench(data: dict[str, Any], prof: Profile, text: str, path: str | Path | None) -> None:
    """``[bench]``: typed, in range, a known runner, regexes that compile."""
    bench = _expect(data.get("bench", {}), dict, "bench", text, path, None)
    _check_keys(bench, _BENCH_KEYS, "[bench]", text, path, "bench")
    defaults = BenchSettings()
    bargs: dict[str, Any] = {}
    for key, value in bench.items():
        want = type(getattr(defaults, key))
        types: Any = (int, float) if want is float else want
        bargs[key] = want(_expect(value, types, f"bench.{key}", text, path, "bench"))
        if f"bench.{key}" in _RANGES:
            _in_range(value, f"bench.{key}", text, path, "bench")
    if bargs.get("runner", "builtin") not in ("builtin", "bench_serving", "command"):
        raise ProfileError(
            "bench.runner must be builtin, bench_serving or command", path, *_locate(text, "runner", "bench")
        )
    for key in ("tok_s_regex", "accept_len_regex"):
        if bargs.get(key):
            try:
                re.compile(bargs[key])
            except re.error as exc:
                raise ProfileError(
                    f"bench.{key}: bad regex: {exc}", path, *_locate(text, key, "bench")
                ) from None
    prof.bench = BenchSettings(**bargs)


def _read_verdict(data: dict[str, Any], prof: Profile, text: str, path: str | Path | None) -> None:
    """``[verdict]``: the thresholds, numbers in range."""
    verdict = _expect(data.get("verdict", {}), dict, "verdict", text, path, None)
    _check_keys(verdict, _VERDICT_KEYS, "[verdict]", text, path, "verdict")
    vargs = {
        k: float(
            _in_range(
                _expect(v, (int, float), f"verdict.{k}", text, path, "verdict"),
                f"verdict.{k}",
                text,
                path,
                "verdict",
            )
        )
        for k, v in verdict.items()
    }
    prof.verdict = Verdict(**vargs)


def _toggle_from(raw: dict[str, Any], text: str, path: Any, index: int = 0) -> Toggle:
    def _locate(_text: str, key: str) -> tuple[int | None, int | None]:
        return locate_in_array(_text, ("toggles", "toggle"), index, key)

    if ("env" in raw) == ("arg" in raw):
        raise ProfileError("each [[toggles]] entry needs exactly one of env = … or arg = …", path)
    if "env" in raw:
        name = str(raw["env"])
        if not ENV_NAME_RE.match(name):
            raise ProfileError(f"unsafe environment variable name {name!r}", path, *_locate(text, "env"))
        kind = "env"
    else:
        try:
            name = normalize_flag(str(raw["arg"]))
        except ProfileError as exc:
            raise ProfileError(exc.message, path, *_locate(text, "arg")) from None
        kind = "arg"
        if name in ("--port", "--host"):
            raise ProfileError(f"{name} cannot be a toggle: set it in [server]", path, *_locate(text, "arg"))
    raw_choices = raw.get("choices", [])
    if not isinstance(raw_choices, list) or not all(isinstance(c, str | int | float) for c in raw_choices):
        raise ProfileError(
            f"toggle {name}: choices must be a list of values", path, *_locate(text, "choices")
        )
    for key in ("min", "max", "step"):
        if key in raw and (isinstance(raw[key], bool) or not isinstance(raw[key], int | float)):
            raise ProfileError(f"toggle {name}: {key} must be a number", path, *_locate(text, key))
        if key in raw and not math.isfinite(raw[key]):
            raise ProfileError(
                f"toggle {name}: {key} must be finite, got {raw[key]}", path, *_locate(text, key)
            )
    if "min" in raw and "max" in raw and raw["min"] > raw["max"]:
        raise ProfileError(
            f"toggle {name}: min {raw['min']} is above max {raw['max']}", path, *_locate(text, "min")
        )
    if "step" in raw and raw["step"] <= 0:
        raise ProfileError(f"toggle {name}: step must be positive", path, *_locate(text, "step"))
    if "help" in raw and not isinstance(raw["help"], str):
        raise ProfileError(f"toggle {name}: help must be a string", path, *_locate(text, "help"))
    choices = tuple(str(c) for c in raw_choices)
    ttype = raw.get("type")
    if ttype is None:
        if choices:
            ttype = "choice"
        elif "min" in raw or "max" in raw:
            ttype = "float" if any(isinstance(raw.get(k), float) for k in ("min", "max", "step")) else "int"
        else:
            ttype = "bool"
    if ttype not in ("choice", "bool", "int", "float", "str"):
        raise ProfileError(f"toggle {name}: unknown type {ttype!r}", path, *_locate(text, "type"))
    if ttype == "choice" and not choices:
        raise ProfileError(
            f"toggle {name}: type choice needs choices = [...]", path, *_locate(text, name.lstrip("-"))
        )
    for c in choices:
        if "\n" in c or "\x00" in c:
            raise ProfileError(f"toggle {name}: choice {c!r} contains a newline", path)
    return Toggle(
        kind=kind,
        name=name,
        type=ttype,
        choices=choices,
        min=raw.get("min"),
        max=raw.get("max"),
        step=raw.get("step"),
        help=str(raw.get("help", "")),
    )
