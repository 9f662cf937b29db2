"""Bounds for every HTTP exchange the benchmark client has with a server: :class:`HttpLimits` (timeouts,
size caps) and :func:`read_bounded`.

A server under test may stall, trickle bytes or answer with a huge error page; every request the client
makes reads through these so that ends one request with a clear error instead of hanging ``bench`` or
eating the memory. Its own module because the streaming client, the ``/metrics`` reader and the cache
flush all use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import aiohttp

from eagletui.core.profile.model import BenchSettings
from eagletui.core.timings import REAL, Clock, SystemClock, Timings

_HTTP = REAL.http

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """Timeouts and read bounds for every request the client makes.

    ``read_s`` is the longest silence (not one byte) tolerated from the server; ``idle_s`` the longest
    wait for the next complete ``data:`` event of a stream, which also catches a server that trickles
    bytes without ever finishing a line. Both are generous (5 min) because at a concurrency above the
    server's running-request limit a request waits in its queue before its first byte; they end a
    dead stream long before ``total_s``, which bounds one request end to end (``bench.timeout_s``).

    A stream that has *started* is different: tokens come every few milliseconds, so once the first
    event has arrived a silence of ``stall_s`` means the server stalled, not that it is busy; that
    request ends as stalled. And when no stream at all has made progress for ``server_stall_s`` while
    requests are waiting, the server is not serving: after that, or after ``max_stalls`` stalled
    streams, the benchmark stops drawing prompts and ends as "server stalled" with what it measured
    (:mod:`eagletui.bench.stall`), saying every ``progress_s`` of silence what it waits for.

    The waits are the command's :class:`~eagletui.core.timings.HttpTimings` (:meth:`from_timings`);
    the defaults here are the real ones, for a client built without a command around it.
    """

    connect_s: float = _HTTP.connect_s
    read_s: float = _HTTP.read_s
    idle_s: float = _HTTP.idle_s
    total_s: float = _HTTP.total_s
    stall_s: float = _HTTP.stall_s
    server_stall_s: float = _HTTP.server_stall_s
    max_stalls: int = 3
    progress_s: float = _HTTP.progress_s
    #: the stall watch looks this often; the live samples come every ``tick_s``; after a link cut a
    #: prompt waits ``link_settle_s`` for the link's state to catch up
    stall_poll_s: float = _HTTP.stall_poll_s
    tick_s: float = _HTTP.tick_s
    link_settle_s: float = _HTTP.link_settle_s
    gone_after_s: float = _HTTP.gone_after_s
    #: an error page is kept only this far (its first 200 characters go into the message)
    max_error_body: int = 64 * KIB
    #: one SSE line (an sglang chunk is the cumulative text so far: long outputs make long lines)
    max_line: int = 1 * MIB
    #: small JSON/text answers: /v1/models, /flush_cache
    max_json: int = 4 * MIB
    #: Prometheus text of /metrics (histograms × TP ranks can be large, but not this large)
    max_metrics: int = 16 * MIB
    #: the most output tokens one request may report: its ``max_new_tokens`` (None: unbounded). A
    #: server that reports more is wrong, and the request fails instead of growing every list with it
    max_tokens: int | None = None
    #: the clock stalls and ticks are measured on (the command's: a test's may be moved by hand)
    clock: Clock = field(default_factory=SystemClock, compare=False)

    @classmethod
    def for_settings(cls, settings: BenchSettings, timings: Timings) -> HttpLimits:
        """The command's HTTP timings, with ``bench.timeout_s`` bounding one request end to end and
        ``bench.max_new_tokens`` every count."""
        h = timings.http
        total = getattr(settings, "timeout_s", None)
        max_new = getattr(settings, "max_new_tokens", None)
        tokens = max_new if isinstance(max_new, int) and not isinstance(max_new, bool) and max_new > 0 else None
        valid = isinstance(total, int | float) and not isinstance(total, bool) and math.isfinite(total) and total > 0
        return cls(
            connect_s=h.connect_s,
            read_s=h.read_s,
            idle_s=h.idle_s,
            total_s=float(total) if valid else h.total_s,  # type: ignore[arg-type]
            stall_s=h.stall_s,
            server_stall_s=h.server_stall_s,
            progress_s=h.progress_s,
            stall_poll_s=h.stall_poll_s,
            tick_s=h.tick_s,
            link_settle_s=h.link_settle_s,
            gone_after_s=h.gone_after_s,
            max_tokens=tokens,
            clock=timings.clock,
        )

    def timeout(self, total: float | None = None) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(
            total=self.total_s if total is None else total, sock_connect=self.connect_s, sock_read=self.read_s
        )


class ResponseTooLarge(Exception):
    """An answer exceeded its bound; the request fails with this message instead of growing memory."""


async def read_bounded(resp: aiohttp.ClientResponse, limit: int, *, truncate: bool = False) -> bytes:
    """The body, up to ``limit`` bytes. Past it: the first ``limit`` bytes if ``truncate``, else
    :class:`ResponseTooLarge`. Either way nothing beyond ``limit`` (+ one network chunk) is held."""
    declared = resp.content_length
    if declared is not None and declared > limit and not truncate:
        raise ResponseTooLarge(f"answer of {declared} bytes exceeds the {_size(limit)} limit")
    out = bytearray()
    while len(out) <= limit:
        chunk = await resp.content.read(min(64 * KIB, limit + 1 - len(out)))
        if not chunk:
            return bytes(out)
        out += chunk
    if truncate:
        return bytes(out[:limit])
    raise ResponseTooLarge(f"answer exceeds the {_size(limit)} limit")


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n >= MIB and n % MIB == 0 else f"{n // KIB} KiB" if n % KIB == 0 else f"{n} B"
