"""Where a server runs: the one interface the engine launches, watches and stops servers through.

Two answers to "where": a detached process on a host reached by a transport
(:class:`~eagletui.remote.control.ServerControl`: its own session, a waiter that records the exit,
ownership proven on the host before any signal), and — added beside it, not inside it — a job of a
batch scheduler (Slurm: ``sbatch``/``squeue``/``scancel`` over the same transport). Everything above
this line (the :class:`~eagletui.workspace.Workspace`, the log source, ``bench``, ``sweep``, the UI)
talks to a :class:`Launcher` and never asks which one it has.

The contract every launcher keeps, whatever runs the server:

* ``launch`` never starts a second server where one of ours runs on the same port, and a launch whose
  answer was lost raises :class:`~eagletui.remote.control.LaunchOutcomeUnknown` (found later by
  ``reconcile``), never "nothing happened";
* ``liveness`` says ``DEAD`` only on a clear answer; a failed check is ``UNKNOWN``;
* ``stop`` signals only what this launcher started, proven by what survives the server's own doings,
  escalates as gently as the server allows, returns a :class:`~eagletui.remote.control.StopOutcome`
  saying which step ended it, and raises (``StopFailed``, ``NotOurProcess``) rather than report a
  stop that did not happen;
* ``list_runs`` lists this launcher's runs, newest first, for reattach.

Optional capabilities have defaults here: a launcher that cannot discover servers it did not start
returns none; one that cannot list the processes of a run returns none.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile
    from eagletui.core.timings import Timings
    from eagletui.remote.control import ForeignServer, Liveness, RunInfo, StopOutcome
    from eagletui.remote.preflight import Check
    from eagletui.remote.source import LiveSource
    from eagletui.remote.transport import Transport


class Launcher(ABC):
    """Launch, watch and stop servers of one target; see the module docstring for the contract."""

    #: what ``eagletui`` shows for where the server runs ("process", "slurm job")
    kind: str = "process"
    transport: Transport
    runs_dir: str
    #: the interpreter host-side helpers run with (the profile's python once a launch happened)
    python: str
    #: why the last liveness check said what it said (shown while checks keep failing)
    last_check_detail: str = ""

    @abstractmethod
    async def launch(
        self, profile: Profile, *, launch: int, args_override: dict[str, Any] | None = None
    ) -> RunInfo: ...

    @abstractmethod
    async def liveness(self, run: RunInfo, *, confirm: bool = True) -> Liveness: ...

    @abstractmethod
    async def exit_info(self, run: RunInfo) -> tuple[int | None, int | None]:
        """(exit code, signal) as recorded when the server ended; (None, None) while unknown."""

    @abstractmethod
    async def stop(self, run: RunInfo, *, grace: float | None = None) -> StopOutcome:
        """Stop ``run``; ``grace`` (None: the timings') is how long its own shutdown is waited for."""

    @abstractmethod
    async def list_runs(self) -> list[RunInfo]: ...

    @abstractmethod
    async def reconcile(self, run_id: str, runs_dir: str | None = None) -> RunInfo | None: ...

    # ------------------------------------------------------------------ optional, defaulted

    async def known_dead(self, run: RunInfo) -> bool:
        """True only when a check says the server is dead; a check that fails or cannot tell is not
        a death (what a wait that should end early on a death asks, e.g. a profile capture)."""
        from eagletui.remote.control import Liveness

        try:
            return await self.liveness(run, confirm=False) is Liveness.DEAD
        except Exception:
            return False

    async def members(self, run: RunInfo) -> list[dict[str, Any]]:
        """The run's live processes ([{pid, proof, name}]), where the launcher can tell."""
        return []

    async def discover_foreign(self) -> list[ForeignServer]:
        """Servers on the target that this launcher did not start (followed read-only)."""
        return []

    def job_facts(self, run: RunInfo) -> dict[str, Any] | None:
        """A scheduler's last word on the run's job (state, exit, nodes); None for a process."""
        return None

    async def adapt_preflight(self, checks: list[Check]) -> list[Check]:
        """The host's pre-launch checks as they apply where this launcher starts servers (a Slurm
        login node has no GPUs and does not bind the port: the job's node does)."""
        return checks

    timings: Timings

    def live_source(
        self, transport: Transport, run: RunInfo, *, log_format: str | None = None, history: bool = False
    ) -> LiveSource:
        """The event source that follows ``run``: its log tail (read in ``log_format``) and this
        launcher's liveness (a Slurm job has several logs and a queue to wait in:
        :class:`~eagletui.remote.jobsource.JobSource`). ``history``: a run found running, whose log so
        far is history (:class:`~eagletui.remote.source.Backlog`)."""
        from eagletui.remote.source import LiveSource

        return LiveSource(transport, self, run, timings=self.timings, log_format=log_format, history=history)


def make_launcher(profile: Profile, transport: Transport, *, timings: Timings, slot: int = 0) -> Launcher:
    """The launcher a profile asks for: a Slurm job with a ``[slurm]`` section
    (:class:`~eagletui.remote.slurm.SlurmLauncher`), else a detached process. Resolved here and
    nowhere else. ``slot`` tells a sweep's parallel jobs apart (their locks, ports and names)."""
    if profile.slurm is not None:
        from eagletui.remote.slurm import SlurmLauncher

        return SlurmLauncher(
            transport,
            profile.slurm,
            runs_dir=profile.runs_dir,
            python=profile.python,
            slot=slot,
            timings=timings,
            runs_group=profile.runs_dir_group,
        )
    from eagletui.remote.control import ServerControl

    return ServerControl(
        transport, runs_dir=profile.runs_dir, python=profile.python, timings=timings, runs_group=profile.runs_dir_group
    )
