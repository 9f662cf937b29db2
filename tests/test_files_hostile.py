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
        [sys.executable, "-m", "eagletui", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp,
        env=env,
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


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_export_skips_the_bad_value_and_names_file_line_and_field(tmp_path: Path, case: str) -> None:
    edit, why = CASES[case]
    path, lineno = _example_with(tmp_path, case, edit)
    for fmt in ("md", "csv", "json"):
        proc = _eagletui("export", str(path), "--format", fmt, tmp=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert f"{path}: line {lineno}: " in proc.stderr and why in proc.stderr, proc.stderr
    # the rest is read: every launch of the example is still there (the last export is the JSON one)
    doc = json.loads(proc.stdout)
    assert len(doc["runs"]) == 3


@pytest.mark.slow
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


# -- sweep queues ---------------------------------------------------------------------------------


def _queue(tmp: Path, edit) -> Path:
    from eagletui.commands.profile import example_text
    from eagletui.core.profile.load import parse_profile
    from eagletui.session.sweep.queue import SweepQueue

    prof = parse_profile(example_text("demo-sweep"), "d.toml")
    assert prof.sweep is not None
    q = SweepQueue.plan(prof.sweep, target="local", profile_path="d.toml")
    path = tmp / "q.json"
    q.save(path)
    d = json.loads(path.read_text())
    edit(d)
    path.write_text(json.dumps(d))
    return path


QUEUE_CASES = {
    "negative-repeats": (
        lambda d: d.update(repeats=-3),
        "repeats must be an integer from 1 to 1000, got int -3",
    ),
    "list-run-id": (lambda d: d["variants"][1].update(run_id=[1]), "variants[1].run_id must be a string"),
    "string-attempts": (lambda d: d["variants"][2].update(attempts="many"), "variants[2].attempts must be"),
    "nested-queue": (
        lambda d: d["variants"].__setitem__(0, json.loads(json.dumps(d))),
        "variants[0].index is missing",
    ),
    "list-setting": (
        lambda d: d["variants"][0]["settings"].update(NCCL_ALGO=[["x"]]),
        "variants[0].settings['NCCL_ALGO'] must be a string, number or boolean",
    ),
    "nan-repeat": (
        lambda d: d["variants"][0].update(state="done", repeats=[{"tok_s": float("nan")}]),
        "variants[0].repeats[0].tok_s must be a finite number",
    ),
    "bad-state": (lambda d: d["variants"][0].update(state="exploded"), "variants[0].state must be one of"),
    # queue version 2 (issue 21): cells, the repeats policy, the drift check
    "nan-cell-run": (
        lambda d: d["variants"][1]["cells"][0].update(repeats=[{"tok_s": float("inf")}]),
        "variants[1].cells[0].repeats[0].tok_s must be a finite number",
    ),
    "bad-policy": (lambda d: d["policy"].update(confidence=7), "policy.confidence must be a number from 0.5"),
    "bad-recheck": (lambda d: d["variants"][0].update(recheck_of="base"), "variants[0].recheck_of must be"),
}


@pytest.mark.parametrize("case", list(QUEUE_CASES))
def test_a_damaged_sweep_queue_is_refused_naming_the_field(tmp_path: Path, case: str) -> None:
    from eagletui.session.sweep.cells import SweepError
    from eagletui.session.sweep.queue import SweepQueue

    edit, why = QUEUE_CASES[case]
    path = _queue(tmp_path, edit)
    with pytest.raises(SweepError) as ei:
        SweepQueue.load(path)
    assert str(ei.value).startswith(f"{path}: damaged sweep queue: ") and why in str(ei.value), ei.value


def test_a_deeply_nested_sweep_queue_is_refused(tmp_path: Path) -> None:
    from eagletui.session.sweep.cells import SweepError
    from eagletui.session.sweep.queue import SweepQueue

    path = tmp_path / "q.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SweepError, match="nested too deep"):
        SweepQueue.load(path)


def test_sweep_resume_with_a_damaged_queue_launches_nothing(tmp_path: Path) -> None:
    """The queue of `eagletui sweep` itself, found by its path: exit 2 with the reason, no server."""
    from eagletui.commands.profile import example_text
    from eagletui.session.sweep.files import queue_path

    prof = tmp_path / "s.toml"
    prof.write_text(example_text("demo-sweep").replace("~/.eagletui/runs", str(tmp_path / "runs")))
    qdir = tmp_path / "queues"
    qpath = queue_path("local", str(prof), qdir)
    qpath.parent.mkdir(parents=True, exist_ok=True)
    good = _queue(tmp_path, lambda d: d.update(repeats=-3))
    qpath.write_text(good.read_text())
    proc = _eagletui("sweep", "--profile", str(prof), "--queue-dir", str(qdir), "--resume", tmp=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "damaged sweep queue: repeats must be an integer from 1 to 1000" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "runs").exists()


# -- profiler traces ------------------------------------------------------------------------------


def _trace(tmp: Path, name: str, kernel_dur, step_dur=1000.0, deep: str = "") -> Path:
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "ncclDevKernel_AllReduce",
            "ts": 100,
            "dur": kernel_dur,
            "tid": 7,
        },
        {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "ts": 200, "dur": 50, "tid": 7},
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "ProfilerStep#1",
            "ts": 0,
            "dur": step_dur,
            "tid": 7,
        },
    ]
    body = json.dumps({"traceEvents": events})
    if deep:
        body = body.replace('{"traceEvents": [', '{"traceEvents": [' + deep + ", ", 1)
    path = tmp / f"{name}-TP-0.trace.json"
    path.write_text(body)
    return path


TRACE_CASES = {
    "nan-dur": dict(kernel_dur=float("nan")),
    "nan-string-dur": dict(kernel_dur="nan"),
    "inf-string-dur": dict(kernel_dur="inf"),
    "x-dur": dict(kernel_dur="x"),
    "negative-dur": dict(kernel_dur=-5),
    "huge-dur": dict(kernel_dur=1e308),
    "nan-step": dict(kernel_dur=10, step_dur=float("nan")),
    "negative-step": dict(kernel_dur=10, step_dur=-1),
    "deep-event": dict(kernel_dur=10, deep='{"a": ' * 100_000 + "1" + "}" * 100_000),
    "deep-args": dict(kernel_dur=10, deep='{"cat": "kernel", "args": ' + "[" * 100_000 + "]" * 100_000 + "}"),
}


@pytest.mark.parametrize("case", list(TRACE_CASES))
@pytest.mark.parametrize("mode", ["text", "json"])
def test_trace_skips_the_bad_event_and_summarises_the_rest(tmp_path: Path, case: str, mode: str) -> None:
    path = _trace(tmp_path, case, **TRACE_CASES[case])
    proc = _eagletui("trace", str(path), *(["--json"] if mode == "json" else []), tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{path}: 1 event(s) skipped" in proc.stderr, proc.stderr
    if mode == "json":
        [rank] = json.loads(proc.stdout)["ranks"]
        assert rank["skipped"] == 1 and rank["kernels"] >= 1
        assert all(v["ms"] == v["ms"] and v["ms"] < 1e6 for v in rank["categories"].values())
    else:
        assert "gemm" in proc.stdout


# -- TOML -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("deep", ["[" * 5000 + "]" * 5000, "{a = " * 3000 + "1" + "}" * 3000])
def test_profile_check_on_a_deeply_nested_toml_names_the_place(tmp_path: Path, deep: str) -> None:
    prof = tmp_path / "p.toml"
    prof.write_text(f'name = "x"\n\n[server.args]\nmodel-path = "m"\nfoo = {deep}\n')
    proc = _eagletui("profile", "check", str(prof), tmp=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{prof}:5:" in proc.stdout + proc.stderr and "nested deeper than 64" in proc.stdout + proc.stderr


def test_a_deep_user_config_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    from eagletui.config import load_user_config as load_config

    cfg = tmp_path / "config.toml"
    cfg.write_text("theme = " + "[" * 5000 + "]" * 5000 + "\n")
    _cfg, problems = load_config(cfg)
    assert problems and f"{cfg}:1:" in problems[0] and "nested deeper" in problems[0]


def test_ordinary_profiles_still_load() -> None:
    from eagletui.commands.profile import EXAMPLES, example_text
    from eagletui.core.profile.load import parse_profile

    for name in EXAMPLES:
        parse_profile(example_text(name), f"{name}.toml")
