"""What Slurm says about a job, for the login-node program (the first part of ``hostslurm``).

Stdlib only, Python >= 3.6 (see :mod:`hostslurm`): :func:`eagletui.remote.transport.host_source`
sends this text, then :mod:`hostslurm`'s operations, as one ``python3 -c`` program. It holds the
Slurm commands (:func:`cmd`), the parsing of ``scontrol show job -o`` into plain facts, and the run
dir's record of a finished job that Slurm forgets ``MinJobAge`` seconds after it ended. Apart
because every operation reads a job through it; the unit tests import it directly.
"""

import json
import os
import re
import subprocess
import time

# isort: off
# host-program: local imports (host_source drops the lines down to the end marker: on the
# host the parts are one program text, and these names are its own)
from eagletui.remote.hostfiles import _load, _read, _write
# host-program: end of local imports
# isort: on

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
#: How long the login node waits for a forgotten job's server to answer /health.
HEALTH_TIMEOUT = 3
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


#: squeue's columns for the user's jobs; the name last, as it is the one field that may hold a ``|``.
QUEUE_FORMAT = "%i|%T|%u|%N|%P|%r|%j"


def user_queue(conf):
    """(rows, '') of the user's jobs as squeue lists them (pending, running, completing: those that
    may still hold a node), each with :func:`job_facts`' keys; (None, why) when squeue failed."""
    user, uid = me()
    code, out, err = cmd(["squeue", "-h", "-u", user, "-o", QUEUE_FORMAT], conf)
    if code != 0:
        return None, (err or out or "squeue gave no answer").strip()[-300:]
    rows = []
    for line in out.splitlines():
        p = line.split("|", 6)
        if len(p) < 7:
            continue
        rows.append(
            {
                "job_id": p[0].strip(),
                "state": p[1].strip().split("+")[0].upper(),
                "user": p[2].strip(),
                "uid": uid if p[2].strip() == user else None,
                "nodelist": p[3].strip() if p[3].strip() not in ("", "(null)") else "",
                "partition": p[4].strip(),
                "reason": "" if p[5].strip() == "None" else p[5].strip(),
                "name": p[6].strip(),
                "exit_code": None,
                "signal": None,
                "exit_raw": "",
                "source": "squeue",
            }
        )
    return rows, ""


def find_job(job_id, conf):
    """``show_job``, with a second source before "gone": ``scontrol`` answering "Invalid job id" is not
    proof that a job has left (slurmctld restarted, a federation, a transient error), so the user's
    queue is asked too. ("found", facts) when either lists it; ("gone", None) only when ``squeue``
    answered without it; ("unknown", why) when it could not."""
    verdict, facts = show_job(job_id, conf)
    if verdict != "gone":
        return verdict, facts
    rows, why = user_queue(conf)
    if rows is None:
        return "unknown", f"scontrol does not know job {job_id} and squeue failed: {why}"
    for r in rows:
        if r["job_id"] == str(job_id):
            return "found", r
    return "gone", None


def server_answers(rd):
    """Whether the run's server answers ``/health`` from here (the login node reaches the job's nodes:
    the client's benchmark goes through it): the last word before a job Slurm has forgotten is called
    ended. False when the run has no node address or port on record."""
    nodes = read_nodes(rd)
    run = _load(os.path.join(rd, "run.json"))
    port = run.get("port") if isinstance(run, dict) else None
    if not nodes or not isinstance(port, int) or not 0 < port < 65536:
        return False
    import urllib.request

    host = nodes[0][1] or nodes[0][0]
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/health", timeout=HEALTH_TIMEOUT) as r:
            return r.status == 200
    except Exception:
        return False


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
    """{"state": found|gone|unknown, "job": facts, ...} for the job of run dir ``rd``.

    ``gone`` needs two sources to agree: Slurm knows the job by neither ``scontrol`` nor the user's
    queue, and either the run dir records its end or its server no longer answers ``/health``; a job
    Slurm has forgotten whose server still answers is ``unknown``, never ended."""
    verdict, facts = find_job(job_id, conf)
    if verdict == "unknown":
        return {"state": "unknown", "detail": facts}
    if verdict == "gone":
        ended = recorded_end(rd, job_id)
        if ended is None and server_answers(rd):
            return {
                "state": "unknown",
                "detail": f"Slurm lists no job {job_id} (scontrol: Invalid job id; not in squeue), but its "
                "server still answers /health: not calling it ended",
            }
        return {"state": "gone", "job": ended, "nodes": read_nodes(rd)}
    if facts["state"] in TERMINAL:
        record_end(rd, facts)
    out = {"state": "found", "job": facts, "nodes": read_nodes(rd)}
    if facts["state"] == "PENDING" and position:
        out["position"] = queue_position(job_id, facts["partition"], conf)
    if not out["nodes"] and facts["nodelist"] and facts["state"] not in ("PENDING",):
        out["nodes"] = [[n, ""] for n in hostnames(facts["nodelist"], conf)]
    return out
