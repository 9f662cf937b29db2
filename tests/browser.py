"""What the browser tests stand on: a real ``eagletui serve`` process, Debian's Chromium driven by
playwright, a TCP forwarder (an ``ssh -L`` on another port), a path-prefix reverse proxy, and ways
to look at a terminal that draws on canvas: the text of the screen updates the page received (a
WebSocket wrapper installed before the page's scripts), screenshots decoded to pixels, and the
owner's feed folded into a session model.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import urllib.request
import weakref
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CHROMIUM = os.environ.get("EAGLETUI_CHROMIUM", "/usr/bin/chromium")
#: Headless, nothing phoned home; and no name resolves but loopback's, so a request for an outside
#: host is recorded (by the test) but never leaves the machine.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
]
VIEWPORT = {"width": 1400, "height": 900}
ROOT = Path(__file__).resolve().parent.parent


def need_browser() -> None:
    """Skip where there is no Chromium or playwright, except in CI (``.ci/run`` installs both)."""
    missing = []
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing.append("playwright (pip install -e '.[test]')")
    if missing:
        if os.environ.get("CI"):
            pytest.fail("browser tests need " + ", ".join(missing))
        pytest.skip("needs " + ", ".join(missing))


# -- the server --------------------------------------------------------------------------------------


class Serve:
    """``eagletui serve --port 0 ARGS…`` in its own process group; ``url`` is the printed URL."""

    def __init__(self, args: list[str], tmp: Path, env: dict[str, str] | None = None) -> None:
        self.home = tmp / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ if env is None else env)
        env.update(
            EAGLETUI_CONFIG_DIR=str(tmp / "config"),
            XDG_DATA_HOME=str(tmp / "data"),
            XDG_CONFIG_HOME=str(tmp / "xdg-config"),
        )
        env.pop("TEXTUAL_DRIVER", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "eagletui", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        self.url = ""
        self.banner: list[str] = []
        self.log = ""  # its stderr, once stopped
        deadline = time.monotonic() + 60
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.banner.append(line)
            m = re.search(r"open (http://127\.0\.0\.1:\d+/\S+/)", line)
            if m:
                self.url = m.group(1)
                break
        if not self.url:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            self.proc.kill()
            raise AssertionError(f"eagletui serve printed no URL: {self.banner} {err}")
        parts = urlsplit(self.url)
        self.port = int(parts.port or 0)
        self.path = parts.path  # /<token>/

    def visits(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "visits.json", timeout=10) as r:
            return json.loads(r.read())

    def stop(self, timeout: float = 60) -> str:
        """SIGINT (Ctrl+C) and wait; returns its stderr. Kills the group if it does not stop."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
                raise AssertionError("eagletui serve did not stop on SIGINT") from None
        if self.proc.stderr is not None and not self.proc.stderr.closed:
            self.log += self.proc.stderr.read()
            self.proc.stderr.close()
        return self.log


def alive(pid: int | None) -> bool:
    """The process exists and is not a zombie."""
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


async def wait_for(predicate: Any, what: str, timeout: float = 30.0, every: float = 0.2) -> Any:
    """Poll ``predicate`` (sync or async) until truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(every)


# -- the network between the browser and the server --------------------------------------------------


class Forwarder:
    """A local TCP forwarder: 127.0.0.1:``port`` → 127.0.0.1:``target`` (what ``ssh -L`` gives).

    It runs on a thread with an event loop of its own, as ``ssh -L`` is a process of its own: on the
    test's loop, every second the test spent computing (decoding two screenshots took 36 s on a loaded
    machine) was a second the tunnel carried nothing, not even the browser's answers to the server's
    pings."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self.connections = 0
        self._server: asyncio.AbstractServer | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="forwarder", daemon=True)

    def _on_own_loop(self, coro: Any) -> Any:
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def __aenter__(self) -> Forwarder:
        self._thread.start()
        self._server = await self._on_own_loop(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        server = self._server

        async def close() -> None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
            pipes = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in pipes:
                t.cancel()
            await asyncio.gather(*pipes, return_exceptions=True)

        try:
            await self._on_own_loop(close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                with contextlib.suppress(Exception):
                    w.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))


class PrefixProxy:
    """A reverse proxy serving the upstream under ``/eagle/`` (the prefix stripped), HTTP and
    websockets: what nginx's ``location /eagle/ { proxy_pass http://127.0.0.1:PORT/; }`` does."""

    PREFIX = "/eagle/"

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self.paths: list[str] = []
        self._runner: Any = None

    async def __aenter__(self) -> PrefixProxy:
        from aiohttp import web

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()

    async def _handle(self, request: Any) -> Any:
        import aiohttp
        from aiohttp import web

        self.paths.append(request.path_qs)
        if not request.path.startswith(self.PREFIX):
            return web.Response(status=404, text="proxy: not under /eagle/")
        upstream = f"http://127.0.0.1:{self.target}/{request.path_qs[len(self.PREFIX) :]}"
        async with aiohttp.ClientSession() as session:
            if request.headers.get("Upgrade", "").lower() == "websocket":
                down = web.WebSocketResponse()
                await down.prepare(request)
                async with session.ws_connect(upstream.replace("http://", "ws://", 1)) as up:

                    async def to_up() -> None:
                        async for msg in down:
                            if msg.type == aiohttp.WSMsgType.TEXT:
                                await up.send_str(msg.data)
                        await up.close()

                    async def to_down() -> None:
                        async for msg in up:
                            if msg.type == aiohttp.WSMsgType.BINARY:
                                await down.send_bytes(msg.data)
                            elif msg.type == aiohttp.WSMsgType.TEXT:
                                await down.send_str(msg.data)
                        await down.close()

                    await asyncio.gather(to_up(), to_down(), return_exceptions=True)
                return down
            async with session.get(upstream, allow_redirects=False) as r:
                body = await r.read()
                keep = {k: v for k, v in r.headers.items() if k.lower() in ("content-type", "location")}
                keep.update({k: v for k, v in r.headers.items() if k.lower().startswith("content-security")})
                return web.Response(status=r.status, body=body, headers=keep)


# -- looking at a canvas terminal --------------------------------------------------------------------

#: Installed before the page's scripts: keeps the text of every screen update the page receives.
WS_TAP = """
(() => {
  const Real = window.WebSocket;
  window.__screen = [];
  window.__sockets = [];
  function Tapped(url, protocols) {
    const ws = protocols === undefined ? new Real(url) : new Real(url, protocols);
    window.__sockets.push(url);
    ws.addEventListener("message", (e) => {
      if (typeof e.data !== "string") { window.__screen.push(new TextDecoder().decode(e.data)); }
    });
    return ws;
  }
  Tapped.prototype = Real.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) { Tapped[k] = Real[k]; }
  window.WebSocket = Tapped;
})();
"""
_ANSI = re.compile(
    r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)"
)


async def screen_text(page: Any, since: int = 0) -> str:
    """The text the page's terminal was sent (escape sequences removed), from update ``since`` on."""
    chunks = await page.evaluate(f"window.__screen.slice({int(since)})")
    return _ANSI.sub("", "".join(chunks))


async def updates(page: Any) -> int:
    return int(await page.evaluate("window.__screen.length"))


async def new_page(context: Any, url: str) -> Any:
    page = await context.new_page()
    await page.goto(url)
    return page


async def drawn(page: Any, what: str = "eagletui", timeout: float = 60) -> None:
    """The splash is gone and the terminal has drawn ``what``."""
    await wait_for(
        lambda: page.evaluate("document.body.classList.contains('-first-byte')"), "the first screen", timeout
    )
    await wait_for(lambda: _contains(page, what), f"{what!r} on the screen", timeout)


async def _contains(page: Any, text: str, since: int = 0) -> bool:
    return text in await screen_text(page, since)


async def shows(page: Any, text: str, since: int = 0, timeout: float = 30) -> None:
    await wait_for(lambda: _contains(page, text, since), f"{text!r} on the screen", timeout)


_focused: weakref.WeakSet[Any] = weakref.WeakSet()


async def press(page: Any, key: str, *, click: bool = True) -> int:
    """Click the terminal (as a user would; the page focuses it on load too), then press; returns the
    update count before the key, for :func:`shows` ``since``. ``click=False``: the key alone."""
    before = await updates(page)
    if click and page not in _focused:  # once: more clicks would count as double clicks and select text
        await page.mouse.click(VIEWPORT["width"] // 2, VIEWPORT["height"] // 2)
        _focused.add(page)
    await page.keyboard.press(key)
    return before


# -- screenshots as pixels ---------------------------------------------------------------------------


def png_pixels(data: bytes) -> tuple[int, int, int, bytes]:
    """``(width, height, bytes per pixel, raw rows)`` of an 8-bit RGB/RGBA non-interlaced PNG (what
    Chromium writes); enough to compare two screenshots without an image library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    height = bpp = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format"
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = bytearray(height * stride)
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 0xFF
            elif f == 2:
                line[x] = (line[x] + b) & 0xFF
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        out[y * stride : (y + 1) * stride] = line
        prev = line
    return width, height, bpp, bytes(out)


def changed_fraction(
    before: bytes, after: bytes, box: tuple[float, float, float, float] = (0, 0, 1, 1)
) -> float:
    """The share of pixels that differ inside ``box`` (fractions of width and height: x0, y0, x1, y1),
    sampled every 4th pixel each way."""
    w, h, bpp, a = png_pixels(before)
    w2, h2, bpp2, b = png_pixels(after)
    assert (w, h, bpp) == (w2, h2, bpp2), "screenshots of different sizes"
    x0, y0, x1, y1 = int(box[0] * w), int(box[1] * h), int(box[2] * w), int(box[3] * h)
    differ = total = 0
    for y in range(y0, y1, 4):
        row = y * w * bpp
        for x in range(x0, x1, 4):
            i = row + x * bpp
            total += 1
            if a[i : i + 3] != b[i : i + 3]:
                differ += 1
    return differ / max(1, total)


def save_screenshot(data: bytes, name: str, tmp: Path) -> Path:
    """Into ``tmp``; with ``EAGLETUI_SCREENSHOTS=DIR`` also into DIR (how docs/ gets its pictures)."""
    path = tmp / name
    path.write_bytes(data)
    out = os.environ.get("EAGLETUI_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(out) / name)
    return path


# -- the server side ---------------------------------------------------------------------------------


def fold_feed(path: str | Path) -> Any:
    """The owner's feed folded into a fresh session model: the state every tab is drawn from."""
    from eagletui.session.feed import FeedControl, FeedFollower
    from eagletui.session.model import SessionModel

    follower = FeedFollower(path)
    header = follower.open()
    model = SessionModel(target=str(header.get("target", "")), learn_history=False)
    try:
        while items := follower.read(10_000):
            for item in items:
                if isinstance(item, FeedControl):
                    if item.kind == "reset":
                        model.reset()
                else:
                    model.dispatch(item)
    finally:
        follower.close()
    model.ended = follower.ended  # type: ignore[attr-defined]
    return model
