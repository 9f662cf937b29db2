
"""A pinned baseline is an event (``BaselinePinned``), so everything folded from the session's events —
a replay, an export, a read-only browser tab following the owner's feed — judges the runs against the
baseline the screen showed, not against the first valid run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eagletui.core.events import BaselinePinned, Event
from eagletui.core.runs.book import RunBook
from eagletui.session.export import build_report
from eagletui.session.feed import FeedControl, FeedFollower, FeedWriter
from eagletui.session.format import read_session
from eagletui.session.model import SessionModel
from tests.replay_apps import replayed

SWEEP = Path(__file__).resolve().parent.parent / "sessions" / "demo-eagle3.jsonl"


def _events() -> list[Event]:
    return list(read_session(SWEEP)[1])


def test_a_pin_in_the_events_moves_the_baseline_of_every_fold() -> None:
    events = _events()
    book = RunBook()
    for ev in events:
        book.apply(ev)
    assert book.baseline == 1
    pinned = RunBook()
    for ev in [*events, BaselinePinned(launch=4)]:
        pinned.apply(ev)
    assert pinned.baseline == 4
    report = build_report([*events, BaselinePinned(launch=4)])
    assert report.baseline == 4
    assert [r.run.launch for r in report.records if r.is_baseline] == [4]


def test_a_pin_of_an_unknown_run_leaves_the_baseline() -> None:
    book = RunBook()
    for ev in [*_events(), BaselinePinned(launch=99)]:
        book.apply(ev)
    assert book.baseline == 1


def test_a_follower_of_the_feed_sees_the_owners_pin(tmp_path: Path) -> None:
    owner = SessionModel(target="local", learn_history=False)
    feed = FeedWriter(tmp_path / "feed.jsonl", target="local", source="replay")
    feed.attach(owner)
    for ev in _events():
        owner.dispatch(ev)
    owner.dispatch(BaselinePinned(launch=3))
    feed.end("done")
    view = SessionModel(target="x", learn_history=False)
    follower = FeedFollower(tmp_path / "feed.jsonl")
    follower.open()
    while items := follower.read(500):
        for item in items:
            if isinstance(item, FeedControl):
                if item.kind == "reset":
                    view.reset()
            else:
                view.dispatch(item)
    assert owner.runbook.baseline == view.runbook.baseline == 3


@pytest.mark.slow
async def test_m_in_the_runs_table_dispatches_the_pin() -> None:
    seen: list[Any] = []
    async with replayed((160, 50), events=_events()) as (app, pilot):
        app.model.subscribe(lambda ev: seen.append(ev))
        await pilot.press("4")
        table = app.query_one("#runs-table")
        table.focus()
        table.move_cursor(row=2)
        await pilot.press("m")
        await pilot.pause(0.3)
        assert app.runbook.baseline == 3
        assert [ev.launch for ev in seen if isinstance(ev, BaselinePinned)] == [3]
