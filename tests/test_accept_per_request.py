"""Issue 32: accept length per request. The simulator answers with the ``meta_info`` keys each SGLang
release sends (the wheels' ``_calculate_spec_decoding_metrics``) and can run the "half" drafter of
``shared/known-drafters``; the benchmark keeps each request's own accept length, and a bimodal run is said
as such (run 3/4 of ``shared/fixtures/sglang-0.5.17-h200-turn4`` read "two accept definitions differ by
more than 5 %")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import aiohttp
import pytest
from conftest_sim import READY, SPEC_ARGS, SimProc

from eagletui.bench.accept_by import accept_groups
from eagletui.commands.bench import main
from eagletui.commands.demo import free_port
from eagletui.core.events import BenchmarkResult, BenchmarkStarted, LaunchStarted
from eagletui.core.runs.accept_dist import describe, distribution, merge, modes, request_accept
from eagletui.core.runs.book import RunBook
from eagletui.session.export import build_report
from eagletui.session.export_render import render_json
from tests.conftest_sim import sim_profile_toml

TURN4 = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-turn4-shared" / "outputs"
ALIASES = {"spec_accepted_drafts", "spec_proposed_drafts", "spec_accept_histogram"}
SPEC_KEYS = {
    "spec_verify_ct",
    "spec_num_correct_drafts",
    "spec_num_proposed_drafts",
    "spec_accept_rate",
    "spec_accept_length",
    "spec_correct_drafts_histogram",
}


async def _final_meta(base: str, text: str, tokens: int = 41) -> dict:
    payload = {"text": text, "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}}
    async with aiohttp.ClientSession() as s, s.post(f"{base}/generate", json=payload) as r:
        assert r.status == 200
        return (await r.json())["meta_info"]


@pytest.mark.slow
@pytest.mark.parametrize(("version", "aliases"), [("0.5.17", True), ("0.5.20", True), ("0.5.23", False)])
async def test_sim_meta_info_keys_are_the_releases_own(version: str, aliases: bool) -> None:
    """0.5.17 and 0.5.20 still send the three FIXME aliases; 0.5.23 removed them (the wheel notes, §1.2).
    Before the fix the simulator sent the aliases whatever version it reported."""
    with SimProc([*SPEC_ARGS, "--sim-version", version, "--sim-speed", "8"]) as sim:
        sim.wait_for(READY)
        meta = await _final_meta(sim.base, "Explain a process.")
    spec = {k for k in meta if k.startswith("spec_")}
    assert spec == SPEC_KEYS | (ALIASES if aliases else set())
    assert sum(meta["spec_correct_drafts_histogram"]) == meta["spec_verify_ct"]


@pytest.mark.slow
async def test_sim_half_drafter_accepts_by_prompt_ending() -> None:
    """The "half" drafter: a prompt ending in "." accepts every draft token (steps + 1 = 4), one ending in
    "?" none (1.0), as the real pair of shared/known-drafters does; the simulator had no such drafter."""
    with SimProc([*SPEC_ARGS, "--sim-drafter", "half", "--sim-speed", "8", "--decode-log-interval", "1"]) as sim:
        sim.wait_for(READY)
        fits = await _final_meta(sim.base, "Write a short email.")
        misses = await _final_meta(sim.base, "Why is the sky blue?")
        cut = await _final_meta(sim.base, "Write a long email.", 40)
        # one request at a time, a decode line per verify: 1 + correct drafts per verify, so 4.00 or 1.00
        # and never the 3.00 of a cut verify's tokens (SGLang's update_spec_metrics counts its drafts)
        lens = {float(x) for x in re.findall(r"accept len: ([0-9.]+)", sim.text())}
    assert lens and lens <= {1.0, 4.0}, lens
    for meta, own in ((fits, 4.0), (misses, 1.0)):
        assert request_accept(meta["spec_verify_ct"], meta["spec_num_correct_drafts"], 41) == own
    assert fits["spec_correct_drafts_histogram"][-1] == fits["spec_verify_ct"]  # every verify kept 3
    assert misses["spec_correct_drafts_histogram"] == [misses["spec_verify_ct"]]  # every verify kept 0
    # 40 tokens: the prefill's 1, then 10 verifies of 4, the last cut to 3 by max_new_tokens; the real
    # server still counts its 3 drafts ([0, 0, 516] for 12 × 128 tokens at steps 2: the GPU's work pair,
    # fixtures/real-sglang-0.5.17-pair-work); the simulator had counted 2 ([0, 0, 1, 9])
    assert cut["spec_correct_drafts_histogram"] == [0, 0, 0, 10] and cut["spec_num_correct_drafts"] == 30


def test_request_accept_leaves_out_the_prefills_token() -> None:
    # 40 tokens: 1 from the prefill, 39 from 13 verifies of 3 each → 3.0, not SGLang's 40/13 = 3.08
    assert request_accept(13, 26, 40) == pytest.approx(3.0)
    assert request_accept(13, None, 40) == pytest.approx(3.0)  # no correct-draft count: (40 − 1) / 13
    assert request_accept(0, 0, 40) is None and request_accept(None, None, 40) is None


def test_distribution_modes_only_for_two_separated_groups() -> None:
    half = distribution([1.0] * 12 + [4.0] * 20)
    two = modes(half)
    assert two is not None and (two.low.n, two.high.n) == (12, 20)
    assert (two.low.mean, two.high.mean) == (1.0, 4.0)
    # a bell and a flat spread are one mode each, however they are split
    import random

    rng = random.Random(3)
    assert modes(distribution(max(1.0, rng.gauss(3.0, 0.4)) for _ in range(400))) is None
    assert modes(distribution(rng.uniform(1.0, 4.0) for _ in range(400))) is None
    # a lone outlier is no mode
    assert modes(distribution([3.1] * 30 + [1.0])) is None
    # repeats merge like the run's numbers: by adding
    merged = merge([half, half, {"n": 1, "sum": 2.0, "bins": [5]}])  # the damaged one is left out
    assert describe(merged)["n"] == 64 and describe(merged)["p50"] == 4.0


def _half_result(bench: int, launch: int = 1) -> list:
    """A benchmark of the half drafter as the client reports it: 20 requests ending in "." (4.0) and 12
    ending in "?" (1.0), the pooled accept 1.89 of run 3 (call3-hb-category.json)."""
    rows = [(20, "request", 128, 32, 4.0)] * 20 + [(22, "question", 128, 127, 1.0)] * 12
    by = accept_groups(rows)
    per = [ct / vc for _, _, ct, vc, _ in rows]
    return [
        BenchmarkStarted(bench=bench, launch=launch, workload={"concurrency": 4}, workload_fingerprint="w"),
        BenchmarkResult(
            bench=bench,
            launch=launch,
            output_throughput=1579.2,
            accept_length=1.8928,
            requests=32,
            workload_fingerprint="w",
            accept={"per_request_mean": sum(per) / len(per), "histogram": [1524, 0, 0, 640]},
            accept_by=by,
        ),
    ]


def _half_book() -> RunBook:
    book = RunBook()
    args = {"--model-path": "m", "--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3}
    for e in [LaunchStarted(launch=1, target="local", config={"model": "m", "args": args}), *_half_result(1)]:
        book.apply(e)
    return book


def test_bimodal_run_is_said_as_such_not_as_disagreeing_definitions() -> None:
    """Runs 3 and 4: the half drafter's run read "accept length by shown (1.89) and by per_request_mean
    (2.88) differ by more than 5 %". The requests accept 1.0 or 4.0: that is what is said."""
    fixture = json.loads((TURN4 / "call3-hb-category.json").read_text())
    cats = next(d for d in fixture["diagnosis"] if d["kind"] == "draft_by_category")["data"]["categories"]
    assert cats == {"request": {"accept": 4.0, "n": 20}, "question": {"accept": 1.0079, "n": 12}}
    info = _half_book().accept_definitions(1)
    assert "warning" not in info  # was: "… differ by more than 5 %"
    text = info["bimodal"]
    assert "bimodal: 12 requests near 1.00, 20 near 4.00" in text
    assert "the run's 1.89 lies between them" in text and "by category: question low, request high" in text
    assert info["per_request"]["modes"]["low"]["n"] == 12
    assert info["by_category"]["request"]["p50"] == 4.0 and info["by_category"]["question"]["p50"] == 1.0


def test_unimodal_disagreement_still_warns() -> None:
    book = RunBook()
    args = {"--model-path": "m", "--speculative-algorithm": "EAGLE3"}
    rows = [(20, "a", 100, 40, 2.5 + 0.01 * i) for i in range(16)]
    book.apply(LaunchStarted(launch=1, target="local", config={"model": "m", "args": args}))
    book.apply(BenchmarkStarted(bench=1, launch=1, workload={"concurrency": 1}))
    book.apply(
        BenchmarkResult(
            bench=1,
            launch=1,
            output_throughput=100.0,
            accept_length=2.5,
            requests=16,
            accept={"per_request_mean": 2.9},
            accept_by=accept_groups(rows),
        )
    )
    info = book.accept_definitions(1)
    assert "bimodal" not in info and "differ by more than 5 %" in info["warning"]


def test_exports_carry_the_per_request_distribution_and_its_splits() -> None:
    args = {"--model-path": "m", "--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3}
    events = [LaunchStarted(launch=1, target="local", config={"model": "m", "args": args}), *_half_result(1), *_half_result(2)]
    doc = json.loads(render_json(build_report(events)))
    acc = doc["runs"][0]["accept"]
    assert acc["per_request"]["n"] == 64 and acc["per_request"]["modes"]["high"]["n"] == 40
    assert set(acc["by_category"]) == {"question", "request"} and "bimodal" in acc


@pytest.mark.slow
def test_bench_against_the_half_drafter_reports_two_modes(tmp_path, capsys) -> None:
    """End to end: the real simulator with the half drafter, the built-in client, the run book."""
    # the category file of shared/known-drafters: the chat prompts by their last character
    chat = Path(__file__).resolve().parents[1] / "eagletui" / "bench" / "data" / "chat.jsonl"
    lines = [json.loads(x)["prompt"] for x in chat.read_text().splitlines() if x.strip()]
    cats = tmp_path / "cats.jsonl"
    cats.write_text(
        "".join(
            json.dumps({"prompt": p, "category": "request" if p.rstrip().endswith(".") else "question"}) + "\n"
            for p in lines
        )
    )
    rest = f'[bench]\nprompts = "{cats}"\nnum_prompts = 32\nconcurrency = 4\nmax_new_tokens = 33\nwarmup = 1'
    prof = sim_profile_toml(
        tmp_path, free_port(), args='sim-drafter = "half"\nsim-version = "0.5.17"', rest=rest, speed=20
    )
    rc = main(["local", "--profile", prof, "--launch", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    cats = next(d for d in data["diagnosis"] if d["kind"] == "draft_by_category")["data"]["categories"]
    assert cats["request"]["accept"] > 3.5 and cats["question"]["accept"] < 1.2
    assert "accept length per request is bimodal: 12 requests near 1.00, 20 near 4.00" in json.dumps(data)


def test_the_terminal_report_says_the_per_request_distribution_and_its_two_modes(capsys) -> None:
    from eagletui.commands._bench_report import _print_accept

    _print_accept(
        {
            "per_request": {"n": 32, "mean": 2.88, "p10": 1.0, "p50": 4.0, "p90": 4.0},
            "bimodal": "accept length per request is bimodal: 12 requests near 1.00, 20 near 4.00",
        }
    )
    out = capsys.readouterr().out
    assert "accept per request n 32  p10 1.00  p50 4.00  p90 4.00" in out
    assert "  accept length per request is bimodal: 12 requests near 1.00, 20 near 4.00" in out
    _print_accept({})
    assert capsys.readouterr().out == ""
