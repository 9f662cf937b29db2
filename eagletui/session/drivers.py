"""Drivers: where a session's events come from, and what the user may do with that source.

A driver replaces the free ``mode`` string the UI used to test everywhere: a :class:`LiveDriver`
(``eagletui connect``) owns a :class:`~eagletui.workspace.Workspace` and can launch, stop and benchmark;
a :class:`DemoDriver` is a live driver that also stops its server on quit and never asks about
servers it did not start; a :class:`ReplayDriver` plays a recording and can do none of that. Code asks
the capability (``driver.can_launch``), never the name.

The connect → reattach → follow-a-foreign-server → launch policy lives here, not in a widget, so it is
the same whoever drives it. A driver talks back through a :class:`DriverHost` (the UI's main screen,
or a headless caller): ``dispatch`` for events, ``notify`` for messages, ``ask`` for a yes/no.

No Textual here.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from eagletui.core.events import BenchmarkResult, Event, LaunchBlocked, Notice
from eagletui.core.timings import REAL

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile
    from eagletui.session.model import SessionModel
    from eagletui.workspace import Workspace

    WorkspaceFactory = Callable[[Callable[[Event], None]], Workspace]


class DriverHost(Protocol):
    """What a driver needs from whoever runs it (the main screen, or a headless command)."""

    def dispatch(self, ev: Event) -> None: ...

    def notify(
        self, message: str, *, title: str = "", severity: str = "information", timeout: float | None = None
    ) -> None: ...

    def ask(self, question: str) -> Awaitable[bool]: ...

    def config_changed(self) -> None:
        """The running profile or the server version changed (after a launch attempt)."""

    def settled(self) -> None:
        """Everything the source had is in (the end of a replay): paint it all now."""


class ReplaySource(Protocol):
    """A recording being played (:class:`~eagletui.session.replay.Replayer`)."""

    def play(self) -> AsyncIterator[Event]: ...


class Driver:
    """The source of a session's events plus what it allows. Subclasses set the capabilities."""

    kind: ClassVar[str] = "none"
    can_launch: ClassVar[bool] = False  # relaunch, stop, apply
    can_bench: ClassVar[bool] = False
    is_replay: ClassVar[bool] = False
    stops_server_on_quit: ClassVar[bool] = False
    asks_about_foreign_servers: ClassVar[bool] = False

    workspace: Workspace | None = None

    @property
    def rings_bells(self) -> bool:
        """Bells and desktop notifications are for things happening now, not for history."""
        return not self.is_replay

    @property
    def learns_history(self) -> bool:
        """Whether this driver's launches are new phase-duration samples for the ETA (a replay's are
        history already; a read-only view's are the owner's, who records them)."""
        return not self.is_replay

    @property
    def toasts_milestones(self) -> bool:
        """Ready/failed/benchmark toasts (an instant replay would bury the screen in them)."""
        return True

    def refusal(self) -> str:
        """Why a control action (launch, stop, bench) cannot run now."""
        return "not connected"

    def no_bench_here(self) -> str:
        """What the compare line says before any result where ``b`` cannot run (``can_bench`` false)."""
        return "no benchmark in this recording yet"

    def now(self, model: SessionModel, clock: Callable[[], float]) -> float:
        """The time elapsed times are measured to: the wall clock, or a replay's own."""
        return clock()

    async def run(self, model: SessionModel, host: DriverHost) -> None:
        """Feed ``host`` until the source ends (a live source ends with the app)."""

    async def close(self) -> None:
        """Let go of the source (a live server keeps running unless ``stops_server_on_quit``)."""


class ReplayDriver(Driver):
    kind = "replay"
    is_replay = True

    #: what ``[``/``]`` step between: launches and config changes
    STEP_KINDS: ClassVar[frozenset[str]] = frozenset({"launch", "config"})

    def __init__(self, source: ReplaySource) -> None:
        self.source = source
        self.done = asyncio.Event()  # set when the replay has fed its last event
        self._rewound = asyncio.Event()  # a seek after the end: play on from there
        self._bad = 0

    @property
    def speed(self) -> Any:
        return getattr(self.source, "speed", None)

    @property
    def toasts_milestones(self) -> bool:
        return self.speed != "instant"  # the whole history at once: a toast per launch buries the screen

    @property
    def can_seek(self) -> bool:
        """An indexed recording (:class:`~eagletui.session.replay.StreamReplayer`) seeks and has marks."""
        return hasattr(self.source, "seek_mark") and hasattr(self.source, "marks")

    def refusal(self) -> str:
        return "not available in replay"

    def now(self, model: SessionModel, clock: Callable[[], float]) -> float:
        return model.state.last_wall or clock()

    def _feed(self, ev: Event, host: DriverHost) -> None:
        try:
            host.dispatch(ev)
        except Exception as exc:  # a damaged event must not end the replay silently
            self._bad += 1
            if self._bad == 1:
                host.notify(f"skipped a damaged event ({type(exc).__name__}: {exc})", severity="warning")

    async def run(self, model: SessionModel, host: DriverHost) -> None:
        while True:
            async for ev in self.source.play():
                self._feed(ev, host)
            if not self.done.is_set():
                self.done.set()
                host.settled()
                host.notify("end of recording", title="replay")
            if not self.can_seek:
                return
            # A seek back from the end plays on from the target (the play loop has returned).
            self._rewound.clear()
            await self._rewound.wait()

    # ------------------------------------------------------------------ seeking

    def seek(
        self,
        model: SessionModel,
        host: DriverHost,
        *,
        time: float | None = None,
        launch: int | None = None,
        mark: Any = None,
        step: int | None = None,
        kinds: frozenset[str] | None = None,
    ) -> bool:
        """Move the replay and rebuild the screen there: the model is reset (its observers clear what
        they show) and the replayer's catch-up events are folded into the fresh state; playback then
        continues from the target (paused stays paused). ``step`` ±1 goes to the next/previous mark of
        ``kinds`` (default: launches and config changes). False when there is nowhere to go that way;
        ``KeyError`` for a launch the recording does not have."""
        src: Any = self.source
        if not self.can_seek:
            return False
        if step is not None:
            events = src.seek_mark(step, kinds if kinds is not None else self.STEP_KINDS)
            if events is None:
                return False
        else:
            if time is not None:
                time = min(max(0.0, time), src.duration)
            events = src.seek(time=time, launch=launch, mark=mark)
        model.reset()
        for ev in events:
            self._feed(ev, host)
        if self.done.is_set() and not src.finished:
            self.done.clear()
            self._rewound.set()
        host.settled()
        return True

    def seek_by(self, model: SessionModel, host: DriverHost, seconds: float) -> bool:
        """``seconds`` forward (or back, when negative) from the current position."""
        if not self.can_seek:
            return False
        src: Any = self.source
        return self.seek(model, host, time=src.position + seconds)


class LiveDriver(Driver):
    """A host reached through a :class:`~eagletui.workspace.Workspace` (SSH or local)."""

    kind = "live"
    can_launch = True
    can_bench = True
    asks_about_foreign_servers = True

    def __init__(self, workspace_factory: WorkspaceFactory | None, *, autolaunch: bool = True) -> None:
        self.workspace_factory = workspace_factory
        self.autolaunch = autolaunch
        self.workspace = None
        self.control_busy = False  # a launch or stop is in flight
        self.bench_task: asyncio.Task[Any] | None = None

    @property
    def benchmarking(self) -> bool:
        return self.bench_task is not None and not self.bench_task.done()

    async def run(self, model: SessionModel, host: DriverHost) -> None:
        """Connect, then reattach to our newest server, offer to follow a foreign one, or launch."""
        if self.workspace_factory is None:
            return
        ws = self.workspace = self.workspace_factory(host.dispatch)
        try:
            await ws.connect()
        except Exception as exc:
            host.notify(str(exc), title="connection failed", severity="error", timeout=30)
            host.dispatch(Notice(level="error", message=f"connect failed: {exc}", source="connect"))
            return
        try:
            attached = await ws.attach_newest()
        except Exception as exc:
            # Not knowing whether a server runs is not "no server": launching now could start a second one.
            host.notify(
                f"could not list runs on the host: {exc}", title="attach", severity="error", timeout=20
            )
            return
        if attached:
            # the Tune tab shows what the server runs (its recorded config), the file's values beside it
            model.staged.rebase(ws.profile, file=ws.file_profile)
            host.config_changed()
            differs = " (its config differs from the profile file: see the Tune tab)" if model.staged.file_diff() else ""
            host.notify(f"reattached to the running server{differs}", title="attach")
            await self._earlier_benchmarks(model, host, ws)
            return
        foreign = await ws.discover_foreign() if self.asks_about_foreign_servers else []
        server, others = foreign_to_offer(foreign, ws.profile)
        if server is None and foreign:
            host.notify(
                f"{len(foreign)} SGLang server(s) eagletui did not start found; their output is not a file, so "
                "they can't be followed"
            )
        if server is not None:
            cmd = " ".join(server.cmdline)[:160]
            more = f"\n(and {others} more on this host that eagletui did not start)" if others else ""
            question = (
                f"An SGLang server that eagletui did not start is running:\npid {server.pid}: {cmd}\n"
                f"log: {server.log_path}{more}\n\nFollow its log read-only? It will never be stopped by "
                "eagletui. (y/n)"
            )
            if await host.ask(question):
                ws.follow_foreign(server)
                return
        if self.autolaunch:
            await self.launch(None, model, host)
        else:
            control = getattr(ws, "control", None)
            where = getattr(control, "runs_dir", "") or "the runs dir"
            # nothing to follow and nothing launched: say where we looked, and what would find more
            host.notify(
                f"no running server that eagletui started in {where} on {ws.target}; a profile with "
                "another runs_dir: connect with --profile (r launches the profile's server)",
                title="attach",
                severity="warning",
                timeout=20,
            )

    async def _earlier_benchmarks(self, model: SessionModel, host: DriverHost, ws: Workspace) -> None:
        """The runs table of a reattach starts with what earlier sessions measured on this server (issue
        33 item 19: it started empty): their benchmark events, folded again, and the next ``b`` numbered
        after them. A recording that cannot be read is said, never a reason not to attach."""
        from pathlib import Path

        from eagletui.session.past_runs import earlier_benchmarks

        run = ws.run
        if run is None or not run.run_dir:
            return
        here = getattr(model.recorder, "path", None)
        if isinstance(here, Path):
            directory = here.parent
        else:
            from eagletui.config import default_sessions_dir

            directory = Path(default_sessions_dir())
        past = await asyncio.to_thread(
            earlier_benchmarks,
            directory,
            target=ws.target,
            run_dir=run.run_dir,
            launch=run.launch,
            exclude=here if isinstance(here, Path) else None,
        )
        if past.unreadable:
            more = f" (and {len(past.unreadable) - 1} more)" if len(past.unreadable) > 1 else ""
            host.dispatch(
                Notice(
                    level="warning",
                    message=f"earlier session not read for this server's runs: {past.unreadable[0]}{more}",
                    source="attach",
                )
            )
        if not past.events:
            return
        for e in past.events:
            host.dispatch(e)
        ws.bench_no = max(ws.bench_no, past.last_bench)
        host.notify(
            f"run #{run.launch}: {past.benchmarks} benchmark(s) from session {past.session} shown",
            title="attach",
        )

    # ------------------------------------------------------------------ commands

    async def launch(
        self, profile: Profile | None, model: SessionModel, host: DriverHost, applied: Any = None
    ) -> bool:
        """Launch (or relaunch with ``profile``); ``applied`` staged keys are cleared once it started."""
        from eagletui.workspace.errors import WorkspaceError

        ws = self.workspace
        if ws is None:
            return False
        if not await self._consent(ws, host, "Stop it and launch again"):
            return False
        ok = False
        self.control_busy = True
        try:
            await ws.launch(profile)
            ok = True
        except WorkspaceError as exc:
            host.notify(str(exc), title="launch refused", severity="error", timeout=15)
            host.dispatch(LaunchBlocked(reason=str(exc), stage=exc.stage, checks=exc.checks))
        except Exception as exc:
            host.notify(f"{type(exc).__name__}: {exc}", title="launch failed", severity="error", timeout=15)
            host.dispatch(Notice(level="error", message=f"launch failed: {exc}", source="launch"))
            host.dispatch(LaunchBlocked(reason=f"{type(exc).__name__}: {exc}"))
        finally:
            self.control_busy = False
        if ok and applied is not None:
            model.staged.applied(applied)
        model.staged.server_version = ws.server_version
        model.staged.rebase(ws.profile)
        host.config_changed()
        return ok

    async def _consent(self, ws: Workspace, host: DriverHost, action: str) -> bool:
        """A server eagletui started but not in this session (reattached) is stopped only on a yes."""
        if not await ws.needs_consent():
            return True
        run = ws.run
        assert run is not None
        question = (
            f"Run {run.run_id} ({run.handle}) was launched by eagletui, but not in this session: another "
            f"session may be using it.\n\n{action}? (y/n)"
        )
        if await host.ask(question):
            ws.consent_given()
            return True
        host.notify(f"run {run.run_id} left running", title="not stopped")
        return False

    async def stop(self, host: DriverHost) -> None:
        """Stop the server. The caller may have taken ``control_busy`` already (a second key press
        before this runs is refused); it is given back on every way out, a declined question too
        (that left b/s/r/a refused for the session and q waiting out its close bound)."""
        if self.workspace is None or not await self._consent(self.workspace, host, "Stop it"):
            self.control_busy = False
            return
        self.control_busy = True
        try:
            await self.workspace.stop()
            host.notify("server stopped", title="stop")
        except Exception as exc:
            host.notify(str(exc), title="stop failed", severity="error", timeout=30)
            host.dispatch(LaunchBlocked(reason=str(exc), stage="stop"))
        finally:
            self.control_busy = False

    async def benchmark(self, model: SessionModel, host: DriverHost) -> None:
        if self.workspace is None:
            return
        self.bench_task = asyncio.current_task()
        try:
            await self.workspace.benchmark()
        except Exception as exc:
            host.notify(f"{exc}", title="benchmark failed", severity="error")
        finally:
            self.bench_task = None
            if model.state.bench_running is not None:
                # The runner died before its result: close the run so the header does not say
                # "benchmarking" forever.
                host.dispatch(
                    BenchmarkResult(
                        bench=model.state.bench_running, launch=model.state.current, error="benchmark aborted"
                    )
                )

    async def decide(self, model: SessionModel, host: DriverHost, spec_launch: int) -> None:
        """More benchmarks of the no-spec server up now until each point of ``spec_launch``'s comparison
        with it leaves its noise or more runs cannot tell, within the timings' ``sweep.decide_s``
        (:func:`eagletui.session.decide.decide`, the loop ``bench --decide-within`` runs); what stayed
        open and why is said at the end."""
        from eagletui.session.decide import decide

        ws, base = self.workspace, model.state.current
        if ws is None or not base:
            return
        limit = ws.timings.sweep.decide_s
        self.bench_task = asyncio.current_task()
        try:
            out = await decide(ws, model, spec_launch, base, limit, lambda m: host.notify(m, title="deciding"))
        except Exception as exc:
            host.notify(f"{exc}", title="repeat until decided failed", severity="error")
            return
        finally:
            self.bench_task = None
        runs = sum(out["extra_no_spec_runs"].values())
        open_ = "; ".join(f"concurrency {c}: {why}" for c, why in out["undecided"].items())
        host.notify(
            f"{runs} more no-spec run{'s' if runs != 1 else ''} in {out['used_s']:.0f} s (limit {limit:.0f} s)"
            + (f"; still within noise: {open_}" if open_ else "; every point decided"),
            title="repeat until decided",
            severity="warning" if open_ else "information",
        )

    async def close(self) -> None:
        """Cancel a benchmark, let a launch in flight finish so its server is known, then
        disconnect (stopping the server only where ``stops_server_on_quit``); both bounded by the
        workspace's ``timings.session.close_s``."""
        if self.bench_task is not None:
            self.bench_task.cancel()
        ws = self.workspace
        close_s = (ws.timings if ws is not None else REAL).session.close_s
        deadline = time.monotonic() + close_s
        while self.control_busy and time.monotonic() < deadline:
            await asyncio.sleep((ws.timings if ws is not None else REAL).session.busy_poll_s)
        if ws is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(close_s):
                    await ws.close(stop_server=self.stops_server_on_quit)


class DemoDriver(LiveDriver):
    """The bundled simulator on ``local``: its server is ours alone, so quitting stops it."""

    kind = "demo"
    stops_server_on_quit = True
    asks_about_foreign_servers = False


def make_driver(
    mode: str, *, workspace_factory: Any = None, replay: Any = None, autolaunch: bool = True
) -> Driver:
    """The driver for the old ``mode`` keyword (``live`` | ``demo`` | ``replay``)."""
    if mode == "replay":
        return ReplayDriver(replay)
    if mode == "demo":
        return DemoDriver(workspace_factory, autolaunch=autolaunch)
    if mode == "live":
        return LiveDriver(workspace_factory, autolaunch=autolaunch)
    raise ValueError(f"unknown mode {mode!r}: live, demo or replay")


def foreign_to_offer(foreign: list[Any], profile: Any) -> tuple[Any, int]:
    """The one hand-started server worth offering to follow, and how many others there are.

    One question, not one per server: on a shared host every other user's server (and every simulator of
    a test run) is "an SGLang server eagletui did not start", and a declined offer must lead to the
    launch, not to the next offer. The server on the profile's port comes first (a launch there would
    collide with it), then one serving the profile's model; only a server whose log is a file can be
    followed."""
    followable = [f for f in foreign if f.log_path]
    port = getattr(profile, "port", None)
    model_path = str((getattr(profile, "args", None) or {}).get("--model-path", "") or "")

    def rank(f: Any) -> tuple[int, int]:
        return (0 if port is not None and f.port == port else 1, 0 if model_path and model_path in f.cmdline else 1)

    followable.sort(key=rank)
    return (followable[0], len(foreign) - 1) if followable else (None, 0)
