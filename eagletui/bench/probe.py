"""Is anything serving at the benchmark's URL? Asked once, before a headless benchmark fires its
workload at a port where nothing listens (every request would fail at once with "connection failed",
which reads like a broken server rather than a missing one).

Any HTTP answer counts, whatever its status (a server started with ``--api-key`` answers 401): the
question is only whether something serves there. ``/v1/models`` is asked, not ``/health``: SGLang's
health check runs a one-token generation, which waits behind a long queue. Bounded: a connect
timeout and a total timeout, the body is never read.

Only "nothing listens" (refused, or over an SSH forward: closed at once) means no server. A port that
accepts and stays silent is a server that may be busy or stalled: the benchmark goes on, and its
stall detection (:mod:`eagletui.bench.stall`) ends it if nothing comes.
"""

from __future__ import annotations

import aiohttp


class Silent(str):
    """Something accepted the connection but gave no answer in time (not "no server")."""


async def no_server_answer(base_url: str, *, timeout: float) -> str | None:
    """None when a server answers HTTP at ``base_url``; otherwise why not, in words (a
    :class:`Silent` when something listens but does not answer within ``timeout``: the timings'
    ``http.probe_s``; a loaded server answers in milliseconds, one that never answers is not serving)."""
    url = base_url.rstrip("/") + "/v1/models"
    t = aiohttp.ClientTimeout(total=timeout, sock_connect=min(timeout, 5.0))
    try:
        async with aiohttp.ClientSession(timeout=t) as session, session.get(url) as resp:
            resp.release()
            return None
    except aiohttp.ClientConnectorError as exc:
        os_err = exc.os_error
        return f"connection failed: {os_err.strerror if os_err and os_err.strerror else exc}"
    except aiohttp.ServerDisconnectedError:
        # over an SSH forward a refused connection on the host shows as a connection closed at once
        return "the connection was closed without an answer"
    except TimeoutError:
        return Silent(f"it accepts connections but gave no answer within {timeout:g}s")
    except aiohttp.ClientError as exc:
        return f"{type(exc).__name__}: {exc}"
