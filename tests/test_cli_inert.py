"""Issue 20 item 1: every text a command prints to a terminal is inert, as in the UI; a CSV gets its
control characters escaped. Run as a real process (``python -m eagletui``), bytes checked."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eagletui.core.events import (
    BenchmarkResult,
    BenchmarkStarted,
    LaunchStarted,
    ProcessExited,
    ServerFailed,
)
from eagletui.session.format import make_header, write_session

ROOT = Path(__file__).resolve().parents[1]
OSC_TITLE = "\x1b]0;PWNED\x07"
OSC_CLIP = "\x1b]52;c;cm0gLXJmIH4=\x07"
C1_CSI = "\x9b2J"
BIDI = "\u202e"
#: bytes no terminal text may carry raw: ESC, BEL, a one-byte CSI/OSC/ST, DEL, CR, RLO
RAW = (b"\x1b", b"\x07", b"\xc2\x9b", b"\xc2\x9d", b"\xc2\x9c", b"\x7f", b"\r", "\u202e".encode())


def _eagletui(*argv: str, tmp: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "EAGLETUI_CONFIG_DIR": str(tmp / "config"), "EAGLETUI_DATA_DIR": str(tmp / "data")}
    return subprocess.run(
        [sys.executable, "-m", "eagletui", *argv], capture_output=True, timeout=120, cwd=tmp, env=env
    )


def _raw(data: bytes) -> list[bytes]:
    return [b for b in RAW if b in data]


def _hostile_session(tmp: Path) -> Path:
    target = f"box{OSC_TITLE}"
    events = [
        LaunchStarted(
            launch=1,
            target=target,
            command=("python", "-m", "sglang.launch_server", f"--model-path=m{C1_CSI}"),
            config={"target": target, "model": f"m{OSC_CLIP}", "args": {"--tp": 8}, "env": {}},
        ),
        ServerFailed(
            kind="oom", message=f"CUDA out of memory{OSC_CLIP}{BIDI}\r", phase="load_target", launch=1
        ),
        ProcessExited(code=1, launch=1),
        BenchmarkStarted(bench=1, launch=1, runner="builtin"),
        BenchmarkResult(bench=1, launch=1, runner="builtin", error=f"HTTP 500: {OSC_TITLE}{C1_CSI}"),
    ]
    header = make_header(target, f"p{OSC_TITLE}")
    header.pop("keyframes", None)  # written whole, without the live recorder's seek points
    return write_session(tmp / "hostile.jsonl", header, events)


@pytest.mark.parametrize("fmt", ["md", "csv", "json"])
def test_export_prints_server_text_inert(tmp_path: Path, fmt: str) -> None:
    path = _hostile_session(tmp_path)
    proc = _eagletui("export", str(path), "--format", fmt, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not _raw(proc.stdout), (_raw(proc.stdout), proc.stdout[:400])
    assert not _raw(proc.stderr)
    text = proc.stdout.decode()
    assert "PWNED" in text  # shown, not dropped
    if fmt == "md":
        assert "␛]0;PWNED␇" in text and "\\x9b2J" in text
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        assert rows[0]["target"] == "box\\x1b]0;PWNED\\x07"
        assert rows[0]["failure"].endswith("cm0gLXJmIH4=\\x07\\u202e\\r")
    if fmt == "json":
        import json

        doc = json.loads(text)  # still JSON, and the text survives decoding
        assert doc["session"]["target"] == f"box{OSC_TITLE}"
        assert C1_CSI in doc["runs"][0]["command"][-1]


@pytest.mark.slow
def test_export_to_a_file_is_inert_too(tmp_path: Path) -> None:
    path = _hostile_session(tmp_path)
    for fmt in ("md", "csv"):
        out = tmp_path / f"r.{fmt}"
        proc = _eagletui("export", str(path), "--format", fmt, "-o", str(out), tmp=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert not _raw(out.read_bytes())


def test_profile_check_prints_the_name_inert(tmp_path: Path) -> None:
    prof = tmp_path / "p.toml"
    # TOML's \\u escapes carry ESC and BEL into the name
    prof.write_text('name = "x\\u001b]0;PWNED\\u0007"\n[server.args]\nmodel-path = "m"\n', encoding="utf-8")
    for argv in (("profile", "check", str(prof)), ("profile", "check", str(prof), "--json")):
        proc = _eagletui(*argv, tmp=tmp_path)
        assert not _raw(proc.stdout + proc.stderr), (proc.stdout, proc.stderr)
        assert b"PWNED" in proc.stdout + proc.stderr


def test_argparse_echo_and_unknown_command_are_inert(tmp_path: Path) -> None:
    for argv in ((f"dem{OSC_TITLE}",), ("export", "--format", f"x{OSC_TITLE}", "f")):
        proc = _eagletui(*argv, tmp=tmp_path)
        assert proc.returncode == 2
        assert not _raw(proc.stderr), proc.stderr
        assert b"PWNED" in proc.stderr


def test_sessions_list_is_inert(tmp_path: Path) -> None:
    sessions = tmp_path / "data" / "sessions"
    sessions.mkdir(parents=True)
    _hostile_session(sessions)
    proc = _eagletui("sessions", str(sessions), tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not _raw(proc.stdout), proc.stdout
    assert b"PWNED" in proc.stdout
