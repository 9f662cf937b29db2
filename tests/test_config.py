"""User preferences: defaults, overrides, and problems reported with file:line:col, never raised."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui import config as c

pytestmark = pytest.mark.usefixtures("isolated_dirs")  # tests/conftest.py


def _write(text: str) -> Path:
    p = c.config_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_env_overrides_locations(tmp_path: Path) -> None:
    assert c.config_path() == tmp_path / "cfg" / "config.toml"
    assert c.user_themes_dir() == tmp_path / "cfg" / "themes"
    cfg, problems = c.load_user_config()  # no file: defaults, no problems
    assert problems == []
    assert cfg.sessions_dir == str(tmp_path / "data" / "sessions")
    assert cfg.history_path == str(tmp_path / "data" / "history.jsonl")
    assert cfg.theme == "eagletui-dark" and cfg.record is True and cfg.scrollback == 100_000


def test_default_file_round_trips() -> None:
    p = c.write_default_config()
    cfg, problems = c.load_user_config(p)
    assert problems == []
    assert cfg == c.UserConfig()
    assert "# " in p.read_text()
    with pytest.raises(FileExistsError):
        c.write_default_config(p)
    c.write_default_config(p, overwrite=True)


def test_values_are_applied() -> None:
    _write(
        """
theme = "eagletui-light"
scrollback = 5000
record = false
sessions_dir = "~/my-sessions"

[keymap]
relaunch = "ctrl+r"
bench = "f5"

[notifications]
desktop_kind = "osc777"

[notifications.bench_done]
desktop = true
bell = true
"""
    )
    cfg, problems = c.load_user_config()
    assert problems == []
    assert cfg.theme == "eagletui-light" and cfg.scrollback == 5000 and cfg.record is False
    assert cfg.sessions_dir == str(Path("~/my-sessions").expanduser())
    assert cfg.keymap == {"relaunch": "ctrl+r", "bench": "f5"}
    assert cfg.notifications.desktop_kind == "osc777"
    assert cfg.notifications.bench_done == c.NotifyChannels(toast=True, bell=True, desktop=True)
    assert cfg.notifications.failed == c.NotifyConfig().failed


def test_problems_have_locations_and_defaults_are_kept() -> None:
    p = _write(
        """theme = 3
scrollback = 10
colour = "red"

[keymap]
relaunch = 5

[notifications]
desktop_kind = "osc52"
sound = true

[notifications.ready]
bell = "yes"
flash = true
"""
    )
    cfg, problems = c.load_user_config()
    assert cfg == c.UserConfig()
    expected = [
        f"{p}:1:1: theme must be",
        f"{p}:2:1: scrollback must be",
        f"{p}:3:1: unknown key 'colour'",
        f"{p}:6:1: keymap.relaunch",
        f"{p}:9:1: desktop_kind must be one of osc9, osc777",
        f"{p}:10:1: unknown key 'sound' in [notifications]",
        f"{p}:13:1: notifications.ready.bell must be true or false",
        f"{p}:14:1: unknown key 'flash' in [notifications.ready]",
    ]
    assert len(problems) == len(expected), problems
    for got, want in zip(problems, expected, strict=True):
        assert got.startswith(want), (got, want)


def test_bad_toml_is_one_problem() -> None:
    p = _write('theme = "x"\nrecord = \n')
    cfg, problems = c.load_user_config()
    assert cfg == c.UserConfig()
    assert len(problems) == 1 and problems[0].startswith(f"{p}:2:") and "invalid TOML" in problems[0]


def test_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    d = tmp_path / "cfg" / "config.toml"
    d.mkdir(parents=True)  # a directory where the file should be
    cfg, problems = c.load_user_config()
    assert cfg == c.UserConfig() and len(problems) == 1 and "cannot read" in problems[0]
