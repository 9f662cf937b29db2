"""The two scripts of a Slurm launch: the batch script ``sbatch`` queues and the node script each rank runs.

``job.sh`` (submitted with ``sbatch --parsable``) asks for the nodes, writes where they are
(``nodes.txt``: each node's name and its address *as* ``scontrol show node`` *reports it*, so node
names need not resolve), then starts one task per node with ``srun --kill-on-bad-exit=1
--output=node-%n.log`` (``%n``: the node's index in the job, which is also its ``--node-rank``) and
exits with srun's status, so ``scontrol``'s ``ExitCode`` is the failing rank's. It holds no secret.

``node.sh`` is what every task runs: ``cd`` to the profile's workdir and ``exec`` the server with
the profile's environment. It holds the launch's secrets (an ``--api-key``, ``HF_TOKEN``), which is
why they are not in ``job.sh`` (Slurm keeps a copy of the batch script in its state directory). With
``nodes > 1`` it appends ``--nnodes N --node-rank $SLURM_NODEID --dist-init-addr HEAD:PORT``, the
flags SGLang (0.5.17 and 0.5.23 alike) reads for a multi-node launch.

Both are written 0600 into the run dir by the host side (:mod:`eagletui.remote.hostslurm`). Pure:
text in, text out; every profile value is shell-quoted here and nowhere else.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from eagletui.core.profile.slurm import SlurmSettings

#: Flags the node script sets itself for a multi-node launch (a profile must not set them too).
MULTI_NODE_FLAGS = ("--nnodes", "--node-rank", "--dist-init-addr", "--nccl-init-addr")


class ScriptError(ValueError):
    """The launch cannot be written as a job (a flag eagletui owns is set by the profile)."""


def _slug(profile_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", profile_name).strip("_")[:24] or "profile"


def job_name(profile_name: str, run_id: str, slot: int = 0) -> str:
    """``eagletui-<profile>-<run id>`` (``-s<slot>-`` before the run id for a sweep's parallel slot):
    the run id makes it unique, the profile readable in squeue and the guard's query."""
    return f"eagletui-{_slug(profile_name)}-{f's{slot}-' if slot else ''}{run_id}"


def job_name_pattern(profile_name: str, slot: int = 0) -> str:
    """A regular expression for every job :func:`job_name` gives this profile and slot (any run id):
    what the one-job-per-profile guard looks for in the user's queue."""
    run_id = r"\d{8}-\d{6}-L\d+-[0-9a-f]+"
    return "^" + re.escape(f"eagletui-{_slug(profile_name)}-{f's{slot}-' if slot else ''}") + run_id + "$"


def quote_dir(path: str) -> str:
    """Shell-quoted, a leading ``~`` left to the node's shell (its home may differ from the login node's)."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def batch_script(
    settings: SlurmSettings, *, name: str, run_id: str, profile_name: str, extra_sbatch: Sequence[str] = ()
) -> str:
    lines = [
        "#!/bin/bash",
        f"# eagletui: the Slurm job of run {run_id} (profile {_comment(profile_name)}).",
        "# Submitted by eagletui with sbatch --parsable; it holds no secret (node.sh does).",
        f"#SBATCH --job-name={name}",
        f"#SBATCH --nodes={settings.nodes}",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --output=batch.log",
        "#SBATCH --open-mode=append",
    ]
    for opt in [*settings.sbatch_lines(), *extra_sbatch]:
        _check_line(opt)
        lines.append(f"#SBATCH {opt}")
    srun = ["srun", "--kill-on-bad-exit=1", '--output="$RD/node-%n.log"', "--open-mode=append"]
    srun += [shlex.quote(a) for a in settings.srun_args()]
    lines += [
        "",
        'RD="${SLURM_SUBMIT_DIR:-$PWD}"',
        'cd "$RD" || exit 1',
        "echo \"eagletui: job $SLURM_JOB_ID started on $SLURM_JOB_NODELIST at $(date '+%F %T')\"",
        "# every node's name and address as Slurm reports it (names need not resolve); the first is the head",
        ": > nodes.tmp",
        'for n in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do',
        "    a=$(scontrol show node \"$n\" -o 2>/dev/null | tr ' ' '\\n' | sed -n 's/^NodeAddr=//p' | head -n1)",
        '    echo "$n ${a:-$n}" >> nodes.tmp',
        "done",
        "mv -f nodes.tmp nodes.txt",
        "EAGLETUI_HEAD_ADDR=$(head -n1 nodes.txt | cut -d' ' -f2)",
        "export EAGLETUI_HEAD_ADDR",
        " ".join(srun) + ' bash "$RD/node.sh"',
        "rc=$?",
        'echo "$rc" > job_exit',
        "echo \"eagletui: srun ended with status $rc at $(date '+%F %T')\"",
        'exit "$rc"',
    ]
    return "\n".join(lines) + "\n"


def node_script(
    settings: SlurmSettings,
    *,
    run_id: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    workdir: str,
    dist_port: int,
) -> str:
    argv = list(argv)
    for flag in MULTI_NODE_FLAGS:
        if any(a == flag or a.startswith(flag + "=") for a in argv):
            raise ScriptError(
                f"the profile sets {flag}: under [slurm] eagletui sets --nnodes, --node-rank and "
                "--dist-init-addr from slurm.nodes; remove it from server.args"
            )
    cmd = shlex.join(
        ["env", "PYTHONUNBUFFERED=1", f"EAGLETUI_RUN_ID={run_id}", *(f"{k}={v}" for k, v in env.items())]
    )
    cmd += ' EAGLETUI_NODE_RANK="$SLURM_NODEID" ' + shlex.join(argv)
    if settings.multi_node:
        cmd += (
            f" --nnodes {settings.nodes}"
            ' --node-rank "$SLURM_NODEID"'
            f' --dist-init-addr "$EAGLETUI_HEAD_ADDR:{int(dist_port)}"'
        )
    wd = quote_dir(workdir)
    return (
        "#!/bin/bash\n"
        f"# eagletui: one node's rank of run {run_id}; holds the launch's secrets: keep it 0600\n"
        f'cd {wd} || {{ echo "eagletui: cannot cd to {_comment(workdir)} on $(hostname)"; exit 127; }}\n'
        f"exec {cmd}\n"
    )


def _comment(text: str) -> str:
    """Text safe inside a comment or a double-quoted echo: no newline, no quote, no expansion."""
    return re.sub(r"[^A-Za-z0-9_ .,:/~+-]", "_", text)[:120]


def _check_line(opt: str) -> None:
    if any(c in opt for c in "\n\r\x00"):
        raise ScriptError(f"an sbatch option may not hold a newline: {opt!r}")
