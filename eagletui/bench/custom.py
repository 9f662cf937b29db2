"""Custom benchmark runner: the user's own command, numbers pulled out of its output by regex.

Teams often already have a benchmark script; rather than asking them to port it, eagletui runs it
(``bench.command``, split into argv, never through a shell) and applies ``tok_s_regex`` /
``accept_len_regex`` to every output line. The last match wins (scripts usually print a summary at the
end), and every tok/s match is also emitted as a live tick so the chart moves while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import re
import shlex
import time
from collections.abc import AsyncIterator, Callable

from eagletui.bench.bench_serving import RunLines, local_lines
from eagletui.core.events import BenchmarkResult, BenchmarkSample, BenchmarkStarted, Event
from eagletui.core.profile.model import BenchSettings

#: A custom command is bounded like the built-in client: by ``bench.timeout_s`` end to end (this when
#: the profile's value is unusable), and each output line is cut to MAX_LINE before any regex sees it.
#: a command's bound when ``bench.timeout_s`` is not a usable number: the profile's default
DEFAULT_TIMEOUT_S = BenchSettings().timeout_s
MAX_LINE = 64 * 1024


def _number(m: re.Match[str]) -> float | None:
    """Group 1 if the regex has a group (the usual ``tok/s:\\s*([\\d.]+)``), else the whole match."""
    text = m.group(1) if m.re.groups else m.group(0)
    try:
        return float(text.replace(",", ""))
    except (TypeError, ValueError):
        return None


async def run_custom(
    settings: BenchSettings,
    *,
    bench: int,
    launch: int,
    emit: Callable[[Event], None],
    run_lines: RunLines = local_lines,
) -> BenchmarkResult:
    fp = hashlib.sha256(("command\x00" + settings.command).encode()).hexdigest()
    emit(
        BenchmarkStarted(
            bench=bench,
            launch=launch,
            runner="command",
            workload={"command": settings.command},
            workload_fingerprint=fp,
        )
    )
    argv, error = _command(settings)
    if error:
        result = BenchmarkResult(
            bench=bench, launch=launch, runner="command", workload_fingerprint=fp, error=error
        )
        emit(result)
        return result
    tok_re = re.compile(settings.tok_s_regex)
    acc_re = re.compile(settings.accept_len_regex) if settings.accept_len_regex else None
    t0 = time.monotonic()

    def tick(v: float, accept: float | None) -> None:
        emit(
            BenchmarkSample(
                bench=bench,
                launch=launch,
                scope="tick",
                t=time.monotonic() - t0,
                tok_s=v,
                accept_len=accept,
            )
        )

    tok_s, accept, tail, error = await _read_numbers(
        run_lines(argv), tok_re, acc_re, settings.timeout_s, tick
    )
    duration = time.monotonic() - t0
    if tok_s is None and not error:
        error = "tok_s_regex matched nothing" + (": " + " | ".join(tail) if tail else "")
    if tok_s is not None and not (math.isfinite(tok_s) and tok_s > 0):
        # NaN or zero throughput: the benchmark measured nothing, which is a failure, not a result
        error = error or f"the command reported {tok_s} tok/s: nothing was measured"
        tok_s = None
    result = BenchmarkResult(
        bench=bench,
        launch=launch,
        runner="command",
        output_throughput=tok_s or 0.0,
        accept_length=accept,
        requests=1 if tok_s is not None else 0,
        failed=0 if tok_s is not None else 1,
        duration_s=duration,
        workload_fingerprint=fp,
        error=error,
    )
    emit(result)
    return result


def _command(settings: BenchSettings) -> tuple[list[str], str]:
    """``bench.command`` split into argv, and why it cannot run ("" when it can)."""
    try:
        argv = shlex.split(settings.command)
    except ValueError as exc:
        argv = []
        error = f"bench.command: {exc}"
    else:
        error = "" if argv else "bench.command is empty"
    if not settings.tok_s_regex and not error:
        error = "bench.tok_s_regex is not set: nothing to measure"
    return argv, error


async def _read_numbers(
    lines: AsyncIterator[str],
    tok_re: re.Pattern[str],
    acc_re: re.Pattern[str] | None,
    limit: float,
    tick: Callable[[float, float | None], None],
) -> tuple[float | None, float | None, list[str], str]:
    """Apply the regexes to every output line until the command ends or ``limit`` (``bench.timeout_s``)
    runs out (the command is then stopped): the last tok/s and accept length matched (each tok/s also
    a ``tick``), the last non-blank lines, and the error ("" when it ended by itself)."""
    tok_s: float | None = None
    accept: float | None = None
    tail: list[str] = []
    error = ""
    if not (isinstance(limit, int | float) and math.isfinite(limit) and limit > 0):
        limit = DEFAULT_TIMEOUT_S
    try:
        async with asyncio.timeout(limit):
            async for line in lines:
                if len(line) > MAX_LINE:  # the regexes run on every line: a 1 GB line must not reach them
                    line = line[:MAX_LINE]
                tail = (tail + [line[:500]])[-5:] if line.strip() else tail
                m = tok_re.search(line)
                if m is not None and (v := _number(m)) is not None:
                    tok_s = v
                    tick(v, accept)
                if acc_re is not None:
                    m = acc_re.search(line)
                    if m is not None and (v := _number(m)) is not None:
                        accept = v
    except TimeoutError:
        error = f"bench.command did not finish within {limit:g}s (bench.timeout_s)"
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    finally:
        aclose = getattr(lines, "aclose", None)  # stops the command now, not when the GC gets to it
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
    return tok_s, accept, tail, error
