"""Issue 20 item 4: files that broke readers. One bad value is skipped with a notice naming the file,
the line and the field; the rest is read. Real files, the real commands (a process) and the real app."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eagletui.session.format import read_session
from tests.replay_apps import replay_app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "sessions" / "example-demo.jsonl"


def _eagletui(*argv: str, tmp: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EAGLETUI_CONFIG_DIR": str(tmp / "config"), "EAGLETUI_DATA_DIR": str(tmp / "data")}
    return subprocess.run(
        [sys.executable, "-m", "eagletui", *argv], capture_output=True, text=True, timeout=timeout, cwd=tmp, env=env
    )


def _example_with(tmp: Path, name: str, edit) -> tuple[Path, int]:
    """The example recording with one line changed by ``edit(lines) -> line number (1-based)``."""
    lines = EXAMPLE.read_text().splitlines()
    lineno = edit(lines)
    path = tmp / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, lineno


def _first(lines: list[str], kind: str) -> int:
    return next(i for i, line in enumerate(lines) if f'"type": "{kind}"' in line)


def _deep(lines: list[str]) -> int:
    lines.insert(5, "[" * 100_000 + "]" * 100_000)
    return 6


def _deep_field(lines: list[str]) -> int:
    i = _first(lines, "bench_result")
    d = json.loads(lines[i])
    d["stats"] = {"x": json.loads("[" * 200 + "]" * 200)}
    lines[i] = json.dumps(d)
    return i + 1


def _huge_wall(lines: list[str]) -> int:
    i = _first(lines, "launch_started")
    d = json.loads(lines[i])
    d["wall"] = 1e300
    lines[i] = json.dumps(d)
    return i + 1


def _huge_throughput(lines: list[str]) -> int:
    i = _first(lines, "bench_result")
    d = json.loads(lines[i])
    d["output_throughput"] = 1e308
    lines[i] = json.dumps(d)
    return i + 1


def _nan_accept(lines: list[str]) -> int:
    i = _first(lines, "bench_result")
    lines[i] = lines[i].replace('"accept_length": 3.2066805845511483', '"accept_length": NaN')
    assert "NaN" in lines[i]
    return i + 1


CASES = {
    "deep-line": (_deep, "nested too deep"),
    "deep-field": (_deep_field, "field 'stats' nests deeper than 32 levels"),
    "huge-wall": (_huge_wall, "field 'wall' is out of range: 1e+300"),
    "huge-throughput": (_huge_throughput, "field 'output_throughput' is out of range: 1e+308"),
    "nan-accept": (_nan_accept, "field 'accept_length' is out of range: nan"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_export_skips_the_bad_value_and_names_file_line_and_field(tmp_path: Path, case: str) -> None:
    edit, why = CASES[case]
    path, lineno = _example_with(tmp_path, case, edit)
    for fmt in ("md", "csv", "json"):
        proc = _eagletui("export", str(path), "--format", fmt, tmp=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert f"{path}: line {lineno}: " in proc.stderr and why in proc.stderr, proc.stderr
    # the rest is read: every launch of the example is still there
    doc = json.loads(_eagletui("export", str(path), "--format", "json", tmp=tmp_path).stdout)
    assert len(doc["runs"]) == 3


@pytest.mark.parametrize("case", list(CASES))
async def test_replay_folds_the_rest_and_draws_it(tmp_path: Path, case: str) -> None:
    edit, why = CASES[case]
    path, lineno = _example_with(tmp_path, case, edit)
    _header, events, warnings = read_session(path)
    assert any(w.startswith(f"line {lineno}: ") and why in w for w in warnings), warnings
    app = replay_app(events)
    async with app.run_test(size=(200, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        app.repaint_now()
        await pilot.pause()
        assert app.is_running and app.state.current == 3
        good = [r.output_throughput for r in app.state.bench_results]
        assert good and all(0 < x < 1e6 for x in good), good
        means = [run.metric("tok_s").mean for run in app.runbook.runs.values()]
        assert sum(m is not None and 0 < m < 1e6 for m in means) >= 2, means  # the runs table has numbers
