"""The interpreter never raises or stalls, whatever it is fed, and chunking does not change events."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagletui.core import events as ev
from eagletui.core.log_interpreter import LogInterpreter

FIXTURE = Path(__file__).parent / "fixtures" / "logs" / "ok_0516_glued_bar.log"
FAIL_FIXTURE = Path(__file__).parent / "fixtures" / "logs" / "fail_oom_capture_0513.log"
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _strip(events: list[ev.Event]) -> list[dict]:
    out = []
    for e in events:
        d = e.to_dict()
        d.pop("wall")
        d.pop("mono")
        out.append(d)
    return out


@FAST
@given(st.text(max_size=2000))
def test_arbitrary_text(text: str) -> None:
    interp = LogInterpreter()
    interp.feed(text)
    interp.flush()


@FAST
@given(st.binary(max_size=2000))
def test_arbitrary_bytes(data: bytes) -> None:
    interp = LogInterpreter(emit_lines=False)
    interp.feed_bytes(data)
    interp.flush()


_PIECES = st.sampled_from(
    [
        "[2026-01-01 12:00:00 TP0] ",
        "[12:00:00 TP1] ",
        "(A pid=1, ip=1.2.3.4) ",
        "Decode batch, #running-req: 1, ",
        "gen throughput (token/s): 1.0, #queue-req: 0",
        "Load weight begin.",
        "Capture cuda graph begin.",
        "Capturing batches (bs=4 avail_mem=1 GB):  50%|##| 1/2 [00:00<00:00, 1it/s]",
        "Traceback (most recent call last):",
        "CUDA out of memory",
        "INFO:     ",
        "\r",
        "\n",
        "\x00\x1b[31m",
        "[" * 50,
        "The server is fired up and ready to roll!",
    ]
)


@FAST
@given(st.lists(_PIECES, max_size=80))
def test_structured_garbage(pieces: list[str]) -> None:
    interp = LogInterpreter()
    interp.feed("".join(pieces))
    interp.flush()


def test_huge_line_and_control_chars_are_fast() -> None:
    t0 = time.perf_counter()
    for big in ("x" * 10_000_000, "[" * 10_000_000, "[2026-01-01 12:00:00 TP0] " + "(" * 10_000_000):
        interp = LogInterpreter()
        interp.feed(big + "\n")
        interp.flush()
    interp = LogInterpreter()
    interp.feed_bytes(bytes(range(256)) * 4000)
    interp.flush()
    assert time.perf_counter() - t0 < 10


def test_unterminated_huge_line_bounded() -> None:
    interp = LogInterpreter()
    for _ in range(200):
        interp.feed("y" * 100_000)
    out = interp.flush()
    lines = [e for e in out if isinstance(e, ev.LogLine)]
    assert len(lines) == 1 and len(lines[0].text) <= (1 << 16) + 1


def _one_feed(data: bytes, emit_lines: bool) -> list[dict]:
    interp = LogInterpreter(emit_lines=emit_lines)
    return _strip(interp.feed_bytes(data) + interp.flush())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=1, max_value=4000), min_size=1, max_size=60), st.booleans())
def test_chunk_splits_give_same_events(cuts: list[int], emit_lines: bool) -> None:
    for path in (FIXTURE, FAIL_FIXTURE):
        data = path.read_bytes()
        whole = _one_feed(data, emit_lines)
        interp = LogInterpreter(emit_lines=emit_lines)
        got: list[ev.Event] = []
        pos = 0
        i = 0
        while pos < len(data):
            step = cuts[i % len(cuts)]
            got += interp.feed_bytes(data[pos : pos + step])
            pos += step
            i += 1
        got += interp.flush()
        assert _strip(got) == whole
