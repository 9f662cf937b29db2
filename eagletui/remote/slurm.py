"""The server as a Slurm job: submit, watch, cancel and find again, through Slurm's own commands.

The transport is the one eagletui already has: SSH to the login node, or ``local`` on it. Every Slurm
operation is one round trip to :mod:`eagletui.remote.hostslurm` there, which runs ``sbatch``,
``scontrol``, ``squeue`` and ``scancel`` next to the scheduler and answers JSON.

The contract is the :class:`~eagletui.remote.launcher.Launcher`'s, with Slurm's facts behind it:

* **launch** writes the batch and node scripts (0600) into the run dir on the shared filesystem,
  ``sbatch --parsable`` queues the job and the job id goes into the run's record; one job per profile
  (and sweep slot) at a time: a submit while an earlier job of it is queued or running is refused;
* **liveness** is the job's state (``scontrol show job``): pending, running or completing is alive,
  a final state (or a job Slurm no longer knows) is dead, a failed ``scontrol`` is unknown;
* **stop** is ``scancel`` (Slurm sends every step SIGTERM, then SIGKILL after ``KillWait``) and a wait
  until the job has left; only a job whose id, name and user prove it eagletui's is cancelled;
* **list_runs** finds this runs dir's jobs again by id and name, for reattach and sweep resume.

What a job shows while it waits (pending reason, queue position) and which nodes it got come out
of the same state calls: :meth:`SlurmLauncher.job_state` keeps the last answer for the source
(:mod:`eagletui.remote.jobsource`).
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from eagletui.core.profile.model import Profile, validate_env_name
from eagletui.core.profile.redact import Redactor
from eagletui.core.profile.slurm_script import (
    ScriptError,
    batch_script,
    job_name,
    job_name_pattern,
    node_script,
)
from eagletui.core.timings import Timings
from eagletui.remote.control import (
    LaunchError,
    LaunchOutcomeUnknown,
    LaunchRefused,
    Liveness,
    RunInfo,
    StopFailed,
    StopOutcome,
    UntrustedRunsDir,
    client_name,
    new_run_id,
)
from eagletui.remote.launcher import Launcher
from eagletui.remote.transport import NotOurProcess, Transport, TransportError, host_program

if TYPE_CHECKING:
    from eagletui.core.profile.slurm import SlurmSettings
    from eagletui.remote.preflight import Check
    from eagletui.remote.source import LiveSource

#: Job states Slurm may still run code in (COMPLETING: the steps are being killed).
ACTIVE_STATES = frozenset(
    {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING",
     "STAGE_OUT", "STOPPED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}
)  # fmt: skip
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class SlurmLauncher(Launcher):
    """Servers as Slurm jobs of one cluster (see the module docstring)."""

    kind = "slurm job"

    def __init__(
        self,
        transport: Transport,
        settings: SlurmSettings,
        runs_dir: str = "~/.eagletui/runs",
        *,
        python: str = "python3",
        slot: int = 0,
        timings: Timings,
        runs_group: str = "",
    ) -> None:
        self.transport = transport
        self.settings = settings
        self.runs_dir = runs_dir
        #: the group a shared runs dir may be writable by (the profile's ``runs_dir_group``)
        self.runs_group = runs_group
        self.python = python
        #: which of a sweep's parallel jobs this launcher submits (its lock, ports and job name)
        self.slot = slot
        self.timings = timings
        self.reconcile_attempts = timings.control.reconcile_attempts
        self.reconcile_delay = timings.control.reconcile_s
        self.last_check_detail = ""
        #: the last ``slurm_state`` answer per run id (the source turns it into queue/node events)
        self.states: dict[str, dict[str, Any]] = {}
        #: the job as this launcher's own stop left it (final, out of the queue): a poll asked while the
        #: job was still COMPLETING can answer after the stop and must not be the state it "ended in"
        self.ended: dict[str, dict[str, Any]] = {}
        #: runs this launcher is cancelling or has cancelled: their CANCELLED is a stop, not a failure
        self.cancelling: set[str] = set()

    @property
    def conf(self) -> str:
        return self.settings.slurm_conf

    async def _host(self, op: str, *args: str, input: str | None = None, timeout: float | None = None):
        limit = self.timings.link.command_s if timeout is None else timeout
        return await self.transport.run(host_program(self.python, op, *args), input=input, timeout=limit)

    async def _json(self, op: str, *args: str, input: str | None = None, timeout: float | None = None) -> Any:
        res = await self._host(op, *args, input=input, timeout=timeout)
        try:
            return json.loads(res.stdout)
        except ValueError:
            raise TransportError(
                f"{op} on {self.transport.target}: unexpected answer (exit {res.exit_status}): "
                f"{(res.stderr or res.stdout).strip()[-400:]!r}"
            ) from None

    # ------------------------------------------------------------------ launch

    def lock_key(self, profile: Profile) -> str:
        return f"{profile.name}-slot{self.slot}"

    async def launch(
        self, profile: Profile, *, launch: int, args_override: dict[str, Any] | None = None
    ) -> RunInfo:
        s = self.settings
        args = dict(profile.args if args_override is None else args_override)
        if profile.host in LOOPBACK and "--host" not in args:
            # A compute node's loopback is unreachable from the login node that benchmarks it.
            args["--host"] = "0.0.0.0"
        argv = profile.argv(args)
        for name in profile.env:
            validate_env_name(name)
        env = {k: str(v) for k, v in profile.env.items()}
        redactor = Redactor.for_profile(profile)
        run_id = new_run_id(launch)
        name = job_name(profile.name, run_id, self.slot)
        try:
            node_sh = node_script(
                s,
                run_id=run_id,
                argv=argv,
                env=env,
                workdir=profile.workdir,
                dist_port=s.dist_port + self.slot,
            )
            job_sh = batch_script(s, name=name, run_id=run_id, profile_name=profile.name)
        except (ScriptError, ValueError) as exc:
            raise LaunchError(str(exc)) from None
        shown_argv = redactor.argv(argv)
        record = {
            "run_id": run_id,
            "launcher": "slurm",
            "job_name": name,
            "argv": shown_argv,
            "port": profile.port,
            "launch": launch,
            "owned": True,
            "config": profile.snapshot(),
            "profile": profile.name,
            "num_nodes": s.nodes,
            "slot": self.slot,
        }
        spec: dict[str, Any] = {
            "runs_dir": profile.runs_dir or self.runs_dir,
            "runs_group": profile.runs_dir_group or self.runs_group,
            "run_id": run_id,
            "lock_key": self.lock_key(profile),
            # the guard: no submit while Slurm lists a job of this profile and slot
            "job_pattern": job_name_pattern(profile.name, self.slot),
            "slurm_conf": self.conf,
            "client": client_name(),
            "files": {
                "job.sh": job_sh,
                "node.sh": node_sh,
                "command.json": json.dumps(shown_argv),
                "env.json": json.dumps(redactor.env(env), indent=1, sort_keys=True),
            },
            "run": record,
        }
        python = profile.python or self.python
        self.python = python
        try:
            res = await self.transport.run(
                host_program(python, "slurm_submit", run_id), input=json.dumps(spec), timeout=self.timings.control.submit_s
            )
            info = json.loads(res.stdout)
            if not isinstance(info, dict):
                raise ValueError(info)
        except (TransportError, TimeoutError, OSError, ValueError) as exc:
            return await self._reconcile_launch(run_id, spec["runs_dir"], name, launch, argv, f"{exc}")
        if "refused" in info:
            raise LaunchRefused(f"submit refused on {self.transport.target}: {info['refused']}")
        if "error" in info:
            raise LaunchError(f"Slurm did not take the job: {info['error']}")
        self.runs_dir = spec["runs_dir"]
        rd = str(info["run_dir"])
        return self._run_info(
            {**record, "run_dir": rd, "job_id": str(info["job_id"]), "user": str(info.get("user", ""))},
            argv=argv,
            launched_here=True,
        )

    def _run_info(
        self, rec: dict[str, Any], *, argv: list[str] | None = None, launched_here: bool = False
    ) -> RunInfo:
        rd = str(rec.get("run_dir", ""))
        n = int(rec.get("num_nodes") or 1)
        run = RunInfo(
            run_id=str(rec.get("run_id", "")),
            run_dir=rd,
            log_path=f"{rd}/node-0.log",
            pid=0,
            pgid=0,
            start_time="",
            argv=list(argv if argv is not None else rec.get("argv") or []),
            port=int(rec.get("port") or 0),
            launch=int(rec.get("launch") or 0),
            owned=bool(rec.get("owned", True)),
            alive=bool(rec.get("alive", True)),
            config=as_dict(rec.get("config")),
            profile=str(rec.get("profile", "")),
            launched_here=launched_here,
            launcher="slurm",
            job_id=str(rec.get("job_id", "")),
            job_name=str(rec.get("job_name", "")),
            user=str(rec.get("user", "")),
            node_logs=[f"{rd}/node-{i}.log" for i in range(n)],
            batch_log=f"{rd}/batch.log",
            num_nodes=n,
            slot=int(rec.get("slot") or 0),
        )
        return run

    async def _reconcile_launch(
        self, run_id: str, runs_dir: str, name: str, launch: int, argv: list[str], why: str
    ) -> RunInfo:
        try:
            run = await self.reconcile(run_id, runs_dir, job_name=name)
        except LaunchOutcomeUnknown as exc:
            raise LaunchOutcomeUnknown(
                f"the submit's answer was lost ({why}) and the login node could not be asked whether run "
                f"{run_id} was queued ({exc}); not submitting again until it can",
                run_id,
                runs_dir,
            ) from None
        if run is None:
            raise LaunchError(
                f"the job was not submitted on {self.transport.target} ({why}); nothing is queued"
            )
        self.runs_dir = runs_dir
        run.argv, run.launch, run.launched_here = argv, launch, True
        return run

    async def reconcile(
        self, run_id: str, runs_dir: str | None = None, *, job_name: str | None = None
    ) -> RunInfo | None:
        runs_dir = runs_dir or self.runs_dir
        name = job_name or ""
        last = "no answer"
        for attempt in range(self.reconcile_attempts):
            if attempt:
                await self.timings.clock.sleep(self.reconcile_delay)
            try:
                out = await self._json("slurm_find", runs_dir, run_id, name, self.conf, self.runs_group)
                state = out["state"]
            except (TransportError, TimeoutError, OSError, KeyError, TypeError) as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if state == "absent":
                return None
            if state == "refused":
                raise LaunchError(f"run {run_id}: {out.get('detail')}")
            if state == "submitted" and isinstance(out.get("run"), dict):
                return self._run_info(out["run"])
            last = f"login node says {state}"
        raise LaunchOutcomeUnknown(last, run_id, runs_dir)

    # ------------------------------------------------------------------ watch

    async def job_state(self, run: RunInfo) -> dict[str, Any] | None:
        """Ask Slurm about the run's job now (``slurm_state``); None when it cannot be asked."""
        try:
            out = await self._json("slurm_state", run.run_dir, run.job_id, self.conf, timeout=self.timings.control.scheduler_s)
        except (TransportError, TimeoutError, OSError) as exc:
            self.last_check_detail = f"{type(exc).__name__}: {exc}"
            return None
        if not isinstance(out, dict):
            return None
        self.states[run.run_id] = out
        nodes = out.get("nodes")
        if isinstance(nodes, list) and nodes and not run.nodes:
            pairs = [n for n in nodes if isinstance(n, list) and len(n) == 2]
            if pairs and all(p[1] for p in pairs):
                run.nodes = [str(p[0]) for p in pairs]
                run.node_addrs = [str(p[1]) for p in pairs]
        return out

    async def liveness(self, run: RunInfo, *, confirm: bool = True) -> Liveness:
        """Alive while the job is pending, running or completing; dead in a final state or once Slurm
        no longer knows it; unknown when ``scontrol`` could not be asked."""
        if not run.job_id:
            return Liveness.DEAD
        out = await self.job_state(run)
        if out is None:
            return Liveness.UNKNOWN
        state = out.get("state")
        job = as_dict(out.get("job"))
        if state == "unknown":
            self.last_check_detail = str(out.get("detail", ""))
            return Liveness.UNKNOWN
        if state == "gone":
            self.last_check_detail = f"job {run.job_id} is no longer known to Slurm"
            return Liveness.DEAD
        js = str(job.get("state", ""))
        self.last_check_detail = f"job {run.job_id} is {js}"
        return Liveness.ALIVE if js in ACTIVE_STATES else Liveness.DEAD

    def job_facts(self, run: RunInfo) -> dict[str, Any] | None:
        return self.final_job(run)

    def final_job(self, run: RunInfo) -> dict[str, Any] | None:
        """The job's facts as this launcher's stop left it, else from the last answer (state, exit,
        reason); None if never asked."""
        if run.run_id in self.ended:
            return self.ended[run.run_id]
        out = self.states.get(run.run_id)
        job = out.get("job") if isinstance(out, dict) else None
        return job if isinstance(job, dict) else None

    async def exit_info(self, run: RunInfo) -> tuple[int | None, int | None]:
        job = self.final_job(run)
        if job is None or str(job.get("state", "")) in ACTIVE_STATES:
            await self.job_state(run)
            job = self.final_job(run)
        if job is None:
            return None, None
        code, sig = job.get("exit_code"), job.get("signal")
        return (code if isinstance(code, int) else None), (sig if isinstance(sig, int) else None)

    # ------------------------------------------------------------------ stop

    async def stop(self, run: RunInfo, *, grace: float | None = None) -> StopOutcome:
        """``scancel`` the run's job and wait until it has left the queue (see the module docstring)."""
        if not run.owned or not run.job_id:
            raise NotOurProcess(f"{run.handle} was not submitted by eagletui; refusing to cancel it")
        grace = self.timings.control.stop_grace_s if grace is None else grace
        timeout = max(grace, 5.0) + self.timings.control.cancel_margin_s
        self.cancelling.add(run.run_id)
        try:
            return await self._cancel(run, timeout)
        except BaseException:
            self.cancelling.discard(run.run_id)  # it runs on: a later death is a death again
            raise

    async def _cancel(self, run: RunInfo, timeout: float) -> StopOutcome:
        out = await self._json(
            "slurm_cancel",
            run.run_dir,
            run.job_id,
            run.job_name,
            str(timeout),
            self.conf,
            timeout=timeout + 30,
        )
        if not isinstance(out, dict):
            raise TransportError(f"scancel on {self.transport.target}: unexpected answer {out!r:.300}")
        result = out.get("result")
        job = as_dict(out.get("job"))
        if job:
            self.states[run.run_id] = {"state": "found", "job": job}
        if result == "not_ours":
            raise NotOurProcess(f"refusing to cancel job {run.job_id}: {out.get('reason')}")
        if result == "unknown":
            raise TransportError(f"cannot tell whether job {run.job_id} is still queued: {out.get('reason')}")
        if result == "failed":
            raise StopFailed(f"job {run.job_id} of run {run.run_id} did not leave: {out.get('reason')}")
        if result not in ("stopped", "gone"):
            raise TransportError(f"scancel on {self.transport.target}: unexpected answer {out!r:.300}")
        if job:
            self.ended[run.run_id] = job
        run.alive = False
        code, sig = job.get("exit_code"), job.get("signal")
        steps = tuple(d for d in out.get("steps") or [] if isinstance(d, dict))
        ended = "gone" if result == "gone" else ("dequeued" if out.get("was") == "PENDING" else "scancel")
        seconds = out.get("seconds")
        return StopOutcome(
            code=code if isinstance(code, int) else None,
            signal=sig if isinstance(sig, int) else None,
            ended_by=ended,
            seconds=float(seconds) if isinstance(seconds, int | float) else None,
            steps=steps,
        )

    # ------------------------------------------------------------------ find again

    async def list_runs(self) -> list[RunInfo]:
        rows = await self._json("slurm_list", self.runs_dir, self.conf, self.runs_group)
        if isinstance(rows, dict) and "refused" in rows:
            raise UntrustedRunsDir(str(rows["refused"]))
        if not isinstance(rows, list):
            raise TransportError(f"listing jobs on {self.transport.target}: unexpected answer")
        rows = [r for r in rows if isinstance(r, dict)]
        rows.sort(key=lambda r: (r.get("mtime", 0), r.get("run_id", "")), reverse=True)
        out = []
        for r in rows:
            try:
                out.append(self._run_info(r))
            except (TypeError, ValueError):
                continue
        return out

    # ------------------------------------------------------------------ optional capabilities

    def live_source(
        self, transport: Transport, run: RunInfo, *, log_format: str | None = None, history: bool = False
    ) -> LiveSource:
        from eagletui.remote.jobsource import JobSource

        return JobSource(transport, self, run, timings=self.timings, log_format=log_format, history=history)

    async def check(self) -> dict[str, Any]:
        """What the preflight asks the login node: sbatch's version and the partition's state."""
        return await self._json("slurm_check", self.settings.partition, self.conf, timeout=self.timings.control.scheduler_s)

    async def adapt_preflight(self, checks: list[Check]) -> list[Check]:
        """The login node's checks, minus what only the job's nodes can answer (their GPUs, the port),
        plus Slurm's own: sbatch answers, the partition exists and is up."""
        from eagletui.remote.preflight import Check

        out: list[Check] = []
        for c in checks:
            if c.name in ("gpus", "gpus free"):
                continue  # the login node's GPUs (usually none) are not the job's
            if c.name == "port":
                out.append(Check("port", "pass", "the port is bound on the job's node (not checked here)"))
                continue
            out.append(c)
        try:
            info = await self.check()
        except (TransportError, TimeoutError, OSError) as exc:
            return [*out, Check("slurm", "unknown", f"cannot ask the login node about Slurm: {exc}")]
        if not isinstance(info, dict) or not info.get("sbatch_ok"):
            why = info.get("sbatch") if isinstance(info, dict) else info
            return [*out, Check("slurm", "fail", f"sbatch does not run on {self.transport.target}: {why}")]
        part = self.settings.partition
        rows = [r.split("|") for r in str(info.get("sinfo", "")).splitlines() if r.count("|") >= 3]
        if not info.get("sinfo_ok"):
            out.append(Check("slurm", "warn", f"{info.get('sbatch')}; sinfo failed: {info.get('sinfo')}"))
        elif part and not rows:
            out.append(Check("slurm", "fail", f"partition {part!r} does not exist on this cluster"))
        elif part and all(r[1] != "up" for r in rows):
            out.append(Check("slurm", "fail", f"partition {part!r} is {rows[0][1]}: jobs there do not start"))
        else:
            nodes = sum(int(r[2]) for r in rows if r[2].isdigit())
            where = f"partition {part}" if part else "the default partition"
            out.append(Check("slurm", "pass", f"{info.get('sbatch')}; {where}: {nodes} node(s)"))
            if nodes and self.settings.nodes > nodes:
                out[-1] = Check(
                    "slurm", "fail", f"the job asks for {self.settings.nodes} nodes, {where} has {nodes}"
                )
        return out


def as_dict(value: Any) -> dict[str, Any]:
    """A JSON object from the host, or {} for anything else (a damaged answer is not a crash)."""
    return value if isinstance(value, dict) else {}


def describe_cmd(run: RunInfo) -> str:
    """The shell line a person would run to look at the job (shown in notices)."""
    return shlex.join(["scontrol", "show", "job", run.job_id])
