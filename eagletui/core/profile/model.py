"""Profiles: the TOML file that says where the server runs, how it is launched and what may be tuned.

A profile is validated up front so a typo costs a clear ``file:line:col`` message, not a ten-minute
launch that dies on an unknown flag. Values end up in argv lists and an env dict; nothing here ever
builds a shell string (see :func:`eagletui.core.profile.model.shell_command` for the one quoted form).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagletui.core.profile.redact import Redactor, is_secret_env
from eagletui.core.profile.toggles import ARG, ENV, TOGGLE_KINDS, split_key
from eagletui.core.servers.kinds import ServerKind, kind_or_default

if TYPE_CHECKING:
    from eagletui.core.profile.slo import Slo

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
    one are never written anywhere in clear. See :mod:`eagletui.core.profile.redact`."""
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
        return TOGGLE_KINDS[self.kind].key(self.name)

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
    request_rate: float = 0.0  # requests/s (Poisson arrivals); 0 = as fast as the concurrency allows
    command: str = ""  # custom runner: a command line run on the host
    tok_s_regex: str = ""
    accept_len_regex: str = ""
    timeout_s: float = 1800.0


@dataclass(frozen=True)
class Verdict:
    """The profile's ``[verdict]`` thresholds (docs/economics.md: the rule and its noise band).

    ``min_speedup`` is tok/s **vs the baseline run**; ``min_spec_speedup`` is a spec run's tok/s **vs its
    no-spec reference** (the same launch without speculation), 1.0 when not set: speculation must pay."""

    min_accept_len: float | None = None
    min_speedup: float | None = None
    min_spec_speedup: float | None = None
    min_tok_s: float | None = None
    max_ttft_ms: float | None = None


@dataclass
class Profile:
    """A parsed profile. ``args`` maps ``--flag`` to a value: ``True`` = bare flag, ``False``/None = absent."""

    name: str = "profile"
    path: str | None = None
    #: the server program (:mod:`eagletui.core.servers.kinds`): its log format, flags and benchmark API
    server: str = "sglang"
    target: str = "local"
    workdir: str = "~"
    python: str = "python3"
    command: tuple[str, ...] = ("{python}", "-m", "sglang.launch_server")
    port: int = 30000
    host: str = "127.0.0.1"
    runs_dir: str = "~/.eagletui/runs"
    #: ``[server] runs_dir_group``: the group a shared runs dir may be writable by (a Slurm cluster's
    #: shared filesystem); without it a runs dir anyone else can write is refused
    runs_dir_group: str = ""
    ready_timeout_s: float = 3600.0
    #: ``[server] version``: the server release the profile is written for; decides the flag table when
    #: the host cannot say (``eagletui profile check``). None: not declared.
    server_version: str | None = None
    args: dict[str, ScalarValue | list[ScalarValue]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    toggles: tuple[Toggle, ...] = ()
    bench: BenchSettings = field(default_factory=BenchSettings)
    verdict: Verdict = field(default_factory=Verdict)
    sweep: Any = None  # a core.sweep.SweepSpec when the profile has a [sweep] table
    tune: Any = None  # a core.profile.tune.TuneSpec when the profile has a [tune] table
    #: a core.slurm_settings.SlurmSettings when the profile has a [slurm] table: the server runs as a
    #: Slurm job (see eagletui.remote.slurm), not as a detached process
    slurm: Any = None
    #: ``[slo]``: the latency bounds goodput and the frontier are judged by (None: the profile has none)
    slo: Slo | None = None

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

    @property
    def kind(self) -> ServerKind:
        """The server kind (a name this eagletui does not know reads as the default)."""
        return kind_or_default(self.server)

    def api_key(self) -> str | None:
        """The key clients must send (``Authorization: Bearer …``) to a server launched with ``--api-key``."""
        v = self.args.get("--api-key")
        return None if v is None or isinstance(v, bool) else str(v)

    def snapshot(self) -> dict[str, Any]:
        """Everything that defines a launch, with secrets redacted: what a run records and diffs.

        Only real secrets (``--api-key``, credential env names, token-shaped values) are hidden:
        ``--speculative-num-draft-tokens`` stays a number so diffs, history keys and relaunches work."""
        r = Redactor.for_profile(self)
        kind = self.kind
        snap: dict[str, Any] = {
            "target": self.target,
            "server": kind.name,
            "model": r.text(kind.model(self.args)),
            "tp": kind.tp(self.args),
            "command": r.argv(list(self.command)),
            "args": r.args({k: v for k, v in self.args.items() if v is not None and v is not False}),
            "env": r.env(self.env),
            "port": self.port,
            # thresholds travel with the launch so a replay judges runs as the live session did
            "verdict": {k: v for k, v in dataclasses.asdict(self.verdict).items() if v is not None},
        }
        if self.slo:
            # like the thresholds: a replay or an export judges goodput by the SLO of its launches
            snap["slo"] = self.slo.to_dict()
        goal = getattr(self.sweep, "objective", None)
        if goal is not None and goal.kind != "tok_s":
            # the ranking of the next launch follows it: a replay ranks as the live session did
            snap["objective"] = goal.to_json()
        if self.slurm is not None:
            # where the job ran and what it asked for; a reattach without the profile resubmits from it
            snap["slurm"] = self.slurm.to_dict()
        return snap

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
            kind, name = split_key(key)
            if kind is None:
                raise ProfileError(f"unknown toggle key {key!r}")
            if kind is ENV:
                validate_env_name(name)
            target: dict[str, Any] = new.env if kind is ENV else new.args  # type: ignore[assignment]
            if value is None or value is False:
                target.pop(name, None)
            else:
                target[name] = kind.stored(value)
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
    for kind in (ARG, ENV):
        a = old.get(kind.section, {}) or {}
        b = new.get(kind.section, {}) or {}
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                out[kind.key(key)] = [a.get(key), b.get(key)]
    for key in ("target", "command"):
        if old.get(key) != new.get(key) and key in old and key in new:
            out[key] = [old.get(key), new.get(key)]
    return out


def format_diff(diff: dict[str, list[Any]], limit: int | None = None) -> str:
    """Short one-line form for tables: ``NCCL_ALGO=Tree --speculative-num-steps 3→5 --enable-x on``."""
    parts: list[str] = []
    for key, (a, b) in diff.items():
        kind, name = split_key(key)
        sep = kind.sep if kind is not None else " "
        if b is None or b is False:
            parts.append(f"{name} {'off' if a is True else 'unset'}")
        elif a is None or a is False:
            parts.append(f"{name} on" if b is True else f"{name}{sep}{b}")
        else:
            parts.append(f"{name} {a}→{b}")
    if limit is not None and len(parts) > limit:
        parts = parts[:limit] + [f"+{len(parts) - limit} more"]
    return " ".join(parts)
