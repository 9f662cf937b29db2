"""Where a benchmark client or a profiler reaches the server a :class:`~eagletui.workspace.Workspace`
follows: the host's port (through the SSH tunnel, forwarded once and kept), or a Slurm job's head node
at the address Slurm reports.

Apart from the workspace because both its benchmark and its step-profile halves
(:mod:`eagletui.workspace.benchmark`, :mod:`eagletui.workspace.step_profile`) need it, and neither
should reach into the other for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eagletui.core.timings import Timings

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile
    from eagletui.remote.control import RunInfo
    from eagletui.remote.transport import Transport


def _url_host(host: str) -> str:
    """A host for a URL: an IPv6 address in brackets; a wildcard bind address means this host."""
    if host in ("", "0.0.0.0", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class ServerEndpoint:
    """Mixed into :class:`~eagletui.workspace.Workspace` (through its halves), which sets these."""

    profile: Profile
    running_profile: Profile | None
    timings: Timings
    transport: Transport | None
    run: RunInfo | None
    _local_port: int | None
    _forwarded: tuple[str, int] | None

    async def base_url(self) -> str:
        """Where the client reaches the server: the host's port (through the SSH tunnel), or a Slurm
        job's head node at the address Slurm reports (from the login node, or tunnelled through it)."""
        profile = self.running_profile or self.profile
        assert self.transport is not None, "connect() first"
        run = self.run
        host = run.endpoint_host if run is not None else "127.0.0.1"
        port = run.port if run is not None and run.port else profile.port
        if self.transport.target == "local":
            return f"http://{_url_host(host)}:{port}"
        if self._local_port is None or self._forwarded != (host, port):
            self._local_port = await self.transport.forward_port(port, host=host)
            self._forwarded = (host, port)
        return f"http://127.0.0.1:{self._local_port}"
