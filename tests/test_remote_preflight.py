"""Preflight checks and GPU telemetry, with a fake nvidia-smi on PATH."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from eagletui.commands.demo import free_port as _free_port
from eagletui.core.profile.model import Profile
from eagletui.core.timings import FAST
from eagletui.remote.gpu import gpu_events, parse_query
from eagletui.remote.local import LocalTransport
from eagletui.remote.preflight import run_preflight

PY = sys.executable

FAKE_SMI = """#!/bin/sh
case "$1" in
  --query-gpu*) printf '0, NVIDIA H200, 81000, 143771, 97, 612.40\\n1, NVIDIA H200, 12, 143771, 0, [N/A]\\n' ;;
  --query-compute-apps*) printf 'GPU-abc, 4242, python3, 80990\\n' ;;
esac
"""


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return smi


def model_dir(base: Path, name: str, **cfg) -> str:
    d = base / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


def by_name(checks):
    return {c.name: c for c in checks}


async def test_preflight_local_models(tmp_path: Path) -> None:
    target = model_dir(
        tmp_path,
        "target",
        hidden_size=7168,
        vocab_size=163840,
        max_position_embeddings=262144,
        architectures=["DeepseekV3ForCausalLM"],
    )
    draft = model_dir(
        tmp_path,
        "draft",
        hidden_size=7168,
        vocab_size=163840,
        draft_vocab_size=32000,
        max_position_embeddings=262144,
    )
    prof = Profile(
        command=("{python}", "-m", "eagletui.sim"),
        python=PY,
        workdir=str(tmp_path),
        runs_dir=str(tmp_path / "runs"),
        port=_free_port(),
        args={"--model-path": target, "--speculative-draft-model-path": draft, "--context-length": 8192},
    )
    checks = by_name(await run_preflight(LocalTransport(), prof))
    assert checks["host"].status == "pass" and "local machine" in checks["host"].message
    assert checks["server module"].status == "pass" and "sglang-compat" in checks["server module"].message
    assert checks["port"].status == "pass"
    assert checks["model"].status == "pass" and "DeepseekV3ForCausalLM" in checks["model"].message
    assert checks["draft compatibility"].status == "pass"
    assert checks["disk"].status == "pass"
    if not any(Path(p, "nvidia-smi").exists() for p in os.environ["PATH"].split(os.pathsep)):
        assert checks["gpus"].status == "warn" and "no GPUs visible" in checks["gpus"].message


async def test_preflight_failures(tmp_path: Path, fake_smi: Path) -> None:
    target = model_dir(tmp_path, "target", hidden_size=4096, vocab_size=128256, max_position_embeddings=8192)
    draft = model_dir(tmp_path, "draft", hidden_size=5120, vocab_size=128256, max_position_embeddings=2048)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        prof = Profile(
            python=PY,
            workdir=str(tmp_path),
            runs_dir=str(tmp_path / "runs"),
            port=busy.getsockname()[1],
            args={
                "--model-path": target,
                "--speculative-draft-model-path": draft,
                "--context-length": 4096,
                "--tp": 8,
            },
        )
        checks = by_name(await run_preflight(LocalTransport(), prof))
    assert checks["port"].status == "fail"
    compat = checks["draft compatibility"]
    assert compat.status == "fail" and "hidden_size" in compat.message and "max_position" in compat.message
    assert checks["gpus"].status == "fail" and "2" in checks["gpus"].message  # tp 8 on 2 GPUs
    assert checks["gpus free"].status == "warn" and "pid 4242" in checks["gpus free"].message
    # sglang is (normally) not installed here
    mod = checks["server module"]
    assert mod.status in ("fail", "pass")

    prof2 = Profile(
        python=PY,
        workdir=str(tmp_path),
        port=_free_port(),
        args={"--model-path": str(tmp_path / "missing"), "--speculative-draft-model-path": "org/name"},
    )
    checks = by_name(await run_preflight(LocalTransport(), prof2))
    assert checks["model"].status == "fail" and "does not exist" in checks["model"].message
    assert checks["draft model"].status == "warn"


async def test_preflight_command(tmp_path: Path) -> None:
    from eagletui.commands.preflight import _run, build_parser

    prof = tmp_path / "p.toml"
    prof.write_text(
        f'[target]\nhost = "local"\npython = "{PY}"\nworkdir = "{tmp_path}"\n'
        f'[server]\ncommand = "{{python}} -m eagletui.sim"\nport = {_free_port()}\n'
        f'[server.args]\nmodel-path = "{tmp_path}/nope"\n'
    )
    assert await _run(build_parser().parse_args(["local", "--profile", str(prof)])) == 1


def test_parse_query() -> None:
    gpus = parse_query("0, NVIDIA H100 80GB HBM3, 100, 81559, 3, 70.5\n1, X, [N/A], 10, 0, [N/A]\n")
    assert gpus[0] == {
        "index": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "mem_used_mb": 100.0,
        "mem_total_mb": 81559.0,
        "util_pct": 3.0,
        "power_w": 70.5,
    }
    assert gpus[1]["mem_used_mb"] is None


async def test_gpu_events(fake_smi: Path) -> None:
    agen = gpu_events(LocalTransport(), FAST.replace(watch_gpu_poll_s=0.01))
    ev1 = await agen.__anext__()
    ev2 = await agen.__anext__()
    await agen.aclose()
    assert (
        [g["index"] for g in ev1.gpus] == [0, 1] and ev1.gpus[0]["power_w"] == 612.4 and ev2.mono > ev1.mono
    )


async def test_gpu_events_without_nvidia_smi(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert [ev async for ev in gpu_events(LocalTransport(), FAST.replace(watch_gpu_poll_s=0.01))] == []


def _sglang_profile(tmp_path: Path, args: str) -> Path:
    prof = tmp_path / "sgl.toml"
    prof.write_text(
        f'[target]\nhost = "local"\npython = "{PY}"\nworkdir = "{tmp_path}"\n'
        f'[server]\ncommand = "{{python}} -m sglang.launch_server"\nport = {_free_port()}\n'
        f'[server.args]\nmodel-path = "org/model"\n{args}'
    )
    return prof


def _eagletui(*argv: str, stdout: int | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    return subprocess.run(
        [PY, "-m", "eagletui", *argv],
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.slow
def test_preflight_command_runs_the_flag_check(tmp_path: Path) -> None:
    """`eagletui preflight local --profile …`: sglang's parser cannot be asked here (not installed), so
    the bundled real 0.5.23 table decides, by argparse's rule."""
    prof = _sglang_profile(tmp_path, "tp = 8\npp = 2\ncuda-graph-max-bs = 16\nspeculative-num-steps = 3\n")
    res = _eagletui("preflight", "local", "--profile", str(prof), "--json")
    assert res.returncode == 1, res.stderr
    flags = [c for c in json.loads(res.stdout) if c["name"] == "flags"]
    fails = [c["message"] for c in flags if c["status"] == "fail"]
    assert len(fails) == 2, flags
    assert fails[0].startswith(
        "ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size, --pp-async-batch-depth"
    )
    assert (
        "--cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill" in fails[1]
    )
    text = _eagletui("preflight", "local", "--profile", str(prof))
    assert "FAIL  flags" in text.stdout and "--pp could match" in text.stdout


def test_preflight_command_accepts_unique_prefixes(tmp_path: Path) -> None:
    prof = _sglang_profile(tmp_path, "tp = 8\ndp = 2\nspeculative-num-steps = 3\n")
    res = _eagletui("preflight", "local", "--profile", str(prof), "--json")
    flags = [c for c in json.loads(res.stdout) if c["name"] == "flags"]
    assert [c["status"] for c in flags] == ["pass"], flags
    assert "--tp is accepted as --tp-size" in flags[0]["message"]
    assert "--dp is accepted as --dp-size" in flags[0]["message"]


def test_preflight_json_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    prof = _sglang_profile(tmp_path, "tp = 8\n")
    r, w = os.pipe()
    os.close(r)  # the reader (`| head`) is gone before anything is written
    try:
        res = _eagletui("preflight", "local", "--profile", str(prof), "--json", stdout=w)
    finally:
        os.close(w)
    assert "Traceback" not in res.stderr and "BrokenPipeError" not in res.stderr, res.stderr


async def test_the_server_module_is_found_in_an_editable_install_from_any_directory(
    tmp_path: Path, monkeypatch
) -> None:
    """``pip install -e`` puts eagletui on a finder of its own, not on sys.path: the check ran from a
    directory other than the checkout said "eagletui.sim is not importable" (and blocked every launch of
    the demo profiles outside the repository)."""
    monkeypatch.chdir(tmp_path)
    prof = Profile(
        command=("{python}", "-m", "eagletui.sim"),
        python=PY,
        workdir=str(tmp_path),
        runs_dir=str(tmp_path / "runs"),
        port=_free_port(),
        args={"--model-path": "org/model"},
    )
    checks = by_name(await run_preflight(LocalTransport(), prof))
    assert checks["server module"].status == "pass", checks["server module"].message
