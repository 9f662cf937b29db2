"""Launch, watch and stop SGLang servers on a host without ever signalling a stranger's process.

A launch is detached from the connection that started it (own session, stdin from /dev/null, output to
a log file), so the TUI can quit, lose Wi-Fi or crash and the 10-minute model load carries on; a
later session finds it again through the run directory.

Identity is checked on the host right before any signal (:mod:`eagletui.remote.hostside`): the leader
by pid + kernel start time (and the ``EAGLETUI_RUN_ID`` in its environment), its processes by what the
kernel keeps and a server cannot rewrite — the session the leader was started in, and the parent chain
to the leader or to eagletui's waiter, the subreaper of the server's tree. An environment is only one
proof among these: SGLang's ``setproctitle`` wipes its children's.
"""

from __future__ import annotations

import getpass
import json
import os
import secrets
import shlex
import socket
import time
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from eagletui.core.profile.model import Profile, validate_env_name
from eagletui.core.profile.redact import Redactor
from eagletui.core.timings import Timings
from eagletui.remote.launcher import Launcher
from eagletui.remote.transport import NotOurProcess, Transport, TransportError, host_program


class Liveness(StrEnum):
    """What the host says about a process. Only ``DEAD`` may be acted on as "it exited"; ``UNKNOWN``
    (the check itself failed: timeout, dropped link, garbled answer) means ask again later."""

    ALIVE = "alive"
    DEAD = "dead"
    UNKNOWN = "unknown"


@dataclass
class RunInfo:
    run_id: str
    run_dir: str
    log_path: str
    pid: int
    pgid: int
    start_time: str
    argv: list[str]
    port: int
    launch: int
    owned: bool = True
    alive: bool = True
    config: dict[str, Any] = field(default_factory=dict)  # the launch's redacted snapshot, for reattach
    profile: str = ""  # the name of the profile it was launched with (reattach says whose run it is)
    #: launched by this eagletui process; a run found on the host (reattached) is stopped only when the
    #: user agrees, since another session may be using it
    launched_here: bool = False
    #: where it runs: ``process`` (a detached process, pid + start time prove it) or ``slurm`` (a job:
    #: the job id sbatch answered, the job name and the submitting user prove it)
    launcher: str = "process"
    job_id: str = ""
    job_name: str = ""
    user: str = ""
    #: a job's nodes in rank order (names as Slurm calls them) and each one's address, once it runs
    nodes: list[str] = field(default_factory=list)
    node_addrs: list[str] = field(default_factory=list)
    #: a job's per-node server logs (``node-<rank>.log``, rank order) and the batch script's own log
    node_logs: list[str] = field(default_factory=list)
    batch_log: str = ""
    #: how many nodes the job asked for (1: a single-node server)
    num_nodes: int = 1
    #: what the host's listing said of it: ``alive``/``dead``/``unknown``, ``stale`` (its pid is another
    #: process's now) or ``untrusted`` (its run dir is not the user's); ``note`` says why
    state: str = ""
    note: str = ""
    #: the sweep job slot that submitted it (0 outside a parallel sweep)
    slot: int = 0
    #: a live run as the host listed it: seconds since its leader started, and that start's local time
    #: of day (the log timestamps' clock), from /proc (:func:`~eagletui.remote.hostproc.started`)
    started_ago: float | None = None
    started_clock: float | None = None

    @property
    def handle(self) -> str:
        """How messages name the server: ``job 1234`` or ``pid 5678``."""
        return f"job {self.job_id}" if self.job_id else f"pid {self.pid}"

    @property
    def endpoint_host(self) -> str:
        """Where the server's HTTP port is: the head node's address for a job, else the host itself."""
        return self.node_addrs[0] if self.node_addrs else "127.0.0.1"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunInfo:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class ForeignServer:
    """A server eagletui did not start: it can be watched (its log, its port) but never signalled."""

    pid: int
    cmdline: list[str]
    log_path: str | None = None
    port: int | None = None
    pgid: int = 0
    start_time: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_run(self, launch: int = 0) -> RunInfo:
        """A read-only RunInfo (``owned=False``) so the same LiveSource can tail it."""
        return RunInfo(
            run_id=f"foreign-{self.pid}",
            run_dir="",
            log_path=self.log_path or "",
            pid=self.pid,
            pgid=self.pgid,
            start_time=self.start_time,
            argv=list(self.cmdline),
            port=self.port or 0,
            launch=launch,
            owned=False,
            alive=True,
        )


@dataclass(frozen=True)
class StopOutcome:
    """How a stop ended: the exit the waiter recorded and which step of the escalation ended it."""

    code: int | None
    signal: int | None
    #: ``leader`` (SIGTERM to the leader: the server's own shutdown), ``group`` (SIGTERM to every
    #: process of the run), ``kill`` (SIGKILL), ``gone`` (nothing of the run was running); a Slurm
    #: job: ``scancel`` (it ran and has left) or ``dequeued`` (it was cancelled while still pending)
    ended_by: str
    seconds: float | None = None
    steps: tuple[dict[str, Any], ...] = ()
    port_busy: bool = False

    @property
    def exit(self) -> tuple[int | None, int | None]:
        return self.code, self.signal

    def describe(self) -> str:
        took = f" in {self.seconds:.1f} s" if self.seconds is not None else ""
        how = {
            "leader": "SIGTERM to the server's main process (its own shutdown)",
            "group": "SIGTERM to every process of the run (its own shutdown did not finish in time)",
            "kill": "SIGKILL, after SIGTERM was ignored",
            "scancel": "scancel (Slurm sent every task SIGTERM, SIGKILL after KillWait); the job has left",
        }.get(self.ended_by, self.ended_by)
        if self.ended_by == "gone":
            return "had already exited (nothing of it was running)"
        if self.ended_by == "dequeued":
            return f"cancelled with scancel{took} before it started (it was still queued)"
        busy = "; the port is still held" if self.port_busy else ""
        return f"stopped{took} by {how}{busy}"


class StopFailed(TransportError):
    """Processes of the run survived the whole escalation (SIGKILL included): the stop failed."""


class LaunchError(TransportError):
    pass


class UntrustedRunsDir(TransportError):
    """The host refuses the runs dir: someone else can write it (the message says how to fix it)."""


class LaunchRefused(LaunchError):
    """Another launch holds this host + port (its server is running or starting): never start a second."""


class LaunchOutcomeUnknown(LaunchError):
    """The launch command's answer was lost and the host could not be asked what became of it.

    ``run_id`` identifies it: :meth:`ServerControl.reconcile` finds it later. Until then nothing may
    be launched, as the server may well be loading.
    """

    def __init__(self, message: str, run_id: str, runs_dir: str):
        super().__init__(message)
        self.run_id = run_id
        self.runs_dir = runs_dir


def client_name() -> str:
    """Who launched, for the lock record a refusal quotes: ``user@laptop pid N``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "?"
    return f"{user}@{socket.gethostname()} pid {os.getpid()}"


def new_run_id(launch: int) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-L{launch}-{secrets.token_hex(3)}"


class ServerControl(Launcher):
    """A server as a detached process on the transport's host (see :mod:`eagletui.remote.launcher`)."""

    kind = "process"

    def __init__(
        self,
        transport: Transport,
        runs_dir: str = "~/.eagletui/runs",
        *,
        python: str = "python3",
        timings: Timings,
        runs_group: str = "",
    ):
        self.transport = transport
        self.runs_dir = runs_dir
        #: the group a shared runs dir may be writable by (the profile's ``runs_dir_group``)
        self.runs_group = runs_group
        #: Interpreter for the host-side operations; ``launch`` switches to the profile's python.
        self.python = python
        #: A "dead" verdict is acted on only if a second check this much later agrees.
        self.timings = timings
        self.confirm_delay = timings.control.confirm_dead_s
        self.reconcile_attempts = timings.control.reconcile_attempts
        self.reconcile_delay = timings.control.reconcile_s
        #: Why the last liveness check said what it said (shown when checks keep failing).
        self.last_check_detail = ""

    async def _host(self, op: str, *args: str, input: str | None = None, timeout: float | None = None):
        limit = self.timings.link.command_s if timeout is None else timeout
        return await self.transport.run(host_program(self.python, op, *args), input=input, timeout=limit)

    async def launch(
        self, profile: Profile, *, launch: int, args_override: dict[str, Any] | None = None
    ) -> RunInfo:
        argv = profile.argv(args_override)
        for name in profile.env:
            validate_env_name(name)
        env = {k: str(v) for k, v in profile.env.items()}
        # command.sh must relaunch the server, so it holds the real values (the host writes it 0600);
        # command.json, env.json and run.json are what gets read and shared: redacted.
        redactor = Redactor.for_profile(profile)
        redacted = redactor.env(env)
        shown_argv = redactor.argv(argv)
        run_id = new_run_id(launch)
        command_sh = (
            "# eagletui launch (holds secrets: keep it 0600)\n"
            f"cd {quote_path(profile.workdir)} && "
            + shlex.join(["env", "PYTHONUNBUFFERED=1", *(f"{k}={v}" for k, v in env.items()), *argv])
            + "\n"
        )
        spec: dict[str, Any] = {
            "runs_dir": profile.runs_dir or self.runs_dir,
            "runs_group": profile.runs_dir_group or self.runs_group,
            "run_id": run_id,
            "argv": argv,
            "argv_redacted": shown_argv,
            "env": env,
            "env_redacted": redacted,
            "command_sh": command_sh,
            "workdir": profile.workdir,
            "run": {
                "run_id": run_id,
                "argv": shown_argv,
                "port": profile.port,
                "launch": launch,
                "owned": True,
                "config": profile.snapshot(),
                "profile": profile.name,
            },
        }
        spec["client"] = client_name()
        python = profile.python or self.python
        info: Any = None
        try:
            res = await self.transport.run(
                host_program(python, "launch", run_id), input=json.dumps(spec), timeout=self.timings.control.launch_op_s
            )
        except (TransportError, TimeoutError, OSError) as exc:
            lost = f"{type(exc).__name__}: {exc}"
        else:
            lost = ""
            try:
                info = json.loads(res.stdout)
                if not isinstance(info, dict):
                    raise ValueError(info)
            except ValueError:
                lost = f"launcher gave no run info: {res.stdout[-500:]!r} {res.stderr[-500:]!r}"
        self.python = python
        if lost:
            # The command may have run on the host all the same: ask the host before saying anything.
            return await self._reconcile_launch(run_id, spec["runs_dir"], launch, profile, argv, lost)
        if "refused" in info:
            raise LaunchRefused(f"launch refused on {self.transport.target}: {info['refused']}")
        if "error" in info:
            raise LaunchError(f"cannot start {argv[0]!r}: {info['error']} (log: {info.get('log_path')})")
        self.runs_dir = spec["runs_dir"]
        return RunInfo(
            run_id=run_id,
            run_dir=info["run_dir"],
            log_path=info["log_path"],
            pid=int(info["pid"]),
            pgid=int(info["pgid"]),
            start_time=str(info["start_time"]),
            argv=argv,
            port=profile.port,
            launch=launch,
            profile=profile.name,
            launched_here=True,
        )

    async def _reconcile_launch(
        self, run_id: str, runs_dir: str, launch: int, profile: Profile, argv: list[str], why: str
    ) -> RunInfo:
        try:
            run = await self.reconcile(run_id, runs_dir)
        except LaunchOutcomeUnknown as exc:
            raise LaunchOutcomeUnknown(
                f"the launch command's answer was lost ({why}) and the host could not be asked whether "
                f"run {run_id} started ({exc}); not launching again until it can",
                run_id,
                runs_dir,
            ) from None
        if run is None:
            raise LaunchError(
                f"launch did not happen on {self.transport.target} ({why}); nothing was started"
            )
        self.runs_dir = runs_dir
        run.argv = argv
        run.launch = launch
        run.port = profile.port
        run.launched_here = True
        return run

    async def reconcile(self, run_id: str, runs_dir: str | None = None) -> RunInfo | None:
        """What became of launch ``run_id``: its RunInfo if it started (running or already exited),
        None if nothing on the host carries its run id, :class:`LaunchOutcomeUnknown` if the host
        cannot be asked (or keeps saying "still starting")."""
        runs_dir = runs_dir or self.runs_dir
        last = "no answer"
        for attempt in range(self.reconcile_attempts):
            if attempt:
                await self.timings.clock.sleep(self.reconcile_delay)
            try:
                res = await self._host("find", runs_dir, run_id, self.runs_group)
                out = json.loads(res.stdout)
                state = out["state"]
            except (TransportError, TimeoutError, OSError, ValueError, KeyError, TypeError) as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if state == "absent":
                return None
            if state == "refused":
                raise LaunchError(f"run {run_id}: {out.get('detail')}")
            data = out.get("run")
            if state in ("running", "exited", "unknown") and isinstance(data, dict):
                if "pid" not in data:  # it ended before its identity was written: nothing to follow
                    return None
                base = {"log_path": "", "argv": [], "port": 0, "launch": 0, "pgid": data["pid"]}
                run = RunInfo.from_dict({**base, **data, "run_id": run_id})
                run.alive = state != "exited"
                return run
            last = f"host says {state}"
        raise LaunchOutcomeUnknown(last, run_id, runs_dir)

    async def _probe(self, run: RunInfo) -> Liveness:
        try:
            res = await self._host("probe", str(int(run.pid)), str(run.start_time), timeout=self.timings.control.probe_s)
        except (TransportError, TimeoutError, OSError) as exc:
            self.last_check_detail = f"{type(exc).__name__}: {exc}"
            return Liveness.UNKNOWN
        try:
            out = json.loads(res.stdout)
            state = Liveness(out["state"])
        except (ValueError, KeyError, TypeError):
            self.last_check_detail = (
                f"unexpected answer (exit {res.exit_status}): {(res.stdout or res.stderr)[-200:]!r}"
            )
            return Liveness.UNKNOWN
        self.last_check_detail = str(out.get("detail", ""))
        return state

    async def liveness(self, run: RunInfo, *, confirm: bool = True) -> Liveness:
        """``DEAD`` only when the host says so twice (``confirm_delay`` apart); a failed check is
        ``UNKNOWN``, never ``DEAD``."""
        state = await self._probe(run)
        if state is Liveness.DEAD and confirm:
            await self.timings.clock.sleep(self.confirm_delay)
            again = await self._probe(run)
            if again is not Liveness.DEAD:
                return Liveness.ALIVE if again is Liveness.ALIVE else Liveness.UNKNOWN
        return state

    async def exit_info(self, run: RunInfo) -> tuple[int | None, int | None]:
        """(exit code, signal): a signal death reports code None, as the shell's 128+N is not a real code."""
        if not run.run_dir:
            return None, None
        rd = shlex.quote(run.run_dir)
        res = await self.transport.run(
            f"cat {rd}/exit_code 2>/dev/null; echo; cat {rd}/exit_signal 2>/dev/null; echo", timeout=self.timings.control.probe_s
        )
        parts = res.stdout.split("\n")
        code = _int(parts[0] if parts else "")
        sig = _int(parts[1] if len(parts) > 1 else "")
        if sig is not None:
            return None, sig
        return code, None

    async def exit_status(self, run: RunInfo) -> int | None:
        if not run.run_dir:
            return None
        res = await self.transport.run(["cat", f"{run.run_dir}/exit_code"], timeout=self.timings.control.probe_s)
        return _int(res.stdout) if res.exit_status == 0 else None

    async def stop(
        self,
        run: RunInfo,
        *,
        grace: float | None = None,
        group_wait: float | None = None,
        kill_wait: float | None = None,
    ) -> StopOutcome:
        """Stop ``run`` the way its server shuts itself down, escalating only as far as needed.

        SIGTERM to the leader alone (``grace`` s: SGLang drains, stops its schedulers and kills its
        own tree), then SIGTERM to every process of the run still alive (``group_wait`` s), then
        SIGKILL (``kill_wait`` s). Only processes the host proves are this run's are signalled
        (:func:`eagletui.remote.hostside.run_members`). :class:`StopFailed` when something survives,
        :class:`NotOurProcess` when the record does not match: a stop never fails silently.
        """
        if not run.owned:
            raise NotOurProcess(f"pid {run.pid} was not started by eagletui; refusing to signal it")
        t = self.timings.control
        grace = t.stop_grace_s if grace is None else grace
        group_wait = t.stop_group_wait_s if group_wait is None else group_wait
        kill_wait = t.stop_kill_wait_s if kill_wait is None else kill_wait
        res = await self._host(
            "stop",
            run.run_dir,
            str(int(run.pid)),
            str(int(run.pgid)),
            str(run.start_time),
            str(float(grace)),
            str(int(run.port or 0)),
            run.run_id,
            str(float(group_wait)),
            str(float(kill_wait)),
            self.runs_group,
            timeout=grace + group_wait + kill_wait + self.timings.control.stop_margin_s,
        )
        try:
            out = json.loads(res.stdout)
            if not isinstance(out, dict):
                raise ValueError(out)
        except ValueError:
            raise TransportError(
                f"stop failed on {self.transport.target}: {res.stderr.strip()[-500:] or res.stdout[-500:]}"
            ) from None
        result = out.get("result")
        if result == "not_ours":
            raise NotOurProcess(f"refusing to signal pid {run.pid}: {out.get('reason')}")
        if result == "unknown":
            raise TransportError(f"cannot tell whether pid {run.pid} is running: {out.get('reason')}")
        if result == "failed":
            left = ", ".join(
                f"pid {d.get('pid')} {d.get('name', '?')} (state {d.get('state', '?')})"
                for d in out.get("left") or []
                if isinstance(d, dict)
            )
            raise StopFailed(f"the server of run {run.run_id} did not stop: {out.get('reason')}: {left}")
        if result not in ("stopped", "gone"):
            raise TransportError(f"stop on {self.transport.target}: unexpected answer {out!r:.300}")
        run.alive = False
        sig = out.get("signal")
        code = out.get("code")
        return StopOutcome(
            code=None if sig is not None else _int(str(code)),
            signal=_int(str(sig)) if sig is not None else None,
            ended_by=str(out.get("ended_by") or result),
            seconds=out.get("seconds") if isinstance(out.get("seconds"), (int, float)) else None,
            steps=tuple(d for d in out.get("steps") or [] if isinstance(d, dict)),
            port_busy=bool(out.get("port_busy")),
        )

    async def members(self, run: RunInfo) -> list[dict[str, Any]]:
        """The run's live processes as the host proves them ([{pid, proof, name}]); [] if unknown."""
        if not run.owned or not run.run_dir:
            return []
        try:
            res = await self._host("members", run.run_dir, run.run_id, self.runs_group)
        except (TransportError, TimeoutError, OSError):
            return []
        return _json_rows(res.stdout, "run members") if res.exit_status == 0 else []

    async def list_runs(self) -> list[RunInfo]:
        """The runs of the runs dir, newest first; those set aside (``stale``, ``untrusted``) come with
        ``alive`` and ``owned`` false and a ``note``. :class:`UntrustedRunsDir` when the host refuses
        the runs dir itself."""
        res = await self._host("list", self.runs_dir, self.runs_group)
        if res.exit_status != 0:
            raise TransportError(f"listing runs failed: {res.stderr.strip()[-500:]}")
        rows = _json_rows(res.stdout, "listing runs", refused=True)
        rows.sort(key=lambda r: (r.get("mtime", 0), r.get("run_id", "")), reverse=True)
        runs = []
        aside = {"log_path": "", "pid": 0, "pgid": 0, "start_time": "", "argv": [], "port": 0, "launch": 0}
        for r in rows:
            try:
                run = RunInfo.from_dict({**aside, **r} if r.get("state") == "untrusted" else r)
            except (TypeError, ValueError):
                continue  # one damaged run.json must not hide the others
            if run.state in ("stale", "untrusted"):
                run.alive = run.owned = False
            runs.append(run)
        return runs

    async def discover_foreign(self) -> list[ForeignServer]:
        res = await self._host("discover")
        if res.exit_status != 0:
            raise TransportError(f"process discovery failed: {res.stderr.strip()[-500:]}")
        out = []
        for r in _json_rows(res.stdout, "process discovery"):
            out.append(
                ForeignServer(
                    pid=r["pid"],
                    cmdline=r["cmdline"],
                    log_path=r.get("log_path"),
                    port=r.get("port"),
                    pgid=r.get("pgid", 0),
                    start_time=r.get("start_time", ""),
                )
            )
        return out


def quote_path(path: str) -> str:
    """Quote for a shell but keep a leading ``~`` live, so the command stays copy-pasteable."""
    if path == "~":
        return "~"
    if path.startswith("~/"):
        return "~/" + shlex.quote(path[2:])
    return shlex.quote(path)


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except (ValueError, AttributeError):
        return None


def _json_rows(text: str, what: str, *, refused: bool = False) -> list[dict[str, Any]]:
    """Host script output; anything else (a login banner from ~/.bashrc) is a clear error, not a crash.
    With ``refused``, the host's ``{"refused": why}`` (a runs dir it will not trust) is
    :class:`UntrustedRunsDir`."""
    try:
        rows = json.loads(text or "[]")
    except ValueError:
        raise TransportError(
            f"{what}: unexpected output from the host (check ~/.bashrc for commands that print): {text[:200]!r}"
        ) from None
    if refused and isinstance(rows, dict) and "refused" in rows:
        raise UntrustedRunsDir(str(rows["refused"]))
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
