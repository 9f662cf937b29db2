"""Run sglang's own serving benchmark from a profile and turn its output into a BenchmarkResult.

Some users trust only sglang's own benchmark, so eagletui can drive it: fixed-length ``random-ids``
prompts (no dataset download), ``--flush-cache`` so the reported accept length belongs to this run, and
``--output-file`` so numbers come from the JSONL (exact) rather than the printed table (rounded). The
printed block is still parsed as a fallback, e.g. when the file cannot be read back over SSH.

The module is ``sglang.benchmark.serving`` from 0.5.16 on; ``sglang.bench_serving`` is a deprecated shim
there (a FutureWarning on every run) and the only name before. A small probe on the host picks the one
that exists without importing sglang (which would pull in torch), and makes the private directory the
result file goes to: a fixed ``/tmp`` name could be read, pre-created or swapped by another user.
The "Accept length" row (and ``accept_length`` in the JSONL) is absent or null when the server has not
completed a 40-iteration decode window or runs without speculative decoding: that is "unknown", not 0.

Commands run through an injected line source (``run_lines(argv)`` → async iterator of text lines), so the
same code works locally (asyncio subprocess) and on a remote host (``Transport.stream``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from eagletui.core.events import BenchmarkResult, BenchmarkSample, BenchmarkStarted, Event
from eagletui.core.profile.model import BenchSettings
from eagletui.core.timings import REAL

RunLines = Callable[[list[str]], AsyncIterator[str]]

_ROW_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 /()._-]*?):\s+([-+0-9.eE]+|inf|nan)\s*$")
_LATENCY_NAMES = {"ttft": "ttft_ms", "itl": "itl_ms", "tpot": "tpot_ms", "e2e latency": "e2e_latency_ms"}


def build_argv(
    settings: BenchSettings,
    *,
    port: int,
    output_file: str,
    python: str = "python3",
    host: str = "127.0.0.1",
    module: str = "sglang.benchmark.serving",
) -> list[str]:
    """The bench_serving argv for the profile's [bench] (always a list: never a shell string)."""
    return [
        python,
        "-m",
        module,
        "--backend",
        "sglang",
        "--dataset-name",
        "random-ids",
        "--random-input-len",
        str(settings.input_len),
        "--random-output-len",
        str(settings.max_new_tokens),
        "--random-range-ratio",
        "1.0",
        "--num-prompts",
        str(settings.num_prompts),
        "--max-concurrency",
        str(settings.concurrency),
        "--warmup-requests",
        str(max(1, settings.warmup)),
        "--seed",
        str(settings.seed),
        *(["--request-rate", f"{settings.request_rate:g}"] if settings.request_rate > 0 else []),
        "--flush-cache",
        "--output-file",
        output_file,
        "--host",
        host,
        "--port",
        str(port),
    ]


def workload_fingerprint(settings: BenchSettings) -> str:
    """bench_serving generates its prompts from the seed, so the settings identify the workload."""
    key = {
        "runner": "bench_serving",
        "input_len": settings.input_len,
        "output_len": settings.max_new_tokens,
        "num_prompts": settings.num_prompts,
        "concurrency": settings.concurrency,
        "seed": settings.seed,
        **({"request_rate": settings.request_rate} if settings.request_rate > 0 else {}),
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def parse_result_block(text: str) -> dict[str, Any]:
    """The printed ``Serving Benchmark Result`` block → JSONL-style keys (``output_throughput`` …)."""
    out: dict[str, Any] = {}
    in_block = False
    for line in text.splitlines():
        if "Serving Benchmark Result" in line:
            in_block = True
            out = {}
            continue
        if not in_block:
            continue
        if line.startswith("=" * 10) and "Result" not in line:
            in_block = False
            continue
        m = _ROW_RE.match(line)
        if not m:
            continue
        label, raw = m.group(1).strip(), m.group(2)
        try:
            value = float(raw)
        except ValueError:
            continue
        low = label.lower()
        if low == "successful requests":
            out["completed"] = int(value)
        elif low.startswith("benchmark duration"):
            out["duration"] = value
        elif low.startswith("total generated tokens") and "retokenized" not in low:
            out["total_output_tokens"] = int(value)
        elif low.startswith("output token throughput"):
            out["output_throughput"] = value
        elif low == "accept length":
            out["accept_length"] = value
        elif low.startswith(("max request concurrency", "max reqeuest concurrency")):
            out["max_concurrency"] = int(value)
        else:
            lm = re.match(r"^(mean|median|std|p90|p95|p99|max) (.+?) \(ms\)$", low)
            if lm and lm.group(2) in _LATENCY_NAMES:
                out[f"{lm.group(1)}_{lm.group(2).replace(' ', '_')}_ms"] = value
    return out


def parse_jsonl(text: str) -> dict[str, Any]:
    """The last JSON object line of an ``--output-file`` (bench_serving appends one line per run)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return {}


def to_result(
    data: dict[str, Any],
    *,
    bench: int,
    launch: int,
    fingerprint: str = "",
    num_prompts: int = 0,
    error: str = "",
) -> BenchmarkResult:
    stats: dict[str, Any] = {}
    for name in ("ttft", "itl", "tpot", "e2e_latency"):
        block = {k: data.get(f"{k}_{name}_ms") for k in ("mean", "median", "p90", "p99")}
        block = {k: float(v) for k, v in block.items() if isinstance(v, int | float)}
        if block:
            stats[f"{name}_ms"] = block
    accept = data.get("accept_length")
    accept = float(accept) if isinstance(accept, int | float) and accept > 0 else None
    completed = int(data.get("completed", 0) or 0)
    failed = max(0, num_prompts - completed) if num_prompts and data else 0
    if not data and not error:
        error = "no bench_serving result found in its output"
    return BenchmarkResult(
        bench=bench,
        launch=launch,
        runner="bench_serving",
        output_throughput=float(data.get("output_throughput", 0.0) or 0.0),
        accept_length=accept,
        requests=completed,
        failed=failed,
        duration_s=float(data.get("duration", 0.0) or 0.0),
        stats=stats,
        workload_fingerprint=fingerprint,
        error=error,
    )


async def local_lines(argv: list[str], *, stop_wait_s: float = REAL.link.kill_wait_s) -> AsyncIterator[str]:
    """Run ``argv`` locally (no shell), yielding merged stdout/stderr lines (a progress bar's ``\r``
    updates each a line, as they come); a missing program is a line. A reader that stops early ends
    the process: SIGTERM, then SIGKILL after ``stop_wait_s``, each waited at most that long (a
    benchmark client that ignores SIGTERM never holds the caller)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
        )
    except OSError as exc:
        yield f"eagletui: cannot run {argv[0]!r}: {exc.strerror}"
        return
    out = proc.stdout
    assert out is not None

    async def chunks() -> AsyncGenerator[bytes, None]:
        while chunk := await out.read(65536):
            yield chunk

    try:
        async with contextlib.aclosing(split_lines(chunks())) as lines:
            async for line in lines:
                yield line
        await proc.wait()
    finally:
        if proc.returncode is None:
            for sig in (proc.terminate, proc.kill):
                with contextlib.suppress(ProcessLookupError):
                    sig()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(stop_wait_s):
                        await asyncio.shield(proc.wait())
                if proc.returncode is not None:
                    break


#: a "line" that has gone this long without a newline or carriage return is handed on cut
MAX_LINE_BYTES = 1024 * 1024
_EOL = re.compile(rb"\r\n|\r|\n")


async def split_lines(chunks: AsyncIterator[bytes]) -> AsyncGenerator[str, None]:
    """Bytes as they arrive, as text lines: ``\n``, ``\r\n`` and a lone ``\r`` (a progress bar
    redrawing itself: tqdm writes nothing else for minutes) each end one; a run of more than
    :data:`MAX_LINE_BYTES` without either is cut, so the buffer never grows without bound."""
    buf = b""
    async for chunk in chunks:
        buf += chunk
        parts = _EOL.split(buf)
        buf = parts.pop()
        if not buf and parts and chunk.endswith(b"\r"):
            buf = parts.pop() + b"\r"  # perhaps the first half of a \r\n: wait for the next byte
        for part in parts:
            yield part.decode("utf-8", "replace")
        while len(buf) > MAX_LINE_BYTES:
            yield buf[:MAX_LINE_BYTES].decode("utf-8", "replace")
            buf = buf[MAX_LINE_BYTES:]
    if buf:
        yield buf.rstrip(b"\r").decode("utf-8", "replace")


def transport_lines(transport: Any) -> RunLines:
    """Adapt a remote ``Transport.stream(argv)`` (bytes chunks) to the line-source interface."""

    async def run(argv: list[str]) -> AsyncIterator[str]:
        async with contextlib.aclosing(transport.stream(argv)) as stream:
            async with contextlib.aclosing(split_lines(stream)) as lines:
                async for line in lines:
                    yield line

    return run


NEW_MODULE = "sglang.benchmark.serving"
OLD_MODULE = "sglang.bench_serving"
_PROBE_MARK = "eagletui-bench: "

# Runs on the host with the profile's python. argv[1]: the result file to use, or "" for a fresh private
# directory (mkdtemp: mode 0700, unguessable name). Finds sglang without importing it.
PROBE = r"""
import importlib.util, json, os, sys, tempfile
def has_new():
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):
        return False
    for loc in (spec.submodule_search_locations or []) if spec else []:
        b = os.path.join(loc, "benchmark")
        if os.path.isfile(os.path.join(b, "serving.py")) or os.path.isfile(os.path.join(b, "serving", "__init__.py")):
            return True
    return False
out = sys.argv[1] if len(sys.argv) > 1 else ""
made = ""
if not out:
    made = tempfile.mkdtemp(prefix="eagletui-bench-")
    out = os.path.join(made, "result.jsonl")
mod = "sglang.benchmark.serving" if has_new() else "sglang.bench_serving"
print("eagletui-bench: " + json.dumps({"module": mod, "output_file": out, "made_dir": made}))
"""


def parse_probe(lines: list[str]) -> dict[str, str] | None:
    """The probe's answer: ``module``, ``output_file``, ``made_dir`` (empty when the caller chose the file)."""
    for line in reversed(lines):
        if line.startswith(_PROBE_MARK):
            try:
                data = json.loads(line[len(_PROBE_MARK) :])
            except ValueError:
                return None
            if (
                isinstance(data, dict)
                and data.get("module") in (NEW_MODULE, OLD_MODULE)
                and isinstance(data.get("output_file"), str)
                and data["output_file"]
                and isinstance(data.get("made_dir", ""), str)
            ):
                return {k: str(data.get(k) or "") for k in ("module", "output_file", "made_dir")}
    return None


async def _collect(run_lines: RunLines, argv: list[str]) -> list[str]:
    lines: list[str] = []
    try:
        async for line in run_lines(argv):
            lines.append(line)
    except Exception as exc:
        lines.append(f"eagletui: {type(exc).__name__}: {exc}")
    return lines


async def run_bench_serving(
    settings: BenchSettings,
    *,
    port: int,
    bench: int,
    launch: int,
    emit: Callable[[Event], None],
    run_lines: RunLines = local_lines,
    output_file: str | None = None,
    python: str = "python3",
    host: str = "127.0.0.1",
) -> BenchmarkResult:
    """Run it on the host through ``run_lines``. ``output_file`` None: a private directory made by the
    probe holds the result file, and is removed afterwards."""
    probe_lines = await _collect(run_lines, [python, "-c", PROBE, output_file or ""])
    probe = parse_probe(probe_lines)
    fp = workload_fingerprint(settings)
    if probe is None:
        tail = [line for line in probe_lines if line.strip()][-3:]
        result = to_result(
            {},
            bench=bench,
            launch=launch,
            fingerprint=fp,
            num_prompts=settings.num_prompts,
            error=f"cannot prepare bench_serving with {python} on the host"
            + (": " + " | ".join(tail) if tail else ""),
        )
        emit(result)
        return result
    output_file = probe["output_file"]
    argv = build_argv(
        settings, port=port, output_file=output_file, python=python, host=host, module=probe["module"]
    )
    emit(
        BenchmarkStarted(
            bench=bench,
            launch=launch,
            runner="bench_serving",
            workload={
                "input_len": settings.input_len,
                "max_new_tokens": settings.max_new_tokens,
                "num_prompts": settings.num_prompts,
                "concurrency": settings.concurrency,
                "seed": settings.seed,
                "argv": argv,
            },
            workload_fingerprint=fp,
        )
    )
    lines = await _collect(run_lines, argv)
    merged = await _read_result(run_lines, lines, output_file, probe["made_dir"])
    error = ""
    if not merged:
        tail = [line for line in lines if line.strip()][-3:]
        error = "bench_serving produced no result" + (": " + " | ".join(tail) if tail else "")
    result = to_result(
        merged, bench=bench, launch=launch, fingerprint=fp, num_prompts=settings.num_prompts, error=error
    )
    if merged:
        emit(
            BenchmarkSample(
                bench=bench,
                launch=launch,
                scope="tick",
                t=result.duration_s,
                tok_s=result.output_throughput,
                accept_len=result.accept_length,
            )
        )
    emit(result)
    return result


async def _read_result(run_lines: RunLines, lines: list[str], output_file: str, made: str) -> dict[str, Any]:
    """What the run measured: its printed result block, overlaid by its line of the result file (read,
    then the probe's private dir removed); {} when neither says anything."""
    printed = parse_result_block("\n".join(lines))
    data: dict[str, Any] = {}
    try:
        file_lines = [line async for line in run_lines(["cat", output_file])]
        data = parse_jsonl("\n".join(file_lines))
    except Exception:
        data = {}
    if made.startswith("/") and made.rstrip("/").rsplit("/", 1)[-1].startswith("eagletui-bench-"):
        await _collect(run_lines, ["rm", "-rf", "--", made])
    if data and printed and data.get("completed") != printed.get("completed"):
        data = {}  # a stale line from an earlier run in the same file
    return {**printed, **data}
