"""``eagletui serve`` without a browser: what it refuses, the token on every URL, the headers, the
page's URLs (all relative), and what a tab's socket gets without the token. A real server process
and real HTTP requests."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from eagletui.commands.serve import loopback
from tests.browser import ROOT, Serve


def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


def _serve_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eagletui", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


@pytest.mark.slow
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "gpu-host.example"])
def test_refuses_to_listen_beyond_loopback_without_the_flag(host: str) -> None:
    r = _serve_cli("--host", host, "replay", "demo-eagle3")
    assert r.returncode == 2
    assert "beyond loopback" in r.stderr and "--allow-remote" in r.stderr
    assert "http://" not in r.stdout  # nothing was served


def test_loopback_addresses() -> None:
    assert all(loopback(h) for h in ("127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost"))
    assert not any(loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.org", ""))


@pytest.mark.slow
def test_a_bad_command_is_refused_in_the_terminal_before_listening() -> None:
    r = _serve_cli("replay", "no-such-session")
    assert r.returncode == 2
    assert "no session 'no-such-session'" in r.stderr
    r = _serve_cli("replay", "demo-eagle3", "--follow")
    assert r.returncode == 2 and "--follow" in r.stderr
    r = _serve_cli("top")
    assert r.returncode == 2 and "invalid choice" in r.stderr


@pytest.fixture
def server(tmp_path: Path):
    s = Serve(["replay", "demo-eagle3", "--speed", "instant"], tmp_path)
    yield s
    s.stop()
    assert s.proc.returncode == 0


@pytest.mark.slow
def test_every_url_needs_the_token(server: Serve) -> None:
    base = f"http://127.0.0.1:{server.port}"
    token = server.path.strip("/")
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", token), "the token is 24 random bytes, URL-safe"
    other = "y" if token.endswith("x") else "x"  # a wrong last character, whatever the token's is
    for path in ("/", "/ws", "/static/textual.js", "/visits.json", f"/{token[:-1]}{other}/", f"/x{token}/"):
        status, _h, body = _get(base + path)
        assert status == 404, path
        assert b"access token" in body
    status, headers, _ = _get(f"{base}/{token}")
    assert status == 302 and headers["Location"] == f"{token}/"  # relative: a proxy's path stays
    status, _h, _ = _get(f"{base}/{token}/static/../visits.json")
    assert status in (200, 404)  # normalised by the client or refused, never a file outside static
    status, _h, _ = _get(f"{base}/{token}/static/app_index.html")
    assert status == 404  # only the listed files


@pytest.mark.slow
def test_the_page_uses_relative_urls_and_forbids_other_origins(server: Serve) -> None:
    status, headers, body = _get(server.url)
    assert status == 200
    page = body.decode()
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp and "font-src 'self'" in csp
    assert headers["Referrer-Policy"] == "no-referrer" and headers["X-Frame-Options"] == "DENY"
    assert "127.0.0.1" not in page and str(server.port) not in page
    assert not re.search(r"""(src|href)=["'](https?:|//|/)""", page), "an absolute URL in the page"
    assert "googleapis" not in page
    for name in ("textual.js", "xterm.css", "eagletui.css", "eagletui.js", "RobotoMono.ttf"):
        status, headers, data = _get(server.url + "static/" + name)
        assert status == 200 and data, name
        assert b"fonts.googleapis" not in data and b"fonts.gstatic" not in data, name


@pytest.mark.slow
def test_the_title_is_escaped(tmp_path: Path) -> None:
    s = Serve(["--title", "<script>x</script>", "replay", "demo-eagle3"], tmp_path)
    try:
        _status, _h, body = _get(s.url)
        assert b"<script>x</script>" not in body and b"&lt;script&gt;" in body
    finally:
        s.stop()


@pytest.mark.slow
def test_a_websocket_without_the_token_is_refused(server: Serve) -> None:
    import asyncio

    import aiohttp

    async def attempt(path: str) -> int:
        async with aiohttp.ClientSession() as session:
            try:
                async with session.ws_connect(f"ws://127.0.0.1:{server.port}{path}"):
                    return 101
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status

    assert asyncio.run(attempt("/ws")) == 404
    assert asyncio.run(attempt("/not-the-token/ws")) == 404
    assert server.visits()["visits"] == []  # no app was started for them


@pytest.mark.slow
def test_a_websocket_from_another_origin_is_refused(server: Serve) -> None:
    # a page on another site that learned the URL cannot open a tab: browsers send Origin on every
    # websocket handshake, and a websocket is not bound by the same-origin policy
    import asyncio

    import aiohttp

    url = f"ws://127.0.0.1:{server.port}{server.path}ws"

    async def attempt(headers: dict[str, str]) -> int:
        async with aiohttp.ClientSession() as session:
            try:
                async with session.ws_connect(url, headers=headers, origin=headers.get("Origin")):
                    return 101
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status

    for origin in ("http://evil.example", f"http://127.0.0.1:{server.port + 1}", "null", "file://"):
        assert asyncio.run(attempt({"Origin": origin})) == 403, origin
    assert server.visits()["visits"] == []  # no app was started for them
    assert asyncio.run(attempt({"Origin": f"http://127.0.0.1:{server.port}"})) == 101
    # behind a reverse proxy the browser's address is the forwarded host
    proxied = {"Origin": "https://tune.example", "X-Forwarded-Host": "tune.example"}
    assert asyncio.run(attempt(proxied)) == 101


@pytest.mark.slow
def test_tabs_are_capped_and_the_next_one_gets_a_page_that_says_so(tmp_path: Path) -> None:
    """Issue 33 item 11: ten tabs were ten eagletui processes (about 280 MB) with no cap. A real
    server with ``--max-tabs 1``, a real tab (websocket) holding its app, then a second tab."""
    import asyncio

    import aiohttp

    s = Serve(["--max-tabs", "1", "replay", "demo-eagle3", "--speed", "instant"], tmp_path)
    try:

        async def tabs() -> tuple[int, bytes, str, int]:
            ws_url = f"ws://127.0.0.1:{s.port}{s.path}ws?width=80&height=24"
            origin = {"Origin": f"http://127.0.0.1:{s.port}"}
            async with aiohttp.ClientSession() as session:
                async with session.ws_connect(ws_url, headers=origin) as first:
                    await first.receive(timeout=30)  # its app draws: the tab is open
                    async with session.get(s.url) as r:
                        status, page = r.status, await r.text()
                    async with session.ws_connect(ws_url, headers=origin) as second:
                        said = await second.receive(timeout=30)
                again = 0
                for _ in range(100):  # the first tab's app quits, then its place is free
                    async with session.get(s.url) as r:
                        again = r.status
                    if again == 200:
                        break
                    await asyncio.sleep(0.2)
            return status, said.data, page, again

        status, said, page, again = asyncio.run(tabs())
        assert status == 503 and "all 1 tab(s) this server allows are open" in page and "--max-tabs 1" in page
        assert b"close one, then reload" in said
        assert again == 200
    finally:
        s.stop()
