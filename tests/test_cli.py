"""The ``eagletui`` dispatcher: help, version, and a mistyped command answered with its closest name."""

from __future__ import annotations

import pytest

from eagletui.cli import main


def test_mistyped_command_suggests_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conect", "local"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'conect' (did you mean 'connect'?)" in err
    assert main(["zzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("demo", "connect", "replay", "parse", "bench", "preflight", "profile", "trace"):
        assert f"  {name}" in out
