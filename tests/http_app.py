"""A real aiohttp server on a free loopback port, for tests that need a server answering one way."""

from __future__ import annotations

from aiohttp import web


async def serve_app(app: web.Application) -> tuple[web.AppRunner, str]:
    """Serve ``app`` on 127.0.0.1 at a port the kernel picks: its runner (``cleanup()`` ends it) and URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"
