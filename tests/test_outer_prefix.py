"""The outer prefix learned from the file itself (eagletui/core/logs/outer_prefix.py).

The property: any real fixture with a repeated prefix added to every line (a shipper's timestamp, a
compose service, CRI's stream, journald, a Python logging wrapper with levels that change, Ray's actor,
a pod marker, colour codes, a bracketed time like the server's own, two of them nested) parses to what
the fixture parses to without it. Real fixtures only: the public excerpts (tests/fixtures/real,
tests/fixtures/vllm), our own real 0.5.17 runs and the NCCL excerpts. A file of one line has nothing
repeated to learn from and is left out.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eagletui.commands.parse import parse_stream
from eagletui.core.logs.formats.sglang import SGLANG
from eagletui.core.logs.formats.vllm import VLLM
from eagletui.core.logs.outer_prefix import LEARN_LINES, OuterPrefix, learn, tokens
from eagletui.core.logs.seam import LogFormat
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.core.state.summary import Summarizer

FIX = Path(__file__).parent / "fixtures"
SGLANG_LOGS = sorted(
    [
        *(FIX / "real").glob("*.log"),
        *(FIX / "real-0.5.17").glob("*.log"),
        *(FIX / "real-diagnosis").glob("*.log"),
        *FIX.glob("real-sglang-0.5.17-run*/logs/*.log"),
    ]
)
VLLM_LOGS = sorted((FIX / "vllm").glob("*.log"))
ALL = [(p, SGLANG) for p in SGLANG_LOGS] + [(p, VLLM) for p in VLLM_LOGS]
ALL = [(p, f) for p, f in ALL if sum(1 for line in p.read_text("utf-8", "replace").splitlines() if line.strip()) > 1]

Wrapper = Callable[[int, random.Random], str]

LEVELS = ("INFO", "ERROR", "WARNING", "DEBUG")

#: Prefixes other programs put in front of every line; ``i`` is the line's number.
WRAPPERS: dict[str, Wrapper] = {
    "iso": lambda i, r: f"2026-03-14T12:{i // 60 % 60:02d}:{i % 60:02d}.{r.randrange(10**6):06d}Z ",
    "compose": lambda i, r: "sglang-server-1  | ",
    "cri": lambda i, r: f"2026-03-14T12:00:{i % 60:02d}.{r.randrange(10**9):09d}+08:00 {r.choice(('stdout', 'stderr'))} F ",
    "journald": lambda i, r: f"Mar 14 12:{i // 60 % 60:02d}:{i % 60:02d} gpu-host-7 python3[4242]: ",
    "pylogging": lambda i, r: f"2026-03-14 12:00:{i % 60:02d} | {r.choice(LEVELS)} | {r.choice(('stdout', 'stderr'))} | ",
    "ray": lambda i, r: "(RolloutWorker pid=91234, ip=10.0.0.17) ",
    "pod": lambda i, r: "[pod/inference-0/server] ",
    "ansi": lambda i, r: f"\x1b[36mworker-3\x1b[0m \x1b[{r.choice((32, 31, 33))}m{r.choice(LEVELS)}\x1b[0m ",
    # (for vLLM only: in front of plain text, SGLang's own ``[time] text`` records look exactly like it)
    "bracket_time": lambda i, r: f"[2026-03-14 12:{i // 60 % 60:02d}:{i % 60:02d}] ",
    "bare_time": lambda i, r: f"2026-03-14 12:{i // 60 % 60:02d}:{i % 60:02d} ",
    "nested": lambda i, r: f"node-a  | 2026-03-14T12:00:{i % 60:02d}Z (Actor pid=77) ",
}


def _wrap(text: str, wrapper: Wrapper, seed: int) -> str:
    rnd = random.Random(seed)
    return "\n".join(wrapper(i, rnd) + line for i, line in enumerate(text.split("\n")))


def _parse(text: str, fmt: LogFormat) -> dict[str, Any]:
    import io

    return parse_stream(io.BytesIO(text.encode("utf-8")), fmt=fmt)


def _reading(s: dict[str, Any]) -> dict[str, Any]:
    f = s["failure"]
    return {
        "state": s["state"],
        "phase": s["phase"],
        "phases": [(p["name"], p["seconds"], p.get("done"), p.get("total")) for p in s["phases"]],
        "failure": f and (f["kind"], f["message"], f.get("phase")),
        "decode": s["decode"]["count"],
        "spec": s["spec"] and s["spec"]["count"],
        "url": s.get("url"),
    }


@functools.cache
def _plain_reading(path: Path, fmt: Any) -> dict[str, Any]:
    """The unwrapped fixture's reading, once per worker: every wrapper compares against it (it was parsed
    again for each of the ten wrappers, half of the test's time)."""
    return _reading(_parse(path.read_text(encoding="utf-8", errors="replace"), fmt))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_a_repeated_prefix_on_every_line_changes_nothing(name: str) -> None:
    """Every real fixture, wrapped: the same state, phases (and their lengths), failure, serving."""
    wrong = []
    for i, (path, fmt) in enumerate(ALL):
        if name == "bracket_time" and fmt is SGLANG:
            continue  # test_the_servers_own_record_behind_a_copy_of_its_start_is_found
        text = path.read_text(encoding="utf-8", errors="replace")
        want = _plain_reading(path, fmt)
        got = _reading(_parse(_wrap(text, WRAPPERS[name], i), fmt))
        if got != want:
            diff = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
            wrong.append(f"{path.parent.name}/{path.name}: {diff}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_a_wrapped_fixture_reads_alike_however_it_is_chunked() -> None:
    """The lines held while the prefix is learned come back in order: live chunks fold to the summary."""
    path = FIX / "real" / "exception-ray-sglangengine-prefix-lora-moe.log"
    text = _wrap(path.read_text(encoding="utf-8"), WRAPPERS["compose"], 0)
    want = _parse(text, SGLANG)
    for chunk in (1, 97, 4096):
        it = LogInterpreter(launch=1, fmt=SGLANG)
        events: list[Any] = []
        for k in range(0, len(text), chunk):
            events += it.feed(text[k : k + chunk])
        events += it.flush()
        s = Summarizer()
        s.add(events)
        got = s.result()
        for key in ("state", "phases", "failure"):
            assert got[key] == want[key], (chunk, key)
        lines = [e for e in events if e.type == "log"]
        assert lines[0].text.startswith("sglang-server-1  | ")  # shown whole, the wrapper in its prefix
        assert lines[0].prefix_end >= len("sglang-server-1  | ")


def test_what_is_learned_from_real_wrappers() -> None:
    """Shapes, not strings: numbers, levels, streams and colours vary from line to line."""
    heads = [
        tokens("2024-08-27 12:54:55 | ERROR | stderr | "),
        tokens("2024-08-27 12:54:56 | INFO | stdout | "),
        tokens("2024-08-27 12:55:01 | ERROR | stderr | "),
    ]
    p = learn(heads, 3)
    assert p is not None
    assert p.match("2025-01-02 03:04:05 | WARNING | stdout | Traceback (most recent call last):").end() == 41
    # a line that does not go on as the learned ones did takes the longest shape that fits
    assert p.match("2025-01-02 03:04:05 | WARNING | stdout |").end() == len("2025-01-02 03:04:05 | WARNING | stdout ")
    assert p.match("Traceback (most recent call last):") is None


@pytest.mark.parametrize(
    "heads",
    [
        ["  ", "  ", "  "],  # indentation is the text's own
        ["/usr/lib/python3/site.py:63: ", "/usr/lib/python3/site.py:63: "],  # a source location
        ['<font color="#2AA1B3"><b>', '<font color="#2AA1B3"><b>'],  # no whitespace at its end
        ["a | ", "b | ", "c | "],  # no shape most lines share
    ],
)
def test_what_is_no_wrapper(heads: list[str]) -> None:
    assert learn([tokens(h) for h in heads], len(heads)) is None


def test_a_file_the_server_writes_itself_is_not_held_long() -> None:
    """vLLM's first record decides at once, and so does SGLang's ranked ``[time TP0]`` (no wrapper copies
    the ranks: a live tail shows its first bar frame at once); SGLang's unranked ``[time] text`` may be a
    wrapper's time in front of plain text, so its first lines wait for the vote (a few lines)."""
    op = OuterPrefix(VLLM.record_start, VLLM.nested_records)
    assert op.offer("(APIServer pid=1) INFO 05-07 04:56:17 [api_server.py:1] vLLM API server version 0.11.0", False)
    assert not op.learning and op.pattern is None
    op = OuterPrefix(SGLANG.record_start, SGLANG.nested_records)
    assert op.offer("[2026-03-14 12:00:00 TP0] Init torch distributed begin.", False)
    assert not op.learning and op.pattern is None
    op = OuterPrefix(SGLANG.record_start, SGLANG.nested_records)
    for i in range(7):
        assert op.offer(f"[2026-03-14 12:00:0{i}] Load weight begin.", False) == []
    assert len(op.offer("[2026-03-14 12:00:09] server_args=ServerArgs(model_path='m')", False)) == 8
    assert not op.learning and op.pattern is None


def test_the_servers_own_record_behind_a_copy_of_its_start_is_found() -> None:
    """``[time] [time TP0] …``: the first is the wrapper's; the server's unranked ``[time] text`` in the
    same file keeps its own start."""
    lines = [f"[2026-03-14 12:00:0{i}] [2025-07-02 07:41:5{i} TP{i}] Load weight begin. avail mem=21.73 GB" for i in range(6)]
    text = "\n".join(lines) + "\n[2026-03-14 12:00:09]   File \"/x/sglang/srt/managers/scheduler.py\", line 1, in f\n"
    s = _parse(text, SGLANG)
    assert [p["name"] for p in s["phases"]][-1] == "load_target"
    assert s["phases"][-1]["start"] == "2025-07-02 07:41:50"


def _lines(text: str, fmt: LogFormat, per_feed: int | None) -> tuple[list[tuple[str, str, int]], LogInterpreter]:
    it = LogInterpreter(launch=1, fmt=fmt)
    events: list[Any] = []
    if per_feed is None:
        events += it.feed(text)
    else:
        lines = text.split("\n")
        for i in range(0, len(lines), per_feed):
            events += it.feed("\n".join(lines[i : i + per_feed]) + ("\n" if i + per_feed < len(lines) else ""))
    events += it.flush()
    return [(e.text, e.kind, e.prefix_end) for e in events if e.type == "log"], it


@pytest.mark.parametrize(
    "path,fmt,wrapper",
    [
        (FIX / "real" / "exception-ray-sglangengine-prefix-lora-moe.log", SGLANG, "compose"),
        (FIX / "real-0.5.17" / "eagle3-cudagraph-serve-profile-sigterm.log", SGLANG, "journald"),
        (FIX / "vllm" / "ready-0251-mtp-qwen38-dgxspark.log", VLLM, "compose"),
    ],
    ids=["sglang-compose", "sglang-journald", "vllm-compose"],
)
def test_a_live_tail_one_line_at_a_time_decides_the_prefix_again(path: Path, fmt: LogFormat, wrapper: str) -> None:
    """A live tail decides at the end of each read (it shows what came rather than hold it); a wrapped log
    arriving one line at a time decided from its first line alone that nothing wraps it. Now the next
    lines go on voting and the prefix is decided again with LEARN_LINES of them: the same prefix as the
    whole file gives, every line after the first few shown alike, and the same state."""
    text = _wrap(path.read_text(encoding="utf-8", errors="replace"), WRAPPERS[wrapper], 3)
    whole, a = _lines(text, fmt, None)
    live, b = _lines(text, fmt, 1)
    assert a._outer.pattern is not None
    assert b._outer.pattern is not None and b._outer.pattern.pattern == a._outer.pattern.pattern
    assert len(whole) == len(live)
    differ = [i for i, (x, y) in enumerate(zip(whole, live, strict=True)) if x != y]
    assert not differ or max(differ) < 2 * LEARN_LINES, differ
    for key in ("status", "phase"):
        assert getattr(a.state, key) == getattr(b.state, key), key
