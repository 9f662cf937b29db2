"""The indexed reader (issue 12.5): every event back exactly as ``read_session`` reads it, from any
seek point, for plain, gzip, legacy and damaged recordings; seeks land where the full read says."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import random
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagletui.core import events as ev
from eagletui.session.codec import LogCodec
from eagletui.session.format import make_header, read_session, write_session
from eagletui.session.index import ReplaySource
from eagletui.session.record import Recorder
from eagletui.session.replay import StreamReplayer
from eagletui.session.timeline import CONTEXT_TYPES


def session_events(n_serving: int = 1000, launches: int = 3, seed: int = 1) -> list[ev.Event]:
    """A realistic mix: config change, launch, phases with progress, ready (or an OOM on launch 2),
    then decode/prefill lines with their stats, benchmark samples and a result, then the exit."""
    rng = random.Random(seed)
    out: list[ev.Event] = []
    clock = {"mono": 100.0, "wall": 1_800_000_000.0}

    def at(dt: float) -> dict[str, float]:
        clock["mono"] += dt
        clock["wall"] += dt
        return dict(clock)

    seq = 0
    for launch in range(1, launches + 1):
        if launch > 1:
            out.append(
                ev.ConfigChanged(changes={"arg:--speculative-num-steps": [launch, launch + 1]}, **at(0.4))
            )
        config = {"model": "org/Model-7B", "env": {"NCCL_ALGO": "Ring"}}
        out.append(
            ev.LaunchStarted(
                launch=launch, target="box", command=("python3", "-m", "x"), config=config, **at(0.1)
            )
        )
        for phase in ("launch", "load_target", "capture_target"):
            out.append(ev.PhaseStarted(phase=phase, launch=launch, **at(0.2)))
            for done in range(1, 6):
                out.append(
                    ev.LogLine(
                        text=f"{phase} {done}/5",
                        kind="progress",
                        seq=seq,
                        launch=launch,
                        frame=True,
                        **at(0.1),
                    )
                )
                seq += 1
                out.append(ev.PhaseProgress(phase=phase, done=done, total=5, launch=launch, **at(0)))
            if launch == 2 and phase == "capture_target":
                out.append(
                    ev.ServerFailed(
                        kind="oom", message="CUDA out of memory", phase=phase, launch=launch, **at(0.1)
                    )
                )
                out.append(ev.ProcessExited(code=1, launch=launch, **at(0.3)))
                break
            out.append(ev.PhaseFinished(phase=phase, seconds=0.5, launch=launch, **at(0)))
        else:
            out.append(ev.ServerReady(url="http://127.0.0.1:30000", launch=launch, **at(0.1)))
            out.append(ev.BenchmarkStarted(bench=launch, launch=launch, **at(0.1)))
            for i in range(n_serving):
                thr = round(rng.uniform(500, 900), 2)
                text = (
                    f"Decode batch, #running-req: {i % 9}, gen throughput (token/s): {thr}, accept len: 3.1"
                )
                out.append(
                    ev.LogLine(
                        text=text,
                        kind="decode",
                        seq=seq,
                        rank=i % 2,
                        launch=launch,
                        **at(rng.uniform(0, 0.05)),
                    )
                )
                seq += 1 if i % 50 else 7  # a gap in the server's numbering now and then
                out.append(
                    ev.DecodeStats(
                        gen_throughput=thr, running_req=i % 9, accept_len=3.1, launch=launch, **at(0)
                    )
                )
                if i % 10 == 0:
                    out.append(
                        ev.BenchmarkSample(bench=launch, t=i / 10, tok_s=thr / 8, launch=launch, **at(0.001))
                    )
            out.append(
                ev.BenchmarkResult(
                    bench=launch,
                    launch=launch,
                    output_throughput=700.0 + launch,
                    accept_length=3.0 + launch / 10,
                    requests=10,
                    **at(0.2),
                )
            )
            out.append(ev.ProcessExited(code=0, launch=launch, **at(0.5)))
    return out


def record(path: Path, events: list[ev.Event]) -> Path:
    with Recorder(path, target="box", profile_name="p") as rec:
        for e in events:
            rec.write(e)
    return path


def exact_times(events: list[ev.Event]) -> list[float]:
    """Seconds from the first event on the monotonic clock. (``relative_times`` of a decoded file can
    be a little off at keyframes: the decoded clock steps back by a rounding there and it falls back
    to the wall clock, which is only kept to half a millisecond.)"""
    return [e.mono - events[0].mono for e in events]


def all_from(src: ReplaySource) -> list[ev.Event]:
    return [e for _line, _t, e in src.events_from(0)]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ev.Event]]:
    path = record(tmp_path_factory.mktemp("idx") / "s.jsonl", session_events())
    _, loaded, warnings = read_session(path)
    assert warnings == [] and len(loaded) > 3 * LogCodec.SEEK_POINT
    return path, loaded


def test_every_event_back_as_read_session_reads_it(big: tuple[Path, list[ev.Event]]) -> None:
    path, loaded = big
    with ReplaySource.open(path) as src:
        assert len(src._blocks) > 3  # seek points were found: the fast pass, not the full one
        assert all(b.codec is None for b in src._blocks)
        assert all_from(src) == loaded
        assert src.events_count == len(loaded) and src.warnings == []
        assert src.duration == pytest.approx(exact_times(loaded)[-1], abs=1e-5)


def test_each_block_decodes_on_its_own(big: tuple[Path, list[ev.Event]]) -> None:
    """Out of order and with an empty cache: nothing in a block leans on the block before it."""
    path, loaded = big
    with ReplaySource.open(path) as src:
        times = exact_times(loaded)
        for k in reversed(range(len(src._blocks))):
            src._cache.clear()
            for line, t, e in src._decode_block(k):
                assert e == loaded[line] and t == pytest.approx(times[line], abs=1e-5)


def test_seek_to_a_time_matches_the_full_read(big: tuple[Path, list[ev.Event]]) -> None:
    path, loaded = big
    times = exact_times(loaded)
    with ReplaySource.open(path) as src:
        r = StreamReplayer(src, window=300)
        # Times a little after an event's: the recorded clock is kept to the microsecond.
        picks = [t + 2e-5 for t in random.Random(3).sample(times, 40)]
        for target in [0.0, 0.001, *picks, times[-1], times[-1] + 50]:
            before = [e for e, t in zip(loaded, times, strict=True) if t <= target + 1e-7]
            catch_up = r.seek(time=target)
            assert r.index == len(before)  # the next event to play is the first one after the target
            recent = before[-300:]
            older = [e for e in before[: len(before) - len(recent)] if e.type in CONTEXT_TYPES]
            assert catch_up == older + recent


def test_marks_and_summary(big: tuple[Path, list[ev.Event]]) -> None:
    path, loaded = big
    times = exact_times(loaded)
    with ReplaySource.open(path) as src:
        kinds = [m.kind for m in src.marks]
        assert kinds == [
            "launch",
            "ready",
            "result",
            "exit",
            "config",
            "launch",
            "failure",
            "exit",
            "config",
            "launch",
            "ready",
            "result",
            "exit",
        ]
        for m in src.marks:
            assert loaded[m.line] == m.event and m.t == pytest.approx(times[m.line], abs=1e-6)
        assert src.launches == [1, 2, 3]
        s = src.summary()
        assert (s.launches, s.failures, s.model, s.target) == (3, 1, "org/Model-7B", "box")
        assert (s.best_tok_s, s.best_launch, s.baseline_tok_s, s.baseline_launch) == (703.0, 3, 701.0, 1)
        assert s.best_accept == pytest.approx(3.3)


def test_seek_to_a_launch_and_to_marks(big: tuple[Path, list[ev.Event]]) -> None:
    path, loaded = big
    with ReplaySource.open(path) as src:
        r = StreamReplayer(src)
        catch_up = r.seek(launch=3)
        started = next(i for i, e in enumerate(loaded) if isinstance(e, ev.LaunchStarted) and e.launch == 3)
        assert catch_up[-1] == loaded[started] and r.index == started + 1
        assert [e.launch for e in catch_up if isinstance(e, ev.LaunchStarted)] == [1, 2, 3]
        with pytest.raises(KeyError, match=r"no launch 7 .*launches: 1, 2, 3"):
            r.seek(launch=7)
        r.seek(time=0.0)
        stops = []
        while (got := r.seek_mark(+1, frozenset({"launch", "config"}))) is not None:
            stops.append(got[-1].type)
        # (launch 1 is the first event: at time 0 it is already on screen)
        assert stops == ["config_changed", "launch_started", "config_changed", "launch_started"]
        back = r.seek_mark(-1, frozenset({"launch"}))
        assert back is not None and isinstance(back[-1], ev.LaunchStarted) and back[-1].launch == 2


def test_gzip_is_read_through_a_private_temp_copy(big: tuple[Path, list[ev.Event]], tmp_path: Path) -> None:
    path, loaded = big
    gz = tmp_path / "s.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    src = ReplaySource.open(gz)
    try:
        assert src._plain != gz and stat.S_IMODE(src._plain.stat().st_mode) == 0o600
        assert stat.S_IMODE(src._plain.parent.stat().st_mode) == 0o700
        assert all_from(src) == loaded
        tmp = src._plain.parent
    finally:
        src.close()
    assert not tmp.exists()


@pytest.mark.slow
def test_files_without_seek_points_get_the_full_pass(
    big: tuple[Path, list[ev.Event]], tmp_path: Path
) -> None:
    """Version 1 (all dicts), and the first version-2 files (compact, but no seek points): same
    events, seekable from the codec snapshots."""
    _path, loaded = big
    v1 = write_session(tmp_path / "v1.jsonl", {**make_header("box", "p"), "version": 1}, loaded)
    legacy = tmp_path / "v2-legacy.jsonl"
    codec = LogCodec()  # as recorders wrote before seek points
    header = {k: v for k, v in make_header("box", "p").items() if k != "keyframes"}
    lines = [json.dumps(header)] + [json.dumps(codec.encode(e.to_dict())) for e in loaded]
    legacy.write_text("\n".join(lines) + "\n")
    assert read_session(legacy)[1] == loaded
    for p in (v1, legacy):
        with ReplaySource.open(p) as src:
            assert any(b.codec is not None for b in src._blocks)
            assert all_from(src) == loaded
            src._cache.clear()
            k = len(src._blocks) - 2
            assert [e for _l, _t, e in src._decode_block(k)] == loaded[
                src._blocks[k].line : src._blocks[k + 1].line
            ]
            assert [m.kind for m in src.marks].count("launch") == 3


def test_damaged_lines_are_skipped_as_read_session_skips_them(
    big: tuple[Path, list[ev.Event]], tmp_path: Path
) -> None:
    path, _ = big
    lines = path.read_bytes().split(b"\n")
    lines[1500] = b'{"type": "decode_stats", "du": "x"}'  # a bad event
    lines[2600] = lines[2600][: len(lines[2600]) // 2]  # half a line (not JSON)
    lines[3100] = b"\x00\xff garbage"
    damaged = tmp_path / "d.jsonl"
    damaged.write_bytes(b"\n".join(lines)[:-40])  # and cut mid-line at the end
    _, expected, warnings = read_session(damaged)
    with ReplaySource.open(damaged) as src:
        played = all_from(src)
        notes = [e for e in played if isinstance(e, ev.Notice) and e.source == "replay"]
        assert [e for e in played if e not in notes] == expected
        assert len(notes) == min(100, src.damaged)  # each skipped line is played as its note
        more = int(warnings[-1].split()[2]) if warnings[-1].startswith("... and") else 0
        assert src.damaged == len([w for w in warnings if w.startswith("line ")]) + more
        # The same messages (which 100 are listed differs: the last block is read on open).
        assert len(src.warnings) == min(100, src.damaged) and "line 4323: truncated, ignored" in src.warnings
        listed = set(warnings[:100])
        assert all(w in listed or w.startswith("line ") for w in src.warnings)
        assert (
            "line 1501: bad decode_stats event (field 'du' must be a finite number, got a string), ignored"
            in src.warnings
        )


def test_a_non_session_is_refused_clearly(tmp_path: Path) -> None:
    from eagletui.session.format import SessionError

    for name, data in [("empty.jsonl", b""), ("notes.jsonl", b"hello\n"), ("blank.jsonl", b"\n\n\n")]:
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(SessionError, match=name):
            ReplaySource.open(p)
    with pytest.raises(SessionError, match="no such file"):
        ReplaySource.open(tmp_path / "missing.jsonl")


async def test_stream_replayer_plays_everything_and_starts_paused_at_a_launch(
    big: tuple[Path, list[ev.Event]],
) -> None:
    path, loaded = big
    with ReplaySource.open(path) as src:
        r = StreamReplayer(src)
        got = [e async for e in r.play("instant")]
        assert got == loaded and r.finished and r.position == pytest.approx(r.duration)

        r = StreamReplayer(src, window=100_000)  # a window over the whole file: all of it is caught up
        r.set_speed("instant")
        r.start_at(launch=2)
        assert r.paused
        started = next(i for i, e in enumerate(loaded) if isinstance(e, ev.LaunchStarted) and e.launch == 2)
        seen: list[ev.Event] = []

        async def consume() -> None:
            async for e in r.play():
                seen.append(e)

        task = asyncio.create_task(consume())
        for _ in range(50):
            await asyncio.sleep(0.01)
        assert seen == loaded[: started + 1]  # the catch-up, then paused
        r.resume()
        await asyncio.wait_for(task, 10)
        assert seen == loaded


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kinds=st.lists(
        st.sampled_from(["log", "stats", "notice", "bad_rank", "clock_back"]), min_size=1, max_size=2600
    ),
    seed=st.integers(0, 1000),
)
def test_index_round_trip(tmp_path: Path, kinds: list[str], seed: int) -> None:
    """Any mix of events, clock steps back included, reads back the same through the index."""
    rng = random.Random(seed)
    mono, wall = 10.0, 1_000.0
    events: list[ev.Event] = []
    for i, kind in enumerate(kinds):
        step = rng.choice([0.0, 0.001, 0.5, 30.0])
        mono, wall = (mono - 5.0, wall + 1.0) if kind == "clock_back" else (mono + step, wall + step)
        if kind in ("log", "clock_back"):
            events.append(
                ev.LogLine(
                    text=f"l{i}",
                    seq=rng.choice([i, i + 1]),
                    rank=rng.choice([None, 0, 1]),
                    launch=rng.choice([0, 1]),
                    wall=wall,
                    mono=mono,
                )
            )
        elif kind == "stats":
            events.append(
                ev.DecodeStats(
                    gen_throughput=rng.choice([1.0, 2.5]),
                    running_req=rng.choice([0, 3]),
                    launch=1,
                    wall=wall,
                    mono=mono,
                )
            )
        elif kind == "notice":
            events.append(ev.Notice(message=rng.choice(["a", "b"]), level="info", wall=wall, mono=mono))
        else:
            events.append(ev.BenchmarkResult(bench=1, output_throughput=float(i), wall=wall, mono=mono))
    path = tmp_path / f"h{seed}-{len(kinds)}-{os.getpid()}-{rng.random()}.jsonl"
    record(path, events)
    _, loaded, warnings = read_session(path)
    assert warnings == []
    with ReplaySource.open(path) as src:
        assert all_from(src) == loaded
        times = exact_times(loaded)
        for line in rng.sample(range(len(loaded)), min(5, len(loaded))):
            k = src._block_of_line(line)
            src._cache.clear()
            got = {ln: (t, e) for ln, t, e in src._decode_block(k)}
            assert got[line][1] == loaded[line]
            if "clock_back" not in kinds:  # (a step back is measured seek point to seek point)
                assert got[line][0] == pytest.approx(times[line], abs=1e-5)
        assert src.duration == pytest.approx(times[-1] if "clock_back" not in kinds else src.duration)
    path.unlink()


def test_long_lines_and_chunk_edges(big: tuple[Path, list[ev.Event]], tmp_path: Path, monkeypatch) -> None:
    """Small scan chunks and a small line bound (the real ones are 8 and 32 MiB): a line longer than
    the bound, lines across chunk edges and the last line without a newline read as read_session
    reads them."""
    from eagletui.session import index

    path, _ = big
    lines = path.read_bytes().split(b"\n")
    lines[700] = b'{"type":"notice","du":5,"message":"' + b"x" * 9000 + b'"}'
    lines[2000] = b"y" * 5000  # no JSON, too long
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(b"\n".join(lines).rstrip(b"\n"))
    _, expected, warnings = read_session(odd, max_line=4096)
    assert any("longer than 4096 bytes" in w for w in warnings)
    monkeypatch.setattr(index, "MAX_LINE", 4096)
    monkeypatch.setattr(index, "_SCAN_CHUNK", 1000)
    with ReplaySource.open(odd) as src:
        assert all_from(src) == expected
        assert src.events_count == len(lines) - 2  # the header, and the empty end of the split
        assert [m.kind for m in src.marks].count("launch") == 3
        long = [w for w in warnings if "longer than" in w]
        assert long == [
            "line 701: longer than 4096 bytes, ignored",
            "line 2001: longer than 4096 bytes, ignored",
        ]
        assert all(w in src.warnings for w in long)


async def test_seek_while_playing_continues_from_the_target(big: tuple[Path, list[ev.Event]]) -> None:
    """←/→ in the UI: a seek during play() hands back the catch-up and the loop goes on from there."""
    path, loaded = big
    with ReplaySource.open(path) as src:
        r = StreamReplayer(src, window=50)
        got: list[ev.Event] = []
        jumped_to = jumped_back = None
        async for e in r.play("instant"):
            got.append(e)
            if len(got) == 100:
                catch_up = r.seek(time=src.launch_mark(3).t + 1.0)  # forward, into the last launch
                jumped_to = r.index
                assert catch_up[-1] == loaded[jumped_to - 1]
            elif len(got) == 200:
                r.seek(launch=1)  # and back
                jumped_back = r.index
        assert jumped_to is not None and jumped_back is not None
        assert got[100:200] == loaded[jumped_to : jumped_to + 100]
        assert got[200:] == loaded[jumped_back:]


async def test_idle_stretches_are_skipped_not_waited(tmp_path: Path) -> None:
    """An hour of silence in the recording plays through at once with max_gap (the position jumps)."""
    events = [
        ev.LogLine(text="a", wall=1000.0, mono=10.0),
        ev.LogLine(text="b", seq=1, wall=4600.0, mono=3610.0),
        ev.LogLine(text="c", seq=2, wall=4600.01, mono=3610.01),
    ]
    path = record(tmp_path / "idle.jsonl", events)
    with ReplaySource.open(path) as src:
        r = StreamReplayer(src, max_gap=0.01)

        async def play_all() -> list[ev.Event]:
            return [e async for e in r.play(1.0)]

        got = await asyncio.wait_for(play_all(), 10)  # a hang guard, not a timing
        assert got == read_session(path)[1] and r.duration == pytest.approx(3600.01)


def _decoded(src: ReplaySource) -> int:
    """Events the source decoded since its cache was emptied (whole blocks, and the partial one)."""
    partial = src._partial
    extra = len(partial[2]) if partial is not None and partial[0] not in src._cache else 0
    return sum(len(b) for b in src._cache.values()) + extra


@pytest.mark.slow
def test_a_seek_decodes_at_most_a_seek_point_more_than_its_window(big: tuple[Path, list[ev.Event]]) -> None:
    """From the seek point before the window to the target: under 256 events beyond the window (with
    seek points every 1024 events, a target early in a block decoded up to ~3,000 for the UI's
    2,000-event window)."""
    path, _loaded = big
    window = 600
    assert LogCodec.SEEK_POINT <= 256
    with ReplaySource.open(path) as src:
        assert len(src._blocks) > 4
        times = {ln: t for ln, t, _e in src.events_from(0)}
        for k in (3, len(src._blocks) // 2, len(src._blocks) - 2):
            for into in (1, LogCodec.SEEK_POINT // 3, LogCodec.SEEK_POINT - 1):
                at = times[src._blocks[k].line + into]
                src._cache.clear()
                src._partial = None
                recent = src.events_before(src.at_time(at), window)
                assert len(recent) == window
                assert _decoded(src) < window + 256, (k, into, _decoded(src))


@pytest.mark.slow
def test_recordings_with_seek_points_every_1024_events_still_take_the_fast_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files written before issue 33 (seek points every 1024 events) are indexed by the byte scan, not
    the full decoding pass, and read back whole."""
    monkeypatch.setattr(LogCodec, "SEEK_POINT", 1024)  # the recorder of before
    path = record(tmp_path / "old.jsonl", session_events(n_serving=1100, launches=2))
    monkeypatch.undo()
    _, loaded, warnings = read_session(path)
    assert warnings == [] and len(loaded) > 2 * 1024
    with ReplaySource.open(path) as src:
        assert len(src._blocks) >= 3 and all(b.codec is None for b in src._blocks)  # no full-pass snapshots
        assert all_from(src) == loaded
