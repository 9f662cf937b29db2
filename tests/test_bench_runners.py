"""bench_serving argv/parsers and the custom command runner, with injected line sources."""

from __future__ import annotations

import asyncio
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
from eagletui.core.profile.model import BenchSettings

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
    assert argv[:3] == ["python3", "-m", "sglang.benchmark.serving"]
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
        if argv[1:2] == ["-c"]:  # the real probe, run for real
            async for line in local_lines([sys.executable, *argv[1:]]):
                yield line
            return
        text = JSONL if argv[0] == "cat" else BLOCK
        for line in text.splitlines():
            yield line

    events = []
    s = BenchSettings(runner="bench_serving", num_prompts=64, concurrency=16)
    r = await run_bench_serving(
        s, port=31000, bench=3, launch=1, emit=events.append, run_lines=fake_lines, output_file="/x/o.jsonl"
    )
    assert calls[2] == ["cat", "/x/o.jsonl"] and len(calls) == 3  # a given file is the caller's to keep
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


async def test_local_lines_reads_a_progress_bar_that_never_prints_a_newline():
    # tqdm redraws with "\r" only: 200 KiB of it before the first newline (a few minutes of a long
    # benchmark) once overran asyncio's 64 KiB line limit and ended the benchmark with a ValueError
    code = (
        "import sys\n"
        "for i in range(2000): sys.stdout.write(f'\\r{i:5d}/2000 ' + '#' * 90)\n"
        "sys.stdout.write('\\r\\nResult: done\\n')\n"
    )
    out = [x async for x in local_lines([sys.executable, "-c", code])]
    assert out[0] == "" and out[1].startswith("    0/2000 ") and out[2000].startswith(" 1999/2000 ")
    assert out[-1] == "Result: done" and len(out) == 2002


async def test_local_lines_ends_a_child_that_ignores_sigterm_when_the_reader_stops():
    from eagletui.remote import hostproc

    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print(os.getpid(), flush=True)\n"
        "time.sleep(120)\n"
    )

    async def first_line() -> str:
        gen = local_lines([sys.executable, "-c", code], stop_wait_s=0.5)
        try:
            return await anext(gen)
        finally:
            await gen.aclose()

    async with asyncio.timeout(20):  # before: the reader waited for as long as the child lived
        pid = int(await first_line())
    verdict, fields = hostproc.read_stat(pid)
    assert verdict == hostproc.DEAD or fields[0] == "Z", (verdict, fields)


async def test_split_lines_holds_a_carriage_return_until_it_knows_it_is_not_half_of_crlf():
    from eagletui.bench.bench_serving import MAX_LINE_BYTES, split_lines

    async def chunks(*parts):
        for p in parts:
            yield p

    got = [x async for x in split_lines(chunks(b"a\r", b"\nb\r", b"c\r\r", b"d"))]
    assert got == ["a", "b", "c", "", "d"]
    big = b"x" * (MAX_LINE_BYTES + 10)
    got = [x async for x in split_lines(chunks(big[:1000], big[1000:], b"\nend"))]
    assert [len(x) for x in got] == [MAX_LINE_BYTES, 10, 3]


# A stand-in for sglang's benchmark module: its result block is printed with the exact format strings of
# sglang 0.5.23's benchmark/serving.py (widths {:<40} {:<10}, the "=" / "-" rulers), and its JSONL line has
# the same keys. ACCEPT decides whether the "Accept length" row exists (it does not when the server has
# not completed a 40-iteration decode window, and accept_length is then null in the JSONL).
FAKE_SERVING = r"""
import argparse, json, os, stat, sys
ACCEPT = __ACCEPT__
p = argparse.ArgumentParser()
p.add_argument("--output-file")
p.add_argument("--num-prompts", type=int)
p.add_argument("--max-concurrency", type=int)
args, _ = p.parse_known_args()
d = os.path.dirname(args.output_file)
mod = __spec__.name if __spec__ is not None else "-c"
print("fake: module %s, result dir mode %o" % (mod, stat.S_IMODE(os.stat(d or "/").st_mode)))
print("Starting warmup with 1 sequences...")
print("Warmup completed with 1 sequences. Starting main benchmark run...")
print("\n{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
print("{:<40} {:<10}".format("Backend:", "sglang"))
print("{:<40} {:<10}".format("Traffic request rate:", float("inf")))
print("{:<40} {:<10}".format("Max request concurrency:", args.max_concurrency))
print("{:<40} {:<10}".format("Successful requests:", args.num_prompts))
print("{:<40} {:<10.2f}".format("Benchmark duration (s):", 12.4987))
print("{:<40} {:<10}".format("Total input tokens:", 65536))
print("{:<40} {:<10}".format("Total input text tokens:", 65536))
print("{:<40} {:<10}".format("Total generated tokens:", 32768))
print("{:<40} {:<10}".format("Total generated tokens (retokenized):", 32700))
print("{:<40} {:<10.2f}".format("Request throughput (req/s):", 5.12))
print("{:<40} {:<10.2f}".format("Input token throughput (tok/s):", 5243.0))
print("{:<40} {:<10.2f}".format("Output token throughput (tok/s):", 2621.651))
print("{:<40} {:<10.2f}".format("Peak output token throughput (tok/s):", 3100.0))
print("{:<40} {:<10}".format("Peak concurrent requests:", 16))
print("{:<40} {:<10.2f}".format("Total token throughput (tok/s):", 7864.3))
print("{:<40} {:<10.2f}".format("Concurrency:", 15.8))
if ACCEPT:
    print("{:<40} {:<10.2f}".format("Accept length:", ACCEPT))
print("{s:{c}^{n}}".format(s="End-to-End Latency", n=50, c="-"))
print("{:<40} {:<10.2f}".format("Mean E2E Latency (ms):", 3086.1))
print("{:<40} {:<10.2f}".format("Median E2E Latency (ms):", 3080.0))
print("{s:{c}^{n}}".format(s="Time to First Token", n=50, c="-"))
print("{:<40} {:<10.2f}".format("Mean TTFT (ms):", 210.51))
print("{:<40} {:<10.2f}".format("Median TTFT (ms):", 200.249))
print("{:<40} {:<10.2f}".format("P99 TTFT (ms):", 350.749))
print("{s:{c}^{n}}".format(s="Inter-Token Latency", n=50, c="-"))
print("{:<40} {:<10.2f}".format("Mean ITL (ms):", 5.621))
print("{:<40} {:<10.2f}".format("Median ITL (ms):", 4.1))
print("=" * 50)
result = {"tag": None, "backend": "sglang", "dataset_name": "random-ids", "request_rate": float("inf"),
          "max_concurrency": args.max_concurrency, "server_info": None, "duration": 12.4987,
          "completed": args.num_prompts, "total_output_tokens": 32768, "output_throughput": 2621.651,
          "mean_ttft_ms": 210.51, "median_ttft_ms": 200.249, "p99_ttft_ms": 350.749,
          "mean_itl_ms": 5.621, "median_itl_ms": 4.1, "accept_length": ACCEPT}
with open(args.output_file, "a") as f:
    f.write(json.dumps(result) + "\n")
"""


def _fake_sglang(root, *, new: bool, accept: float | None):
    pkg = root / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "raise ImportError('importing sglang needs torch: the probe must not')\n"
    )
    body = FAKE_SERVING.replace("__ACCEPT__", repr(accept))
    if new:
        (pkg / "benchmark").mkdir()
        (pkg / "benchmark" / "__init__.py").write_text("")
        (pkg / "benchmark" / "serving.py").write_text(body)
    else:
        (pkg / "bench_serving.py").write_text(body)


@pytest.mark.parametrize(
    ("new", "module"), [(True, "sglang.benchmark.serving"), (False, "sglang.bench_serving")]
)
async def test_real_process_picks_the_module_and_a_private_result_dir(tmp_path, monkeypatch, new, module):
    import os
    import tempfile

    fake = tmp_path / "site"
    _fake_sglang(fake, new=new, accept=None)
    # The fake package's __init__ refuses to import: the real one pulls in torch. `python -m` of a
    # submodule imports the parents, so for this test the runner gets a package it can import.
    (fake / "sglang" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(fake))
    seen: list[str] = []

    async def lines(argv):
        async for line in local_lines(argv):
            seen.append(line)
            yield line

    events = []
    s = BenchSettings(runner="bench_serving", num_prompts=8, concurrency=4)
    r = await run_bench_serving(
        s, port=1, bench=1, launch=1, emit=events.append, run_lines=lines, python=sys.executable
    )
    argv = events[0].workload["argv"]
    assert argv[:3] == [sys.executable, "-m", module]
    out = argv[argv.index("--output-file") + 1]
    parent = os.path.dirname(out)
    assert (
        parent.startswith(os.path.join(tempfile.gettempdir(), "eagletui-bench-"))
        and len(parent) > len(os.path.join(tempfile.gettempdir(), "eagletui-bench-")) + 4
    )
    assert f"fake: module {module}, result dir mode 700" in seen
    assert not os.path.exists(parent)  # removed once read
    # no "Accept length" row and accept_length null: unknown, not 0, and not an error
    assert r.error == "" and r.accept_length is None
    assert r.output_throughput == 2621.651 and r.requests == 8 and r.failed == 0
    assert r.stats["ttft_ms"]["median"] == 200.249


async def test_probe_does_not_import_sglang(tmp_path, monkeypatch):
    from eagletui.bench.bench_serving import PROBE, parse_probe

    fake = tmp_path / "site"
    _fake_sglang(fake, new=True, accept=3.2)  # its __init__ raises if imported
    monkeypatch.setenv("PYTHONPATH", str(fake))
    out = [x async for x in local_lines([sys.executable, "-c", PROBE, str(tmp_path / "given.jsonl")])]
    probe = parse_probe(out)
    assert probe == {
        "module": "sglang.benchmark.serving",
        "output_file": str(tmp_path / "given.jsonl"),
        "made_dir": "",
    }
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "empty"))
    out = [x async for x in local_lines([sys.executable, "-c", PROBE, ""])]
    probe = parse_probe(out)
    assert probe is not None and probe["module"] == "sglang.bench_serving"
    import os
    import shutil

    assert oct(os.stat(probe["made_dir"]).st_mode & 0o777) == "0o700"
    shutil.rmtree(probe["made_dir"])


async def test_real_process_with_accept_length_row(tmp_path, monkeypatch):
    fake = tmp_path / "site"
    _fake_sglang(fake, new=True, accept=3.2134)
    (fake / "sglang" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(fake))
    s = BenchSettings(runner="bench_serving", num_prompts=8, concurrency=4)
    r = await run_bench_serving(s, port=1, bench=1, launch=1, emit=lambda e: None, python=sys.executable)
    assert r.accept_length == pytest.approx(3.2134) and r.error == ""


def test_printed_block_of_the_real_format_without_accept_row():
    import subprocess

    body = FAKE_SERVING.replace("__ACCEPT__", "None")
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            body,
            "--output-file",
            "/dev/null",
            "--num-prompts",
            "8",
            "--max-concurrency",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    d = parse_result_block(res.stdout)
    assert d["completed"] == 8 and d["max_concurrency"] == 4 and d["output_throughput"] == 2621.65
    assert "accept_length" not in d and to_result(d, bench=1, launch=1).accept_length is None
