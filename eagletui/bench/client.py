"""Built-in streaming benchmark client: SGLang's native ``/generate`` or an OpenAI-compatible server's
``/v1/completions`` (vLLM), chosen by the server kind's ``api``.

Why our own client: the TUI needs numbers while the run is going (per-request samples and a per-second
tick for live charts) and an accept length that belongs to *this* run, neither of which
``sglang.bench_serving`` gives. The numbers are defined like bench_serving's so the two agree:

* TTFT: request sent → first chunk that carries output tokens.
* ITL: each chunk's gap is spread evenly over the tokens it added (EAGLE chunks carry several tokens).
* output tok/s: Σ ``meta_info.completion_tokens`` ÷ wall time of the main run (warmup excluded).
* accept length: Σ completion_tokens ÷ Σ ``spec_verify_ct`` from the final chunks' ``meta_info``; if the
  server does not report per-request verify counts, the delta of the ``/metrics`` counters over the main
  run (vLLM: ``1 + Δvllm:spec_decode_num_accepted_tokens ÷ Δvllm:spec_decode_num_drafts``). The server's
  cumulative ``avg_spec_accept_length`` is never used: it mixes in warmup and earlier runs.
* the OpenAI API streams ``usage`` in every chunk (``stream_options.continuous_usage_stats``), so the
  same ``completion_tokens`` count drives TTFT and ITL there.
  The result's ``accept`` says which formula the number is and holds the same run by the other definitions
  (:mod:`eagletui.core.runs.accept`), the correct-draft count and ``spec_correct_drafts_histogram`` summed.
* step time: where the server keeps its own step-time record (``SGLANG_RECORD_STEP_TIME=1``:
  ``/server_info`` → ``internal_states[0].step_time_dict``), the entries added during the main run at the
  benchmark's batch size, 20th percentile, as SGLang's ``bench_speculative.py`` reads it.

While the link to the host is down (``link``, set by the workspace) no new prompt is drawn.

One request, its bounds and its hot path are :mod:`eagletui.bench.stream`; ``concurrency`` of them at
a time, the link and the stall watch, :mod:`eagletui.bench.pool`. This module runs the workload
through them: the warm-up, the measured run with its samples and ticks, and the result it adds up to.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from eagletui.bench.accept_by import accept_groups
from eagletui.bench.httplimits import HttpLimits, read_bounded
from eagletui.bench.metrics import _get_metrics, _metrics_accept_len
from eagletui.bench.pool import _stalled, _watched_pool
from eagletui.bench.prompts import PromptSetError, Workload, build_workload
from eagletui.bench.stall import StallWatch
from eagletui.bench.stream import RequestResult, _count, _Live
from eagletui.core.cycle.fit import accept_slope
from eagletui.core.events import BenchmarkResult, BenchmarkSample, BenchmarkStarted, Event
from eagletui.core.profile.model import BenchSettings
from eagletui.core.runs.latency import records_of
from eagletui.core.stats.sample import percentile, summarize
from eagletui.core.timings import REAL
from eagletui.remote.cancel import cancel_and_wait


async def flush_cache(
    session: aiohttp.ClientSession,
    base: str,
    attempts: int = 5,
    limits: HttpLimits | None = None,
    api: str = "sglang",
) -> bool:
    """POST /flush_cache (vLLM: /reset_prefix_cache, served in its dev mode only), retrying while the
    server says it is busy (it only flushes when idle). False when the server cannot flush."""
    lim = limits or HttpLimits()
    path = "/reset_prefix_cache" if api == "openai" else "/flush_cache"
    for i in range(attempts):
        try:
            async with session.post(base + path, timeout=lim.timeout(total=30)) as resp:
                if api == "openai" and resp.status in (404, 405):
                    return False
                await read_bounded(resp, lim.max_json, truncate=True)
                if resp.status == 200:
                    return True
                if resp.status == 404:
                    async with session.get(base + "/flush_cache", timeout=lim.timeout(total=30)) as resp2:
                        await read_bounded(resp2, lim.max_json, truncate=True)
                        return resp2.status == 200
        except Exception:
            return False
        await asyncio.sleep(0.2 * (i + 1))
    return False


async def _prime_connections(
    session: aiohttp.ClientSession, base: str, n: int, limits: HttpLimits | None = None
) -> None:
    """Open the keep-alive connections before the clock starts, so TCP setup of ``n`` streams is not
    billed to the server's throughput (any response, even 404, leaves a reusable connection)."""
    lim = limits or HttpLimits()

    async def one() -> None:
        try:
            async with session.get(base + "/v1/models", timeout=lim.timeout(total=10)) as resp:
                await read_bounded(resp, lim.max_json)
        except Exception:
            pass

    await asyncio.gather(*(one() for _ in range(max(1, n))))


#: Benchmark APIs (``ServerKind.api``): the request path of one streamed generation.
API_PATHS = {"sglang": "/generate", "openai": "/v1/completions"}


def make_payload(prompt: str, sampling: dict[str, Any], api: str = "sglang", model: str = "") -> bytes:
    """One streaming request body: SGLang's ``/generate`` or OpenAI ``/v1/completions`` (vLLM takes
    ``ignore_eos`` as an extension; usage comes with every chunk so tokens can be counted as they come)."""
    if api == "openai":
        body: dict[str, Any] = {
            "model": model,
            "prompt": prompt,
            "max_tokens": sampling.get("max_new_tokens", 256),
            "temperature": sampling.get("temperature", 0.0),
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
        if sampling.get("ignore_eos"):
            body["ignore_eos"] = True
        return json.dumps(body).encode()
    return json.dumps({"text": prompt, "sampling_params": sampling, "stream": True}).encode()


async def served_model(
    session: aiohttp.ClientSession, base: str, fallback: str = "", limits: HttpLimits | None = None
) -> str:
    """The model name an OpenAI-compatible server serves (``GET /v1/models``), else ``fallback``."""
    lim = limits or HttpLimits()
    try:
        async with session.get(base + "/v1/models", timeout=lim.timeout(total=10)) as resp:
            if resp.status != 200:
                return fallback
            data = json.loads(await read_bounded(resp, lim.max_json))
    except Exception:
        return fallback
    models = data.get("data") if isinstance(data, dict) else None
    first = models[0] if isinstance(models, list) and models and isinstance(models[0], dict) else {}
    name = first.get("id")
    return name if isinstance(name, str) and name and len(name) < 1024 else fallback


async def run_builtin(
    base_url: str,
    settings: BenchSettings,
    *,
    bench: int,
    launch: int,
    emit: Callable[[Event], None],
    stop: asyncio.Event | None = None,
    api_key: str | None = None,
    limits: HttpLimits | None = None,
    api: str = "sglang",
    model: str = "",
    link: asyncio.Event | None = None,
) -> BenchmarkResult:
    """Run the profile's workload against ``base_url`` and return the result; never raises for server
    trouble (connection refused, HTTP errors, timeouts), which is reported in ``failed``/``error``.
    ``api_key`` is sent as a bearer token, as a server started with ``--api-key`` requires.
    ``limits`` are the command's (:meth:`HttpLimits.for_settings`: its timings, ``bench.timeout_s``
    bounding one request, ``max_new_tokens`` every count; the real ones when None); while ``link`` is
    clear no prompt is drawn.
    ``api`` is the server kind's (``sglang`` or ``openai``); ``model`` the name to request when the
    server does not list one."""
    base = base_url.rstrip("/")
    try:
        workload = build_workload(settings)
    except PromptSetError as exc:
        emit(BenchmarkStarted(bench=bench, launch=launch, runner="builtin"))
        result = BenchmarkResult(bench=bench, launch=launch, runner="builtin", error=str(exc))
        emit(result)
        return result
    emit(
        BenchmarkStarted(
            bench=bench,
            launch=launch,
            runner="builtin",
            workload=workload.describe(),
            workload_fingerprint=workload.fingerprint,
        )
    )
    result = await _run_workload(
        base,
        workload,
        settings,
        bench=bench,
        launch=launch,
        emit=emit,
        stop=stop,
        api_key=api_key,
        limits=limits or HttpLimits.for_settings(settings, REAL),
        api=api,
        model=model,
        link=link,
    )
    emit(result)
    return result


async def _run_workload(
    base: str,
    workload: Workload,
    settings: BenchSettings,
    *,
    bench: int,
    launch: int,
    emit: Callable[[Event], None],
    stop: asyncio.Event | None,
    api_key: str | None = None,
    limits: HttpLimits | None = None,
    api: str = "sglang",
    model: str = "",
    link: asyncio.Event | None = None,
) -> BenchmarkResult:
    url = base + API_PATHS.get(api, "/generate")
    lim = limits or HttpLimits.for_settings(settings, REAL)
    timeout = lim.timeout()
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
    live = _Live()
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, auto_decompress=False, headers=headers
    ) as session:
        if api == "openai":
            model = await served_model(session, base, model, lim)
        if workload.warmup_prompts:
            warm = [make_payload(p, workload.sampling, api, model) for p in workload.warmup_prompts]
            _, warm_watch = await _watched_pool(
                session, url, warm, workload.concurrency, _Live(), None, stop, lim, emit, "warm-up"
            )
            if warm_watch.reason:  # the server stalled in the warm-up: nothing to measure
                warm_watch.reason += " (in the warm-up)"
                return _stalled(
                    _summarize(
                        [], 1e-9, workload, bench=bench, launch=launch, stopped=True, metrics_accept=None
                    ),
                    warm_watch,
                )
            await flush_cache(session, base, limits=lim, api=api)
        await _prime_connections(session, base, workload.concurrency, lim)
        metrics_before = await _get_metrics(session, base, lim)
        steps_before = await _step_times(session, base, workload.concurrency, lim)

        payloads = [make_payload(p, workload.sampling, api, model) for p in workload.prompts]
        t0, results, watch = await _measured_run(
            session, url, payloads, workload, live, stop, lim, emit, link, bench=bench, launch=launch
        )
        ok = [r for r in results if r.ok]
        t_end = max((r.last or 0.0) for r in ok) if ok else time.perf_counter()
        duration = max(t_end - t0, 1e-9)
        metrics_after = await _get_metrics(session, base, lim) if ok else None
        steps_after = await _step_times(session, base, workload.concurrency, lim) if ok else None
    result = _stalled(
        _summarize(
            results,
            duration,
            workload,
            bench=bench,
            launch=launch,
            stopped=watch.halt.is_set(),
            metrics_accept=_metrics_accept_len(metrics_before, metrics_after),
        ),
        watch,
    )
    step = _step_ms(steps_before, steps_after)
    return dataclasses.replace(result, step_ms=step) if step is not None else result


async def _measured_run(
    session: aiohttp.ClientSession,
    url: str,
    payloads: list[bytes],
    workload: Workload,
    live: _Live,
    stop: asyncio.Event | None,
    lim: HttpLimits,
    emit: Callable[[Event], None],
    link: asyncio.Event | None,
    *,
    bench: int,
    launch: int,
) -> tuple[float, list[RequestResult], StallWatch]:
    """The main run: the workload's requests through the watched pool, a sample for each one that
    finishes and a tick every ``lim.tick_s``; its clock's start, its results and its watch."""

    def on_done(r: RequestResult) -> None:
        if not r.ok:
            return
        ttft = r.ttft
        itl = sum(r.itls) / len(r.itls) if r.itls else None
        emit(
            BenchmarkSample(
                bench=bench,
                launch=launch,
                scope="request",
                t=time.perf_counter() - t0,
                tok_s=r.tok_s,
                accept_len=r.accept_len,
                ttft_ms=None if ttft is None else ttft * 1000.0,
                itl_ms=None if itl is None else itl * 1000.0,
                output_tokens=r.output_tokens,
            )
        )

    t0 = time.perf_counter()
    tick_task = asyncio.create_task(_ticker(live, emit, t0, lim.tick_s, bench=bench, launch=launch))
    try:
        results, watch = await _watched_pool(
            session,
            url,
            payloads,
            workload.concurrency,
            live,
            on_done,
            stop,
            lim,
            emit,
            "benchmark",
            link,
            workload.arrivals,
        )
    finally:
        await cancel_and_wait(tick_task)
    return t0, results, watch


async def _ticker(
    live: _Live, emit: Callable[[Event], None], t0: float, every: float, *, bench: int, launch: int
) -> None:
    """A ``tick`` sample every ``every`` seconds of the main run: its tok/s since the last tick, the live
    accept length and the tokens so far (until cancelled)."""
    last_tokens, last_t = 0, t0
    while True:
        await asyncio.sleep(every)
        now = time.perf_counter()
        tokens = live.tokens
        dt = now - last_t
        emit(
            BenchmarkSample(
                bench=bench,
                launch=launch,
                scope="tick",
                t=now - t0,
                tok_s=(tokens - last_tokens) / dt if dt > 0 else None,
                accept_len=live.accept_len(),
                output_tokens=tokens,
            )
        )
        last_tokens, last_t = tokens, now


async def _step_times(
    session: aiohttp.ClientSession, base: str, batch: int, limits: HttpLimits
) -> list[float] | None:
    """The server's step-time record at batch size ``batch`` (seconds per decode iteration), or None
    when it keeps none (``SGLANG_RECORD_STEP_TIME`` unset) or does not answer in time."""
    for path in ("/server_info", "/get_server_info"):
        try:
            async with session.get(base + path, timeout=limits.timeout(total=10)) as resp:
                if resp.status == 404:
                    continue
                if resp.status != 200:
                    return None
                data = json.loads(await read_bounded(resp, limits.max_json))
        except Exception:
            return None
        states = data.get("internal_states") if isinstance(data, dict) else None
        state = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else data
        record = state.get("step_time_dict") if isinstance(state, dict) else None
        if not isinstance(record, dict):
            return None
        values = record.get(str(batch))
        if not isinstance(values, list):
            return []
        return [float(v) for v in values if _count(v) and v > 0]
    return None


def _step_ms(before: list[float] | None, after: list[float] | None) -> float | None:
    """ms per decode iteration during the run: the record's entries added since ``before``, their
    20th percentile (bench_speculative.py: "we use 20% percentile instead of median on purpose")."""
    if before is None or after is None or len(after) <= len(before):
        return None
    new = sorted(after[len(before) :])
    return percentile(new, 20) * 1000.0


def _summarize(
    results: list[RequestResult],
    duration: float,
    workload: Workload,
    *,
    bench: int,
    launch: int,
    stopped: bool,
    metrics_accept: float | None,
) -> BenchmarkResult:
    ok = [r for r in results if r.ok]
    failed = [r for r in results if not r.ok]
    total_tokens = sum(r.output_tokens for r in ok)
    verify = sum(r.verify_ct or 0 for r in ok)
    spec_tokens = sum(r.output_tokens for r in ok if r.verify_ct)
    accept = spec_tokens / verify if verify > 0 else metrics_accept
    detail = _accept_detail(ok, verify, spec_tokens, metrics_accept)
    if workload.concurrency == 1 and detail:
        # one stream: each request's own cycles, so how the cycle grows with the accept length shows
        # across requests (at higher concurrency requests share cycles and it does not)
        slope = accept_slope([(r.accept_len, r.tok_s) for r in ok if r.accept_len and r.tok_s])
        if slope is not None:
            detail["cycle_ms_per_accept"] = slope
    itl_all: list[float] = []
    for r in ok:
        itl_all.extend(r.itls)
    stats: dict[str, Any] = {}
    for name, values in (
        ("ttft_ms", [r.ttft * 1000.0 for r in ok if r.ttft is not None]),
        ("itl_ms", [x * 1000.0 for x in itl_all]),
        ("tok_s", [r.tok_s for r in ok if r.tok_s is not None]),
        ("accept_len", [r.accept_len for r in ok if r.accept_len is not None]),
    ):
        s = summarize(values)
        if s is not None:
            stats[name] = s
    errors: list[str] = []
    if stopped:
        errors.append(f"stopped after {len(results)}/{len(workload.prompts)} requests")
    if failed:
        first = failed[0].error or "failed"
        errors.append(f"{len(failed)} request(s) failed: {first}")
    if total_tokens <= 0 and not stopped:
        # a benchmark that measured nothing is a failure, whatever the request count says
        errors.append("no output tokens: the benchmark measured nothing")
    return BenchmarkResult(
        bench=bench,
        launch=launch,
        runner="builtin",
        output_throughput=total_tokens / duration if ok else 0.0,
        accept_length=accept,
        requests=len(ok),
        failed=len(failed),
        duration_s=duration if ok else 0.0,
        stats=stats,
        workload_fingerprint=workload.fingerprint,
        error="; ".join(errors),
        accept=detail,
        accept_by=accept_groups(
            (r.prompt_tokens, workload.category(r.index), r.output_tokens, r.verify_ct, r.own_accept)
            for r in ok
        ),
        latency=records_of(
            ((_ms(r.ttft), _ms(_mean(r.itls)), _ms(r.latency), r.output_tokens) for r in ok), seed=bench
        ),
    )


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _accept_detail(
    ok: list[RequestResult], verify: int, spec_tokens: int, metrics_accept: float | None
) -> dict[str, Any]:
    """Which formula the result's accept length is, and the same run by the other definitions
    (:mod:`eagletui.core.runs.accept`); {} when nothing was speculated or measured."""
    out: dict[str, Any] = {}
    verified = [r for r in ok if r.verify_ct]
    if verify > 0:
        out["formula"] = f"Σ completion_tokens ÷ Σ spec_verify_ct over {len(verified)} requests, pooled"
        out["source"] = "meta_info of each final answer"
        out["verify_ct"] = verify
        per = [r.accept_len for r in verified if r.accept_len is not None]
        if per:
            out["per_request_mean"] = sum(per) / len(per)
        if verified and all(r.correct_drafts is not None for r in verified):
            correct = sum(r.correct_drafts or 0 for r in verified)
            out["correct_drafts"] = correct
            out["from_drafts"] = 1.0 + correct / verify
        if verified and all(r.hist for r in verified):
            hist: list[int] = []
            for r in verified:
                for k, c in enumerate(r.hist or []):
                    while len(hist) <= k:
                        hist.append(0)
                    hist[k] += c
            out["histogram"] = hist
        if metrics_accept is not None:
            out["metrics"] = metrics_accept
    elif metrics_accept is not None:
        out["formula"] = "Δ generation_tokens ÷ Δ spec_verify_ct of /metrics over the run"
        out["source"] = "/metrics counters: the server reported no per-request verify counts"
        out["metrics"] = metrics_accept
    return out
