"""The session model and the staged config, driven without any UI (what a headless command does)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path

import pytest

from eagletui.commands.demo import write_demo_profile
from eagletui.core.events import (
    BenchmarkResult,
    LaunchStarted,
    LogLine,
    PhaseFinished,
    PhaseStarted,
    ServerReady,
)
from eagletui.core.phases.history import PhaseHistory, history_key
from eagletui.core.profile.load import load_profile
from eagletui.core.profile.staged import NothingStaged, StagedConfig
from eagletui.core.state.launch import PhaseStatus, ServerState
from eagletui.core.timings import FAST
from eagletui.session.drivers import DemoDriver, LiveDriver, ReplayDriver, make_driver
from eagletui.session.format import read_session
from eagletui.session.model import SessionModel
from eagletui.session.record import Recorder
from eagletui.session.replay import Replayer

EXAMPLE = Path(__file__).resolve().parent.parent / "sessions" / "example-demo.jsonl"


@pytest.fixture
def profile(tmp_path: Path):
    return load_profile(write_demo_profile(tmp_path, port=30000))


def _launch(n: int = 1, **config) -> LaunchStarted:
    return LaunchStarted(launch=n, target="local", command=("python",), config=config, wall=100.0 + n)


# ---------------------------------------------------------------------------------- staged config


def test_stage_refuses_bad_values_and_unstages_the_running_one(profile) -> None:
    staged = StagedConfig(profile)
    assert staged.stage("arg:--speculative-num-steps", 99) is not None  # above the maximum
    assert staged.stage("arg:--no-such-toggle", 1) == "unknown toggle 'arg:--no-such-toggle'"
    assert staged.stage("env:NCCL_ALGO", "Bogus") is not None
    assert not staged.pending
    assert staged.stage("env:NCCL_ALGO", "Tree") is None
    assert staged.stage("arg:--speculative-num-steps", 5) is None
    assert staged.pending == {"env:NCCL_ALGO": "Tree", "arg:--speculative-num-steps": 5}
    assert staged.stage("env:NCCL_ALGO", "Ring") is None  # the running value: nothing to change
    assert staged.pending == {"arg:--speculative-num-steps": 5}
    assert staged.diff() == {"arg:--speculative-num-steps": [3, 5]}


def test_apply_keeps_the_staged_values_until_the_relaunch_started(profile) -> None:
    staged = StagedConfig(profile)
    with pytest.raises(NothingStaged):
        staged.apply()
    staged.stage("arg:--speculative-algorithm", None)
    new = staged.apply()
    assert "--speculative-algorithm" not in new.argv()
    assert staged.pending == {"arg:--speculative-algorithm": None}  # a refused preflight loses nothing
    staged.applied(["arg:--speculative-algorithm"])
    staged.rebase(new)
    assert not staged.pending and not staged.diff()


def test_rebase_drops_toggles_the_new_profile_lacks(profile) -> None:
    staged = StagedConfig(profile)
    staged.stage("env:NCCL_ALGO", "Tree")
    bare = dataclasses.replace(profile, toggles=())
    staged.rebase(bare)
    assert not staged.pending


def test_no_profile_stages_nothing() -> None:
    staged = StagedConfig(None)
    assert staged.stage("env:NCCL_ALGO", "Tree") == "no profile: nothing to stage"
    assert staged.preview() is None and staged.diff() == {}


# ---------------------------------------------------------------------------------- the model


def test_dispatch_folds_state_and_runs_before_observers_hear(profile) -> None:
    model = SessionModel(target="local", profile=profile)
    seen: list[tuple[str, ServerState]] = []
    model.subscribe(lambda ev: seen.append((ev.type, model.state.server_state)))
    model.dispatch(_launch(1, args={"--tp": 8}))
    model.dispatch(ServerReady(launch=1, wall=130.0))
    model.dispatch(BenchmarkResult(bench=1, launch=1, output_throughput=500.0, requests=4, wall=140.0))
    assert seen == [
        ("launch_started", ServerState.LAUNCHING),
        ("server_ready", ServerState.READY),
        ("bench_result", ServerState.READY),
    ]
    assert model.events_seen == 3
    assert model.runbook.row(1).tok_s.mean == 500.0
    assert model.state.launch.phases["ready"].status == PhaseStatus.DONE == "done"


def test_a_recording_that_breaks_is_reported_once_and_stops(tmp_path: Path, profile) -> None:
    rec = Recorder(tmp_path / "s.jsonl", target="local", profile_name="demo")
    model = SessionModel(target="local", profile=profile, recorder=rec)
    problems = []
    model.on_problem(problems.append)
    model.dispatch(_launch(1))
    os.close(rec._fd)  # the file goes away under the recorder: its next write fails for real
    for i in range(3):
        model.dispatch(LogLine(text=f"line {i}", kind="other", launch=1))
    assert [(p.source, p.severity) for p in problems] == [("record", "error")]
    assert "recording stopped" in problems[0].message
    assert model.recorder is None and model.state.log_lines == 3  # the session itself goes on


def test_problems_before_anyone_listens_are_kept(profile) -> None:
    class Broken:
        def write(self, ev) -> None:
            raise OSError("disk full")

        def close(self) -> None:
            pass

    model = SessionModel(target="local", profile=profile, recorder=Broken())
    model.dispatch(_launch(1))
    late = []
    model.on_problem(late.append)
    assert [p.message for p in late] == ["recording stopped: disk full"]


def test_a_run_book_failure_is_surfaced_not_swallowed(profile) -> None:
    model = SessionModel(target="local", profile=profile)
    problems = []
    model.on_problem(problems.append)
    model.dispatch(_launch(1))
    model.dispatch(PhaseStarted(phase="load_target", launch=1, wall=102.0))
    # a damaged recording: seconds that are not a number; the run book cannot fold it
    bad = PhaseFinished(phase="load_target", seconds="soon", launch=1, wall=103.0)  # type: ignore[arg-type]
    model.dispatch(bad)
    model.dispatch(bad)
    assert len(problems) == 1 and problems[0].source == "runs" and "phase_finished" in problems[0].message
    assert model.events_seen == 4  # the session goes on


def test_history_is_learned_live_but_not_from_a_replay(tmp_path: Path, profile) -> None:
    events = [_launch(1, target="local", args={"--tp": 8})]
    events.append(PhaseFinished(phase="load_target", seconds=12.0, launch=1, wall=110.0))
    events.append(ServerReady(launch=1, wall=120.0))
    live_hist, replay_hist = PhaseHistory(tmp_path / "a.jsonl"), PhaseHistory(tmp_path / "b.jsonl")
    live = SessionModel(target="local", profile=profile, history=live_hist)
    replay = SessionModel(target="local", history=replay_hist, learn_history=False)
    for ev in events:
        live.dispatch(ev)
        replay.dispatch(ev)
    key = history_key(live.state.launches[1].config)
    assert live_hist.samples(key, "load_target") == [12.0]
    assert replay_hist.samples(key, "load_target") == []
    assert live.estimates()["load_target"][0] == 12.0


def test_replay_judges_with_the_recorded_verdict_only_without_a_profile(profile) -> None:
    bare = SessionModel(target="local")
    bare.dispatch(_launch(1, verdict={"min_accept_len": 2.5}))
    assert bare.runbook.verdict.min_accept_len == 2.5
    own = SessionModel(target="local", profile=profile)
    own.dispatch(_launch(1, verdict={"min_accept_len": 2.5}))
    assert own.runbook.verdict == profile.verdict


# ---------------------------------------------------------------------------------- drivers


def test_drivers_say_what_they_can_do() -> None:
    replay, live, demo = make_driver("replay", replay=None), make_driver("live"), make_driver("demo")
    assert isinstance(replay, ReplayDriver) and replay.is_replay and not replay.can_launch
    assert not replay.rings_bells and replay.refusal() == "not available in replay"
    assert (
        isinstance(live, LiveDriver) and live.can_launch and live.can_bench and not live.stops_server_on_quit
    )
    assert isinstance(demo, DemoDriver) and demo.stops_server_on_quit and not demo.asks_about_foreign_servers
    with pytest.raises(ValueError):
        make_driver("bogus")


class _Host:
    def __init__(self, model: SessionModel) -> None:
        self.model = model
        self.messages: list[str] = []
        self.settled_at: int | None = None

    def dispatch(self, ev) -> None:
        self.model.dispatch(ev)

    def notify(self, message: str, **_kw) -> None:
        self.messages.append(message)

    async def ask(self, question: str) -> bool:
        return False

    def config_changed(self) -> None:
        pass

    def settled(self) -> None:
        self.settled_at = self.model.events_seen


def test_replay_driver_feeds_the_model_headless() -> None:
    _header, events, _ = read_session(EXAMPLE)
    rep = Replayer(events)
    rep.set_speed("instant")
    driver = ReplayDriver(rep)
    model = SessionModel(target="replay", learn_history=False)
    host = _Host(model)
    asyncio.run(driver.run(model, host))
    assert driver.done.is_set() and host.settled_at == len(events) == model.events_seen
    assert [r.launch for r in model.runbook.rows()] == [1, 2, 3]
    assert host.messages == ["end of recording"]
    assert not driver.toasts_milestones  # instant: the UI must not toast every launch
    assert driver.now(model, lambda: 0.0) == max(e.wall for e in events)


@pytest.mark.slow
async def test_demo_driver_launches_benchmarks_and_stops_with_no_ui(tmp_path: Path) -> None:
    """The live policy (connect → nothing to reattach → launch) and the commands, driven headless."""
    from eagletui.core.events import Notice
    from eagletui.workspace import Workspace

    prof = load_profile(write_demo_profile(tmp_path, time_scale=0.004))
    prof.args["--sim-speed"] = 4
    prof.bench = dataclasses.replace(prof.bench, num_prompts=2, concurrency=2, max_new_tokens=8)
    model = SessionModel(target="local", profile=prof)
    host = _Host(model)
    driver = DemoDriver(lambda emit: Workspace(prof, emit, target="local", preflight=False, timings=FAST))
    try:
        await driver.run(model, host)  # returns once the launch has started
        assert model.state.current == 1 and driver.workspace is not None
        for _ in range(300):
            if model.state.server_state in (ServerState.READY, ServerState.FAILED):
                break
            await asyncio.sleep(0.1)
        assert model.state.server_state == ServerState.READY
        await driver.benchmark(model, host)
        assert model.runbook.row(1).tok_s.mean and not driver.benchmarking
        assert model.staged.profile is driver.workspace.profile  # the staged config follows the launch
        pid = driver.workspace.run.pid
    finally:
        await driver.close()  # a demo stops its server
    assert not any(isinstance(e, Notice) and e.level == "error" for e in model.state.notices)
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    raise ProcessLookupError
            await asyncio.sleep(0.1)
