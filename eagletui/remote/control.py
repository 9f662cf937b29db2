"""Launch, watch and stop SGLang servers on a host without ever signalling a stranger's process.

A launch is detached from the connection that started it (own session, stdin from /dev/null, output to
a log file), so the TUI can quit, lose Wi-Fi or crash and the 10-minute model load carries on; a
later session finds it again through the run directory. Identity is pid + kernel start time + an
``EAGLETUI_RUN_ID`` in the process environment, checked on the host right before any signal.
"""

from __future__ import annotations

import json
import secrets
import shlex
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from eagletui.core.profile import Profile, validate_env_name
from eagletui.core.redact import Redactor
from eagletui.remote import _hostscripts
from eagletui.remote.transport import NotOurProcess, Transport, TransportError


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


class LaunchError(TransportError):
    pass


def _parse_stat(text: str) -> list[str] | None:
    """Fields of /proc/PID/stat after the ``(comm)``; comm may contain spaces and parentheses."""
    try:
        return text.rsplit(")", 1)[1].split()
    except IndexError:
        return None


def new_run_id(launch: int) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-L{launch}-{secrets.token_hex(3)}"


class ServerControl:
    def __init__(self, transport: Transport, runs_dir: str = "~/.eagletui/runs", *, python: str = "python3"):
        self.transport = transport
        self.runs_dir = runs_dir
        #: Interpreter for the tiny host-side helpers; ``launch`` switches to the profile's python.
        self.python = python

    async def _py(self, script: str, *args: str, input: str | None = None, timeout: float | None = 30):
        return await self.transport.run([self.python, "-c", script, *args], input=input, timeout=timeout)

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
        spec = {
            "runs_dir": profile.runs_dir or self.runs_dir,
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
            },
        }
        python = profile.python or self.python
        res = await self.transport.run(
            [python, "-c", _hostscripts.LAUNCH], input=json.dumps(spec), timeout=60
        )
        if res.exit_status != 0:
            raise LaunchError(
                f"launch failed on {self.transport.target}: {res.stderr.strip() or res.stdout.strip()}"
            )
        try:
            info = json.loads(res.stdout)
        except ValueError:
            raise LaunchError(
                f"launcher gave no run info: {res.stdout[-500:]!r} {res.stderr[-500:]!r}"
            ) from None
        if "error" in info:
            raise LaunchError(f"cannot start {argv[0]!r}: {info['error']} (log: {info.get('log_path')})")
        self.python = python
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
        )

    async def is_alive(self, run: RunInfo) -> bool:
        res = await self.transport.run(["cat", f"/proc/{int(run.pid)}/stat"], timeout=15)
        if res.exit_status != 0:
            return False
        fields = _parse_stat(res.stdout)
        if not fields or len(fields) < 20:
            return False
        return fields[19] == str(run.start_time) and fields[0] not in ("Z", "X")

    async def exit_info(self, run: RunInfo) -> tuple[int | None, int | None]:
        """(exit code, signal): a signal death reports code None, as the shell's 128+N is not a real code."""
        if not run.run_dir:
            return None, None
        rd = shlex.quote(run.run_dir)
        res = await self.transport.run(
            f"cat {rd}/exit_code 2>/dev/null; echo; cat {rd}/exit_signal 2>/dev/null; echo", timeout=15
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
        res = await self.transport.run(["cat", f"{run.run_dir}/exit_code"], timeout=15)
        return _int(res.stdout) if res.exit_status == 0 else None

    async def stop(self, run: RunInfo, *, grace: float = 15.0) -> tuple[int | None, int | None]:
        if not run.owned:
            raise NotOurProcess(f"pid {run.pid} was not started by eagletui; refusing to signal it")
        res = await self._py(
            _hostscripts.STOP,
            run.run_dir,
            str(int(run.pid)),
            str(int(run.pgid)),
            str(run.start_time),
            str(float(grace)),
            str(int(run.port or 0)),
            run.run_id,
            timeout=grace + 60,
        )
        try:
            out = json.loads(res.stdout)
        except ValueError:
            raise TransportError(
                f"stop failed on {self.transport.target}: {res.stderr.strip()[-500:]}"
            ) from None
        if out.get("result") == "not_ours":
            raise NotOurProcess(f"refusing to signal pid {run.pid}: {out.get('reason')}")
        run.alive = False
        code, sig = out.get("code"), out.get("signal")
        if sig is not None:
            return None, int(sig)
        return code, None

    async def list_runs(self) -> list[RunInfo]:
        res = await self._py(_hostscripts.LIST, self.runs_dir, timeout=30)
        if res.exit_status != 0:
            raise TransportError(f"listing runs failed: {res.stderr.strip()[-500:]}")
        rows = _json_rows(res.stdout, "listing runs")
        rows.sort(key=lambda r: (r.get("mtime", 0), r.get("run_id", "")), reverse=True)
        runs = []
        for r in rows:
            try:
                runs.append(RunInfo.from_dict(r))
            except (TypeError, ValueError):
                continue  # one damaged run.json must not hide the others
        return runs

    async def discover_foreign(self) -> list[ForeignServer]:
        res = await self._py(_hostscripts.DISCOVER, timeout=30)
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


def _json_rows(text: str, what: str) -> list[dict[str, Any]]:
    """Host script output; anything else (a login banner from ~/.bashrc) is a clear error, not a crash."""
    try:
        rows = json.loads(text or "[]")
    except ValueError:
        raise TransportError(
            f"{what}: unexpected output from the host (check ~/.bashrc for commands that print): {text[:200]!r}"
        ) from None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
