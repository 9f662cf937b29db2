"""Seeking without a UI: the driver resets the model and folds the replayer's catch-up, and the result
is what folding the recording from its start up to that point gives."""

from __future__ import annotations

from pathlib import Path

from eagletui.core.runs.book import RunBook
from eagletui.core.state.screen import SessionState
from eagletui.session.drivers import ReplayDriver
from eagletui.session.format import read_session
from eagletui.session.index import ReplaySource
from eagletui.session.model import SessionModel
from eagletui.session.replay import StreamReplayer

EXAMPLE = Path(__file__).resolve().parent.parent / "sessions" / "example-demo.jsonl"


class Host:
    """A headless DriverHost: folds into the model, keeps the messages."""

    def __init__(self, model: SessionModel) -> None:
        self.model = model
        self.messages: list[str] = []
        self.settles = 0

    def dispatch(self, ev) -> None:
        self.model.dispatch(ev)

    def notify(self, message: str, **_kw) -> None:
        self.messages.append(message)

    async def ask(self, question: str) -> bool:
        return False

    def config_changed(self) -> None:
        pass

    def settled(self) -> None:
        self.settles += 1


def _fold_until(t: float) -> tuple[SessionState, RunBook]:
    """The reference: every event up to ``t`` seconds from the first, folded from scratch."""
    _h, events, _w = read_session(EXAMPLE)
    state, book = SessionState(target="local"), RunBook()
    t0 = events[0].mono
    for ev in events:
        if ev.mono - t0 > t + 1e-9:
            break
        state.apply(ev)
        book.apply(ev)
    return state, book


def test_seek_rebuilds_the_state_from_scratch() -> None:
    with ReplaySource.open(EXAMPLE) as source:
        replayer = StreamReplayer(source)
        driver = ReplayDriver(replayer)
        model = SessionModel(target="local", learn_history=False)
        host = Host(model)
        resets: list[int] = []
        model.on_reset(lambda: resets.append(model.events_seen))

        assert driver.seek(model, host, launch=3)  # far ahead first: everything up to launch 3
        assert model.state.current == 3 and set(model.runbook.runs) == {1, 2, 3}
        assert driver.seek(model, host, time=30.0)  # then back: nothing of launch 3 may survive
        assert len(resets) == 2
        ref_state, ref_book = _fold_until(30.0)
        assert model.state.current == ref_state.current == 2
        assert set(model.runbook.runs) == set(ref_book.runs) == {1, 2}
        assert [r.to_dict() for r in model.runbook.rows()] == [r.to_dict() for r in ref_book.rows()]
        assert {n: la.status for n, la in model.state.launches.items()} == {
            n: la.status for n, la in ref_state.launches.items()
        }
        assert [e.type for e in model.report_events].count("launch_started") == 2
        assert host.settles == 2

        assert not driver.seek(model, host, step=-1, kinds=frozenset({"nothing"}))  # nowhere: no reset
        assert len(resets) == 2
        assert driver.seek_by(model, host, -100.0) and replayer.position == 0.0  # clamped at the start
        assert model.state.current == 0 and not model.runbook.runs


def test_reset_keeps_the_session_but_forgets_the_fold() -> None:
    model = SessionModel(target="box", learn_history=False)
    _h, events, _w = read_session(EXAMPLE)
    for ev in events:
        model.dispatch(ev)
    staged, recorder = model.staged, model.recorder
    assert model.runbook.runs and model.report_events
    model.reset()
    assert model.state.target == "box" and not model.state.launches and not model.runbook.runs
    assert model.report_events == [] and model.events_seen == 0
    assert model.staged is staged and model.recorder is recorder


async def test_a_seek_while_instant_playback_yields_the_loop_drops_the_event_in_hand() -> None:
    """Instant playback hands the loop back every 200 events, holding the next one: a seek made then
    must not let that event (from before the seek) into the fresh state."""
    import asyncio

    with ReplaySource.open(EXAMPLE) as source:
        replayer = StreamReplayer(source)
        replayer.set_speed("instant")
        gen = replayer.play()
        for _ in range(199):
            await gen.__anext__()
        held = [ev for _line, _t, ev in source.events_from(199)][0]  # the 200th: fetched, then the yield
        nxt = asyncio.ensure_future(gen.__anext__())
        await asyncio.sleep(0)  # the generator runs up to its sleep(0), holding the 200th event
        assert not nxt.done()
        replayer.seek(time=0.0)
        expected = [ev for _line, _t, ev in source.events_from(replayer.index)][0]
        got = await nxt
        assert got is not held and got.to_dict() == expected.to_dict()
        await gen.aclose()
