"""Issue 19: the answer to "is EAGLE-3 worth it on this host?" must be right.

One test per wrong answer the issue saw (each fails on the main it was filed against), on folded
events: the run book, the exports, ``eagletui sessions``' summary and the Tune tab's staged config
all read the same fold, so each answer is checked in every view that shows it."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from eagletui.core import events as ev
from eagletui.core.cycle.economics import economics
from eagletui.core.cycle.model import SpecSettings
from eagletui.core.profile.model import Verdict
from eagletui.core.runs.book import RunBook
from eagletui.core.servers.spec import without_speculation
from eagletui.core.sweep.effects import Effect
from eagletui.session.export import build_report
from eagletui.session.export_render import render_csv, render_json, render_markdown
from eagletui.session.record import Recorder

MODEL = "moonshotai/Kimi-K2.5"
SPEC = {
    "--model-path": MODEL,
    "--tp-size": 8,
    "--speculative-algorithm": "EAGLE3",
    "--speculative-draft-model-path": "lmsys/Kimi-K2.5-EAGLE3",
    "--speculative-num-steps": 3,
    "--speculative-eagle-topk": 1,
    "--speculative-num-draft-tokens": 4,
}
NOSPEC = without_speculation(SPEC)
EXAMPLES = Path(__file__).resolve().parents[1] / "sessions"


class Session:
    """Builds a session's events the way the live workspace emits them."""

    def __init__(self) -> None:
        self.events: list[ev.Event] = []
        self.t = 1000.0
        self.bench = 0

    def at(self) -> dict[str, float]:
        self.t += 1.0
        return {"wall": 1.8e9 + self.t, "mono": self.t}

    def launch(self, n: int, args: dict, env: dict | None = None, verdict: dict | None = None) -> None:
        cfg = {"target": "local", "model": MODEL, "tp": 8, "args": dict(args), "env": dict(env or {})}
        if verdict:
            cfg["verdict"] = verdict
        self.events.append(ev.LaunchStarted(launch=n, target="local", config=cfg, **self.at()))
        self.events.append(ev.ServerReady(launch=n, **self.at()))

    def result(self, n: int, tok: float, acc: float | None = None, conc: int = 4, **kw) -> None:
        self.bench += 1
        wl = {"concurrency": conc, "num_prompts": kw.pop("num_prompts", 12), "max_new_tokens": 128}
        fp = f"w-c{conc}"
        self.events.append(
            ev.BenchmarkStarted(bench=self.bench, launch=n, workload=wl, workload_fingerprint=fp, **self.at())
        )
        for extra in kw.pop("during", []):
            self.events.append(extra)
        fields = {"requests": 12, "workload_fingerprint": fp}
        fields.update(kw)
        # 100 tokens a request: a duration that fits the count (the gate checks tokens ≤ requests × max)
        fields.setdefault("duration_s", 100.0 * max(fields["requests"], 1) / tok if tok else 0.0)
        self.events.append(
            ev.BenchmarkResult(
                bench=self.bench, launch=n, output_throughput=tok, accept_length=acc, **fields, **self.at()
            )
        )

    def book(self, verdict: Verdict | None = None) -> RunBook:
        b = RunBook(verdict)
        for e in self.events:
            b.apply(e)
        return b


def _demo_flow() -> Session:
    """The README's demo flow: spec (PCIe), an NCCL change, no-spec, --sim-host h200-nvlink spec and no-spec."""
    s = Session()
    pcie, nvl = {"--sim-host": "pcie-rtx6000"}, {"--sim-host": "h200-nvlink"}
    s.launch(1, {**SPEC, **pcie}, {"NCCL_ALGO": "Ring"})
    s.result(1, 240.0, 3.2)
    s.launch(2, {**SPEC, **pcie}, {"NCCL_ALGO": "Tree"})
    s.result(2, 232.0, 3.2)
    s.launch(3, {**NOSPEC, **pcie}, {"NCCL_ALGO": "Tree"})
    s.result(3, 330.0)
    s.launch(4, {**SPEC, **nvl}, {"NCCL_ALGO": "Tree"})
    s.result(4, 2950.0, 3.2)
    s.launch(5, {**NOSPEC, **nvl}, {"NCCL_ALGO": "Tree"})
    s.result(5, 1610.0)
    return s


# 1 ---------------------------------------------------------------------------- the right machine


def test_each_spec_run_pairs_with_the_no_spec_run_of_its_own_host_in_every_view(tmp_path: Path) -> None:
    s = _demo_flow()
    book = s.book()
    assert book.reference(2).label == "#3" and book.reference(2).like_for_like
    assert (
        book.reference(4).label == "#5" and book.reference(4).like_for_like
    )  # not the later/earlier PCIe one
    # run 1 has no exact counterpart (its NCCL_ALGO differs): the nearest is named with what differs
    ref1 = book.reference(1)
    assert ref1.label == "#3" and ref1.differences == ("NCCL_ALGO (Ring vs Tree)",)
    # shown with what differs, never judged (issue 32): no ratio, no verdict on it
    assert "unjudged: differs in NCCL_ALGO (Ring vs Tree)" in book.economics_sentence(1)
    assert book.economics(1) is None
    assert book.economics(4).speedup == pytest.approx(2950 / 1610)
    assert book.economics(2).speedup == pytest.approx(232 / 330)
    # the exports say the same pairs
    report = build_report(s.events)
    data = json.loads(render_json(report))
    assert [r["economics_vs"] for r in data["runs"]] == [3, 3, None, 5, None]
    assert data["runs"][3]["comparisons"]["vs_no_spec"]["run"] == "#5"
    assert data["runs"][0]["economics"]["differences"] == ["NCCL_ALGO (Ring vs Tree)"]
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert [r["economics_vs"] for r in rows] == ["3", "3", "", "5", ""]
    assert float(rows[3]["speedup"]) == pytest.approx(2950 / 1610, abs=1e-3)
    assert "economics vs no-spec #5 at concurrency 4: speedup 1.83×" in render_markdown(report)
    # and eagletui sessions
    from eagletui.session.index import ReplaySource

    path = tmp_path / "flow.jsonl"
    with Recorder(path, target="local", profile_name="demo") as rec:
        for e in s.events:
            rec.write(e)
    with ReplaySource.open(path) as src:
        pairs = {p["spec"]: (p["no_spec"], p["like_for_like"]) for p in src.summary().spec_pairs}
    assert pairs == {1: ("#3", False), 2: ("#3", True), 4: ("#5", True)}


def test_a_spec_run_without_a_same_host_no_spec_run_names_the_difference() -> None:
    s = Session()
    s.launch(1, {**NOSPEC, "--sim-host": "pcie-rtx6000"})
    s.result(1, 330.0)
    s.launch(2, {**SPEC, "--sim-host": "h200-nvlink"})
    s.result(2, 2950.0, 3.2)
    book = s.book()
    ref = book.reference(2)
    assert not ref.like_for_like and ref.differences == ("--sim-host (h200-nvlink vs pcie-rtx6000)",)
    sentence = book.economics_sentence(2)
    assert "of no-spec #1 at concurrency 4 — unjudged: differs in --sim-host (h200-nvlink vs pcie-rtx6000)" in sentence
    # a no-spec run of another config judges nothing about speculation: no pass on it
    book.verdict = Verdict(min_spec_speedup=1.0)
    assert not any("vs no-spec" in r for r in book.verdict_for(2)[1])
    assert book.alarms(2) == []


def test_a_pinned_no_spec_baseline_follows_the_same_rule() -> None:
    s = _demo_flow()
    book = s.book()
    book.pin_baseline(3)  # the PCIe no-spec run
    assert book.reference(4).label == "#5"  # the NVLink spec run still pairs with its own host


# 2 ------------------------------------------------------------------------------ one "no-spec"


def test_one_meaning_of_no_spec_for_the_toggle_bench_and_sweeps(tmp_path: Path) -> None:
    from eagletui.commands.bench import without_speculation as bench_nospec
    from eagletui.commands.demo import write_demo_profile
    from eagletui.core.profile.load import load_profile
    from eagletui.core.profile.staged import StagedConfig
    from eagletui.core.profile.sweep import Variant, variant_profile

    prof = load_profile(write_demo_profile(tmp_path))
    staged = StagedConfig(prof)
    assert staged.stage("arg:--speculative-algorithm", None) is None
    toggled = staged.preview()
    assert not any(k.startswith("--speculative-") for k in toggled.args)
    assert toggled.args == bench_nospec(prof).args
    assert (
        variant_profile(prof, Variant("no spec", {"arg:--speculative-algorithm": None})).args == toggled.args
    )
    # the Tune tab shows the flags that go with it
    steps = prof.toggle("arg:--speculative-num-steps")
    assert staged.implied(steps) == (True, None)
    # turning it back on brings the drafter back (a spec → no-spec → spec session)
    staged.applied(["arg:--speculative-algorithm"])
    staged.rebase(toggled)
    assert staged.stage("arg:--speculative-algorithm", "EAGLE3") is None
    again = staged.preview()
    assert again.args["--speculative-draft-model-path"] == prof.args["--speculative-draft-model-path"]
    assert again.args["--speculative-num-steps"] == 3


# 3 ------------------------------------------------------------------------ per concurrency


def test_numbers_are_per_concurrency_never_a_mean_across_them() -> None:
    s = Session()
    s.launch(1, SPEC)
    s.result(1, 61.8, 3.2, conc=1)
    s.result(1, 333.5, 3.2, conc=8)
    s.launch(2, NOSPEC)
    s.result(2, 86.0, conc=1)
    s.result(2, 260.0, conc=8)
    book = s.book()
    row = book.row(1)
    assert row.tok_s.mean == pytest.approx(333.5) and row.tok_s.stdev is None and row.concurrency == 8
    table = book.concurrency_table(1)
    assert [(r.concurrency, r.spec_tok_s.mean, r.nospec_tok_s.mean) for r in table] == [
        (1, 61.8, 86.0),
        (8, 333.5, 260.0),
    ]
    assert not table[0].economics.pays and table[1].economics.pays
    assert "Starts paying at concurrency 8." in book.economics_sentence(1)
    # bench's summary of the same launch: one line per concurrency, no top-level mean
    from eagletui.commands._bench_report import summarize_repeats
    from eagletui.core.profile.model import Profile

    summary = summarize_repeats(book.runs[1].results, Profile(name="p"), "local", book.runs[1])
    assert summary["output_throughput"] is None
    assert [(g["concurrency"], g["output_throughput"]) for g in summary["by_concurrency"]] == [
        (1, 61.8),
        (8, 333.5),
    ]
    data = json.loads(render_json(build_report(s.events)))
    assert [c["concurrency"] for c in data["runs"][0]["by_concurrency"]] == [1, 8]
    assert data["runs"][0]["tok_s"]["mean"] == pytest.approx(333.5)


# 4 ---------------------------------------------------------------------- break-even in reach


def test_a_break_even_beyond_what_the_settings_accept_is_out_of_reach_not_a_goal() -> None:
    e = economics(61.8, 3.2, 86.0, settings=SpecSettings(steps=3, topk=1))
    assert e.max_accept == 4 and e.break_even_accept_len > 4 and e.reachable is False
    assert "is out of reach. At most 4 tokens per verify" in e.sentence() and "needs accept ≥" not in e.sentence()
    # topk 1: at most --speculative-num-draft-tokens, whatever steps says
    assert SpecSettings(steps=5, topk=1, draft_tokens=4).max_accept == 6  # SGLang makes it steps + 1
    assert SpecSettings(steps=5, topk=4, draft_tokens=4).max_accept == 4


def test_the_cycle_grows_with_the_drafter_so_a_poor_drafter_break_even_is_no_target() -> None:
    """The demo's PCIe numbers: the good drafter accepts 3.17 and still loses; the break-even of the poor
    one must not read as something a better drafter would reach at the same cycle."""
    s = Session()
    s.launch(1, NOSPEC)
    s.result(1, 328.0)
    s.launch(2, SPEC)
    s.result(2, 223.3, 3.17)
    s.launch(3, {**SPEC, "--speculative-draft-model-path": "someone/Kimi-K2.5-EAGLE3-weak"})
    s.result(3, 173.5, 1.52)
    book = s.book()
    poor, good = book.economics(3), book.economics(2)
    assert poor.parts.per_token_ms > 0 and "two drafters" in poor.parts.source
    for e in (poor, good):
        assert e.break_even_accept_len is None or e.break_even_accept_len > good.accept_len
    assert "no accept length pays" in book.economics_sentence(3)


# 5 --------------------------------------------------------------------------- honest verdicts


def test_a_spec_baseline_does_not_make_a_spec_run_slower_than_no_spec_pass() -> None:
    s = Session()
    v = {"min_speedup": 1.0}
    s.launch(1, SPEC, verdict=v)
    s.result(1, 230.0, 3.2)
    s.launch(2, {**SPEC, "--enable-flashinfer-allreduce-fusion": True}, verdict=v)
    s.result(2, 244.0, 3.2)
    s.launch(3, NOSPEC, verdict=v)
    s.result(3, 330.0)
    s.launch(4, {**NOSPEC, "--enable-flashinfer-allreduce-fusion": True}, verdict=v)
    s.result(4, 352.0)
    book = s.book()
    verdict, reasons = book.verdict_for(2)
    assert verdict == "fail"
    assert any("vs no-spec #4" in r and "0.69×" in r for r in reasons), reasons
    # the other comparison, under its own name, beside it
    comparisons = build_report(s.events).records[1].comparisons
    assert comparisons["vs_baseline"]["run"] == "#1" and comparisons["vs_no_spec"]["run"] == "#4"
    assert comparisons["vs_baseline"]["delta_tok_s_pct"] == pytest.approx(244 / 230 * 100 - 100)


def test_one_repeat_says_no_noise_estimate_and_a_small_shortfall_is_not_a_fail() -> None:
    s = Session()
    s.launch(1, NOSPEC, verdict={"min_speedup": 1.0})
    s.result(1, 100.0)
    s.launch(2, {**NOSPEC, "--enable-flashinfer-allreduce-fusion": True}, verdict={"min_speedup": 1.0})
    s.result(2, 97.4)
    verdict, reasons = s.book().verdict_for(2)
    assert verdict == "pass" and "1 run, no noise estimate" in reasons[0] and "bench.repeats" in reasons[0]


def test_the_sweep_prints_the_band_its_rule_used() -> None:
    inside = Effect("env:NCCL_ALGO", "Ring", "Tree", 3.1, 2.4, 2)
    outside = Effect("env:NCCL_ALGO", "Ring", "Tree", -5.1, 2.4, 2)
    assert inside.clear is False and inside.band_text() == "noise band ±4.8 % (2σ): within noise"
    assert outside.clear is True and outside.band_text() == "noise band ±4.8 % (2σ): outside"
    assert inside.to_dict()["band_pct"] == pytest.approx(4.8)


# 6 ------------------------------------------------------------------------- the first valid run


def test_the_auto_baseline_is_the_first_valid_run_in_every_view(tmp_path: Path) -> None:
    s = Session()
    s.launch(1, SPEC)
    s.events.append(ev.ServerFailed(launch=1, kind="oom", message="CUDA out of memory", **s.at()))
    s.launch(2, SPEC)  # never benchmarked
    s.launch(3, SPEC)
    s.result(3, 50.0, 3.0, failed=40, requests=2)  # invalid: most requests failed
    s.launch(4, SPEC)
    s.result(4, 230.0, 3.2)
    s.launch(5, SPEC)
    s.result(5, 240.0, 3.2)
    book = s.book()
    assert book.baseline == 4 and book.row(5).deltas["tok_s"].pct == pytest.approx(240 / 230 * 100 - 100)
    report = build_report(s.events)
    assert report.baseline == 4 and [r.is_baseline for r in report.records] == [
        False,
        False,
        False,
        True,
        False,
    ]
    path = tmp_path / "s.jsonl"
    with Recorder(path, target="local", profile_name="p") as rec:
        for e in s.events:
            rec.write(e)
    from eagletui.session.index import ReplaySource

    with ReplaySource.open(path) as src:
        summary = src.summary()
    assert summary.baseline_launch == 4 and summary.baseline_tok_s == pytest.approx(230.0)
    assert summary.invalid == [{"launch": 3, "reason": "40 of 42 requests failed"}]
    with pytest.raises(ValueError, match="cannot be the baseline"):
        book.pin_baseline(3)


# 7 ------------------------------------------------------------------------ exports keep verdicts


def test_exports_carry_the_verdict_reasons_and_comparison_of_the_shipped_demo() -> None:
    from eagletui.session.format import read_session

    _header, events, _ = read_session(EXAMPLES / "demo-eagle3.jsonl")
    report = build_report(events)
    data = json.loads(render_json(report))
    verdicts = [r["verdict"] for r in data["runs"]]
    assert verdicts[1:] == ["fail", "fail", "fail"], verdicts
    r2 = data["runs"][1]
    assert r2["reasons"] and "vs no-spec #1" in " ".join(r2["reasons"])
    assert r2["comparisons"]["vs_no_spec"]["run"] == "#1"
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert [r["verdict"] for r in rows][1:] == ["fail", "fail", "fail"] and rows[1]["reasons"]
    assert "- verdict: **fail**: speedup 0.68×" in render_markdown(report)


# 8 ------------------------------------------------------------------------ a lost benchmark


def test_a_benchmark_that_lost_most_requests_is_invalid_and_the_ui_says_so() -> None:
    from eagletui.ui.repaint import compare_text

    s = Session()
    s.launch(1, SPEC)
    s.result(
        1,
        221.8,
        3.25,
        requests=8,
        failed=192,
        num_prompts=200,
        error="192 request(s) failed: connection failed",
    )
    book = s.book(Verdict(min_accept_len=2.0))
    verdict, reasons = book.verdict_for(1)
    assert verdict == "invalid" and reasons[0].startswith("192 of 200 requests failed")
    assert book.baseline is None and not book.row(1).is_baseline
    line = compare_text(book).plain
    assert "invalid: 192 of 200 requests failed" in line and "baseline" not in line


# the validity gate, cause by cause --------------------------------------------------------------


@pytest.mark.parametrize(
    ("during", "kw", "why"),
    [
        ([ev.ProcessExited(launch=1, code=-9)], {}, "the server process exited during the run (code -9)"),
        (
            [ev.ServerFailed(launch=1, kind="died", message="x")],
            {},
            "the server failed during the run (died)",
        ),
        ([ev.LaunchDetected(launch=1, args={})], {}, "the server restarted during the run"),
        (
            [ev.ConnectionState(state="lost", detail="reset")],
            {},
            "the link to the host dropped during the run",
        ),
        ([], {"requests": 0, "failed": 0}, "no tokens measured"),
        ([], {"accept": {"correct_drafts": 0}}, "the drafter is not working"),
        ([], {"duration_s": 1e6}, "impossible count"),
        ([], {"requests": 6}, "incomplete: 6 of 12 requests sent"),
    ],
)
def test_each_validity_cause_makes_the_run_invalid_with_its_reason(during, kw, why) -> None:
    s = Session()
    s.launch(1, SPEC)
    s.result(1, 230.0, kw.pop("acc", 3.2), during=during, **kw)
    verdict, reasons = s.book().verdict_for(1)
    assert verdict == "invalid" and reasons[0].startswith(why), reasons


def test_accept_of_one_with_speculation_on_and_an_impossible_accept_are_invalid() -> None:
    for acc, why in ((1.0, "the drafter is not working"), (10_000_000.0, "impossible accept length")):
        s = Session()
        s.launch(1, SPEC)
        s.result(1, 230.0, acc)
        assert s.book().verdict_for(1) == ("invalid", [s.book().verdict_for(1)[1][0]])
        assert s.book().verdict_for(1)[1][0].startswith(why)


def test_a_workload_or_concurrency_unlike_the_baseline_makes_the_comparison_invalid() -> None:
    s = Session()
    s.launch(1, NOSPEC, verdict={"min_speedup": 1.0})
    s.result(1, 330.0, conc=4)
    s.launch(2, NOSPEC, verdict={"min_speedup": 1.0})
    s.result(2, 600.0, conc=8)
    book = s.book()
    verdict, reasons = book.verdict_for(2)
    assert (
        verdict == "invalid"
        and "not comparable vs baseline #1" in reasons[0]
        and "(concurrency 8 vs 4)" in reasons[0]
    )
    assert book.baseline == 1  # the run itself is valid: it could be a baseline


# accept length, defined ---------------------------------------------------------------------------


def test_accept_definitions_their_disagreement_and_acceptance_per_position() -> None:
    s = Session()
    s.launch(1, SPEC)
    s.result(1, 230.0, 3.0, accept={"histogram": [10, 20, 30, 40]})
    s.launch(2, SPEC)
    detail = {
        "formula": "Σ completion_tokens ÷ Σ spec_verify_ct over 12 requests (pooled)",
        "source": "meta_info of each final answer",
        "per_request_mean": 3.4,
        "from_drafts": 3.18,
        "histogram": [20, 20, 30, 30],
    }
    s.result(2, 230.0, 3.2, accept=detail)
    book = s.book()
    info = book.accept_definitions(2)
    assert set(info["definitions"]) == {"shown", "per_request_mean", "from_drafts"}
    assert info["definitions"]["shown"]["formula"].startswith("Σ completion_tokens ÷ Σ spec_verify_ct")
    assert "differ by more than 5 %" in info["warning"]
    assert info["per_position"] == [0.8, 0.6, 0.3]
    assert book.position_deltas(2) == [-10.0, -10.0, -10.0]  # vs the baseline run #1 (0.9, 0.7, 0.4)
    assert any("differ by more than 5 %" in w for w in book.warnings(2))
    data = json.loads(render_json(build_report(s.events)))
    assert data["runs"][1]["accept"]["per_position_delta_pp"] == [-10.0, -10.0, -10.0]


# 10 ------------------------------------------------------------------------- the simulator's hosts


def test_an_h200_decodes_faster_than_an_rtx_pro_6000_at_every_batch_size() -> None:
    from eagletui.sim import perf

    base = {"tp_size": 8, "model_path": MODEL}
    spec = {
        **base,
        "speculative_algorithm": "EAGLE3",
        "speculative_num_steps": 3,
        "speculative_eagle_topk": 1,
    }
    for bs in (1, 4, 8, 32):
        h200 = perf.throughput(perf.PerfConfig.from_args({**base, "sim_host": "h200-nvlink"}), bs)
        rtx = perf.throughput(perf.PerfConfig.from_args({**base, "sim_host": "pcie-rtx6000"}), bs)
        assert h200 > 2 * rtx, bs
    # the weight-bound compute part too, not only the all-reduce
    cats = {h: perf.expected({**base, "sim_host": h})["step_ms_by_category"] for h in perf.HOSTS}
    assert all(cats["h200-nvlink"][c] < cats["pcie-rtx6000"][c] for c in ("gemm", "moe", "communication"))
    # the seed's PCIe figures stay: ≈ 86 tok/s no-spec, ≈ 62 good drafter single-stream
    assert perf.expected({**base})["single_stream_tok_s"] == pytest.approx(86.2, abs=0.5)
    assert perf.expected({**spec})["single_stream_tok_s"] == pytest.approx(62.0, abs=0.5)
    # what the README says about NVLink
    ratio = (
        perf.expected({**spec, "sim_host": "h200-nvlink"})["single_stream_tok_s"]
        / perf.expected({**base, "sim_host": "h200-nvlink"})["single_stream_tok_s"]
    )
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert f"about {ratio:.1f}×" in readme


def test_the_cycle_model_takes_its_split_from_the_step_profile() -> None:
    """The profiler's draft / verify / draft extend GPU time per cycle splits the measured cycle."""
    s = Session()
    s.launch(1, NOSPEC)
    s.result(1, 330.0)
    s.launch(2, SPEC)
    s.result(2, 240.0, 3.2)
    parts = {"draft": {"gpu_ms": 3.0}, "verify": {"gpu_ms": 10.0}, "draft_extend": {"gpu_ms": 37.0}}
    s.events.append(ev.ProfileCaptured(launch=2, summary={"unit": "cycle", "steps": 5, "parts": parts}))
    e = s.book().economics(2)
    cycle = 1000 * 3.2 / (240 / 4)
    # the GPU spans, and the gap to the measured cycle once per forward (3 drafts, verify, extend)
    gap = (cycle - 50) / 5
    assert e.parts.source == "step profile's spans + the gap to the measured cycle per forward"
    assert e.parts.verify_ms == pytest.approx(10 + gap)
    assert e.parts.draft_step_ms == pytest.approx(3 / 3 + gap)
    assert e.parts.per_token_ms == pytest.approx((37 + gap) / 3.2)
    assert e.parts.cycle_ms(e.settings, 3.2) == pytest.approx(cycle)
