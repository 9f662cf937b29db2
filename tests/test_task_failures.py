"""Issue 20 item 7: no background task fails silently. Every Textual worker is named and its failure
goes through the app's one Worker.StateChanged handler; the live source's tail and process watch and
the workspace's GPU poll report theirs as TaskFailed. Each failure is recorded, toasted, and the status
line says what stopped. Real processes and files; the faults are injected at the transport."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from eagletui.config import UserConfig
from eagletui.core.events import Event, TaskFailed
from eagletui.core.timings import FAST
from eagletui.remote.control import RunInfo, ServerControl
from eagletui.remote.local import LocalTransport
from eagletui.remote.source import LiveSource
from eagletui.session.drivers import LiveDriver
from eagletui.ui.app import EagleApp
from eagletui.ui.widgets.status import StatusHeader


class _Recorded:
    """An EventWriter that keeps what it is given (the recording's view of the session)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.error = None

    def write(self, event: Event) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass


async def test_a_driver_that_raises_is_shown_recorded_and_named_in_the_status_line() -> None:
    """It used to leave no toast, no notice and a status bar saying "server idle"."""

    def broken_factory(_emit):
        raise RuntimeError("workspace factory exploded")

    rec = _Recorded()
    app = EagleApp(
        profile=None,
        target="local",
        driver=LiveDriver(broken_factory),
        recorder=rec,
        user_config=UserConfig(record=False),
    )
    async with app.run_test(size=(200, 50)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if app.state.failed_tasks:
                break
        app.repaint_now()
        await pilot.pause()
        assert app.state.failed_tasks == {"driver": "RuntimeError: workspace factory exploded"}
        header = app.query_one(StatusHeader).render().plain
        assert "⚠ stopped: driver" in header, header
        shown = [(n.title, n.message) for n in app._notifications]
        assert ("driver stopped", "RuntimeError: workspace factory exploded") in shown, shown
        assert any(isinstance(e, TaskFailed) and e.task == "driver" for e in rec.events)
        assert app.is_running  # one failure does not end the app


class _BrokenStream(LocalTransport):
    """The host's reader breaks with an error the tail does not retry (a bug, not a dropped link)."""

    async def stream(self, argv):  # type: ignore[override]
        raise RuntimeError("reader exploded")
        yield b""  # pragma: no cover


class _BrokenRun(LocalTransport):
    async def run(self, argv, *, timeout=30, input=None):  # type: ignore[override]
        raise RuntimeError("run exploded")


def _sleeper_run(tmp_path: Path) -> tuple[subprocess.Popen[bytes], RunInfo]:
    log = tmp_path / "server.log"
    log.write_text("hello\n")
    sleeper = subprocess.Popen(["sleep", "30"])
    start = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    run = RunInfo(
        run_id="t", run_dir="", log_path=str(log), pid=sleeper.pid, pgid=sleeper.pid,
        start_time=start, argv=[], port=0, launch=1, owned=False,
    )  # fmt: skip
    return sleeper, run


async def _first_task_failed(source: LiveSource) -> list[Event]:
    got: list[Event] = []

    async def consume() -> None:
        async for e in source.events():
            got.append(e)
            if isinstance(e, TaskFailed):
                return

    try:
        await asyncio.wait_for(consume(), 20)
    finally:
        source.stop()
    return got


async def test_a_log_tail_that_breaks_is_a_task_failed_not_a_silent_stop(tmp_path: Path) -> None:
    sleeper, run = _sleeper_run(tmp_path)
    try:
        transport = _BrokenStream()
        source = LiveSource(
            transport, ServerControl(transport, str(tmp_path / "runs"), python=sys.executable, timings=FAST),
            run,
            timings=FAST,
        )
        got = await _first_task_failed(source)
    finally:
        sleeper.kill()
        sleeper.wait()
    failed = [e for e in got if isinstance(e, TaskFailed)]
    assert failed and failed[0].task == "log tail" and "reader exploded" in failed[0].message, got


async def test_a_process_watch_that_breaks_is_a_task_failed(tmp_path: Path) -> None:
    sleeper, run = _sleeper_run(tmp_path)

    class BrokenControl(ServerControl):
        async def liveness(self, run):  # type: ignore[override]
            raise ValueError("garbled liveness answer")

    try:
        transport = LocalTransport()
        source = LiveSource(
            transport,
            BrokenControl(transport, str(tmp_path / "runs"), python=sys.executable, timings=FAST),
            run,
            poll_s=0.1,
            timings=FAST,
        )
        got = await _first_task_failed(source)
    finally:
        sleeper.kill()
        sleeper.wait()
        await transport.close()
    failed = [e for e in got if isinstance(e, TaskFailed)]
    assert failed and failed[0].task == "process watch" and "garbled liveness answer" in failed[0].message


async def test_a_gpu_poll_that_breaks_is_a_task_failed(tmp_path: Path) -> None:
    from eagletui.core.profile.model import Profile
    from eagletui.workspace import Workspace

    got: list[Event] = []
    ws = Workspace(Profile(name="p"), got.append, target="local", preflight=False, timings=FAST)

    async def fake_open(*_a, **_k):
        return _BrokenRun()

    import eagletui.remote.transport as transport_mod

    real = transport_mod.open_transport
    transport_mod.open_transport = fake_open  # type: ignore[assignment]
    try:
        await ws.connect()
        for _ in range(100):
            await asyncio.sleep(0.02)
            if any(isinstance(e, TaskFailed) for e in got):
                break
    finally:
        transport_mod.open_transport = real  # type: ignore[assignment]
        await ws.close()
    failed = [e for e in got if isinstance(e, TaskFailed)]
    assert failed and failed[0].task == "gpu poll" and "run exploded" in failed[0].message, got
