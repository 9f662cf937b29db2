
"""The interpreter never raises or stalls, whatever it is fed, and chunking does not change events."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagletui.core import events as ev
from eagletui.core.phases.interpreter import LogInterpreter

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
    # a bound on pathological work (a regex that backtracks over 10 MB runs for minutes), counted in
    # this process's CPU seconds: the wall clock also counted the other processes of a loaded machine
    # (11.6 s while another suite ran beside this one; about 1 s of CPU either way)
    t0 = time.process_time()
    for big in ("x" * 10_000_000, "[" * 10_000_000, "[2026-01-01 12:00:00 TP0] " + "(" * 10_000_000):
        interp = LogInterpreter()
        interp.feed(big + "\n")
        interp.flush()
    interp = LogInterpreter()
    interp.feed_bytes(bytes(range(256)) * 4000)
    interp.flush()
    assert time.process_time() - t0 < 10


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


@pytest.mark.slow
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


# --- the parse bulk path (feed_bulk_bytes) against line-by-line feeding -------------------------

_TS = st.sampled_from(
    [
        "[2026-03-14 12:00:01 TP0] ",
        "[2026-03-14 12:00:02.250 DP0 TP3] ",
        "[12:00:03 TP1] ",
        "(SchedulerActor pid=7, ip=10.0.0.2) [2026-03-14 12:00:04 TP0] ",
        "sglang-1  | [2026-03-14 12:00:05] ",
        "journal python[12]: [2026-03-14 12:00:06 TP0] ",
        "x] ",
        "[2026-03-14 12:00:09] ",  # the main process (uvicorn lines behind SGLang's timestamp)
        "2026-03-14T12:00:10.123456789Z stdout F [2026-03-14 12:00:10 TP0] ",
        "\x1b[32m[2026-03-14 12:00:11 TP0] ",
        "`[2026-03-14 12:00:12 TP0]` ",
        "é" * 200 + "[2026-03-14 12:00:07 TP0] ",
        "y" * 361 + "[2026-03-14 12:00:08 TP0] ",  # the marker just inside / outside the 400 window
        "y" * 362 + "[2026-03-14 12:00:08 TP0] ",
        "",
    ]
)
_NUM = st.sampled_from(["3", "3.10", "4011.25", "0.5", "1.2.3", "", ".5", "7.", "٣", "9" * 30])
_DECODE = st.builds(
    lambda head, n, acc, rate, graph, g, tail: (
        f"{head} #running-req: {n}, #token: 41234, token usage: 0.09, "
        + (f"accept len: {acc}, " if acc is not None else "")
        + (f"accept rate: {rate}, " if rate is not None and acc is not None else "")
        + graph
        + f"gen throughput (token/s): {g}, #queue-req: 0{tail}"
    ),
    st.sampled_from(["Decode batch.", "Decode batch,", "Decode batch [17],", "Decode batch [],"]),
    _NUM,
    st.one_of(st.none(), _NUM),
    st.one_of(st.none(), _NUM),
    st.sampled_from(["", "cuda graph: True, ", "cpu graph: False, ", "tpu graph: True, "]),
    _NUM,
    st.sampled_from(
        [
            "",
            ", ",
            ", [x] Decode batch, #running-req: 1, #token: 1, token usage: 0.1, "
            "gen throughput (token/s): 5.0, #queue-req: 0",
            " SIGTERM",
            " ] Prefill batch",
        ]
    ),
)
_SERVING_LINES = st.sampled_from(
    [
        "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.01, #queue-req: 0, ",
        "Prefill batch. #new-seq: x, broken",
        "Prefill batch, broken Received signal 15 SIGTERM",
        "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, #queue-req: 0, ] Decode batch, "
        "#running-req: 1, #token: 1, token usage: 0.1, gen throughput (token/s): 5.0, #queue-req: 0",
        'INFO:     127.0.0.1:5 - "POST /generate HTTP/1.1" 200 OK',
        'INFO:     127.0.0.1:5 - "GET /x] Decode batch, #running-req: 1, #token: 1, token usage: 0.1, '
        'gen throughput (token/s): 5.0, #queue-req: 0 HTTP/1.1" 200 OK',
        "INFO:     no access here",
        "Decode batch, #running-req: 3, #full token: 10, full token usage: 0.01, accept len: 2.50, "
        "cuda graph: True, gen throughput (token/s): 99.00, #queue-req: 0",
        "WARNING: something deprecated",
        "",
        "\udcff",
    ]
)
# Lines that change the machine's state (failure, stop, relaunch, traceback groups, frames): rare, or
# the log leaves the serving state before the bulk scan has anything to do.
_STATE_LINES = st.sampled_from(
    [
        "INFO:     Shutting down",
        "Received signal 15 SIGTERM",
        "Scheduler hit an exception: Traceback (most recent call last):",
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB",
        "The server is fired up and ready to roll!",
        "server_args=ServerArgs(model_path='m', tp_size=2)",
        "Init torch distributed begin.",
        "Capturing batches (bs=4 avail_mem=1 GB):  50%|##| 1/2 [00:00<00:00, 1it/s]\rCapturing batches",
        "\r",
        "```",
        "# Heading",
        "Killed",
        "resource_tracker: There appear to be 1 leaked semaphore objects to clean up at shutdown",
    ]
)
_DECODE_LINE = st.builds(lambda p, d: p + d, _TS, _DECODE)
_LINE = st.one_of(
    _DECODE_LINE,
    _DECODE_LINE,
    _DECODE_LINE,
    st.builds(lambda p, d: p + d, _TS, _SERVING_LINES),
    st.builds(lambda p, d: p + d, _TS, _SERVING_LINES),
    st.builds(lambda p, d: p + d, _TS, _SERVING_LINES),
    st.text(max_size=60),
)
_RARE_LINE = st.builds(lambda p, d: p + d, _TS, _STATE_LINES)
_START = (
    "[2026-03-14 12:00:00 TP0] Init torch distributed begin.\n"
    "[2026-03-14 12:00:00] The server is fired up and ready to roll!\n"
    "[2026-03-14 12:00:00 TP0] Decode batch, #running-req: 1, #token: 1, token usage: 0.1, "
    "gen throughput (token/s): 1.0, #queue-req: 0\n"
)


def _summaries(data: bytes, cuts: list[int], bulk: bool) -> tuple[dict, list[float], int]:
    from eagletui.core.state.summary import Summarizer

    interp = LogInterpreter(launch=1, emit_lines=False)
    feed = interp.feed_bulk_bytes if bulk else interp.feed_bytes
    summ = Summarizer()
    gens: list[float] = []

    def take(items: list) -> None:
        for e in items:
            if e.type == "decode_rows":
                gens.extend(e.gen)
            elif e.type == "decode_stats":
                gens.append(e.gen_throughput)
        summ.add(items)

    pos = i = 0
    while pos < len(data):
        step = cuts[i % len(cuts)]
        take(feed(data[pos : pos + step]))
        pos += step
        i += 1
    take(interp.flush())
    summ.set_version(interp.version)
    return summ.result(), gens, interp.state.decode_count


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_LINE, max_size=80),
    st.lists(st.tuples(st.integers(min_value=0, max_value=80), _RARE_LINE), max_size=3),
    st.booleans(),
    st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=20),
    st.sampled_from(["\n", "\n", "\r\n"]),
)
@pytest.mark.slow
def test_bulk_path_equals_per_line(
    lines: list[str], rare: list[tuple[int, str]], started: bool, cuts: list[int], eol: str
) -> None:
    for at, line in rare:
        lines.insert(at, line)
    text = (_START if started else "") + eol.join(lines) + eol
    data = text.encode("utf-8", "surrogateescape")
    ref = _summaries(data, [1 << 20], bulk=False)
    assert _summaries(data, cuts, bulk=False) == ref
    assert _summaries(data, cuts, bulk=True) == ref
    assert _summaries(data, [1 << 20], bulk=True) == ref
