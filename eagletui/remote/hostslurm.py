"""The code eagletui runs on a Slurm login node: stdlib only, Python >= 3.6, one operation per call.

Sent as source text like :mod:`hostside` (``python3 -c SOURCE slurm_OP ARGS...``); the unit tests
import it. Every operation drives Slurm through its own commands (``sbatch --parsable``,
``scontrol show job -o``, ``squeue``, ``scancel``, ``scontrol show hostnames``) and prints one JSON
object. Parsing happens here, next to the commands, so the client gets facts, not text.

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
import subprocess
import sys
import time

#: States a job has left Slurm's queue in (it runs no more and holds no node).
TERMINAL = (
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "TIMEOUT",
    "SPECIAL_EXIT",
    "REVOKED",
)
#: A job in these states may still run code on a node (COMPLETING: its steps are being killed).
ACTIVE = (
    "PENDING",
    "CONFIGURING",
    "RUNNING",
    "COMPLETING",
    "SUSPENDED",
    "REQUEUED",
    "RESIZING",
    "SIGNALING",
    "STAGE_OUT",
    "STOPPED",
    "RESV_DEL_HOLD",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
)
CMD_TIMEOUT = 30
#: Slurm writes this into the batch log when it kills a job (scancel, time limit, node failure, preemption).
KILLED_RE = re.compile(r"\*\*\* JOB (\d+) ON (\S+) CANCELLED AT (\S+)(?: DUE TO ([A-Z ]+?))?(?: \*\*\*|$)")
KILLED_STATES = {"TIME LIMIT": "TIMEOUT", "NODE FAILURE": "NODE_FAIL", "PREEMPTION": "PREEMPTED"}


def _env(conf):
    env = dict(os.environ)
    if conf:
        env["SLURM_CONF"] = conf
    return env


def cmd(argv, conf="", timeout=CMD_TIMEOUT, cwd=None):
    """(exit status, stdout, stderr) of a Slurm command; status None when it could not run or timed out."""
    try:
        p = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=_env(conf),
            timeout=timeout,
            cwd=cwd,
        )
    except FileNotFoundError:
        return None, "", f"{argv[0]}: command not found (is Slurm installed on this host?)"
    except subprocess.TimeoutExpired:
        return None, "", f"{argv[0]} did not answer within {timeout:.0f} s"
    except OSError as e:
        return None, "", f"{argv[0]}: {e}"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


# ----------------------------------------------------------------------------- parsing

_KEY_RE = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")


def parse_job_line(text):
    """``scontrol show job -o`` (one line per job) → {key: value}. Values may hold spaces (a reason,
    a path); a field starts at the next `` Key=``."""
    text = text.strip()
    out = {}
    marks = [(m.start(1), m.end(), m.group(1)) for m in _KEY_RE.finditer(text)]
    for i, (_start, vstart, key) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        out[key] = text[vstart:end].strip()
    return out


def split_exit(value):
    """``ExitCode=3:0`` → (3, None); ``0:15`` (killed by signal 15) → (None, 15); unknown → (None, None)."""
    m = re.match(r"^(\d+):(\d+)$", (value or "").strip())
    if not m:
        return None, None
    code, sig = int(m.group(1)), int(m.group(2))
    if sig:
        return None, sig
    return code, None


def split_user(value):
    """``root(0)`` → ("root", 0)."""
    m = re.match(r"^(.*)\((\d+)\)$", (value or "").strip())
    if not m:
        return value or "", None
    return m.group(1), int(m.group(2))


def _seconds_between(start, end):
    """Seconds from one scontrol time (``2026-12-01T11:56:17``, the controller's local time) to another;
    None when either is unknown. Both are in the same zone, so their difference needs none."""
    try:
        a = time.mktime(time.strptime(start, "%Y-%m-%dT%H:%M:%S"))
        b = time.mktime(time.strptime(end, "%Y-%m-%dT%H:%M:%S"))
    except (TypeError, ValueError, OverflowError):
        return None
    return b - a if b >= a else None


def job_facts(fields):
    """The parts of a job record eagletui uses, with plain types."""
    state = (fields.get("JobState") or "").split("+")[0].upper()
    code, sig = split_exit(fields.get("ExitCode", ""))
    user, uid = split_user(fields.get("UserId", ""))
    reason = fields.get("Reason") or ""
    if reason == "None":
        reason = ""
    return {
        "job_id": fields.get("JobId", ""),
        "name": fields.get("JobName", ""),
        "state": state,
        # -o (one line) writes the reason's spaces as underscores: "Nodes_required_for_job_are_DOWN,..."
        "reason": reason.replace("_", " "),
        "exit_code": code,
        "signal": sig,
        "exit_raw": fields.get("ExitCode", ""),
        "user": user,
        "uid": uid,
        "partition": fields.get("Partition", ""),
        "nodelist": "" if fields.get("NodeList") in (None, "(null)") else fields.get("NodeList", ""),
        "batch_host": fields.get("BatchHost", ""),
        "num_nodes": fields.get("NumNodes", ""),
        "run_time": fields.get("RunTime", ""),
        "time_limit": fields.get("TimeLimit", ""),
        "submit_time": fields.get("SubmitTime", ""),
        # how long it waited in the queue, by Slurm's clock (a reattach learns it here too)
        "queued_s": _seconds_between(fields.get("SubmitTime"), fields.get("StartTime"))
        if state not in ("PENDING", "")
        else None,
        "start_time": fields.get("StartTime", ""),
        "end_time": fields.get("EndTime", ""),
    }


def show_job(job_id, conf):
    """("found", facts) / ("gone", None) when Slurm no longer knows the job / ("unknown", why)."""
    code, out, err = cmd(["scontrol", "show", "job", "-o", str(job_id)], conf)
    if code is None:
        return "unknown", err.strip()
    if code != 0:
        if "Invalid job id" in err or "Invalid job id" in out:
            return "gone", None
        return "unknown", (err or out).strip()[-300:]
    for line in out.splitlines():
        fields = parse_job_line(line)
        if fields.get("JobId") == str(job_id):
            return "found", job_facts(fields)
    return "unknown", f"scontrol answered without job {job_id}: {out[-200:]!r}"


def hostnames(nodelist, conf):
    """``n[1-2]`` → ["n1", "n2"] (Slurm's own expansion), [] if it cannot be expanded."""
    if not nodelist:
        return []
    code, out, _ = cmd(["scontrol", "show", "hostnames", nodelist], conf)
    if code != 0:
        return []
    return [x.strip() for x in out.splitlines() if x.strip()]


def queue_position(job_id, partition, conf):
    """1-based place of a pending job among the partition's pending jobs in priority order, or None."""
    argv = ["squeue", "-h", "-t", "PENDING", "-o", "%i", "--sort=-p,i"]
    if partition:
        argv += ["-p", partition.split(",")[0]]
    code, out, _ = cmd(argv, conf)
    if code != 0:
        return None
    ids = [x.strip() for x in out.splitlines() if x.strip()]
    try:
        return ids.index(str(job_id)) + 1
    except ValueError:
        return None


# ----------------------------------------------------------------------------- files


def _write(path, data):
    """Atomically, 0600 (the node script holds the launch's secrets)."""
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(data)
    os.replace(tmp, path)


def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _read(path, limit=65536):
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                f.seek(size - limit)
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _out(obj):
    try:
        sys.stdout.write(json.dumps(obj))
        sys.stdout.flush()
    except OSError:
        pass


def me():
    import pwd

    uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name, uid
    except KeyError:
        return str(uid), uid


def read_nodes(rd):
    """[[name, address], ...] as the batch script wrote them at job start (nodes.txt), or []."""
    out = []
    for line in _read(os.path.join(rd, "nodes.txt")).splitlines()[:4096]:  # a job has at most this many
        parts = line.split()
        if len(parts) >= 2:
            out.append([parts[0], parts[1]])
        elif len(parts) == 1:
            out.append([parts[0], parts[0]])
    return out


def recorded_end(rd, job_id):
    """What is known of a job Slurm has forgotten: eagletui's record, else the batch script's exit and
    Slurm's own kill line in the batch log. None if nothing."""
    rec = _load(os.path.join(rd, "job_state.json"))
    if isinstance(rec, dict) and str(rec.get("job_id")) == str(job_id):
        rec["source"] = rec.get("source") or "recorded"
        return rec
    log = _read(os.path.join(rd, "batch.log"))
    killed = None
    for m in KILLED_RE.finditer(log):
        if m.group(1) == str(job_id):
            killed = m
    if killed is not None:
        why = (killed.group(4) or "").strip()
        return {
            "job_id": str(job_id),
            "state": KILLED_STATES.get(why, "CANCELLED"),
            "reason": why,
            "exit_code": None,
            "signal": None,
            "source": "batch log",
        }
    text = _read(os.path.join(rd, "job_exit")).strip()
    if text.lstrip("-").isdigit():
        rc = int(text)
        return {
            "job_id": str(job_id),
            "state": "COMPLETED" if rc == 0 else "FAILED",
            "reason": "",
            "exit_code": rc,
            "signal": None,
            "source": "batch script",
        }
    return None


def record_end(rd, facts):
    """Keep a finished job's state: Slurm forgets it MinJobAge seconds later."""
    if not rd or not os.path.isdir(rd):
        return
    old = _load(os.path.join(rd, "job_state.json"))
    if (
        isinstance(old, dict)
        and old.get("state") == facts.get("state")
        and old.get("job_id") == facts.get("job_id")
    ):
        return
    rec = dict(facts)
    rec["recorded_at"] = time.time()
    rec["source"] = "scontrol"
    try:
        _write(os.path.join(rd, "job_state.json"), json.dumps(rec))
    except OSError:
        pass


def job_state(rd, job_id, conf, position=True):
    """{"state": found|gone|unknown, "job": facts, ...} for the job of run dir ``rd``."""
    verdict, facts = show_job(job_id, conf)
    if verdict == "unknown":
        return {"state": "unknown", "detail": facts}
    if verdict == "gone":
        return {"state": "gone", "job": recorded_end(rd, job_id), "nodes": read_nodes(rd)}
    if facts["state"] in TERMINAL:
        record_end(rd, facts)
    out = {"state": "found", "job": facts, "nodes": read_nodes(rd)}
    if facts["state"] == "PENDING" and position:
        out["position"] = queue_position(job_id, facts["partition"], conf)
    if not out["nodes"] and facts["nodelist"] and facts["state"] not in ("PENDING",):
        out["nodes"] = [[n, ""] for n in hostnames(facts["nodelist"], conf)]
    return out


# ----------------------------------------------------------------------------- operations


def _lock(path, timeout=30.0):
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
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

    One job per lock key (the profile and sweep slot): while an earlier job of the key is pending or
    running, the submit is refused and names it. The lock file makes check-and-submit atomic.
    """
    spec = json.loads(sys.stdin.read())
    # 0600 files, 0700 dirs: sbatch hands the umask to the job (SLURM_UMASK), so the logs Slurm
    # writes for it (batch.log, node-N.log) are private too
    os.umask(0o077)
    runs = os.path.abspath(os.path.expanduser(spec["runs_dir"]))
    run_id = spec["run_id"]
    conf = spec.get("slurm_conf") or ""
    os.makedirs(runs, mode=0o700, exist_ok=True)
    locks = os.path.join(runs, ".locks")
    os.makedirs(locks, mode=0o700, exist_ok=True)
    key = "".join(c if c.isalnum() or c in "-._" else "_" for c in spec["lock_key"])[:120]
    lfd = _lock(os.path.join(locks, "slurm-" + key + ".lock"))
    if lfd is None:
        return _out({"refused": f"another eagletui submit holds the lock of {key}"})
    try:
        holder = _load(os.path.join(locks, "slurm-" + key + ".json"))
        if isinstance(holder, dict) and holder.get("job_id"):
            verdict, facts = show_job(holder["job_id"], conf)
            if verdict == "unknown":
                return _out(
                    {
                        "refused": "cannot tell whether job {} (run {}) is still queued or running: {}".format(
                            holder["job_id"], holder.get("run_id"), facts
                        )
                    }
                )
            if (
                verdict == "found"
                and facts["state"] not in TERMINAL
                and facts["name"] == holder.get("job_name")
            ):
                return _out(
                    {
                        "refused": "job {} (run {}, submitted by {}) is {}; stop it first".format(
                            holder["job_id"], holder.get("run_id"), holder.get("client", "?"), facts["state"]
                        )
                    }
                )
        rd = os.path.join(runs, run_id)
        os.makedirs(rd, mode=0o700)
        for name, text in sorted(spec["files"].items()):
            if "/" in name or name.startswith("."):
                continue
            _write(os.path.join(rd, name), text)
        for name in ("batch.log",):
            open(os.path.join(rd, name), "ab").close()
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
    verdict, facts = show_job(job_id, conf)
    if verdict == "unknown":
        return None, ("unknown", f"cannot ask Slurm about job {job_id}: {facts}")
    if verdict == "gone":
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
        verdict, f = show_job(job_id, conf)
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
    """argv: runs_dir [conf] → every Slurm run in the runs dir with its job's state (one squeue call)."""
    runs = os.path.abspath(os.path.expanduser(args[0]))
    conf = args[1] if len(args) > 1 else ""
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
        run = _load(os.path.join(rd, "run.json"))
        if not isinstance(run, dict) or run.get("launcher") != "slurm" or not run.get("job_id"):
            continue
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
    """argv: runs_dir run_id job_name [conf] → what became of a submit whose answer was lost:
    ``submitted`` (with the run record), ``absent`` (sbatch never ran or refused), ``starting``."""
    runs = os.path.abspath(os.path.expanduser(args[0]))
    run_id, job_name = args[1], args[2]
    conf = args[3] if len(args) > 3 else ""
    rd = os.path.join(runs, run_id)
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
