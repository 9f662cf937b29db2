"""User preferences: theme, key bindings, notifications, recording.

Loading never raises: a typo in a preferences file should cost a warning with ``file:line:col``, not
a TUI that refuses to start. Every bad or unknown entry is reported and the default is kept.
``EAGLETUI_CONFIG_DIR`` / ``EAGLETUI_DATA_DIR`` relocate everything (tests, portable installs).
"""

from __future__ import annotations

import contextlib
import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

from eagletui.core.private_files import private_dir, write_private
from eagletui.core.tomlpos import decode_error_position, locate
from eagletui.core.tomlpos import loads as toml_loads

APP_NAME = "eagletui"
DESKTOP_KINDS = ("osc9", "osc777")
NOTIFY_EVENTS = ("ready", "failed", "bench_done")
NOTIFY_CHANNELS = ("toast", "bell", "desktop")
SCROLLBACK_MIN, SCROLLBACK_MAX = 1_000, 10_000_000
_KEY_RE = re.compile(r"^[A-Za-z0-9_+\-]+(,[A-Za-z0-9_+\-]+)*$")


def config_dir() -> Path:
    env = os.environ.get("EAGLETUI_CONFIG_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    env = os.environ.get("EAGLETUI_DATA_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir(APP_NAME))


def config_path() -> Path:
    return config_dir() / "config.toml"


def user_themes_dir() -> Path:
    return config_dir() / "themes"


def default_sessions_dir() -> str:
    return str(data_dir() / "sessions")


def default_history_path() -> str:
    return str(data_dir() / "history.jsonl")


def private_app_dir(path: str | Path) -> Path:
    """Create ``path`` (a sessions dir, the config dir...) 0700, tightening eagletui's own data and
    config dirs on the way if an older version made them 0755."""
    return private_dir(path, tighten=(data_dir(), config_dir()))


@dataclass
class NotifyChannels:
    """Where one kind of notification goes. Desktop is off by default: unsupported terminals may
    show the OSC sequence as garbage."""

    toast: bool = True
    bell: bool = False
    desktop: bool = False


def _default_failed() -> NotifyChannels:
    return NotifyChannels(toast=True, bell=True, desktop=False)


@dataclass
class NotifyConfig:
    ready: NotifyChannels = field(default_factory=lambda: NotifyChannels(toast=True, bell=True))
    failed: NotifyChannels = field(default_factory=_default_failed)
    bench_done: NotifyChannels = field(default_factory=NotifyChannels)
    desktop_kind: str = "osc9"  # "osc9" (iTerm2, WezTerm, kitty...) or "osc777" (urxvt, foot, Ghostty...)


@dataclass
class UserConfig:
    theme: str = "eagletui-dark"
    keymap: dict[str, str] = field(default_factory=dict)
    notifications: NotifyConfig = field(default_factory=NotifyConfig)
    scrollback: int = 100_000
    sessions_dir: str = field(default_factory=default_sessions_dir)
    record: bool = True
    history_path: str = field(default_factory=default_history_path)
    #: where this config was read from (and where a chosen theme is saved); not a key of the file.
    #: None: built in code (tests, defaults), so nothing is ever written back.
    path: str | None = field(default=None, compare=False, metadata={"internal": True})


_TOP_KEYS = {f.name for f in fields(UserConfig) if not f.metadata.get("internal")}
_NOTIFY_KEYS = set(NOTIFY_EVENTS) | {"desktop_kind"}


def _locate(text: str, key: str, section: str | None = None) -> tuple[int, int]:
    line, col = locate(text, key, section)
    return (line or 1, col or 1)


class _Problems:
    def __init__(self, path: Path, text: str):
        self.path, self.text = path, text
        self.items: list[str] = []

    def add(self, message: str, key: str, section: str | None = None) -> None:
        line, col = _locate(self.text, key, section)
        self.items.append(f"{self.path}:{line}:{col}: {message}")


def _typename(v: Any) -> str:
    return {bool: "a boolean", int: "an integer", str: "a string", dict: "a table", float: "a number"}.get(
        type(v), type(v).__name__
    )


def load_user_config(path: str | Path | None = None) -> tuple[UserConfig, list[str]]:
    """Read the preferences file (default :func:`config_path`); a missing file is not a problem."""
    p = Path(path).expanduser() if path is not None else config_path()
    cfg = UserConfig(path=str(p))
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return cfg, []
    except (OSError, UnicodeDecodeError) as exc:
        return cfg, [f"{p}: cannot read: {getattr(exc, 'strerror', None) or exc}"]
    try:
        data = toml_loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, col, msg = decode_error_position(exc, text)
        return cfg, [f"{p}:{line}:{col}: invalid TOML: {msg}"]

    probs = _Problems(p, text)
    for key, value in data.items():
        if key not in _TOP_KEYS:
            probs.add(f"unknown key {key!r} (known: {', '.join(sorted(_TOP_KEYS))})", key)
        elif key == "theme":
            if isinstance(value, str) and value.strip():
                cfg.theme = value.strip()
            else:
                probs.add(f"theme must be a theme name, got {_typename(value)}", key)
        elif key in ("record",):
            if isinstance(value, bool):
                cfg.record = value
            else:
                probs.add(f"{key} must be true or false, got {_typename(value)}", key)
        elif key == "scrollback":
            if (
                isinstance(value, int)
                and not isinstance(value, bool)
                and SCROLLBACK_MIN <= value <= SCROLLBACK_MAX
            ):
                cfg.scrollback = value
            else:
                probs.add(
                    f"scrollback must be an integer from {SCROLLBACK_MIN} to {SCROLLBACK_MAX}, got {value!r}",
                    key,
                )
        elif key in ("sessions_dir", "history_path"):
            if isinstance(value, str) and value.strip():
                setattr(cfg, key, str(Path(value.strip()).expanduser()))
            else:
                probs.add(f"{key} must be a non-empty path string, got {_typename(value)}", key)
        elif key == "keymap":
            _load_keymap(value, cfg, probs)
        elif key == "notifications":
            _load_notifications(value, cfg, probs)
    return cfg, probs.items


def _load_keymap(value: Any, cfg: UserConfig, probs: _Problems) -> None:
    if not isinstance(value, dict):
        probs.add(f'keymap must be a table of binding = "key", got {_typename(value)}', "keymap")
        return
    for name, key in value.items():
        if not isinstance(key, str) or not _KEY_RE.match(key.replace(" ", "")):
            probs.add(f'keymap.{name}: expected a key such as "ctrl+r" or "f5", got {key!r}', name, "keymap")
            continue
        cfg.keymap[name] = key.replace(" ", "")


def _load_notifications(value: Any, cfg: UserConfig, probs: _Problems) -> None:
    if not isinstance(value, dict):
        probs.add(f"notifications must be a table, got {_typename(value)}", "notifications")
        return
    for name, sub in value.items():
        if name not in _NOTIFY_KEYS:
            probs.add(
                f"unknown key {name!r} in [notifications] (known: {', '.join(sorted(_NOTIFY_KEYS))})",
                name,
                "notifications",
            )
        elif name == "desktop_kind":
            if sub in DESKTOP_KINDS:
                cfg.notifications.desktop_kind = sub
            else:
                probs.add(
                    f"desktop_kind must be one of {', '.join(DESKTOP_KINDS)}, got {sub!r}",
                    name,
                    "notifications",
                )
        elif not isinstance(sub, dict):
            probs.add(f"notifications.{name} must be a table, got {_typename(sub)}", name, "notifications")
        else:
            channels: NotifyChannels = getattr(cfg.notifications, name)
            section = f"notifications.{name}"
            for ch, flag in sub.items():
                if ch not in NOTIFY_CHANNELS:
                    probs.add(
                        f"unknown key {ch!r} in [{section}] (known: {', '.join(NOTIFY_CHANNELS)})",
                        ch,
                        section,
                    )
                elif not isinstance(flag, bool):
                    probs.add(f"{section}.{ch} must be true or false, got {_typename(flag)}", ch, section)
                else:
                    setattr(channels, ch, flag)


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def default_config_text() -> str:
    d = UserConfig()
    n = d.notifications

    def channels(name: str, c: NotifyChannels) -> str:
        return f"[notifications.{name}]\ntoast = {str(c.toast).lower()}\nbell = {str(c.bell).lower()}\ndesktop = {str(c.desktop).lower()}\n"

    return f"""\
# eagletui preferences. Delete a line to get the default back.

# Theme name: a shipped theme (eagletui-dark, eagletui-light, eagletui-high-contrast), a Textual
# theme, or the name of a .toml file in {user_themes_dir()}.
theme = {_toml_str(d.theme)}

# Lines of server log kept in memory per launch.
scrollback = {d.scrollback}

# Record every session to a .jsonl file in sessions_dir (secrets are redacted before writing).
record = {str(d.record).lower()}
# sessions_dir = {_toml_str(d.sessions_dir)}

# Phase durations of past launches, used for ETA estimates.
# history_path = {_toml_str(d.history_path)}

[keymap]
# binding id = "key", e.g.
# relaunch = "ctrl+r"

[notifications]
# Desktop notifications are terminal escape sequences: "osc9" (iTerm2, WezTerm, kitty, Windows
# Terminal) or "osc777" (urxvt, foot, Ghostty, VTE terminals).
desktop_kind = {_toml_str(n.desktop_kind)}

# Server became ready.
{channels("ready", n.ready)}
# Server failed.
{channels("failed", n.failed)}
# Benchmark finished.
{channels("bench_done", n.bench_done)}"""


def write_default_config(path: str | Path | None = None, *, overwrite: bool = False) -> Path:
    """Write a commented default preferences file; refuses to clobber the user's own unless asked."""
    p = Path(path).expanduser() if path is not None else config_path()
    if p.exists() and not overwrite:
        raise FileExistsError(f"{p} already exists")
    private_app_dir(p.parent)
    return write_private(p, default_config_text())


class ConfigWriteError(Exception):
    """The preferences file could not be updated; the file is left as it was."""


_THEME_LINE = re.compile(r"^\s*theme\s*=.*$")


def save_theme(name: str, path: str | Path | None = None) -> Path:
    """Remember ``name`` as the theme in the preferences file: its top-level ``theme = …`` line is
    replaced (or added before the first table), every other line and comment kept. The file is
    written 0600 and atomically (a temporary file renamed over it), so a crash mid-write leaves the
    old file; a file that is not valid TOML is not touched (the user's own edits are never lost)."""
    p = Path(path).expanduser() if path is not None else config_path()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = default_config_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigWriteError(f"{p}: cannot read: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        toml_loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, col, msg = decode_error_position(exc, text)
        raise ConfigWriteError(f"{p}:{line}:{col}: invalid TOML ({msg}): theme not saved") from exc
    lines = text.splitlines(keepends=True)
    new_line = f"theme = {_toml_str(name)}\n"
    first_table = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("[")), len(lines))
    at = next((i for i in range(first_table) if _THEME_LINE.match(lines[i])), None)
    if at is not None:
        lines[at] = new_line
    else:
        lines.insert(first_table, new_line + ("\n" if first_table < len(lines) else ""))
    out = "".join(lines)
    if tomllib.loads(out).get("theme") != name:  # never write a file that would not say what we meant
        raise ConfigWriteError(f"{p}: could not place the theme line; theme not saved")
    private_app_dir(p.parent)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(out)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise ConfigWriteError(f"{p}: cannot write: {exc.strerror or exc}") from exc
    return p
