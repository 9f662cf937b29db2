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

Every count a server reports is bounded by what the request allowed (:func:`beyond_request`): a
``completion_tokens`` above ``max_new_tokens`` fails the request instead of growing its lists.
While the link to the host is down (``link``, set by the workspace) no new prompt is drawn.

Speed matters (the client must not be the bottleneck at tens of thousands of tok/s): SSE bytes are split
on newlines and only an integer is pulled out of each chunk with a compiled regex; the final chunk alone
is decoded as JSON.

Every wait has a timeout and every read a bound (:class:`HttpLimits`): a server that stalls after the
headers, trickles one byte a second, streams forever without a newline or answers with a 50 MB error
page ends that one request with a clear error instead of hanging ``bench`` or eating the memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import aiohttp

from eagletui.bench.accept_by import accept_groups
from eagletui.bench.httplimits import HttpLimits, ResponseTooLarge, _size, read_bounded
from eagletui.bench.metrics import _get_metrics, _metrics_accept_len
from eagletui.bench.prompts import PromptSetError, Workload, build_workload
from eagletui.bench.stall import StallWatch
from eagletui.core.events import BenchmarkResult, BenchmarkSample, BenchmarkStarted, Event
from eagletui.core.profile.model import BenchSettings
from eagletui.core.stats.sample import percentile, summarize

_CT_RE = re.compile(rb'"completion_tokens"\s*:\s*(\d+)')
_CT_KEY = b'"completion_tokens"'
TICK_S = 1.0


@dataclass(slots=True)
class RequestResult:
    """One request's measurements; times are ``time.perf_counter`` seconds."""

    ok: bool = False
    error: str = ""
    start: float = 0.0
    first: float | None = None
    last: float | None = None
    output_tokens: int = 0
    verify_ct: int | None = None
    correct_drafts: int | None = None
    #: ``spec_correct_drafts_histogram``: verifies that accepted 0, 1, 2 … draft tokens
    hist: list[int] | None = None
    itls: list[float] = field(default_factory=list)
    #: the server's own count of the prompt's tokens (``meta_info.prompt_tokens``), and which prompt of
    #: the workload this was (its category: :mod:`eagletui.bench.accept_by`)
    prompt_tokens: int | None = None
    index: int = -1
    #: the stream had started and then went silent (``HttpLimits.stall_s``): the server stalled
    stalled: bool = False

    @property
    def ttft(self) -> float | None:
        return None if self.first is None else self.first - self.start

    @property
    def latency(self) -> float:
        return (self.last or self.start) - self.start

    @property
    def tok_s(self) -> float | None:
        """Per-stream decode speed: tokens after the first chunk over the time after it.

        TTFT is excluded because it is queueing + prefill, which has its own metric; with a single chunk
        there is no decode interval and the end-to-end rate is the best available answer.
        """
        if not self.ok or self.output_tokens <= 0 or self.first is None or self.last is None:
            return None
        span = self.last - self.first
        decoded = self.output_tokens - self._first_tokens
        if span > 0 and decoded > 0:
            return decoded / span
        return self.output_tokens / self.latency if self.latency > 0 else None

    _first_tokens: int = 0

    @property
    def accept_len(self) -> float | None:
        if self.verify_ct and self.verify_ct > 0 and self.output_tokens > 0:
            return self.output_tokens / self.verify_ct
        return None


class _Live:
    """Counters shared by all streams; updated with plain int adds so the hot path stays cheap."""

    __slots__ = ("tokens", "ct_sum", "verify_sum")

    def __init__(self) -> None:
        self.tokens = 0
        self.ct_sum = 0
        self.verify_sum = 0

    def accept_len(self) -> float | None:
        return self.ct_sum / self.verify_sum if self.verify_sum > 0 else None


#: Longest ``spec_correct_drafts_histogram`` kept (SGLang's draft trees are far shallower).
MAX_HISTOGRAM = 64


def beyond_request(what: str, count: int, limit: int | None) -> str:
    """Why a count the server reported cannot be (more than the request allowed); "" when it can."""
    if limit is not None and count > limit:
        return f"impossible count from the server: {what} {count:,} for a request of at most {limit:,} tokens"
    return ""


def _short_error(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorError):
        return (
            f"connection failed: {exc.os_error.strerror or exc}"
            if exc.os_error
            else f"connection failed: {exc}"
        )
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return "timeout"
    if isinstance(exc, ResponseTooLarge):
        return str(exc)
    return f"{type(exc).__name__}: {exc}".strip()


async def stream_generate(
    session: aiohttp.ClientSession,
    url: str,
    payload: bytes,
    live: _Live | None = None,
    limits: HttpLimits | None = None,
) -> RequestResult:
    """One streaming ``/generate`` request. Never raises for network/HTTP errors: they land in ``error``.

    Bounded on every side (see :class:`HttpLimits`): the connect, each read, the gap between complete
    ``data:`` events, the whole request, one SSE line and an error body."""
    lim = limits or HttpLimits()
    res = RequestResult(start=time.perf_counter())
    last_ct = 0
    last_body = b""
    prev_t = res.start
    buf = b""
    done = False
    itls = res.itls
    loop = asyncio.get_running_loop()
    phase = "connecting"
    try:
        async with asyncio.timeout(lim.idle_s) as idle:
            async with session.post(
                url, data=payload, headers={"Content-Type": "application/json"}, timeout=lim.timeout()
            ) as resp:
                if resp.status != 200:
                    phase = "reading the error"
                    raw = await read_bounded(resp, lim.max_error_body, truncate=True)
                    page = raw.decode("utf-8", "replace")[:200].strip()
                    res.error = f"HTTP {resp.status}" + (f": {page}" if page else "")
                    return res
                phase = "streaming"
                idle.reschedule(loop.time() + lim.idle_s)
                async for chunk in resp.content.iter_any():
                    now = time.perf_counter()
                    buf = buf + chunk if buf else chunk
                    if b"\n" not in buf:
                        if len(buf) > lim.max_line:
                            res.error = (
                                f"SSE line longer than {_size(lim.max_line)} (no newline): stream abandoned"
                            )
                            return res
                        continue
                    lines = buf.split(b"\n")
                    buf = lines.pop()
                    if len(buf) > lim.max_line:
                        res.error = (
                            f"SSE line longer than {_size(lim.max_line)} (no newline): stream abandoned"
                        )
                        return res
                    for line in lines:
                        if not line.startswith(b"data:"):
                            continue
                        if len(line) > lim.max_line:
                            res.error = f"SSE line longer than {_size(lim.max_line)}: stream abandoned"
                            return res
                        # an event arrived: not idle; once started, silence is a stall much sooner
                        idle.reschedule(
                            loop.time() + (_stall_s(lim) if res.first is not None else lim.idle_s)
                        )
                        body = line[5:].strip()
                        if body == b"[DONE]":
                            done = True
                            continue
                        last_body = body
                        i = body.rfind(_CT_KEY)
                        if i < 0:
                            continue
                        m = _CT_RE.match(body, i)
                        if m is None:
                            continue
                        ct = int(m.group(1))
                        over = beyond_request("completion_tokens", ct, lim.max_tokens)
                        if over:
                            res.error = over
                            return res
                        new = ct - last_ct
                        if new <= 0:
                            continue
                        last_ct = ct
                        if live is not None:
                            live.tokens += new
                        if res.first is None:
                            res.first = now
                            res._first_tokens = new
                            idle.reschedule(loop.time() + _stall_s(lim))  # started: a stall from now on
                        else:
                            gap = (now - prev_t) / new
                            if new == 1:
                                itls.append(gap)
                            else:
                                itls.extend([gap] * new)
                        prev_t = now
                if buf.startswith(b"data:"):
                    body = buf[5:].strip()
                    if body == b"[DONE]":
                        done = True
                    elif body:
                        last_body = body
    except TimeoutError as exc:
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            res.error = f"timeout: could not connect within {lim.connect_s:g}s"
        elif isinstance(exc, aiohttp.ServerTimeoutError):
            res.error = f"timeout: no data from the server for {lim.read_s:g}s while {phase}"
        elif phase == "streaming" and not idle.expired():
            res.error = f"timeout: request took longer than {lim.total_s:g}s"
        elif phase == "streaming" and res.first is not None:
            res.stalled = True
            res.error = f"stalled: the stream went silent for {_stall_s(lim):g}s after {last_ct} token(s)"
        elif phase == "streaming":
            res.error = f"timeout: no complete stream event for {lim.idle_s:g}s (the server stalled or trickles bytes)"
        elif phase == "connecting" and idle.expired():
            res.error = f"timeout: no answer for {lim.idle_s:g}s"
        else:
            res.error = _short_error(exc)
        return res
    except Exception as exc:
        res.error = _short_error(exc)
        return res
    res.last = prev_t if res.first is not None else time.perf_counter()
    if not last_body:
        res.error = "empty response"
        return res
    try:
        final = json.loads(last_body)
    except ValueError:
        res.error = "unparseable final chunk"
        return res
    if isinstance(final, list):  # a list input returns a list; we only ever send one prompt
        final = final[0] if final else {}
    if not isinstance(final, dict):
        res.error = "unexpected final chunk"
        return res
    if "error" in final:
        err = final["error"]
        res.error = str(err.get("message", err) if isinstance(err, dict) else err)[:200]
        return res
    if final.get("object") == "error":  # vLLM's error chunk
        res.error = str(final.get("message", "error"))[:200]
        return res
    meta = final.get("meta_info")
    meta = meta if isinstance(meta, dict) else {}
    ct = meta.get("completion_tokens", last_ct)
    if not _count(ct):
        res.error = f"invalid completion_tokens {ct!r} in the final chunk"
        return res
    over = beyond_request("completion_tokens", int(ct), lim.max_tokens)
    if over:
        res.error = over
        return res
    res.output_tokens = int(ct)
    pt = meta.get("prompt_tokens")
    if _count(pt) and pt < 1 << 31:
        res.prompt_tokens = int(pt)
    if res.output_tokens > last_ct and live is not None:
        live.tokens += res.output_tokens - last_ct
    if res.output_tokens <= 0:
        res.error = "no output tokens"
        return res
    vc = meta.get("spec_verify_ct")
    if _count(vc) and vc > 0:
        if vc > res.output_tokens:  # every verify yields at least the target's own token
            res.error = (
                f"impossible count from the server: spec_verify_ct {int(vc):,} > {res.output_tokens:,} tokens"
            )
            return res
        res.verify_ct = int(vc)
        _spec_detail(res, meta)
        if live is not None:
            live.ct_sum += res.output_tokens
            live.verify_sum += res.verify_ct
    res.ok = True
    if not done and meta.get("finish_reason") is None:
        res.ok = False
        res.error = "stream ended early"
    return res


def _spec_detail(res: RequestResult, meta: dict[str, Any]) -> None:
    """The correct-draft count and the per-position histogram of a verified request, where the server
    returns them and they add up (a damaged or impossible one is left out, not trusted)."""
    assert res.verify_ct is not None
    cd = meta.get("spec_num_correct_drafts", meta.get("spec_accepted_drafts"))
    if _count(cd) and cd <= res.output_tokens:
        res.correct_drafts = int(cd)
    hist = meta.get("spec_correct_drafts_histogram", meta.get("spec_accept_histogram"))
    if isinstance(hist, list) and 0 < len(hist) <= MAX_HISTOGRAM and all(_count(c) for c in hist):
        counts = [int(c) for c in hist]
        if sum(counts) == res.verify_ct:
            res.hist = counts


def _stall_s(lim: HttpLimits) -> float:
    """How long a started stream may be silent: ``stall_s``, never more than the idle bound."""
    return min(lim.stall_s, lim.idle_s)


def _count(value: Any) -> TypeGuard[float]:
    """A usable token/round count: a finite, non-negative number (``NaN``/``inf``/strings are not)."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    )


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


#: How a request ends when the link under it is cut (the SSH forward of the server's port).
_LINK_ERRORS = ("connection failed", "ServerDisconnectedError", "ClientOSError", "ClientConnectionError")
#: After such a failure a worker waits this long before it draws the next prompt, so the link's state
#: (which the transport reports a moment later) decides, not a burst of failing requests.
LINK_SETTLE_S = 0.25


async def _link_up(link: asyncio.Event | None, timeout: float) -> bool:
    """Wait while the link to the host is down (no prompt is drawn meanwhile), at most ``timeout``
    seconds; False when it did not come back (the benchmark ends with what it measured)."""
    if link is None or link.is_set():
        return True
    try:
        await asyncio.wait_for(link.wait(), timeout)
    except TimeoutError:
        return False
    return True


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


async def _run_pool(
    session: aiohttp.ClientSession,
    url: str,
    payloads: list[bytes],
    concurrency: int,
    live: _Live | None,
    on_done: Callable[[RequestResult], None] | None,
    stop: asyncio.Event | None,
    limits: HttpLimits | None = None,
    link: asyncio.Event | None = None,
    arrivals: tuple[float, ...] = (),
) -> list[RequestResult]:
    """Send ``payloads`` with at most ``concurrency`` in flight; with ``arrivals`` (seconds from now,
    one per payload) none is sent before its time (an open-loop request rate, capped by concurrency)."""
    results: list[RequestResult] = []
    start = time.perf_counter()
    it = iter(enumerate(zip(payloads, arrivals or [0.0] * len(payloads), strict=False)))
    lim = limits or HttpLimits()

    async def worker() -> None:
        for i, (payload, at) in it:
            if stop is not None and stop.is_set():
                return
            wait = start + at - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            if not await _link_up(link, lim.total_s):
                return
            r = await stream_generate(session, url, payload, live, limits)
            r.index = i
            results.append(r)
            if on_done is not None:
                on_done(r)
            if link is not None and not r.ok and r.error.startswith(_LINK_ERRORS):
                await asyncio.sleep(LINK_SETTLE_S)  # a cut: let the link's state catch up first

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(payloads))))]
    if stop is None:
        await asyncio.gather(*workers)
        return results
    stopper = asyncio.create_task(stop.wait())
    try:
        pending: set[asyncio.Task[Any]] = set(workers)
        while pending:
            done, pending = await asyncio.wait(pending | {stopper}, return_when=asyncio.FIRST_COMPLETED)
            pending.discard(stopper)
            if stopper in done:
                for w in pending:
                    w.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                break
    finally:
        stopper.cancel()
    return results


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
    ``limits`` defaults to :meth:`HttpLimits.for_settings` (``bench.timeout_s`` bounds one request,
    ``max_new_tokens`` every count); while ``link`` is clear no prompt is drawn.
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
        limits=limits or HttpLimits.for_settings(settings),
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
    lim = limits or HttpLimits.for_settings(settings)
    timeout = lim.timeout()
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
    live = _Live()
    t0 = 0.0
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

        async def ticker() -> None:
            last_tokens, last_t = 0, t0
            while True:
                await asyncio.sleep(TICK_S)
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

        t0 = time.perf_counter()
        tick_task = asyncio.create_task(ticker())
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
            tick_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await tick_task
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


# -- stalls (bench/stall.py): the pool under a StallWatch, and the result it leaves -----------------


async def _watched_pool(
    session: aiohttp.ClientSession,
    url: str,
    payloads: list[bytes],
    concurrency: int,
    live: _Live,
    on_done: Callable[[RequestResult], None] | None,
    stop: asyncio.Event | None,
    limits: HttpLimits,
    emit: Callable[[Event], None],
    what: str,
    link: asyncio.Event | None = None,
    arrivals: tuple[float, ...] = (),
) -> tuple[list[RequestResult], StallWatch]:
    """:func:`_run_pool` halted by a :class:`StallWatch` (or the user's ``stop``); while ``link`` is
    clear the pool draws no prompt and the watch does not count the silence as the server's;
    ``arrivals`` as there."""
    watch = StallWatch(
        limits,
        emit=emit,
        total=len(payloads),
        concurrency=concurrency,
        tokens=lambda: live.tokens,
        stop=stop,
        what=what,
        waiting=(lambda: not link.is_set()) if link is not None else None,
    )

    def done(r: RequestResult) -> None:
        watch.finished(r.stalled)
        if on_done is not None:
            on_done(r)

    task = asyncio.create_task(watch.run())
    try:
        results = await _run_pool(
            session, url, payloads, concurrency, live, done, watch.halt, limits, link, arrivals
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return results, watch


def _stalled(result: BenchmarkResult, watch: StallWatch) -> BenchmarkResult:
    """The result of a benchmark the watch halted: "server stalled" first, the abandoned requests
    counted as failed (they would never have finished). Unchanged when it did not stall."""
    if not watch.reason:
        return result
    import dataclasses

    error = f"server stalled: {watch.reason}" + (f"; {result.error}" if result.error else "")
    return dataclasses.replace(result, failed=result.failed + watch.abandoned, error=error)


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
            (r.prompt_tokens, workload.category(r.index), r.output_tokens, r.verify_ct) for r in ok
        ),
    )


def _accept_detail(
    ok: list[RequestResult], verify: int, spec_tokens: int, metrics_accept: float | None
) -> dict[str, Any]:
    """Which formula the result's accept length is, and the same run by the other definitions
    (:mod:`eagletui.core.runs.accept`); {} when nothing was speculated or measured."""
    out: dict[str, Any] = {}
    verified = [r for r in ok if r.verify_ct]
    if verify > 0:
        out["formula"] = f"Σ completion_tokens ÷ Σ spec_verify_ct over {len(verified)} requests (pooled)"
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
        out["source"] = "/metrics counters (the server reported no per-request verify counts)"
        out["metrics"] = metrics_accept
    return out
