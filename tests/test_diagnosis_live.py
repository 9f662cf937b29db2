"""Issue 25 end to end: the simulator's PCIe preset, a slow one-thread load, batches above the captured
graphs and adaptive speculation, seen through ``bench --json``, a real preflight probe and the
simulator's own log; and the exports carry the diagnoses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagletui.commands.bench import main as bench_main
from eagletui.commands.demo import free_port
from eagletui.commands.parse import parse_path
from eagletui.core.timings import FAST
from tests.conftest_sim import SimProc, sim_profile_toml


def _kinds(rows: list[dict]) -> dict[str, dict]:
    return {d["kind"]: d for d in rows}


def _checkpoint(d: Path, shards: int, mb: int) -> Path:
    """A checkpoint the preflight can measure: a safetensors index and sparse shard files."""
    d.mkdir(parents=True, exist_ok=True)
    wm = {}
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        with open(d / name, "wb") as f:
            f.write(b"\0" * 4096)
            f.truncate(mb << 20)
        wm[f"layers.{i}.weight"] = name
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": shards * (mb << 20)}, "weight_map": wm})
    )
    (d / "config.json").write_text(
        json.dumps({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "vocab_size": 163840})
    )
    return d


@pytest.mark.slow
def test_pcie_preset_bench_json_says_nccl_over_pcie_and_the_alternatives(tmp_path, capsys) -> None:
    port = free_port()
    rest = "[bench]\nnum_prompts = 4\nconcurrency = 2\nmax_new_tokens = 24\nwarmup = 1"
    prof = sim_profile_toml(tmp_path, port, rest=rest)
    rc = bench_main(["local", "--profile", prof, "--launch", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    ar = _kinds(data["diagnosis"])["allreduce"]
    assert ar["text"].startswith("decode all-reduce at tp 8: NCCL") and "over PCIe" in ar["text"]
    assert "Custom all-reduce is off: not supported on more than two PCIe-only GPUs." in ar["text"]
    assert "CustomAllreduce is disabled" in ar["evidence"]
    # the simulator reports sglang 0.5.23: its PCIe-IPC all-reduce and fusion spelling are named
    assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1" in ar["hint"]
    assert "--flashinfer-allreduce-fusion-backend auto" in ar["hint"]


@pytest.mark.slow
def test_nvlink_preset_uses_the_custom_allreduce(tmp_path) -> None:
    sim = SimProc(
        [
            "--model-path",
            "moonshotai/Kimi-K2.5",
            "--tp",
            "8",
            "--sim-host",
            "h200-nvlink",
        ]
    )
    try:
        text = sim.wait_for("The server is fired up and ready to roll!", 60)
    finally:
        sim.stop()
    (tmp_path / "server.log").write_text(text)
    s = parse_path(str(tmp_path / "server.log"))
    ar = _kinds(s["diagnosis"])["allreduce"]
    assert "the custom all-reduce" in ar["text"] and "nothing in the log disabled" in ar["evidence"]


@pytest.mark.slow
def test_slow_one_thread_load_names_the_read_rate_and_the_loader_hint(tmp_path) -> None:
    """The preflight measures the checkpoint; the simulator loads it with one thread; the diagnosis
    names both rates and the flag that gives the threads back."""
    import asyncio

    from eagletui.core.diagnosis.fold import Diagnoser
    from eagletui.core.events import HostFacts, LaunchStarted
    from eagletui.core.phases.interpreter import LogInterpreter
    from eagletui.core.profile.load import load_profile
    from eagletui.remote.preflight import host_facts, run_preflight
    from eagletui.remote.transport import open_transport

    ckpt = _checkpoint(tmp_path / "ckpt", shards=6, mb=64)
    port = free_port()
    prof_path = sim_profile_toml(
        tmp_path,
        port,
        args="model-loader-extra-config = '{\"enable_multithread_load\": false}'\nsim-load-s = 400\n",
    )
    text = (
        Path(prof_path).read_text().replace('model-path = "moonshotai/Kimi-K2.5"', f'model-path = "{ckpt}"')
    )
    Path(prof_path).write_text(text)
    profile = load_profile(prof_path)

    async def preflight() -> dict:
        transport = await open_transport("local", None, timings=FAST)
        try:
            return host_facts(await run_preflight(transport, profile))
        finally:
            await transport.close()

    facts = asyncio.run(preflight())
    ck = facts["checkpoint"]
    assert ck["shards"] == 6 and ck["bytes"] == 6 * (64 << 20) and 0.0 <= ck["cached"] <= 1.0
    assert facts["storage"]["mbps"] > 0 and facts["storage"]["mb"] > 0
    assert facts["models"]["target"]["arch"] == "DeepseekV3ForCausalLM"
    sim = SimProc(
        [
            "--model-path",
            str(ckpt),
            "--tp",
            "8",
            "--model-loader-extra-config",
            '{"enable_multithread_load": false}',
            "--sim-load-s",
            "400",
            "--sim-time-scale",
            "0.01",
        ]
    )
    try:
        log = sim.wait_for("Load weight end", 60)
    finally:
        sim.stop()
    assert "Loading safetensors checkpoint shards" in log  # the one-thread loader's own bar
    d = Diagnoser()
    d.add_one(HostFacts(facts=facts))
    d.add_one(LaunchStarted(launch=1, target="local"))
    it = LogInterpreter(launch=1)
    d.add(it.feed(log) + it.flush())
    wl = {x.kind: x for x in d.diagnoses(1)}["weight_load"]
    assert "6 shards in" in wl.text and "one loader thread" in wl.text and "MB/s" in wl.text
    assert "of what the storage gives, loader-bound" in wl.text
    assert "checkpoint index 402.7 MB (preflight)" in wl.evidence and "read probe" in wl.evidence
    assert '--model-loader-extra-config \'{"enable_multithread_load": true' in wl.hint


@pytest.mark.slow
def test_batches_above_the_captured_graphs_run_eager_on_the_simulator(tmp_path, capsys) -> None:
    port = free_port()
    rest = "[bench]\nnum_prompts = 16\nconcurrency = 8\nmax_new_tokens = 64\nwarmup = 1"
    prof = sim_profile_toml(
        tmp_path, port, args="cuda-graph-max-bs-decode = 4\ndecode-log-interval = 2\n", rest=rest
    )
    rc = bench_main(["local", "--profile", prof, "--launch", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    eager = _kinds(json.loads(out.out)["diagnosis"])["cuda_graph_eager"]
    assert "above the largest captured size 4" in eager["text"] and eager["level"] == "warn"
    assert "--cuda-graph-max-bs-decode 8" in eager["hint"]


@pytest.mark.slow
def test_adaptive_speculation_on_the_simulator_logs_its_steps(tmp_path: Path) -> None:
    sim = SimProc(
        [
            "--model-path",
            "moonshotai/Kimi-K2.5",
            "--tp",
            "8",
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-draft-model-path",
            "lmsys/poor-EAGLE3",
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-adaptive",
            "--decode-log-interval",
            "5",
            "--sim-speed",
            "20",
        ]
    )
    import urllib.request

    try:
        sim.wait_for("The server is fired up and ready to roll!", 60)
        body = json.dumps(
            {"text": "hello", "sampling_params": {"max_new_tokens": 200, "ignore_eos": True}}
        ).encode()
        urllib.request.urlopen(urllib.request.Request(sim.base + "/generate", data=body), timeout=60).read()
        text = sim.wait_for("Adaptive spec params updated", 30)
    finally:
        sim.stop()
    assert "AdaptiveSpeculativeParams initialized: steps=3, candidate_steps=[1, 3, 5, 7]" in text
    (tmp_path / "server.log").write_text(text)
    s = parse_path(str(tmp_path / "server.log"))
    steps = _kinds(s["diagnosis"])["adaptive_steps"]
    assert "started at steps 3; 3 → 1" in steps["text"]


def test_exports_carry_the_diagnoses(tmp_path) -> None:
    from eagletui.core import events as ev
    from eagletui.core.phases.interpreter import LogInterpreter
    from eagletui.session.export import build_report
    from eagletui.session.export_render import render

    log = (Path(__file__).parent / "fixtures" / "real-diagnosis" / "pcie-l4x4-customar-0434.log").read_text()
    it = LogInterpreter(launch=1)
    events = [ev.LaunchStarted(launch=1, target="t", config={"args": {}}), *it.feed(log), *it.flush()]
    report = build_report(events)
    rows = report.records[0].diagnosis
    assert any(d["kind"] == "allreduce" and "NCCL" in d["text"] for d in rows)
    doc = json.loads(render(report, "json"))
    assert doc["runs"][0]["diagnosis"][0]["kind"] == "allreduce"
    md = render(report, "md")
    assert "Why (docs/diagnosis.md):" in md and "Custom all-reduce is off" in md
    csv_text = render(report, "csv")
    assert csv_text.splitlines()[0].endswith(",why") and "Custom all-reduce is off" in csv_text


@pytest.mark.slow
def test_accept_by_prompt_length_and_category_on_the_simulator(tmp_path, capsys) -> None:
    """Prompts past the draft's context (--sim-draft-context) accept less: the benchmark's groups show
    it, and the diagnosis says it with the numbers (MT-bench-style ``category`` lines)."""
    short = "Tell me a short joke about ducks."
    long = " ".join(["word"] * 600)
    lines = [json.dumps({"prompt": short, "category": "writing"}) for _ in range(6)]
    lines += [json.dumps({"prompt": long + f" {i}", "category": "extraction"}) for i in range(6)]
    prompts = tmp_path / "mt.jsonl"
    prompts.write_text("\n".join(lines) + "\n")
    port = free_port()
    rest = (
        f'[bench]\nprompts = "{prompts}"\nnum_prompts = 12\nconcurrency = 4\nmax_new_tokens = 64\n'
        "warmup = 1\nignore_eos = true"
    )
    prof = sim_profile_toml(tmp_path, port, args="sim-draft-context = 300\n", rest=rest)
    rc = bench_main(["local", "--profile", prof, "--launch", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    d = _kinds(data["diagnosis"])
    ctx = d["draft_context"]
    assert (
        "accept falls with prompt length" in ctx["text"]
        and "max_position_embeddings unknown" in ctx["evidence"]
    )
    cat = d["draft_by_category"]
    assert "fits writing best and extraction worst" in cat["text"]
