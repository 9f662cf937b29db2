"""Pure tests of the simulator's performance model (calibration and knob effects)."""

from __future__ import annotations

import random

import pytest

from eagletui.sim import perf
from eagletui.sim.cli import parse_args

BASE = {"model_path": "moonshotai/Kimi-K2-Instruct", "tp_size": 8}
GOOD = {
    **BASE,
    "speculative_algorithm": "EAGLE3",
    "speculative_draft_model_path": "lmsys/Kimi-K2-EAGLE3",
    "speculative_num_steps": 3,
    "speculative_eagle_topk": 1,
    "speculative_num_draft_tokens": 4,
}
POOR = {**GOOD, "speculative_draft_model_path": "/models/bad-eagle3"}


def test_no_spec_single_stream_calibration() -> None:
    e = perf.expected(BASE)
    assert 82 <= e["single_stream_tok_s"] <= 90
    assert e["accept_len"] == 1.0


def test_good_drafter_calibration() -> None:
    e = perf.expected(GOOD)
    assert e["accept_len"] == pytest.approx(3.2, abs=0.03)
    assert 55 <= e["single_stream_tok_s"] <= 70
    assert 0.6 < e["accept_rate"] < 0.8


def test_poor_drafter_from_path_and_explicit_quality() -> None:
    e = perf.expected(POOR)
    assert e["accept_len"] == pytest.approx(1.5, abs=0.03)
    assert 40 <= e["single_stream_tok_s"] <= 55
    explicit = perf.expected({**GOOD, "sim_draft_quality": perf.POOR_DRAFT_P})
    assert explicit["accept_len"] == pytest.approx(e["accept_len"])


def test_fusion_gives_about_six_percent() -> None:
    for cfg in (BASE, GOOD, POOR):
        on = perf.expected({**cfg, "enable_flashinfer_allreduce_fusion": True})["single_stream_tok_s"]
        off = perf.expected(cfg)["single_stream_tok_s"]
        assert on / off == pytest.approx(1.06, abs=0.005)


def test_nccl_env_small_effects() -> None:
    default = perf.expected(BASE)["single_stream_tok_s"]
    tree = perf.expected(BASE, {"NCCL_ALGO": "Tree"})["single_stream_tok_s"]
    ll = perf.expected(BASE, {"NCCL_PROTO": "LL"})["single_stream_tok_s"]
    simple = perf.expected(BASE, {"NCCL_PROTO": "Simple"})["single_stream_tok_s"]
    assert tree < default < ll
    assert simple < default
    for v in (tree, ll, simple):
        assert abs(v / default - 1) < 0.05
    assert perf.expected(BASE, {"NCCL_ALGO": "allreduce:tree"})["single_stream_tok_s"] == tree


def test_disable_cuda_graph_is_much_slower() -> None:
    assert (
        perf.expected({**BASE, "disable_cuda_graph": True})["single_stream_tok_s"]
        < 0.5 * perf.expected(BASE)["single_stream_tok_s"]
    )


def test_more_steps_diminishing_returns_and_more_cost() -> None:
    accepts, iters = [], []
    for steps in (1, 2, 3, 5, 7):
        e = perf.expected({**GOOD, "speculative_num_steps": steps, "speculative_num_draft_tokens": steps + 1})
        accepts.append(e["accept_len"])
        iters.append(e["iteration_ms"])
    gains = [b - a for a, b in zip(accepts, accepts[1:], strict=False)]
    assert all(g > 0 for g in gains)
    assert gains[0] > gains[-1]
    assert iters == sorted(iters)


def test_accept_capped_by_draft_tokens_and_sampling_mean() -> None:
    cfg = perf.PerfConfig.from_args(GOOD)
    rng = random.Random(1)
    samples = [perf.sample_accept_len(cfg, rng) for _ in range(40000)]
    assert max(samples) <= cfg.num_draft_tokens
    assert min(samples) >= 1
    assert sum(samples) / len(samples) == pytest.approx(perf.mean_accept_len(cfg), rel=0.01)


def test_topk_one_forces_draft_tokens() -> None:
    cfg = perf.PerfConfig.from_args({**GOOD, "speculative_num_draft_tokens": 16})
    assert cfg.num_draft_tokens == 4


def test_concurrency_raises_aggregate_throughput() -> None:
    for cfg in (BASE, GOOD):
        c = perf.PerfConfig.from_args(cfg)
        assert perf.throughput(c, 32) > 15 * perf.throughput(c, 1)


def test_sim_speed_multiplies_throughput() -> None:
    fast = perf.expected({**BASE, "sim_speed": 10})["batch32_tok_s"]
    assert fast > 20000
    assert fast == pytest.approx(10 * perf.expected(BASE)["batch32_tok_s"])


def test_expected_accepts_cli_namespace() -> None:
    ns = parse_args(
        [
            "--model-path",
            "moonshotai/Kimi-K2-Instruct",
            "--tp",
            "8",
            "--speculative-algorithm",
            "eagle3",
            "--speculative-draft-model",
            "weak-draft",
            "--enable-flashinfer-allreduce-fusion",
        ]
    )
    e = perf.expected(ns, {})
    assert e["spec"] is True
    assert e["accept_len"] == pytest.approx(1.5, abs=0.03)


def test_noise_is_bounded_and_mean_one() -> None:
    rng = random.Random(3)
    xs = [perf.noise(rng) for _ in range(20000)]
    assert 0.85 < min(xs) and max(xs) < 1.15
    assert sum(xs) / len(xs) == pytest.approx(1.0, abs=0.002)


def test_pcie_preset_all_reduce_dominates_the_cycle() -> None:
    """Issue 15: on 8 × RTX PRO 6000 over PCIe, ≈ 25 ms of a ≈ 30 ms poor-drafter cycle is all-reduce."""
    e = perf.expected({**POOR, "sim_host": "pcie-rtx6000"})
    cats = e["step_ms_by_category"]
    assert set(cats) == set(perf.CATEGORIES)
    assert sum(cats.values()) == pytest.approx(e["iteration_ms"])
    assert 28 <= e["iteration_ms"] <= 34
    assert 22 <= cats["communication"] <= 27
    assert perf.expected(POOR) == e  # the default host
    fused = perf.expected({**POOR, "enable_flashinfer_allreduce_fusion": True})["step_ms_by_category"]
    assert fused["communication"] < cats["communication"] - 1.0
    assert fused["gemm"] == pytest.approx(cats["gemm"])
    # the custom all-reduce needs NVLink at tp 8: disabling it changes nothing over PCIe
    off = perf.expected({**POOR, "disable_custom_all_reduce": True})
    assert off["iteration_ms"] == pytest.approx(e["iteration_ms"])


def test_h200_preset_speculation_wins_less_with_concurrency() -> None:
    base = perf.PerfConfig.from_args({**BASE, "sim_host": "h200-nvlink"})
    good = perf.PerfConfig.from_args({**GOOD, "sim_host": "h200-nvlink"})
    single = perf.throughput(good, 1) / perf.throughput(base, 1)
    batch = perf.throughput(good, 32) / perf.throughput(base, 32)
    assert 1.6 <= single <= 2.2
    assert 1.0 < batch < single
    e = perf.expected({**GOOD, "sim_host": "h200-nvlink"})
    assert e["host"] == "h200-nvlink"
    cats = e["step_ms_by_category"]
    assert cats["communication"] < 0.25 * e["iteration_ms"]
    # NVLink: without the one-shot custom all-reduce, NCCL's all-reduce costs more
    off = perf.expected({**GOOD, "sim_host": "h200-nvlink", "disable_custom_all_reduce": True})
    assert off["step_ms_by_category"]["communication"] > 1.5 * cats["communication"]
    # on PCIe the same drafter loses to the baseline
    pcie = perf.PerfConfig.from_args(GOOD)
    assert perf.throughput(pcie, 1) < perf.throughput(perf.PerfConfig.from_args(BASE), 1)


def test_sim_host_flag_and_0523_graph_and_fusion_flags() -> None:
    ns = parse_args(["--model-path", "m", "--sim-host", "h200-nvlink"])
    assert perf.PerfConfig.from_args(ns).host == "h200-nvlink"
    with pytest.raises(SystemExit):
        parse_args(["--model-path", "m", "--sim-host", "dgx"])
    cfg = perf.PerfConfig.from_args({**BASE, "cuda_graph_backend_decode": "disabled"})
    assert cfg.cuda_graph is False
    assert perf.PerfConfig.from_args({**BASE, "flashinfer_allreduce_fusion_backend": "auto"}).allreduce_fusion
