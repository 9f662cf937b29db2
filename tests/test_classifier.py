"""Line classifier and interpreter framing."""

from __future__ import annotations

from eagletui.core import events as ev
from eagletui.core.log_interpreter import LogInterpreter
from eagletui.core.sglang_lines import classify, parse_decode, split_glued


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
    from eagletui.core.summary import Summarizer

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
