"""A profile whose server is vLLM: the kind key, the launch argv, the flag check against the host's
parser, the OpenAI benchmark with acceptance from ``vllm:spec_decode_*``, and ``eagletui bench``
end to end against the bundled vLLM simulator (a real process and real HTTP)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from eagletui.bench.client import run_builtin
from eagletui.bench.metrics import _metrics_accept_len, parse_metrics
from eagletui.commands.bench import main as bench_main
from eagletui.commands.bench import without_speculation
from eagletui.commands.demo import free_port
from eagletui.core.events import BenchmarkResult, Event
from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.model import BenchSettings, ProfileError
from eagletui.core.servers.kinds import SGLANG, VLLM, kind_of_command, server_kind
from eagletui.remote.local import LocalTransport
from eagletui.remote.preflight import host_version, run_preflight_with_flags

SPEC = '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'


def _profile_text(
    tmp_path: Path, port: int, command: str = '["{python}", "-m", "eagletui.sim.vllm", "serve"]'
) -> str:
    return f"""
name = "vllmtest"
[target]
python = "{sys.executable}"
workdir = "{tmp_path}"
[server]
kind = "vllm"
command = {command}
port = {port}
runs_dir = "{tmp_path}/runs"
ready_timeout_s = 60
[server.args]
model = "meta-llama/Llama-3.1-8B-Instruct"
speculative-config = '{SPEC}'
sim-time-scale = 0.002
sim-step-ms = 4
sim-stats-interval = 0.2
[bench]
num_prompts = 6
concurrency = 2
max_new_tokens = 40
warmup = 1
"""


def test_the_kind_key_chooses_the_command_port_and_flags() -> None:
    p = parse_profile('[server]\nkind = "vllm"\n[server.args]\nmodel = "m"\ntensor-parallel-size = 2\n')
    assert p.server == "vllm" and p.kind is VLLM
    assert p.command == ("{python}", "-m", "vllm.entrypoints.cli.main", "serve") and p.port == 8000
    snap = p.snapshot()
    assert (snap["server"], snap["model"], snap["tp"]) == ("vllm", "m", 2)
    # without the key the command says which server it runs; a custom one is the default's
    assert parse_profile('[server]\ncommand = "vllm serve"\n').server == "vllm"
    assert parse_profile("[server]\n").server == "sglang"
    with pytest.raises(ProfileError) as e:
        parse_profile('[server]\nkind = "tgi"\n', "x.toml")
    assert "server.kind must be one of sglang, vllm" in str(e.value) and "x.toml:2" in str(e.value)


def test_speculation_flags_per_kind() -> None:
    args = {"--model": "m", "--speculative-config": SPEC, "--max-num-seqs": 8}
    assert VLLM.is_spec(args) and not SGLANG.is_spec(args)
    assert VLLM.without_spec(args) == {"--model": "m", "--max-num-seqs": 8}
    assert VLLM.draft(args) == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    assert not VLLM.is_spec({"--model": "m", "--speculative-config": ""})
    assert SGLANG.is_spec({"--speculative-algorithm": "EAGLE3"})
    assert kind_of_command(["python3", "-m", "sglang.launch_server"]) is SGLANG
    assert kind_of_command(["/opt/venv/bin/vllm", "serve", "m"]) is VLLM
    assert kind_of_command(["bash", "run.sh"]) is None
    assert server_kind("") is SGLANG
    p = parse_profile(
        f'[server]\nkind = "vllm"\n[server.args]\nmodel = "m"\nspeculative-config = \'{SPEC}\'\n'
    )
    assert without_speculation(p).args == {"--model": "m"}


def test_vllm_metrics_give_the_accept_length_of_the_run() -> None:
    before = parse_metrics(
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 150\n'
    )
    after = parse_metrics(
        '# HELP x\nvllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 300\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 450\n'
    )
    assert _metrics_accept_len(before, after) == pytest.approx(1 + 300 / 200)
    # impossible deltas are not believed
    bad = {"vllm:spec_decode_num_drafts": 301.0, "vllm:spec_decode_num_accepted_tokens": 1e9}
    assert _metrics_accept_len(before, bad) is None


@pytest.mark.slow
async def test_preflight_asks_the_hosts_vllm_parser(tmp_path: Path) -> None:
    port = free_port()
    prof = parse_profile(_profile_text(tmp_path, port))
    checks, table = await run_preflight_with_flags(LocalTransport(), prof)
    assert table is not None and "--speculative-config" in table.options
    assert host_version(checks) == "0.25.1"
    flags = [c for c in checks if c.name == "flags"]
    assert flags and flags[0].status == "pass", flags
    bad = parse_profile(_profile_text(tmp_path, port) + "\n")
    bad.args["--speculative-configs"] = "x"
    checks, _ = await run_preflight_with_flags(LocalTransport(), bad, table)
    assert any(
        c.name == "flags" and c.status == "fail" and "--speculative-configs" in c.message for c in checks
    )


async def test_without_the_hosts_vllm_the_flags_are_said_to_be_unchecked(tmp_path: Path) -> None:
    prof = parse_profile(
        _profile_text(tmp_path, free_port(), '["{python}", "-m", "vllm.entrypoints.cli.main", "serve"]')
    )
    checks, table = await run_preflight_with_flags(LocalTransport(), prof)
    assert table is None
    flags = [c for c in checks if c.name == "flags"]
    assert len(flags) == 1 and flags[0].status == "warn" and "not checked" in flags[0].message
    module = next(c for c in checks if c.name == "server module")
    assert module.status == "fail"  # vllm is not installed here: said, not guessed


@pytest.mark.slow
@pytest.mark.parametrize("per_request", ["none", "summary"])
async def test_openai_benchmark_against_the_vllm_simulator(tmp_path: Path, per_request: str) -> None:
    """With ``--per-request-spec-decode-metrics`` (vLLM 0.29+) each answer's final usage chunk carries the
    request's verify steps and accepted draft tokens: the benchmark pools them as it pools SGLang's
    ``meta_info`` and keeps each request's accept length (issue 32); without it, the counters."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "eagletui.sim.vllm",
        "serve",
        "--model",
        "m",
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--speculative-config",
        SPEC,
        "--sim-time-scale",
        "0",
        "--sim-step-ms",
        "3",
        "--sim-accept-len",
        "3.0",
        "--per-request-spec-decode-metrics",
        per_request,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        log = b""
        while b"Application startup complete" not in log:
            line = await asyncio.wait_for(proc.stderr.readline(), 30)
            assert line, log.decode()
            log += line
        events: list[Event] = []
        res = await run_builtin(
            f"http://127.0.0.1:{port}",
            BenchSettings(num_prompts=6, concurrency=3, max_new_tokens=32, warmup=1),
            bench=1,
            launch=1,
            emit=events.append,
            api="openai",
            model="not-the-served-name",  # the server's own list wins
        )
    finally:
        proc.terminate()
        await proc.wait()
    assert isinstance(res, BenchmarkResult) and res.error == "", res.error
    assert res.requests == 6 and res.failed == 0
    assert res.output_throughput > 0
    assert res.accept_length is not None and 1.5 < res.accept_length < 4.0
    assert res.stats["ttft_ms"]["mean"] > 0 and res.stats["itl_ms"]["mean"] > 0
    samples = [e for e in events if e.type == "bench_sample" and getattr(e, "scope", "") == "request"]
    assert len(samples) == 6 and all(s.output_tokens == 32 for s in samples)
    if per_request == "none":
        assert "per_request" not in res.accept_by and res.accept["formula"].startswith("Δ generation_tokens")
        return
    assert res.accept["formula"].startswith("Σ completion_tokens ÷ Σ spec_verify_ct over 6 requests")
    assert res.accept_by["per_request"]["n"] == 6 and sum(res.accept["histogram"]) == res.accept["verify_ct"]
    assert 1.0 + res.accept["correct_drafts"] / res.accept["verify_ct"] == pytest.approx(
        res.accept["from_drafts"]
    )


@pytest.mark.slow
def test_bench_launches_a_vllm_profile_and_prints_the_economics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """eagletui bench --vs-no-spec on a vLLM profile: launch, phases from vLLM's log, the OpenAI
    benchmark, acceptance from the counters, the no-spec relaunch and the same economics."""
    path = tmp_path / "vllm.toml"
    path.write_text(_profile_text(tmp_path, free_port()))
    rc = bench_main(["--profile", str(path), "--vs-no-spec", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "phase load_draft done" in out.err and "phase capture_target done" in out.err
    data = json.loads(out.out)
    assert data["accept_length"] is not None and data["accept_length"] > 1.2
    assert data["no_spec"]["accept_length"] is None
    assert data["economics"]["speedup"] > 0


def test_a_pasted_vllm_command_becomes_a_vllm_profile(tmp_path: Path) -> None:
    from eagletui.commands.profile import main as profile_main

    path = tmp_path / "v.toml"
    cmd = (
        f"vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --speculative-config '{SPEC}'"
    )
    assert profile_main(["init", str(path), "--from-command", cmd]) == 0
    prof = parse_profile(path.read_text(), path)
    assert prof.server == "vllm" and prof.command == ("vllm", "serve") and prof.port == 8000
    assert prof.args["--model"] == "meta-llama/Llama-3.1-8B-Instruct" and VLLM.is_spec(prof.args)
    names = {t.name for t in prof.toggles}
    assert "--speculative-config" in names and "--gpu-memory-utilization" in names
    assert not any(n.startswith("--speculative-num") for n in names)  # SGLang's knobs are not vLLM's
