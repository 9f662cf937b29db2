"""Startup, cold and warm (issue 35 item 6): per launch signature, the distribution of launch time and of
each phase, split by the page cache the preflight measured before each launch; the phase panel's ETA
rests on launches of the same state, and ``eagletui sessions`` prints the table. Pure and in-process."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from eagletui.core import events as ev
from eagletui.core.phases.history import PhaseHistory, history_key
from eagletui.core.phases.startup_stats import LaunchRecord, by_state, estimates_for, startup_lines
from eagletui.session.model import SessionModel

REAL_SESSION = Path(__file__).parent / "fixtures" / "real-0.5.17-turn4-ui" / "session-kill9.jsonl"
COLD = LaunchRecord({"load_target": 312.0, "capture_target": 95.0}, 520.0, "cold")
WARM = [LaunchRecord({"load_target": s, "capture_target": 93.0 + i}, 290.0 + 10 * i, "warm") for i, s in enumerate((88.0, 92.0, 96.0))]
OLD = LaunchRecord({"load_target": 100.0, "capture_target": 97.0})  # history from before the cache was kept


def test_the_distribution_splits_by_page_cache() -> None:
    st = by_state([COLD, *WARM, OLD])
    assert list(st) == ["warm", "cold", "unknown"]
    w = st["warm"]
    assert w.launches == 3 and w.total is not None and (w.total.p50, w.total.p90) == (300.0, 308.0)
    assert (w.phases["load_target"].p50, round(w.phases["load_target"].p90, 1)) == (92.0, 95.2)
    assert st["cold"].total is not None and st["cold"].total.p50 == 520.0
    # no launch → ready recorded: the sum of the phases, and the table says so
    assert st["unknown"].total is not None and st["unknown"].total.p50 == 197.0 and not st["unknown"].measured_total
    lines = startup_lines([(history_key({"target": "root@gpu1", "model": "org/Kimi-K2.5", "tp": 8}), [COLD, *WARM, OLD])])
    assert lines[0] == "  root@gpu1 · Kimi-K2.5 · tp 8"
    assert lines[1].split()[:8] == ["warm", "3", "launches", "ready", "p50", "5m00s", "p90", "5m08s"]
    assert "load_target p50 1m32s p90 1m35s" in lines[1] and "(Σ phases)" in lines[3]


def test_the_eta_rests_on_launches_of_the_same_page_cache() -> None:
    ests, basis = estimates_for([COLD, *WARM, OLD], "cold")
    assert ests["load_target"] == (312.0, 312.0) and basis == "cold page cache, 1 launch"
    ests, basis = estimates_for([COLD, *WARM], "warm")
    assert ests["load_target"][0] == 92.0 and basis == "warm page cache, 3 launches"
    # no launch of that state: all of them, and the words say the state is unmatched
    ests, basis = estimates_for(WARM, "cold")
    assert ests["load_target"][0] == 92.0 and basis == "3 launches, none with a cold page cache"
    ests, basis = estimates_for([COLD, *WARM], None)
    assert ests["load_target"][0] == 94.0 and basis == "4 launches (cold, warm page cache; this one's not measured)"
    assert estimates_for([], "warm") == ({}, "")


def test_the_history_file_keeps_total_and_cache_and_reads_old_rows(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    h = PhaseHistory(path)
    h.record("k", {"load_target": 90.0}, total=300.0, cache="warm")
    h.record("k", {"load_target": 300.0}, total=float("nan"), cache="lukewarm")  # bad values: dropped
    with path.open("a") as f:
        f.write(json.dumps({"key": "k", "t": 1, "phases": {"load_target": 100.0}}) + "\n")
    again = PhaseHistory.load(path)
    assert [(r.total, r.cache) for r in again.launches("k")] == [(300.0, "warm"), (None, None), (None, None)]
    assert again.keys() == ["k"] and again.samples("k", "load_target") == [90.0, 300.0, 100.0]


def _launch(model: SessionModel, n: int, cached: float | None, load_s: float) -> None:
    if cached is not None:  # the preflight before the launch measured the page cache
        model.dispatch(ev.HostFacts(facts={"checkpoint": {"bytes": 2e12, "cached": cached}}))
    model.dispatch(ev.LaunchStarted(launch=n, target="local", config={"target": "local", "args": {"--tp": 8}}, wall=100.0 * n))
    model.dispatch(ev.PhaseFinished(phase="load_target", seconds=load_s, launch=n, wall=100.0 * n + load_s))


def test_the_session_records_each_launchs_cache_and_estimates_by_it() -> None:
    hist = PhaseHistory()
    model = SessionModel(target="local", history=hist)
    for n, (cached, load_s) in enumerate(((0.02, 60.0), (0.97, 10.0), (0.99, 12.0)), 1):
        _launch(model, n, cached, load_s)
        model.dispatch(ev.ServerReady(launch=n, wall=100.0 * n + load_s + 1))
    key = history_key(model.state.launches[1].config)
    assert [r.cache for r in hist.launches(key)] == ["cold", "warm", "warm"]
    _launch(model, 4, 0.0, 1.0)  # loading now, cold: the ETA is the cold launch's
    assert model.cache_state() == "cold" and model.estimates()["load_target"][0] == 60.0
    assert model.eta_basis() == "cold page cache, 1 launch"
    _launch(model, 5, 0.95, 1.0)
    assert model.estimates()["load_target"][0] == 11.0 and model.eta_basis() == "warm page cache, 2 launches"
    _launch(model, 6, None, 1.0)  # not measured: every launch, saying so
    assert model.cache_state() is None and model.estimates()["load_target"][0] == 12.0


@pytest.mark.slow  # indexes a 600 kB real recording (~1.4 s)
def test_sessions_prints_the_startup_table_of_the_recorded_launches(tmp_path: Path) -> None:
    """The real 0.5.17 run on the lent H200 (issue 33's kill -9 session): the preflight found the tiny
    checkpoint wholly in the page cache (mincore 1.0), the launch reached ready in 67 s."""
    from eagletui.commands.sessions import main
    from eagletui.session.catalog import list_sessions

    shutil.copy(REAL_SESSION, tmp_path / "real.jsonl")
    [entry] = list_sessions(tmp_path)
    assert entry.summary is not None
    [row] = entry.summary.startup
    assert row["cache"] == "warm" and row["launch"] == 1 and 66 < row["total"] < 68
    assert json.loads(row["signature"])["flags"]["--speculative-num-steps"] == "3"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([str(tmp_path)]) == 0
    text = out.getvalue()
    assert "startup by launch signature (1 launch that reached ready;" in text
    assert "local · target · tp 1 · algorithm=EAGLE3 draft-model-path=/tmp/sgw/half/draft" in text
    assert re.search(r"\n    warm      1 launch     ready p50 1m07s p90 1m07s   launch p50 58s", text), text
