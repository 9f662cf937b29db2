"""Issue 20 item 3: a hostile or broken ``nvidia-smi`` never ends the session. Non-finite readings are
unknown; a read that hangs (with a child holding the pipe open) times out on time and the numbers on
screen are marked stale with their age. A real fake ``nvidia-smi`` on PATH, the real LocalTransport,
the real app."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from eagletui.core.events import GpuStats, LaunchStarted
from eagletui.core.timings import FAST
from eagletui.remote.gpu import gpu_events, parse_query
from eagletui.remote.local import LocalTransport
from eagletui.ui.widgets.status import GpuStrip
from tests.replay_apps import replay_app

GOOD = "0, NVIDIA H200, 81000, 143771, 97, 690.5\n1, NVIDIA H200, 80000, 143771, 96, 688.0\n"
NAN = "0, NVIDIA H200, nan, 143771, nan, inf\n1, NVIDIA H200, 1e999, nan, -nan, 1.0\n"


def test_non_finite_values_are_unknown() -> None:
    gpus = parse_query(NAN)
    assert [g["mem_used_mb"] for g in gpus] == [None, None]
    assert gpus[0]["util_pct"] is None and gpus[0]["power_w"] is None and gpus[1]["mem_total_mb"] is None


@pytest.mark.slow
async def test_nan_gpu_values_do_not_crash_the_ui() -> None:
    """`ValueError: cannot convert float NaN to integer` at ui/widgets/status.py ended the app."""
    nan = float("nan")
    hostile = (
        {"index": 0, "name": "H200", "mem_used_mb": nan, "mem_total_mb": 143771.0, "util_pct": nan},
        {"index": 1, "name": "H200", "mem_used_mb": float("inf"), "mem_total_mb": nan, "util_pct": "x"},
        {"index": 2, "name": "H200", "mem_used_mb": 1e308, "mem_total_mb": 1e-308, "util_pct": 5},
    )
    app = replay_app([LaunchStarted(launch=1, target="local"), GpuStats(gpus=hostile)])
    async with app.run_test(size=(200, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        app.repaint_now()
        await pilot.pause()
        shown = str(app.query_one(GpuStrip).render())
        assert app.is_running and "0?" in shown and "?%" in shown, shown


@pytest.fixture
def fake_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Answers once, then hangs — and its child keeps stdout open (a helper it started)."""
    flag = tmp_path / "answered"
    script = tmp_path / "bin" / "nvidia-smi"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        f'if [ ! -e "{flag}" ]; then touch "{flag}"; printf "{GOOD}"; exit 0; fi\n'
        "sleep 300 &\n"  # the child holds the pipe
        "exec sleep 300\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    return script


@pytest.mark.slow
async def test_a_hung_nvidia_smi_whose_child_holds_the_pipe_is_stale_on_time(fake_nvidia_smi: Path) -> None:
    transport = LocalTransport()
    got: list[tuple[float, GpuStats]] = []
    t0 = time.monotonic()

    async def collect() -> None:
        async for ev in gpu_events(transport, FAST.replace(watch_gpu_poll_s=0.1, watch_gpu_read_s=1.0)):
            got.append((time.monotonic() - t0, ev))
            if len(got) == 3:
                return

    try:
        await asyncio.wait_for(collect(), 30)
    finally:
        await transport.close()
    first, second, third = (ev for _t, ev in got)
    assert len(first.gpus) == 2 and not first.stale
    assert second.stale == "nvidia-smi gave no answer within 1s" and not second.gpus
    # each hung read is given up at its timeout (+ the kill), not when the pipe's last holder exits
    assert got[1][0] < 5 and got[2][0] - got[1][0] < 5, [t for t, _ in got]


async def test_stale_gpu_numbers_are_marked_with_their_age() -> None:
    good = GpuStats(gpus=tuple(parse_query(GOOD)))
    stale = GpuStats(stale="nvidia-smi gave no answer within 10s", wall=good.wall + 42)
    app = replay_app([LaunchStarted(launch=1, target="local"), good, stale])
    async with app.run_test(size=(200, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        app.repaint_now()
        await pilot.pause()
        shown = str(app.query_one(GpuStrip).render())
        assert "GPUs stale 42s (nvidia-smi gave no answer within 10s)" in shown, shown
        assert "79G 97%" in shown  # the last numbers, still there, marked old


HUGE = "0, NVIDIA H200, 1e308, 143771, 1e308, 1e308\n1, NVIDIA H200, 81000, 1e308, -5, 690.5\n"


def test_readings_past_what_a_gpu_can_report_are_unknown() -> None:
    """Issue 33 item 6: ``nvidia-smi`` printing 1e308 was recorded as read, then refused by the reader."""
    gpus = parse_query(HUGE)
    assert [(g["mem_used_mb"], g["util_pct"], g["power_w"]) for g in gpus] == [(None, None, None), (81000.0, None, 690.5)]
    assert gpus[1]["mem_total_mb"] is None


@pytest.mark.slow
async def test_a_huge_reading_is_drawn_in_a_few_characters(tmp_path: Path) -> None:
    """The strip drew ``util 1e308`` as a 309-digit integer across two lines; the recording of it
    is read back whole."""
    from eagletui.session.format import read_session
    from eagletui.session.record import Recorder

    rec = Recorder(tmp_path / "s.jsonl", target="local", profile_name="p")
    sample = GpuStats(gpus=tuple(parse_query(HUGE)))
    rec.write(sample)
    rec.close()
    _h, events, warnings = read_session(tmp_path / "s.jsonl")
    assert not warnings and events[0] == sample
    raw = ({"index": 0, "name": "H200", "mem_used_mb": 1e308, "mem_total_mb": 143771.0, "util_pct": 1e308},)
    app = replay_app([LaunchStarted(launch=1, target="local"), GpuStats(gpus=raw)])
    async with app.run_test(size=(80, 24)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        app.repaint_now()
        await pilot.pause()
        shown = str(app.query_one(GpuStrip).render())
        assert "?G ?%" in shown and len(shown) < 40, shown
