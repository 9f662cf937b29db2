"""Issue 32, like for like: a comparison that differs in anything but the speculative flags is shown with
what differs and never judged — no verdict, break-even, cycle model or prediction — in the run book, the
runs table and details, the compare line, ``bench --json``, ``--baseline``, every export and ``eagletui
sessions``; the why line names the run it is about and says when a relaunch made it stale; a sweep's
decision quotes its margin against the nearest competitor by mean and says where its ranking departs
from the means.

Each test fails on the code the issue was filed against (d26d01f): the folded events are the README's
own "is EAGLE-3 worth it here?" flow as the simulator played it (the numbers of a tmux session of
``eagletui demo``), the why line is read from the shipped demo recording, the sweep from a real queue."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from eagletui.core import events as ev
from eagletui.core.predict.forecast import forecasts
from eagletui.core.predict.next_launch import prediction_diagnoses
from eagletui.core.predict.ranking import adaptive_config
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.run import RunVerdict
from eagletui.session.export import build_report
from eagletui.session.export_render import render_csv, render_json, render_markdown
from tests.test_issue19_answers import NOSPEC, SPEC, Session

EXAMPLES = Path(__file__).resolve().parents[1] / "sessions"
VERDICT = {"min_accept_len": 2.0, "min_speedup": 1.0}  # the demo profile's [verdict]
H200 = {"--sim-host": "h200-nvlink"}  # the PCIe host is the simulator's default: --sim-host unset


def _readme_flow(*, h200_nospec: bool = False) -> Session:
    """The README's flow as the simulator played it: spec (PCIe), NCCL_ALGO Ring → Tree, speculation off,
    then --sim-host h200-nvlink with speculation back on; its only no-spec run is the PCIe host's."""
    s = Session()
    s.launch(1, SPEC, {"NCCL_ALGO": "Ring"}, verdict=VERDICT)
    s.result(1, 223.0, 3.14)
    s.launch(2, SPEC, {"NCCL_ALGO": "Tree"}, verdict=VERDICT)
    s.result(2, 219.8, 3.15)
    s.launch(3, NOSPEC, {"NCCL_ALGO": "Tree"}, verdict=VERDICT)
    s.result(3, 307.7)
    s.launch(4, {**SPEC, **H200}, {"NCCL_ALGO": "Tree"}, verdict=VERDICT)
    s.result(4, 1957.6, 3.15)
    if h200_nospec:
        s.launch(5, {**NOSPEC, **H200}, {"NCCL_ALGO": "Tree"}, verdict=VERDICT)
        s.result(5, 307.7 * 2.6)
    return s


# 4 ---------------------------------------------------------------- shown, never judged: the run book


def test_an_h200_spec_run_against_the_pcie_no_spec_run_gets_no_verdict_break_even_or_cycle_model() -> None:
    book = _readme_flow().book()
    ref = book.reference(4)
    assert ref is not None and ref.label == "#3" and ref.differences == ("--sim-host (h200-nvlink vs unset)",)
    verdict, reasons = book.verdict_for(4)
    assert verdict == "unjudged", (verdict, reasons)  # d26d01f: pass
    assert reasons[0] == "unjudged: differs in --sim-host (h200-nvlink vs unset) from no-spec #3"
    assert book.economics(4) is None and book.economics_points(4) == []
    [row] = book.concurrency_table(4)
    assert row.economics is None and row.gap is None and row.nospec_tok_s.mean == 307.7  # shown
    assert row.to_json()["speedup"] is None and row.to_json()["break_even_accept_len"] is None
    assert row.to_json()["unjudged"].startswith("unjudged: differs in --sim-host")
    sentence = book.row(4).economics or ""
    assert "1957.6 vs 307.7 tok/s of no-spec #3" in sentence and "unjudged: differs in --sim-host" in sentence
    for judged in ("pays", "break-even 0", "%", "cycle"):  # d26d01f: "+536 % … pays (accept 3.15 ≥ break-even 0.50"
        assert judged not in sentence, sentence
    assert book.alarms(4) == []


def test_a_spec_run_slower_than_a_no_spec_run_of_another_env_is_unjudged_not_pass() -> None:
    """d26d01f: #1 (NCCL_ALGO Ring, 27 % slower than #3) kept ``pass`` while #2 beside it (like for like
    with #3, faster than #1) read ``fail ⚠``."""
    book = _readme_flow().book()
    v1, r1 = book.verdict_for(1)
    assert v1 == "unjudged" and r1[0] == "unjudged: differs in NCCL_ALGO (Ring vs Tree) from no-spec #3"
    assert any(r.startswith("accept len 3.14 ≥ 2") for r in r1)  # what was judged still says so
    v2, r2 = book.verdict_for(2)
    assert v2 == RunVerdict.FAIL and "vs no-spec #3" in r2[0] and book.alarms(2)
    assert book.row(1).verdict == "unjudged" and book.rows()[1].verdict == "fail"


def test_a_spec_runs_verdict_carries_its_like_for_like_speedup_when_there_is_one() -> None:
    book = _readme_flow(h200_nospec=True).book()
    verdict, reasons = book.verdict_for(4)
    assert verdict == RunVerdict.PASS, reasons
    assert any(r.startswith("speedup 2.45× ≥ 1× vs no-spec #5") for r in reasons), reasons
    assert book.economics(4) is not None and book.reference(4).like_for_like


def test_a_fail_vs_the_baseline_still_says_what_was_not_judged() -> None:
    s = Session()
    s.launch(1, NOSPEC, {"NCCL_ALGO": "Tree"}, verdict=VERDICT)
    s.result(1, 307.7)
    s.launch(2, {**SPEC, **H200}, {"NCCL_ALGO": "Tree"}, verdict={"min_speedup": 10.0})
    s.result(2, 1957.6, 3.15)
    verdict, reasons = s.book().verdict_for(2)
    assert verdict == RunVerdict.FAIL and reasons[0].startswith("speedup 6.36× < 10×")
    assert reasons[-1] == "unjudged: differs in --sim-host (h200-nvlink vs unset) from no-spec #1"


# 4 ---------------------------------------------------------------- no prediction on such a pair


def test_no_next_launch_is_built_on_a_no_spec_run_of_another_host() -> None:
    """d26d01f: "what to launch next: steps 5 (+22 %)" and, in the details, "0.00 ms per accepted token"
    from the PCIe no-spec run's step; #1 was told "speculation off (measured 307.7, +38 %)" from a run
    with another NCCL_ALGO."""
    book = _readme_flow().book()
    for launch in (1, 4):
        fs, why = forecasts(book, launch)
        assert fs == [] and why.startswith("no like-for-like no-spec run (unjudged: differs in"), why
        assert adaptive_config(book, launch) is None
        [d] = prediction_diagnoses(book, launch)
        assert d.text == "no prediction for the next launch" and not d.hint


def test_a_step_profile_still_predicts_but_never_reads_the_other_hosts_no_spec_run() -> None:
    s = _readme_flow()
    profile = {"unit": "cycle", "parts": {p: {"gpu_ms": ms} for p, ms in (("draft", 1.2), ("verify", 2.4), ("draft_extend", 0.4))}}
    s.events.append(ev.ProfileCaptured(launch=4, summary=profile, **s.at()))
    fs, _ = forecasts(s.book(), 4)
    off = [f for f in fs if f.settings is None]
    assert fs and off and not off[0].measured and off[0].tok_s != 307.7  # an estimate, not run #3


# 4 ---------------------------------------------------------------- every view says the same


def test_the_runs_details_and_the_compare_line_show_the_pair_unjudged() -> None:
    from eagletui.ui.repaint import compare_text
    from eagletui.ui.widgets.runs import comparison_lines, concurrency_lines

    book = _readme_flow().book()
    table = str(concurrency_lines(book, 4))
    assert "unjudged: differs in --sim-host" in table and "1957.6" in table and "307.7" in table
    assert "cycle model" not in table and "×" not in table and "predicted" not in table, table
    assert "vs no-spec #3: unjudged: differs in --sim-host" in str(comparison_lines(book, 4))
    line = str(compare_text(book, server_state="ready"))
    assert "#4 EAGLE-3 1957.6 vs 307.7 tok/s of no-spec #3" in line and "pays" not in line, line


def test_exports_and_sessions_show_the_pair_unjudged(tmp_path: Path) -> None:
    from eagletui.commands.sessions import row as sessions_row
    from eagletui.session.catalog import list_sessions
    from eagletui.session.record import Recorder

    s = _readme_flow()
    report = build_report(s.events)
    run4 = json.loads(render_json(report))["runs"][3]
    assert run4["verdict"] == "unjudged"
    e = run4["economics"]
    assert e["speedup"] is None and e["break_even_accept_len"] is None and e["cycle_parts"] is None
    assert e["unjudged"] == "unjudged: differs in --sim-host (h200-nvlink vs unset) from no-spec #3"
    assert e["differences"] == ["--sim-host (h200-nvlink vs unset)"] and e["predictions"] == []
    assert run4["comparisons"]["vs_no_spec"]["speedup"] is None
    assert run4["by_concurrency"][0]["speedup"] is None and run4["by_concurrency"][0]["unjudged"]
    assert not any("what to launch next" in d["text"] for d in run4["diagnosis"])
    row4 = list(csv.DictReader(io.StringIO(render_csv(report))))[3]
    assert row4["verdict"] == "unjudged" and row4["speedup"] == "" and row4["break_even_accept_len"] == ""
    assert row4["economics_like_for_like"] == "no" and row4["speedup_by_concurrency"] == ""
    md = render_markdown(report)
    launch4 = md[md.index("## Launch 4") :]
    assert "- verdict: **unjudged**: unjudged: differs in --sim-host" in launch4
    assert "(pays)" not in launch4 and not re.search(r"break-even \d", launch4) and "steps 5" not in launch4

    with Recorder(tmp_path / "flow.jsonl", target="local", profile_name="demo") as rec:
        for e_ in s.events:
            rec.write(e_)
    [entry] = list_sessions(tmp_path)
    pairs = {p["spec"]: p for p in entry.summary.spec_pairs}
    assert pairs[4]["speedup"] is None and pairs[4]["differs_in"] == ["--sim-host"]
    assert pairs[2]["speedup"] is not None  # the like-for-like pair keeps its ratio
    shown = sessions_row(entry)[-1]
    assert "#4÷#3 unjudged (--sim-host)" in shown and "#1÷#3 unjudged (NCCL_ALGO)" in shown, shown
    assert "#2÷#3 0.71×" in shown


def _pcie_nospec_recording(path: Path) -> Path:
    from eagletui.session.record import Recorder

    s = Session()
    s.launch(1, NOSPEC, {"NCCL_ALGO": "Tree"})
    s.result(1, 307.7)
    with Recorder(path, target="local", profile_name="demo") as rec:
        for e in s.events:
            rec.write(e)
    return path


def test_baseline_of_another_host_gives_no_break_even(tmp_path: Path) -> None:
    """d26d01f: ``bench --baseline`` of the PCIe no-spec run from an H200 spec run said "break-even 20.70"."""
    from eagletui.session.baseline import compare, load_run

    base = load_run(f"{_pcie_nospec_recording(tmp_path / 'pcie.jsonl')}:1", [])
    s = Session()
    s.launch(1, {**SPEC, **H200}, {"NCCL_ALGO": "Tree"})
    s.result(1, 1957.6, 3.15)
    got = compare(s.book().runs[1], base)
    e = got["economics"]
    assert e["break_even_accept_len"] is None and e["speedup"] is None and e["cycle_parts"] is None
    assert e["unjudged"] == "unjudged: differs in --sim-host (h200-nvlink vs unset) from no-spec pcie:1"
    assert not re.search(r"break-even \d", e["sentence"]) and "unjudged" in e["sentence"]
    book = RunBook()
    book.runs[1] = s.book().runs[1]
    book.pin_external(base.run, base.ref)
    assert book.verdict_for(1) == ("unjudged", [e["unjudged"]])  # d26d01f: "—", nothing said


def test_a_min_speedup_against_a_baseline_on_another_tp_is_unjudged() -> None:
    """``min_speedup`` vs a run of another session on another tp (the like-for-like guard's reasons) is
    not judged either: d26d01f passed it (speedup 1.67× ≥ 1×)."""
    from eagletui.core.profile.model import Verdict
    from eagletui.core.runs.run import Run

    s = Session()
    s.launch(1, SPEC)
    s.result(1, 500.0, 3.2)
    other = Session()
    other.launch(1, {**SPEC, "--tp-size": 4})  # a spec run too: the baseline, not a no-spec reference
    other.result(1, 300.0, 3.2)
    foreign: Run = other.book().runs[1]
    foreign.config["tp"] = 4
    book = RunBook(Verdict(min_speedup=1.0))
    book.runs[1] = s.book().runs[1]
    book.pin_external(foreign, "old:1")
    assert book.verdict_for(1) == ("unjudged", ["unjudged vs baseline old:1: different tp (8 vs 4)"])


def test_bench_json_and_its_table_show_the_pair_unjudged(capsys) -> None:
    from eagletui.commands._bench_report import print_table
    from eagletui.commands.bench import _economics_json
    from eagletui.session.model import SessionModel

    model = SessionModel(target="local", learn_history=False)
    for e in _readme_flow().events:
        model.dispatch(e)
    econ = _economics_json(model, 4)
    assert econ is not None and econ["like_for_like"] is False and econ["speedup"] is None
    assert econ["break_even_accept_len"] is None and econ["crossover"] is None and econ["points"] == []
    assert econ["unjudged"].startswith("unjudged: differs in --sim-host")
    print_table(econ["by_concurrency"], econ["vs"])
    out = capsys.readouterr().out
    assert "1957.6" in out and "307.7" in out and "×" not in out, out


# 5 ---------------------------------------------------------------- the why line names its run


def _demo_until(launch_started: int | None, kind: type = ev.LaunchStarted) -> tuple[RunBook, object]:
    """The shipped demo recording (the simulator's PCIe host: four launches, each benchmarked) folded up
    to the first ``kind`` event of launch ``launch_started`` (None: all of it)."""
    from eagletui.core.diagnosis.fold import Diagnoser
    from eagletui.session.format import read_session

    _h, events, _ = read_session(EXAMPLES / "demo-eagle3.jsonl")
    events = list(events)
    if launch_started is not None:
        i = next(k for k, e in enumerate(events) if isinstance(e, kind) and e.launch == launch_started)
        events = events[: i + 1]
    book, diag = RunBook(), Diagnoser()
    for e in events:
        book.apply(e)
    diag.add(events)
    return book, diag


def _why(book: RunBook, diag: object) -> str:
    from eagletui.ui.repaint import compare_text

    text = str(compare_text(book, server_state="ready", diagnoser=diag))  # type: ignore[arg-type]
    return next(ln for ln in text.splitlines() if ln.startswith("why"))


def test_after_a_relaunch_the_why_line_names_its_run_and_says_it_is_stale() -> None:
    """d26d01f: after ``a`` the line still said "why: …" of the previous launch, nothing saying which."""
    book, diag = _demo_until(4)  # launch #4 started (fusion on, NCCL_PROTO=LL), not benchmarked yet
    line = _why(book, diag)
    assert line.startswith("why for launch #3, benchmark 3, stale until #4 is benchmarked: "), line
    book, diag = _demo_until(None)  # and once #4 is benchmarked, it is about #4, not stale
    line = _why(book, diag)
    assert line.startswith("why for launch #4, benchmark 4: "), line


def test_after_a_relaunch_that_failed_the_why_line_does_not_wait_for_its_benchmark() -> None:
    """Seen in the first hour after round 4: launch #2 failed, and the line still read "stale until #2 is
    benchmarked", a benchmark that can never happen."""
    book, diag = _demo_until(4)  # launch #4 started, not benchmarked yet
    failed = ev.ServerFailed(kind="oom", message="CUDA out of memory", launch=4)
    book.apply(failed)
    diag.add([failed])  # type: ignore[attr-defined]
    line = _why(book, diag)
    assert line.startswith("why for launch #3, benchmark 3, the last benchmarked: launch #4 failed before a "), line
    assert "stale until" not in line


def test_the_runs_name_is_no_part_of_the_explanations_budget() -> None:
    from eagletui.core.diagnosis.fold import Diagnosis, why_line

    d = Diagnosis(
        kind="allreduce",
        text="decode all-reduce (tp 8): NCCL ring over PCIe, not fused; custom all-reduce off",
        evidence="log",
        hint="--enable-flashinfer-allreduce-fusion; NCCL_ALGO=Tree",
    )
    plain = why_line([d])
    assert plain == f"why: {d.text} → --enable-flashinfer-allreduce-fusion …"
    assert why_line([d], launch=1) == plain.replace("why:", "why for launch #1:", 1)  # before any benchmark
    stale = why_line([d], launch=3, bench=5, newer=4)
    assert stale == plain.replace("why:", "why for launch #3, benchmark 5, stale until #4 is benchmarked:", 1)


# 6 ---------------------------------------------------------------- the sweep's nearest competitor


def test_a_sweeps_margin_is_against_the_nearest_mean_and_its_reordering_says_why(tmp_path: Path, capsys) -> None:
    """Three NCCL_ALGO settings of equal cost: Tree clearly ahead; Ring (declared first) and NVLS within
    the noise of each other, NVLS the higher mean. d26d01f quoted Tree's margin against Ring, the second
    by declared order among the tie (+15 %), not against NVLS (the nearest mean), and ranked Ring above
    NVLS without saying why."""
    from eagletui.commands._sweep_report import print_human
    from eagletui.core.profile.load import parse_profile
    from eagletui.session.sweep.cells import DONE
    from eagletui.session.sweep.queue import SweepQueue
    from eagletui.session.sweep.report import build_report as sweep_report
    from tests.test_sweep_core import BASE

    p = parse_profile(BASE + '[sweep]\n[sweep.matrix]\nNCCL_ALGO = ["Ring", "Tree", "NVLS"]\n', "p.toml")
    q = SweepQueue.plan(p.sweep, target="local", profile_path=str(tmp_path / "p.toml"))
    runs = {"Ring": (100.0, 104.0, 96.0), "Tree": (115.0, 116.0, 114.0), "NVLS": (103.0, 107.0, 99.0)}
    by = {}
    for v in q.variants:
        algo = v.name.rpartition("=")[2]
        by[algo] = v.index
        v.state = DONE
        v.cells[0].repeats = [{"tok_s": x} for x in runs[algo]]
    assert list(by) == ["Ring", "Tree", "NVLS"]  # the declared order
    [d] = q.decisions()
    assert d.winner == by["Tree"] and d.ranking == (by["Tree"], by["Ring"], by["NVLS"])
    assert d.margin is not None and abs(d.margin.pct - (115.0 / 103.0 - 1) * 100) < 1e-6, d.margin.pct
    assert d.rival == by["NVLS"]  # d26d01f: the margin above was +15 %, against Ring
    assert d.reordered == ((by["Ring"], by["NVLS"], by["NVLS"]),)
    rep = sweep_report(q)
    dec = rep["decisions"][0]
    assert dec["rival"] == "NCCL_ALGO=NVLS" and dec["runner_up"] == "NCCL_ALGO=Ring"
    why = "NCCL_ALGO=Ring above NCCL_ALGO=NVLS (mean 100.0 < 103.0 tok/s): within the noise of it, and cheaper"
    assert dec["reordered"][0]["text"] == why
    print_human(rep)
    out = capsys.readouterr().out
    assert "decision: NCCL_ALGO=Tree — vs NCCL_ALGO=NVLS: clear (+11.7 %" in out, out
    assert f"  not by the means: {why}" in out, out
