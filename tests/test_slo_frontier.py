"""Issue 35 items 1–3: the profile's ``[slo]``, per-request latencies kept bounded, goodput and SLO
attainment per concurrency (recomputed here from the run's per-request records), the frontier (one
function every view reads) and the answer under the SLO, in ``bench --json``, ``sweep``'s report and
every export. Pure folds: milliseconds each."""

from __future__ import annotations

import csv
import io
import json
import math
import random
from dataclasses import replace

import pytest

from eagletui.commands._bench_report import summarize_repeats
from eagletui.core.events import BenchmarkResult, BenchmarkStarted, LaunchStarted
from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.model import ProfileError
from eagletui.core.profile.slo import Slo, SloBound
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.frontier import frontiers
from eagletui.core.runs.frontier_text import frontier_lines
from eagletui.core.runs.latency import RESERVOIR, LatencyRecords, records_of
from eagletui.session.export import build_report
from eagletui.session.export_render import render_csv, render_json, render_markdown

MODEL = "moonshotai/Kimi-K2.5"
SPEC = {"--model-path": MODEL, "--tp": 8, "--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3}
NOSPEC = {"--model-path": MODEL, "--tp": 8}
SLO = Slo((SloBound("ttft_ms", 99, 2000), SloBound("itl_ms", 99, 50)))

# ------------------------------------------------------------------------------------------ [slo]

BASE = """name = "p"
[server]
command = "python -m sglang.launch_server"
"""


def test_slo_table_parses_both_shapes_and_travels_with_the_launch():
    prof = parse_profile(BASE + '[slo]\nitl_ms = 50\nttft_ms = { p = 90, max = 2000 }\ne2e_ms = {max = 9000}\n')
    assert prof.slo is not None
    assert [(b.metric, b.p, b.max_ms) for b in prof.slo.bounds] == [
        ("ttft_ms", 90.0, 2000.0),
        ("itl_ms", 99.0, 50.0),
        ("e2e_ms", 99.0, 9000.0),
    ]
    assert prof.slo.describe() == "ttft p90 ≤ 2 s and itl p99 ≤ 50 ms and e2e p99 ≤ 9 s"
    # the launch snapshot carries it (a replay or an export judges by it) and reads back the same
    assert Slo.from_dict(prof.snapshot()["slo"]) == prof.slo
    assert parse_profile(BASE).slo is None and "slo" not in parse_profile(BASE).snapshot()


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ("ttft = 2000", 5, "unknown key 'ttft' in [slo]"),
        ("itl_ms = { p = 120, max = 50 }", 5, "p must be a percentile"),
        ("itl_ms = { p = 99, max = -1 }", 5, "max must be more than 0"),
        ('itl_ms = "fast"', 5, "must be a number of ms"),
        ("itl_ms = { p = 99 }", 5, "needs max"),
        ("itl_ms = { p = 99, max = 50, q = 1 }", 5, "unknown key 'q'"),
        ("itl_ms = nan", 5, "max must be more than 0"),
        ("itl_ms = true", 5, "must be a number of ms"),
    ],
)
def test_bad_slo_is_a_located_error(body, line, words):
    with pytest.raises(ProfileError) as exc:
        parse_profile(BASE + "[slo]\n" + body + "\n", "p.toml")
    assert words in exc.value.message
    assert exc.value.line == line and exc.value.col == 1


def test_slo_that_is_not_a_table_is_refused():
    with pytest.raises(ProfileError, match="slo must be a table"):
        parse_profile('slo = 3\n' + BASE)


# ------------------------------------------------------------------------ records and the numbers


def _launch(n, args, target="h200"):
    return LaunchStarted(
        launch=n, target=target, config={"target": target, "model": MODEL, "tp": 8, "args": dict(args), "env": {}}
    )


def _requests(rng, conc, speed):
    """Per-request (ttft, itl, e2e, tokens) of one benchmark: slower and more spread as load grows."""
    out = []
    for _ in range(40):
        tokens = rng.randint(60, 128)
        ttft = rng.lognormvariate(math.log(150 * conc**0.7), 0.5)
        itl = rng.uniform(0.8, 1.3) * 8.0 * (1 + conc / 12) / speed
        out.append((ttft, itl, ttft + itl * (tokens - 1), tokens))
    return out


def _bench(n, bench, conc, reqs, duration=4.0, acc=None):
    evs = [
        BenchmarkStarted(
            bench=bench, launch=n, workload={"concurrency": conc, "prompts": "chat"}, workload_fingerprint=f"c{conc}"
        )
    ]
    tokens = sum(r[3] for r in reqs)
    evs.append(
        BenchmarkResult(
            bench=bench,
            launch=n,
            output_throughput=tokens / duration,
            accept_length=acc,
            requests=len(reqs),
            duration_s=duration,
            workload_fingerprint=f"c{conc}",
            latency=records_of(reqs, seed=bench),  # as the built-in client writes them
        )
    )
    return evs


def _session(seed=7):
    """A spec launch and a no-spec launch, each at concurrencies 1, 8 and 32, two repeats each; the
    per-request values by launch, concurrency."""
    rng = random.Random(seed)
    events, raw, bench = [], {}, 0
    for n, args, speed in ((1, SPEC, 1.8), (2, NOSPEC, 1.0)):
        events.append(_launch(n, args))
        for conc in (1, 8, 32):
            for _ in range(2):
                bench += 1
                reqs = _requests(rng, conc, speed)
                # throughput per GPU grows with load, faster without speculation past the middle
                duration = 40 / (conc ** (0.6 if n == 1 else 0.8)) / (1.5 if n == 1 else 1.0) * rng.uniform(0.9, 1.1)
                raw.setdefault((n, conc), []).append((reqs, duration))
                events += _bench(n, bench, conc, reqs, duration, acc=2.6 if n == 1 else None)
    return events, raw


def _book(events, slo=SLO):
    book = RunBook(slo=slo)
    for e in events:
        book.apply(e)
    return book


def _pct(values, q):
    """numpy's default percentile, written out again: the recomputation must not share the code."""
    v = sorted(values)
    pos = (len(v) - 1) * q / 100
    lo = int(pos)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (pos - lo)


def test_goodput_and_attainment_equal_a_recomputation_from_the_per_request_records():
    events, raw = _session()
    book = _book(events)
    for (n, conc), benches in raw.items():
        run = book.runs[n]
        group = next(g for g in run.groups() if g.concurrency == conc)
        got = book.slo_stats(run, group)
        rows = [r for reqs, _ in benches for r in reqs]
        ok = [r for r in rows if r[0] <= 2000 and r[1] <= 50]
        time = sum(d for _, d in benches)
        assert got.requests == got.sampled == len(rows)
        assert got.attainment == pytest.approx(len(ok) / len(rows))
        assert got.goodput_req_s == pytest.approx(len(ok) / time)
        assert got.goodput_tok_s == pytest.approx(sum(r[3] for r in ok) / time)
        tpot = [(e2e - ttft) / (tok - 1) for ttft, _, e2e, tok in rows]
        for i, name in enumerate(("ttft_ms", "itl_ms")):
            for q in (50, 90, 99):
                assert got.percentiles[name][f"p{q}"] == pytest.approx(_pct([r[i] for r in rows], q))
        assert got.percentiles["tpot_ms"]["p99"] == pytest.approx(_pct(tpot, 99))
        assert got.meets["ttft_ms"] == (_pct([r[0] for r in rows], 99) <= 2000)
        assert got.meets["itl_ms"] == (_pct([r[1] for r in rows], 99) <= 50)


def test_records_stay_bounded_and_a_replay_keeps_the_same_sample():
    def fill(seed):
        rec = LatencyRecords(seed=seed)
        for i in range(4 * RESERVOIR):
            rec.add(float(i), 1.0, float(i) + 99, 100)
        return rec

    a, b = fill(3), fill(3)
    assert len(a) == RESERVOIR and a.seen == 4 * RESERVOIR
    assert list(a.column("ttft_ms")) == list(b.column("ttft_ms"))
    # what a result carries reads back the same, however hostile: bounded, NaN for nonsense
    back = LatencyRecords.from_json(a.to_json(), seed=3)
    assert len(back) == RESERVOIR and back.seen == 4 * RESERVOIR
    assert list(back.column("ttft_ms")) == list(a.column("ttft_ms"))
    bad = LatencyRecords.from_json({"n": "x", "ttft_ms": [1, "a", -3, float("inf"), True], "itl_ms": 5, "tokens": [2]})
    assert len(bad) == 5 and bad.column("ttft_ms")[0] == 1.0
    assert all(math.isnan(v) for v in [*bad.column("ttft_ms")[1:], *bad.column("itl_ms")])
    # a uniform sample: its median is near the stream's (within a few % of 2 × RESERVOIR)
    assert _pct(list(a.column("ttft_ms")), 50) == pytest.approx(2 * RESERVOIR, rel=0.06)


def test_a_result_without_records_has_no_goodput_rather_than_a_wrong_one():
    # bench_serving keeps no per-request records: attainment and goodput are null, never 0 or 100 %
    evs = _bench(1, 1, 4, _requests(random.Random(2), 4, 1.0))
    evs[-1] = replace(evs[-1], latency={}, runner="bench_serving")
    book = _book([_launch(1, NOSPEC), *evs], slo=SLO)
    run = book.runs[1]
    (group,) = run.groups()
    got = book.slo_stats(run, group)
    assert got.attainment is None and got.goodput_req_s is None and got.meets_slo is None
    (f,) = frontiers(book)
    assert f.curves[0].points[0].slo.attainment is None  # shown as "—", never 0 %
    assert f.answer.endswith("(req/s of all requests: the SLO not judged, no per-request records)")
    # no records and no summary at the axis's percentile: no decode speed, listed but never on the frontier
    assert f.curves[0].points[0].decode_tok_s_per_user is None and not f.curves[0].points[0].on_frontier
    # bench_serving's own summary of TPOT over requests: the axis at its percentile (median, p90, p99)
    summary = {"tpot_ms": {"median": 20.0, "p90": 30.0, "p99": 40.0}, "itl_ms": {"p99": 10.0}}  # itl: per gap
    evs[-1] = replace(evs[-1], stats=summary)
    for slo, want in ((None, 50.0), (Slo((SloBound("tpot_ms", 99, 50),)), 25.0), (SLO, None)):
        (f,) = frontiers(_book([_launch(1, NOSPEC), *evs], slo=slo))
        assert f.curves[0].points[0].decode_tok_s_per_user == want  # an itl axis: never the gaps' summary


def test_one_token_answers_leave_an_itl_bound_untold_and_the_attainment_with_it(capsys):
    # one output token each: a ttft, no inter-token latency. The verdict said "cannot tell" while the
    # attainment beside it read 0 % (every request failed the itl bound it never reported)
    reqs = [(100.0 + i, float("nan"), 100.0 + i, 1) for i in range(20)]
    book = _book([_launch(1, NOSPEC), *_bench(1, 1, 4, reqs)], slo=SLO)
    run = book.runs[1]
    (group,) = run.groups()
    got = book.slo_stats(run, group)
    assert got.meets == {"ttft_ms": True, "itl_ms": None} and got.meets_slo is None
    assert got.unrecorded == ["itl_ms"]
    assert got.attainment is None and got.goodput_req_s is None and got.goodput_tok_s is None
    (f,) = frontiers(book)
    assert f.answer.endswith("(req/s of all requests: the SLO not judged, no request recorded itl_ms)"), f.answer
    from eagletui.commands._bench_report import _slo_line

    line = _slo_line(got.to_json() | {"sampled": got.sampled}, SLO.describe())
    assert line.startswith("cannot tell ") and "no request recorded itl_ms" in line and "%" not in line
    from eagletui.ui.widgets.runs import slo_lines

    text = slo_lines(book, run).plain
    assert "cannot tell: no request recorded itl_ms of 20" in text and "0.0 %" not in text


# --------------------------------------------------------------------------------- the frontier


def test_frontier_marks_pareto_points_greys_slo_misses_and_answers_under_the_slo():
    events, _ = _session()
    book = _book(events)
    (f,) = frontiers(book)
    labels = {c.label: c for c in f.curves}
    assert set(labels) == {"EAGLE3 steps 3", "no-spec"}
    pts = [(c, p) for c in f.curves for p in c.points]
    for c, p in pts:
        dominated = any(
            q.tok_s_per_gpu >= p.tok_s_per_gpu
            and q.decode_tok_s_per_user >= p.decode_tok_s_per_user
            and (q.tok_s_per_gpu, q.decode_tok_s_per_user) != (p.tok_s_per_gpu, p.decode_tok_s_per_user)
            for _, q in pts
            if q.meets_slo is not False
        )
        assert p.on_frontier == (p.meets_slo is not False and not dominated), (c.label, p.concurrency)
        assert p.tok_s_per_gpu == pytest.approx(
            sum(r.output_throughput for r in _results(book, c, p.concurrency)) / 2 / 8
        )
    misses = [p for _, p in pts if p.meets_slo is False]
    assert misses and not any(p.on_frontier for p in misses)  # concurrency 32 misses ttft p99 ≤ 2 s
    assert f.answer.startswith("at ttft p99 ≤ 2 s and itl p99 ≤ 50 ms: EAGLE3 steps 3 serves up to ")
    best = max((p for p in labels["EAGLE3 steps 3"].points if p.meets_slo), key=lambda p: p.slo.goodput_req_s)
    assert f"{best.slo.goodput_req_s:.1f} req/s (concurrency ≤ {best.concurrency})" in f.answer
    # how sure, by the one noise rule over the two best points' repeats
    other = max((p for p in labels["no-spec"].points if p.meets_slo), key=lambda p: p.slo.goodput_req_s)
    half = 2 * math.hypot(best.served_sd, other.served_sd)
    said = "within noise of it" if abs(other.served - best.served) <= half else "outside noise"
    assert f"{said} (±" in f.answer and "2σ of 2+2 runs)" in f.answer
    lines = frontier_lines(f.to_json(), all_points=True)
    assert lines[0] == "frontier on h200 (ttft p99 ≤ 2 s and itl p99 ≤ 50 ms; x: misses it):"
    assert lines[1] == (
        "  y: decode tok/s per user (1000 ÷ itl p99); SLO line at 20.0: itl p99 ≤ 50 ms (under it decode"
        " misses it); ttft p99 ≤ 2 s: grey x only (no line on this axis)"
    )
    assert sum(ln.lstrip().startswith("x ") for ln in lines) == len(misses)
    # the table's rows fit the frontier view at 80x24 (72 columns inside its frame): no row wraps
    table = frontier_lines(f.to_json(), all_points=True, answer=False, caption=False)[1:]
    assert max(len(ln) for ln in table) <= 72, table


@pytest.mark.parametrize(
    ("slo", "metric"),
    [
        (Slo((SloBound("ttft_ms", 99, 2000), SloBound("itl_ms", 99, 25))), "itl_ms"),
        (Slo((SloBound("itl_ms", 99, 25), SloBound("tpot_ms", 90, 20))), "tpot_ms"),
    ],
)
def test_the_slo_line_on_the_decode_axis_splits_the_points_by_their_per_token_bound(slo, metric):
    """y is 1000 ÷ the per-token latency at the SLO's percentile (TPOT first, else ITL) and the line
    1000 ÷ its bound: every point under the line is greyed because its decode misses that bound, every
    point on or over it meets that bound (other bounds may still grey it). The chart draws the line,
    the table's caption places it, the JSON carries the axis."""
    from textual_plotext.plot import Plot

    from eagletui.ui.widgets.frontier_plot import plot_frontier
    from eagletui.ui.widgets.plotext_text import figure_text

    events, raw = _session()
    (f,) = frontiers(_book(events, slo))
    bound = next(b for b in slo.bounds if b.metric == metric)
    line = 1000 / bound.max_ms
    assert f.axis.metric == metric and f.axis.line == pytest.approx(line)
    pts = [(c, p) for c in f.curves for p in c.points]
    under = [p for _, p in pts if p.decode_tok_s_per_user < line]
    over = [p for _, p in pts if p.decode_tok_s_per_user >= line]
    assert under and over  # the data has points on both sides
    for p in under:
        assert p.meets_slo is False and p.slo.meets[metric] is False and not p.on_frontier
    for p in over:
        assert p.slo.meets[metric] is True
    # y recomputed from the per-request records: 1000 ÷ the metric at the bound's percentile
    for c, p in pts:
        n = 1 if c.spec else 2
        rows = [r for reqs, _ in raw[(n, p.concurrency)] for r in reqs]
        per_req = [r[1] for r in rows] if metric == "itl_ms" else [(e2e - t) / (k - 1) for t, _, e2e, k in rows]
        assert p.decode_tok_s_per_user == pytest.approx(1000 / _pct(per_req, bound.p))
    doc = f.to_json()
    assert doc["y_axis"]["slo_line"] == pytest.approx(line)
    assert doc["y_axis"]["name"] == f"decode tok/s per user (1000 ÷ {metric[:-3]} p{bound.p:g})"
    caption = frontier_lines(doc)[1]
    assert f"SLO line at {line:.1f}: {bound.describe()} (under it decode misses it)" in caption
    others = " and ".join(b.describe() for b in slo.bounds if b is not bound)
    assert caption.endswith(f"{others}: grey x only (no line on this axis)")
    p = Plot()
    p.plotsize(147, 30)
    p._set_size(147, 30)
    plot_frontier(p, f, rows=30)
    assert f"SLO {bound.describe()}" in figure_text(p).plain


def test_without_a_per_token_bound_y_is_the_median_tpot_and_no_line_is_drawn():
    """A TTFT-only SLO has no line on the decode axis: y is 1000 ÷ the median request's TPOT, the
    misses are grey only, and the caption says so."""
    events, raw = _session()
    slo = Slo((SloBound("ttft_ms", 99, 2000),))
    (f,) = frontiers(_book(events, slo))
    assert f.axis.line is None and f.to_json()["y_axis"]["slo_line"] is None
    for c in f.curves:
        for p in c.points:
            rows = [r for reqs, _ in raw[(1 if c.spec else 2, p.concurrency)] for r in reqs]
            tpot = [(e2e - t) / (k - 1) for t, _, e2e, k in rows]
            assert p.decode_tok_s_per_user == pytest.approx(1000 / _pct(tpot, 50))
    assert frontier_lines(f.to_json())[1] == (
        "  y: decode tok/s per user (1000 ÷ tpot p50); ttft p99 ≤ 2 s: grey x only (no line on this axis)"
    )


def _results(book, curve, conc):
    return [r for n in curve.launches for g in book.runs[n].groups() if g.concurrency == conc for r in g.results]


def test_the_frontier_is_folded_once_per_book_version_and_again_when_a_cell_lands():
    """The frontier view and the charts column's chart both ask for the frontier when a result lands:
    one fold serves both until the book changes; a sweep's next cell is in the next one."""
    book = _book(_session()[0])
    first = frontiers(book)
    assert frontiers(book) is first
    for e in _bench(2, 500, 128, _requests(random.Random(5), 2, 1.0), duration=0.5):
        book.apply(e)
    again = frontiers(book)
    assert again is not first
    points = {(c.label, p.concurrency) for c in again[0].curves for p in c.points}
    assert ("no-spec", 128) in points and ("no-spec", 128) not in {
        (c.label, p.concurrency) for c in first[0].curves for p in c.points
    }


def test_other_hosts_and_workloads_are_separate_frontiers():
    events, _ = _session()
    other = [_launch(3, NOSPEC, target="pcie"), *_bench(3, 99, 1, _requests(random.Random(1), 1, 1.0))]
    fs = frontiers(_book(events + other))
    assert sorted(f.target for f in fs) == ["h200", "pcie"]


def test_bench_json_has_goodput_and_attainment_per_concurrency():
    events, raw = _session()
    book = _book(events)
    prof = parse_profile(BASE + "[slo]\nttft_ms = 2000\nitl_ms = 50\n")
    run = book.runs[2]
    summary = summarize_repeats(run.results, prof, "h200", run)
    assert summary["slo_text"] == "ttft p99 ≤ 2 s and itl p99 ≤ 50 ms"
    by = {g["concurrency"]: g for g in summary["by_concurrency"]}
    for conc in (1, 8, 32):
        rows = [r for reqs, _ in raw[(2, conc)] for r in reqs]
        ok = sum(r[0] <= 2000 and r[1] <= 50 for r in rows)
        assert by[conc]["slo_attainment"] == pytest.approx(ok / len(rows))
        assert by[conc]["goodput"]["req_s"] == pytest.approx(ok / sum(d for _, d in raw[(2, conc)]))
    json.dumps(summary)  # valid JSON


def test_every_export_carries_the_slo_numbers_and_the_frontier():
    events, _ = _session()
    slo_events = [
        replace(e, config={**e.config, "slo": SLO.to_dict()}) if isinstance(e, LaunchStarted) else e
        for e in events
    ]
    report = build_report(slo_events)  # the SLO is adopted from the launches, like the thresholds
    doc = json.loads(render_json(report))
    assert doc["frontier"][0]["slo_text"] == SLO.describe()
    assert doc["runs"][0]["slo_by_concurrency"][0]["slo_attainment"] is not None
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert rows[0]["slo_attainment"] != "" and rows[0]["goodput_req_s"] != ""
    assert any(r["on_frontier"] for r in rows)
    md = render_markdown(report)
    assert "## Frontier" in md and SLO.describe() in md


# ------------------------------------------------------------------------------- the frontier view


@pytest.mark.slow
async def test_frontier_view_from_the_runs_tab_a_table_when_small_a_chart_when_wide_and_live():
    """``v`` over a replayed session: at 80x24 the frontier as a table, at 200x50 the chart (a grey x per
    SLO miss) and every point; a result landing while it is open is in the next refresh."""
    from eagletui.ui.screens.frontier import FrontierChart, FrontierScreen
    from eagletui.ui.widgets.runs import RunsTable
    from tests.replay_apps import replayed

    events, _ = _session()
    events = [replace(e, config={**e.config, "slo": SLO.to_dict()}) if isinstance(e, LaunchStarted) else e for e in events]
    async with replayed((80, 24), events=events) as (app, pilot):
        # the run details say the same per concurrency (Enter on the Runs tab)
        body = app.screen.query_one(RunsTable).details(app.model.runbook, app.model.state, 2).plain
        assert "under the SLO (ttft p99 ≤ 2 s and itl p99 ≤ 50 ms; v: the frontier)" in body
        assert "c=32   misses" in body and "c=1    meets" in body
        await pilot.press("4", "v")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FrontierScreen) and screen.has_class("small")
        text = str(screen.query_one("#frontier-text").render())
        assert "frontier on h200 (ttft p99 ≤ 2 s and itl p99 ≤ 50 ms" in text
        assert "serves up to" in str(screen.query_one("#frontier-answer").render())
        # small: the frontier's points only, no SLO misses listed; the caption places the SLO's line
        assert not any(ln.lstrip().startswith("x ") for ln in text.splitlines())
        assert "SLO line at 20.0: itl p99 ≤ 50 ms (under it decode misses it)" in text
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        screen.refresh_frontier()
        assert not screen.has_class("small") and screen.query_one(FrontierChart).display
        text = str(screen.query_one("#frontier-text").render())
        assert sum(ln.lstrip().startswith("x ") for ln in text.splitlines()) >= 1
        # live: a no-spec result at a new concurrency lands while the view is open
        new = _bench(2, 500, 128, _requests(random.Random(5), 2, 1.0), duration=0.5)
        for e in new:
            app.dispatch(e)
        assert screen.refresh_frontier() is True
        points = {(c.label, p.concurrency) for f in screen.frontiers for c in f.curves for p in c.points}
        assert ("no-spec", 128) in points
        # the answer is on screen above the table, never scrolled out of sight by its rows (at 100x30
        # eight points left it below the table's fold, and a browser tab of an H200 sweep never showed it)
        for e in _bench(1, 501, 128, _requests(random.Random(6), 2, 1.8), duration=0.4):
            app.dispatch(e)
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        screen.refresh_frontier()
        await pilot.pause()
        shown = app.export_screenshot().replace("&#160;", " ")
        assert not screen.has_class("small") and "serves up to" in shown
        await pilot.press("escape")
        assert not isinstance(app.screen, FrontierScreen)


@pytest.mark.slow
async def test_the_frontier_chart_of_the_charts_column_follows_the_run_book():
    """The frontier in the wide layout's charts column (the registry's ``frontier``): drawn from the run
    book by the repaint, the host and the SLO in its title, and a result landing (a sweep's next cell)
    is on it at the next repaint; a repaint without a new result does not fold the frontier again."""
    from textual.widgets import Static

    from eagletui.ui.widgets.charts import FRONTIER_CHART_ROWS, FrontierMiniChart
    from tests.replay_apps import replayed

    events, _ = _session()
    events = [replace(e, config={**e.config, "slo": SLO.to_dict()}) if isinstance(e, LaunchStarted) else e for e in events]
    async with replayed((200, 50), events=events) as (app, pilot):
        chart = app.screen.query_one("#chart-frontier-wide", FrontierMiniChart)

        def paint() -> None:
            painter = chart.screen.painter  # the main screen's, under the frontier view too
            painter.force_charts = painter.dirty = True
            painter.paint()

        paint()
        await pilot.pause()
        assert chart.points == 6  # two curves × three concurrencies
        text = "\n".join(chart.render_line(y).text for y in range(chart.size.height))
        assert "frontier   h200: ttft p99 ≤ 2 s and itl p99 ≤ 50 ms" in text, text[:300]
        drawn = chart._plot_version
        paint()
        assert chart._plot_version == drawn  # nothing new: not folded again
        for e in _bench(2, 500, 128, _requests(random.Random(5), 2, 1.0), duration=0.5):
            app.dispatch(e)
        paint()
        assert chart.points == 7 and chart._plot_version == drawn + 1
        # behind the frontier view nothing of this screen is painted (every region painted under a
        # dialog is the whole screen rendered again as its backdrop); closing it paints every chart
        await pilot.press("v")
        await pilot.pause()
        for e in _bench(2, 501, 256, _requests(random.Random(6), 2, 1.0), duration=0.5):
            app.dispatch(e)
        paint()  # even a forced paint
        assert chart.points == 7 and chart._plot_version == drawn + 1
        await pilot.press("escape")
        await pilot.pause()
        chart.screen.painter.paint()  # the first tick uncovered, unforced
        assert chart.points == 8 and chart._plot_version == drawn + 2
        # a long compare text above the charts left it one plot row at 200x50: its points as a table
        app.screen.query_one("#compare", Static).update("\n".join(f"compare {i}" for i in range(14)))
        await pilot.pause()
        assert chart.size.height < FRONTIER_CHART_ROWS
        rows = [chart.render_line(y).text.rstrip() for y in range(chart.size.height)]
        # the chart's title (host and SLO; the note "too short for its chart" where the width allows), its table
        assert rows[0].startswith("frontier   h200: ttft p99") and "decode/user" in rows[1], rows
        assert rows[2].lstrip().startswith("* ") and all(len(r) <= chart.size.width for r in rows), rows


def test_points_without_a_decode_speed_are_listed_not_called_nothing_measured():
    """A recording from before the runs kept per-request latencies (sessions/example-demo.jsonl): its
    points have no decode speed, so none is on the frontier; the table said "nothing measured" over three
    benchmarks, and the charts column drew an empty frame (its snapshot now shows the points' table)."""
    from eagletui.core.runs.frontier_text import frontier_lines

    f = {"target": "local", "curves": [{"label": "no-spec", "points": [
        {"concurrency": 4, "tok_s_per_gpu": 43.4, "decode_tok_s_per_user": None, "on_frontier": False}]}]}
    lines = frontier_lines(f, answer=False, caption=False)
    assert "nothing measured" not in "\n".join(lines)
    assert "1 point(s), none with a decode speed" in lines[1]
    assert "43.4" in "\n".join(frontier_lines(f, all_points=True, answer=False, caption=False))


def test_curves_of_one_speculation_say_what_sets_them_apart_and_the_answer_ranks_them():
    """A matrix sweep launches one speculation with other flags: the curves were ``EAGLE3 steps 3 (#1)``
    and ``(#2)`` and the answer listed each one's best, leaving the reader to look up which launch was
    which and to pick the winner. Now the table's legend and the answer name the flags that differ, and
    the answer ranks the best against the next by the noise rule."""
    rng = random.Random(3)
    events, bench = [], 0
    fused = {**SPEC, "--enable-flashinfer-allreduce-fusion": True}
    for n, args, env, speed in ((1, SPEC, {"NCCL_ALGO": "Ring"}, 1.0), (2, fused, {"NCCL_ALGO": "Tree"}, 1.6)):
        ev = _launch(n, args)
        ev.config["env"] = env
        events.append(ev)
        for _ in range(2):
            bench += 1
            events += _bench(n, bench, 4, _requests(rng, 4, speed), duration=4.0 / speed, acc=2.6)
    (f,) = frontiers(_book(events))
    by = {c.launches[0]: c for c in f.curves}
    assert (by[1].label, by[2].label) == ("EAGLE3 steps 3 (#1)", "EAGLE3 steps 3 (#2)")
    assert by[1].differs == "enable-flashinfer-allreduce-fusion=off NCCL_ALGO=Ring"
    assert by[2].differs == "enable-flashinfer-allreduce-fusion=on NCCL_ALGO=Tree"
    assert f.answer.startswith(
        "at ttft p99 ≤ 2 s and itl p99 ≤ 50 ms: EAGLE3 steps 3 (#2: enable-flashinfer-allreduce-fusion=on"
        " NCCL_ALGO=Tree) serves up to "
    ), f.answer
    assert ", the most; then EAGLE3 steps 3 (#1: enable-flashinfer-allreduce-fusion=off NCCL_ALGO=Ring)" in f.answer
    assert "outside noise (±" in f.answer and f.answer.endswith("; no no-spec launch here to compare with")
    lines = frontier_lines(f.to_json(), all_points=True, answer=False, caption=False)
    assert "  #1: enable-flashinfer-allreduce-fusion=off NCCL_ALGO=Ring" in lines
    assert "  #2: enable-flashinfer-allreduce-fusion=on NCCL_ALGO=Tree" in lines
    table = lines[1 : lines.index("  #1: enable-flashinfer-allreduce-fusion=off NCCL_ALGO=Ring")]
    assert max(len(ln) for ln in table) <= 72, table  # the rows still fit the view at 80x24
    # one curve of its speculation keeps its plain label, and no legend
    (g,) = frontiers(_book(events[: len(events) // 2]))
    assert [c.label for c in g.curves] == ["EAGLE3 steps 3"] and g.curves[0].differs == ""
    assert not any(ln.startswith("  #") for ln in frontier_lines(g.to_json(), all_points=True))
    # the frontier's rows only (a small terminal): the legend names only the curves with a row
    shown = frontier_lines(f.to_json(), answer=False, caption=False)
    assert [ln for ln in shown if ln.startswith("  #")] == ["  #2: enable-flashinfer-allreduce-fusion=on NCCL_ALGO=Tree"]
