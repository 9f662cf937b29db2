"""Stop and members, for the host program (a part of ``hostside``): stdlib only, Python >= 3.6.

``stop`` verifies the run's record and leader, then signals only the run's proven members
(:func:`hostproc.run_members`): the leader first, then every member, then SIGKILL; ``members`` lists
them for the preflight of a relaunch. Apart from :mod:`hostlaunch`: the two share only the /proc
readers and the run dir's files.
"""

import os
import signal
import time

# isort: off
# host-program: local imports (host_source drops the lines down to the end marker: on the
# host the parts are one program text, and these names are its own)
from eagletui.remote.hostfiles import _load, _out, exit_info, run_dir_problem, runs_dir_problem
from eagletui.remote.hostproc import (
    OTHER,
    UNKNOWN,
    UNPROVEN,
    proc_table,
    prove_leader,
    run_members,
    signal_proc,
)
# host-program: end of local imports
# isort: on


def listening(port):
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            f = ln.split()
            if len(f) > 3 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _load_record(rd, pid, pgid, st0):
    """The run's pid record if it names (pid, pgid, start time), else (None, reason)."""
    rec = _load(os.path.join(rd, "pid"))
    if not isinstance(rec, dict):
        return None, f"no eagletui run record in {rd}"
    if (rec.get("pid"), rec.get("pgid"), str(rec.get("start_time"))) != (pid, pgid, st0):
        return None, f"pid/pgid/start time differ from the run record in {rd}"
    return rec, ""


def _leader_check(rec, rid):
    """None if the leader may be signalled (it is proven the run's, or it is gone), else (result,
    why): a process that carries another run's id, or nothing that proves it ours, is never signalled."""
    verdict, why = prove_leader(rec, rid)
    if verdict == UNKNOWN:
        return "unknown", why
    if verdict in (OTHER, UNPROVEN):
        return "not_ours", why
    return None, ""


def _stop_record(rd, pid, pgid, st0, rid, group):
    """(the run's pid record, None) when its processes may be signalled, else (None, the answer):
    a run dir not to be trusted, a record that does not name the process, a leader not proven ours."""
    untrusted = _trust_problem(rd, group)
    if untrusted:
        return None, {"result": "not_ours", "reason": untrusted}
    rec, why = _load_record(rd, pid, pgid, st0)
    if rec is None:
        return None, {"result": "not_ours", "reason": why}
    bad, why = _leader_check(rec, rid)
    if bad:
        return None, {"result": bad, "reason": why}
    return rec, None


def _trust_problem(rd, group):
    """Why the run dir (or the runs dir it is in) is not to be trusted, or ''."""
    return run_dir_problem(rd) or runs_dir_problem(os.path.dirname(os.path.abspath(rd)), group) or ""


def _wait_gone(rec, rid, rd, seconds, leader_only=False):
    """Poll until the run has no member left (or only the leader is watched): True when gone."""
    t = time.time()
    while True:
        members = run_members(rec, rid, rd)
        if leader_only:
            members = [m for m in members if m[1] == "leader"]
        if not members:
            return True
        if time.time() - t >= seconds:
            return False
        time.sleep(0.1)


def _signal_members(rec, rid, rd, sig):
    table = proc_table()
    n = 0
    for p, _why in run_members(rec, rid, rd, table):
        if signal_proc(p, table[p][19], sig):
            n += 1
    return n


def op_stop(args):
    """argv: run_dir pid pgid start_time grace port run_id [group_wait kill_wait runs_group].

    SGLang's own shutdown first: SIGTERM to the leader alone (it drains, asks its schedulers to exit
    and kills its tree), up to ``grace`` seconds. Then SIGTERM to every member still alive, then
    SIGKILL; ``ended_by`` says which step ended it (``leader``, ``group``, ``kill``, or ``gone`` when
    nothing was running). Only proven members (:func:`run_members`) are ever signalled. A run that
    outlives SIGKILL is ``failed``, with what is left: never reported as stopped.
    """
    rd, pid, pgid, st0 = args[0], int(args[1]), int(args[2]), args[3]
    grace, port, rid = float(args[4]), int(args[5]), args[6]
    group_wait = float(args[7]) if len(args) > 7 else 10.0
    kill_wait = float(args[8]) if len(args) > 8 else 10.0
    rec, refusal = _stop_record(rd, pid, pgid, st0, rid, args[9] if len(args) > 9 else "")
    if refusal:
        return _out(refusal)
    t0 = time.time()
    members = run_members(rec, rid, rd)
    if not members:
        code, sig = exit_info(rd)
        return _out({"result": "gone", "ended_by": "gone", "code": code, "signal": sig, "members": []})
    proofs = sorted(set(w for _, w in members))
    steps = []
    ended = ""
    leader = [p for p, w in members if w == "leader"]
    if leader:
        signal_proc(pid, st0, signal.SIGTERM)
        steps.append({"step": "leader", "signal": "SIGTERM", "at": round(time.time() - t0, 2)})
        # Give the server its own shutdown; once the leader is gone, its tree gets a short moment
        # to follow (SGLang kills its children itself, then itself).
        if _wait_gone(rec, rid, rd, grace, leader_only=True) and _wait_gone(rec, rid, rd, 3.0):
            ended = "leader"
    if not ended:
        n = _signal_members(rec, rid, rd, signal.SIGTERM)
        steps.append({"step": "group", "signal": "SIGTERM", "processes": n, "at": round(time.time() - t0, 2)})
        if _wait_gone(rec, rid, rd, group_wait):
            ended = "group"
    if not ended:
        n = _signal_members(rec, rid, rd, signal.SIGKILL)
        steps.append({"step": "kill", "signal": "SIGKILL", "processes": n, "at": round(time.time() - t0, 2)})
        if _wait_gone(rec, rid, rd, kill_wait):
            ended = "kill"
    if not ended:
        table = proc_table()
        left = []
        for p, w in run_members(rec, rid, rd, table):
            left.append({"pid": p, "state": table[p][0], "proof": w, "name": _comm(p)})
        return _out(
            {
                "result": "failed",
                "reason": f"{len(left)} process(es) of the run survived SIGKILL",
                "left": left,
                "steps": steps,
                "seconds": round(time.time() - t0, 2),
            }
        )
    t = time.time()
    while port and time.time() - t < 15 and listening(port):
        time.sleep(0.1)
    t = time.time()
    while time.time() - t < 3 and not os.path.exists(os.path.join(rd, "exit_code")):
        time.sleep(0.05)
    code, sig = exit_info(rd)
    _out(
        {
            "result": "stopped",
            "ended_by": ended,
            "steps": steps,
            "proofs": proofs,
            "members": len(members),
            "seconds": round(time.time() - t0, 2),
            "code": code,
            "signal": sig,
            "killed": ended == "kill",
            "port_busy": bool(port) and listening(port),
        }
    )


def _comm(pid):
    try:
        with open(f"/proc/{int(pid)}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def op_members(args):
    """argv: run_dir run_id [runs_group] → the run's live processes ([{pid, proof, name}]): the
    preflight of a relaunch leaves them out of "GPU memory is in use" (they are stopped first)."""
    rd, rid = args[0], args[1]
    if _trust_problem(rd, args[2] if len(args) > 2 else ""):
        return _out([])
    rec = _load(os.path.join(rd, "pid"))
    if not isinstance(rec, dict):
        return _out([])
    _out([{"pid": p, "proof": w, "name": _comm(p)} for p, w in run_members(rec, rid, rd)])
