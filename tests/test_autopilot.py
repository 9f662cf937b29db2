"""Issue 37: ``n`` stages what the one ranking puts first. On recordings of the demo (tmux, ``b`` then
``n`` three times; only the events the run book folds kept): the H200 preset (80x24,
tests/fixtures/autopilot/demo-h200-n.jsonl): speculation off first (the model had no prediction), then
the predicted winner, and after that launch missed its prediction the measured best again — never
"keep" over a worse setting; where the predicted winner measured best (demo-h200-n-steps5.jsonl), keep it;
the PCIe preset (200x50, demo-pcie-n.jsonl): speculation off, then keep."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.commands.demo import write_demo_profile
from eagletui.core.predict.autopilot import propose
from eagletui.core.predict.next_launch import prediction_diagnoses
from eagletui.core.profile.load import load_profile
from eagletui.core.runs.book import RunBook
from eagletui.session.index import ReplaySource
from eagletui.ui.screens.autopilot import NextLaunchScreen
from tests.replay_apps import replay_app

FIXTURES = Path(__file__).parent / "fixtures" / "autopilot"


def _events(name: str) -> list:
    with ReplaySource.open(FIXTURES / name) as src:
        return [ev for _line, _t, ev in src.context]


@pytest.fixture(scope="module")
def events():
    return _events("demo-h200-n.jsonl")


def test_n_on_the_pcie_preset_ends_at_speculation_off():
    pcie = _events("demo-pcie-n.jsonl")
    first = propose(_book(pcie, 1), 1)
    assert first.label == "speculation off"
    for _ in range(2):  # n again, and again: nothing beats what runs
        again = propose(_book(pcie, 2), 2)
        assert again.label == "keep" and not again.flags and "#2 speculation off" in again.why


def _book(events, upto: int) -> RunBook:
    book = RunBook()
    for e in events:
        if getattr(e, "launch", 0) and e.launch > upto:
            continue
        book.apply(e)
    return book


def test_n_three_times_on_the_h200_preset_ends_at_the_best_measured_step_count(events):
    first = propose(_book(events, 2), 2)
    assert first.label == "speculation off" and first.flags == {"--speculative-algorithm": None}
    assert "no prediction" in first.why
    second = propose(_book(events, 3), 3)
    assert second.label == "steps 5" and second.flags["--speculative-num-steps"] == 5
    assert second.flags["--speculative-algorithm"] == "EAGLE3"  # speculation back on from the no-spec run
    assert second.forecast is not None and "predicted" in second.text()
    # steps 5 measured far below its prediction: back to the best measured, steps 3 (#2), not "keep"
    third = propose(_book(events, 4), 4)
    assert third.label == "steps 3" and third.flags["--speculative-num-steps"] == 3
    assert "the best measured" in third.why and "#2" in third.why


def test_n_three_times_where_the_predicted_step_count_measured_best_stays_there():
    """The H200 demo of 2026-12-02 (tmux 200x50: sim-host h200-nvlink, b, then n three times): steps 3
    (#2), speculation off (#3), steps 5 predicted +11 % and measured 2693 tok/s (#4), the best. The third
    n used to propose steps 7, predicted +3 % with a -13 … +16 % band, "undecided" though its prediction
    sits inside the ±5 % noise of the one benchmark of steps 5: a launch could never show it better."""
    ev = _events("demo-h200-n-steps5.jsonl")
    assert propose(_book(ev, 2), 2).label == "speculation off"
    second = propose(_book(ev, 3), 3)
    assert second.label == "steps 5" and "undecided" in second.why
    third = propose(_book(ev, 4), 4)
    assert third.label == "keep" and not third.flags
    assert "#4 steps 5" in third.why and "the best measured" in third.why


def test_a_miss_beyond_the_band_says_so_and_counts_against_the_next_prediction_of_its_kind(events):
    book = _book(events, 4)
    ck = next(d for d in prediction_diagnoses(book, 4) if d.kind == "prediction_check")
    assert ck.level == "warn" and "outside its band" in ck.text and "less sure" in ck.text
    assert ck.data["outside_band"] is True


@pytest.mark.slow
async def test_n_opens_the_staged_next_launch_with_its_prediction_and_why(events, tmp_path):
    prof = load_profile(write_demo_profile(tmp_path))
    app = replay_app(events, profile=prof)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, NextLaunchScreen)
        body = str(screen.body)
        assert "next launch: steps 3" in body and "why first: the best measured" in body
        assert "benchmarks it once ready" in body
        await pilot.press("escape")
