"""Issue 32: speculation off predicted from a speculative launch alone (its step profile, no no-spec run).

The lent H200's grid (fixtures/real-sglang-0.5.17-partgrid, SGLang 0.5.17) measured speculation off at
493.2 / 1716.8 tok/s where eagletui said 777.7 / 2642.6 (+58 % / +54 %): it took the verify part for a
whole no-spec step, when a no-spec step also pays its share of the CPU-bound hand-offs between forwards
that the speculative cycle pays three times over. That share moves with the host's state (0.13-0.37 of
the gaps in four sessions), so the estimate carries a band that holds the measurement, and the ranking
does not decide against speculation off while the band reaches past its choice.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from eagletui.core import events as ev
from eagletui.core.cycle.model import SpecSettings
from eagletui.core.predict.forecast import Forecast, forecasts
from eagletui.core.predict.ranking import decisions
from eagletui.core.runs.book import RunBook
from eagletui.profiler import summarize_file
from eagletui.profiler.summary import step_breakdown

HERE = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-partgrid"


def _bench(name: str) -> dict[str, Any]:
    return json.loads((HERE / "bench" / f"grid-r1-{name}.json").read_text())  # type: ignore[no-any-return]


@functools.cache
def _profile() -> dict[str, Any]:
    return step_breakdown([summarize_file(str(next(HERE.glob("*-DECODE.trace.json.gz"))))])


def _steps3_book() -> RunBook:
    """The steps-3 launch with its benchmarks (as a session records them) and its step profile."""
    data = _bench("s3")
    book = RunBook()
    book.apply(ev.LaunchStarted(launch=1, target="local", config={"args": data["config"]["args"], "env": {}}))
    book.apply(ev.ServerReady(launch=1))
    for i, r in enumerate(data["repeats"]["runs"]):
        c = r["concurrency"]
        book.apply(ev.BenchmarkStarted(bench=i, launch=1, workload={"concurrency": c}))
        stats = {"tok_s": {"mean": 1000.0 / r["itl_ms"]["mean"]}, "ttft_ms": {"mean": r["ttft_ms"]["mean"]}}
        book.apply(
            ev.BenchmarkResult(
                bench=i, launch=1, output_throughput=r["output_throughput"], accept_length=r["accept_length"],
                requests=r["requests"], duration_s=r["duration_s"], workload_fingerprint=f"c{c}", stats=stats,
            )
        )
    book.apply(ev.ProfileCaptured(launch=1, summary=_profile()))
    return book


@pytest.mark.slow  # reads the real trace (≈ 1 s on a loaded machine)
def test_speculation_off_from_the_steps_3_profile_is_near_the_measurement_and_inside_its_band() -> None:
    measured = {r["concurrency"]: r["output_throughput"] for r in _bench("off")["repeats"]["runs"]}
    off = [f for f in forecasts(_steps3_book(), 1)[0] if f.settings is None]
    assert sorted(f.concurrency for f in off) == [1, 4]
    for f in off:
        m = measured[f.concurrency]
        # before: +57.7 % / +53.9 % with no band (the verify part as the whole step)
        assert abs(f.tok_s / m - 1) < 0.15, (f.concurrency, f.tok_s, m)
        assert f.low is not None and f.high is not None and f.low < m < f.high, (f.low, m, f.high)
        assert not f.measured and "only a no-spec launch can tell" in f.source


@pytest.mark.slow  # reads the real trace (≈ 1 s on a loaded machine)
def test_the_no_spec_step_estimate_lies_between_the_verify_alone_and_half_the_gaps() -> None:
    (b,) = [f for f in forecasts(_steps3_book(), 1)[0] if f.settings is None and f.concurrency == 1]
    assert b.low is not None and b.high is not None
    # the fastest a step can be (the verify alone) is the top of the band, well above the measurement
    assert b.high > 1.5 * 493.2 and b.low < 493.2 < b.tok_s * 1.15


def _row(label: str, s: SpecSettings | None, tok: float, low: float, high: float, measured: bool = False) -> Forecast:
    return Forecast(label, s, 1, tok, 700.0, None, "test", measured, low, high)


def test_an_estimated_speculation_off_whose_band_reaches_past_the_choice_is_not_ruled_out() -> None:
    win = _row("steps 5", SpecSettings(5), 980.0, 930.0, 1000.0)
    off_wide = _row("speculation off", None, 550.0, 380.0, 1017.0)
    d = decisions([win, off_wide], "steps 3")[1]
    assert d.winner is win and d.off_open is off_wide
    assert "speculation off not ruled out" in d.text() and "bench --vs-no-spec" in d.text()
    # the same estimate with a band below the winner's low edge: decided against, said as before
    off_narrow = _row("speculation off", None, 550.0, 380.0, 760.0)
    d = decisions([win, off_narrow], "steps 3")[1]
    assert d.off_open is None and "not ruled out" not in d.text()
    # a measured no-spec run is never "not ruled out": it is known
    measured = _row("speculation off", None, 550.0, 550.0, 550.0, measured=True)
    assert decisions([win, measured], "steps 3")[1].off_open is None


@pytest.mark.slow  # reads the real trace (≈ 1 s on a loaded machine)
def test_before_any_check_the_shown_band_holds_every_setting_the_round_measured() -> None:
    """The profile path's band was −6 … +5 % where steps 5 then measured 14 % below it (the model's
    alternatives and ±5 % for one benchmark: no launch-to-launch noise). Until this host has checks the
    band carries the spread measured between launches of one setting, and holds every launch of the round."""
    measured: dict[tuple[str, int], float] = {}
    for name, label in (("s1", "steps 1"), ("s2", "steps 2"), ("s4", "steps 4"), ("s5", "steps 5"), ("off", "speculation off")):
        for r in _bench(name)["repeats"]["runs"]:
            measured[(label, r["concurrency"])] = r["output_throughput"]
    fs = [f for f in forecasts(_steps3_book(), 1)[0] if (f.label, f.concurrency) in measured]
    assert len(fs) == 10
    halves = []
    for f in fs:
        lo, hi = f.shown()
        assert lo <= measured[(f.label, f.concurrency)] <= hi, (f.label, f.concurrency, lo, hi)
        assert "until this host has checks" in f.band
        if f.settings is not None:  # speculation off's own band is the gap share's, far wider
            halves.append((hi - lo) / 2 / f.tok_s)
    assert max(halves) < 0.25  # the prior's ±22 %: wide enough, not a blanket


def test_a_track_record_replaces_the_launch_prior() -> None:
    from eagletui.core.predict.checks import Record
    from eagletui.core.predict.forecast import LAUNCH_PRIOR
    from eagletui.core.predict.ranking import _with_record

    f = Forecast("steps 5", SpecSettings(5), 1, 1000.0, 800.0, 6.0, "test", False, 980.0, 1010.0, "", False, 0.05, LAUNCH_PRIOR)
    lo, hi = f.shown()
    assert lo < 800 and hi > 1200  # the prior: ±22 % and the base's ±5 %
    g = _with_record(f, Record("steps", (4.0, -2.0, 6.0)))
    lo, hi = g.shown()
    assert g.launch_noise == 0 and 900 < lo < 960 and 1010 < hi < 1080 and "3 checks on this host" in g.band


@pytest.mark.slow  # reads the real trace (≈ 1 s on a loaded machine)
def test_the_profile_says_how_long_the_gpu_idles_after_the_draft_replay() -> None:
    """Issue 32: the draft graph's replay (0.24 ms) is followed by GPU idle while the CPU prepares the
    verify; the cycle model reads that idle to tell a CPU-bound cycle (more forwards hide) from one whose
    GPU work adds up. The partgrid trace: 3.4 ms profiled a cycle."""
    draft = _profile()["parts"]["draft"]
    assert draft["idle_after_ms"] == pytest.approx(3.44, abs=0.05)
    assert draft["idle_after_ms"] > 5 * draft["replay_ms"]
