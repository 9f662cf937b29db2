"""The spec-config preflight: each launch of a public issue is refused (or warned about) before it spends
its ten minutes, naming that issue; the fixed configurations and the known drafters pass; the host script
that reads the configs is bounded against hostile files."""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eagletui.core.profile.launch import parse_launch_command
from eagletui.core.profile.load import load_profile
from eagletui.core.servers import spec_preflight as sp
from eagletui.core.servers.spec_preflight import (
    ModelFacts,
    SpecFinding,
    adaptive_fallback_reason,
    spec_config_findings,
)
from eagletui.remote.preflight import Check, flag_checks, spec_checks
from eagletui.remote.preflight_scripts import HOST_SCRIPT

ROOT = Path(__file__).resolve().parents[1]
CASES = json.loads((ROOT / "tests/fixtures/spec-preflight/cases.json").read_text())


def _case(name: str, **extra: Any) -> tuple[dict[str, Any], list[SpecFinding]]:
    c = CASES[name]
    args = dict(parse_launch_command(c["command"]).args)
    args.update(extra)
    found = spec_config_findings(
        args, c["version"], ModelFacts.from_facts(c["target"]), ModelFacts.from_facts(c["draft"]), c["gpus"]
    )
    return args, found


def _only(found: list[SpecFinding], check: str) -> SpecFinding:
    hits = [f for f in found if f.check == check]
    assert len(hits) == 1, found
    return hits[0]


def test_eagle3_without_a_draft_path_is_refused_unless_the_target_bundles_its_draft() -> None:
    _, found = _case("no-draft-path")
    f = _only(found, "draft path")
    assert f.status == "fail" and "Qwen2ForCausalLM" in f.message and "sgl-project/sglang#36528" in f.text()
    # DeepSeek-V3 carries its MTP layers: SGLang defaults the draft to the target on purpose
    deepseek = ModelFacts(archs=("DeepseekV3ForCausalLM",), hidden=7168, vocab=129280, mla=True)
    assert not spec_config_findings({"--speculative-algorithm": "EAGLE3"}, "0.5.17", deepseek)
    # a Hugging Face id the host has not cached: its architecture is unknown, so it warns
    unknown = spec_config_findings({"--speculative-algorithm": "EAGLE3"}, "0.5.17", None)
    assert [f.status for f in unknown] == ["warn"]
    assert not spec_config_findings(
        {"--speculative-algorithm": "EAGLE3", "--speculative-draft-model-path": "/d"}, "0.5.17", None
    )


def test_multi_layer_eagle_needs_a_target_with_bundled_mtp_layers_of_that_release() -> None:
    _, found = _case("multi-layer-llama")
    f = _only(found, "multi-layer eagle")
    assert f.status == "fail" and "LlamaForCausalLM" in f.message and f.issue == "sgl-project/sglang#36536"
    mimo = ModelFacts(archs=("MiMoV2FlashForCausalLM",))
    args = {"--speculative-algorithm": "EAGLE", "--enable-multi-layer-eagle": True}
    assert not spec_config_findings(args, "0.5.17", mimo)
    # GigaChat35's MTP class arrives in 0.5.23 (configs/model_config.py)
    giga = ModelFacts(archs=("GigaChat35ForCausalLM",))
    assert [f.check for f in spec_config_findings(args, "0.5.17", giga)] == ["multi-layer eagle"]
    assert not spec_config_findings(args, "0.5.23", giga)


def test_non_mla_draft_on_an_mla_target_names_the_draft_attention_backend() -> None:
    args, found = _case("kimi-k26-gb300")
    f = _only(found, "draft attention")
    # on GB300 with no backend named SGLang picks trtllm_mla itself: a warning, with the thread's fix
    assert f.status == "warn" and "--speculative-draft-attention-backend" in f.message
    assert f.issue == "sgl-project/sglang#23490"
    _, named = _case("kimi-k26-gb300", **{"--attention-backend": "trtllm_mla"})
    assert _only(named, "draft attention").status == "fail"
    _, fixed = _case("kimi-k26-gb300", **{"--speculative-draft-attention-backend": "trtllm_mha"})
    assert not fixed
    # an MLA draft (kimi-k2.5-eagle3-mla) can share the target's backend
    mla_draft = ModelFacts(archs=("Eagle3DeepseekV2ForCausalLM",), hidden=7168, mla=True)
    target = ModelFacts.from_facts(CASES["kimi-k26-gb300"]["target"])
    assert not spec_config_findings(args, None, target, mla_draft, ["NVIDIA GB300"])
    # on Hopper SGLang's default is not MLA-only
    assert not spec_config_findings(
        args, None, target, ModelFacts(archs=("LlamaForCausalLMEagle3",)), ["NVIDIA H200"]
    )


def test_expert_distribution_metrics_with_two_or_more_steps_is_refused() -> None:
    _, found = _case("expert-metrics-steps3")
    f = _only(found, "expert metrics")
    assert (
        f.status == "fail"
        and "--speculative-num-steps 3" in f.message
        and f.issue == "sgl-project/sglang#32105"
    )
    _, one = _case(
        "expert-metrics-steps3", **{"--speculative-num-steps": 1, "--speculative-num-draft-tokens": 2}
    )
    assert not one  # the thread's steps=1 fleet ran for days
    _, eager = _case("expert-metrics-steps3", **{"--disable-cuda-graph": True})
    assert not eager  # no draft capture, nothing recorded inside one


def test_adaptive_with_topk_other_than_one_says_sglangs_own_reason() -> None:
    args, found = _case("adaptive-topk4")
    assert not [f for f in found if f.check == "adaptive"]  # said once, by the preflight's flag check
    checks = flag_checks(list(args), None, "0.5.17", dict(args))
    assert [c.status for c in checks if "will not adapt" in c.message] == ["warn"]
    reason = adaptive_fallback_reason(args, "0.5.17")
    # the server's own warning carries the same reason (adaptive_spec_params.py)
    assert (
        reason is not None and f"speculative_adaptive disabled: {reason}." in CASES["adaptive-topk4"]["crash"]
    )
    assert adaptive_fallback_reason({**args, "--speculative-eagle-topk": 1}) is None
    del args["--speculative-eagle-topk"]
    assert adaptive_fallback_reason(args) is None  # unset topk becomes 1
    # 0.5.17 refuses any --enable-dp-attention; 0.5.23 only attention DP over more than one rank
    assert adaptive_fallback_reason({**args, "--enable-dp-attention": True}, "0.5.17") is not None
    assert adaptive_fallback_reason({**args, "--enable-dp-attention": True}, "0.5.23") is None
    assert adaptive_fallback_reason({**args, "--enable-dp-attention": True, "--dp-size": 2}, "0.5.23") is not None


def test_a_host_whose_release_has_the_fix_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sp.FIXED_IN, "expert metrics", (0, 5, 30))
    assert [f.check for f in _case("expert-metrics-steps3")[1]] == ["expert metrics"]  # 0.5.15.post1
    args = parse_launch_command(CASES["expert-metrics-steps3"]["command"]).args
    assert not spec_config_findings(args, "0.5.30", None)
    assert [f.check for f in spec_config_findings(args, None, None)] == ["expert metrics"]  # unknown: say it


def test_the_draft_must_be_an_eagle3_head_for_this_target() -> None:
    target = ModelFacts(archs=("LlamaForCausalLM",), hidden=4096, vocab=128256)
    args = {"--speculative-algorithm": "EAGLE3", "--speculative-draft-model-path": "/d"}
    eagle1 = ModelFacts(archs=("LlamaForCausalLMEagle",), hidden=4096, vocab=128256)
    assert [f.status for f in spec_config_findings(args, "0.5.23", target, eagle1)] == ["fail"]
    wide = ModelFacts(archs=("LlamaForCausalLMEagle3",), hidden=2048, target_hidden=4096, vocab=128256)
    assert not spec_config_findings(args, "0.5.23", target, wide)  # widths: the host's draft compatibility
    maps = ModelFacts(
        archs=("LlamaForCausalLMEagle3",), hidden=4096, draft_vocab=32000, d2t=16000, t2d=151936
    )
    msgs = [f.message for f in spec_config_findings(args, "0.5.23", target, maps)]
    assert any("d2t mapping has 16000" in m for m in msgs) and any(
        "t2d mapping has 151936" in m for m in msgs
    )
    eagle3_as_eagle = spec_config_findings(
        {**args, "--speculative-algorithm": "EAGLE"}, "0.5.23", target, wide
    )
    assert [f.status for f in eagle3_as_eagle] == ["warn"]


# -- the host script: the facts, read on the host, bounded ----------------------------------------


def _host(tmp_path: Path, model: Path | None, draft: Path | None, ctx: int | None = None) -> dict[str, Any]:
    spec = {
        "module": "json",
        "port": 1,
        "host": "127.0.0.1",
        "model": str(model) if model else None,
        "draft": str(draft) if draft else None,
        "context_length": ctx,
        "runs_dir": str(tmp_path / "runs"),
        "workdir": str(tmp_path),
        "probe_s": 0.2,
        "env": {},
    }
    res = subprocess.run(
        [sys.executable, "-c", HOST_SCRIPT],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    return {r[0]: r for r in rows}


def _dir(tmp_path: Path, name: str, cfg: Any) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return d


def test_known_drafters_pass_the_preflight(tmp_path: Path) -> None:
    """tools/real-sglang/make_tiny.py's target and draft configs (the known drafters copy them) pass every
    check with the profile the real-server run launches them with."""
    spec = importlib.util.spec_from_file_location("make_tiny", ROOT / "tools/real-sglang/make_tiny.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tcfg, dcfg = mod.configs()
    target, draft = _dir(tmp_path, "target", tcfg), _dir(tmp_path, "draft", dcfg)
    rows = _host(tmp_path, target, draft, 4096)
    assert rows["draft compatibility"][1] == "pass", rows["draft compatibility"]
    checks = [
        Check(r[0], r[1], r[2], r[3] if len(r) > 3 else None, r[4] if len(r) > 4 else None)
        for r in rows.values()
    ]
    prof = load_profile(ROOT / "tools/real-sglang/tiny-eagle3.toml")
    [ok] = spec_checks(prof.args, prof.server_version, checks)
    assert ok.status == "pass" and "sglang 0.5.17" in ok.message, ok
    # the same target without the draft path is the #36528 crash
    no_draft = {k: v for k, v in prof.args.items() if k != "--speculative-draft-model-path"}
    [c] = spec_checks(no_draft, prof.server_version, checks)
    assert c.status == "fail" and "#36528" in c.message


def _safetensors(path: Path, tensors: dict[str, list[int]]) -> None:
    head = {k: {"dtype": "I64", "shape": s, "data_offsets": [0, 0]} for k, s in tensors.items()}
    raw = json.dumps(head).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def test_host_reads_d2t_and_t2d_sizes_from_the_safetensors_header(tmp_path: Path) -> None:
    target = _dir(
        tmp_path, "t", {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 5120, "vocab_size": 152064}
    )
    draft = _dir(
        tmp_path,
        "d",
        {
            "architectures": ["LlamaForCausalLMEagle3"],
            "hidden_size": 5120,
            "vocab_size": 152064,
            "draft_vocab_size": 32000,
        },
    )
    _safetensors(draft / "model.safetensors", {"d2t": [32000], "t2d": [152064], "fc.weight": [5120, 15360]})
    rows = _host(tmp_path, target, draft)
    facts = rows["model configs"][4]["models"]
    assert (
        facts["draft"]["d2t"] == 32000 and facts["draft"]["t2d"] == 152064 and facts["target"]["mla"] is False
    )
    assert rows["draft compatibility"][1] == "pass"
    # an EAGLE-3 head narrower than its target reads the target's width (llama_eagle3.py hidden_size_in)
    narrow = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 2048, "target_hidden_size": 5120}
    assert _host(tmp_path, target, _dir(tmp_path, "n", narrow))["draft compatibility"][1] == "pass"
    other = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096, "vocab_size": 152064}
    compat = _host(tmp_path, target, _dir(tmp_path, "o", other))["draft compatibility"]
    assert compat[1] == "fail" and "hidden_size 5120 (target) vs 4096 (draft)" in compat[2]


def test_host_refuses_hostile_configs_without_hanging_or_crashing(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "config.json")  # a read would block forever
    huge = tmp_path / "huge"
    huge.mkdir()
    with (huge / "config.json").open("wb") as f:
        f.truncate(64 << 20)  # sparse: 64 MB that must not be read
    rows = _host(tmp_path, fifo, huge)
    assert rows["model"][1] == "fail" and "not a regular file" in rows["model"][2]
    assert rows["draft model"][1] == "fail" and "more than" in rows["draft model"][2]
    deep = _dir(tmp_path, "deep", "[" * 100_000 + "]" * 100_000)
    odd = _dir(
        tmp_path,
        "odd",
        {
            "architectures": 5,
            "hidden_size": "7168",
            "max_position_embeddings": "x",
            "text_config": 3,
            "vocab_size": True,
        },
    )
    rows = _host(tmp_path, odd, deep, 8192)
    assert rows["draft model"][1] == "fail" and "nested too deeply" in rows["draft model"][2]
    assert rows["model"][1] == "pass"
    assert rows["model configs"][4]["models"]["target"] == {
        "arch": None,
        "hidden": None,
        "vocab": None,
        "draft_vocab": None,
        "max_position": None,
        "target_hidden": None,
        "mla": False,
    }
