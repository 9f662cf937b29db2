"""Themes as TOML files: the shipped ones, the user's own, and the app variables they colour.

Themes are data, not code, so users can copy one, change a few colours and drop it into their config
dir. A broken theme file must never stop the app: it is reported once (file and reason) and skipped.
Colours are validated with Textual's own parser so a theme that loads is a theme that renders.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

import eagletui
from eagletui.config import user_themes_dir
from eagletui.core.tomlpos import loads as toml_loads

COLOR_FIELDS: tuple[str, ...] = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "warning",
    "error",
    "success",
)
REQUIRED_FIELDS: tuple[str, ...] = ("name", "primary")
_FLOAT_FIELDS = ("luminosity_spread", "text_alpha")
_ALLOWED = {"name", "dark", "variables", *COLOR_FIELDS, *_FLOAT_FIELDS}

#: App-level variables every theme may set. Defaults match eagletui-dark so a Textual built-in
#: theme (which knows nothing of them) still renders phases and charts sensibly.
APP_VARIABLE_DEFAULTS: dict[str, str] = {
    "phase-done": "#4EBF71",
    "phase-active": "#00B4D8",
    "phase-pending": "#5C6370",
    "phase-failed": "#E5484D",
    "chart-toks": "#00B4D8",
    "chart-accept": "#C792EA",
    "chart-ttft": "#FFB454",
    "chart-baseline": "#7F848E",
    "log-error": "#FF6B6B",
    "log-warning": "#FFB454",
    "log-phase": "#7FDBCA",
    "log-decode": "#8B93A1",
}

REPO_THEMES_DIR = Path(eagletui.__file__).resolve().parent.parent / "themes"
PACKAGED_THEMES_DIR = Path(__file__).resolve().parent / "themes_builtin"


def builtin_themes_dir() -> Path:
    """The repo's ``themes/`` in a checkout; the packaged copy when installed from a wheel."""
    if REPO_THEMES_DIR.is_dir() and any(REPO_THEMES_DIR.glob("*.toml")):
        return REPO_THEMES_DIR
    return PACKAGED_THEMES_DIR


class ThemeFileError(ValueError):
    pass


def _colour(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ThemeFileError(f"{what} must be a colour string, got {type(value).__name__}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeFileError(f"{what}: invalid colour {value!r}") from None
    return value


def theme_from_dict(data: dict[str, Any]) -> Theme:
    unknown = sorted(set(data) - _ALLOWED)
    if unknown:
        raise ThemeFileError(f"unknown key {unknown[0]!r}")
    missing = [f for f in REQUIRED_FIELDS if f not in data]
    if missing:
        raise ThemeFileError(f"missing required field {missing[0]!r}")
    name = data["name"]
    if not isinstance(name, str) or not name.strip() or any(c.isspace() for c in name):
        raise ThemeFileError(f"name must be a non-empty string without spaces, got {name!r}")
    kwargs: dict[str, Any] = {"name": name}
    for f in COLOR_FIELDS:
        if f in data:
            kwargs[f] = _colour(data[f], f)
    if "dark" in data:
        if not isinstance(data["dark"], bool):
            raise ThemeFileError(f"dark must be true or false, got {data['dark']!r}")
        kwargs["dark"] = data["dark"]
    for f in _FLOAT_FIELDS:
        if f in data:
            v = data[f]
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
                raise ThemeFileError(f"{f} must be a number from 0 to 1, got {v!r}")
            kwargs[f] = float(v)
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ThemeFileError("[variables] must be a table")
    out_vars: dict[str, str] = {}
    for k, v in variables.items():
        if not isinstance(v, str):
            raise ThemeFileError(f"variables.{k} must be a string, got {type(v).__name__}")
        # Our own variables are colours; Textual's (e.g. "footer-key-foreground") may be any CSS value.
        out_vars[k] = (
            _colour(v, f"variables.{k}") if k in APP_VARIABLE_DEFAULTS and not v.startswith("$") else v
        )
    kwargs["variables"] = out_vars
    return Theme(**kwargs)


def load_theme_file(path: Path) -> Theme:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeFileError(f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = toml_loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ThemeFileError(f"invalid TOML: {exc}") from None
    return theme_from_dict(data)


def load_themes(extra_dirs: Iterable[Path] = ()) -> tuple[list[Theme], list[str]]:
    """Shipped themes, then the user's, then ``extra_dirs``; a later theme with the same name
    replaces an earlier one (so a user can restyle ``eagletui-dark`` in place). Never raises."""
    found: dict[str, Theme] = {}
    problems: list[str] = []
    for d in (builtin_themes_dir(), user_themes_dir(), *map(Path, extra_dirs)):
        try:
            files = sorted(d.expanduser().glob("*.toml"))
        except OSError as exc:
            problems.append(f"{d}: cannot list themes: {exc.strerror or exc}")
            continue
        for f in files:
            try:
                theme = load_theme_file(f)
            except ThemeFileError as exc:
                problems.append(f"{f}: {exc}")
                continue
            except Exception as exc:  # a theme file must never take the app down
                problems.append(f"{f}: {type(exc).__name__}: {exc}")
                continue
            found[theme.name] = theme
    return list(found.values()), problems


def register_themes(app: Any, extra_dirs: Iterable[Path] = ()) -> list[str]:
    """Load and register every theme with ``app``; returns the problems for the UI to show."""
    themes, problems = load_themes(extra_dirs)
    for t in themes:
        app.register_theme(t)
    return problems


def theme_var_colour(app: Any, name: str) -> str:
    """The current theme's value of an app variable (``chart-toks``...), following ``$other``
    references, falling back to the default, then to the theme foreground."""
    variables: dict[str, str] = dict(app.get_css_variables())
    value = variables.get(name, APP_VARIABLE_DEFAULTS.get(name))
    for _ in range(8):  # bounded: a theme may reference itself in a loop
        if not (isinstance(value, str) and value.startswith("$")):
            break
        value = variables.get(value[1:], APP_VARIABLE_DEFAULTS.get(value[1:]))
    if not isinstance(value, str) or value.startswith("$"):
        value = variables.get("foreground", "#e0e0e0")
    return value


def to_plotext_color(value: str) -> tuple[int, int, int]:
    """plotext wants RGB tuples; CSS values may carry an alpha or a trailing modifier ("red 50%").
    Raises ``ValueError`` for something that is no colour at all."""
    words = value.split()
    for candidate in (value, words[0] if words else value):
        try:
            c = Color.parse(candidate)
        except ColorParseError:
            continue
        return (c.r, c.g, c.b)
    raise ValueError(f"not a colour: {value!r}")
