
"""Issue 20 item 15: the words on screen say what is true now — the search counter after a filter
change, the filter's reset key, the no-benchmark hint once the server is ready or dead, and the ETA
note beside a phase row that shows an ETA."""

from __future__ import annotations

import pytest

from eagletui.core import events as ev
from eagletui.core.runs.book import RunBook
from eagletui.core.state.launch import ServerState
from eagletui.ui.repaint import compare_text
from eagletui.ui.widgets.logview import LogView
from eagletui.ui.widgets.status import StatusHeader
from tests.replay_apps import replay_app, replayed


@pytest.mark.slow
async def test_the_search_counter_never_reads_hit_zero_after_a_filter_change() -> None:
    async with replayed((200, 50)) as (app, pilot):
        log = app.query_one(LogView)
        await pilot.press("e")  # errors only: the search below finds nothing there
        await pilot.pause()
        log.set_search("Decode batch")
        assert log.hit_label() == "no hits"
        await pilot.press("0")  # every line again: now there are hits
        await pilot.pause()
        label = log.hit_label()
        assert label.startswith("hit ") and not label.startswith("hit 0/"), label
        n = len(log.hits)
        assert label == f"hit {n}/{n}"
        # a filter change keeps the current hit on the same line when it is still shown
        log.next_hit(-1)
        row = log._hit_rows[log.hit_index]
        await pilot.press("c")  # decode lines: the hit (a Decode line) is still shown
        await pilot.pause()
        assert log._hit_rows[log.hit_index] is row


@pytest.mark.slow
async def test_the_filter_header_names_its_reset_key() -> None:
    async with replayed((200, 50)) as (app, pilot):
        await pilot.press("e")
        await pilot.pause()
        app.repaint_now()
        await pilot.pause()
        header = app.query_one(StatusHeader).render().plain
        assert "log filter: errors (key 0: all lines)" in header and "(0 resets)" not in header


def test_the_no_benchmark_hint_follows_the_server() -> None:
    book = RunBook()
    assert (
        compare_text(book, None, ServerState.LOADING).plain
        == "no benchmark yet: press b when the server is ready"
    )
    assert compare_text(book, None, ServerState.READY).plain == "no benchmark yet: press b to run one"
    assert "the server failed (r relaunches it)" in compare_text(book, None, ServerState.FAILED).plain
    assert "the server exited" in compare_text(book, None, ServerState.EXITED).plain
    assert "press b" not in compare_text(book, None, ServerState.READY, can_bench=False).plain


@pytest.mark.slow
async def test_ready_and_dead_servers_do_not_say_press_b_when_ready() -> None:
    for tail, want in (
        ([ev.ServerReady(launch=1)], "press b to run one"),
        ([ev.ProcessExited(code=1, launch=1)], "r relaunches it"),
    ):
        app = replay_app([ev.LaunchStarted(launch=1, target="local"), *tail])
        async with app.run_test(size=(200, 50)) as pilot:
            await app.replay_done.wait()
            await pilot.pause()
            app.repaint_now()
            await pilot.pause()
            text = str(app.query_one("#compare").render())
            assert "when the server is ready" not in text, text
            assert ("no benchmark in this recording yet" in text) or (want in text), text


@pytest.mark.slow
async def test_no_estimate_note_does_not_contradict_a_phase_eta() -> None:
    events = [
        ev.LaunchStarted(launch=1, target="local"),
        ev.PhaseStarted(phase="load_target", launch=1),
        ev.PhaseProgress(phase="load_target", done=10, total=64, unit="shards", launch=1),
    ]
    app = replay_app(events)
    async with app.run_test(size=(200, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        app.repaint_now()
        await pilot.pause()
        summary = str(app.query_one("#phase-summary").render())
        assert "first launch: no estimate" not in summary and "ETA from progress only" in summary, summary
