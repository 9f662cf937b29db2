"""Issue 25 item 5: the next launch predicted from one spec run, on the cycle model of issue 19, and checked
against what that launch then measured; on the real sglang 0.5.17 numbers of the lent H200 first."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from eagletui.core import events as ev
from eagletui.core.cycle.fit import fit_parts
from eagletui.core.cycle.model import SpecSettings
from eagletui.core.diagnosis.fold import Diagnoser
from eagletui.core.predict.bases import timed_groups
from eagletui.core.predict.checks import checks
from eagletui.core.predict.next_launch import explain, prediction_diagnoses
from eagletui.core.predict.ranking import adaptive_config, forecasts
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.economics import profile_parts

RUN1 = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-run1"


def _launch(
    book: RunBook, n: int, args: dict[str, Any], rows: list[tuple[int, float, float | None]], fp: list[str]
) -> None:
    book.apply(
        ev.LaunchStarted(launch=n, target="local", config={"args": args, "env": {}, "target": "local"})
    )
    book.apply(ev.ServerReady(launch=n))
    for i, (c, tok, acc) in enumerate(rows):
        b = 10 * n + i
        book.apply(ev.BenchmarkStarted(bench=b, launch=n, workload={"concurrency": c}))
        book.apply(
            ev.BenchmarkResult(
                bench=b,
                launch=n,
                output_throughput=tok,
                accept_length=acc,
                requests=12,
                duration_s=2.0,
                workload_fingerprint=fp[i],
            )
        )


def _real_book(with_nospec: bool = True) -> RunBook:
    """The real runs: `bench --vs-no-spec --concurrency 1,4` (spec steps 3 and its no-spec counterpart)
    and the sweep's `--speculative-num-steps 2` variant at concurrency 4 (outputs/d-… and f-…)."""
    d = json.loads((RUN1 / "outputs" / "d-vs-no-spec.out").read_text())
    f = json.loads((RUN1 / "outputs" / "f-sweep.out").read_text())
    spec, nospec, fps = d["config"]["args"], d["no_spec"]["config"]["args"], d["workload_fingerprint"]
    book = RunBook()
    _launch(
        book,
        1,
        spec,
        [(r["concurrency"], r["output_throughput"], r["accept_length"]) for r in d["by_concurrency"]],
        fps,
    )
    if with_nospec:
        _launch(
            book,
            2,
            nospec,
            [(r["concurrency"], r["output_throughput"], None) for r in d["no_spec"]["by_concurrency"]],
            fps,
        )
    steps2 = {**spec, "--speculative-num-steps": 2, "--speculative-num-draft-tokens": 3}
    v = f["variants"][1]
    assert v["name"] == "steps 2"
    _launch(book, 3, steps2, [(4, v["tok_s"], v["accept_length"])], [fps[1]])
    return book


def test_real_accept_one_runs_still_time_their_cycles() -> None:
    book = _real_book()
    run = book.runs[1]
    assert run.good_results == []  # the validity gate: the random-weight drafter accepts nothing
    assert [g.concurrency for g in timed_groups(run)] == [1, 4]  # … but each cycle was timed truly


def test_real_steps_change_predicted_from_the_spec_and_no_spec_runs() -> None:
    book = _real_book()
    ck = checks(book, 3)
    assert len(ck) == 1 and ck[0].concurrency == 4 and ck[0].source_launch == 1
    assert ck[0].measured == pytest.approx(1060.69, abs=0.01)
    # the estimate's centre is the middle of its band (a draft step half of all drafting): −10.5 % here,
    # where this session's steps cost 0.57-0.9 of all drafting; the band (all fixed … all drafting) holds
    # the measurement (issue 32: "all drafting", +3.0 % here, was 25.7 % off on average on the grid)
    assert ck[0].predicted == pytest.approx(949.6, abs=1.0)
    assert abs(ck[0].error_pct) < 11
    (f,) = [f for f in forecasts(book, 1)[0] if f.label == "steps 2" and f.concurrency == 4]
    assert f.floor < ck[0].measured < f.ceiling
    diag = {d.kind: d for d in prediction_diagnoses(book, 3)}["prediction_check"]
    assert "steps 2 at concurrency 4: predicted 949.6 tok/s from #1, measured 1060.7 (-10.5 %)" in diag.text


def test_real_steps_and_no_spec_predicted_from_the_real_trace() -> None:
    """No no-spec run: the parts come from the real trace of the same server (profiler cycle parts). The
    3 draft steps are one CUDA-graph replay with 0.12 ms of kernels in a 3.9 ms cycle, so one step fewer
    is predicted a few per cent faster, not the +20 % a split of the whole cycle over the forwards gave."""
    from eagletui.profiler import summarize_file
    from eagletui.profiler.summary import step_breakdown

    trace = next(RUN1.glob("*-TP-0-DECODE.trace.json.gz"))
    summary = step_breakdown([summarize_file(str(trace))])
    assert set(summary["parts"]) >= {"draft", "verify", "draft_extend"}
    assert summary["parts"]["draft"]["forwards"] == 0  # graph-replayed: no eager forwards nested
    book = _real_book(with_nospec=False)
    book.apply(ev.ProfileCaptured(launch=1, summary=summary))
    ck = checks(book, 3)
    assert len(ck) == 1 and "one CUDA-graph replay" in ck[0].source, ck
    from eagletui.core.predict.bases import timed_groups

    base = next(g for g in timed_groups(book.runs[1]) if g.concurrency == 4).metric("tok_s").mean
    # a few per cent at most, not +20 %: the GPU idles 1.2-1.5 ms profiled after this trace's draft replay,
    # so one forward fewer saves no GPU time (overlap, issue 32); the band's additive edge keeps +3 %
    assert base is not None and 0.99 < ck[0].predicted / base < 1.05
    assert ck[0].band is not None and ck[0].band[1] / base > 1.02
    off = [f for f in forecasts(book, 1)[0] if f.settings is None]
    d = json.loads((RUN1 / "outputs" / "d-vs-no-spec.out").read_text())
    measured = {r["concurrency"]: r["output_throughput"] for r in d["no_spec"]["by_concurrency"]}
    for f in off:
        assert not f.measured and f.source.startswith("estimate")
        assert abs(f.tok_s / measured[f.concurrency] - 1) < 0.15, (
            f.concurrency,
            f.tok_s,
            measured[f.concurrency],
        )


RUN3 = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-run3"


def _real_launches() -> dict[str, list[float]]:
    """tok/s at concurrency 4 of every steps 3 and steps 2 launch on the lent H200 (32 × 256-token
    benchmarks in run3, 12 × 128 before), one benchmark a launch (the random-weight drafter's runs are
    not repeated): run1's --vs-no-spec and sweep, run2's final sweep, run3's four sweeps."""
    out: dict[str, list[float]] = {"steps 3": [], "steps 2": []}
    d = json.loads((RUN1 / "outputs" / "d-vs-no-spec.out").read_text())
    out["steps 3"] += [r["output_throughput"] for r in d["by_concurrency"] if r["concurrency"] == 4]
    f = json.loads((RUN1 / "outputs" / "f-sweep.out").read_text())
    out["steps 2"].append(f["variants"][1]["tok_s"])
    sweeps = [
        Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-run2" / "outputs" / "final-f-sweep.json"
    ]
    sweeps += sorted((RUN3 / "outputs").glob("call*-f-sweep.json"))
    for p in sweeps:
        for v in json.loads(p.read_text())["variants"]:
            key = (
                "steps 3"
                if v["name"].startswith("steps 3")
                else "steps 2"
                if v["name"].startswith("steps 2")
                else None
            )
            if key:
                out[key] += [r["tok_s"] for c in v["cells"] for r in c["repeats"]]
    return out


def test_real_step_change_predicted_within_ten_percent_of_the_launches_mean() -> None:
    """The lent H200: one setting's tok/s moves ±13-16 % between launches (and within one: a launch's
    decode lines went 807 → 1172 tok/s), so no single launch can check a ±10 % prediction; the means of the
    seven steps-3 and eight steps-2 launches can. The step profile of a steps 3 launch (run3, call 2) predicts
    steps 2 from the steps 3 launches' mean within ±10 % of the steps 2 launches' mean."""
    from eagletui.core.cycle.fit import fit_parts
    from eagletui.core.cycle.model import SpecSettings
    from eagletui.core.runs.economics import profile_parts
    from eagletui.profiler import summarize_file
    from eagletui.profiler.summary import step_breakdown

    runs = _real_launches()
    assert len(runs["steps 3"]) == 7 and len(runs["steps 2"]) == 8, runs
    mean = {k: sum(v) / len(v) for k, v in runs.items()}
    spread = {k: (max(v) - min(v)) / mean[k] for k, v in runs.items()}
    assert min(spread.values()) > 0.2  # why a single launch cannot check ±10 %
    trace = next(RUN3.glob("*-TP-0-DECODE.trace.json.gz"))
    split = profile_parts(step_breakdown([summarize_file(str(trace))]), 4)
    cycle3 = 1000.0 * 4 / mean["steps 3"]  # accept 1.01: a token a cycle per stream
    parts = fit_parts(SpecSettings(steps=3), cycle3, 1.0, math.nan, profile=split)
    assert parts is not None and "one CUDA-graph replay" in parts.source
    predicted = mean["steps 3"] * parts.cycle_ms(SpecSettings(3), 1.0) / parts.cycle_ms(SpecSettings(2), 1.0)
    error = predicted / mean["steps 2"] - 1
    assert abs(error) < 0.10, (predicted, mean, error)


def test_next_launch_is_shown_as_a_prediction_and_exported_as_adaptive_config() -> None:
    book = _real_book()
    nxt = {d.kind: d for d in prediction_diagnoses(book, 1)}["next_launch"]
    # the launch, its benchmarks and the no-spec run the recommendation rests on, named first
    assert nxt.text.startswith("what to launch next (predicted from #1 steps 3, "), nxt.text
    assert ", no-spec #2): at concurrency " in nxt.text, nxt.text
    assert nxt.data["built_on"]["launch"] == 1 and nxt.data["built_on"]["nospec_launch"] == 2
    assert "speculation off (measured 2727.6 tok/s" in nxt.text  # the no-spec run's own number, not a guess
    assert "(pred.)" in nxt.evidence and nxt.source == "model"
    assert nxt.hint == "(unset --speculative-algorithm)"
    # speculation off is best at every concurrency: that is the answer, not an adaptive config
    assert adaptive_config(book, 1) is None
    rows = nxt.data["forecasts"]
    assert {r["setting"] for r in rows} >= {"steps 1", "steps 2", "steps 4", "speculation off"}
    assert all(r["measured"] == (r["setting"] == "speculation off") for r in rows)


def _exact_book(host_ms: dict[str, float]) -> RunBook:
    """Results of an exact cycle model: draft d per step, verify v, extend e per accepted token, accept
    per position 0.8; spec steps 3 at concurrency 1, then steps 2 and 4 measured."""
    d, v, e = host_ms["d"], host_ms["v"], host_ms["e"]

    def tok(steps: int) -> tuple[float, float]:
        a = sum(0.8**k for k in range(steps + 1))
        return 1000.0 * a / (steps * d + v + a * e), a

    book = RunBook()
    base = {"--model-path": "m", "--speculative-algorithm": "EAGLE3", "--speculative-eagle-topk": 1}
    for n, steps in ((1, 3), (2, 2), (3, 4)):
        t, a = tok(steps)
        _launch(book, n, {**base, "--speculative-num-steps": steps}, [(1, t, a)], ["fp"])
    a3 = tok(3)[1]
    book.apply(
        ev.ProfileCaptured(
            launch=1,
            summary={
                "unit": "cycle",
                "parts": {
                    "draft": {"gpu_ms": 3 * d},
                    "verify": {"gpu_ms": v},
                    "draft_extend": {"gpu_ms": a3 * e},
                },
            },
        )
    )
    return book


@pytest.mark.parametrize("host", [{"d": 1.5, "v": 10.0, "e": 11.6}, {"d": 1.0, "v": 16.0, "e": 1.5}])
def test_exact_parts_predict_exactly(host: dict[str, float]) -> None:
    book = _exact_book(host)
    for n in (2, 3):
        (ck,) = checks(book, n)
        assert abs(ck.error_pct) < 0.5, ck.to_json()


def test_adaptive_config_is_the_best_step_count_per_concurrency() -> None:
    """A cheap drafter (1 ms per step vs a 16 ms verify): more steps pay; the file SGLang 0.5.23 reads."""
    book = _exact_book({"d": 1.0, "v": 16.0, "e": 1.5})
    assert adaptive_config(book, 1) == {"1": {"candidate_steps": [5]}}
    # an expensive drafter: speculation off estimated best everywhere → no adaptive config at all
    assert adaptive_config(_exact_book({"d": 1.5, "v": 10.0, "e": 11.6}), 1) is None


def _split(profile: dict[str, Any], cycle: float = 10.0, acc: float = 2.0) -> Any:
    split = profile_parts(profile)
    return fit_parts(SpecSettings(steps=3), cycle, acc, math.nan, profile=split) if split else None


def test_profile_parts_are_bounded() -> None:
    cyc = {"unit": "cycle"}
    ms = lambda d, v, e: {"draft": {"gpu_ms": d}, "verify": {"gpu_ms": v}, "draft_extend": {"gpu_ms": e}}  # noqa: E731
    assert _split({**cyc, "parts": ms(float("nan"), 1.0, 1.0)}) is None
    assert _split({**cyc, "parts": ms(1.0, -1, 1.0)}) is None
    assert _split({"unit": "step", "parts": ms(1.0, 1.0, 1.0)}) is None
    s = SpecSettings(steps=3)
    p = _split({**cyc, "parts": ms(3.0, 1.0, 1.0)})
    assert p is not None and p.cycle_ms(s, 2.0) == pytest.approx(10.0)  # the measured cycle, reproduced
    # the 5 ms gap spread over 5 forwards: one per draft step, the verify and the extend
    assert p.draft_step_ms == pytest.approx(2.0) and p.verify_ms == pytest.approx(2.0)
    assert p.per_token_ms == pytest.approx(1.0)
    # spans longer than the measured cycle: scaled down to it, no gap
    p = _split({**cyc, "parts": ms(6.0, 12.0, 2.0)})
    assert p is not None and p.cycle_ms(s, 2.0) == pytest.approx(10.0) and p.verify_ms == pytest.approx(6.0)


def test_explain_merges_the_log_diagnoses_and_the_predictions() -> None:
    book = _real_book()
    diag = Diagnoser()
    log = (RUN1 / "logs" / "20261201-113648-L1-25eac0.log").read_text()
    from eagletui.core.phases.interpreter import LogInterpreter

    it = LogInterpreter(launch=1)
    diag.add(it.feed(log) + it.flush())
    kinds = [d.kind for d in explain(diag, book, 1)]
    assert "draft_accept_one" in kinds and "next_launch" in kinds
    assert kinds.index("draft_accept_one") < kinds.index("next_launch")  # warnings first
    assert explain(None, None, 1) == []


def test_run_details_show_the_prediction_and_its_check() -> None:
    from eagletui.core.state.screen import SessionState
    from eagletui.ui.widgets.runs import RunsTable

    book = _real_book()
    state = SessionState()
    table = RunsTable()
    spec = table.details(book, state, 1).plain
    assert (
        "what to launch next (predicted from #1 steps 3" in spec
        and "speculation off (measured 2727.6 tok/s" in spec
    )
    later = table.details(book, state, 3).plain
    assert "steps 2 at concurrency 4: predicted 949.6 tok/s from #1, measured 1060.7 (-10.5 %)" in later


@pytest.mark.serial  # measures the simulator's speed: run last, alone
@pytest.mark.slow
def test_bench_vs_no_spec_json_carries_the_next_launch_and_the_adaptive_config(tmp_path, capsys) -> None:
    from eagletui.commands.bench import main
    from eagletui.commands.demo import free_port
    from tests.conftest_sim import sim_profile_toml

    rest = "[bench]\nnum_prompts = 8\nconcurrency = 2\nmax_new_tokens = 64\nwarmup = 1"
    prof = sim_profile_toml(tmp_path, free_port(), rest=rest)
    rc = main(["local", "--profile", prof, "--vs-no-spec", "--concurrency", "1,4", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    nxt = {d["kind"]: d for d in data["diagnosis"]}["next_launch"]
    assert nxt["text"].startswith("what to launch next (predicted from #") and nxt["source"] == "model"
    concs = {f["concurrency"] for f in nxt["data"]["forecasts"]}
    assert concs == {1, 4}
    # the adaptive config is the one ranking's decisions in SGLang's form (issue 32)
    decided = nxt["data"]["decisions"]
    assert set(decided) == {"1", "4"}
    if all(d["decided"] == "launch" and d["setting"] == "speculation off" for d in decided.values()):
        assert "adaptive_config" not in data  # no drafting is best everywhere: speculation off, said so
        assert "speculation off" in nxt["text"] and nxt["hint"] == "(unset --speculative-algorithm)"
    elif any(d["decided"] == "undecided" for d in decided.values()):
        assert "adaptive_config" not in data, decided  # a config must not rest on a guess
    else:
        assert set(data["adaptive_config"]) == {"1", "4"}, decided
        assert all(isinstance(v["candidate_steps"][0], int) for v in data["adaptive_config"].values())


@pytest.mark.serial  # measures the simulator's speed: run last, alone
@pytest.mark.slow
def test_sweep_reports_each_predicted_variant_against_its_measurement(
    tmp_path, isolated_dirs, capsys
) -> None:
    """A sweep whose variants are the spec run, its no-spec counterpart and a step-count neighbour: the
    neighbour was predicted from the first two and the report says how close (the real-GPU check's flow)."""
    from eagletui.commands.demo import free_port
    from eagletui.commands.sweep import main
    from tests.conftest_sim import sim_profile_toml

    sweep = (
        "[sweep]\nrepeats = 1\n"
        '[[sweep.variants]]\nname = "steps 3"\n'
        '[[sweep.variants]]\nname = "no spec"\nset = { "speculative-algorithm" = "" }\n'
        '[[sweep.variants]]\nname = "steps 2"\nset = { "speculative-num-steps" = 2 }\n'
    )
    toggles = (
        '[[toggles]]\narg = "speculative-algorithm"\nchoices = ["EAGLE3"]\n'
        '[[toggles]]\narg = "speculative-num-steps"\ntype = "int"\nmin = 1\nmax = 8\n'
    )
    rest = "[bench]\nnum_prompts = 8\nconcurrency = 2\nmax_new_tokens = 64\nwarmup = 1\n" + toggles + sweep
    # --sim-speed 5, not 20: at 20 a step is short enough that a loaded machine's overhead moved the error
    # to +30 % beside another suite
    prof = sim_profile_toml(tmp_path, free_port(), rest=rest, speed=5)
    rc = main(["local", "--profile", prof, "--json", "--no-preflight", "--no-record"])
    out = capsys.readouterr()
    assert rc in (0, 1), out.err
    rep = json.loads(out.out)
    rows = rep["predictions"]
    assert [(r["setting"], r["concurrency"], r["predicted_from"]) for r in rows] == [("steps 2", 2, 1)]
    assert rows[0]["measured_tok_s"] > 0 and abs(rows[0]["error_pct"]) < 25  # the fit, one short benchmark


@pytest.mark.serial  # measures the simulator's speed: run last, alone
@pytest.mark.slow
@pytest.mark.parametrize("drafter", ["working", "accepts nothing"])
def test_a_sweep_with_step_profile_predicts_from_the_profile(
    tmp_path, isolated_dirs, capsys, drafter
) -> None:
    """``[sweep] step_profile = true``: each speculative launch gets a step profile after its benchmarks,
    so the next step count is predicted from the measured split of a cycle (no no-spec run needed), and
    the report says what the profile saw; the no-spec launch gets none. Also when the drafter accepts
    nothing (the lent H200's random-weight draft: every spec run is invalid, yet timed truly; the first
    real run took no profile because of it)."""
    from eagletui.commands.demo import free_port
    from eagletui.commands.sweep import main
    from tests.conftest_sim import sim_profile_toml

    sweep = (
        "[sweep]\nrepeats = 1\nstep_profile = true\n"
        '[[sweep.variants]]\nname = "steps 3"\n'
        '[[sweep.variants]]\nname = "steps 2"\nset = { "speculative-num-steps" = 2 }\n'
        '[[sweep.variants]]\nname = "no spec"\nset = { "speculative-algorithm" = "" }\n'
    )
    toggles = (
        '[[toggles]]\narg = "speculative-algorithm"\nchoices = ["EAGLE3"]\n'
        '[[toggles]]\narg = "speculative-num-steps"\ntype = "int"\nmin = 1\nmax = 8\n'
    )
    rest = "[bench]\nnum_prompts = 8\nconcurrency = 2\nmax_new_tokens = 64\nwarmup = 1\n" + toggles + sweep
    args = "sim-draft-quality = 0.0\n" if drafter == "accepts nothing" else ""
    # --sim-speed 5, not 20: a simulated step of a few ms, so the Python overhead a loaded machine adds is a
    # small share of it; at 20 a load that changed between the two launches moved this error to -30 %
    # (2.5 since: at 5 the suite beside another one measured -27 %)
    prof = sim_profile_toml(tmp_path, free_port(), rest=rest, args=args, speed=2.5)
    rc = main(["local", "--profile", prof, "--json", "--no-preflight", "--no-record"])
    out = capsys.readouterr()
    assert rc in (0, 1), out.err
    rep = json.loads(out.out)
    if drafter == "accepts nothing":
        assert all(v["state"] == "failed" for v in rep["variants"] if v["name"] != "no spec"), rep["variants"]
    notes = {v["name"]: v["step_profile"] for v in rep["variants"]}
    assert "decode cycles; GPU spans draft" in (notes["steps 3"] or ""), notes
    assert notes["no spec"] is None
    rows = [r for r in rep["predictions"] if r["setting"] == "steps 2"]
    assert rows and rows[0]["predicted_from"] == 1 and rows[0]["parts"].startswith("step profile"), rows
    assert abs(rows[0]["error_pct"]) < 25
    off = [r for r in rep["predictions"] if r["setting"] == "speculation off"]
    assert off and off[0]["parts"].startswith("estimate: a no-spec step"), rep["predictions"]


def test_a_check_over_several_launches_judges_by_the_means() -> None:
    """The real launches of steps 3 (7) and of steps 2 (8), alternating (one workload for all here: the
    real ones were two benchmark sizes), the first with the real step profile: single checks miss ±10 %
    here and there, but the checks carry the means over the launches so far, and the last one, over all of
    them, lands within ±10 % and says how far one setting's launches spread."""
    from eagletui.profiler import summarize_file
    from eagletui.profiler.summary import step_breakdown

    runs = _real_launches()
    spec = {
        "--model-path": "/tmp/sgw/tiny/target",
        "--speculative-algorithm": "EAGLE3",
        "--speculative-draft-model-path": "/tmp/sgw/tiny/draft",
        "--speculative-eagle-topk": 1,
    }
    book = RunBook()
    n = 0
    s3, s2 = runs["steps 3"], runs["steps 2"]
    order = [(k, x[i]) for i in range(max(len(s3), len(s2))) for k, x in ((3, s3), (2, s2)) if i < len(x)]
    twos = []
    for steps, tok in order:
        n += 1
        args = {**spec, "--speculative-num-steps": steps, "--speculative-num-draft-tokens": steps + 1}
        _launch(book, n, args, [(4, tok, 1.01)], ["fp"])
        if steps == 2:
            twos.append(n)
    trace = next(RUN3.glob("*-TP-0-DECODE.trace.json.gz"))
    book.apply(ev.ProfileCaptured(launch=1, summary=step_breakdown([summarize_file(str(trace))])))
    singles = [ck for k in twos for ck in checks(book, k)]
    assert len(singles) == len(s2) and max(abs(ck.error_pct) for ck in singles) > 10
    assert singles[0].pooled is None  # one launch of each: the single check is all there is
    last = checks(book, n)[0]
    assert last.pooled is not None and len(last.pooled.launches) == len(s2)
    assert len(last.pooled.source_launches) == len(s3)
    assert abs(last.pooled.error_pct) < 10 and last.pooled.spread_pct > 20, last.to_json()
    diag = [d for d in prediction_diagnoses(book, n) if d.kind == "prediction_check"][0]
    assert f"over {len(s2)} launches of it and {len(s3)} of #" in diag.text and diag.level == "info", (
        diag.text
    )
    assert "launches of one setting spread" in diag.evidence
    assert last.to_json()["over_launches"]["launches"] == twos
