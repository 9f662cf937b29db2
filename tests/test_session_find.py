"""Finding sessions (issue 12.4): ``eagletui sessions`` lists them, ``eagletui replay NAME`` finds one
by name or prefix, ``--at``/``--launch`` start it paused at a point."""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import stat
from pathlib import Path

import pytest

from eagletui.commands import replay as replay_cmd
from eagletui.commands import sessions as sessions_cmd
from eagletui.config import UserConfig
from eagletui.core import events as ev
from eagletui.session.catalog import Ambiguous, NotFound, list_sessions, resolve, summarize
from tests.test_session_index import record, session_events

EXAMPLE = Path(__file__).resolve().parent.parent / "sessions" / "example-demo.jsonl"


@pytest.fixture(scope="module")
def sessions_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("sessions")
    record(d / "20261129-101500-gpu-box.jsonl", session_events(n_serving=200))
    newer = d / "20261130-090000-gpu-box.jsonl"
    record(newer, session_events(n_serving=100, launches=2))
    gz = d / "20261130-120000-other.jsonl.gz"
    gz.write_bytes(gzip.compress((d / "20261129-101500-gpu-box.jsonl").read_bytes()))
    (d / "broken.jsonl").write_bytes(b"\x00\x01 not a session\n")
    (d / "notes.txt").write_text("not listed\n")
    return d


def test_listing_newest_first_with_summaries_and_errors(sessions_dir: Path) -> None:
    entries = list_sessions(sessions_dir)
    names = [e.name for e in entries]
    assert set(names) == {
        "20261129-101500-gpu-box",
        "20261130-090000-gpu-box",
        "20261130-120000-other",
        "broken",
    }
    ok = [e for e in entries if e.summary is not None]
    created = [e.summary.created for e in ok if e.summary is not None]
    assert created == sorted(created, reverse=True)
    broken = next(e for e in entries if e.name == "broken")
    assert broken.summary is None and "not an eagletui session" in broken.error
    first = next(e for e in entries if e.name == "20261129-101500-gpu-box").summary
    assert first is not None
    assert (first.launches, first.failures, first.best_tok_s, first.baseline_tok_s) == (3, 1, 703.0, 701.0)
    assert first.model == "org/Model-7B" and first.duration > 0


def test_sessions_command_table_and_json(sessions_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sessions_cmd.main([str(sessions_dir)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["name", "start", "target", "model"]
    row = next(line for line in lines if line.startswith("20261129-101500-gpu-box"))
    assert "Model-7B" in row and "703.0 (#3)" in row and "701.0 (#1)" in row and "3 (1 failed)" in row
    assert "error: broken: not an eagletui session" in out
    assert sessions_cmd.main([str(sessions_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_name = {d["name"]: d for d in data}
    assert by_name["20261130-120000-other"]["best_tok_s"] == 703.0
    assert by_name["broken"]["error"] and "best_tok_s" not in by_name["broken"]
    assert sessions_cmd.main([str(sessions_dir / "missing")]) == 2


def test_listing_text_is_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A target or model from a shared recording cannot drive the terminal."""
    from eagletui.session.record import Recorder

    with Recorder(tmp_path / "evil.jsonl", target="box\x1b]0;pwned\x07", profile_name="p") as rec:
        rec.write(ev.LaunchStarted(launch=1, target="x", config={"model": "m\x1b[2J"}, wall=1.0, mono=1.0))
    assert sessions_cmd.main([str(tmp_path)]) == 0
    assert "\x1b" not in capsys.readouterr().out


def test_summary_cache_is_private_and_follows_the_file(tmp_path: Path) -> None:
    path = record(tmp_path / "s.jsonl", session_events(n_serving=50, launches=1))
    first = summarize(path, cache=True)
    idx = tmp_path / "s.jsonl.idx"
    assert idx.exists() and stat.S_IMODE(idx.stat().st_mode) == 0o600
    assert first.summary is not None and first.summary.launches == 1
    # A cached summary is used while size and mtime match ...
    data = json.loads(idx.read_text())
    data["summary"]["launches"] = 42
    idx.write_text(json.dumps(data))
    assert summarize(path, cache=True).summary.launches == 42  # type: ignore[union-attr]
    # ... and ignored once the file changed (a session still being recorded, say).
    with open(path, "a") as fh:
        fh.write('{"type":"notice","du":1,"message":"more"}\n')
    assert summarize(path, cache=True).summary.launches == 1  # type: ignore[union-attr]
    idx.write_text("{ not json")
    assert summarize(path, cache=True).summary is not None


def test_resolve_by_name_prefix_and_did_you_mean(sessions_dir: Path, tmp_path: Path) -> None:
    dirs = [tmp_path / "nowhere", sessions_dir]
    assert resolve("20261130-090000-gpu-box", dirs) == sessions_dir / "20261130-090000-gpu-box.jsonl"
    assert resolve("20261130-12", dirs) == sessions_dir / "20261130-120000-other.jsonl.gz"
    with pytest.raises(Ambiguous) as amb:
        resolve("2026113", dirs)
    assert "20261130-090000-gpu-box" in str(amb.value) and "20261130-120000-other" in str(amb.value)
    with pytest.raises(NotFound) as nf:
        resolve("20261130-090000-gpu-bx", dirs)
    assert "did you mean '20261130-090000-gpu-box'" in str(nf.value)
    with pytest.raises(NotFound) as nf:
        resolve("zzz", dirs)
    assert "did you mean" not in str(nf.value)
    explicit = tmp_path / "x.jsonl"
    assert resolve(str(explicit), dirs) == explicit  # a path is a path, even a missing one


def _args(*argv: str) -> argparse.Namespace:
    return replay_cmd.build_parser().parse_args(list(argv))


def test_time_and_launch_options() -> None:
    assert replay_cmd.parse_time("90") == 90.0
    assert replay_cmd.parse_time("1:30") == 90.0
    assert replay_cmd.parse_time("01:02:03.5") == 3723.5
    for bad in ("", "x", "1:60", "-3", "1:2:3:4", "nan", "inf"):
        with pytest.raises(argparse.ArgumentTypeError):
            replay_cmd.parse_time(bad)
    with pytest.raises(SystemExit):
        _args("f", "--launch", "0")
    with pytest.raises(SystemExit):
        _args("f", "--launch", "2", "--at", "10")  # one start point


def test_replay_by_name_starts_paused_at_the_launch(sessions_dir: Path) -> None:
    cfg = UserConfig(record=False, sessions_dir=str(sessions_dir))
    opened = replay_cmd.open_replay(_args("20261129-10", "--launch", "3", "--speed", "instant"), cfg)
    assert not isinstance(opened, str)
    source, replayer = opened
    try:
        assert replayer.paused
        got: list[ev.Event] = []

        async def take() -> None:
            async for e in replayer.play():
                got.append(e)

        async def run() -> None:
            task = asyncio.create_task(take())
            for _ in range(30):
                await asyncio.sleep(0.01)
            task.cancel()

        asyncio.run(run())
        launches = [e.launch for e in got if isinstance(e, ev.LaunchStarted)]
        assert launches == [1, 2, 3] and isinstance(got[-1], ev.LaunchStarted)  # then it waits, paused
        assert replayer.position == pytest.approx(source.launch_mark(3).t)
    finally:
        source.close()


def test_replay_at_a_time_and_errors(sessions_dir: Path) -> None:
    cfg = UserConfig(record=False, sessions_dir=str(sessions_dir))
    opened = replay_cmd.open_replay(_args("20261130-090000-gpu-box", "--at", "0:05"), cfg)
    assert not isinstance(opened, str)
    source, replayer = opened
    assert replayer.paused and replayer.position == 5.0
    assert source.at_time(5.0).line == replayer.index
    source.close()
    err = replay_cmd.open_replay(_args("20261130-090000-gpu-box", "--launch", "9"), cfg)
    assert isinstance(err, str) and "no launch 9" in err and "launches: 1, 2" in err
    err = replay_cmd.open_replay(_args("20261130-090000-gpu-box", "--at", "99:00:00"), cfg)
    assert isinstance(err, str) and "past the end" in err
    err = replay_cmd.open_replay(_args("2026"), cfg)
    assert isinstance(err, str) and "matches 3 sessions" in err
    err = replay_cmd.open_replay(_args("brokn"), cfg)
    assert isinstance(err, str) and "did you mean 'broken'" in err
    err = replay_cmd.open_replay(_args("broken"), cfg)
    assert isinstance(err, str) and "not an eagletui session" in err


def test_replay_of_a_damaged_recording_warns_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    lines[5] = b'{"type": "log", "wall": 1, "mono": "x", "text": "bad"}\n'
    damaged = tmp_path / "d.jsonl"
    damaged.write_bytes(b"".join(lines))
    opened = replay_cmd.open_replay(_args(str(damaged), "--speed", "instant"), UserConfig(record=False))
    assert not isinstance(opened, str)
    source, replayer = opened
    try:
        assert "line 6: bad log event" in capsys.readouterr().err

        async def first() -> ev.Event:
            async for e in replayer.play():
                return e
            raise AssertionError("nothing played")

        notice = asyncio.run(first())
        assert isinstance(notice, ev.Notice) and "damaged recording: line 6" in notice.message
    finally:
        source.close()


def test_cli_lists_the_sessions_command() -> None:
    from eagletui import cli

    assert "sessions" in cli.COMMANDS and "sessions" in cli.usage()
    assert os.path.exists(cli.COMMANDS["sessions"][0].replace(".", "/") + ".py")


@pytest.mark.slow
async def test_the_app_starts_paused_at_the_launch_and_plays_on(sessions_dir: Path) -> None:
    """What ``eagletui replay NAME --launch 3`` hands the UI, in the real app: the screen stands at
    launch 3 (folded from the catch-up), paused; resuming plays the rest to the end."""
    from eagletui.ui.app import EagleApp

    cfg = UserConfig(record=False, sessions_dir=str(sessions_dir))
    opened = replay_cmd.open_replay(_args("20261129-10", "--launch", "3", "--speed", "instant"), cfg)
    assert not isinstance(opened, str)
    source, replayer = opened
    try:
        app = EagleApp(profile=None, target="box", mode="replay", replay=replayer, user_config=cfg)
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(100):
                await pilot.pause(0.02)
                if app.state.launch is not None and app.state.launch.launch == 3:
                    break
            assert app.state.launch is not None and app.state.launch.launch == 3
            assert replayer.paused and not app.replay_done.is_set()
            seen = app.events_seen
            await pilot.pause(0.2)
            assert app.events_seen == seen  # paused: nothing more arrives
            replayer.resume()
            await asyncio.wait_for(app.replay_done.wait(), 20)
            assert replayer.finished and app.events_seen > seen
            assert app.state.launch is not None and app.state.launch.launch == 3 and app.state.launch.ready_at
    finally:
        source.close()
