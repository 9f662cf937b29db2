"""The code eagletui runs on a Slurm login node: stdlib only, Python >= 3.6, one operation per call.

Sent as source text like :mod:`hostside` (``python3 -c SOURCE slurm_OP ARGS...``), joined by
:func:`eagletui.remote.transport.host_source` from :mod:`hostslurmjob` (the Slurm commands, the job
facts and their record) and this module (the operations, their table and ``main``), without the
fenced lines by which the two import each other; the unit tests import both. Every operation
drives Slurm through its own commands (``sbatch --parsable``, ``scontrol show job -o``, ``squeue``,
``scancel``, ``scontrol show hostnames``) and prints one JSON object. Parsing happens here, next to
the commands, so the client gets facts, not text.

Why on the login node: submit is lock → check → write → ``sbatch`` → record, and cancel is verify →
``scancel`` → wait; across a network that may drop between two steps neither would be safe.

Ownership. eagletui cancels a job only when all three hold: its id is the one ``sbatch`` answered
and eagletui recorded in the run's ``run.json`` at submit, the job's name is the one it gave it (it
carries the run id), and the job belongs to the user the login node says we are. A job id that Slurm
hands out again after a controller reset has another name; someone else's job has another user.

Job truth. ``scontrol show job`` knows a job until ``MinJobAge`` seconds after it ended (without
accounting, that is all Slurm keeps), so every operation that sees a finished job records its state
in ``job_state.json`` in the run dir; once Slurm has forgotten it, that record (or, failing it, the
batch script's own ``job_exit`` and Slurm's ``*** JOB N ON node CANCELLED ... ***`` line in the batch
log) is what is known. A failed ``scontrol`` is ``unknown``, never "ended".
"""

import errno
import json
import os
import re
import sys
import time

# isort: off
# host-program: local imports (host_source drops the lines down to the end marker: on the
# host the parts are one program text, and these names are its own)
from eagletui.remote.hostfiles import (
    Untrusted,
    _load,
    _open_own,
    _out,
    _touch,
    _write,
    run_dir_problem,
    runs_dir_problem,
)
from eagletui.remote.hostslurmjob import (
    TERMINAL,
    cmd,
    find_job,
    job_state,
    me,
    record_end,
    recorded_end,
    server_answers,
    user_queue,
)
# host-program: end of local imports
# isort: on


def _lock(path, timeout=30.0):
    import fcntl

    fd = _open_own(path, os.O_RDWR | os.O_CREAT)
    t = time.time()
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.EAGAIN):
                os.close(fd)
                raise
        if time.time() - t > timeout:
            os.close(fd)
            return None
        time.sleep(0.05)


def op_submit(args):
    """Spec on stdin → write the run dir, ``sbatch --parsable`` the batch script, record the job id.

    One job per lock key (the profile and sweep slot): while a job of the key is pending or running,
    the submit is refused and names it. Slurm's own queue says which jobs those are (the user's jobs
    whose name matches ``job_pattern``), not a record here that a submit elsewhere may have
    overwritten; a queue that cannot be read refuses too. The lock file makes check-and-submit atomic.
    """
    spec = json.loads(sys.stdin.read())
    # 0600 files, 0700 dirs: sbatch hands the umask to the job (SLURM_UMASK), so the logs Slurm
    # writes for it (batch.log, node-N.log) are private too
    os.umask(0o077)
    runs = os.path.abspath(os.path.expanduser(spec["runs_dir"]))
    run_id = spec["run_id"]
    conf = spec.get("slurm_conf") or ""
    os.makedirs(runs, mode=0o700, exist_ok=True)
    untrusted = runs_dir_problem(runs, spec.get("runs_group") or "")
    if untrusted:
        return _out({"refused": untrusted})
    locks = os.path.join(runs, ".locks")
    os.makedirs(locks, mode=0o700, exist_ok=True)
    key = "".join(c if c.isalnum() or c in "-._" else "_" for c in spec["lock_key"])[:120]
    try:
        lfd = _lock(os.path.join(locks, "slurm-" + key + ".lock"))
    except (OSError, Untrusted) as e:
        return _out({"refused": f"cannot take the submit lock of {key}: {e}"})
    if lfd is None:
        return _out({"refused": f"another eagletui submit holds the lock of {key}"})
    try:
        refused = _earlier_job(spec.get("job_pattern") or "", key, conf)
        if refused:
            return _out({"refused": refused})
        rd = os.path.join(runs, run_id)
        os.makedirs(rd, mode=0o700)
        for name, text in sorted(spec["files"].items()):
            if "/" in name or name.startswith("."):
                continue
            _write(os.path.join(rd, name), text)
        for name in ("batch.log",):
            _touch(os.path.join(rd, name))
        user, uid = me()
        record = dict(spec["run"], run_dir=rd, user=user, uid=uid, submitted=time.time())
        _write(os.path.join(rd, "run.json"), json.dumps(record))
        code, out, err = cmd(
            ["sbatch", "--parsable"] + list(spec.get("sbatch_args") or []) + [os.path.join(rd, "job.sh")],
            conf,
            timeout=60,
            cwd=rd,
        )
        m = re.match(r"^\s*(\d+)(?:;\S+)?\s*$", out or "")
        if code != 0 or not m:
            why = (err.strip() or out.strip() or "sbatch gave no job id")[-800:]
            record["submit_error"] = why
            _write(os.path.join(rd, "run.json"), json.dumps(record))
            return _out({"error": why, "run_dir": rd})
        job_id = m.group(1)
        record["job_id"] = job_id
        _write(os.path.join(rd, "run.json"), json.dumps(record))
        _write(
            os.path.join(locks, "slurm-" + key + ".json"),
            json.dumps(
                {
                    "job_id": job_id,
                    "run_id": run_id,
                    "job_name": spec["run"].get("job_name"),
                    "client": spec.get("client", ""),
                    "since": time.time(),
                }
            ),
        )
        _out({"run_dir": rd, "job_id": job_id, "user": user, "uid": uid})
    finally:
        os.close(lfd)


def _earlier_job(pattern, key, conf):
    """Why a job of the lock key forbids a submit (Slurm lists one of the user's jobs whose name
    matches ``pattern`` as queued or running, or the queue cannot be read), or None."""
    if not pattern:
        return None
    rows, why = user_queue(conf)
    if rows is None:
        return f"cannot ask Slurm whether a job of {key} is queued or running ({why}); not submitting another"
    try:
        match = re.compile(pattern).match
    except re.error:
        return f"bad job name pattern {pattern!r}"
    for r in rows:
        if match(r["name"]) and r["state"] not in TERMINAL:
            return "job {} ({}) of {} is {}; stop it first (eagletui runs one job per profile)".format(
                r["job_id"], r["name"], key, r["state"]
            )
    return None


def op_state(args):
    """argv: run_dir job_id [conf] → the job's state (see :func:`job_state`)."""
    rd, job_id = args[0], args[1]
    conf = args[2] if len(args) > 2 else ""
    _out(job_state(rd, job_id, conf))


def _ours(rd, job_id, job_name, conf):
    """(facts, None) when the job is provably the run's, else (None, (result, reason))."""
    run = _load(os.path.join(rd, "run.json"))
    if not isinstance(run, dict) or str(run.get("job_id")) != str(job_id):
        return None, ("not_ours", f"run dir {rd} does not record job {job_id}")
    if run.get("job_name") != job_name:
        return None, (
            "not_ours",
            "run dir {} records job name {!r}, not {!r}".format(rd, run.get("job_name"), job_name),
        )
    why = run_dir_problem(rd)
    if why:
        return None, ("not_ours", why)
    verdict, facts = find_job(job_id, conf)
    if verdict == "unknown":
        return None, ("unknown", f"cannot ask Slurm about job {job_id}: {facts}")
    if verdict == "gone":
        if recorded_end(rd, job_id) is None and server_answers(rd):
            return None, ("unknown", f"Slurm lists no job {job_id}, but its server still answers /health")
        return None, ("gone", "")
    user, uid = me()
    if facts["name"] != job_name:
        return None, (
            "not_ours",
            "job {} is now named {!r}, not eagletui's {!r} (the id was reused)".format(
                job_id, facts["name"], job_name
            ),
        )
    if facts["uid"] is not None and facts["uid"] != uid:
        return None, ("not_ours", "job {} belongs to {}, not to {}".format(job_id, facts["user"], user))
    return facts, None


def op_cancel(args):
    """argv: run_dir job_id job_name timeout [conf] → scancel the run's job and wait until it has left.

    Slurm's own escalation does the rest: every step gets SIGTERM, then SIGKILL after ``KillWait``.
    ``stopped`` once the job is in a final state and no longer COMPLETING; ``failed`` if it is still
    there after ``timeout`` s; ``not_ours``/``unknown`` and nothing is cancelled.
    """
    rd, job_id, job_name, timeout = args[0], args[1], args[2], float(args[3])
    conf = args[4] if len(args) > 4 else ""
    facts, refusal = _ours(rd, job_id, job_name, conf)
    if refusal is not None:
        result, why = refusal
        if result == "gone":
            return _out({"result": "gone", "job": recorded_end(rd, job_id)})
        return _out({"result": result, "reason": why})
    if facts["state"] in TERMINAL:
        record_end(rd, facts)
        return _out({"result": "gone", "job": facts})
    t0 = time.time()
    was = facts["state"]
    code, out, err = cmd(["scancel", str(job_id)], conf)
    steps = [{"step": "scancel", "state_before": was, "at": 0.0}]
    if code != 0:
        return _out(
            {
                "result": "failed",
                "reason": f"scancel {job_id} failed: {(err or out).strip()[-300:]}",
                "steps": steps,
            }
        )
    last = facts
    while time.time() - t0 < timeout:
        verdict, f = find_job(job_id, conf)
        if verdict == "gone":
            last = dict(last, state=last["state"] if last["state"] in TERMINAL else "CANCELLED")
            break
        if verdict == "found":
            last = f
            if f["state"] in TERMINAL:
                # scontrol says CANCELLED while steps may still be ending (squeue lists COMPLETING)
                c, o, _ = cmd(["squeue", "-h", "-j", str(job_id), "-o", "%T"], conf)
                if c == 0 and not o.strip():
                    break
        time.sleep(0.2)
    else:
        return _out(
            {
                "result": "failed",
                "job": last,
                "steps": steps,
                "seconds": round(time.time() - t0, 2),
                "reason": "job {} is still {} on {} after {:.0f} s".format(
                    job_id, last["state"], last.get("nodelist") or "?", timeout
                ),
            }
        )
    steps.append({"step": "left", "state": last["state"], "at": round(time.time() - t0, 2)})
    record_end(rd, last)
    _out(
        {"result": "stopped", "job": last, "was": was, "steps": steps, "seconds": round(time.time() - t0, 2)}
    )


def op_list(args):
    """argv: runs_dir [conf runs_group] → every Slurm run in the runs dir with its job's state (one
    squeue call); ``{"refused": why}`` for a runs dir that is not to be trusted."""
    runs = os.path.abspath(os.path.expanduser(args[0]))
    conf = args[1] if len(args) > 1 else ""
    untrusted = runs_dir_problem(runs, args[2] if len(args) > 2 else "")
    if untrusted:
        return _out({"refused": untrusted})
    rows = []
    try:
        names = os.listdir(runs)
    except OSError:
        names = []
    user, uid = me()
    for n in names:
        if n.startswith("."):
            continue
        rd = os.path.join(runs, n)
        if run_dir_problem(rd):
            continue  # another user's (or a link): never one of our jobs
        run = _load(os.path.join(rd, "run.json"))
        if not isinstance(run, dict) or run.get("launcher") != "slurm" or not run.get("job_id"):
            continue
        run.update(run_id=n, run_dir=rd)
        try:
            run["mtime"] = os.path.getmtime(os.path.join(rd, "run.json"))
        except OSError:
            run["mtime"] = 0
        rows.append(run)
    live = {}
    ok = True
    if rows:
        code, out, err = run_squeue(user, conf)
        ok = code == 0
        for line in out.splitlines():
            parts = line.split("|")
            if len(parts) >= 3:
                live[parts[0].strip()] = (parts[1].strip(), parts[2].strip())
    for r in rows:
        jid = str(r["job_id"])
        if not ok:
            r["state"], r["job_state"] = "unknown", ""
        elif jid in live and live[jid][1] == r.get("job_name"):
            r["job_state"] = live[jid][0]
            r["state"] = "alive" if live[jid][0] not in TERMINAL else "dead"
        else:
            r["state"], r["job_state"] = "dead", ""
        r["alive"] = r["state"] == "alive"
    _out(rows)


def run_squeue(user, conf):
    return cmd(["squeue", "-h", "-u", user, "-o", "%i|%T|%j"], conf)


def op_find(args):
    """argv: runs_dir run_id job_name [conf runs_group] → what became of a submit whose answer was
    lost: ``submitted`` (with the run record), ``absent`` (sbatch never ran or refused), ``starting``,
    ``refused`` (the runs dir or run dir is not to be trusted)."""
    runs = os.path.abspath(os.path.expanduser(args[0]))
    run_id, job_name = args[1], args[2]
    conf = args[3] if len(args) > 3 else ""
    rd = os.path.join(runs, run_id)
    untrusted = runs_dir_problem(runs, args[4] if len(args) > 4 else "")
    if not untrusted and os.path.lexists(rd):
        untrusted = run_dir_problem(rd)
    if untrusted:
        return _out({"state": "refused", "detail": untrusted})
    run = _load(os.path.join(rd, "run.json"))
    if isinstance(run, dict) and run.get("job_id"):
        return _out({"state": "submitted", "run": run})
    if isinstance(run, dict) and run.get("submit_error"):
        return _out({"state": "absent", "reason": run["submit_error"]})
    me_pid = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me_pid:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"slurm_submit" in argv and run_id.encode() in b" ".join(argv):
            return _out({"state": "starting"})
    # sbatch may have answered after our record was written: Slurm knows the job by its name
    user, _ = me()
    code, out, err = cmd(["squeue", "-h", "-u", user, "-n", job_name, "-o", "%i|%T|%j"], conf)
    if code != 0:
        return _out({"state": "unknown", "detail": err.strip()[-300:]})
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) >= 3 and parts[2].strip() == job_name:
            if isinstance(run, dict):
                run["job_id"] = parts[0].strip()
                _write(os.path.join(rd, "run.json"), json.dumps(run))
                return _out({"state": "submitted", "run": run})
    return _out({"state": "absent"})


def op_check(args):
    """argv: partition [conf] → what the preflight needs: Slurm answers, the partition exists and is up."""
    partition = args[0] if args else ""
    conf = args[1] if len(args) > 1 else ""
    out = {}
    code, o, e = cmd(["sbatch", "--version"], conf, timeout=15)
    out["sbatch"] = o.strip() if code == 0 else (e.strip() or "sbatch not found")
    out["sbatch_ok"] = code == 0
    argv = ["sinfo", "-h", "-o", "%P|%a|%D|%T|%G"]
    if partition:
        argv += ["-p", partition]
    code, o, e = cmd(argv, conf, timeout=15)
    out["sinfo_ok"] = code == 0
    out["sinfo"] = o.strip()[-2000:] if code == 0 else (e.strip() or "sinfo failed")[-500:]
    _out(out)


OPS = {
    "slurm_submit": op_submit,
    "slurm_state": op_state,
    "slurm_cancel": op_cancel,
    "slurm_list": op_list,
    "slurm_find": op_find,
    "slurm_check": op_check,
}


def main(argv):
    if not argv or argv[0] not in OPS:
        sys.stderr.write(f"eagletui hostslurm: unknown operation {argv[:1]!r}\n")
        sys.exit(2)
    OPS[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
