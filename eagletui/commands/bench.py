"""``eagletui bench TARGET --profile FILE [--launch] [--repeats N] [--json]``: headless benchmarking.

For scripts and CI: launch (optionally) the profile's server on TARGET, wait until it serves, run the
profile's benchmark N times, print one result (JSON with ``--json``) and stop what we started, also on
Ctrl-C or failure. Uses the remote package (ServerControl over a Transport) when it is available and
falls back to a plain local subprocess otherwise, so this command works on a bare checkout too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from eagletui.bench.bench_serving import RunLines, local_lines, run_bench_serving, transport_lines
from eagletui.bench.client import run_builtin
from eagletui.bench.custom import run_custom
from eagletui.bench.stats import mean_stdev
from eagletui.commands._ssh import add_ssh_options, ssh_options
from eagletui.core.events import BenchmarkResult, Event
from eagletui.core.profile import Profile, ProfileError, load_profile
from eagletui.core.redact import Redactor
from eagletui.core.textsafe import inert, inert_lines

EXIT_OK, EXIT_BENCH_FAILED, EXIT_USAGE, EXIT_LAUNCH_FAILED = 0, 1, 2, 3


def _say(msg: str) -> None:
    # server log lines, HTTP bodies and exception texts pass through here: never raw to the terminal
    print(inert_lines(msg), file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------- launching


class _LocalProcess:
    """Fallback launcher when eagletui.remote is unavailable: own session, output to a log file."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        runs = Path(os.path.expanduser(profile.runs_dir))
        runs.mkdir(parents=True, exist_ok=True)
        self.log_path = str(runs / f"bench-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log")
        self.proc: subprocess.Popen[bytes] | None = None

    async def launch(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.profile.env}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.profile.argv(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=os.path.expanduser(self.profile.workdir),
                start_new_session=True,
            )

    async def is_alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    async def stop(self, grace: float = 15.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def log_tail(self, n: int = 20) -> str:
        with contextlib.suppress(OSError), open(self.log_path, "rb") as f:
            return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
        return ""


@dataclass
class _Server:
    """What we launched, behind one interface whichever launcher did it."""

    log_path: str
    control: Any = None
    run: Any = None
    local: _LocalProcess | None = None

    async def is_alive(self) -> bool:
        if self.local is not None:
            return await self.local.is_alive()
        try:
            return bool(await self.control.is_alive(self.run))
        except Exception:
            return True

    async def stop(self) -> None:
        if self.local is not None:
            await self.local.stop()
        else:
            await self.control.stop(self.run)

    async def log_tail(self, transport: Any, n: int = 20) -> str:
        if self.local is not None:
            return self.local.log_tail(n)
        with contextlib.suppress(Exception):
            res = await transport.run(["tail", "-n", str(n), self.log_path], timeout=15)
            return res.stdout
        return ""


async def _open_transport(target: str, **ssh: Any) -> Any | None:
    try:
        from eagletui.remote.transport import open_transport
    except ImportError:
        if target != "local":
            raise RuntimeError("SSH targets need eagletui.remote, which is not available") from None
        return None
    return await open_transport(target, **ssh)


async def _launch(profile: Profile, transport: Any | None) -> _Server:
    if transport is not None:
        try:
            from eagletui.remote.control import ServerControl
        except ImportError:
            ServerControl = None
        if ServerControl is not None:
            control = ServerControl(transport, profile.runs_dir, python=profile.python)
            run = await control.launch(profile, launch=1)
            return _Server(log_path=run.log_path, control=control, run=run)
        if transport.target != "local":
            raise RuntimeError("launching on SSH targets needs eagletui.remote.control")
    local = _LocalProcess(profile)
    await local.launch()
    return _Server(log_path=local.log_path, local=local)


async def _follow_log(server: _Server, transport: Any | None) -> None:
    """Print phase progress from the server log to stderr while we wait for readiness."""
    try:
        from eagletui.core import events as ev
        from eagletui.core.log_interpreter import LogInterpreter
    except ImportError:
        return
    interp = LogInterpreter(launch=1, emit_lines=False)
    last_progress = 0.0

    def show(events: list[Event]) -> None:
        nonlocal last_progress
        for e in events:
            if isinstance(e, ev.PhaseStarted):
                _say(f"  phase {e.phase} …")
            elif isinstance(e, ev.PhaseFinished) and e.seconds is not None:
                _say(f"  phase {e.phase} done in {e.seconds:.1f}s")
            elif isinstance(e, ev.PhaseProgress) and e.total and time.monotonic() - last_progress > 2:
                last_progress = time.monotonic()
                _say(f"  {e.phase}: {e.done}/{e.total} {e.unit} {e.label}".rstrip())
            elif isinstance(e, ev.ServerFailed):
                _say(f"  server failed ({e.kind}): {e.message}" + (f"\n  hint: {e.hint}" if e.hint else ""))

    argv = ["tail", "-c", "+1", "-F", server.log_path]
    if transport is None:
        from eagletui.remote.local import LocalTransport

        transport = LocalTransport()
    # aclosing: the tail is stopped (and its pipes closed) when this task is cancelled, not by the GC
    async with contextlib.aclosing(transport.stream(argv)) as stream:
        async for chunk in stream:
            show(interp.feed_bytes(chunk))


async def wait_ready(base_url: str, timeout: float, alive: Any = None) -> str:
    """Poll /health (then /health_generate) until 200. Returns "" when ready, else the reason."""
    deadline = time.monotonic() + timeout
    last_alive_check = 0.0
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as s:
        while time.monotonic() < deadline:
            for path in ("/health", "/health_generate"):
                try:
                    async with s.get(base_url + path) as r:
                        if r.status == 200:
                            return ""
                        if r.status != 404:
                            break
                except (aiohttp.ClientError, TimeoutError):
                    break
            if alive is not None and time.monotonic() - last_alive_check > 2:
                last_alive_check = time.monotonic()
                if not await alive():
                    return "the server process exited before it was ready"
            await asyncio.sleep(0.5)
    return f"not ready after {timeout:.0f}s"


# ------------------------------------------------------------------------------------ benchmarking


def _stderr_emit(event: Event) -> None:
    from eagletui.core.events import BenchmarkSample

    if isinstance(event, BenchmarkSample) and event.scope == "tick" and event.tok_s is not None:
        acc = f", accept {event.accept_len:.2f}" if event.accept_len else ""
        _say(f"  t={event.t:5.1f}s {event.tok_s:9.1f} tok/s{acc}")


async def _bench_once(
    profile: Profile, url: str, bench: int, transport: Any | None, quiet: bool
) -> BenchmarkResult:
    settings = profile.bench
    emit = (lambda e: None) if quiet else _stderr_emit
    if settings.runner == "builtin":
        # A server launched with --api-key answers 401 to anything without it.
        return await run_builtin(url, settings, bench=bench, launch=1, emit=emit, api_key=profile.api_key())
    lines: RunLines = local_lines
    if transport is not None and transport.target != "local":
        stream_lines = transport_lines(transport)

        def lines(argv: list[str]) -> Any:  # stderr joins stdout: error messages matter here
            return stream_lines(["sh", "-c", 'exec "$@" 2>&1', "sh", *argv])

    if settings.runner == "bench_serving":
        # No output_file: the result goes to a private directory on the host (never a /tmp name).
        return await run_bench_serving(
            settings,
            port=profile.port,
            bench=bench,
            launch=1,
            emit=emit,
            run_lines=lines,
            python=profile.python,
            host=profile.host,
        )
    return await run_custom(settings, bench=bench, launch=1, emit=emit, run_lines=lines)


def _mean_stats(results: list[BenchmarkResult], metric: str) -> dict[str, float] | None:
    blocks = [r.stats[metric] for r in results if isinstance(r.stats.get(metric), dict)]
    if not blocks:
        return None
    return {k: sum(b[k] for b in blocks if k in b) / len(blocks) for k in blocks[0]}


def summarize_repeats(results: list[BenchmarkResult], profile: Profile, target: str) -> dict[str, Any]:
    good = [r for r in results if r.requests > 0]
    tok_m, tok_s, _ = mean_stdev([r.output_throughput for r in good])
    acc_m, acc_s, _ = mean_stdev([r.accept_length for r in good])
    ttft_m, ttft_s, _ = mean_stdev([(r.stats.get("ttft_ms") or {}).get("median") for r in good])
    fps = sorted({r.workload_fingerprint for r in results if r.workload_fingerprint})
    return {
        "target": target,
        "profile": profile.name,
        "runner": profile.bench.runner,
        "output_throughput": tok_m or 0.0,
        "accept_length": acc_m,
        "ttft_ms": _mean_stats(good, "ttft_ms"),
        "itl_ms": _mean_stats(good, "itl_ms"),
        "tok_s": _mean_stats(good, "tok_s"),
        "requests": sum(r.requests for r in results),
        "failed": sum(r.failed for r in results),
        "workload_fingerprint": fps[0] if len(fps) == 1 else fps,
        "config": profile.snapshot(),
        "repeats": {
            "n": len(results),
            "output_throughput": {"mean": tok_m, "stdev": tok_s},
            "accept_length": {"mean": acc_m, "stdev": acc_s},
            "ttft_ms_median": {"mean": ttft_m, "stdev": ttft_s},
            "runs": [
                {
                    "output_throughput": r.output_throughput,
                    "accept_length": r.accept_length,
                    "ttft_ms": r.stats.get("ttft_ms"),
                    "itl_ms": r.stats.get("itl_ms"),
                    "requests": r.requests,
                    "failed": r.failed,
                    "duration_s": r.duration_s,
                    "error": r.error,
                }
                for r in results
            ],
        },
        "error": "; ".join(sorted({r.error for r in results if r.error})),
    }


def _print_human(summary: dict[str, Any]) -> None:
    rep = summary["repeats"]
    tok = rep["output_throughput"]
    acc = rep["accept_length"]
    pm = f" ± {tok['stdev']:.1f}" if tok["stdev"] is not None else ""
    print(f"{summary['profile']} on {summary['target']} ({summary['runner']}, {rep['n']} run(s))")
    print(f"  output throughput  {summary['output_throughput']:.1f}{pm} tok/s")
    if acc["mean"] is not None:
        apm = f" ± {acc['stdev']:.2f}" if acc["stdev"] is not None else ""
        print(f"  accept length      {acc['mean']:.2f}{apm}")
    for key, label in (("ttft_ms", "TTFT"), ("itl_ms", "ITL")):
        s = summary.get(key)
        if s:
            print(f"  {label:<5} ms          mean {s['mean']:.1f}  p50 {s['median']:.1f}  p99 {s['p99']:.1f}")
    print(f"  requests {summary['requests']}  failed {summary['failed']}")
    if summary["error"]:
        print(f"  error: {inert(summary['error'])}")


async def _amain(ns: argparse.Namespace) -> int:
    try:
        profile = load_profile(ns.profile)
    except ProfileError as exc:
        _say(str(exc))
        return EXIT_USAGE
    target = ns.target or profile.target
    redactor = Redactor.for_profile(profile)
    repeats = ns.repeats or profile.bench.repeats
    try:
        transport = await _open_transport(target, **ssh_options(ns))
    except Exception as exc:
        _say(f"eagletui: cannot reach {target}: {exc}")
        return EXIT_LAUNCH_FAILED
    server: _Server | None = None
    follower: asyncio.Task[None] | None = None
    try:
        if ns.launch:
            try:
                server = await _launch(profile, transport)
            except Exception as exc:
                _say(f"eagletui: launch failed: {exc}")
                return EXIT_LAUNCH_FAILED
            _say(f"launched on {target}; log: {server.log_path}")
            follower = asyncio.create_task(_follow_log(server, transport))
        port = await transport.forward_port(profile.port) if transport is not None else profile.port
        url = f"http://127.0.0.1:{port}"
        if ns.launch:
            assert server is not None
            why = await wait_ready(url, profile.ready_timeout_s, server.is_alive)
            if why:
                _say(f"eagletui: server {why}")
                tail = redactor.text(await server.log_tail(transport))
                if tail:
                    _say("---- last log lines ----\n" + tail)
                return EXIT_LAUNCH_FAILED
            _say("server ready")
        if follower is not None:
            follower.cancel()
        results: list[BenchmarkResult] = []
        for i in range(repeats):
            r = await _bench_once(profile, url, i + 1, transport, quiet=ns.json)
            results.append(r)
            _say(
                f"repeat {i + 1}/{repeats}: {r.output_throughput:.1f} tok/s"
                + (f", accept {r.accept_length:.2f}" if r.accept_length else "")
                + (f" ({redactor.text(r.error)})" if r.error else "")
            )
        # Errors may echo the key (``Invalid API key provided: …``): what is printed is scrubbed.
        summary = redactor.value(summarize_repeats(results, profile, target))
        if ns.json:
            print(json.dumps(summary, indent=2))
        else:
            _print_human(summary)
        # no tokens measured (NaN/zero counts, every stream empty) fails the gate like a failed request
        ok = summary["requests"] > 0 and summary["failed"] == 0 and summary["output_throughput"] > 0
        return EXIT_OK if ok else EXIT_BENCH_FAILED
    finally:
        if follower is not None:
            follower.cancel()
            with contextlib.suppress(BaseException):
                await follower
        if server is not None:
            _say("stopping the server")
            try:
                await server.stop()
            except Exception as exc:
                _say(f"eagletui: stopping the server failed: {exc}")
        if transport is not None:
            with contextlib.suppress(Exception):
                await transport.close()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="eagletui bench", description="Benchmark a server headlessly.")
    p.add_argument(
        "target", nargs="?", default=None, help='"local" or an SSH target (default: the profile\'s)'
    )
    p.add_argument("--profile", required=True, help="profile TOML")
    add_ssh_options(p)
    p.add_argument("--launch", action="store_true", help="launch the server first and stop it afterwards")
    p.add_argument("--repeats", type=int, default=None, help="benchmark runs (default: bench.repeats)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    return p


def main(argv: list[str]) -> int:
    try:
        ns = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if ns.repeats is not None and ns.repeats < 1:
        _say("eagletui: --repeats must be at least 1")
        return EXIT_USAGE
    return asyncio.run(_amain(ns))
