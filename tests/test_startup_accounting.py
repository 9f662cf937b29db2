"""Every second between a launch and ready is accounted for, on a real 0.5.17 launch.

The real log (tests/fixtures/real-0.5.17/eagletui-launch-081115.log) is the ``server.log`` of a launch
eagletui started at 08:11:15 (its run id); the first timestamped line is 08:11:33 (18 s of
``import sglang``), the KV pool's only lines are printed when allocation ends (main: kv_cache 0.0 s,
while SGLang's own ``Engine startup timings`` line says ``kv_cache_allocation=1.54``), and dist init
ends two seconds before the weights load begins. On main the 18 s and the 2 s fell into no phase.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

from eagletui.commands.parse import parse_path
from eagletui.core.events import LaunchStarted
from eagletui.core.logs.formats.sglang.lines import parse_startup_timings
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.core.runs.book import RunBook
from eagletui.core.state.screen import SessionState
from eagletui.session.export import build_report
from eagletui.session.export_render import render_csv, render_json, render_markdown
from eagletui.ui.widgets.phases import startup_note

LOG = Path(__file__).resolve().parent / "fixtures" / "real-0.5.17" / "eagletui-launch-081115.log"


def test_parse_times_the_kv_pool_and_names_the_gaps() -> None:
    d = parse_path(str(LOG))
    phases = {p["name"]: p for p in d["phases"]}
    # the pool's lines come when allocation is over: its clock and its start start where the weights
    # were loaded (08:12:03; its duration never exceeds the span shown)
    assert phases["load_draft"]["end"] == "2026-12-01 08:12:03"
    assert phases["kv_cache"]["start"] == "2026-12-01 08:12:03"
    assert phases["kv_cache"]["end"] == "2026-12-01 08:12:05"
    assert phases["kv_cache"]["seconds"] == 2.0  # SGLang's timer: 1.54 of it allocating
    assert phases["capture_prefill"]["seconds"] == 30.0 and phases["capture_prefill"]["source"] == "log"
    st = d["startup"]
    assert st["gaps"] == [{"after": "dist_init", "before": "load_target", "seconds": 2.0}]
    assert st["in_no_phase"] == 2.0
    assert st["before_first_line"] is None  # not in a log file


def test_the_server_s_own_timer_wins_where_the_log_misses_time(tmp_path: Path) -> None:
    """A whole-second log's span is the true length ± 1 s: beyond that the server's own figure wins."""
    real = (
        Path(__file__).resolve().parent
        / "fixtures"
        / "real-0.5.17"
        / "eagle3-cudagraph-serve-profile-sigterm.log"
    )
    d = parse_path(str(real))
    fixed = {p["name"]: (p["seconds"], p["source"]) for p in d["phases"] if p["source"] == "server"}
    for name, (secs, _src) in fixed.items():
        assert name in ("kv_cache", "capture_prefill", "capture_target", "capture_draft") and secs > 0
    # a constructed variant of the fixture launch: a pool SGLang timed at 4.2 s (the log: 2 s)
    text = LOG.read_text().replace("kv_cache_allocation=1.54", "kv_cache_allocation=4.20")
    (tmp_path / "s.log").write_text(text)
    phases = {p["name"]: p for p in parse_path(str(tmp_path / "s.log"))["phases"]}
    assert (phases["kv_cache"]["seconds"], phases["kv_cache"]["source"]) == (4.2, "server")


def test_the_timings_line_of_every_version_that_prints_it() -> None:
    """0.5.17–0.5.23 print the same wording (entrypoints/engine.py _set_startup_time)."""
    line = (
        "Engine startup timings (s): load_weight=0.11, kv_cache_allocation=0.37, scheduler_e2e=10.15, "
        "cuda_graph={prefill=2.66, decode=0.00, target_verify=1.01, draft_prefill=1.28, draft_decode=0.92, "
        "draft_extend=0.85}, tokenizer_e2e=28.06"
    )
    d = parse_startup_timings(line)
    assert d["phase_seconds"] == {
        "kv_cache": 0.37,
        "capture_prefill": 2.66,
        "capture_target": 1.01,
        "capture_draft": 3.05,
    }
    assert d["timings"]["tokenizer_e2e"] == 28.06
    # a non-speculative server: only the decode graph
    plain = parse_startup_timings(
        "Engine startup timings (s): load_weight=3.00, kv_cache_allocation=0.50, "
        "scheduler_e2e=9.00, cuda_graph={decode=4.20}, tokenizer_e2e=12.00"
    )
    assert plain["phase_seconds"] == {"kv_cache": 0.5, "capture_target": 4.2}
    assert parse_startup_timings("Engine startup timings (s): garbage")["phase_seconds"] == {}


def _live_events() -> list:
    """The log's events as a live session sees them: eagletui started the process at 08:11:15 and read
    each line when it was written (the event clocks follow the log's timestamps)."""
    it = LogInterpreter()
    events = [*it.feed_bytes(LOG.read_bytes()), *it.flush()]
    st = it.state
    first = st.phases["launch"].start_ts
    assert first is not None
    t0_wall, t0_mono = 1_800_000_000.0, 1000.0
    start = LaunchStarted(
        launch=1,
        target="local",
        command=("python3", "-m", "sglang.launch_server"),
        wall=t0_wall,
        mono=t0_mono,
    )
    out = [start]
    clock = 18.0  # 08:11:15 → 08:11:33
    texts = {p.start_text: p.start_ts for p in st.phases.values()} | {
        p.end_text: p.end_ts for p in st.phases.values()
    }
    for e in events:
        t = getattr(e, "log_time", "") or getattr(e, "start_log_time", "")
        if t and texts.get(t) is not None:
            clock = 18.0 + texts[t] - first
        out.append(dataclasses.replace(e, wall=t0_wall + clock, mono=t0_mono + clock))
    return out


def test_the_live_session_accounts_for_every_second() -> None:
    events = _live_events()
    state, book = SessionState(), RunBook()
    for e in events:
        state.apply(e)
        book.apply(e)
    la = state.launches[1]
    assert la.before_first_line == 18.0
    assert la.phases["launch"].seconds == 46.0  # process start → dist init, not first line → dist init
    assert la.phases["kv_cache"].seconds == 2.0
    run = book.runs[1]
    assert run.before_first_line == 18.0 and run.phases["launch"] == 46.0 and run.phases["kv_cache"] == 2.0
    assert run.ready_after == 93.0  # 08:11:15 → 08:12:48
    accounted = sum(v for k, v in run.phases.items() if k != "ready") + (run.in_no_phase or 0.0)
    assert abs(accounted - run.ready_after) < 1.0  # every second is somewhere
    assert sum(p.seconds or 0.0 for p in la.phases.values()) + (run.in_no_phase or 0.0) == accounted
    note = startup_note(la)
    assert "18.0s before the first log line" in note
    assert "between phases (most: dist init → base weights)" in note


def test_exports_carry_the_accounting() -> None:
    report = build_report(_live_events())
    doc = json.loads(render_json(report))
    st = doc["runs"][0]["startup"]
    assert st["before_first_line_s"] == 18.0 and st["gaps"][0]["before"] == "load_target"
    assert st["in_no_phase_s"] == 2.0
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert rows[0]["before_first_line_s"] == "18.0" and rows[0]["kv_cache_s"] == "2.0"
    md = render_markdown(report)
    assert "| (before the first log line: imports) | 18" in md
    assert "| (between dist_init and load_target) | 2" in md
