#!/usr/bin/env python3
"""A whole Slurm cluster on this machine, for eagletui's tests and for trying the Slurm target by hand.

Debian's ``slurm-wlm`` and ``munge`` (``apt-get install -y slurm-wlm munge``), run as root: one
``munged`` on its own socket, one ``slurmctld`` and one ``slurmd -N NAME`` per emulated node, every
node at ``NodeAddr=127.0.0.1`` on its own port. Everything (config, key, state, spool, logs, pid
files) lives in one directory; nothing under ``/etc`` or ``/var`` is read or written, and Slurm's
commands find the cluster through ``SLURM_CONF`` (``eval "$(tools/slurm_cluster.py env DIR)"``).

Partitions:

* ``debug`` (default): the running nodes ``n1`` and ``n2``;
* ``nofree``: ``n3``, a node that is configured but never started, so a job there pends with a
  real pending reason (what a user sees on a full cluster).

Each node declares ``Gres=gpu:8`` without device files, so ``--gpus-per-node`` is accepted and
scheduled as on a GPU cluster (nothing is bound: there are no GPUs here).

Commands (idempotent: ``start`` on a running cluster checks it and returns; ``stop`` on a stopped
one does nothing)::

    tools/slurm_cluster.py start [DIR]    # DIR defaults to /tmp/eagletui-slurm
    tools/slurm_cluster.py status [DIR]
    tools/slurm_cluster.py env [DIR]      # prints export SLURM_CONF=...
    tools/slurm_cluster.py stop [DIR]

``start`` prints one JSON line: the directory, ``SLURM_CONF``, the nodes and how long it took.
Stdlib only; imported by the tests (``tests/conftest_slurm.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_DIR = "/tmp/eagletui-slurm"
NODES = ("n1", "n2")
#: Configured, never started: the ``nofree`` partition's only node.
IDLE_NODE = "n3"
CLUSTER = "eagletui"
#: Short limits keep the tests quick: a finished job is forgotten MIN_JOB_AGE s after it ends (the
#: "without accounting Slurm forgets" case is then testable), scancel escalates to SIGKILL after
#: KILL_WAIT s.
MIN_JOB_AGE = 30
KILL_WAIT = 5
GPUS_PER_NODE = 8
CPUS_PER_NODE = 4
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "srun")


class ClusterError(RuntimeError):
    pass


def _free_ports(n: int) -> list[int]:
    """n distinct free ports outside the kernel's ephemeral range (eagletui's ``free_port`` says why)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from eagletui.commands.demo import free_port

    ports: list[int] = []
    while len(ports) < n:
        p = free_port()
        if p not in ports:
            ports.append(p)
    return ports


def missing_binaries() -> list[str]:
    found = []
    for b in BINARIES:
        if shutil.which(b) is None and not Path("/usr/sbin", b).exists():
            found.append(b)
    return found


def _bin(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class Cluster:
    """One emulated cluster rooted at ``root``."""

    def __init__(self, root: str | os.PathLike[str] = DEFAULT_DIR):
        self.root = Path(root).absolute()
        self.conf = self.root / "slurm.conf"
        self.munge_dir = self.root / "munge"
        self.socket = self.munge_dir / "munge.socket"
        self.ctld_dir = self.root / "ctld"
        self.ports_file = self.root / "ports.json"

    # ------------------------------------------------------------------ environment

    @property
    def env(self) -> dict[str, str]:
        """What Slurm's commands need to talk to this cluster (merged into os.environ by callers)."""
        return {"SLURM_CONF": str(self.conf)}

    def _environ(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env)
        return env

    def run(self, *argv: str, timeout: float = 20, check: bool = True) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [_bin(argv[0]), *argv[1:]],
            env=self._environ(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if check and res.returncode != 0:
            raise ClusterError(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()[-800:]}")
        return res

    # ------------------------------------------------------------------ config

    def _ports(self) -> dict[str, int]:
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(self.ports_file.read_text())
            if isinstance(data, dict) and all(isinstance(v, int) for v in data.values()):
                return data
        names = ["ctld", *NODES, IDLE_NODE]
        ports = dict(zip(names, _free_ports(len(names)), strict=True))
        self.ports_file.write_text(json.dumps(ports))
        return ports

    def config_text(self, ports: dict[str, int]) -> str:
        r = self.root
        lines = [
            "# eagletui's emulated cluster (tools/slurm_cluster.py); every node is 127.0.0.1",
            f"ClusterName={CLUSTER}",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ports['ctld']}",
            f"SlurmdPort={ports[NODES[0]]}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.socket}",
            f"StateSaveLocation={r / 'ctld' / 'state'}",
            f"SlurmctldPidFile={r / 'ctld' / 'slurmctld.pid'}",
            f"SlurmctldLogFile={r / 'ctld' / 'slurmctld.log'}",
            f"SlurmdSpoolDir={r}/%n/spool",
            f"SlurmdPidFile={r}/%n/slurmd.pid",
            f"SlurmdLogFile={r}/%n/slurmd.log",
            "SlurmdParameters=config_overrides",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "GresTypes=gpu",
            "ReturnToService=2",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            f"MinJobAge={MIN_JOB_AGE}",
            f"KillWait={KILL_WAIT}",
            "Waittime=0",
            "SchedulerParameters=sched_interval=1,bf_interval=1",
            "MessageTimeout=10",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
        ]
        for name in (*NODES, IDLE_NODE):
            lines.append(
                f"NodeName={name} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()} Port={ports[name]} "
                f"CPUs={CPUS_PER_NODE} RealMemory=1000 Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN"
            )
        lines.append(f"PartitionName=debug Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP")
        lines.append(f"PartitionName=nofree Nodes={IDLE_NODE} MaxTime=INFINITE State=UP")
        return "\n".join(lines) + "\n"

    def gres_text(self) -> str:
        # gres/gpu needs device files: links to /dev/null stand in for /dev/nvidia0..7 (Slurm stats
        # them for a character device and sets CUDA_VISIBLE_DEVICES from their indices).
        files = f"{self.root}/dev/gpu[0-{GPUS_PER_NODE - 1}]"
        return "AutoDetect=off\n" + "".join(
            f"NodeName={n} Name=gpu File={files}\n" for n in (*NODES, IDLE_NODE)
        )

    def _write_config(self) -> None:
        for d in (self.root, self.munge_dir, self.ctld_dir, self.ctld_dir / "state"):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        for n in NODES:
            (self.root / n / "spool").mkdir(mode=0o700, parents=True, exist_ok=True)
        dev = self.root / "dev"
        dev.mkdir(mode=0o700, exist_ok=True)
        for i in range(GPUS_PER_NODE):
            link = dev / f"gpu{i}"
            if not link.is_symlink():
                link.symlink_to("/dev/null")
        ports = self._ports()
        self.conf.write_text(self.config_text(ports))
        (self.root / "gres.conf").write_text(self.gres_text())
        key = self.munge_dir / "munge.key"
        if not key.exists():
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(1024))

    # ------------------------------------------------------------------ daemons

    def _pid(self, path: Path) -> int | None:
        try:
            pid = int(path.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return pid
        return pid if _daemon(pid) else None

    def _pidfiles(self) -> dict[str, Path]:
        out = {"munged": self.munge_dir / "munged.pid", "slurmctld": self.ctld_dir / "slurmctld.pid"}
        for n in NODES:
            out[f"slurmd {n}"] = self.root / n / "slurmd.pid"
        return out

    def daemons(self) -> dict[str, int | None]:
        return {name: self._pid(p) for name, p in self._pidfiles().items()}

    def _start_munged(self) -> None:
        if self._pid(self.munge_dir / "munged.pid"):
            return
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        d = self.munge_dir
        self._daemon(
            [
                _bin("munged"),
                "--force",
                f"--socket={self.socket}",
                f"--key-file={d / 'munge.key'}",
                f"--pid-file={d / 'munged.pid'}",
                f"--log-file={d / 'munged.log'}",
                f"--seed-file={d / 'munged.seed'}",
            ],
            "munged",
        )
        self._wait(lambda: self.socket.exists(), 10, "munged's socket", d / "munged.log")

    def _daemon(self, argv: list[str], what: str) -> None:
        res = subprocess.run(
            argv, env=self._environ(), capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
        if res.returncode != 0:
            raise ClusterError(f"{what} did not start ({res.returncode}): {res.stderr.strip()[-800:]}")

    def _wait(self, ok, seconds: float, what: str, log: Path | None = None) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            if ok():
                return
            time.sleep(0.1)
        tail = ""
        if log is not None:
            with contextlib.suppress(OSError):
                tail = "; its log ends: " + " | ".join(log.read_text(errors="replace").splitlines()[-8:])
        raise ClusterError(f"timed out after {seconds:.0f} s waiting for {what}{tail}")

    def _ctld_up(self) -> bool:
        try:
            res = self.run("scontrol", "ping", timeout=10, check=False)
        except subprocess.TimeoutExpired:
            return False
        return res.returncode == 0 and "UP" in res.stdout

    def node_states(self) -> dict[str, str]:
        res = self.run("sinfo", "-h", "-N", "-o", "%N %T", check=False)
        out = {}
        for line in res.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = parts[1]
        return out

    def _nodes_idle(self) -> bool:
        states = self.node_states()
        return all(states.get(n, "").rstrip("*").startswith(("idle", "mixed", "allocated")) for n in NODES)

    def start(self, timeout: float = 60) -> dict[str, object]:
        if os.geteuid() != 0:
            raise ClusterError("the emulated cluster runs its daemons as root (slurmd starts jobs as users)")
        missing = missing_binaries()
        if missing:
            raise ClusterError(f"not installed: {', '.join(missing)} (apt-get install -y slurm-wlm munge)")
        t0 = time.monotonic()
        self._write_config()
        self._start_munged()
        if not self._pid(self.ctld_dir / "slurmctld.pid"):
            # -c: a fresh controller forgets what an earlier run of this directory left (jobs of a
            # killed session, a node drained by a config since fixed)
            self._daemon([_bin("slurmctld"), "-c", "-f", str(self.conf)], "slurmctld")
        self._wait(
            self._ctld_up, timeout, "slurmctld to answer scontrol ping", self.ctld_dir / "slurmctld.log"
        )
        for n in NODES:
            if not self._pid(self.root / n / "slurmd.pid"):
                self._daemon([_bin("slurmd"), "-N", n, "-f", str(self.conf)], f"slurmd -N {n}")
        self._wait(
            self._nodes_idle,
            timeout,
            f"nodes {', '.join(NODES)} to be idle",
            self.root / NODES[-1] / "slurmd.log",
        )
        return {
            "dir": str(self.root),
            "SLURM_CONF": str(self.conf),
            "nodes": list(NODES),
            "partitions": ["debug", "nofree"],
            "seconds": round(time.monotonic() - t0, 2),
        }

    def stop(self, timeout: float = 20) -> list[str]:
        """Stop every daemon of this cluster (jobs first, so their steps are not left behind)."""
        stopped = []
        if self._pid(self.ctld_dir / "slurmctld.pid"):
            with contextlib.suppress(Exception):
                self.run(
                    "scancel", "--full", "--quiet", "--user=" + str(os.geteuid()), timeout=10, check=False
                )
        order = [f"slurmd {n}" for n in NODES] + ["slurmctld", "munged"]
        files = self._pidfiles()
        for name in order:
            pid = self._pid(files[name])
            if pid is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            # wait for the process, not its pid file: slurmctld removes the file first and goes on
            # shutting down (a test session's end found it still running)
            t0 = time.monotonic()
            while time.monotonic() - t0 < timeout and _daemon(pid):
                time.sleep(0.1)
            if _daemon(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            stopped.append(name)
        return stopped

    def status(self) -> dict[str, object]:
        daemons = self.daemons()
        up = all(daemons.values()) and self._ctld_up()
        return {
            "dir": str(self.root),
            "up": up,
            "daemons": daemons,
            "nodes": self.node_states() if up else {},
        }


def _daemon(pid: int) -> bool:
    """``pid`` is one of the cluster's daemons and alive: a zombie (killed, not yet reaped: in a
    container nobody may reap it) or another program under a reused pid is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    comm, _, rest = stat.partition("(")[2].rpartition(")")
    return rest.split()[:1] not in (["Z"], ["X"]) and comm.startswith(("munged", "slurmctld", "slurmd"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("start", "stop", "status", "env"))
    ap.add_argument("dir", nargs="?", default=os.environ.get("EAGLETUI_SLURM_DIR", DEFAULT_DIR))
    args = ap.parse_args(argv)
    cluster = Cluster(args.dir)
    try:
        if args.command == "start":
            print(json.dumps(cluster.start()))
        elif args.command == "stop":
            print(json.dumps({"stopped": cluster.stop()}))
        elif args.command == "status":
            st = cluster.status()
            print(json.dumps(st))
            return 0 if st["up"] else 1
        else:
            print(f"export SLURM_CONF={cluster.conf}")
    except (ClusterError, subprocess.TimeoutExpired) as exc:
        print(f"slurm_cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
