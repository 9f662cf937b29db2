"""One streamed generation request of the built-in benchmark client (:mod:`eagletui.bench.client`):
what it measured (:class:`RequestResult`), the counters all streams share while the run goes
(:class:`_Live`) and the request itself (:func:`stream_generate`).

Apart from the client because it is the hot path and the one place that reads a server's answer:
the pool, the warm-up, the ticks and the summary only ever see a :class:`RequestResult`.

Speed matters (the client must not be the bottleneck at tens of thousands of tok/s): SSE bytes are split
on newlines and only an integer is pulled out of each chunk with a compiled regex; the final chunk alone
is decoded as JSON.

Every wait has a timeout and every read a bound (:class:`HttpLimits`): a server that stalls after the
headers, trickles one byte a second, streams forever without a newline or answers with a 50 MB error
page ends that one request with a clear error instead of hanging ``bench`` or eating the memory.
Every count a server reports is bounded by what the request allowed (:func:`beyond_request`): a
``completion_tokens`` above ``max_new_tokens`` fails the request instead of growing its lists.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import aiohttp

from eagletui.bench.httplimits import HttpLimits, ResponseTooLarge, _size, read_bounded
from eagletui.core.runs.accept_dist import request_accept

_CT_RE = re.compile(rb'"completion_tokens"\s*:\s*(\d+)')
_CT_KEY = b'"completion_tokens"'


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
        """The server's own per-request figure (``spec_accept_length``: completion ÷ verifies)."""
        if self.verify_ct and self.verify_ct > 0 and self.output_tokens > 0:
            return self.output_tokens / self.verify_ct
        return None

    @property
    def own_accept(self) -> float | None:
        """The request's accept length without the prefill's token: ``1 + correct drafts ÷ verifies``
        (:func:`eagletui.core.runs.accept_dist.request_accept`)."""
        return request_accept(self.verify_ct, self.correct_drafts, self.output_tokens)


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


class _Progress:
    """How far one stream got: what the timeout's wording and the final chunk's check need of the
    reading loop (which keeps it in locals while it runs and writes it back here when it ends, also
    when a timeout cuts it off)."""

    __slots__ = ("phase", "last_ct", "last_body", "prev_t", "done")

    def __init__(self, start: float) -> None:
        self.phase = "connecting"
        self.last_ct = 0
        self.last_body = b""
        self.prev_t = start
        self.done = False


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
    st = _Progress(res.start)
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(lim.idle_s) as idle:
            async with session.post(
                url, data=payload, headers={"Content-Type": "application/json"}, timeout=lim.timeout()
            ) as resp:
                if resp.status != 200:
                    st.phase = "reading the error"
                    raw = await read_bounded(resp, lim.max_error_body, truncate=True)
                    page = raw.decode("utf-8", "replace")[:200].strip()
                    res.error = f"HTTP {resp.status}" + (f": {page}" if page else "")
                    return res
                st.phase = "streaming"
                idle.reschedule(loop.time() + lim.idle_s)
                if not await _read_events(resp, res, st, idle, live, lim):
                    return res
    except TimeoutError as exc:
        _timed_out(res, exc, st, idle, lim)
        return res
    except Exception as exc:
        res.error = _short_error(exc)
        return res
    res.last = st.prev_t if res.first is not None else time.perf_counter()
    _finish(res, st, live, lim)
    return res


async def _read_events(
    resp: aiohttp.ClientResponse,
    res: RequestResult,
    st: _Progress,
    idle: asyncio.Timeout,
    live: _Live | None,
    lim: HttpLimits,
) -> bool:
    """Read the SSE stream: the first token's time, the ITLs and the live token count as chunks come,
    the last ``data:`` body for :func:`_finish`. False when the stream was abandoned (``res.error``
    says why). The hot path: its state stays in locals and goes back to ``st`` when it ends."""
    last_ct, last_body, prev_t, buf = 0, b"", res.start, b""
    itls = res.itls
    loop = asyncio.get_running_loop()
    try:
        async for chunk in resp.content.iter_any():
            now = time.perf_counter()
            buf = buf + chunk if buf else chunk
            if b"\n" not in buf:
                if len(buf) > lim.max_line:
                    res.error = f"SSE line longer than {_size(lim.max_line)} (no newline): stream abandoned"
                    return False
                continue
            lines = buf.split(b"\n")
            buf = lines.pop()
            if len(buf) > lim.max_line:
                res.error = f"SSE line longer than {_size(lim.max_line)} (no newline): stream abandoned"
                return False
            for line in lines:
                if not line.startswith(b"data:"):
                    continue
                if len(line) > lim.max_line:
                    res.error = f"SSE line longer than {_size(lim.max_line)}: stream abandoned"
                    return False
                # an event arrived: not idle; once started, silence is a stall much sooner
                idle.reschedule(loop.time() + (_stall_s(lim) if res.first is not None else lim.idle_s))
                body = line[5:].strip()
                if body == b"[DONE]":
                    st.done = True
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
                    return False
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
                st.done = True
            elif body:
                last_body = body
    finally:
        st.last_ct, st.last_body, st.prev_t = last_ct, last_body, prev_t
    return True


def _timed_out(
    res: RequestResult, exc: TimeoutError, st: _Progress, idle: asyncio.Timeout, lim: HttpLimits
) -> None:
    """Say in ``res`` which bound a timed-out request hit: the connect, a read, the whole request, the
    silence of a started stream (a stall: ``stalled``) or the wait for a complete event."""
    phase, last_ct = st.phase, st.last_ct
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
        res.error = (
            f"timeout: no complete stream event for {lim.idle_s:g}s (the server stalled or trickles bytes)"
        )
    elif phase == "connecting" and idle.expired():
        res.error = f"timeout: no answer for {lim.idle_s:g}s"
    else:
        res.error = _short_error(exc)


def _final_meta(res: RequestResult, last_body: bytes) -> dict[str, Any] | None:
    """The final chunk's ``meta_info`` ({} when it has none), or None when there is no usable final
    chunk or it is an error (``res.error`` says which)."""
    if not last_body:
        res.error = "empty response"
        return None
    try:
        final = json.loads(last_body)
    except ValueError:
        res.error = "unparseable final chunk"
        return None
    if isinstance(final, list):  # a list input returns a list; we only ever send one prompt
        final = final[0] if final else {}
    if not isinstance(final, dict):
        res.error = "unexpected final chunk"
        return None
    if "error" in final:
        err = final["error"]
        res.error = str(err.get("message", err) if isinstance(err, dict) else err)[:200]
        return None
    if final.get("object") == "error":  # vLLM's error chunk
        res.error = str(final.get("message", "error"))[:200]
        return None
    meta = final.get("meta_info")
    meta = dict(meta) if isinstance(meta, dict) else {}
    if "spec_verify_ct" not in meta:
        meta.update(_openai_spec(final))
    return meta


def _openai_spec(final: dict[str, Any]) -> dict[str, Any]:
    """vLLM's per-request acceptance (``--per-request-spec-decode-metrics``, 0.29+: ``metrics.
    speculative_decoding`` of the final usage chunk, vllm/entrypoints/generate/base/protocol.py
    ``SpeculativeDecodingMetrics``) in SGLang's ``meta_info`` names: verify steps, accepted draft tokens
    and the histogram of draft tokens accepted per step (the bonus token excluded in both)."""
    metrics = final.get("metrics")
    sd = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
    if not isinstance(sd, dict):
        return {}
    out: dict[str, Any] = {}
    for theirs, ours in (
        ("num_spec_steps", "spec_verify_ct"),
        ("num_accepted_draft_tokens", "spec_num_correct_drafts"),
        ("acceptance_histogram", "spec_correct_drafts_histogram"),
    ):
        if theirs in sd:
            out[ours] = sd[theirs]
    return out


def _finish(res: RequestResult, st: _Progress, live: _Live | None, lim: HttpLimits) -> None:
    """Take the final chunk's counts into ``res`` (and ``live``), each checked against what the request
    allowed; ``ok`` only for a stream that finished."""
    meta = _final_meta(res, st.last_body)
    if meta is None:
        return
    ct = meta.get("completion_tokens", st.last_ct)
    if not _count(ct):
        res.error = f"invalid completion_tokens {ct!r} in the final chunk"
        return
    over = beyond_request("completion_tokens", int(ct), lim.max_tokens)
    if over:
        res.error = over
        return
    res.output_tokens = int(ct)
    pt = meta.get("prompt_tokens")
    if _count(pt) and pt < 1 << 31:
        res.prompt_tokens = int(pt)
    if res.output_tokens > st.last_ct and live is not None:
        live.tokens += res.output_tokens - st.last_ct
    if res.output_tokens <= 0:
        res.error = "no output tokens"
        return
    vc = meta.get("spec_verify_ct")
    if _count(vc) and vc > 0:
        if vc > res.output_tokens:  # every verify yields at least the target's own token
            res.error = (
                f"impossible count from the server: spec_verify_ct {int(vc):,} > {res.output_tokens:,} tokens"
            )
            return
        res.verify_ct = int(vc)
        _spec_detail(res, meta)
        if live is not None:
            live.ct_sum += res.output_tokens
            live.verify_sum += res.verify_ct
    res.ok = True
    if not st.done and meta.get("finish_reason") is None:
        res.ok = False
        res.error = "stream ended early"


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
