"""bench_serving argv/parsers and the custom command runner, with injected line sources."""

from __future__ import annotations

import json
import sys

import pytest

from eagletui.bench.bench_serving import (
    build_argv,
    local_lines,
    parse_jsonl,
    parse_result_block,
    run_bench_serving,
    to_result,
    transport_lines,
)
from eagletui.bench.custom import run_custom
from eagletui.core.events import BenchmarkResult, BenchmarkSample, BenchmarkStarted
from eagletui.core.profile import BenchSettings

BLOCK = """\
/usr/lib/python3/dist-packages/sglang/bench_serving.py:1: FutureWarning: use sglang.benchmark.serving
Starting warmup with 1 sequences...
Warmup completed with 1 sequences. Starting main benchmark run...
100%|██████████| 64/64 [00:12<00:00,  5.12it/s]

============ Serving Benchmark Result ============
Backend:                                 sglang
Traffic request rate:                    inf
Max request concurrency:                 16
Successful requests:                     64
Benchmark duration (s):                  12.50
Total input tokens:                      65536
Total input text tokens:                 65536
Total generated tokens:                  32768
Total generated tokens (retokenized):    32700
Request throughput (req/s):              5.12
Input token throughput (tok/s):          5242.88
Output token throughput (tok/s):         2621.44
Peak output token throughput (tok/s):    3100.00
Peak concurrent requests:                16
Total token throughput (tok/s):          7864.32
Concurrency:                             15.80
Accept length:                           3.21
----------------End-to-End Latency----------------
Mean E2E Latency (ms):                   3086.10
Median E2E Latency (ms):                 3080.00
P90 E2E Latency (ms):                    3150.00
P95 E2E Latency (ms):                    3170.00
P99 E2E Latency (ms):                    3200.00
---------------Time to First Token----------------
Mean TTFT (ms):                          210.50
Median TTFT (ms):                        200.25
P90 TTFT (ms):                           300.00
P95 TTFT (ms):                           320.00
P99 TTFT (ms):                           350.75
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          5.60
Median TPOT (ms):                        5.50
P90 TPOT (ms):                           6.00
P95 TPOT (ms):                           6.20
P99 TPOT (ms):                           6.90
---------------Inter-Token Latency----------------
Mean ITL (ms):                           5.62
Median ITL (ms):                         4.10
P90 ITL (ms):                            12.00
P95 ITL (ms):                            14.00
P99 ITL (ms):                            18.30
Max ITL (ms):                            40.00
==================================================
"""

JSONL = json.dumps(
    {
        "tag": None,
        "backend": "sglang",
        "dataset_name": "random-ids",
        "max_concurrency": 16,
        "server_info": {"internal_states": [{"avg_spec_accept_length": 3.2134}]},
        "duration": 12.4987,
        "completed": 64,
        "total_output_tokens": 32768,
        "output_throughput": 2621.651,
        "mean_ttft_ms": 210.51,
        "median_ttft_ms": 200.249,
        "p90_ttft_ms": 300.0,
        "p99_ttft_ms": 350.749,
        "mean_itl_ms": 5.621,
        "median_itl_ms": 4.1,
        "p90_itl_ms": 12.0,
        "p99_itl_ms": 18.3,
        "accept_length": 3.2134,
    }
)


def test_argv_from_settings():
    s = BenchSettings(
        runner="bench_serving", num_prompts=64, concurrency=16, max_new_tokens=512, input_len=1024
    )
    argv = build_argv(s, port=31000, output_file="/tmp/o.jsonl", python="python3")
    assert argv[:3] == ["python3", "-m", "sglang.bench_serving"]
    pairs = dict(zip(argv[3::1], argv[4::1], strict=False))
    assert pairs["--dataset-name"] == "random-ids" and pairs["--random-range-ratio"] == "1.0"
    assert pairs["--random-input-len"] == "1024" and pairs["--random-output-len"] == "512"
    assert pairs["--num-prompts"] == "64" and pairs["--max-concurrency"] == "16"
    assert pairs["--port"] == "31000" and pairs["--host"] == "127.0.0.1"
    assert "--flush-cache" in argv and pairs["--output-file"] == "/tmp/o.jsonl"


def test_parse_printed_block():
    d = parse_result_block(BLOCK)
    assert d["completed"] == 64 and d["duration"] == 12.5 and d["total_output_tokens"] == 32768
    assert d["output_throughput"] == 2621.44 and d["accept_length"] == 3.21
    assert d["median_ttft_ms"] == 200.25 and d["p99_ttft_ms"] == 350.75 and d["mean_itl_ms"] == 5.62
    assert d["p99_itl_ms"] == 18.3 and d["mean_e2e_latency_ms"] == 3086.1 and d["max_concurrency"] == 16
    r = to_result(d, bench=1, launch=2, num_prompts=64)
    assert r.stats["ttft_ms"] == {"mean": 210.5, "median": 200.25, "p90": 300.0, "p99": 350.75}
    assert r.failed == 0 and r.requests == 64 and r.runner == "bench_serving"


def test_old_misspelling_and_no_accept():
    d = parse_result_block(
        BLOCK.replace("Max request", "Max reqeuest").replace(
            "Accept length:                           3.21\n", ""
        )
    )
    assert d["max_concurrency"] == 16 and "accept_length" not in d
    assert to_result(d, bench=1, launch=1).accept_length is None


def test_parse_jsonl_last_line():
    d = parse_jsonl('{"output_throughput": 1}\n' + JSONL + "\n")
    assert d["output_throughput"] == 2621.651 and d["completed"] == 64


async def test_run_bench_serving_with_injected_lines():
    calls = []

    async def fake_lines(argv):
        calls.append(argv)
        text = JSONL if argv[0] == "cat" else BLOCK
        for line in text.splitlines():
            yield line

    events = []
    s = BenchSettings(runner="bench_serving", num_prompts=64, concurrency=16)
    r = await run_bench_serving(
        s, port=31000, bench=3, launch=1, emit=events.append, run_lines=fake_lines, output_file="/x/o.jsonl"
    )
    assert calls[1] == ["cat", "/x/o.jsonl"]
    assert r.output_throughput == 2621.651 and r.accept_length == pytest.approx(3.2134)
    assert r.stats["itl_ms"]["median"] == 4.1 and r.requests == 64 and r.error == ""
    assert (
        isinstance(events[0], BenchmarkStarted) and events[0].workload_fingerprint == r.workload_fingerprint
    )
    assert events[-1] is r


async def test_run_bench_serving_missing_module_reports_error():
    async def failing(argv):
        yield "/usr/bin/python3: No module named sglang.bench_serving"

    r = await run_bench_serving(
        BenchSettings(), port=1, bench=1, launch=1, emit=lambda e: None, run_lines=failing
    )
    assert r.requests == 0 and "No module named" in r.error


async def test_custom_runner_regexes_local_process():
    script = "import sys; print('step 1 tok/s: 1,000.5'); print('accept 2.5'); print('final tok/s: 2345.5')"
    s = BenchSettings(
        runner="command",
        command=f'{sys.executable} -c "{script}"',
        tok_s_regex=r"tok/s:\s*([\d,.]+)",
        accept_len_regex=r"accept ([\d.]+)",
    )
    events = []
    r = await run_custom(s, bench=1, launch=1, emit=events.append)
    assert r.output_throughput == 2345.5 and r.accept_length == 2.5 and r.error == ""
    ticks = [e for e in events if isinstance(e, BenchmarkSample)]
    assert [t.tok_s for t in ticks] == [1000.5, 2345.5]
    assert isinstance(events[-1], BenchmarkResult)


async def test_custom_runner_no_match_and_missing_program():
    s = BenchSettings(runner="command", command="/nonexistent/bench --x", tok_s_regex=r"tok/s: (\d+)")
    r = await run_custom(s, bench=1, launch=1, emit=lambda e: None)
    assert r.failed == 1 and "matched nothing" in r.error and "cannot run" in r.error


async def test_transport_lines_adapter():
    class FakeTransport:
        async def stream(self, argv):
            yield b"a\nb"
            yield b"c\r\nd"

    assert [x async for x in transport_lines(FakeTransport())(["x"])] == ["a", "bc", "d"]


async def test_local_lines_runs_without_shell():
    out = [x async for x in local_lines([sys.executable, "-c", "import sys; print(sys.argv[1])", "a;b $(x)"])]
    assert out == ["a;b $(x)"]
