"""Above the largest captured batch size the real server decodes without CUDA graphs (issue 31, Done-when).

Real (sglang 0.5.17, H200, turn 4, ``--cuda-graph-max-bs-decode 8``, ``bench --concurrency 1,4,16``): the
target verify graphs are captured for bs 1–8; decode batches of 1 and 4 say ``cuda graph: True``, the
batches of 16 ``cuda graph: False``, each step slower (per request 106 tok/s at 16 against 675 at 4 with
the tiny model). The simulator is held to the same: the largest size it captures, its decode lines' flag
around it, and a slower step when eager. (It did so already; this pins it to the real log.)
"""

from __future__ import annotations

import json
import re
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest_sim import READY, SPEC_ARGS, SimProc

from eagletui.sim import perf

REAL = Path(__file__).resolve().parent / "fixtures" / "real-sglang-0.5.17-turn4-excerpts"
DECODE = re.compile(r"Decode batch, #running-req: (\d+),.* cuda graph: (True|False), gen throughput \(token/s\): ([\d.]+)")


def _decode_lines(text: str) -> list[tuple[int, bool, float]]:
    return [(int(m[1]), m[2] == "True", float(m[3])) for m in DECODE.finditer(text)]


def _generate(base: str, i: int) -> None:
    body = {"text": f"eager {i}", "sampling_params": {"max_new_tokens": 128, "ignore_eos": True}}
    req = urllib.request.Request(
        base + "/generate", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 200


def test_the_real_log_decodes_eager_above_the_largest_captured_size() -> None:
    text = (REAL / "eager-decode-above-bs8-L1-14e62b.log").read_text()
    assert "bs=[1, 2, 3, 4, 5, 6, 7, 8]" in text
    lines = _decode_lines(text)
    assert {graph for bs, graph, _ in lines if bs <= 8} == {True}
    assert {graph for bs, graph, _ in lines if bs > 8} == {False}


@pytest.mark.slow
def test_the_simulator_decodes_eager_above_the_largest_captured_size_as_the_real_one() -> None:
    args = [
        "--model-path",
        "meta-llama/Llama-3.1-8B-Instruct",
        *SPEC_ARGS[SPEC_ARGS.index("--speculative-algorithm") :],
        "--cuda-graph-max-bs-decode",
        "8",
        "--max-running-requests",
        "16",
        "--decode-log-interval",
        "1",
        "--skip-server-warmup",
    ]
    with SimProc(args) as sim:
        sim.wait_for(READY, 60)
        for n in (4, 16):
            with ThreadPoolExecutor(n) as pool:
                list(pool.map(lambda i: _generate(sim.base, i), range(n)))
        text = sim.text()
    # the largest captured size is 8, as the real one's (the sizes below it follow the simulated version)
    assert re.search(r"Capture target verify CUDA graph (begin|end)\. .*bs=\[[\d, ]*, 8\]", text)
    lines = _decode_lines(text)
    # both sides of the largest captured size decoded (a loaded machine spreads the 16 requests' arrivals,
    # so the batch may never reach 16 itself: it was asserted once, and failed beside another suite)
    assert any(bs > 8 for bs, _, _ in lines) and any(bs <= 8 for bs, _, _ in lines)
    assert {graph for bs, graph, _ in lines if bs <= 8} == {True}
    assert {graph for bs, graph, _ in lines if bs > 8} == {False}
    # each eager step is slower than the same batch with graphs would be
    cfg = perf.PerfConfig.from_args(
        {
            "model_path": "meta-llama/Llama-3.1-8B-Instruct",
            "speculative_algorithm": "EAGLE3",
            "speculative_draft_model_path": "x",
        }
    )
    eager = perf.iteration_ms(perf.PerfConfig(**{**cfg.__dict__, "cuda_graph": False}), 16, 3.0)
    assert eager > 1.5 * perf.iteration_ms(cfg, 16, 3.0)
