"""The owner's feed and the read-only view that follows it (session/feed.py, session/follow.py,
session/presence.py): a view folded from the feed ends in the owner's state, whenever it starts
reading, through resets, partial lines and damage."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from eagletui.commands._tty import no_terminal_message
from eagletui.core.events import Notice
from eagletui.session.feed import FeedControl, FeedFollower, FeedWriter
from eagletui.session.follow import FollowDriver
from eagletui.session.format import read_session
from eagletui.session.model import SessionModel
from eagletui.session.presence import Presence, write_presence

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "sessions" / "demo-eagle3.jsonl"


class Host:
    """A driver host with no UI: events into a model, messages into a list."""

    def __init__(self, model: SessionModel) -> None:
        self.model = model
        self.messages: list[str] = []
        self.settles = 0

    def dispatch(self, ev: Any) -> None:
        self.model.dispatch(ev)

    def notify(self, message: str, **_kw: Any) -> None:
        self.messages.append(message)

    async def ask(self, question: str) -> bool:
        return False

    def config_changed(self) -> None: ...

    def settled(self) -> None:
        self.settles += 1


def _summary(model: SessionModel) -> tuple[Any, ...]:
    book = model.runbook
    return (
        sorted(book.runs),
        [
            (round(r.results[-1].output_throughput, 3), r.results[-1].accept_length) if r.results else None
            for r in book.runs.values()
        ],
        model.state.server_state,
        model.state.current,
    )


def _events() -> list[Any]:
    _header, events, _warnings = read_session(SWEEP)
    return events


def _fold(path: Path) -> tuple[SessionModel, FeedFollower]:
    follower = FeedFollower(path)
    follower.open()
    model = SessionModel(target="x", learn_history=False)
    while items := follower.read(500):
        for item in items:
            if isinstance(item, FeedControl):
                if item.kind == "reset":
                    model.reset()
            else:
                model.dispatch(item)
    return model, follower


def test_a_view_folded_from_the_feed_has_the_owners_state(tmp_path: Path) -> None:
    owner = SessionModel(target="local", learn_history=False)
    feed = FeedWriter(tmp_path / "feed.jsonl", target="local", source="replay")
    feed.attach(owner)
    for ev in _events():
        owner.dispatch(ev)
    feed.end("done")
    assert oct((tmp_path / "feed.jsonl").stat().st_mode & 0o777) == "0o600"
    view, follower = _fold(tmp_path / "feed.jsonl")
    assert _summary(view) == _summary(owner)
    assert len(view.runbook.runs) == 4
    assert follower.ended and follower.end_reason == "done" and follower.source == "replay"
    assert follower.warnings == []


def test_a_reset_starts_the_view_over_like_the_owner(tmp_path: Path) -> None:
    events = _events()
    owner = SessionModel(target="local", learn_history=False)
    feed = FeedWriter(tmp_path / "feed.jsonl", target="local")
    feed.attach(owner)
    for ev in events:
        owner.dispatch(ev)
    owner.reset()  # a replay seek back to the start: the catch-up is the first launch only
    first_launch_end = next(i for i, e in enumerate(events) if e.type == "launch_started" and e.launch == 2)
    for ev in events[:first_launch_end]:
        owner.dispatch(ev)
    view, _ = _fold(tmp_path / "feed.jsonl")
    assert sorted(view.runbook.runs) == sorted(owner.runbook.runs) == [1]
    assert _summary(view) == _summary(owner)


def test_the_follower_waits_for_partial_lines_and_skips_damage(tmp_path: Path) -> None:
    path = tmp_path / "feed.jsonl"
    feed = FeedWriter(path, target="local")
    feed.write(Notice(message="one", wall=1.0, mono=1.0))
    follower = FeedFollower(path)
    follower.open()
    got = follower.read()
    assert [type(x).__name__ for x in got] == ["FeedControl", "Notice"]
    with open(path, "ab") as fh:  # half a line: nothing yet
        fh.write(b'{"type":"notice","message":"tw')
    assert follower.read() == []
    with open(path, "ab") as fh:
        fh.write(b'o","wall":2.0,"mono":2.0}\nnot json\n{"feed":"reset"}\n')
    got = follower.read()
    assert [getattr(x, "message", getattr(x, "kind", None)) for x in got] == ["two", "reset"]
    assert len(follower.warnings) == 1 and "not valid JSON" in follower.warnings[0]


def test_an_overlong_line_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "feed.jsonl"
    FeedWriter(path, target="local")
    follower = FeedFollower(path, max_line=1000)
    follower.open()
    follower.read()
    with open(path, "ab") as fh:
        fh.write(b'{"type":"notice","message":"' + b"x" * 5000)
    assert follower.read() == [] and len(follower._buf) <= 1000
    with open(path, "ab") as fh:
        fh.write(b"x" * 5000 + b'"}\n{"type":"notice","message":"after","wall":1.0,"mono":1.0}\n')
    got = follower.read()
    assert [x.message for x in got] == ["after"]  # type: ignore[union-attr]
    assert any("longer than 1000 bytes" in w for w in follower.warnings)


async def test_the_follow_driver_keeps_up_with_a_growing_feed(tmp_path: Path) -> None:
    events = _events()
    path = tmp_path / "feed.jsonl"
    owner = SessionModel(target="local", learn_history=False)
    feed = FeedWriter(path, target="local")
    feed.attach(owner)
    half = len(events) // 2
    for ev in events[:half]:
        owner.dispatch(ev)
    view = SessionModel(target="local", learn_history=False)
    host = Host(view)
    driver = FollowDriver(FeedFollower(path))
    assert not driver.learns_history and not driver.can_launch and not driver.can_bench
    task = asyncio.create_task(driver.run(view, host))
    deadline = time.monotonic() + 20
    while view.events_seen < half and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert host.settles >= 1, "the catch-up was not painted at once"
    for ev in events[half:]:  # the owner goes on while the view follows
        owner.dispatch(ev)
    feed.end()
    await asyncio.wait_for(task, 20)
    assert _summary(view) == _summary(owner)
    assert any("session ended" in m for m in host.messages)
    assert "read-only view" in driver.refusal()


async def test_a_view_stops_when_its_owner_is_gone_without_an_end(tmp_path: Path) -> None:
    path = tmp_path / "feed.jsonl"
    FeedWriter(path, target="local")  # the owner was killed: no end line will come
    presence_file = tmp_path / "presence.json"
    write_presence(presence_file, {"session": 1, "owner": {"visit": 1, "session": 1, "since": 1.0}})
    presence = Presence(presence_file, role="viewer", visit=2, session=1, clock=lambda: time.monotonic() * 10)
    view = SessionModel(target="local", learn_history=False)
    host = Host(view)
    task = asyncio.create_task(FollowDriver(FeedFollower(path), presence=presence).run(view, host))
    await asyncio.sleep(0.5)
    assert not task.done()  # the owner is there: keep following
    write_presence(presence_file, {"session": 1, "owner": None})
    await asyncio.wait_for(task, 10)
    assert any("is gone" in m for m in host.messages)


def test_presence_says_who_controls(tmp_path: Path) -> None:
    path = tmp_path / "presence.json"
    since = time.mktime((2026, 12, 1, 10, 32, 5, 0, 0, -1))
    write_presence(path, {"session": 1, "owner": {"visit": 1, "session": 1, "since": since}, "viewers": 2})
    owner = Presence(path, role="owner", visit=1, session=1)
    viewer = Presence(path, role="viewer", visit=3, session=1)
    assert owner.label() == "◆ you control this session · 2 read-only views"
    assert viewer.label() == "◇ read-only view · tab #1 (since 10:32:05) controls"
    assert viewer.read_only and not owner.read_only and viewer.owner_gone() is False
    write_presence(path, {"session": 2, "owner": {"visit": 4, "session": 2, "since": since}, "viewers": 0})
    viewer, owner = Presence(path, role="viewer", session=1), Presence(path, role="owner", session=2)
    assert "a new session started" in viewer.label() and viewer.owner_gone() is True
    assert owner.label().endswith("no other tabs")
    path.write_bytes(b"{not json")
    assert Presence(path, role="viewer", session=1).label() == "◇ read-only view"
    assert Presence(path, role="viewer", session=1).owner_gone() is None  # unknown, not gone
    path.write_text(json.dumps({"owner": {"visit": "\x1b[31m", "since": "x"}, "session": 1, "viewers": -5}))
    assert "\x1b" not in Presence(path, role="viewer", session=1).label()


def test_presence_comes_from_the_servers_environment() -> None:
    assert Presence.from_env({}) is None
    assert Presence.from_env({"EAGLETUI_SERVE_ROLE": "admin"}) is None
    p = Presence.from_env({"EAGLETUI_SERVE_ROLE": "viewer", "EAGLETUI_SERVE_SESSION": "3"})
    assert p is not None and p.read_only and p.session == 3


def test_a_web_driver_is_a_terminal(monkeypatch: Any) -> None:
    """The splash-forever bug: textual-serve runs the app on pipes with TEXTUAL_DRIVER set."""
    import io
    import sys

    monkeypatch.delenv("EAGLETUI_ALLOW_NO_TTY", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    assert "needs a terminal" in (no_terminal_message("replay") or "")
    for driver in ("textual.drivers.web_driver:WebDriver", "eagletui.web.driver:EagleWebDriver"):
        monkeypatch.setenv("TEXTUAL_DRIVER", driver)
        assert no_terminal_message("replay") is None
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.headless_driver:HeadlessDriver")
    assert no_terminal_message("replay") is not None
    assert os.environ["TEXTUAL_DRIVER"]
