"""SSH transport on asyncssh, behaving like OpenSSH where users will notice the difference.

``~/.ssh/config`` (aliases, HostName, User, Port, IdentityFile, ProxyJump), the agent and the default
keys all apply, because people tune servers they already reach with ``ssh gpu-box``. Host keys are
checked against known_hosts with OpenSSH's policy: unknown keys are shown and confirmed (or accepted
when asked to), changed keys are refused. asyncssh has no reconnect of its own, so the transport
reconnects lazily on the next call after a drop; long-lived users (the tail) drive the backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator
from typing import Any

import asyncssh

from eagletui.core.events import ConnectionState
from eagletui.core.timings import REAL, Timings
from eagletui.remote.transport import (
    AuthFailed,
    CommandResult,
    ConnectionLost,
    HostKeyChanged,
    HostKeyRejected,
    SSHOptions,
    StateCallback,
    TransportError,
    command_line,
)

#: Receive window of a streamed command (the log tail): how much the host may send ahead of what we
#: have read. asyncssh's 2 MiB default took peak RSS from 53 to 195 MB on a 1 M-line burst (packets
#: in flight and the heap they fragment); 512 KiB: 65 MB at the same lines/s on a local link. The
#: cost is a ceiling of window / RTT (10 MB/s, ~80,000 log lines/s at 50 ms), ample for a log.
STREAM_WINDOW = 512 * 1024

_TARGET_RE = re.compile(r"^(?:(?P<user>[^@\s]+)@)?(?P<host>\[[^\]]+\]|[^:@\s]+)(?::(?P<port>\d+))?$")


def parse_target(target: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` (IPv6 in brackets) → (user, host, port); a bare name may be a config alias."""
    m = _TARGET_RE.match(target.strip())
    if not m:
        raise ValueError(
            f"not an SSH target: {target!r} (expected [user@]host[:port] or an ~/.ssh/config alias)"
        )
    host = m.group("host").strip("[]")
    port = int(m.group("port")) if m.group("port") else None
    return m.group("user"), host, port


class _Client(asyncssh.SSHClient):
    """Records what authentication did, so a failure can say which methods were tried."""

    def __init__(self, on_lost: Any = None):
        self.conn: asyncssh.SSHClientConnection | None = None
        self.tried: list[str] = []
        self.offered: list[str] = []
        self.on_lost = on_lost

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self.conn = conn

    def connection_lost(self, exc: Exception | None) -> None:
        if self.on_lost is not None:
            self.on_lost(self.conn, exc)

    def _note(self, method: str) -> None:
        if method not in self.tried:
            self.tried.append(method)
        with contextlib.suppress(Exception):
            assert self.conn is not None
            remaining = list(self.conn.get_server_auth_methods())
            self.offered = list(dict.fromkeys([method, *self.offered, *remaining]))

    def public_key_auth_requested(self) -> None:
        self._note("publickey")
        return None

    def kbdint_auth_requested(self) -> None:
        self._note("keyboard-interactive")
        return None

    def password_auth_requested(self) -> None:
        self._note("password")
        return None


class SSHTransport:
    def __init__(
        self,
        target: str,
        options: SSHOptions | None = None,
        *,
        on_state: StateCallback | None = None,
        timings: Timings = REAL,
    ):
        self.target = target
        self.user, self.host, self.port = parse_target(target)
        self.options = options = options or SSHOptions()
        self.accept_new_host_key = options.accept_new_host_key
        self.known_hosts = os.path.expanduser(options.known_hosts or "~/.ssh/known_hosts")
        self.config_file = options.config_file
        self.on_state = on_state
        self.ask_host_key = options.ask_host_key
        self.timings = timings
        self.keepalive_interval = timings.link.keepalive_s
        self.keepalive_count_max = timings.link.keepalive_count
        self.connect_timeout = timings.link.connect_s
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._forwards: dict[tuple[str, int], int] = {}  # (host, remote port) → local port
        self._listeners: dict[tuple[str, int], asyncssh.SSHListener] = {}

    # ----------------------------------------------------------------- connection

    def _state(self, state: str, detail: str = "", retry_in: float | None = None) -> None:
        if self.on_state is not None:
            self.on_state(ConnectionState(state=state, target=self.target, detail=detail, retry_in=retry_in))

    def _base_options(self) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if self.config_file:
            kw["config"] = [self.config_file]
        if self.port is not None:
            kw["port"] = self.port
        if self.user is not None:
            kw["username"] = self.user
        return kw

    def _known_hosts_arg(self) -> Any:
        if os.path.exists(self.known_hosts):
            return self.known_hosts
        return asyncssh.import_known_hosts("")  # no file yet: nothing is trusted

    def _on_lost(self, conn: Any, exc: Exception | None) -> None:
        if conn is not None and conn is self._conn:
            self._conn = None
            if not self._closed:
                self._state("lost", str(exc) if exc else "connection closed")

    async def _connect_once(self, client: _Client) -> asyncssh.SSHClientConnection:
        conn = await asyncssh.connect(
            self.host,
            known_hosts=self._known_hosts_arg(),
            keepalive_interval=self.keepalive_interval,
            keepalive_count_max=self.keepalive_count_max,
            connect_timeout=self.connect_timeout,
            client_factory=lambda: client,
            **self._base_options(),
        )
        return conn

    async def connect(self) -> None:
        async with self._lock:
            await self._connect_locked()

    async def _connect_locked(self) -> asyncssh.SSHClientConnection:
        self._state("connecting")
        client = _Client(self._on_lost)
        try:
            try:
                conn = await self._connect_once(client)
            except asyncssh.HostKeyNotVerifiable:
                await self._verify_unknown_host()
                client = _Client(self._on_lost)
                conn = await self._connect_once(client)
        except asyncssh.PermissionDenied as exc:
            err = AuthFailed(self.target, self._username(), self._tried(client), client.offered, exc.reason)
            self._state("lost", str(err))
            raise err from None
        except asyncssh.HostKeyNotVerifiable as exc:
            self._state("lost", str(exc))
            raise HostKeyChanged(self.target, "unknown", self.known_hosts) from None
        except (OSError, asyncssh.Error) as exc:
            self._state("lost", str(exc))
            raise ConnectionLost(f"cannot connect to {self.target}: {exc}") from None
        self._conn = conn
        self._state("connected")
        await self._restore_forwards(conn)
        return conn

    def _username(self) -> str:
        if self.user:
            return self.user
        with contextlib.suppress(Exception):
            opts = asyncssh.SSHClientConnectionOptions(host=self.host, **self._base_options())
            return str(opts.username)
        return os.environ.get("USER", "?")

    def _tried(self, client: _Client | None) -> list[str]:
        tried = list(client.tried) if client else []
        if "publickey" in tried:
            sources = []
            if os.environ.get("SSH_AUTH_SOCK"):
                sources.append("agent")
            sources.append("IdentityFile/default keys")
            tried[tried.index("publickey")] = f"publickey ({', '.join(sources)})"
        return tried

    async def _verify_unknown_host(self) -> None:
        """OpenSSH's policy: a known host with a different key is refused; an unknown one is confirmed."""
        opts = asyncssh.SSHClientConnectionOptions(host=self.host, **self._base_options())
        real_host = getattr(opts, "host_key_alias", None) or getattr(opts, "host", None) or self.host
        port = int(getattr(opts, "port", None) or 22)
        key = await asyncssh.get_server_host_key(self.host, **_key_probe_options(self._base_options()))
        if key is None:
            raise ConnectionLost(f"{self.target}: server presented no host key")
        fingerprint = key.get_fingerprint("sha256")
        name = real_host if port == 22 else f"[{real_host}]:{port}"
        if os.path.exists(self.known_hosts):
            kh = asyncssh.read_known_hosts(self.known_hosts)
            addr = real_host if re.match(r"^[\d.:a-fA-F]+$", real_host) else ""
            trusted = kh.match(real_host, addr, port)[0]
            if trusted and all(k.public_data != key.public_data for k in trusted):
                raise HostKeyChanged(name, fingerprint, self.known_hosts)
        accepted = self.accept_new_host_key
        if not accepted and self.ask_host_key is not None:
            accepted = await self.ask_host_key(name, fingerprint)
        if not accepted:
            raise HostKeyRejected(name, fingerprint)
        os.makedirs(os.path.dirname(self.known_hosts) or ".", mode=0o700, exist_ok=True)
        line = f"{name} {key.export_public_key('openssh').decode().strip()}\n"
        with open(self.known_hosts, "a", encoding="utf-8") as f:
            f.write(line)
        self._state("connecting", f"added {name} ({fingerprint}) to {self.known_hosts}")

    async def _ensure(self) -> asyncssh.SSHClientConnection:
        if self._closed:
            raise ConnectionLost(f"{self.target}: transport closed")
        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            return await self._connect_locked()

    def _drop(self, conn: asyncssh.SSHClientConnection | None) -> None:
        if conn is not None and conn is self._conn:
            self._conn = None
            conn.abort()
            self._state("lost", "connection dropped")

    # ------------------------------------------------------------------- commands

    async def run(
        self, argv: list[str] | str, *, timeout: float | None = None, input: str | None = None
    ) -> CommandResult:
        timeout = self.timings.link.command_s if timeout is None else timeout
        conn = await self._ensure()
        try:
            res = await conn.run(command_line(argv), input=input, timeout=timeout, check=False)
        except asyncssh.TimeoutError as exc:
            raise TimeoutError(f"{self.target}: command timed out after {timeout}s") from exc
        except (asyncssh.ChannelOpenError, asyncssh.ConnectionLost, asyncssh.DisconnectError, OSError) as exc:
            self._drop(conn)
            raise ConnectionLost(f"{self.target}: {exc}") from None
        if res.exit_status is None and res.exit_signal is None and conn.is_closed():
            raise ConnectionLost(f"{self.target}: connection lost during command")
        return CommandResult(res.exit_status, _text(res.stdout), _text(res.stderr))

    async def stream(self, argv: list[str] | str) -> AsyncIterator[bytes]:
        conn = await self._ensure()
        try:
            proc = await conn.create_process(
                command_line(argv), encoding=None, stderr=asyncssh.DEVNULL, window=STREAM_WINDOW
            )
        except (asyncssh.Error, OSError) as exc:
            self._drop(conn)
            raise ConnectionLost(f"{self.target}: {exc}") from None
        try:
            while True:
                try:
                    chunk = await proc.stdout.read(262144)
                except (asyncssh.Error, OSError) as exc:
                    self._drop(conn)
                    raise ConnectionLost(f"{self.target}: {exc}") from None
                if not chunk:
                    break
                yield chunk
            with contextlib.suppress(asyncssh.Error, OSError):
                async with asyncio.timeout(self.timings.link.close_s):
                    await proc.wait_closed()
            if proc.exit_status is None and proc.exit_signal is None:
                self._drop(conn)
                raise ConnectionLost(f"{self.target}: connection lost")
        finally:
            proc.close()

    # ------------------------------------------------------------------- forwards

    async def forward_port(self, remote_port: int, host: str = "127.0.0.1") -> int:
        key = (host, remote_port)
        if key in self._forwards and key in self._listeners:
            return self._forwards[key]
        conn = await self._ensure()
        listener = await conn.forward_local_port("127.0.0.1", self._forwards.get(key, 0), host, remote_port)
        self._listeners[key] = listener
        self._forwards[key] = listener.get_port()
        return self._forwards[key]

    async def _restore_forwards(self, conn: asyncssh.SSHClientConnection) -> None:
        """After a reconnect, bring forwards back on the same local ports so open URLs keep working."""
        self._listeners.clear()
        for (host, remote), local in list(self._forwards.items()):
            try:
                self._listeners[(host, remote)] = await conn.forward_local_port(
                    "127.0.0.1", local, host, remote
                )
            except (OSError, asyncssh.Error):
                self._forwards.pop((host, remote), None)

    async def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.timings.link.close_s):
                    await conn.wait_closed()
        self._state("closed")


def _key_probe_options(base: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in base.items() if k in ("port", "config")}


def _text(data: Any) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return str(data)


__all__ = ["SSHTransport", "TransportError", "parse_target"]
