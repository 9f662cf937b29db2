"""SGLang's line classifier (core/logs/formats/sglang) and the interpreter's framing (chunks, frames, glued lines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.core import events as ev
from eagletui.core.logs.formats.sglang.lines import classify, split_glued
from eagletui.core.logs.formats.sglang.serving import parse_decode
from eagletui.core.phases import event_builders
from eagletui.core.phases import interpreter as log_interpreter
from eagletui.core.phases.interpreter import LogInterpreter


def test_prefix_variants() -> None:
    r = classify("[12:00:01 TP3] Load weight begin. avail mem=70.00 GB")
    assert (r.tp, r.has_date, r.tag) == (3, False, "load_begin")
    r = classify("[2026-01-01 12:00:01.123 DP1 PP0 ATTN_CP0 MOE_DP0 TP5 EP5] Memory pool end. avail mem=1 GB")
    assert (r.tp, r.has_ms, r.tag) == (5, True, "pool_end")
    r = classify("(SchedulerActor pid=123, ip=10.0.0.2) [2026-01-01 12:00:01 TP2] Init parallel begin.")
    assert (r.tp, r.tag) == (2, "dist_begin")
    r = classify("sglang-1  | [2026-01-01 12:00:01 TP7] Init torch distributed begin.")
    assert (r.tp, r.tag) == (7, "dist_begin")
    r = classify("2026-01-01 12:00:01,555 INFO x: [2026-01-01 12:00:01 TP0] Init nccl begin.")
    assert r.tag == "dist_begin"
    assert classify("random text with [brackets]").kind == "other"


def test_decode_variants() -> None:
    base = "#running-req: 3, #token: 10, token usage: 0.01, "
    for head in ("Decode batch.", "Decode batch,", "Decode batch [120],"):
        for tail in ("", ", "):
            d = parse_decode(f"{head} {base}gen throughput (token/s): 12.50, #queue-req: 2{tail}")
            assert d and d["gen_throughput"] == 12.5 and d["queue_req"] == 2
    hybrid = (
        "Decode batch, #running-req: 3, #full token: 10, full token usage: 0.01, #swa token: 4, "
        "swa token usage: 0.00, accept len: 2.50, accept rate: 0.30, cpu graph: False, "
        "gen throughput (token/s): 99.00, #queue-req: 0"
    )
    d = parse_decode(hybrid)
    assert d and d["num_tokens"] == 10 and d["accept_len"] == 2.5 and d["cuda_graph"] is False
    assert parse_decode("Decode batch, #running-req: 3, #token: 1") is None


def test_capture_wordings() -> None:
    cases = {
        "Capture cuda graph begin. This can take up to several minutes.": False,
        "Capture draft cuda graph begin. This can take up to several minutes. avail mem=1 GB": True,
        "Capture draft extend cuda graph begin. This can take up to several minutes.": True,
        "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4": False,
        "Capture draft decode CUDA graph begin. backend=full": True,
        "Capture draft extend CUDA graph begin. backend=full": True,
        "Capture target prefill CUDA graph begin. backend=breakable": False,
        "Capture piecewise CUDA graph begin. avail mem=3 GB": False,
    }
    for msg, draft in cases.items():
        r = classify(f"[2026-01-01 12:00:00 TP0] {msg}")
        assert r.tag == "capture_begin" and r.data["draft"] is draft, msg


def test_bars() -> None:
    r = classify(
        "Capturing batches (bs=48 avail_mem=10.50 GB):  25%|██▌       | 1/4 [00:00<00:00,  8.24it/s]"
    )
    assert (r.tag, r.data["done"], r.data["total"], r.data["label"]) == ("bar_capture", 1, 4, "bs=48")
    r = classify("Multi-thread loading shards:  50% Completed | 2/4 [00:01<00:01,  1.45it/s]")
    assert (r.tag, r.data["done"]) == ("bar_shards", 2)
    assert classify("  0%|          | 0/4 [00:00<?, ?it/s]").tag == "bar_capture"
    r = classify(
        "Capturing prefill shape (num_tokens=16 avail_mem=9 GB):  50%|#  | 1/2 [00:01<00:01, 1.2it/s]"
    )
    assert r.data["label"] == "num_tokens=16"


def test_split_glued() -> None:
    seg = "Loading x:  50% Completed | 1/2 [00:01<00:01,  1.00it/s][2026-01-01 12:00:09 TP1] Load weight end."
    assert split_glued(seg) == [seg[: seg.index("[2026")], "[2026-01-01 12:00:09 TP1] Load weight end."]
    plain = "sglang-1  | [2026-01-01 12:00:09 TP1] Load weight end."
    assert split_glued(plain) == [plain]


def test_frames_and_chunks() -> None:
    data = (
        b"[2026-01-01 12:00:00 TP0] Load weight begin. avail mem=1 GB\n"
        b"\rLoading safetensors checkpoint shards:   0% Completed | 0/2 [00:00<?, ?it/s]"
        b"\rLoading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.0it/s]"
    )
    interp = LogInterpreter(launch=3)
    out = interp.feed_bytes(data)
    prog = [e for e in out if isinstance(e, ev.PhaseProgress)]
    # the 50% frame is not terminated yet; the 0% one is and shows immediately
    assert [(p.done, p.total, p.unit) for p in prog] == [(0, 2, "shards")]
    out = interp.feed_bytes(b"\rLoading safetensors checkpoint shards: 100% Completed | 2/2 [00:02<00:00]\n")
    prog = [e for e in out if isinstance(e, ev.PhaseProgress)]
    assert [(p.done, p.launch) for p in prog] == [(1, 3), (2, 3)]
    lines = [e for e in out if isinstance(e, ev.LogLine)]
    assert all(line.frame and line.kind == "progress" for line in lines)


def test_utf8_split_and_traceback_grouping() -> None:
    text = (
        "[2026-01-01 12:00:00 TP0] Load weight begin. avail mem=1 GB\n"
        "[2026-01-01 12:00:01 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB — é\n"
        "[2026-01-01 12:00:02] Received sigquit from a child process. It usually means the child failed.\n"
    ).encode()
    interp = LogInterpreter()
    out: list[ev.Event] = []
    for i in range(len(text)):
        out += interp.feed_bytes(text[i : i + 1])
    out += interp.flush()
    kinds = [e.kind for e in out if isinstance(e, ev.LogLine)]
    assert kinds == ["phase", "error", "traceback", "traceback", "error"]
    fails = [e for e in out if isinstance(e, ev.ServerFailed)]
    assert len(fails) == 1 and fails[0].kind == "oom" and fails[0].phase == "load_target"
    assert "é" in fails[0].message
    assert interp.state.status == "failed"


def test_new_launch_after_terminal_state() -> None:
    text = (
        "[2026-01-01 12:00:00 TP0] Init torch distributed begin.\n"
        "[2026-01-01 12:00:05] The server is fired up and ready to roll!\n"
        "[2026-01-01 13:00:00 TP0] Init torch distributed begin.\n"
    )
    interp = LogInterpreter(launch=1, emit_lines=False)
    out = interp.feed(text) + interp.flush()
    launches = [e for e in out if isinstance(e, ev.LaunchDetected)]
    assert len(launches) == 1 and launches[0].launch == 2
    assert interp.state.status == "loading" and interp.state.phase == "dist_init"


def test_emit_lines_false_has_no_loglines() -> None:
    interp = LogInterpreter(emit_lines=False)
    out = interp.feed("[2026-01-01 12:00:00 TP0] Init parallel begin.\nhello\n") + interp.flush()
    assert not any(isinstance(e, ev.LogLine) for e in out)


def test_parse_decode_malformed_numbers() -> None:
    # "[\d.]+" admits "1.2.3": not a Decode line, and no ValueError out of the interpreter.
    bad = "Decode batch, #running-req: 3, #token: 10, token usage: 1.2.3, gen throughput (token/s): 1.0, #queue-req: 0"
    assert parse_decode(bad) is None
    assert classify("[2026-01-01 12:00:00 TP0] " + bad).kind == "other"


_READY = (
    "[2026-03-14 12:00:00 TP0] Init torch distributed begin.\n"
    "[2026-03-14 12:00:00] The server is fired up and ready to roll!\n"
)
_DEC = (
    "[2026-03-14 12:00:01 TP0] Decode batch, #running-req: 1, #token: 1, token usage: 0.1, "
    "gen throughput (token/s): 7.0, #queue-req: 0"
)


def _fold(text: str, bulk: bool) -> tuple[dict, list[float]]:
    from eagletui.core.state.summary import Summarizer

    interp = LogInterpreter(launch=1, emit_lines=False)
    items = (interp.feed_bulk_bytes if bulk else interp.feed_bytes)(text.encode()) + interp.flush()
    gens: list[float] = []
    for e in items:
        if e.type == "decode_rows":
            gens.extend(e.gen)
        elif e.type == "decode_stats":
            gens.append(e.gen_throughput)
    summ = Summarizer()
    summ.add(items)
    summ.set_version(interp.version)
    return summ.result(), gens


def test_bulk_scan_decides_lines_like_the_per_line_path() -> None:
    tricky = [
        # the earliest serving marker decides; a Decode text behind a Prefill marker is not a row
        "[2026-03-14 12:00:02 TP0] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, "
        "#queue-req: 0, ] Decode batch, #running-req: 1, #token: 1, token usage: 0.1, "
        "gen throughput (token/s): 5.0, #queue-req: 0",
        # access lines are checked first
        'INFO:     1.2.3.4:5 - "GET /x] Decode batch, #running-req: 1, #token: 1, token usage: 0.1, '
        'gen throughput (token/s): 5.0, #queue-req: 0 HTTP/1.1" 200 OK',
        # the marker must lie in the first 400 characters (else the classifier decides)
        "y" * 362 + "[2026-03-14 12:00:08 TP0] Prefill batch, broken Received signal 15 SIGTERM",
        "y" * 361 + _DEC[:25] + "Prefill batch, broken",
        # a second Decode text in the tail does not make a second row
        _DEC + ", [x] Decode batch, #running-req: 1, #token: 1, token usage: 0.1, "
        "gen throughput (token/s): 5.0, #queue-req: 0",
        # other layouts and odd numbers fall back to the per-line path
        "[2026-03-14 12:00:03 TP0] Decode batch [9], #running-req: 3, #full token: 10, full token usage: 0.01, "
        "cpu graph: False, gen throughput (token/s): 99.00, #queue-req: 0",
        _DEC.replace("7.0", "٣.5"),
        _DEC.replace("7.0", ".5"),
        "",
    ]
    text = _READY + _DEC + "\n" + "\n".join(tricky + [_DEC] * 3) + "\n"
    ref = _fold(text, bulk=False)
    assert _fold(text, bulk=True) == ref
    assert ref[0]["state"] == "stopped"
    assert ref[1] == [7.0, 7.0, 99.0, 3.5, 0.5, 7.0, 7.0, 7.0]


def test_bulk_scan_stops_where_the_state_changes() -> None:
    cases = [
        "[2026-03-14 12:00:02] server_args=ServerArgs(model_path='m', tp_size=2)",  # relaunch
        "[2026-03-14 12:00:02 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory.",
        "INFO:     Shutting down",
    ]
    unprefixed = _DEC.replace("[2026-03-14 12:00:01 TP0]", "x]")
    for line in cases:
        text = _READY + "\n".join([_DEC, _DEC, line, unprefixed, _DEC, _DEC]) + "\n"
        assert _fold(text, bulk=True) == _fold(text, bulk=False), line


# --------------------------------------------------------------------- live serving fast path

_LOGS = Path(__file__).parent / "fixtures" / "logs"


def _live_events(data: bytes, step: int, fast: bool) -> tuple[list[dict], tuple]:
    old = log_interpreter.FAST_LIVE
    log_interpreter.FAST_LIVE = fast
    try:
        interp = LogInterpreter(launch=2)
        out: list[ev.Event] = []
        for i in range(0, len(data), step):
            out += interp.feed_bytes(data[i : i + step])
        out += interp.flush()
    finally:
        log_interpreter.FAST_LIVE = old
    rows = []
    for e in out:
        d = e.to_dict()
        d.pop("wall")
        d.pop("mono")
        rows.append(d)
    m = interp._m
    st = interp.state
    machine = (
        st.status,
        st.phase,
        st.decode_count,
        [e.gen_throughput for e in st.decode_history],
        m.last_ts,
        m.last_ts_text,
        m.day_offset,
        interp.version,
        sorted(st.ranks),
    )
    return rows, machine


def _live_serving_log(n: int) -> bytes:
    """Serving lines of many layouts, interruptions, and prefixes the fast path must leave alone."""
    lines = []
    for i in range(n):
        sec = f"13:{i // 60 % 60:02d}:{i % 60:02d}"
        t = f"[2026-03-14 {sec} TP{i % 3}] " if i % 13 else f"[2026-03-14 {sec}.{i % 1000:03d} DP0 TP1] "
        if i % 17 == 0:
            t = f"({'SchedulerActor'} pid=7) [{sec} TP2] "  # 0.3.x-style time only, Ray actor tag
        k = i % 10
        if k == 0:
            lines.append(
                t + f"Decode batch, #running-req: {i % 48}, #token: {1000 + i}, token usage: 0.{i % 97:02d}, "
                f"accept len: {2 + i % 200 / 100:.2f}, accept rate: 0.{i % 89:02d}, cuda graph: True, "
                f"gen throughput (token/s): {3000 + i * 1.25:.2f}, #queue-req: {i % 9}"
            )
        elif k == 1:
            lines.append(
                t + f"Prefill batch, #new-seq: 1, #new-token: {i}, #cached-token: 0, #queue-req: 0, "
            )
        elif k == 2:
            lines.append(
                t + f"Prefill batch(mixed #running-req: 3) [{i}], #new-seq: 2, #new-token: {i}, "
                f"#cached-token: 5, cache hit rate: 1.00%, token usage: 0.20, #running-req: 4, #queue-req: 1, "
                f"input throughput (token/s): {i}.25, "
            )
        elif k == 3:
            # Bare (another program's uvicorn) and behind SGLang's timestamp (how SGLang prints it).
            stamp = ("" if i % 2 else f"[2026-03-14 {sec}] ") if i % 7 else t
            lines.append(stamp + f'INFO:     127.0.0.1:{40000 + i} - "POST /generate HTTP/1.1" 200 OK')
        elif k == 4:
            lines.append(
                t
                + "Decode batch, #running-req: 1, #full token: 7, gen throughput (token/s): 9.50, #queue-req: 0"
            )
        elif k == 5:
            lines.append(
                t
                + "Decode batch. #running-req: 1, #token: 1, token usage: 1.2.3, gen throughput (token/s): 9, #queue-req: 0"
            )
        elif k == 6 and i % 7 == 0:
            lines.append(t + "Some warning about the cache")
        elif k == 6 and i % 11 == 0:
            lines.append(
                "sglang-1  | "
                + t
                + "Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, #queue-req: 0"
            )
        elif k == 6 and i % 29 == 0:
            lines.append(t + "Scheduler hit an exception: Traceback (most recent call last):")
            lines.append('  File "x.py", line 1, in <module>')
            lines.append("ValueError: boom")
        elif k == 7 and i % 23 == 0:
            lines.append("\rCapturing batches (bs=1 avail_mem=9 GB): 50%|#  | 1/2 [00:01<00:01, 1.2it/s]")
        elif k == 7 and i % 19 == 0:
            lines.append(
                t + "Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, #queue-req: 0 1.2it/s]"
            )
        elif k == 8:
            lines.append(f'INFO:     127.0.0.1:{i} - "GET /health HTTP/1.1" 200 OK 3.1s/it]')
        else:
            lines.append(
                t + f"Decode batch [{i}], #running-req: 3, #token: 9, token usage: 0.01, cuda graph: False, "
                f"gen throughput (token/s): {i % 1000}.5, #queue-req: 0, "
            )
    return "\n".join(lines).encode() + b"\nINFO:     Shutting down\n[2026-03-14 14:00:00] tail"


@pytest.mark.slow
def test_live_fast_path_gives_the_same_events() -> None:
    """``feed`` folds serving lines directly while they cannot change the phase: same events and state.

    A log behind a wrapper (``sglang-server-1  | [...] ...``) is the one exception at a line a feed: a
    live tail decides the wrapper's prefix from the lines each feed brought (it shows them at once rather
    than hold them for more lines to vote) and again once enough lines have voted, so a wrapped log
    arriving one line at a time shows its first few lines uncut
    (tests/test_outer_prefix.py::test_a_live_tail_one_line_at_a_time_decides_the_prefix_again). Those are
    compared at feeds that carry whole screens of lines."""
    sources = [p.read_bytes() for p in sorted(_LOGS.glob("*.log"))]
    assert len(sources) > 10
    head = (_LOGS / "ok_0516_tp8.log").read_bytes()
    serving = _live_serving_log(3000)
    sources += [serving, head + serving, head + serving + b"\n" + head + serving]
    wrapped = 0
    for data in sources:
        ref = _live_events(data, 1 << 20, fast=False)
        first = next((row["text"] for row in ref[0] if row.get("type") == "log"), "")
        behind_a_wrapper = " | [" in first[:60]  # docker compose's "NAME  | " before SGLang's own prefix
        wrapped += behind_a_wrapper
        for step in (1 << 20, 4096) if behind_a_wrapper else (1 << 20, 4096, 61):
            assert _live_events(data, step, fast=True) == ref, step
    assert wrapped < len(sources)


def test_live_fast_path_clock_and_midnight() -> None:
    """Time-only prefixes wrap at midnight and ms timestamps keep their fraction on the fast path."""
    lines = []
    for i, tm in enumerate(
        ("23:59:58", "23:59:59", "00:00:00", "00:00:01", "00:00:01", "12:00:00", "23:59:59")
    ):
        lines.append(
            f"[{tm} TP0] Prefill batch, #new-seq: 1, #new-token: {i}, #cached-token: 0, #queue-req: 0"
        )
        lines.append(
            f"[2026-12-31 {tm}.{i:03d} TP0] Decode batch, #running-req: 1, #token: 1, token usage: 0.10, "
            "gen throughput (token/s): 9.00, #queue-req: 0"
        )
    data = ("\n".join(lines) + "\n").encode()
    ref = _live_events(data, 1 << 20, fast=False)
    assert ref[1][0] == "ready" and ref[1][2] == 7
    assert _live_events(data, 1 << 20, fast=True) == ref
    assert _live_events(data, 50, fast=True) == ref


def test_fast_event_builders_match_the_constructors() -> None:
    def strip(e: ev.Event) -> dict:
        d = e.to_dict()
        del d["wall"], d["mono"]
        return d

    a = event_builders.build_log_line("x", "http", None, 7, 2, 1, 0, 1)
    assert type(a) is ev.LogLine and a.wall > 0 and a.mono > 0
    ref_a = ev.LogLine(text="x", kind="http", seq=7, launch=2, prefix_end=1, rank_start=0, rank_end=1)
    assert strip(a) == strip(ref_a)
    b = event_builders.build_prefill_stats(1, 2, 3, 4, 5, 6.5, 2)
    assert type(b) is ev.PrefillStats
    ref_b = ev.PrefillStats(
        new_seq=1, new_token=2, cached_token=3, running_req=4, queue_req=5, input_throughput=6.5, launch=2
    )
    assert strip(b) == strip(ref_b)
    c = event_builders.build_decode_stats(1.5, 2, 3, None, 0.5, 0.25, 9, True, 2)
    assert type(c) is ev.DecodeStats
    ref_c = ev.DecodeStats(
        gen_throughput=1.5,
        running_req=2,
        queue_req=3,
        accept_rate=0.5,
        token_usage=0.25,
        num_tokens=9,
        cuda_graph=True,
        launch=2,
    )
    assert strip(c) == strip(ref_c)
    # A class that no longer looks as expected gets the plain constructor.
    assert event_builders.slot_setters(ev.LogLine, ("text", "kind")) is None
    # The one template serves any event class, with constants for fixed fields; a class whose fields
    # the parameters do not cover is refused at import time, not at the first line.
    build = event_builders.builder(
        ev.LogLine,
        ("seq", "text", "launch"),
        {"kind": "x", "rank": 1, "frame": True, "prefix_end": 0, "rank_start": 0, "rank_end": 0},
    )
    assert strip(build(3, "t", 4)) == strip(
        ev.LogLine(text="t", kind="x", rank=1, seq=3, frame=True, launch=4)
    )
    import pytest

    with pytest.raises(ValueError):
        event_builders.builder(ev.LogLine, ("text",))


# ----------------------------------------------------------------- real-world behaviour (issue 14)

FIXTURES = Path(__file__).parent / "fixtures" / "logs"
REAL_0517 = Path("/work/shared/fixtures/sglang-0.5.17-h200")


def _parse_text(text: str) -> dict:
    import io

    from eagletui.commands.parse import parse_stream

    return parse_stream(io.BytesIO(text.encode()))


def _reading(s: dict) -> tuple:
    f = s["failure"]
    return (
        s["state"],
        s["phase"],
        [(p["name"], p["start"], p["end"], p["done"], p["total"]) for p in s["phases"]],
        f and (f["kind"], f["phase"]),
        s["decode"]["count"],
        s["launch"] and s["launch"]["version"],
        s["url"],
    )


# A log shipper's/orchestrator's prefix in front of every physical line.
_PREFIX_STYLES = {
    "cri": "2026-08-01T23:43:43.123456789Z stdout F ",
    "compose": "sglang-1  | ",
    "wrapper_logger": "INFO sglang: ",
    "kubectl": "[pod/sglang-0/server] ",
    "journald": "Aug 01 23:43:43 gpu-host python3[4242]: ",
    "journald_iso": "2026-08-01T23:43:43+0000 gpu-host python3[4242]: ",
    "compose_colour": "\x1b[36msglang-1  |\x1b[0m ",
    "kubectl_timestamps": "2026-08-01T23:43:43.123456789Z ",
    "cri_offset": "2025-07-25T07:53:08.21748708+08:00 stdout F ",
    "ray_worker": "(WorkerDict pid=859188) ",
}


def test_foreign_prefixes_parse_the_same() -> None:
    """A log rewritten into each real prefix style reads exactly as the original."""
    for stem in ("stopped_0523", "fail_oom_capture_0513", "fail_exception_0510", "ok_0516_glued_bar"):
        text = (FIXTURES / f"{stem}.log").read_text()
        ref = _reading(_parse_text(text))
        for style, pfx in _PREFIX_STYLES.items():
            lines = text.split("\n")
            rewritten = "\n".join(pfx + ln if ln else ln for ln in lines)
            assert _reading(_parse_text(rewritten)) == ref, (stem, style)
        # Windows line ends, and SGLang's own records wrapped in colour codes (a colouring wrapper).
        assert _reading(_parse_text(text.replace("\n", "\r\n"))) == ref, (stem, "crlf")
        coloured = "\n".join(f"\x1b[32m{ln}\x1b[0m" if ln.startswith("[") else ln for ln in text.split("\n"))
        assert _reading(_parse_text(coloured)) == ref, (stem, "ansi")


def test_timestamped_uvicorn_lines_give_url_and_stop() -> None:
    text = (
        "[2026-08-01 23:43:30] server_args={'tp_size': 1}\n"
        "[2026-08-01 23:43:40] max_total_num_tokens=1000, max_prefill_tokens=16384\n"
        "[2026-08-01 23:43:43] INFO:     Started server process [4242]\n"
        "[2026-08-01 23:43:43] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        '[2026-08-01 23:43:44] INFO:     127.0.0.1:54321 - "POST /generate HTTP/1.1" 200 OK\n'
        "[2026-08-01 23:43:45] The server is fired up and ready to roll!\n"
        "[2026-08-01 23:50:00] INFO:     Shutting down\n"
        "[2026-08-01 23:50:00] INFO:     Finished server process [4242]\n"
    )
    s = _parse_text(text)
    assert (s["state"], s["url"]) == ("stopped", "http://0.0.0.0:30000")
    assert [p["name"] for p in s["phases"]][-2:] == ["warmup", "ready"]
    r = classify('[2026-08-01 23:43:44] INFO:     127.0.0.1:54321 - "GET /health HTTP/1.1" 200 OK')
    assert (r.kind, r.tag, r.prefixed) == ("http", "access", True)


def test_silent_death_reads_died() -> None:
    head = (
        "[2026-08-01 21:51:16] Load weight begin. avail mem=70.00 GB\n"
        "Multi-thread loading shards:  96% Completed | 47/49 [09:32<00:14,  7.50s/it]"
    )
    noise = (
        "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: resource_tracker: There "
        "appear to be 1 leaked semaphore objects to clean up at shutdown\n"
        "  warnings.warn('resource_tracker: There appear to be %d '\n"
    )
    for glue in ("\n", ""):  # on its own line, or glued behind the unterminated bar frame
        s = _parse_text(head + glue + noise)
        assert (s["state"], s["failure"]["kind"], s["phase"]) == ("failed", "died", "load_target"), glue
    for death in (
        "Killed",
        "bash: line 1:  4242 Killed   python3 -m sglang.launch_server",
        "Segmentation fault (core dumped)",
    ):
        s = _parse_text(head + "\n" + death + "\n")
        assert (s["state"], s["failure"]["kind"]) == ("failed", "died"), death


def test_root_cause_beats_the_sigquit_cascade_in_any_order() -> None:
    exc = (
        "[2026-02-27 15:27:13 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 766, in init_torch_distributed\n'
        '  File "/x/sglang/srt/distributed/device_communicators/pynccl_wrapper.py", line 374, in NCCL_CHECK\n'
        "RuntimeError: NCCL communicator was aborted on rank 3.\n"
    )
    quit_ = (
        "[2026-02-27 15:27:13] Received sigquit from a child process. It usually means the child failed.\n"
    )
    start = "[2026-02-27 15:27:00 TP3] Init torch distributed begin.\n"
    for text in (start + exc + quit_, start + quit_ + exc):
        s = _parse_text(text)
        assert (s["state"], s["failure"]["kind"], s["failure"]["phase"]) == ("failed", "nccl", "dist_init")
        assert "NCCL communicator was aborted" in s["failure"]["message"]
    # An exception whose own traceback does not mention NCCL stays an exception, whatever follows.
    plain = exc.replace("NCCL communicator was aborted on rank 3.", "boom").replace("pynccl_wrapper", "x")
    plain = plain.replace("NCCL_CHECK", "f")
    s = _parse_text(start + quit_ + plain)
    assert s["failure"]["kind"] == "exception"


def test_traceback_in_progress_at_the_end_is_a_failure() -> None:
    text = (
        "[2026-08-01 21:51:16 TP0] Load weight begin. avail mem=70.00 GB\n"
        "Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/model_loader/loader.py", line 362, in load_model\n'
        "    model.load_weights(self._get_all_weights(model_config, model))\n"
    )
    s = _parse_text(text)
    assert (s["state"], s["failure"]["kind"], s["phase"]) == ("failed", "exception", "load_target")
    # A finished traceback that the log then moves past is not a failure.
    s = _parse_text(
        text + "ValueError: retried\n[2026-08-01 21:51:20 TP0] Load weight end. type=X, avail mem=1 GB\n"
    )
    assert s["state"] == "loading"


def test_hybrid_prefill_lines_are_parsed() -> None:
    from eagletui.core.logs.formats.sglang.serving import parse_prefill

    for usage in (
        "full token usage: 0.10, swa token usage: 0.20, ",
        "full token usage: 0.10, mamba usage: 0.30, ",
    ):
        d = parse_prefill(
            f"Prefill batch, #new-seq: 2, #new-token: 100, #cached-token: 7, {usage}#running-req: 3, "
            "#queue-req: 1, #pending-token: 0, cuda graph: True, input throughput (token/s): 55.50"
        )
        assert d == {
            "new_seq": 2,
            "new_token": 100,
            "cached_token": 7,
            "running_req": 3,
            "queue_req": 1,
            "input_throughput": 55.5,
        }


def test_prose_mentioning_failures_is_unknown() -> None:
    root = Path(__file__).parents[1]
    for text in (
        (root / "README.md").read_text(),
        (root / "docs" / "parse-json.md").read_text(),  # quotes log records in tables and inline code
        "# Troubleshooting\n\nIf you see `NCCL error` or `CUDA out of memory`, lower the batch size.\n",
    ):
        s = _parse_text(text)
        assert (s["state"], s["failure"]) == ("unknown", None)
    # The same error line pasted on its own (a log excerpt) is a failure.
    s = _parse_text(
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n"
    )
    assert s["failure"]["kind"] == "nccl"
    # A log pasted into an issue body (markdown): the fenced block is read, the prose around it is not.
    log = (FIXTURES / "fail_oom_capture_0513.log").read_text()
    issue = f"# [Bug] OOM\n\nI see `NCCL error` sometimes. Log:\n\n```\n{log}```\n\n- tp=8, `--port 30000`\n"
    s = _parse_text(issue)
    assert (s["state"], s["failure"]["kind"]) == ("failed", "oom")
    s = _parse_text("collect2: error: ld returned 1 exit status\n")
    assert s["failure"] is None or s["failure"]["kind"] != "bad_args"


def test_real_0517_logs() -> None:
    """The real sglang 0.5.17 H200 run: full launch with every capture phase → ready → stopped."""
    if not REAL_0517.is_dir():
        import pytest

        pytest.skip("shared real fixtures not present")
    from eagletui.commands.parse import parse_path

    s = parse_path(str(REAL_0517 / "eagle3-cudagraph-serve-profile-sigterm.log"))
    names = [p["name"] for p in s["phases"]]
    # every phase SGLang has (torch.compile is a phase of its own only for servers that log it; queued
    # is a Slurm job's wait, which no log shows)
    assert names == [p for p in ev.LOG_PHASES if p != "compile"]
    assert all(p["seconds"] is not None for p in s["phases"])
    assert (s["state"], s["failure"], s["url"]) == ("stopped", None, "http://127.0.0.1:30000")
    caps = {p["name"]: (p["done"], p["total"]) for p in s["phases"] if p["name"].startswith("capture")}
    assert caps == {"capture_prefill": (58, 58), "capture_target": (8, 8), "capture_draft": (8, 8)}
    assert s["launch"]["version"] == ">=0.5.16,<=0.5.19"  # 0.5.17: both bounds hold
    s = parse_path(str(REAL_0517 / "crash-draft-model-init.log"))
    assert (s["state"], s["failure"]["kind"], s["phase"]) == ("failed", "exception", "load_draft")
    assert s["failure"]["message"].startswith("AttributeError: 'LlamaConfig'")
    s = parse_path(str(REAL_0517 / "ambiguous-flag-pp.txt"))
    assert (s["state"], s["failure"]["kind"]) == ("failed", "bad_args")


def test_prefill_graph_capture_failure_names_the_prefill_flags() -> None:
    text = (
        "[2026-08-01 21:51:16 TP0] Capture target prefill CUDA graph begin. backend=breakable, "
        "num_tokens=[4, 8], avail mem=11.78 GB\n"
        "[2026-08-01 21:51:20 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "Fail when using backend: breakable for prefill runner.\n"
        "[2026-08-01 21:51:20] Received sigquit from a child process. It usually means the child failed.\n"
    )
    s = _parse_text(text)
    f = s["failure"]
    assert (f["kind"], f["phase"]) == ("oom", "capture_prefill")
    assert "--cuda-graph-backend-prefill=disabled" in f["hint"]


def test_a_second_log_format_plugs_in() -> None:
    """The seam: a format object is all the interpreter needs (here a toy server's wording)."""
    from eagletui.core.logs.formats.sglang import SGLangFormat
    from eagletui.core.logs.seam import PHASE, Rec

    class Toy(SGLangFormat):
        name = "toy"

        @staticmethod
        def classify(text: str, frame: bool = False) -> Rec:
            words = {"LOADING WEIGHTS": "load_begin", "WEIGHTS LOADED": "load_end", "SERVING": "ready"}
            for w, tag in words.items():
                if text.endswith(w):
                    return Rec(
                        text=text, msg=w, kind=PHASE, tag=tag, ts_text=text[:19], has_date=True, prefixed=True
                    )
            return SGLangFormat.classify(text, frame)

    interp = LogInterpreter(emit_lines=False, fmt=Toy())
    out = (
        interp.feed(
            "2026-01-01 12:00:00 LOADING WEIGHTS\n2026-01-01 12:00:09 WEIGHTS LOADED\n2026-01-01 12:00:10 SERVING\n"
        )
        + interp.flush()
    )
    assert interp.state.status == "ready"
    assert [e.phase for e in out if isinstance(e, ev.PhaseFinished)][:2] == ["launch", "load_target"]
    load = interp.state.phases["load_target"]
    assert load.seconds == 9.0


def test_cuda_fault_noticed_by_the_nccl_watchdog_is_an_exception() -> None:
    text = (
        "[2026-01-01 12:00:00 TP1] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, "
        "gen throughput (token/s): 9.00, #queue-req: 0\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with exception: "
        "CUDA error: an illegal memory access was encountered\n"
        "Fatal Python error: Aborted\n"
    )
    f = _parse_text(text)["failure"]
    assert (f["kind"], "CUDA_LAUNCH_BLOCKING" in f["hint"]) == ("exception", True)
