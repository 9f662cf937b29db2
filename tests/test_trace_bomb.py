"""Issue 33 item 7: ``eagletui trace`` on a decompression bomb (2.1 MB of gzip holding 2 GiB of
whitespace) took 520 s of one core with no output, then exited 0 with "0 kernels". Real files,
the real command."""

from __future__ import annotations

import gzip
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagletui.commands import trace as trace_cmd
from eagletui.profiler import chrome

ROOT = Path(__file__).resolve().parent.parent


def _whitespace_trace(path: Path, mib: int, *, gz: bool) -> Path:
    opener = gzip.open if gz else open
    with opener(path, "wb") as f:  # type: ignore[operator]
        f.write(b'{"traceEvents": [')
        block = b" \n" * (1 << 19)
        for _ in range(mib):
            f.write(block)
        f.write(b"]}")
    return path


@pytest.mark.slow
def test_a_gzip_bomb_is_refused_quickly_and_exits_non_zero(tmp_path: Path) -> None:
    bomb = _whitespace_trace(tmp_path / "bomb.json.gz", 512, gz=True)
    assert bomb.stat().st_size < 1 << 20
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "eagletui", "trace", str(bomb)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    took = time.monotonic() - started
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "decompression bomb" in r.stderr and "0 kernels" not in r.stdout
    assert took < 30, took


@pytest.mark.slow
def test_a_trace_of_nothing_shows_progress_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain file of 48 MiB of whitespace (the old reader stepped over it a character at a time:
    about 25 s here): read in C, progress on stderr, and "nothing to summarise" with exit 2."""
    empty = _whitespace_trace(tmp_path / "empty.json", 48, gz=False)
    monkeypatch.setattr(chrome, "PROGRESS_EVERY", 16 << 20)
    started = time.monotonic()
    rc = trace_cmd.main([str(empty)])
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert rc == 2 and "no kernel events in this trace" in err, err
    assert "32 MiB read…" in err, err
    assert took < 10, took
