"""Issue 35 item 4: ``[sweep.max_rate]`` — the highest request rate each launch config sustains under the
``[slo]``: the profile table (located errors), the bounded bisection on numbers, its answer read from
the rate points of the run book (the frontier, every export), and one sweep on the simulator."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import pytest

from eagletui.core.events import BenchmarkResult, BenchmarkStarted, LaunchStarted
from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.max_rate import MaxRateSpec
from eagletui.core.profile.model import ProfileError
from eagletui.core.runs.frontier import frontiers
from eagletui.core.runs.frontier_text import frontier_lines
from eagletui.core.runs.max_rate import Trial, sustainable
from eagletui.core.sweep.maxrate import RESOLUTION, Bisection
from eagletui.session.export import build_report
from eagletui.session.export_render import render_json
from tests.test_slo_frontier import NOSPEC, SLO, SPEC, _bench, _book, _launch, _requests

BASE = """name = "t"
[server]
command = ["python3", "-m", "eagletui.sim"]
[server.args]
model-path = "m"
"""
SLO_TOML = "[slo]\nttft_ms = { p = 90, max = 500 }\n"


def _parse(max_rate: str, *, slo: str = SLO_TOML, bench: str = ""):
    sweep = '[sweep]\n[[sweep.variants]]\nname = "as is"\n[sweep.max_rate]\n' + max_rate
    return parse_profile(BASE + bench + slo + sweep, "p.toml")


# ---------------------------------------------------------------- the profile


def test_the_table_is_read_with_its_defaults():
    spec = _parse("low = 0.5\nhigh = 16\n").sweep.max_rate
    assert spec == MaxRateSpec(0.5, 16.0, 6, None, None)
    spec = _parse("low = 1\nhigh = 8\nsteps = 4\nconcurrency = 64\nnum_prompts = 100\n").sweep.max_rate
    assert spec == MaxRateSpec(1.0, 8.0, 4, 64, 100)


@pytest.mark.parametrize(
    ("body", "needle", "words"),
    [
        ("low = 1\nhigh = 8\n", "[sweep.max_rate]", "needs an [slo] table"),
        ("low = 2\nhigh = 2\n", "high = 2", "sweep.max_rate.high (2) must be above low (2)"),
        ("low = 1\nhigh = 8\nsteps = 40\n", "steps = 40", "sweep.max_rate.steps must be an integer from 2 to 12"),
        ("low = nan\nhigh = 8\n", "low = nan", "sweep.max_rate.low must be a number"),
        ("low = 1\nhigh = 8\nrate = 3\n", "rate = 3", "unknown key 'rate' in [sweep.max_rate]"),
        ("high = 8\n", "[sweep.max_rate]", "sweep.max_rate.low is required"),
    ],
)
def test_a_bad_table_is_a_located_error(body, needle, words):
    slo = "" if "needs an [slo]" in words else SLO_TOML
    with pytest.raises(ProfileError) as ei:
        _parse(body, slo=slo)
    text = BASE + slo + '[sweep]\n[[sweep.variants]]\nname = "as is"\n[sweep.max_rate]\n' + body
    line = next(i + 1 for i, x in enumerate(text.splitlines()) if x.startswith(needle))
    assert words in str(ei.value) and f"p.toml:{line}:" in str(ei.value), str(ei.value)


def test_a_runner_without_per_request_records_is_refused():
    with pytest.raises(ProfileError, match="needs the built-in benchmark client"):
        _parse("low = 1\nhigh = 8\n", bench='[bench]\nrunner = "bench_serving"\n')


# ---------------------------------------------------------------- the search, on numbers


def _search(capacity: float, spec: MaxRateSpec, near: float = 0.0) -> Bisection:
    """Run the bisection against a server that meets the SLO up to ``capacity`` req/s; a rate within
    ``near`` (relative) of it is judged within the noise and takes two benchmarks."""
    b = Bisection(spec)
    while (rate := b.next_rate()) is not None:
        close = abs(rate / capacity - 1) <= near
        b.record(Trial(rate, rate <= capacity, close), 2 if close else 1)
    return b


def test_bisection_brackets_the_capacity_within_its_step_budget():
    spec = MaxRateSpec(0.5, 16.0, 8)
    b = _search(5.3, spec)
    rates = [t.rate for t in b.trials]
    assert rates[:3] == [0.5, 16.0, round(math.sqrt(0.5 * 16), 3)]  # low, high, then the geometric middle
    assert b.runs <= 8 and len(rates) == len(set(rates))
    m = b.answer()
    assert m.rate is not None and m.fails_at is not None and m.rate <= 5.3 < m.fails_at
    assert m.fails_at / m.rate <= 1 + RESOLUTION or b.stopped.startswith("the step budget")
    assert "sustains" in m.text() and "misses it" in m.text()


def test_bisection_stops_early_and_says_why():
    spec = MaxRateSpec(1.0, 8.0, 6)
    low_misses = _search(0.5, spec)
    assert [t.rate for t in low_misses.trials] == [1.0] and "even 1 req/s misses" in low_misses.stopped
    assert low_misses.answer().rate is None and "misses the SLO even at 1 req/s" in low_misses.answer().text()
    high_meets = _search(100.0, spec)
    assert [t.rate for t in high_meets.trials] == [1.0, 8.0] and "the highest searched" in high_meets.stopped
    unjudged = Bisection(spec)
    unjudged.record(Trial(1.0, None))
    assert unjudged.next_rate() is None and "could not be judged" in unjudged.stopped
    # a noisy step runs twice, and both count against the budget
    noisy = _search(3.0, MaxRateSpec(1.0, 8.0, 4), near=0.5)
    assert noisy.runs <= 4 and len(noisy.trials) < 4 and noisy.answer().unsure


def test_a_rate_that_meets_above_a_miss_is_noise_not_capacity():
    m = sustainable([Trial(2.0, True), Trial(4.0, False), Trial(6.0, True)])
    assert (m.rate, m.fails_at) == (2.0, 4.0)


# ---------------------------------------------------------------- on the frontier


def _rate_bench(n, bench, rate, reqs, duration):
    """A benchmark with Poisson arrivals at ``rate`` (the workload says so, as the built-in client's)."""
    from eagletui.core.runs.latency import records_of

    wl = {"concurrency": 64, "prompts": "chat", "request_rate": rate}
    tokens = sum(r[3] for r in reqs)
    return [
        BenchmarkStarted(bench=bench, launch=n, workload=wl, workload_fingerprint=f"r{rate}"),
        BenchmarkResult(
            bench=bench,
            launch=n,
            output_throughput=tokens / duration,
            requests=len(reqs),
            duration_s=duration,
            workload_fingerprint=f"r{rate}",
            latency=records_of(reqs, seed=bench),
        ),
    ]


def _rate_session():
    """A no-spec launch measured closed-loop at concurrency 1, then at 2, 4 and 8 req/s: at 8 its TTFT
    p99 passes the 2 s bound (the requests queue)."""
    rng = random.Random(3)
    events = [_launch(2, NOSPEC)]
    events += _bench(2, 1, 1, _requests(rng, 1, 1.0), 10.0)
    for i, rate in enumerate((2.0, 4.0, 8.0)):
        reqs = _requests(rng, 1, 1.0)
        if rate == 8.0:
            reqs = [(t + 5000.0, itl, e2e + 5000.0, n) for t, itl, e2e, n in reqs]
        RAW[rate] = reqs
        events += _rate_bench(2, 10 + i, rate, reqs, 40 / rate)
    return events


RAW: dict[float, list[tuple[float, float, float, int]]] = {}


def test_rate_points_are_their_own_points_and_the_curve_says_its_max_rate():
    f = frontiers(_book(_rate_session()))[0]
    (curve,) = f.curves
    loads = [(p.concurrency, p.rate) for p in curve.points]
    assert loads == [(1, None), (64, 2.0), (64, 4.0), (64, 8.0)]  # never pooled with the closed loop
    assert curve.max_rate is not None and (curve.max_rate.rate, curve.max_rate.fails_at) == (4.0, 8.0)
    assert "no-spec sustains 4 req/s under the SLO (8 misses it; 3 rates tried)" in f.answer
    assert "(concurrency ≤ 1)" in f.answer  # the closed-loop answer stays the closed loop's
    text = "\n".join(frontier_lines(f.to_json(), all_points=True))
    assert "4/s≤64" in text and "8/s≤64" in text
    assert f.to_json()["curves"][0]["max_rate"]["req_s"] == 4.0
    # at a rate the cap (64) is not how many users share the tokens: y is tokens ÷ seconds in flight
    for p in curve.points[1:]:
        reqs = RAW[p.rate or 0]
        assert p.tok_s_per_user == pytest.approx(sum(r[3] for r in reqs) / sum(r[2] / 1000 for r in reqs))


def test_every_export_carries_the_max_rate():
    events = [
        replace(e, config={**e.config, "slo": SLO.to_dict()}) if isinstance(e, LaunchStarted) else e
        for e in _rate_session()
    ]
    doc = json.loads(render_json(build_report(events)))
    assert doc["frontier"][0]["curves"][0]["max_rate"]["fails_at_req_s"] == 8.0


# ---------------------------------------------------------------- on the simulator


@pytest.mark.slow
def test_a_sweep_searches_each_launch_for_its_max_rate(tmp_path, isolated_dirs, capsys):
    """One launch of the simulator, benchmarked at its concurrency, then the bisection over the rate in
    the same launch: the answer on the variant (sweep --json), its rate points and max rate on the
    frontier. How far the simulator's TTFT carries depends on the machine: the test reads what it
    said, not a number."""
    from eagletui.commands.demo import free_port
    from eagletui.commands.sweep import main
    from tests.conftest_sim import sim_profile_toml

    rest = (
        "[bench]\nnum_prompts = 6\nconcurrency = 2\nmax_new_tokens = 16\nwarmup = 1\n"
        "[slo]\nttft_ms = { p = 90, max = 30 }\n"
        '[sweep]\nrepeats = 1\n[[sweep.variants]]\nname = "as is"\n'
        "[sweep.max_rate]\nlow = 50\nhigh = 5000\nsteps = 3\n"
    )
    prof = sim_profile_toml(tmp_path, free_port(), rest=rest)
    rc = main(["local", "--profile", prof, "--json", "--no-preflight", "--no-record"])
    out = capsys.readouterr()
    assert rc in (0, 1), out.err
    rep = json.loads(out.out)
    mr = rep["variants"][0]["max_rate"]
    assert mr and 1 <= mr["benchmarks"] <= 3 and mr["stopped"], mr
    assert mr["trials"][0]["req_s"] == 50 and all(t["meets_slo"] is not None for t in mr["trials"]), mr
    assert "max rate: 50 req/s" in out.err
    (curve,) = rep["frontier"][0]["curves"]
    assert [p["request_rate"] for p in curve["points"]][1:] == sorted(t["req_s"] for t in mr["trials"])
    assert curve["max_rate"]["req_s"] == mr["req_s"]


def test_a_max_rate_search_is_no_concurrencys_point_in_the_economics():
    """On the H200 (2026-12-02, part maxrate) each launch's four Poisson steps ran with the 48 prompts as
    their cap, and the spec curve's calls read "Not judged at 48: both sides decoded eagerly …" four times:
    a rate step is not a closed loop of 48 streams. The economics judge closed loops only; the steps stay
    on the frontier as rate points."""
    rng = random.Random(5)
    events = [_launch(1, SPEC), _launch(2, NOSPEC)]
    events += _bench(1, 1, 1, _requests(rng, 1, 1.3), 10.0, acc=3.0)
    events += _bench(2, 2, 1, _requests(rng, 1, 1.0), 10.0)
    for n, first in ((1, 10), (2, 20)):
        for i, rate in enumerate((2.0, 4.0, 8.0, 16.0)):
            events += _rate_bench(n, first + i, rate, _requests(rng, 1, 1.0), 40 / rate)
    book = _book(events)
    assert [r.concurrency for r in book.concurrency_table(1)] == [1]
    (f,) = frontiers(book)
    spec = next(c for c in f.curves if c.spec)
    assert "64" not in spec.across
    assert [p.rate for p in spec.points] == [None, 2.0, 4.0, 8.0, 16.0]  # still drawn, as rate points
