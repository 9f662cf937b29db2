"""The live engine behind the UI: connect, launch/stop/reattach, tail, benchmark — all as events.

No Textual here. The UI (or a headless caller) gives :class:`Workspace` one ``emit`` callback; every
source's events go through it, so recording, the state fold and rendering see the same stream.
Commands (relaunch, stop, benchmark) are coroutines the UI schedules as workers.

This module holds the connection, the runs it follows and launch/stop; the benchmark and the step
profile are its halves in :mod:`eagletui.workspace.benchmark` and :mod:`eagletui.workspace.step_profile`
(both reach the server through :mod:`eagletui.workspace.endpoint`), and the error its commands raise
is :class:`~eagletui.workspace.errors.WorkspaceError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from eagletui.core.events import (
    ConfigChanged,
    ConnectionState,
    Event,
    HostFacts,
    LaunchStarted,
    Notice,
    ProcessExited,
    ServerStopped,
    TaskFailed,
)
from eagletui.core.profile.model import Profile, config_diff
from eagletui.core.profile.redact import Redactor
from eagletui.core.timings import Timings
from eagletui.remote.control import LaunchOutcomeUnknown, LaunchRefused, Liveness, StopFailed, StopOutcome
from eagletui.remote.transport import NotOurProcess, SSHOptions
from eagletui.workspace.benchmark import Benchmarks
from eagletui.workspace.errors import WorkspaceError
from eagletui.workspace.step_profile import StepProfiles

if TYPE_CHECKING:
    from eagletui.remote.control import ForeignServer, RunInfo
    from eagletui.remote.launcher import Launcher
    from eagletui.remote.preflight import Check
    from eagletui.remote.source import LiveSource
    from eagletui.remote.transport import Transport

Emit = Callable[[Event], None]


def server_version_from(checks: list[Check]) -> str | None:
    """The server (or simulator-compatible) version the preflight found on the host (a field of its
    check: :func:`eagletui.remote.preflight.host_version`)."""
    from eagletui.remote.preflight import host_version

    return host_version(checks)


class Workspace(Benchmarks, StepProfiles):
    """One target + one profile. ``owns_server`` is true for servers this workspace launched."""

    def __init__(
        self,
        profile: Profile,
        emit: Emit,
        *,
        target: str | None = None,
        ssh: SSHOptions | None = None,
        timings: Timings,
        preflight: bool = True,
        slot: int = 0,
    ) -> None:
        #: the profile a (re)launch without one uses: the file's at first, then what the server runs
        #: (an applied toggle, or the config a reattached run recorded)
        self.profile = profile
        #: the profile file as given (a reattach shows how it differs from what the server runs)
        self.file_profile = profile
        #: every wait of the engine below this workspace (transport, launcher, log source, benchmark,
        #: GPU gate, profile capture): the command's or the app's, passed down from here
        self.timings = timings
        #: a sweep's parallel job slot (0 otherwise): its launcher's lock, ports and job names
        self.slot = slot
        self.target = target or profile.target
        self.emit = emit
        self.ssh = ssh or SSHOptions()
        self.preflight_enabled = preflight
        self.transport: Transport | None = None
        self.control: Launcher | None = None  # where the server runs: a process, a job
        self.run: RunInfo | None = None  # the server we follow
        self.launch_no = 0
        self.bench_no = 0
        self.running_config: dict[str, Any] | None = None
        self.running_profile: Profile | None = None
        self._source: LiveSource | None = None
        self._source_task: asyncio.Task | None = None
        self._gpu_task: asyncio.Task | None = None
        self._local_port: int | None = None
        self._forwarded: tuple[str, int] | None = None  # (host, port) the local port reaches
        self._lock = asyncio.Lock()
        self.benchmarking = False
        self.server_version: str | None = None  # sglang version on the host, from the preflight
        self._known_flags: dict[str, Any] = {}  # server module → FlagTable of its parser
        #: A launch whose answer was lost and that the host could not yet be asked about: it may be
        #: loading, so nothing is launched until reconcile() has found out what became of it.
        self.unreconciled: LaunchOutcomeUnknown | None = None
        self.last_stop: StopOutcome | None = None  # how the last stop ended (bench --json reports it)
        #: set while the transport's link to the host is up (a local one never goes down)
        self.link = asyncio.Event()
        self.link.set()

    # ------------------------------------------------------------------ connection

    async def connect(self) -> None:
        from eagletui.remote.launcher import make_launcher
        from eagletui.remote.transport import open_transport

        self.emit(ConnectionState(state="connecting", target=self.target))
        self.transport = await open_transport(
            self.target, self.ssh, timings=self.timings, on_state=self._on_link_state
        )
        self.control = make_launcher(self.profile, self.transport, timings=self.timings, slot=self.slot)
        from eagletui.remote import tasks

        self._gpu_task = tasks.start(self._gpu_loop(), "gpu poll", self.emit)

    def _on_link_state(self, ev: ConnectionState) -> None:
        """The transport's own link state (not the log tail's): a benchmark draws no prompt while the
        link is down (:func:`eagletui.bench.pool._link_up`), and the event goes on to the session."""
        if ev.state == "connected":
            self.link.set()
        elif ev.state in ("lost", "reconnecting"):
            self.link.clear()
        self.emit(ev)

    async def _gpu_loop(self) -> None:
        """GPU samples until closed; an error ends it as a ``TaskFailed`` (``gpu poll``), not silently."""
        assert self.transport is not None
        from eagletui.remote.gpu import gpu_events

        async for ev in gpu_events(self.transport, self.timings):
            self.emit(ev)

    async def attach_newest(self) -> bool:
        """Reattach to eagletui's newest live run of *this* profile on the host (log backfilled from its
        start). Runs of other profiles (another port, command or model) are named and left alone."""
        from eagletui.remote.reattach import run_differences

        assert self.control is not None, "connect() first"
        runs = await self.control.list_runs()
        self._say_set_aside(runs)
        live = [r for r in runs if r.alive and r.owned]
        if not live:
            return False
        mine = [r for r in live if not run_differences(r, self.profile)]
        for other in (r for r in live if r not in mine):
            whose = f" of profile {other.profile!r}" if other.profile else ""
            self.emit(
                Notice(
                    level="warning",
                    message=f"run {other.run_id}{whose} ({other.handle}) is running on this host but is "
                    f"not this profile's (it differs in {'; '.join(run_differences(other, self.profile))}): "
                    "not following it, and it will not be stopped",
                    source="attach",
                )
            )
        if not mine:
            return False
        self._adopt(mine[0], against_file=True)
        return True

    def _say_set_aside(self, runs: list[RunInfo]) -> None:
        """Name the records the host set aside: a stale one (its pid is another process's now) or one in
        a run dir that is not the user's; none of them is followed or ever signalled."""
        for r in runs:
            if r.state in ("stale", "untrusted"):
                self.emit(
                    Notice(
                        level="warning",
                        message=f"run record {r.run_id} set aside ({r.state}): {r.note}",
                        source="attach",
                    )
                )

    async def attach_run(self, run_id: str) -> bool:
        """Reattach to eagletui's live run ``run_id`` (a sweep's variant found again by its run id, a
        Slurm job by its job id and name): False when it is not alive any more."""
        assert self.control is not None, "connect() first"
        runs = await self.control.list_runs()
        found = [r for r in runs if r.run_id == run_id and r.alive and r.owned]
        if not found:
            return False
        self._adopt(found[0])
        return True

    def _adopt(self, run: RunInfo, *, against_file: bool = False) -> None:
        """Follow ``run``, launched by eagletui but not in this session, as what the server runs: its
        recorded config (``against_file``: and say where the profile file differs from it)."""
        run.launched_here = False
        self.launch_no = max(self.launch_no, run.launch)
        self.run = run
        config = run.config or self.profile.snapshot()
        self.running_config = config
        whose = f"profile {run.profile!r}" if run.profile else "an unnamed profile"
        self.emit(
            Notice(
                level="info",
                message=f"reattached to run {run.run_id} ({run.handle}, launched with {whose}): same port "
                f"{self.file_profile.port}, command and model as {self.file_profile.name!r}; it was not "
                "launched in this session, so stopping or relaunching it asks first",
                source="attach",
            )
        )
        self._take_recorded(run, against_file=against_file)
        self._announce(run, config, started_ago=run.started_ago)
        self._follow(run, history=True)

    def _take_recorded(self, run: RunInfo, *, against_file: bool) -> None:
        """The run's recorded config becomes the running profile (what ``r`` relaunches): a change
        applied in another session is never undone by a relaunch from the file. Where the file differs
        (``against_file``), or the record cannot be used, a warning says so and which one ``r`` uses."""
        from eagletui.core.profile.model import format_diff
        from eagletui.core.profile.running import running_profile

        rec = running_profile(self.profile, run.config)
        self.profile = self.running_profile = rec.profile
        if rec.problem:
            self.emit(
                Notice(
                    level="warning",
                    message=f"run {run.run_id}: {rec.problem}; r relaunches the profile file's config",
                    source="attach",
                )
            )
        if rec.dropped_secrets:
            self.emit(
                Notice(
                    level="warning",
                    message=f"run {run.run_id} was launched with {', '.join(rec.dropped_secrets)}, recorded "
                    "redacted and not in the profile file: a relaunch goes without them",
                    source="attach",
                )
            )
        if against_file and rec.file_diff:
            self.emit(
                Notice(
                    level="warning",
                    message=f"run {run.run_id} runs its recorded config, which differs from the profile "
                    f"file {self.file_profile.name!r} (running → file: {format_diff(rec.file_diff)}): r "
                    "relaunches the running config; F in the Tune tab stages the file's values",
                    source="attach",
                )
            )

    async def needs_consent(self) -> bool:
        """Stopping the followed server needs the user's yes: eagletui started it, but not this session
        (another session may rely on it), and it is not known to have exited."""
        run = self.run
        if run is None or not run.owned or run.launched_here or self.control is None:
            return False
        return await self.control.liveness(run, confirm=False) is not Liveness.DEAD

    def consent_given(self) -> None:
        if self.run is not None:
            self.run.launched_here = True

    async def discover_foreign(self) -> list[ForeignServer]:
        """SGLang servers on the host that eagletui did not start (followed read-only if the user wants)."""
        assert self.control is not None, "connect() first"
        try:
            return list(await self.control.discover_foreign())
        except Exception:
            return []

    def follow_foreign(self, server: ForeignServer) -> None:
        """Tail a hand-started server's log read-only: it is never signalled (``owned=False``)."""
        self.launch_no += 1
        run = server.as_run(launch=self.launch_no)
        self.run = run
        self._announce(run, {"target": self.target, "args": {}, "env": {}, "foreign_pid": run.pid})
        self.emit(
            Notice(
                level="info", message=f"following pid {run.pid} read-only: {run.log_path}", source="attach"
            )
        )
        self._follow(run)

    # ------------------------------------------------------------------ launch / stop

    async def launch(self, profile: Profile | None = None) -> None:
        async with self._lock:
            await self._launch(profile)

    async def _launch(self, profile: Profile | None) -> None:
        assert self.control is not None, "connect() first"
        profile = profile or self.profile
        if self.unreconciled is not None and await self._reconcile():
            return  # the lost launch is running after all: we now follow it instead of starting another
        if self.preflight_enabled:
            await self._preflight(profile)
        if self.run is not None and self.run.owned:
            # Always through the host's stop, even when the leader is known dead: its children may
            # outlive it (holding the port and GPU memory), and only the host can tell which are the
            # run's. A run with nothing left answers "gone" at the cost of one round trip.
            await self._stop_current(reason="relaunch")
        self.launch_no += 1
        new_config = profile.snapshot()
        diff = config_diff(self.running_config, new_config) if self.running_config else {}
        if diff:
            self.emit(ConfigChanged(changes=diff))
        try:
            run = await self._launch_op(profile)
        except LaunchRefused as exc:
            raise WorkspaceError(str(exc), stage="refused") from None
        except LaunchOutcomeUnknown as exc:
            self.unreconciled = exc
            raise WorkspaceError(str(exc)) from None
        self.run = run
        self.profile = profile
        self.running_profile = profile
        self.running_config = new_config
        self._announce(run, new_config, diff)
        self._follow(run)

    async def _launch_op(self, profile: Profile) -> RunInfo:
        """The launcher's launch, carried to its end even when this task is cancelled meanwhile (SIGTERM
        to a headless command): what it started on the host is then followed (``self.run``), so the
        command's cleanup stops it instead of leaving a server nobody knows of; the cancellation goes on."""
        assert self.control is not None, "connect() first"
        op = asyncio.ensure_future(self.control.launch(profile, launch=self.launch_no))
        try:
            return await asyncio.shield(op)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                run = await op  # bounded by the launcher's own launch timeout
                run.launched_here = True
                self.run, self.running_profile = run, profile
            raise

    async def _reconcile(self) -> bool:
        """Ask the host what became of the launch whose answer was lost; follow it if it runs."""
        lost = self.unreconciled
        if lost is None:
            return False
        assert self.control is not None, "connect() first"
        try:
            run = await self.control.reconcile(lost.run_id, lost.runs_dir)
        except LaunchOutcomeUnknown as exc:
            raise WorkspaceError(
                f"run {lost.run_id} may be starting on the host and it cannot be checked yet ({exc}); "
                "not launching a second server"
            ) from None
        self.unreconciled = None
        if run is None or not run.alive:
            return False
        run.launched_here = True  # the lost launch was ours, from this session
        self.launch_no = max(self.launch_no, run.launch)
        self.run = run
        config = run.config or self.profile.snapshot()
        self.running_config = config
        self.emit(
            Notice(
                level="info",
                message=f"found the lost launch {run.run_id} running ({run.handle})",
                source="attach",
            )
        )
        self._take_recorded(run, against_file=False)
        self._announce(run, config)
        self._follow(run, history=True)
        return True

    async def _preflight(self, profile: Profile) -> None:
        from eagletui.remote.preflight import OwnServer, host_facts, run_preflight_with_flags, server_module

        assert self.transport is not None and self.control is not None
        module = server_module(profile)
        own = None
        if self.run is not None and self.run.owned:
            # our running server is stopped before the relaunch: its GPU memory is not in the way
            pids = frozenset(int(m["pid"]) for m in await self.control.members(self.run) if "pid" in m)
            own = OwnServer(pids, f"launch #{self.run.launch}") if pids else None
        # The host's parser is asked once per server module; the flag rule is argparse's (prefixes count).
        checks, learned = await run_preflight_with_flags(
            self.transport, profile, self._known_flags.get(module), own
        )
        checks = await self.control.adapt_preflight(checks)
        if learned is not None:
            self._known_flags[module] = learned
        ours = self.run
        if ours is not None and ours.owned and ours.alive:
            # Our own running server holds the port (and GPUs) until the relaunch stops it.
            checks = [
                dataclasses.replace(
                    c,
                    status="pass",
                    message=f"port {profile.port} is held by launch #{ours.launch}, stopped first",
                )
                if c.name == "port" and c.status == "fail" and int(ours.port or 0) == profile.port
                else c
                for c in checks
            ]
        self.server_version = server_version_from(checks) or self.server_version
        facts = host_facts(checks)
        if facts:  # what the diagnoses of the launch that follows rest on (core/diagnosis/fold.py)
            self.emit(HostFacts(facts=facts, target=self.target))
        failed = [c for c in checks if c.status == "fail"]
        warned = [c for c in checks if c.status in ("warn", "unknown")]
        summary = f"preflight: {len(checks) - len(failed) - len(warned)} pass, {len(warned)} warn, {len(failed)} fail"
        details = "; ".join(f"{c.name}: {c.message}" for c in failed + warned)
        # Warnings are recorded with the launch but not toasted: the same ones repeat on every relaunch.
        level = "error" if failed else "info"
        self.emit(Notice(level=level, message=f"{summary}. {details}".strip(), source="preflight"))
        if failed:
            lines = tuple(f"{c.name}: {c.message}" for c in failed)
            raise WorkspaceError("preflight failed: " + "; ".join(lines), stage="preflight", checks=lines)

    def _announce(
        self,
        run: RunInfo,
        config: dict[str, Any],
        diff: dict[str, Any] | None = None,
        *,
        started_ago: float | None = None,
    ) -> None:
        """``LaunchStarted`` for ``run``; ``started_ago``: a run found running, started that long ago."""
        self.emit(
            LaunchStarted(
                launch=run.launch,
                target=self.target,
                # shown in the runs table and recorded: --api-key's value never in clear
                command=tuple(Redactor.for_profile(self.running_profile or self.profile).argv(run.argv)),
                config=config,
                run_dir=run.run_dir,
                log_path=run.log_path,
                pid=run.pid or None,
                diff=diff or {},
                job_id=run.job_id,
                nodes=run.num_nodes,
                started_ago=started_ago,
            )
        )

    def _follow(self, run: RunInfo, *, history: bool = False) -> None:
        """Follow ``run``'s log and process; ``history``: it was found running (its log so far is past)."""
        assert self.transport is not None and self.control is not None
        self._stop_source()
        profile = self.running_profile or self.profile
        self._source = self.control.live_source(
            self.transport, run, log_format=profile.kind.log_format, history=history
        )
        self._source_task = asyncio.create_task(self._pump(self._source), name="log source")

    async def _pump(self, source: LiveSource) -> None:
        try:
            n = 0
            async for ev in source.events():
                self.emit(ev)
                n += 1
                if n % 256 == 0:
                    # A backfilled or bursting log arrives as large chunks: let keys and frames in.
                    await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken source must not take the UI down; say what happened
            from eagletui.remote.tasks import failure_text

            self.emit(TaskFailed(task="log source", message=failure_text(exc), launch=source.run.launch))

    def _stop_source(self) -> None:
        if self._source is not None:
            with contextlib.suppress(Exception):
                self._source.stop()
        if self._source_task is not None:
            self._source_task.cancel()
        self._source = None
        self._source_task = None

    async def stop(self) -> None:
        async with self._lock:
            await self._stop_current(reason="stopped by user")

    async def _stop_current(self, reason: str) -> None:
        run = self.run
        if run is None:
            raise WorkspaceError("no server to stop")
        if not run.owned:
            raise WorkspaceError("this server was not started by eagletui; it is followed read-only")
        assert self.control is not None
        if self._source is not None:
            self._source.expect_exit()
        try:
            out = await self.control.stop(run)
        except (NotOurProcess, StopFailed) as exc:
            if self._source is not None:
                self._source.expect_exit(False)
            self.emit(Notice(level="error", message=f"stop failed: {exc}", source="stop"))
            raise WorkspaceError(str(exc), stage="stop") from None
        # Let the tail drain the last lines before it is stopped.
        await asyncio.sleep(self.timings.control.stop_drain_s)
        self._stop_source()
        self.last_stop = out
        if out.ended_by == "gone":
            # It had exited by itself; the watcher may not have seen it yet and is stopped now.
            self.emit(ProcessExited(code=out.code, signal=out.signal, pid=run.pid or None, launch=run.launch))
            return
        self.emit(Notice(level="info", message=f"launch #{run.launch} {out.describe()}", source="stop"))
        self.emit(ServerStopped(reason=reason, launch=run.launch, ended_by=out.ended_by))
        self.emit(ProcessExited(code=out.code, signal=out.signal, pid=run.pid or None, launch=run.launch))

    def job_report(self) -> dict[str, Any] | None:
        """The followed run's Slurm job for a report (``bench --json``): id, name, nodes and the final
        state Slurm gave it (None when the server is not a job)."""
        run = self.run
        if run is None or not run.job_id:
            return None
        facts = (self.control.job_facts(run) if self.control is not None else None) or {}
        return {
            "id": run.job_id,
            "name": run.job_name,
            "state": facts.get("state"),
            "exit_code": facts.get("exit_code"),
            "signal": facts.get("signal"),
            "reason": facts.get("reason") or None,
            "nodes": list(run.nodes),
            "partition": facts.get("partition") or None,
            "run_dir": run.run_dir,
        }

    # ------------------------------------------------------------------ shutdown

    async def close(self, *, stop_server: bool = False) -> None:
        if stop_server and self.run is not None and self.run.owned and self.control is not None:
            with contextlib.suppress(Exception):
                if await self.control.liveness(self.run) is not Liveness.DEAD:
                    await self._stop_current(reason="demo closed")
        self._stop_source()
        if self._gpu_task is not None:
            self._gpu_task.cancel()
        if self.transport is not None:
            with contextlib.suppress(Exception):
                await self.transport.close()
