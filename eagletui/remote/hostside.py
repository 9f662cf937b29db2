"""The code eagletui runs on the host: stdlib only, Python >= 3.6, one operation per round trip.

The client sends the program's source text (``python3 -c SOURCE OP ARGS...``), so the host needs
no eagletui install. :func:`eagletui.remote.transport.host_source` joins it from its parts, in
order: :mod:`hostproc` (the /proc readers and the ownership proof), :mod:`hostfiles` (the run dir's
files, the answer), :mod:`hostlaunch` (launch, find), :mod:`hoststop` (stop, members) and this module
(probe, list, discover, the table of operations and ``main``: last, as it names them all), leaving
out the fenced lines by which the parts import each other. Locally every part is an ordinary
module, imported by the unit tests and linted like the rest. Each operation prints one JSON object.
The log reader lives in :mod:`hosttail`.

Why on the host: the check-then-signal in ``stop``, the lock-then-launch in ``launch`` and the
liveness probe all have to happen next to the process, not across a network that may drop between
the check and the act. A probe that cannot tell says ``unknown``: only a clear answer from the
kernel (no such pid, or the pid now belongs to a process with another start time) is ``dead``.

Keep it compatible with old interpreters (no walrus, no ``list[str]`` at run time, no
``from __future__``): the host's ``python3`` may be the distribution's.
"""

import os
import sys

# isort: off
# host-program: local imports (host_source drops the lines down to the end marker: on the
# host the parts are one program text, and these names are its own)
from eagletui.remote.hostfiles import _load, _out, run_dir_problem, runs_dir_problem
from eagletui.remote.hostlaunch import op_find, op_launch
from eagletui.remote.hostproc import (
    ALIVE,
    OTHER,
    RUN_ID_VAR,
    UNKNOWN,
    UNPROVEN,
    cmdline,
    pids,
    port_from_argv,
    probe,
    prove_leader,
    read_stat,
    started,
)
from eagletui.remote.hoststop import op_members, op_stop
# host-program: end of local imports
# isort: on


def op_probe(args):
    """argv: pid start_time → {"state", "detail"}."""
    verdict, why = probe(int(args[0]), args[1])
    _out({"state": verdict, "detail": why})


def op_list(args):
    """argv: runs_dir [runs_group] → every run with ``state`` and ``alive`` (state == alive).

    ``state`` is ``alive``/``dead``/``unknown`` for the record's leader, ``stale`` when its pid (and
    start time) now belong to a process that is not that run's (another run's, or a stranger's whose
    pid was copied into the record: :func:`prove_leader`), or ``untrusted`` for a run dir that is not
    a directory of ours; ``note`` says why. A runs dir that is not to be trusted answers
    ``{"refused": why}`` and lists nothing.
    """
    runs = os.path.abspath(os.path.expanduser(args[0]))
    untrusted = runs_dir_problem(runs, args[1] if len(args) > 1 else "")
    if untrusted:
        return _out({"refused": untrusted})
    res = []
    try:
        names = os.listdir(runs)
    except OSError:
        names = []
    for n in names:
        if n.startswith("."):
            continue
        rd = os.path.join(runs, n)
        why = run_dir_problem(rd)
        if why:
            res.append({"run_id": n, "run_dir": rd, "state": "untrusted", "alive": False, "owned": False, "note": why})
            continue
        run = _load(os.path.join(rd, "run.json"))
        if not isinstance(run, dict):
            continue
        # where a run's files are is where they must be: a record naming another log is not followed
        run.update(run_id=n, run_dir=rd, log_path=os.path.join(rd, "server.log"))
        run["state"], run["note"] = _run_state(run, n, rd)
        run["alive"] = run["state"] == ALIVE
        if run["alive"]:  # a reattach times the launch from here, not from when it was found
            run.update(started(run.get("start_time")))
        try:
            run["mtime"] = os.path.getmtime(os.path.join(rd, "run.json"))
        except OSError:
            run["mtime"] = 0
        res.append(run)
    _out(res)


def _run_state(run, rid, rd):
    """(state, note) of one listed run: its leader's liveness, then its identity."""
    try:
        verdict, _ = probe(run["pid"], run.get("start_time", ""))
    except (KeyError, TypeError, ValueError):
        return UNKNOWN, "its record names no process"
    if verdict != ALIVE:
        return verdict, ""
    rec = _load(os.path.join(rd, "pid"))
    proof, why = prove_leader(rec if isinstance(rec, dict) else run, rid)
    if proof in (OTHER, UNPROVEN):
        return "stale", why
    return verdict, ""


def is_server_argv(argv):
    for i, a in enumerate(argv):
        if (
            i > 0
            and argv[i - 1] == "-m"
            and (
                a in ("sglang.launch_server", "eagletui.sim", "eagletui.sim.vllm")
                or a.startswith("vllm.entrypoints")
            )
        ):
            return True
        if os.path.basename(a) in ("sglang", "vllm") and i + 1 < len(argv) and argv[i + 1] == "serve":
            return True
    # vLLM retitles its processes (setproctitle): "VLLM::EngineCore", "VLLM::Worker_TP0"
    return bool(argv) and argv[0].startswith("VLLM::")


def op_discover(args):
    """SGLang servers (and the simulator) on the host that eagletui did not start."""
    import stat as S

    res = []
    me = os.getpid()
    for pid in pids():
        if pid == me:
            continue
        argv = cmdline(pid)
        if not argv or not is_server_argv(argv):
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if any(e.startswith((RUN_ID_VAR + "=").encode()) for e in f.read().split(b"\0")):
                    continue
        except OSError:
            pass
        log = None
        for fd in ("1", "2"):
            p = f"/proc/{pid}/fd/{fd}"
            try:
                if S.S_ISREG(os.stat(p).st_mode):
                    log = os.readlink(p)
                    break
            except OSError:
                pass
        verdict, st = read_stat(pid)
        if verdict != ALIVE:
            continue
        res.append(
            {
                "pid": pid,
                "ppid": int(st[1]),
                "pgid": int(st[2]),
                "start_time": st[19],
                "cmdline": argv,
                "log_path": log,
                "port": port_from_argv(argv),
            }
        )
    found = set(r["pid"] for r in res)
    _out([r for r in res if r["ppid"] not in found])


OPS = {
    "probe": op_probe,
    "launch": op_launch,
    "find": op_find,
    "stop": op_stop,
    "members": op_members,
    "list": op_list,
    "discover": op_discover,
}


def main(argv):
    if not argv or argv[0] not in OPS:
        sys.stderr.write(f"eagletui hostside: unknown operation {argv[:1]!r}\n")
        sys.exit(2)
    OPS[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
