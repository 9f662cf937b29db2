"""The HTTP side of ``eagletui serve``: one page, its static files and one websocket per tab, all
behind an access token in the path.

Every URL lives under ``/<token>/``: the page, ``static/…`` and ``ws``. A request without the token
(or with a wrong one) gets a 404 that says what is missing, and the comparison is constant-time. The
token in the path rather than a query or a cookie means the page can use relative URLs only — the
browser resolves them against whatever address it used (an ``ssh -L`` port, a reverse proxy's path),
so the server never writes a host, port or scheme into the page (textual-serve's ``public_url``
does, which is what breaks a tunnel on another port) — and no cookie is shared with other services
on ``localhost``. Responses forbid framing, referrers and caching, and the content security policy
allows nothing but this origin: the stock textual-serve page's web font from an outside host is
replaced by the copy textual-serve ships, served from here.

The front end (``textual.js``, ``xterm.css``, the Roboto Mono font) is textual-serve's; the process
behind each tab is :class:`~eagletui.web.appproc.AppProcess`; who gets control is
:class:`~eagletui.web.floor.Floor`'s decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from eagletui.web.appproc import AppProcess
from eagletui.web.floor import Floor, HandoverTimeout
from eagletui.web.heartbeat import TabHeartbeat, watch_tab
from eagletui.web.page import DEFAULT_MAX_TABS, full_page, render_page, tabs_full

log = logging.getLogger("eagletui.serve")

#: No request, script, style, font or frame from anywhere but this origin. Styles may be inline:
#: xterm.js sets them from script.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
}
#: A tab's messages are keys, mouse and resizes: tiny. Anything past this is not a tab.
MAX_WS_MESSAGE = 256 * 1024
MAX_TERMINAL = 1000  # columns or rows a tab may ask for

NO_TOKEN = (
    "eagletui serve: not found. Open the URL that 'eagletui serve' printed: it holds the access token.\n"
)


def static_files() -> dict[str, tuple[Path, str]]:
    """Served name → (file, content type): textual-serve's front end and eagletui's page files."""
    import textual_serve

    ts = Path(textual_serve.__file__).resolve().parent / "static"
    ours = Path(str(files("eagletui.web").joinpath("static")))
    return {
        "textual.js": (ts / "js" / "textual.js", "text/javascript"),
        "xterm.css": (ts / "css" / "xterm.css", "text/css"),
        "RobotoMono.ttf": (ts / "fonts" / "RobotoMono-VariableFont_wght.ttf", "font/ttf"),
        "RobotoMono-Italic.ttf": (ts / "fonts" / "RobotoMono-Italic-VariableFont_wght.ttf", "font/ttf"),
        "eagletui.js": (ours / "eagletui.js", "text/javascript"),
        "eagletui.css": (ours / "eagletui.css", "text/css"),
    }


def foreign_origin(request: web.Request) -> str:
    """Why a websocket from another site is refused ("" when it is not).

    Browsers send ``Origin`` on every websocket handshake and never let a page forge it, but a
    websocket is not bound by the same-origin policy: without this check a page elsewhere that
    learned the URL (a shared screenshot, a browser history sync) could drive the UI from its own
    origin. The origin's host and port must be the address the browser asked for (``Host``, or the
    ``X-Forwarded-Host`` a reverse proxy sets). A client that sends no Origin (a script, ``curl``) is
    not a browser page and holds the token already."""
    origin = request.headers.get("Origin")
    if origin is None:
        return ""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(origin)
        netloc = parts.netloc.lower()
    except ValueError:
        netloc, parts = "", None
    allowed = {request.host.lower()} if request.host else set()
    for fwd in request.headers.getall("X-Forwarded-Host", []):
        allowed.update(h.strip().lower() for h in fwd.split(",") if h.strip())
    if parts is not None and parts.scheme in ("http", "https") and netloc in allowed:
        return ""
    shown = origin.encode("ascii", "backslashreplace").decode()[:200]
    return f"a tab from origin {shown!r} is not this server's page ({', '.join(sorted(allowed)) or 'no Host'})"


def _int_in(value: Any, default: int) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return default
    return n if 1 <= n <= MAX_TERMINAL else default


class WebServer:
    """The aiohttp application for one served session."""

    def __init__(self, floor: Floor, *, token: str, title: str, max_tabs: int = DEFAULT_MAX_TABS) -> None:
        self.floor = floor
        #: tabs open at once: each is an eagletui process (about 28 MB); the next one gets a page
        #: that says so instead of a process
        self.max_tabs = max_tabs
        self._tabs = 0
        self.token = token
        self.title = title
        self.static = static_files()
        self.apps: set[AppProcess] = set()
        self._prefix = f"/{token}/"

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._headers], client_max_size=64 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_shutdown.append(self._on_shutdown)
        return app

    @web.middleware
    async def _headers(self, request: web.Request, handler: Any) -> web.StreamResponse:
        response = await handler(request)
        if not response.prepared:  # a websocket is prepared already
            response.headers.update(HEADERS)
        return response

    def _authorised(self, path: str) -> str | None:
        """The rest of the path after ``/<token>/``, or None when the token is missing or wrong."""
        segment, _, rest = path.lstrip("/").partition("/")
        if not hmac.compare_digest(segment.encode(), self.token.encode()):
            return None
        return rest if path.startswith(self._prefix) else ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        rest = self._authorised(request.path)
        if rest is None:
            return web.Response(status=404, text=NO_TOKEN)
        if not request.path.startswith(self._prefix):  # /<token> without its slash
            # relative, so a reverse proxy's path stays in front of it
            return web.Response(status=302, headers={"Location": f"{self.token}/"})
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, text="eagletui serve: only GET\n")
        if rest == "" and self._tabs >= self.max_tabs:
            return web.Response(status=503, text=full_page(self.max_tabs), content_type="text/html")
        if rest == "":
            size = _int_in(request.query.get("fontsize"), 16)
            return web.Response(text=render_page(self.title, size), content_type="text/html")
        if rest == "ws":
            refused = foreign_origin(request)
            if refused:
                log.warning("refused a tab: %s", refused)
                return web.Response(status=403, text=f"eagletui serve: {refused}\n")
            return await self.handle_websocket(request)
        if rest == "visits.json":
            return web.Response(text=json.dumps(self.floor.state()), content_type="application/json")
        if rest.startswith("static/"):
            found = self.static.get(rest.removeprefix("static/"))
            if found is not None:
                path, content_type = found
                return web.FileResponse(path, headers={"Content-Type": content_type})
        return web.Response(status=404, text="eagletui serve: no such page\n")

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
        # no aiohttp heartbeat (it drops a tab whose one pong is 7.5 s late): web/heartbeat.py's rule,
        # so pings and pongs reach the reader (autoping off) and count as the tab's answers
        ws = web.WebSocketResponse(autoping=False, max_msg_size=MAX_WS_MESSAGE)
        if self._tabs >= self.max_tabs:  # (counted before any await: two arrivals cannot both pass)
            await ws.prepare(request)
            await ws.send_bytes(f"eagletui serve: {tabs_full(self.max_tabs)}\r\n".encode())
            await ws.close()
            return ws
        self._tabs += 1
        try:
            return await self._tab(request, ws)
        finally:
            self._tabs -= 1

    async def _tab(self, request: web.Request, ws: web.WebSocketResponse) -> web.StreamResponse:
        """One tab's life: its app started, fed and stopped."""
        await ws.prepare(request)
        width = _int_in(request.query.get("width"), 80)
        height = _int_in(request.query.get("height"), 24)
        try:
            visit = await self.floor.arrive()
        except HandoverTimeout as exc:
            await ws.send_bytes(f"eagletui serve: {exc}; reload to try again\r\n".encode())
            await ws.close()
            return ws
        proc = AppProcess(
            self.floor.argv(visit),
            self.floor.env(visit),
            send_bytes=ws.send_bytes,
            close=ws.close,
            timings=self.floor.timings,
        )
        self.apps.add(proc)
        try:
            await proc.start(width, height)
            visit.pid = proc.pid
            self.floor.publish()
            log.info("tab #%d: %s (pid %s)", visit.number, visit.role, proc.pid)
            lost = await self._attend(ws, proc)
            if lost:
                log.warning("tab #%d: %s", visit.number, lost)
            elif ws.exception() is not None:
                log.warning("tab #%d: its connection failed: %s", visit.number, ws.exception())
            else:
                ended = "its app ended" if proc.returncode is not None else "the browser closed it"
                log.info("tab #%d: %s (websocket code %s)", visit.number, ended, ws.close_code)
        except Exception as exc:  # the tab must not take the server down
            log.error("tab #%d: %s", visit.number, exc)
        finally:
            self.floor.leaving(visit)
            await proc.stop()
            self.apps.discard(proc)
            self.floor.left(visit)
            if not proc.started and proc.stderr_tail:
                tail = proc.stderr_tail.decode("utf-8", errors="replace").strip().splitlines()[-5:]
                log.error("tab #%d: the app did not start: %s", visit.number, " | ".join(tail))
            log.info("tab #%d: closed (exit %s)", visit.number, proc.returncode)
            with contextlib.suppress(Exception):
                await ws.close()
        return ws

    async def _attend(self, ws: web.WebSocketResponse, proc: AppProcess) -> str:
        """The tab's input pumped to its app while its heartbeat is watched, until the socket closes
        ("") or the tab stops answering pings (why)."""
        heartbeat = TabHeartbeat(self.floor.timings.session.web_ping_misses)
        pump = asyncio.ensure_future(self._pump_input(ws, proc, heartbeat))
        watch = asyncio.ensure_future(watch_tab(ws, heartbeat, self.floor.timings))
        try:
            await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
            if pump.done():
                pump.result()  # a failure of the pump is the tab's failure
                return ""
            return watch.result()
        finally:
            for task in (pump, watch):
                task.cancel()
            await asyncio.gather(pump, watch, return_exceptions=True)

    async def _pump_input(self, ws: web.WebSocketResponse, proc: AppProcess, heartbeat: TabHeartbeat) -> None:
        """The tab's keys, mouse and size go to its app; a ping is answered; anything the tab sends
        tells the heartbeat it is there."""
        async for message in ws:
            heartbeat.heard()
            if message.type == WSMsgType.PING:
                await ws.pong(message.data)
                continue
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await proc.send_input(data)
            elif kind == "resize" and isinstance(data, dict):
                await proc.resize(_int_in(data.get("width"), 80), _int_in(data.get("height"), 24))
            elif kind == "ping":
                await ws.send_json(["pong", data if isinstance(data, str | int | float) else None])
            elif kind in ("focus", "blur"):
                await proc.send_meta({"type": kind})

    async def _on_shutdown(self, _app: web.Application) -> None:
        """The server stops: every tab's app quits (the demo's simulator with it), in parallel."""
        await self.stop_all()

    async def stop_all(self) -> None:
        apps = list(self.apps)
        if apps:
            await asyncio.gather(*(p.stop() for p in apps), return_exceptions=True)


async def serve(
    floor: Floor,
    *,
    token: str,
    title: str,
    host: str,
    port: int,
    stop: asyncio.Event,
    ready: Any = None,
    max_tabs: int = DEFAULT_MAX_TABS,
) -> None:
    """Listen until ``stop`` is set; ``ready(port)`` is called once listening (the port may be 0)."""
    server = WebServer(floor, token=token, title=title, max_tabs=max_tabs)
    runner = web.AppRunner(server.make_app(), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host=host, port=port, reuse_address=False)
        await site.start()
        sockets: Sequence[Any] = getattr(site._server, "sockets", None) or []
        bound = sockets[0].getsockname()[1] if sockets else port
        if ready is not None:
            ready(bound)
        await stop.wait()
        await server.stop_all()
    finally:
        await runner.cleanup()
