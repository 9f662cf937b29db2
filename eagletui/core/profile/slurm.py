"""The ``[slurm]`` profile section: run the server as a Slurm job instead of a detached process.

::

    [slurm]
    partition = "gpu"            # sbatch --partition
    nodes = 2                    # > 1: a multi-node server (--nnodes/--node-rank/--dist-init-addr)
    gpus_per_node = 8            # sbatch --gpus-per-node
    time = "02:00:00"            # sbatch --time (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]])
    account = "proj42"           # sbatch --account
    qos = "high"                 # sbatch --qos
    sbatch_options = ["--exclusive", "--constraint=h200"]
    srun_options = ["--mpi=none"]
    container_image = "/shared/sglang-0.5.23.sqsh"   # pyxis: srun --container-image
    container_mounts = ["/shared/models:/models"]      # pyxis: srun --container-mounts
    slurm_conf = "/etc/slurm-b/slurm.conf"          # SLURM_CONF for every Slurm command
    dist_port = 50000            # the port of --dist-init-addr HEAD:PORT (multi-node)
    max_parallel = 2             # a sweep's variant jobs queued or running at once
    poll_s = 2.0                 # how often the job's state is asked (scontrol)

Every value is checked here, with ``file:line:col`` on error, because each ends up on an ``#SBATCH``
line or an ``srun`` command line: a newline in one would be a second directive. Options eagletui
writes itself (the job name, the output files, the node and task counts) are refused in the option
lists with a message saying which key sets them. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from eagletui.core.tomlpos import locate

_KEYS = {
    "partition",
    "nodes",
    "gpus_per_node",
    "time",
    "account",
    "qos",
    "sbatch_options",
    "srun_options",
    "container_image",
    "container_mounts",
    "slurm_conf",
    "dist_port",
    "max_parallel",
    "poll_s",
}
#: Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS; also UNLIMITED.
_TIME_RE = re.compile(
    r"^(?:\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+(?::\d{1,2}){0,2}|UNLIMITED|INFINITE)$"
)
#: What names may be: partitions, accounts and QOS are plain words in every site's slurm.conf.
_NAME_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
#: sbatch/srun options eagletui sets itself, and the key (or reason) that decides them instead.
_OWN_OPTIONS = {
    "--job-name": "eagletui names the job (it proves the job is its own)",
    "-J": "eagletui names the job (it proves the job is its own)",
    "--output": "eagletui writes the logs into the run dir",
    "-o": "eagletui writes the logs into the run dir",
    "--error": "eagletui writes the logs into the run dir",
    "-e": "eagletui writes the logs into the run dir",
    "--nodes": "set slurm.nodes",
    "-N": "set slurm.nodes",
    "--ntasks-per-node": "one server rank per node",
    "--ntasks": "one server rank per node",
    "-n": "one server rank per node",
    "--parsable": "eagletui reads the job id itself",
    "--wrap": "eagletui writes the batch script",
    "--partition": "set slurm.partition",
    "-p": "set slurm.partition",
    "--time": "set slurm.time",
    "-t": "set slurm.time",
    "--account": "set slurm.account",
    "-A": "set slurm.account",
    "--gpus-per-node": "set slurm.gpus_per_node",
    "--chdir": "set target.workdir",
    "-D": "set target.workdir",
    "--kill-on-bad-exit": "a failed node ends the whole server",
    "-K": "a failed node ends the whole server",
}
_RANGES = {"nodes": (1, 1024), "gpus_per_node": (0, 128), "dist_port": (1, 65535), "max_parallel": (1, 64)}


@dataclass(frozen=True)
class SlurmSettings:
    partition: str = ""
    nodes: int = 1
    gpus_per_node: int | None = None
    time: str = ""
    account: str = ""
    qos: str = ""
    sbatch_options: tuple[str, ...] = ()
    srun_options: tuple[str, ...] = ()
    container_image: str = ""
    container_mounts: tuple[str, ...] = ()
    slurm_conf: str = ""
    dist_port: int = 50000
    max_parallel: int = 1
    #: how often the job's state is asked; None: the engine's timings (``watch.job_poll_s``, 2 s)
    poll_s: float | None = None

    @property
    def multi_node(self) -> bool:
        return self.nodes > 1

    def sbatch_lines(self) -> list[str]:
        """The ``#SBATCH`` options these settings ask for (eagletui's own are added by the script)."""
        out = []
        if self.partition:
            out.append(f"--partition={self.partition}")
        if self.time:
            out.append(f"--time={self.time}")
        if self.account:
            out.append(f"--account={self.account}")
        if self.qos:
            out.append(f"--qos={self.qos}")
        if self.gpus_per_node:
            out.append(f"--gpus-per-node={self.gpus_per_node}")
        out.extend(self.sbatch_options)
        return out

    def srun_args(self) -> list[str]:
        out = list(self.srun_options)
        if self.container_image:
            out.append(f"--container-image={self.container_image}")
        if self.container_mounts:
            out.append("--container-mounts=" + ",".join(self.container_mounts))
        return out

    def to_dict(self) -> dict[str, Any]:
        """The section as TOML would spell it (what a run's snapshot records: reattach without the
        profile rebuilds the same job from it). Nothing here is secret."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


def _err(message: str, text: str, path: Any, key: str | None) -> Exception:
    from eagletui.core.profile.model import ProfileError

    where = locate(text, key, "slurm") if key else (None, None)
    return ProfileError(message, path, *where)


def _plain(value: str, key: str, text: str, path: Any) -> str:
    if any(c in value for c in "\n\r\x00"):
        raise _err(f"slurm.{key} may not contain a newline or NUL", text, path, key)
    return value


def _option(raw: Any, key: str, text: str, path: Any) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise _err(f"slurm.{key} must be a list of option strings such as '--exclusive'", text, path, key)
    opt = _plain(raw.strip(), key, text, path)
    if not opt.startswith("-"):
        raise _err(f"slurm.{key}: {opt!r} is not an option (it must start with '-')", text, path, key)
    name = opt.split("=", 1)[0]
    # a short option may carry its value without a space (-N2, -pgpu): compare its first two characters
    short = name[:2] if not name.startswith("--") else name
    own = name if name in _OWN_OPTIONS else short if short in _OWN_OPTIONS else ""
    if own:
        raise _err(f"slurm.{key}: {own} is eagletui's to set ({_OWN_OPTIONS[own]})", text, path, key)
    return opt


def parse_slurm(raw: Any, text: str = "", path: Any = None) -> SlurmSettings:
    """A validated :class:`SlurmSettings` from the ``[slurm]`` table (``ProfileError`` on any problem)."""
    if not isinstance(raw, dict):
        raise _err("[slurm] must be a table", text, path, "slurm")
    for key in raw:
        if key not in _KEYS:
            import difflib

            close = difflib.get_close_matches(str(key), sorted(_KEYS), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise _err(
                f"unknown key {key!r} in [slurm]{hint} (allowed: {', '.join(sorted(_KEYS))})", text, path, key
            )
    kw: dict[str, Any] = {}
    for key in ("partition", "account", "qos"):
        if key in raw:
            v = raw[key]
            if not isinstance(v, str) or (v and not _NAME_RE.match(v)):
                raise _err(f"slurm.{key} must be a {key} name (letters, digits, . _ + -)", text, path, key)
            kw[key] = v
    for key, (lo, hi) in _RANGES.items():
        if key in raw:
            v = raw[key]
            if isinstance(v, bool) or not isinstance(v, int):
                raise _err(f"slurm.{key} must be an integer", text, path, key)
            if not lo <= v <= hi:
                raise _err(f"slurm.{key} must be between {lo} and {hi}, got {v}", text, path, key)
            kw[key] = v
    if "time" in raw:
        v = raw["time"]
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            v = str(v)
        if not isinstance(v, str) or not _TIME_RE.match(v.strip()):
            raise _err(
                "slurm.time must be a Slurm time limit: minutes, MM:SS, HH:MM:SS or D-HH:MM:SS",
                text,
                path,
                "time",
            )
        kw["time"] = v.strip()
    for key in ("sbatch_options", "srun_options"):
        if key in raw:
            v = raw[key]
            if not isinstance(v, list):
                raise _err(f"slurm.{key} must be a list of option strings", text, path, key)
            kw[key] = tuple(_option(o, key, text, path) for o in v)
    for key in ("container_image", "slurm_conf"):
        if key in raw:
            v = raw[key]
            if not isinstance(v, str):
                raise _err(f"slurm.{key} must be a string", text, path, key)
            kw[key] = _plain(v.strip(), key, text, path)
    if "container_mounts" in raw:
        v = raw["container_mounts"]
        if not isinstance(v, list) or not all(isinstance(m, str) and m.strip() for m in v):
            raise _err(
                "slurm.container_mounts must be a list of 'SRC:DST' strings", text, path, "container_mounts"
            )
        mounts = tuple(_plain(m.strip(), "container_mounts", text, path) for m in v)
        if any("," in m for m in mounts):
            raise _err(
                "slurm.container_mounts: one mount per list item (no commas)", text, path, "container_mounts"
            )
        kw["container_mounts"] = mounts
    if "poll_s" in raw:
        v = raw["poll_s"]
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or not math.isfinite(v)
            or not 0.2 <= v <= 60
        ):
            raise _err("slurm.poll_s must be a number of seconds between 0.2 and 60", text, path, "poll_s")
        kw["poll_s"] = float(v)
    return SlurmSettings(**kw)
