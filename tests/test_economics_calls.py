"""Issue 32, "What was wrong" 2: economics that say only what the measurements carry. A point pays only
outside its noise band and where the steady-state decode agrees; a point where a side decoded eagerly
(or that is not like for like) is never the headline and never enters "pays at every concurrency".

The evidence is run 2 of shared/fixtures/sglang-0.5.17-h200-turn4 (``bench --vs-no-spec --concurrency
1,4,16 --repeats 2`` of the "work" drafter on an H200): its two real server logs replayed through the log
interpreter, each benchmark placed where the command's stderr says it ran, with the numbers its JSON
reported. eagletui d26d01f said "EAGLE-3 +77 % … at concurrency 16: pays …; pays at every concurrency
measured (1–16)": c = 16 ran above the 8 captured CUDA-graph sizes on both sides, and c = 1 and 4 were
+7 % and +0.15 % inside bands of ±44 % and ±12 %.
"""

from __future__ import annotations

import calendar
import gzip
import json
import re
import time
from pathlib import Path

import pytest

from eagletui.core.events import BenchmarkResult, BenchmarkStarted, DecodeStats, LaunchStarted, PrefillStats
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.call import COSTS, DISPUTED, PAYS, WITHIN, Gap, call, gap
from eagletui.core.runs.steady import ITL, LOG, eager_at, largest_graph
from eagletui.core.stats.confidence import pooled_noise

TURN4 = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-turn4-shared"
LOGS = {"spec": "20261201-220202-L1-14e62b", "no_spec": "20261201-220315-L2-853732"}
_TS = re.compile(r"^\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")



def _epoch(line: str) -> float | None:
    m = _TS.match(line)
    if m is None:
        return None
    return float(calendar.timegm(time.struct_time((*map(int, m.groups()), 0, 0, 0))))


def _run2_events() -> list:
    """The spec launch and its no-spec relaunch of run 2, as a live session would have folded them."""
    doc = json.loads((TURN4 / "outputs" / "call2-w2-vs-no-spec.json").read_text())
    tsv = (TURN4 / "outputs" / "call2-w2-vs-no-spec.stderr.tsv").read_text().splitlines()
    marks = [(float(t), msg) for t, _, msg in (ln.partition("\t") for ln in tsv)]
    # a benchmark runs from the line before its "repeat i/2" line (warm-up included) to that line
    windows = [(marks[i - 1][0], t) for i, (t, msg) in enumerate(marks) if msg.startswith("repeat ")]
    events: list = []
    bench = 0
    for launch, (side, runs) in enumerate(
        (("spec", doc["repeats"]["runs"]), ("no_spec", doc["no_spec"]["repeats"]["runs"])), start=1
    ):
        cfg = doc["config"] if side == "spec" else doc["no_spec"]["config"]
        events.append(LaunchStarted(launch=launch, target="local", config=cfg))
        interp = LogInterpreter(launch=launch)
        text = gzip.decompress((TURN4 / "logs" / f"{LOGS[side]}.log.gz").read_bytes()).decode()
        timed = [(_epoch(ln), ln) for ln in text.splitlines()]
        mine = windows[:6] if side == "spec" else windows[6:12]
        pending = list(zip(mine, runs, strict=True))
        for t, line in timed:
            # the log's clock has whole seconds: a line of the second a benchmark ended is after it
            while pending and t is not None and t >= int(pending[0][0][1]):
                (_, _), r = pending.pop(0)
                events.append(_result(bench, launch, r))
            if pending and t is not None and t >= int(pending[0][0][0]) and not _open(events, bench, launch):
                bench += 1
                c = pending[0][1]["concurrency"]
                events.append(BenchmarkStarted(bench=bench, launch=launch, workload={"concurrency": c}))
            events.extend(interp.feed(line + "\n"))
        for _, r in pending:  # the log ended before these benchmarks' windows
            bench += 1
            events.append(BenchmarkStarted(bench=bench, launch=launch, workload={"concurrency": r["concurrency"]}))
            events.append(_result(bench, launch, r))
    return events


def _open(events: list, bench: int, launch: int) -> bool:
    last = next((e for e in reversed(events) if isinstance(e, BenchmarkStarted | BenchmarkResult)), None)
    return isinstance(last, BenchmarkStarted) and last.launch == launch


def _result(bench: int, launch: int, r: dict) -> BenchmarkResult:
    return BenchmarkResult(
        bench=bench,
        launch=launch,
        output_throughput=r["output_throughput"],
        accept_length=r["accept_length"],
        requests=r["requests"],
        duration_s=r["duration_s"],
        stats={"ttft_ms": r["ttft_ms"], "itl_ms": r["itl_ms"]},
        workload_fingerprint=f"c{r['concurrency']}",
    )


def _book(events: list) -> RunBook:
    book = RunBook()
    for e in events:
        book.apply(e)
    return book


def test_run2_no_longer_pays_at_every_concurrency_led_by_the_eager_point() -> None:
    book = _book(_run2_events())
    spec, nospec = book.runs[1], book.runs[2]
    assert [len(spec.results), len(nospec.results)] == [6, 6] and book.reference(1).run is nospec
    # the real logs' CUDA-graph facts: sizes 1–8 captured, batch 16 eager, on both launches
    assert largest_graph(spec) == largest_graph(nospec) == 8
    assert eager_at(spec, 16) == eager_at(nospec, 16) == 8 and eager_at(spec, 4) is None
    rows = {r.concurrency: r for r in book.concurrency_table(1)}
    assert rows[16].left_out == (
        "both sides decoded eagerly, above their largest CUDA graph batch of 8",
    )
    assert not rows[1].left_out and not rows[4].left_out
    # +7 % and +0.15 % are inside their bands: within noise, not "pays"
    for c, pct in ((1, 6.7), (4, 0.15)):
        assert rows[c].gap.pct == pytest.approx(pct, abs=0.1) and not rows[c].gap.outside, rows[c].gap
        assert rows[c].call == WITHIN and not rows[c].economics.pays
    # the steady-state decode beside it: the spec server's decode lines all span a prefill (40 cycles of
    # 4 tokens outlast a request), so none is clean; the ITL of both sides is what is compared
    assert rows[4].steady.source == ITL and rows[4].steady.speedup == pytest.approx(896 / 771.5, abs=0.01)
    # the headline is a judged point (the one nearest the last setting, 16): concurrency 4
    assert book.economics(1).concurrency == 4
    s = book.economics_sentence(1)
    assert s.startswith("EAGLE-3 +0 % ± ") and "at concurrency 4: within noise" in s, s
    assert "Steady-state decode from the benchmark's ITL: +16" in s, s
    assert "pays at every concurrency" not in s.lower() and "within noise at 1 and 4" in s, s
    assert "Not judged at 16: both sides decoded eagerly" in s, s


def test_run2_nospec_decode_lines_are_clean_where_requests_outlast_the_log_interval() -> None:
    """No-spec logs a line every 40 one-token steps: two of three lines at 1 running are free of a
    prefill, and their median is the server's own steady state (≈ 740–830 tok/s a stream)."""
    from eagletui.core.runs.steady import log_rates

    book = _book(_run2_events())
    nospec = book.runs[2]
    g1 = next(g for g in nospec.groups() if g.concurrency == 1)
    rates = log_rates(nospec, g1)
    assert len(rates) == 2 and all(730 < x < 850 for x in rates), rates
    spec = book.runs[1]
    assert log_rates(spec, next(g for g in spec.groups() if g.concurrency == 1)) == []


def _fold(spec_tok, nospec_tok, spec_itl=None, nospec_itl=None, *, conc=1, spec_args=None, nospec_args=None):
    """A spec launch and its no-spec reference, one result per value at ``conc``; ITLs per result."""
    model = "m"
    sargs = {"--model-path": model, "--speculative-algorithm": "EAGLE3", **(spec_args or {})}
    nargs = {"--model-path": model, **(nospec_args or {})}
    events: list = []
    bench = 0
    for launch, args, toks, itls in ((1, sargs, spec_tok, spec_itl), (2, nargs, nospec_tok, nospec_itl)):
        events.append(LaunchStarted(launch=launch, target="local", config={"model": model, "args": args}))
        for i, tok in enumerate(toks):
            bench += 1
            stats = {"itl_ms": {"mean": itls[i]}} if itls else {}
            events.extend(_bench(bench, launch, conc, tok, stats))
    return _book(events)


def _bench(bench: int, launch: int, conc: int, tok: float, stats: dict | None = None) -> list:
    """One benchmark of ``launch`` at ``conc`` (launch 1 is the spec side: accept 3)."""
    return [
        BenchmarkStarted(bench=bench, launch=launch, workload={"concurrency": conc}),
        BenchmarkResult(
            bench=bench,
            launch=launch,
            output_throughput=tok,
            accept_length=3.0 if launch == 1 else None,
            requests=8,
            stats=stats or {},
        ),
    ]


def test_pays_only_outside_the_band_and_where_the_decode_agrees() -> None:
    # +20 % aggregate, tight repeats, decode (ITL) faster too: pays
    book = _fold([120, 121, 119], [100, 101, 99], [8.0, 8.1, 7.9], [10.0, 10.1, 9.9])
    row = book.concurrency_table(1)[0]
    assert row.call == PAYS and row.economics.pays and row.steady_gap.faster
    assert "EAGLE-3 +20 % ± " in book.economics_sentence(1) and ": pays. Accept" in book.economics_sentence(1)
    # the same aggregate, but the decode is slower: TTFT or the prefill made the difference, not called
    book = _fold([120, 121, 119], [100, 101, 99], [10.5, 10.6, 10.4], [10.0, 10.1, 9.9])
    row = book.concurrency_table(1)[0]
    assert row.call == DISPUTED and not row.economics.pays
    assert "The aggregate and the decode disagree." in book.economics_sentence(1)
    # +8 % with runs moving by ±10 %: within noise, with how many runs would tell; +1 %: none would
    book = _fold([108, 120, 96], [100, 110, 90])
    row = book.concurrency_table(1)[0]
    assert row.call == WITHIN and row.runs_needed and 10 < row.runs_needed < 30
    assert _fold([101, 112, 90], [100, 110, 90]).concurrency_table(1)[0].runs_needed is None
    s = book.economics_sentence(1)
    assert ": within noise. Accept 3.00" in s and f"About {row.runs_needed} runs a side" in s
    # slower beyond the noise: costs
    book = _fold([80, 81, 79], [100, 101, 99])
    assert book.concurrency_table(1)[0].call == COSTS


def test_one_run_a_side_is_judged_against_the_assumed_band() -> None:
    book = _fold([103.0], [100.0])
    row = book.concurrency_table(1)[0]
    assert row.gap.half_pct == 5.0 and "assumed ±5 %" in row.gap.how and row.call == WITHIN
    assert _fold([140.0], [100.0]).concurrency_table(1)[0].call == PAYS


def test_a_point_above_the_captured_graphs_is_never_the_headline() -> None:
    """At 16 both sides ran eagerly (their flags capture up to 8): the headline is the judged point,
    and "pays at every concurrency" counts only judged points."""
    model = "m"
    nargs = {"--model-path": model, "--cuda-graph-max-bs-decode": 8}
    sargs = {**nargs, "--speculative-algorithm": "EAGLE3"}
    events: list = [
        LaunchStarted(launch=1, target="local", config={"model": model, "args": sargs}),
        LaunchStarted(launch=2, target="local", config={"model": model, "args": nargs}),
    ]
    bench = 0
    for c, spec, nospec in ((1, 150.0, 100.0), (4, 500.0, 400.0), (16, 3000.0, 1000.0)):
        for launch, tok in ((1, spec), (2, nospec)):
            bench += 1
            events.extend(_bench(bench, launch, c, tok))
    book = _book(events)
    assert book.economics(1).concurrency == 4  # the last measured (16) is left out
    s = book.economics_sentence(1)
    assert "Pays at every concurrency measured, 1–4." in s
    assert "Not judged at 16: both sides decoded eagerly, above their largest CUDA graph batch of 8." in s


def test_log_lines_spanning_a_prefill_are_not_steady_state() -> None:
    """The decode lines give the steady state only when clean (no prefill since the line before), on
    both sides; a prefill between two lines makes the second one unclean."""
    book = _fold([100.0], [100.0], conc=2)
    spec = book.runs[1]
    spec.open_benches[99] = []
    book.apply(DecodeStats(launch=1, gen_throughput=50.0, running_req=2))  # first line: its span is unknown
    book.apply(DecodeStats(launch=1, gen_throughput=200.0, running_req=2))
    book.apply(PrefillStats(launch=1, new_seq=1))
    book.apply(DecodeStats(launch=1, gen_throughput=120.0, running_req=2))
    book.apply(DecodeStats(launch=1, gen_throughput=210.0, running_req=2, cuda_graph=False))
    assert spec.decode_log[99] == [(2, 50.0, False), (2, 200.0, True), (2, 120.0, False), (2, 210.0, True)]
    assert spec.prefill_lines and spec.eager_running == {2}


def test_gap_and_call_rules() -> None:
    noise = pooled_noise([[100, 102, 98], [120, 118, 122]])
    g = gap([120, 118, 122], [100, 102, 98], noise)
    assert g.faster and g.pct == pytest.approx(20.0) and "95 % CI of 3+3 runs" in g.how
    assert call(g, None) == PAYS and call(g, Gap(-1.0, 5.0, "", 3, 3)) == DISPUTED
    slow = gap([80, 81, 79], [100, 102, 98], noise)
    assert call(slow, None) == COSTS and call(slow, Gap(10.0, 5.0, "", 3, 3)) == DISPUTED
    assert gap([], [1.0], noise) is None


def test_logs_are_the_source_when_both_sides_have_clean_lines() -> None:
    book = _fold([100.0], [100.0], [10.0], [10.0], conc=1)
    for launch, rates in ((1, (500.0, 510.0, 505.0)), (2, (400.0, 405.0, 395.0))):
        run = book.runs[launch]
        bench = run.results[0].bench
        run.prefill_lines = True
        run.decode_log[bench] = [(1, x, True) for x in rates]
    book.version += 1  # the run book's caches follow its version
    row = book.concurrency_table(1)[0]
    assert row.steady.source == LOG and row.steady.speedup == pytest.approx(505 / 400)


def test_the_economics_sentence_recommends_no_setting_of_its_own() -> None:
    """Issue 32, "What was wrong" 3: the sentence said "predicted: steps 1 would give +9 %" from its own
    neighbour predictions while ``next_launch`` (the one ranking) said something else. It now points at
    the next launch and names no setting."""
    from eagletui.core.cycle.economics import economics
    from eagletui.core.cycle.model import SpecSettings

    # steps 1 accepting all it can, 6 % slower: more steps are predicted faster
    e = economics(75.0, 2.0, 80.0, settings=SpecSettings(steps=1, topk=1))
    assert e is not None and e.best_prediction is not None and e.best_prediction.speedup > 1.0
    s = e.sentence()
    assert s.endswith(" See next launch."), s
    assert "predicted" not in s and "steps 1" not in s and "would give" not in s, s


def test_the_run_details_table_says_each_call_with_both_bands() -> None:
    """The runs details' per-concurrency table: the call on the aggregate's line, the decode beside it
    (under the row: as columns they wrapped the table at 80 columns)."""
    from eagletui.ui.widgets.runs import concurrency_lines

    book = _fold([120, 121, 119], [100, 101, 99], [8.0, 8.1, 7.9], [10.0, 10.1, 9.9])
    text = concurrency_lines(book, 1).plain
    assert "        pays: aggregate +20.0 % ± " in text, text
    assert "        decode (the benchmark's ITL) 1.25×: +25.0 % ± " in text, text
    assert max(len(line) for line in text.splitlines() if "conc" in line) <= 70
