"""The one seam between eagletui and a host: run a command, stream a command, reach a port.

Everything above this layer (server control, tailing, preflight, GPU telemetry) is written against
:class:`Transport`, so the same code drives the local machine (``eagletui demo``) and a remote
8-GPU host over SSH, and tests can exercise both with the same assertions.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from eagletui.core.events import ConnectionState
from eagletui.core.timings import Timings


@dataclass
class CommandResult:
    exit_status: int | None
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


class TransportError(Exception):
    """Base class so callers can catch every transport failure at one edge."""


class ConnectionLost(TransportError):
    """The link to the host dropped while a command was running; the command itself may live on."""


class HostKeyChanged(TransportError):
    """The host presented a key that differs from known_hosts: possibly an attack, never auto-accepted."""

    def __init__(self, host: str, fingerprint: str, known_hosts: str):
        self.host = host
        self.fingerprint = fingerprint
        self.known_hosts = known_hosts
        super().__init__(
            f"REMOTE HOST KEY CHANGED for {host}: it now presents {fingerprint}, which does not match "
            f"{known_hosts}. This could be an attack (or the host was reinstalled). Refusing to connect; "
            f"if the change is expected, remove the old entry with: ssh-keygen -R {shlex.quote(host)}"
        )


class HostKeyRejected(TransportError):
    """An unknown host key that the user (or the policy) did not accept."""

    def __init__(self, host: str, fingerprint: str):
        self.host = host
        self.fingerprint = fingerprint
        super().__init__(
            f"unknown host key for {host} ({fingerprint}) was not accepted; if that fingerprint is the "
            "host's, run again with --accept-new-host-key (or answer y in 'eagletui connect') to add it "
            "to known_hosts"
        )


def auth_target(target: str, username: str) -> str:
    """``user@host`` for messages: a target that already names its user (``root@box``) is not prefixed
    again (``root@root@box``)."""
    return target if "@" in target else f"{username}@{target}"


class AuthFailed(TransportError):
    """Authentication failed; the message says which methods were tried so the user knows what to fix."""

    def __init__(self, target: str, username: str, tried: list[str], offered: list[str], detail: str = ""):
        self.target = target
        self.username = username
        self.tried = tried
        self.offered = offered
        tried_s = ", ".join(tried) or "none"
        offered_s = ", ".join(offered) or "unknown"
        msg = f"authentication failed for {auth_target(target, username)}: tried {tried_s}; server accepts {offered_s}"
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)


class NotOurProcess(TransportError):
    """Refusal to signal a process whose identity does not match a run eagletui started."""


StateCallback = Callable[[ConnectionState], None]
AskHostKey = Callable[[str, str], Awaitable[bool]]


@runtime_checkable
class Transport(Protocol):
    target: str
    #: the command's or the app's timings (bounds of a command without its own, the link's keepalives)
    timings: Timings

    async def run(
        self, argv: list[str] | str, *, timeout: float | None = None, input: str | None = None
    ) -> CommandResult:
        """Run ``argv`` on the target; ``timeout`` None is the transport's ``timings.link.command_s``."""
        ...

    def stream(self, argv: list[str] | str) -> AsyncIterator[bytes]: ...

    async def forward_port(self, remote_port: int, host: str = "127.0.0.1") -> int:
        """A local port that reaches ``host:remote_port`` as the target sees it (a Slurm job's node is
        reached through the login node); the local transport answers the port itself."""
        ...

    async def close(self) -> None: ...


#: The parts of each host-side program, in the order they are joined: the module named for the program
#: comes last (its table of operations names what the others define, and it runs ``main``).
HOST_PARTS: dict[str, tuple[str, ...]] = {
    "hostside": ("hostproc", "hostfiles", "hostlaunch", "hoststop", "hostside"),
    "hostslurm": ("hostfiles", "hostslurmjob", "hostslurm"),
    "hosttail": ("hostfiles", "hosttail"),
}
#: The fence around the lines by which the parts import each other as ordinary modules (for the unit
#: tests, the linters): on the host the parts are one text, so those lines are left out of it.
LOCAL_IMPORTS_START = "# host-program: local imports"
LOCAL_IMPORTS_END = "# host-program: end of local imports"


def without_local_imports(text: str, name: str = "") -> str:
    """``text`` without its fenced local-import lines (the markers included)."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.startswith(LOCAL_IMPORTS_START):
            fenced = True
        elif line.startswith(LOCAL_IMPORTS_END):
            if not fenced:
                raise ValueError(f"{name}: {LOCAL_IMPORTS_END!r} without its start")
            fenced = False
        elif not fenced:
            out.append(line)
    if fenced:
        raise ValueError(f"{name}: {LOCAL_IMPORTS_START!r} without its end")
    return "".join(out)


@functools.cache
def host_source(module: str = "hostside") -> str:
    """The text of a host-side program (:mod:`~eagletui.remote.hostside`, :mod:`~eagletui.remote.hostslurm`,
    :mod:`~eagletui.remote.hosttail`), sent to the host so it needs no eagletui install: its parts
    (:data:`HOST_PARTS`) joined in order, without the lines by which they import each other."""
    texts = []
    for part in HOST_PARTS[module]:
        text = Path(__file__).with_name(f"{part}.py").read_text(encoding="utf-8")
        texts.append(without_local_imports(text, f"{part}.py"))
    return "\n\n".join(texts)


def host_program(python: str, op: str, *args: str) -> list[str]:
    """argv running one host-side operation with the host's interpreter (``tail``: the log reader)."""
    module = "hosttail" if op == "tail" else "hostslurm" if op.startswith("slurm_") else "hostside"
    return [python, "-c", host_source(module), op, *args]


def command_line(argv: list[str] | str) -> str:
    """A list is quoted for the remote shell; a string is trusted as already quoted by its builder."""
    return argv if isinstance(argv, str) else shlex.join(argv)


@dataclass(frozen=True)
class SSHOptions:
    """How to reach and trust an SSH host: one value handed from the command line to the transport.

    ``accept_new_host_key`` adds an unknown key without asking; ``ask_host_key(host, fingerprint)``
    asks the user otherwise (a changed key is always refused). ``None`` paths mean OpenSSH's defaults.
    """

    accept_new_host_key: bool = False
    known_hosts: str | None = None
    config_file: str | None = None
    ask_host_key: AskHostKey | None = None


async def open_transport(
    target: str, ssh: SSHOptions | None = None, *, timings: Timings, on_state: StateCallback | None = None
) -> Transport:
    """Open ``local`` or an SSH target; the SSH connection is established (and verified) before returning."""
    if target in ("", "local", "localhost-local"):
        from eagletui.remote.local import LocalTransport

        t = LocalTransport(on_state=on_state, timings=timings)
        t.emit_state("connected")
        return t
    from eagletui.remote.ssh import SSHTransport

    transport = SSHTransport(target, ssh or SSHOptions(), on_state=on_state, timings=timings)
    await transport.connect()
    return transport
