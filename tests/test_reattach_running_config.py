"""Issue 31 item 2: a reattach with ``connect --profile P`` shows and relaunches what the server runs.

On the real H200 (shared/fixtures/sglang-0.5.17-h200-turn4, run 1): steps 2 → 3 applied, the UI
SIGKILLed, ``connect --profile c1.toml`` again: the Tune tab said ``running: steps 2`` while the server
ran 3, and ``s`` then ``r`` launched steps 2, undoing the applied change without a word. Here the same
on the simulator, through the real workspace and driver: two sessions, the second one reattached.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from eagletui.commands.demo import write_demo_profile
from eagletui.core.events import LaunchStarted, Notice
from eagletui.core.profile.load import load_profile
from eagletui.core.profile.model import Profile
from eagletui.core.profile.redact import REDACTED
from eagletui.core.profile.running import running_profile
from eagletui.core.profile.staged import StagedConfig
from eagletui.core.state.launch import ServerState
from eagletui.core.timings import FAST
from eagletui.session.drivers import LiveDriver
from eagletui.session.model import SessionModel
from eagletui.workspace import Workspace

STEPS = "arg:--speculative-num-steps"
FIXTURE = Path(__file__).parent / "fixtures" / "real-0.5.17-turn4-ui"


class _Host:
    """The driver's host without a screen: says yes to the reattached server's consent question, and no
    to following a server eagletui did not start (another test's simulator on this machine: a CI run's
    session followed one instead of launching, and its launch 1 "stopped" when that test ended)."""

    def __init__(self, model: SessionModel) -> None:
        self.model = model
        self.messages: list[str] = []

    def dispatch(self, ev: Any) -> None:
        self.model.dispatch(ev)

    def notify(self, message: str, **_kw: Any) -> None:
        self.messages.append(message)

    async def ask(self, question: str) -> bool:
        return "eagletui did not start" not in question

    def config_changed(self) -> None:
        pass

    def settled(self) -> None:
        pass


async def _ready(model: SessionModel, launch: int, timeout: float = 120.0) -> None:
    """Wait (bounded) for launch ``launch`` to be ready: 30 s was not enough for the simulator to start
    beside another suite on two cores."""
    deadline = time.monotonic() + timeout
    over = (ServerState.READY, ServerState.FAILED, ServerState.STOPPED, ServerState.EXITED)
    while time.monotonic() < deadline:
        if model.state.current == launch and model.state.server_state in over:
            break
        await asyncio.sleep(0.1)
    # a launch that ended another way says how (a CI run once saw launch 1 "stopped" before ready, and
    # waited out the 120 s with nothing to show why)
    la = model.state.launch
    why = ""
    if la is not None:
        why = f"; failure {la.failure!r}; exit {la.exit_code}/{la.exit_signal}; log {la.log_path}"
        if la.log_path and Path(la.log_path).is_file():
            why += "\n" + "\n".join(Path(la.log_path).read_text(errors="replace").splitlines()[-25:])
    assert model.state.current == launch and model.state.server_state == ServerState.READY, (
        f"launch {launch}: {model.state.server_state} after {time.monotonic() - deadline + timeout:.0f} s "
        f"(current {model.state.current}){why}"
    )


def _session(prof: Profile) -> tuple[SessionModel, _Host, LiveDriver, list[Any]]:
    model = SessionModel(target="local", profile=prof)
    seen: list[Any] = []
    model.subscribe(seen.append)
    driver = LiveDriver(lambda emit: Workspace(prof, emit, target="local", preflight=False, timings=FAST))
    return model, _Host(model), driver, seen


@pytest.mark.slow
async def test_a_reattach_shows_and_relaunches_the_running_config_not_the_file(tmp_path: Path) -> None:
    prof = load_profile(write_demo_profile(tmp_path, time_scale=0.004))
    toggle = prof.toggle(STEPS)
    assert toggle is not None and prof.toggle_value(toggle) == 3
    # session 1: the file's steps 3, then steps 4 applied; the UI goes away, the server keeps running
    model, host, driver, _ = _session(prof)
    try:
        await driver.run(model, host)
        await _ready(model, 1)
        assert model.staged.stage(STEPS, 4) is None
        assert await driver.launch(model.staged.apply(), model, host, model.staged.pending)
        await _ready(model, 2)
    finally:
        await driver.close()
    # session 2: connect --profile with the same file (steps 3): it reattaches to launch #2 (steps 4)
    model, host, driver, seen = _session(prof)
    try:
        await driver.run(model, host)
        ws = driver.workspace
        assert ws is not None and ws.run is not None and ws.run.launch == 2
        # the Tune tab's running value is the server's, the file's beside it, and which one r uses
        assert model.staged.profile is not None and model.staged.profile.toggle_value(toggle) == 4
        assert model.staged.file_value(toggle) == (True, 3)
        assert model.staged.file_diff() == {STEPS: [4, 3]}
        said = [e.message for e in seen if isinstance(e, Notice) and e.source == "attach"]
        assert any("r relaunches the running config" in m and "steps 4→3" in m for m in said), said
        assert any("differs from the profile file" in m for m in host.messages), host.messages
        # r: relaunch with the running config — the applied steps 4, never the file's 3
        assert await driver.launch(None, model, host)
        started = [e for e in seen if isinstance(e, LaunchStarted)]
        assert [e.launch for e in started][-1] == 3
        assert started[-1].config["args"]["--speculative-num-steps"] == 4
        assert ws.run.argv[ws.run.argv.index("--speculative-num-steps") + 1] == "4"
        assert model.staged.profile.toggle_value(toggle) == 4 and model.staged.file_value(toggle) == (True, 3)
        # F: the file's values are staged (a, d show and launch them); nothing is applied by itself
        assert model.staged.stage_file() is None
        assert model.staged.pending == {STEPS: 3} and model.staged.diff() == {STEPS: [4, 3]}
        assert model.staged.apply().args["--speculative-num-steps"] == 3
    finally:
        if driver.workspace is not None:
            await driver.workspace.close(stop_server=True)
        await driver.close()


def test_the_running_profile_is_the_files_with_the_recorded_flags_and_env(tmp_path: Path) -> None:
    """The real run 1's recorded config (run.json of launch #2, steps 3) over the profile file c1.toml
    (steps 2): the flags and env are the run's, everything else the file's."""
    file = load_profile(FIXTURE / "c1.toml")
    snap = json.loads((FIXTURE / "run2.json").read_text())["config"]
    rec = running_profile(file, snap)
    assert rec.profile.args["--speculative-num-steps"] == 3 and file.args["--speculative-num-steps"] == 2
    assert rec.file_diff == {STEPS: [3, 2]} and not rec.problem and not rec.dropped_secrets
    assert rec.profile.toggles == file.toggles and rec.profile.bench == file.bench
    assert rec.profile.argv()[-4:] == ["--host", "127.0.0.1", "--port", "31777"]
    staged = StagedConfig(file)
    staged.rebase(rec.profile, file=file)
    assert staged.file_value(file.toggle(STEPS)) == (True, 2)  # type: ignore[arg-type]


def test_a_redacted_secret_comes_from_the_file_and_a_bad_record_is_refused(tmp_path: Path) -> None:
    file = load_profile(FIXTURE / "c1.toml")
    file.args["--api-key"] = "sk-live-abcdef123456"
    snap = json.loads((FIXTURE / "run2.json").read_text())["config"]
    snap["args"]["--api-key"] = REDACTED
    snap["env"]["HF_TOKEN"] = REDACTED
    rec = running_profile(file, snap)
    assert rec.profile.args["--api-key"] == "sk-live-abcdef123456"  # never "***" on a relaunch
    assert rec.dropped_secrets == ["HF_TOKEN"] and "HF_TOKEN" not in rec.profile.env
    # a hostile or damaged run.json: a newline in a value, a flag the loader refuses
    for bad in ({"--x": "a\nb"}, {"--port": 1}, {"not a flag!": 1}):
        snap2 = dict(snap, args=bad)
        rec = running_profile(file, snap2)
        assert rec.profile is file and rec.problem.startswith("the run's recorded config cannot be read")
    assert running_profile(file, None).profile is file and running_profile(file, {"args": []}).profile is file


@pytest.mark.slow
@pytest.mark.parametrize("size", [(200, 50), (80, 24)])
async def test_the_tune_tab_shows_both_and_says_which_r_uses(tmp_path: Path, size: tuple[int, int]) -> None:
    """What the reattached session's Tune tab shows (the driver rebases the staged config on the run's
    recorded profile, with the file beside it): the running value, the file's, and which one r uses."""
    from tests.replay_apps import replay_app
    from tests.test_tune_help import _screen_text

    file = load_profile(FIXTURE / "c1.toml")
    rec = running_profile(file, json.loads((FIXTURE / "run2.json").read_text())["config"])
    app = replay_app(profile=file)
    async with app.run_test(size=size) as pilot:
        await app.replay_done.wait()
        screen: Any = app.screen
        screen.model.staged.rebase(rec.profile, file=file)
        screen.config_changed()
        await pilot.press("3")
        await pilot.pause()
        flat = " ".join(_screen_text(app).split())
        assert "3 (file 2)" in flat, flat
        lines = _screen_text(app).splitlines()  # the pane's lines sit beside the charts at 200 columns
        note = " ".join(line.split("▕")[-1].strip() for line in lines if "▕" in line)
        note = " ".join((note if size[0] > 100 else flat).split())
        assert "the server runs its recorded config, not the profile file's: running → c1.toml:" in note
        assert "--speculative-num-steps 3→2. r relaunches the running config; F stages the file's values" in note
        await pilot.press("F")
        await pilot.pause()
        assert screen.model.staged.pending == {STEPS: 2}
        assert "Tune (1)" in " ".join(_screen_text(app).split())


def test_a_control_sequence_recorded_on_the_host_never_reaches_the_screen() -> None:
    """run.json is the host's file: a value with an escape sequence loads (it is no newline) but the
    Tune tab's note shows it inert; a file the server runs as it is is not shown at all."""
    from eagletui.ui.widgets.tuning import file_note

    file = load_profile(FIXTURE / "c1.toml")
    snap = json.loads((FIXTURE / "run2.json").read_text())["config"]
    snap["args"]["--dtype"] = "\x1b[2Jbfloat16"
    rec = running_profile(file, snap)
    staged = StagedConfig(file)
    staged.rebase(rec.profile, file=file)
    note = file_note(staged).plain
    assert "--dtype" in note and "bfloat16" in note and "\x1b" not in note
    same = StagedConfig(file)
    same.rebase(file, file=file)
    assert same.file is None and not file_note(same).plain and same.stage_file() is not None
