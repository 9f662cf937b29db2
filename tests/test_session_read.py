"""Reading sessions: tolerant of damage, strict about files that are not sessions at all."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from eagletui.core import events as ev
from eagletui.session.format import MAX_WARNINGS, SessionError, make_header, read_session, write_session


def _lines(n: int) -> list[ev.Event]:
    return [ev.LogLine(text=f"line {i}", seq=i, wall=1000.0 + i, mono=10.0 + i) for i in range(n)]


def _write(path: Path, events: list[ev.Event], tail: str = "") -> None:
    body = json.dumps(make_header("t", "p")) + "\n" + "".join(json.dumps(e.to_dict()) + "\n" for e in events)
    path.write_text(body + tail)


def test_truncated_last_line(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    _write(p, _lines(3), tail='{"type": "log", "text": "cut sh')
    header, events, warnings = read_session(p)
    assert len(events) == 3
    assert warnings == ["line 5: truncated, ignored"]
    assert header["profile"] == "p"


def test_garbage_and_unknown_lines_are_skipped(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    good = _lines(2)
    body = json.dumps(make_header("t", "p")) + "\n"
    body += json.dumps(good[0].to_dict()) + "\n"
    body += "\x00\x01 garbage {{{\n"
    body += json.dumps({"type": "from_the_future", "x": 1}) + "\n"
    body += "[1, 2]\n"
    body += json.dumps({"type": "log"}) + "\n"  # missing required field
    body += "\n"
    body += json.dumps(good[1].to_dict()) + "\n"
    p.write_text(body)
    _, events, warnings = read_session(p)
    assert events == good
    assert warnings[0] == "line 3: not valid JSON, ignored"
    assert warnings[1] == "line 4: unknown event type 'from_the_future', ignored"
    assert warnings[2] == "line 5: not an event, ignored"
    assert warnings[3].startswith("line 6: bad log event")
    assert len(warnings) == 4


def test_warnings_are_capped(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    _write(p, [], tail="junk\n" * (MAX_WARNINGS + 50))
    _, events, warnings = read_session(p)
    assert events == []
    assert len(warnings) == MAX_WARNINGS + 1
    assert warnings[-1] == "... and 50 more damaged lines ignored"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty file"),
        (b"hello world\n", "first line is not JSON"),
        (b'{"format": "something-else"}\n', "not an eagletui session"),
        (b'{"format": "eagletui-session", "version": "one"}\n', "invalid version"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not an eagletui session"),
    ],
)
def test_not_a_session(tmp_path: Path, content: bytes, reason: str) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(content)
    with pytest.raises(SessionError) as info:
        read_session(p)
    assert info.value.path == str(p)
    assert reason in info.value.reason
    assert str(p) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="no such file"):
        read_session(tmp_path / "nope.jsonl")


def test_newer_version_loads_with_warning(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    header = make_header("t", "p") | {"version": 99}
    p.write_text(json.dumps(header) + "\n" + json.dumps(_lines(1)[0].to_dict()) + "\n")
    _, events, warnings = read_session(p)
    assert len(events) == 1 and "newer" in warnings[0]


def test_gzip_round_trip_and_truncated_gzip(tmp_path: Path) -> None:
    events = _lines(200)
    p = write_session(tmp_path / "s.jsonl.gz", make_header("t", "p"), events)
    assert p.read_bytes()[:2] == b"\x1f\x8b"
    assert read_session(p)[1] == events

    cut = tmp_path / "cut.jsonl.gz"
    data = p.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    _, partial, warnings = read_session(cut)
    assert 0 < len(partial) < 200
    assert partial == events[: len(partial)]
    assert any("compressed stream truncated" in w for w in warnings)


def test_gzip_content_under_plain_name(tmp_path: Path) -> None:
    """Detection is by content, so a renamed file still loads."""
    p = tmp_path / "s.jsonl"
    body = json.dumps(make_header("t", "p")) + "\n" + json.dumps(_lines(1)[0].to_dict()) + "\n"
    p.write_bytes(gzip.compress(body.encode()))
    assert len(read_session(p)[1]) == 1


def test_crlf_and_leading_blank_lines(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    body = "\n" + json.dumps(make_header("t", "p")) + "\r\n" + json.dumps(_lines(1)[0].to_dict()) + "\r\n"
    p.write_text(body, newline="")
    _, events, warnings = read_session(p)
    assert len(events) == 1 and warnings == []
