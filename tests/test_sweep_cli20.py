"""Issue 20 item 20: ``eagletui sweep`` as a person runs it. One line per variant and step (not ~20
phase lines), in order; Ctrl-C says how to resume and which server it leaves running; running a
finished sweep again shows its report instead of silently starting over. Real processes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagletui.commands.profile import example_text

pytestmark = pytest.mark.slow


def _setup(tmp: Path) -> tuple[Path, Path]:
    from eagletui.commands.demo import with_free_port

    prof = tmp / "s.toml"
    text = with_free_port(example_text("demo-sweep")).replace("~/.eagletui/runs", str(tmp / "runs"))
    text = text.replace('repeats = "adaptive" ', "repeats = 1 ")
    # the demo's benchmark is long enough to rank its variants; this test only needs each to run
    text = re.sub(r"num_prompts = \d+", "num_prompts = 4", text, count=1)
    text = re.sub(r"max_new_tokens = \d+", "max_new_tokens = 32", text, count=1)
    prof.write_text(text)
    return prof, tmp / "queues"


def _sweep(prof: Path, queues: Path, *extra: str, tmp: Path) -> list[str]:
    return [
        sys.executable, "-m", "eagletui", "sweep", "--profile", str(prof), "--queue-dir", str(queues),
        "--no-record", "--no-preflight", *extra,
    ]  # fmt: skip


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "EAGLETUI_CONFIG_DIR": str(tmp / "config"), "EAGLETUI_DATA_DIR": str(tmp / "data")}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sweep_progress_interrupt_resume_and_rerun(tmp_path: Path) -> None:
    try:
        _interrupt_resume_rerun(tmp_path)
    finally:  # a failure part-way must not leave the interrupted variant's server behind
        for run in (tmp_path / "runs").glob("*/pid"):
            pgid = json.loads(run.read_text()).get("pgid")
            with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
                os.killpg(int(pgid), signal.SIGTERM)


def _interrupt_resume_rerun(tmp_path: Path) -> None:
    prof, queues = _setup(tmp_path)
    proc = subprocess.Popen(
        _sweep(prof, queues, tmp=tmp_path),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=_env(tmp_path),
    )
    lines: list[str] = []
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("  ready after") and any(x.startswith("[2/4]") for x in lines):
            proc.send_signal(signal.SIGINT)  # Ctrl-C while variant 2's server runs
            break
    _, rest = proc.communicate(timeout=60)
    lines += rest.splitlines()
    text = "\n".join(lines)
    # one line per step: no phase lines, and variant 1 is whole before variant 2 starts
    assert not any(x.lstrip().startswith("phase ") for x in lines), text
    first = lines.index(next(x for x in lines if x.startswith("[1/4]")))
    second = lines.index(next(x for x in lines if x.startswith("[2/4]")))
    assert any(x.startswith("  ready after") for x in lines[first:second])
    assert any(x.startswith("  repeat 1/1") for x in lines[first:second])
    # the interrupt says how to go on and what is left running
    m = re.search(
        r"interrupted: the queue is saved; the server of the variant in flight \(run (\S+), pid (\d+)\)", text
    )
    assert m, text
    pid = int(m.group(2))
    assert _alive(pid)
    assert f"Resume with: eagletui sweep --profile {prof} --resume" in text
    # --resume follows that server and finishes
    done = subprocess.run(
        _sweep(prof, queues, "--resume", tmp=tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(tmp_path),
    )
    assert done.returncode in (0, 1, 3), done.stderr
    assert "following its running server" in done.stderr, done.stderr
    assert not any(x.lstrip().startswith("phase ") for x in done.stderr.splitlines())
    for _ in range(50):
        if not _alive(pid):
            break
        time.sleep(0.1)
    assert not _alive(pid)  # stopped at the end of the sweep
    # running the finished sweep again: its report, no launch
    again = subprocess.run(
        _sweep(prof, queues, tmp=tmp_path), capture_output=True, text=True, timeout=60, env=_env(tmp_path)
    )
    assert "finished" in again.stderr and "--restart runs it again" in again.stderr, again.stderr
    assert "launching" not in again.stderr
    assert again.stdout.startswith("sweep of ")
