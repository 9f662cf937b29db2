"""The step-profile half of :class:`~eagletui.workspace.Workspace`: a few decode steps of the server it
follows, profiled through the server's own ``/start_profile``, the traces fetched and summarised per
rank into a :class:`~eagletui.core.events.ProfileCaptured`.

Apart from the workspace's connection and launch/stop because it is one self-contained command on
what they set up (the transport, the followed run and its launcher), with its own scratch directory
on the host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from eagletui.core.events import Event, Notice, ProfileCaptured
from eagletui.workspace.endpoint import ServerEndpoint
from eagletui.workspace.errors import WorkspaceError

if TYPE_CHECKING:
    from eagletui.remote.launcher import Launcher


class StepProfiles(ServerEndpoint):
    """Mixed into :class:`~eagletui.workspace.Workspace`, which sets these."""

    control: Launcher | None
    emit: Callable[[Event], None]

    # ------------------------------------------------------------------ step profile

    async def profile_step(
        self, *, num_steps: int = 5, local_dir: str | None = None, timeout: float | None = None
    ) -> ProfileCaptured:
        """Profile a few decode steps of the server we follow through its own ``/start_profile`` (traces
        written in the run dir on the host, fetched here size-bounded), summarise each rank's kernels by
        category and emit (and return) a :class:`ProfileCaptured`; a failure is the event's ``error``.
        ``timeout`` None is the timings' ``sweep.profile_s``."""
        import tempfile
        from pathlib import Path

        from eagletui.config import data_dir
        from eagletui.profiler import summarize_file
        from eagletui.profiler.chrome import TraceError
        from eagletui.profiler.live import ProfileError, ProfileRequest, capture
        from eagletui.profiler.summary import decode_missing, step_breakdown

        run = self.run
        if self.transport is None or run is None:
            raise WorkspaceError("no server to profile: launch or attach first")
        profile = self.running_profile or self.profile
        tp = profile.args.get(
            "--tp", profile.args.get("--tp-size", run.config.get("tp") if run.config else 1)
        )
        try:
            ranks = max(1, int(tp))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            ranks = 1
        api_key = profile.args.get("--api-key")
        if local_dir is None:
            root = data_dir() / "profiles"
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
            local_dir = tempfile.mkdtemp(prefix=f"launch{run.launch}-", dir=root)  # 0700

        def say(msg: str) -> None:
            self.emit(Notice(level="info", message=f"profile: {msg}", source="profile"))

        control = self.control

        async def alive() -> bool:
            """False once the server is known dead (a capture then stops waiting for its traces)."""
            return control is None or not await control.known_dead(run)

        scratch = None
        try:
            host_dir = run.run_dir
            if not host_dir:  # a server we follow without a run dir of ours: a private dir, never a
                # predictable /tmp name another local user could have made first
                host_dir = scratch = await self._private_host_dir()
                say(f"traces go to {scratch} on the host (private, removed after fetching)")
            paths = await capture(
                self.transport,
                await self.base_url(),
                python=profile.python,
                host_dir=host_dir,
                local_dir=Path(local_dir),
                ranks=ranks,
                request=ProfileRequest(num_steps=num_steps),
                api_key=str(api_key) if api_key not in (None, True, False) else None,
                timeout=timeout,
                on_step=say,
                alive=alive,
                log_path=run.log_path or None,
            )
            summary = step_breakdown([summarize_file(p) for p in paths])
            files = tuple(str(p) for p in paths)
            # a DECODE trace of prefill batches only is no step profile: said, never a cycle's split
            missing = decode_missing(summary)
            event = (
                ProfileCaptured(launch=run.launch, files=files, error=missing)
                if missing
                else ProfileCaptured(launch=run.launch, files=files, summary=summary)
            )
        except (ProfileError, TraceError, OSError, WorkspaceError) as exc:
            event = ProfileCaptured(launch=run.launch, error=str(exc))
        finally:
            if scratch is not None:
                with contextlib.suppress(Exception):
                    await self.transport.run(["rm", "-rf", "--", scratch])
        self.emit(event)
        return event

    async def _private_host_dir(self) -> str:
        """A fresh directory on the host that only this user can enter (``mktemp -d``: 0700, a random
        name under ``$TMPDIR`` or /tmp)."""
        assert self.transport is not None
        res = await self.transport.run(["mktemp", "-d", "-t", "eagletui-profile.XXXXXXXXXX"])
        path = res.stdout.strip()
        if res.exit_status != 0 or not path.startswith("/") or "\n" in path:
            raise WorkspaceError(
                f"cannot make a private directory on the host for the traces: {res.stderr.strip()}"
            )
        return path
