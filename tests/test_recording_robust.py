"""Recordings that are valid but not as eagletui writes them, and one bad value in a good recording
(issue 33 items 4 and 5). Real files: a recording eagletui made (``sessions/demo-eagle3.jsonl``, the
compact self-contained format), re-written or edited, read by the indexed reader that ``replay``,
``export`` and ``sessions`` use, and replayed in the real app.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagletui.commands import replay as replay_cmd
from eagletui.config import UserConfig
from eagletui.core import events as ev
from eagletui.session.drivers import ReplayDriver
from eagletui.session.index import ReplaySource
from eagletui.ui.app import EagleApp

RECORDED = Path(__file__).resolve().parent.parent / "sessions" / "demo-eagle3.jsonl"


def _lines(n: int | None = None) -> list[str]:
    lines = RECORDED.read_text(encoding="utf-8").splitlines()
    return lines[:n] if n else lines


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _spaced(lines: list[str]) -> list[str]:
    """The same JSON, as ``json.dumps`` writes it by default: a space after every separator."""
    return [json.dumps(json.loads(line), ensure_ascii=False) for line in lines]


def _read(path: Path) -> tuple[ReplaySource, list[ev.Event]]:
    src = ReplaySource.open(path)
    return src, [e for _l, _t, e in src.events_from(0)]


@pytest.mark.parametrize("n", [600, None], ids=["short", "whole"])
def test_a_recording_with_spaces_after_separators_reads_like_the_compact_one(tmp_path: Path, n) -> None:
    compact = _write(tmp_path / "compact.jsonl", _lines(n))
    spaced = _write(tmp_path / "spaced.jsonl", _spaced(_lines(n)))
    a, ea = _read(compact)
    b, eb = _read(spaced)
    try:
        assert b.launches == a.launches and len(a.launches) >= 2
        assert [x[2] for x in b.context] == [x[2] for x in a.context]
        assert eb == ea and not b.warnings
        assert b.summary().launches == a.summary().launches
    finally:
        a.close()
        b.close()


def test_export_of_a_spaced_recording_counts_its_launches(tmp_path: Path, capsys) -> None:
    from eagletui.commands.export import main

    spaced = _write(tmp_path / "spaced.jsonl", _spaced(_lines(600)))
    assert main([str(spaced), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "2 launch(es)" in out, out[:400]


def test_a_line_that_is_not_json_is_named_and_the_rest_read(tmp_path: Path) -> None:
    lines = _spaced(_lines(600))
    lines[40] = "{not json"
    src, events = _read(_write(tmp_path / "s.jsonl", lines))
    try:
        assert src.warnings and src.warnings[0].startswith("line 41: not valid JSON")
        # what leaned on that line is named too (never filled in wrong); everything else is read
        assert all("damaged line" in w for w in src.warnings[1:])
        real = [e for e in events if not (isinstance(e, ev.Notice) and e.source == "replay")]
        assert len(real) == 599 - len(src.warnings) and src.launches == [1]
        # launch 2's start (line 533) is written as "what changed since launch 1's": after a line
        # nobody can read, its base is unknown, so it is named, not guessed
        assert any(w.startswith("line 533: bad launch_started event") for w in src.warnings)
    finally:
        src.close()


def _with(tmp_path: Path, field: str, value, *, where: str) -> tuple[Path, int]:
    """The recording with ``field`` of the first event at or after line 6 that holds it (and whose
    type starts ``where``) set to ``value``; (file, its line number)."""
    lines = _lines(600)
    for i in range(5, len(lines)):
        if lines[i].startswith('{"type":"' + where):
            obj = json.loads(lines[i])
            if field in obj:
                obj[field] = value
                lines[i] = json.dumps(obj, separators=(",", ":"))
                return _write(tmp_path / "s.jsonl", lines), i + 1
    raise AssertionError(f"no {where} event with {field}")


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [("du", "x", "launch"), ("du", 1e300, "launch"), ("wall", "x", "bench"), ("wall", 1e300, "bench")],
    ids=["du-string", "du-huge", "wall-string", "wall-huge"],
)
def test_one_bad_clock_value_skips_that_event_and_keeps_the_rest(tmp_path: Path, field, value, where) -> None:
    path, lineno = _with(tmp_path, field, value, where=where)
    good, _ = _read(_write(tmp_path / "good.jsonl", _lines(600)))
    src, events = _read(path)
    try:
        assert len(src.warnings) == 1 and src.warnings[0].startswith(f"line {lineno}: "), src.warnings
        assert len(events) == len([e for _l, _t, e in good.events_from(0)]) - 1 + 1  # less it, plus its note
        real = [e for e in events if not (isinstance(e, ev.Notice) and e.source == "replay")]
        assert len(real) == 598
        assert set(src.launches) >= set(good.launches) - {1}  # launch 1's own start may be the bad line
        assert all(abs(e.wall) < 4e9 for e in real)  # no later clock inherits the bad value
    finally:
        src.close()
        good.close()


async def test_replay_of_a_bad_bench_result_ends_the_benchmark_and_shows_its_note(tmp_path: Path) -> None:
    path, lineno = _with(tmp_path, "output_throughput", 1e308, where="bench_result")
    cfg = UserConfig(record=False)
    opened = replay_cmd.open_replay(
        replay_cmd.build_parser().parse_args([str(path), "--speed", "instant"]), cfg
    )
    assert not isinstance(opened, str), opened
    _source, replayer = opened
    app = EagleApp(profile=None, target="replay", driver=ReplayDriver(replayer), user_config=cfg, theme_name=None)
    async with app.run_test(size=(200, 50)) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        assert app.state.bench_running is None  # not "benchmark running" forever
        assert "bench" in app.state.failed_tasks
        shown = [n.message for n in app._notifications]
        assert any(f"line {lineno}: bad bench_result event" in m for m in shown), shown
        assert app.is_running
