"""Shipped themes load and work in a real App; broken theme files cost one problem each, never a crash."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.color import Color
from textual.widgets import Static

from eagletui.ui import themes as th

pytestmark = pytest.mark.usefixtures("isolated_dirs")  # tests/conftest.py


SHIPPED = {"eagletui-dark", "eagletui-light", "eagletui-high-contrast"}


class ThemedApp(App[None]):
    CSS = """
    #phase { color: $phase-done; background: $background; }
    #chart { color: $chart-toks; }
    """

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(th.APP_VARIABLE_DEFAULTS)

    def compose(self) -> ComposeResult:
        yield Static("done", id="phase")
        yield Static("chart", id="chart")


def test_shipped_themes_load_cleanly() -> None:
    themes, problems = th.load_themes()
    assert problems == []
    by_name = {t.name: t for t in themes}
    assert SHIPPED <= set(by_name)
    for t in themes:
        assert set(th.APP_VARIABLE_DEFAULTS) <= set(t.variables), t.name
    hc = by_name["eagletui-high-contrast"]
    assert (hc.background, hc.foreground) == ("#000000", "#FFFFFF")
    assert Color.parse(hc.primary) == Color.parse("yellow") or hc.primary.upper() == "#FFFF00"
    assert by_name["eagletui-light"].dark is False


def test_packaged_copy_matches_repo_themes() -> None:
    """The wheel ships ``eagletui/ui/themes_builtin``; it must not drift from ``themes/``."""
    repo = sorted(p.name for p in th.REPO_THEMES_DIR.glob("*.toml"))
    assert repo and repo == sorted(p.name for p in th.PACKAGED_THEMES_DIR.glob("*.toml"))
    _, mismatch, errors = filecmp.cmpfiles(th.REPO_THEMES_DIR, th.PACKAGED_THEMES_DIR, repo, shallow=False)
    assert mismatch == [] and errors == []


async def test_register_and_switch_in_app() -> None:
    app = ThemedApp()
    async with app.run_test() as pilot:
        assert th.register_themes(app) == []
        for name in ("eagletui-dark", "eagletui-light", "eagletui-high-contrast", "textual-dark"):
            app.theme = name
            await pilot.pause()
            theme = app.get_theme(name)
            assert theme is not None
            expected = theme.variables.get("phase-done", th.APP_VARIABLE_DEFAULTS["phase-done"])
            assert th.theme_var_colour(app, "phase-done") == expected
            phase = app.query_one("#phase", Static)
            assert phase.styles.color == Color.parse(expected)
            r, g, b = th.to_plotext_color(th.theme_var_colour(app, "chart-toks"))
            assert phase.styles.color is not None and all(0 <= x <= 255 for x in (r, g, b))
        app.theme = "eagletui-high-contrast"
        await pilot.pause()
        assert app.query_one("#phase", Static).styles.color == Color.parse("#00FF00")


def _write(d: Path, name: str, text: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(text)
    return p


GOOD = 'name = "mine"\nprimary = "#123456"\n[variables]\nchart-toks = "red"\nchart-accept = "$primary"\n'


def test_user_and_extra_themes_and_broken_files(tmp_path: Path) -> None:
    user = th.user_themes_dir()
    _write(user, "mine.toml", GOOD)
    # A user file named like a shipped theme replaces it.
    _write(user, "override.toml", 'name = "eagletui-dark"\nprimary = "#FF0000"\n')
    extra = tmp_path / "extra"
    broken = {
        "bad-toml.toml": 'name = "x"\nprimary = \n',
        "missing.toml": 'name = "x"\nbackground = "#000000"\n',
        "bad-colour.toml": 'name = "x"\nprimary = "#12345"\n',
        "bad-var.toml": 'name = "x"\nprimary = "red"\n[variables]\nphase-done = "not-a-colour"\n',
        "unknown-key.toml": 'name = "x"\nprimay = "red"\nprimary = "red"\n',
        "bad-dark.toml": 'name = "x"\nprimary = "red"\ndark = "yes"\n',
        "bad-name.toml": 'name = "two words"\nprimary = "red"\n',
        "binary.toml": "",
    }
    for name, text in broken.items():
        _write(extra, name, text)
    (extra / "binary.toml").write_bytes(b"\xff\xfe\x00garbage")
    _write(extra, "fine.toml", 'name = "extra-fine"\nprimary = "ansi_bright_blue"\n')

    themes, problems = th.load_themes([extra, tmp_path / "does-not-exist"])
    names = [t.name for t in themes]
    assert "mine" in names and "extra-fine" in names and "x" not in names
    assert next(t for t in themes if t.name == "eagletui-dark").primary == "#FF0000"
    assert len(problems) == len(broken), problems
    for name in broken:
        assert sum(str(extra / name) in p for p in problems) == 1, name
    text = "\n".join(problems)
    assert "invalid TOML" in text and "missing required field 'primary'" in text
    assert "invalid colour '#12345'" in text and "variables.phase-done" in text
    assert "unknown key 'primay'" in text and "dark must be true or false" in text


async def test_theme_var_colour_follows_references(tmp_path: Path) -> None:
    _write(th.user_themes_dir(), "mine.toml", GOOD)
    app = ThemedApp()
    async with app.run_test() as pilot:
        th.register_themes(app)
        app.theme = "mine"
        await pilot.pause()
        assert th.theme_var_colour(app, "chart-toks") == "red"
        assert th.to_plotext_color(th.theme_var_colour(app, "chart-accept")) == (0x12, 0x34, 0x56)
        assert th.theme_var_colour(app, "log-error") == th.APP_VARIABLE_DEFAULTS["log-error"]


@pytest.mark.parametrize(
    ("value", "rgb"),
    [
        ("#FF8000", (255, 128, 0)),
        ("red", (255, 0, 0)),
        ("rgb(1,2,3)", (1, 2, 3)),
        ("#00FF00 50%", (0, 255, 0)),
    ],
)
def test_to_plotext_color(value: str, rgb: tuple[int, int, int]) -> None:
    assert th.to_plotext_color(value) == rgb


def test_to_plotext_color_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        th.to_plotext_color("definitely not a colour")
