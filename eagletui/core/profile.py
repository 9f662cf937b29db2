"""Profiles: the TOML file that says where the server runs, how it is launched and what may be tuned.

A profile is validated up front so a typo costs a clear ``file:line:col`` message, not a ten-minute
launch that dies on an unknown flag. Values end up in argv lists and an env dict; nothing here ever
builds a shell string (see :func:`eagletui.core.profile.shell_command` for the one quoted form).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
import shlex
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagletui.core.redact import REDACTED as REDACTED
from eagletui.core.redact import Redactor, is_secret_env, is_switch, resolve_flag
from eagletui.core.redact import is_secret_flag as is_secret_flag
from eagletui.core.sglang_flagtable import SAME_DEST
from eagletui.core.tomlpos import decode_error_position, locate, locate_in_array

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FLAG_RE = re.compile(r"^--[a-z0-9][a-z0-9-]*$")
ScalarValue = str | int | float | bool


class ProfileError(ValueError):
    """A profile problem with a location a user can jump to."""

    def __init__(
        self, message: str, path: str | Path | None = None, line: int | None = None, col: int | None = None
    ):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.col = col
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or "<profile>"
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        return f"{where}: {self.message}"


def is_secret(name: str, value: str) -> bool:
    """Env entries whose name is a credential (``HF_TOKEN``, ``*_API_KEY``) or whose value is shaped like
    one are never written anywhere in clear. See :mod:`eagletui.core.redact`."""
    return is_secret_env(name, value)


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return Redactor().env(env)


def redact_argv(argv: list[str]) -> list[str]:
    """``--api-key X`` / ``--api-key=X`` → ``***`` for the real secret flags only: argv copies kept on
    disk or shown never leak keys, and never lose ``--speculative-num-draft-tokens 4``."""
    return Redactor().argv(argv)


def validate_env_name(name: str) -> None:
    if not ENV_NAME_RE.match(name):
        raise ProfileError(f"unsafe environment variable name {name!r}: use letters, digits and _ only")


def normalize_flag(name: str, *, strict: bool = True) -> str:
    """Accept ``tp``, ``--tp`` or ``tp_size`` style keys and return ``--tp``/``--tp-size``.

    ``strict=False`` is for names read back from logs and recordings: it never raises, it only spells
    (the one place flag spellings are normalised: profiles, runs, exports and the ETA history)."""
    if not strict:
        return "--" + str(name).strip().lstrip("-").replace("_", "-")
    flag = name.strip()
    if not flag.startswith("--"):
        flag = "--" + flag
    flag = flag.replace("_", "-")
    if not FLAG_RE.match(flag):
        raise ProfileError(f"invalid server flag {name!r}")
    return flag


@dataclass(frozen=True)
class Toggle:
    """One tunable: an env var or a server flag, with the values it may take.

    ``type`` is ``choice`` (``choices``; the empty string means unset), ``bool`` (flag present or
    absent, or env ``1``/unset), ``int``/``float`` (``min``/``max``/``step``) or ``str``.
    """

    kind: str  # "env" | "arg"
    name: str  # NCCL_ALGO or --speculative-num-steps
    type: str = "choice"
    choices: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    step: float | None = None
    help: str = ""

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"

    def validate(self, value: Any) -> Any:
        """Return the canonical value or raise ``ValueError`` with a reason fit for an inline message."""
        if value is None or value == "":
            return None
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            s = str(value).lower()
            if s in ("1", "true", "on", "yes"):
                return True
            if s in ("0", "false", "off", "no"):
                return False
            raise ValueError(f"{self.name}: expected on/off, got {value!r}")
        if self.type in ("int", "float"):
            try:
                num: float = int(value) if self.type == "int" else float(value)
            except (TypeError, ValueError):
                raise ValueError(f"{self.name}: expected a number, got {value!r}") from None
            if self.min is not None and num < self.min:
                raise ValueError(f"{self.name}: {num} is below the minimum {_fmt_num(self.min)}")
            if self.max is not None and num > self.max:
                raise ValueError(f"{self.name}: {num} is above the maximum {_fmt_num(self.max)}")
            return num
        text = str(value)
        if self.type == "choice" and self.choices and text not in self.choices:
            raise ValueError(f"{self.name}: {text!r} is not one of {', '.join(self.choices)}")
        if "\n" in text or "\x00" in text:
            raise ValueError(f"{self.name}: value may not contain newlines or NUL")
        return text

    def options(self) -> list[Any]:
        """The values cycled through by the UI (``None`` = unset / flag absent)."""
        if self.type == "bool":
            return [False, True]
        if self.type == "choice":
            return [None, *[c for c in self.choices if c != ""]]
        if self.type in ("int", "float") and self.min is not None and self.max is not None:
            step = self.step or 1
            out: list[Any] = []
            v = self.min
            while v <= self.max + 1e-9 and len(out) < 64:
                out.append(int(v) if self.type == "int" else round(v, 6))
                v += step
            return out
        return []


def _fmt_num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


@dataclass(frozen=True)
class BenchSettings:
    runner: str = "builtin"  # builtin | bench_serving | command
    prompts: str = "chat"  # chat | code | long | path to a JSONL file
    num_prompts: int = 16
    concurrency: int = 1
    max_new_tokens: int = 256
    temperature: float = 0.0
    ignore_eos: bool = True
    seed: int = 1
    warmup: int = 1
    repeats: int = 1
    input_len: int = 1024  # bench_serving random-ids
    command: str = ""  # custom runner: a command line run on the host
    tok_s_regex: str = ""
    accept_len_regex: str = ""
    timeout_s: float = 1800.0


@dataclass(frozen=True)
class Verdict:
    min_accept_len: float | None = None
    min_speedup: float | None = None
    min_tok_s: float | None = None
    max_ttft_ms: float | None = None


@dataclass
class Profile:
    """A parsed profile. ``args`` maps ``--flag`` to a value: ``True`` = bare flag, ``False``/None = absent."""

    name: str = "profile"
    path: str | None = None
    target: str = "local"
    workdir: str = "~"
    python: str = "python3"
    command: tuple[str, ...] = ("{python}", "-m", "sglang.launch_server")
    port: int = 30000
    host: str = "127.0.0.1"
    runs_dir: str = "~/.eagletui/runs"
    ready_timeout_s: float = 3600.0
    args: dict[str, ScalarValue | list[ScalarValue]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    toggles: tuple[Toggle, ...] = ()
    bench: BenchSettings = field(default_factory=BenchSettings)
    verdict: Verdict = field(default_factory=Verdict)
    sweep: Any = None  # a core.sweep.SweepSpec when the profile has a [sweep] table

    # ------------------------------------------------------------------ derived views

    def argv(self, args: dict[str, ScalarValue] | None = None) -> list[str]:
        """The server argv, ``{python}`` expanded. ``--port``/``--host`` come from the profile."""
        argv = [part.replace("{python}", self.python) for part in self.command]
        merged = dict(self.args if args is None else args)
        merged.setdefault("--host", self.host)
        merged.setdefault("--port", self.port)
        for flag, value in merged.items():
            if value is None or value is False:
                continue
            if value is True:
                argv.append(flag)
            elif isinstance(value, list | tuple):
                argv.append(flag)
                argv.extend(str(v) for v in value)
            else:
                argv.extend([flag, _fmt_value(value)])
        return argv

    def api_key(self) -> str | None:
        """The key clients must send (``Authorization: Bearer …``) to a server launched with ``--api-key``."""
        v = self.args.get("--api-key")
        return None if v is None or isinstance(v, bool) else str(v)

    def snapshot(self) -> dict[str, Any]:
        """Everything that defines a launch, with secrets redacted: what a run records and diffs.

        Only real secrets (``--api-key``, credential env names, token-shaped values) are hidden:
        ``--speculative-num-draft-tokens`` stays a number so diffs, history keys and relaunches work."""
        r = Redactor.for_profile(self)
        return {
            "target": self.target,
            "model": r.text(str(self.args.get("--model-path", ""))),
            "tp": self.args.get("--tp", self.args.get("--tp-size", 1)),
            "command": r.argv(list(self.command)),
            "args": r.args({k: v for k, v in self.args.items() if v is not None and v is not False}),
            "env": r.env(self.env),
            "port": self.port,
            # thresholds travel with the launch so a replay judges runs as the live session did
            "verdict": {k: v for k, v in dataclasses.asdict(self.verdict).items() if v is not None},
        }

    def toggle_value(self, toggle: Toggle) -> Any:
        if toggle.kind == "env":
            env_value: str | None = self.env.get(toggle.name)
            if toggle.type == "bool":
                return env_value not in (None, "", "0")
            if toggle.type in ("int", "float") and env_value is not None:
                try:
                    return toggle.validate(env_value)
                except ValueError:
                    return env_value
            return env_value
        v = self.args.get(toggle.name)
        if toggle.type == "bool":
            return bool(v)
        return None if v is False else v

    def with_values(self, values: dict[str, Any]) -> Profile:
        """A copy with toggle values (``env:NAME`` / ``arg:--flag`` → value; None = unset) applied."""
        new = copy.deepcopy(self)
        for key, value in values.items():
            kind, _, name = key.partition(":")
            if kind == "env":
                validate_env_name(name)
                if value is None or value is False:
                    new.env.pop(name, None)
                else:
                    new.env[name] = "1" if value is True else _fmt_value(value)
            elif kind == "arg":
                if value is None or value is False:
                    new.args.pop(name, None)
                else:
                    new.args[name] = value
            else:
                raise ProfileError(f"unknown toggle key {key!r}")
        return new

    def toggle(self, key: str) -> Toggle | None:
        return next((t for t in self.toggles if t.key == key), None)


def _fmt_value(value: Any) -> str:
    if isinstance(value, float):
        return repr(value) if not value.is_integer() else str(value)
    return str(value)


def config_diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[Any]]:
    """Diff two snapshots as ``{"arg:--flag": [old, new], "env:NAME": [old, new]}`` (None = absent)."""
    out: dict[str, list[Any]] = {}
    for section, prefix in (("args", "arg:"), ("env", "env:")):
        a = old.get(section, {}) or {}
        b = new.get(section, {}) or {}
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                out[prefix + key] = [a.get(key), b.get(key)]
    for key in ("target", "command"):
        if old.get(key) != new.get(key) and key in old and key in new:
            out[key] = [old.get(key), new.get(key)]
    return out


def format_diff(diff: dict[str, list[Any]], limit: int | None = None) -> str:
    """Short one-line form for tables: ``NCCL_ALGO=Tree --speculative-num-steps 3→5 --enable-x on``."""
    parts: list[str] = []
    for key, (a, b) in diff.items():
        kind, _, name = key.partition(":")
        sep = "=" if kind == "env" else " "
        if b is None or b is False:
            parts.append(f"{name} {'off' if a is True else 'unset'}")
        elif a is None or a is False:
            parts.append(f"{name} on" if b is True else f"{name}{sep}{b}")
        else:
            parts.append(f"{name} {a}→{b}")
    if limit is not None and len(parts) > limit:
        parts = parts[:limit] + [f"+{len(parts) - limit} more"]
    return " ".join(parts)


# ------------------------------------------------------------------------------------- loading

_TOP_KEYS = {"name", "target", "server", "toggles", "toggle", "bench", "verdict", "sweep"}
_TARGET_KEYS = {"host", "workdir", "python"}
_SERVER_KEYS = {"command", "port", "host", "runs_dir", "log_dir", "args", "env", "ready_timeout_s"}
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
        data = tomllib.loads(text)
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
    "bench.timeout_s": (0, _DAY, True),
    "verdict.min_accept_len": (0, 64, False),
    "verdict.min_speedup": (0, 1_000, True),
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

    server = _expect(data.get("server", {}), dict, "server", text, path, None)
    _check_keys(server, _SERVER_KEYS, "[server]", text, path, "server")
    cmd = server.get("command", "{python} -m sglang.launch_server")
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
    port = _expect(server.get("port", 30000), int, "server.port", text, path, "server")
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
    timeout = _expect(
        server.get("ready_timeout_s", 3600.0), (int, float), "server.ready_timeout_s", text, path, "server"
    )
    prof.ready_timeout_s = float(_in_range(timeout, "server.ready_timeout_s", text, path, "server"))

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
    if "sweep" in data:  # late import: core.sweep stages values through core.staged, which imports us
        from eagletui.core.sweep import parse_sweep

        prof.sweep = parse_sweep(data["sweep"], prof, text, path)
    return prof


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


# --------------------------------------------------------------------------- pasted launch commands

_PY_RE = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)?)?$")
_NUM_INT_RE = re.compile(r"^[+-]?\d+$")
_NUM_FLOAT_RE = re.compile(r"^[+-]?(?:\d+\.\d*|\.\d+|\d+(?:\.\d*)?[eE][+-]?\d+)$")


@dataclass
class LaunchCommand:
    """A pasted ``[ENV=V …] python -m sglang.launch_server --flag v …`` split into profile parts."""

    command: list[str]
    python: str = "python3"
    args: dict[str, ScalarValue | list[ScalarValue]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    port: int | None = None
    host: str | None = None
    warnings: list[str] = field(default_factory=list)


def _scalar(text: str) -> ScalarValue:
    """Numbers become TOML numbers so toggles can step them; everything else stays a verbatim string."""
    if _NUM_INT_RE.match(text) and not (len(text.lstrip("+-")) > 1 and text.lstrip("+-").startswith("0")):
        return int(text)
    if _NUM_FLOAT_RE.match(text):
        return float(text)
    return text


def parse_launch_command(text: str) -> LaunchCommand:
    """Split a shell-style launch command into argv parts without ever running a shell.

    Accepts env prefixes (``NCCL_ALGO=Tree python -m …``, ``env A=B …``), backslash line continuations,
    ``python[3[.x]] -m module``, ``sglang serve`` and ``--flag=value``/``--flag v1 v2``/bare ``--flag``.
    """
    cleaned = re.sub(r"\\\r?\n", " ", text.strip())
    cleaned = re.sub(r"^\s*\$\s+", "", cleaned)
    try:
        tokens = [t for t in shlex.split(cleaned, comments=False) if t.strip()]
    except ValueError as exc:
        raise ProfileError(f"cannot split the launch command: {exc}") from None
    env: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "env" and i == 0:
            i += 1
            continue
        name, eq, value = tok.partition("=")
        if eq and not tok.startswith("-") and "/" not in name:
            validate_env_name(name)
            if "\n" in value or "\x00" in value:
                raise ProfileError(f"environment value of {name} contains a newline")
            env[name] = value
            i += 1
            continue
        break
    rest = tokens[i:]
    if not rest:
        raise ProfileError("the launch command is empty")
    python = "python3"
    if _PY_RE.match(rest[0]) and len(rest) >= 3 and rest[1] == "-m":
        python = rest[0]
        command = ["{python}", "-m", rest[2]]
        rest = rest[3:]
    elif rest[0].endswith("sglang") and len(rest) >= 2 and rest[1] == "serve":
        command = rest[:2]
        rest = rest[2:]
    else:
        n = next((k for k, t in enumerate(rest) if t.startswith("--")), len(rest))
        command = rest[:n]
        rest = rest[n:]
    if not command:
        raise ProfileError("the launch command has no program before its flags")
    out = LaunchCommand(command=command, python=python, env=env)
    k = 0
    while k < len(rest):
        tok = rest[k]
        if not tok.startswith("--"):
            if "--model-path" not in out.args:
                out.args["--model-path"] = tok  # `sglang serve MODEL` style positional
            else:
                out.warnings.append(f"ignored stray argument {tok!r}")
            k += 1
            continue
        flag, eq, inline = tok.partition("=")
        flag = normalize_flag(flag)
        values: list[str] = []
        if eq:
            values = [inline]
            k += 1
        else:
            k += 1
            # A switch (nargs 0 in SGLang's table) takes no value: in ``sglang serve --trust-remote-code
            # MODEL`` the model is the positional, not the switch's value.
            while k < len(rest) and not rest[k].startswith("--") and not is_switch(flag):
                values.append(rest[k])
                k += 1
        for v in values:
            if "\n" in v or "\x00" in v:
                raise ProfileError(f"value of {flag} contains a newline")
        if flag == "--port" and len(values) == 1 and _NUM_INT_RE.match(values[0]):
            out.port = int(values[0])
            continue
        if flag == "--host" and len(values) == 1:
            out.host = values[0]
            continue
        if not values:
            out.args[flag] = True
        elif len(values) == 1:
            out.args[flag] = _scalar(values[0])
        else:
            out.args[flag] = [_scalar(v) for v in values]
    return out


def default_toggles(args: dict[str, Any], env: dict[str, str]) -> list[dict[str, Any]]:
    """Sensible starting tunables for an EAGLE tp=N server, seeded with the command's own values."""

    def choices(current: Any, base: list[str]) -> list[str]:
        return base if current is None or str(current) in base else [str(current), *base]

    out: list[dict[str, Any]] = [
        {
            "env": "NCCL_ALGO",
            "choices": choices(env.get("NCCL_ALGO"), ["Ring", "Tree", "NVLS"]),
            "help": "NCCL collective algorithm",
        },
        {
            "env": "NCCL_PROTO",
            "choices": choices(env.get("NCCL_PROTO"), ["LL", "LL128", "Simple"]),
            "help": "NCCL protocol",
        },
        {"env": "NCCL_MIN_NCHANNELS", "type": "int", "min": 1, "max": 32, "step": 1},
    ]
    algo = args.get("--speculative-algorithm")
    if algo:
        out.append(
            {
                "arg": "speculative-algorithm",
                "choices": [str(algo)],
                "help": "unset = no speculative decoding (the baseline)",
            }
        )
        draft = args.get("--speculative-draft-model-path")
        if isinstance(draft, str):
            out.append(
                {"arg": "speculative-draft-model-path", "choices": [draft], "help": "drafter to evaluate"}
            )
        out.append({"arg": "speculative-num-steps", "type": "int", "min": 1, "max": 8})
        out.append({"arg": "speculative-eagle-topk", "type": "int", "min": 1, "max": 8})
        out.append({"arg": "speculative-num-draft-tokens", "type": "int", "min": 2, "max": 16})
    graph = "cuda-graph-max-bs" if "--cuda-graph-max-bs" in args else "cuda-graph-max-bs-decode"
    out.append({"arg": graph, "type": "int", "min": 8, "max": 256, "step": 8})
    out.append({"arg": "mem-fraction-static", "type": "float", "min": 0.5, "max": 0.95, "step": 0.05})
    if "--enable-flashinfer-allreduce-fusion" in args:
        out.append(
            {
                "arg": "enable-flashinfer-allreduce-fusion",
                "type": "bool",
                "help": "FlashInfer all-reduce + RMSNorm fusion",
            }
        )
    else:
        out.append(
            {
                "arg": "flashinfer-allreduce-fusion-backend",
                "choices": ["auto", "trtllm", "mnnvl", "cutedsl"],
                "help": "FlashInfer all-reduce fusion backend (0.5.20+)",
            }
        )
    return out
