"""Issue 20 item 18: typos in subcommands get a "did you mean"; ``profile check`` reports every
problem (not the first) and warns when --model-path is missing. Real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _eagletui(*argv: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EAGLETUI_CONFIG_DIR": str(tmp / "config")}
    return subprocess.run(
        [sys.executable, "-m", "eagletui", *argv], capture_output=True, text=True, timeout=60, env=env
    )


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (("bench", "--proflie", "p.toml"), "unknown option --proflie (did you mean --profile?)"),
        (("sweep", "--profile", "p.toml", "--resme"), "unknown option --resme (did you mean --resume?)"),
        (("export", "--fromat", "md", "x"), "unknown option --fromat (did you mean --format?)"),
        (("connect", "local", "--no-lauch"), "unknown option --no-lauch (did you mean --no-launch?)"),
        (
            ("profile", "chek", "p.toml"),
            "invalid choice: 'chek' (choose from 'init', 'check'); did you mean 'check'?",
        ),
        (("profile", "check", "p.toml", "--jsn"), "unknown option --jsn (did you mean --json?)"),
    ],
)
def test_typos_get_a_did_you_mean(tmp_path: Path, argv: tuple[str, ...], want: str) -> None:
    proc = _eagletui(*argv, tmp=tmp_path)
    assert proc.returncode == 2
    assert want in proc.stderr, proc.stderr


BAD = """name = "bad"
colour = "x"

[server]
port = 99999

[server.args]
tp = 8

[server.env]
"A;B" = "1"

[[toggles]]
env = "NCCL_ALGO"
choices = ["Ring", "Tree"]

[[toggles]]
arg = "mem-fraction-static"
min = 0.9
max = 0.8

[bench]
concurrency = 0
"""


@pytest.mark.slow
def test_profile_check_reports_every_problem_with_its_place(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(BAD)
    proc = _eagletui("profile", "check", str(f), tmp=tmp_path)
    assert proc.returncode == 1
    for want in (
        f"{f}:2:1: unknown key 'colour'",
        f"{f}:5:1: server.port must be at least 1",
        f"{f}:11:2: unsafe environment variable name 'A;B'",
        f"{f}:19:1: toggle --mem-fraction-static: min 0.9 is above max 0.8",  # the second block
        f"{f}:23:1: bench.concurrency must be at least 1",
    ):
        assert want in proc.stderr, (want, proc.stderr)
    assert "warning" in proc.stdout and "no model-path" in proc.stdout
    doc = json.loads(_eagletui("profile", "check", str(f), "--json", tmp=tmp_path).stdout)
    assert not doc["ok"] and len(doc["errors"]) == 5
    assert any("no model-path" in w["message"] for w in doc["warnings"])


@pytest.mark.slow
def test_profile_check_warns_without_model_path_and_passes_otherwise(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text(
        'name = "p"\n[server]\ncommand = ["python3", "-m", "sglang.launch_server"]\n[server.args]\ntp = 8\n'
    )
    proc = _eagletui("profile", "check", str(f), tmp=tmp_path)
    assert proc.returncode == 0
    assert f"warning: {f}:4:1: server.args has no model-path" in proc.stdout, proc.stdout
    f.write_text(f.read_text() + 'model-path = "org/m"\n')
    proc = _eagletui("profile", "check", str(f), tmp=tmp_path)
    assert proc.returncode == 0 and "model-path" not in proc.stdout.split("argv")[0]
