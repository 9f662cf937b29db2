"""The code eagletui runs on the host: stdlib only, Python >= 3.6, one operation per round trip.

The client sends this file's own source text (``python3 -c SOURCE OP ARGS...``), so the host needs
no eagletui install; locally it is an ordinary module, imported by the unit tests and linted like
the rest. Each operation prints one JSON object. The log reader lives in :mod:`hosttail`.

Why on the host: the check-then-signal in ``stop``, the lock-then-launch in ``launch`` and the
liveness probe all have to happen next to the process, not across a network that may drop between
the check and the act. A probe that cannot tell says ``unknown``: only a clear answer from the
kernel (no such pid, or the pid now belongs to a process with another start time) is ``dead``.

Keep it compatible with old interpreters (no walrus, no ``list[str]`` at run time, no
``from __future__``): the host's ``python3`` may be the distribution's.
"""

import errno
import json
import os
import signal
import sys
import time

# socket and subprocess are imported where used: every liveness probe starts a Python on
# the host, and on a busy host their import time is most of what the probe costs.

ALIVE, DEAD, UNKNOWN = "alive", "dead", "unknown"
RUN_ID_VAR = "EAGLETUI_RUN_ID"


# --------------------------------------------------------------------------------- /proc


def parse_stat(text):
    """Fields of /proc/PID/stat after ``(comm)`` (comm may hold spaces and parentheses), or None.

    ``fields[0]`` is the state, ``fields[1]`` the ppid, ``fields[2]`` the pgid and ``fields[19]``
    the start time in clock ticks since boot: with the pid it names one process for the whole
    uptime of the host.
    """
    parts = text.rsplit(")", 1)
    if len(parts) != 2:
        return None
    fields = parts[1].split()
    if len(fields) < 20:
        return None
    return fields


def read_stat(pid):
    """(verdict, fields): ``dead`` only when the kernel says the pid does not exist."""
    try:
        with open(f"/proc/{int(pid)}/stat") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return DEAD, None
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ESRCH):
            return DEAD, None
        return UNKNOWN, None
    fields = parse_stat(text)
    if fields is None:
        return UNKNOWN, None
    return ALIVE, fields


def probe(pid, start_time):
    """``alive`` / ``dead`` / ``unknown`` for the process (pid, start time), with a reason."""
    verdict, fields = read_stat(pid)
    if verdict == DEAD:
        return DEAD, f"no process {int(pid)}"
    if verdict == UNKNOWN:
        return UNKNOWN, f"cannot read /proc/{int(pid)}/stat"
    if fields[19] != str(start_time):
        return DEAD, f"pid {int(pid)} now belongs to another process (start time differs)"
    if fields[0] in ("Z", "X"):
        return DEAD, f"process {int(pid)} has exited"
    return ALIVE, ""


def environ_has(pid, name, value):
    """True/False whether NAME=VALUE is in the process's initial environment; None if unreadable."""
    try:
        with open(f"/proc/{int(pid)}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    return (name + "=" + value).encode() in env


def cmdline(pid):
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as f:
            raw = f.read().split(b"\0")
    except OSError:
        return None
    return [a.decode("utf-8", "replace") for a in raw if a]


def pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def port_from_argv(argv):
    port = None
    for i, a in enumerate(argv):
        if a == "--port" and i + 1 < len(argv):
            port = argv[i + 1]
        elif a.startswith("--port="):
            port = a.split("=", 1)[1]
    try:
        return int(port) if port is not None else None
    except ValueError:
        return None


def processes_of_run(run_id):
    """Pids whose environment carries this run id: the server and everything it started."""
    me = os.getpid()
    return [p for p in pids() if p != me and environ_has(p, RUN_ID_VAR, run_id)]


def launcher_of_run(run_id):
    """Pids of a launcher still working on this run id (its argv names the run id)."""
    me = os.getpid()
    out = []
    for p in pids():
        if p == me:
            continue
        argv = cmdline(p)
        if argv and "launch" in argv and run_id in argv:
            out.append(p)
    return out


# ------------------------------------------------------------------------- ownership
#
# Which processes are a run's, proven without trusting a name or an environment that the process can
# rewrite. SGLang renames its children with setproctitle, which on Linux overwrites the environ area
# (/proc/PID/environ of ``sglang::scheduler`` reads as NUL bytes), so ``EAGLETUI_RUN_ID`` cannot be
# the only proof. What the kernel keeps for us instead:
#
# * the leader: pid + start time recorded by our waiter the moment it started it (unique for the
#   host's uptime), and its environ when it still carries the run id;
# * its session: the leader was started with setsid(), so its session id is its pid, and a session
#   is only inherited through fork; the kernel does not hand that pid out again while any member of
#   the session lives;
# * the parent chain: every descendant of the verified leader, or of the verified waiter, which is
#   the subreaper of the server's tree (orphans are re-parented to it, not to init).
#
# A session member is accepted while the leader is alive and verified, or when it started before the
# leader's recorded exit: once the session has emptied, its number may be handed out again.


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Make this process the reaper of its orphaned descendants (Linux >= 3.4); False where it can't."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError, ImportError):
        return False


def uptime_ticks():
    """Now, in the clock ticks /proc/PID/stat counts start times in (None if it cannot be read)."""
    try:
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        return int(up * os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def _reap(server_pid, write):
    """Wait for every child (the server, then the orphans a subreaper inherits); record the server's
    exit the moment it happens: code, signal and the tick it died at (bounds the session proof)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid != server_pid:
            continue
        ticks = uptime_ticks()
        if ticks is not None:
            write("exit_ticks", str(ticks))
        if os.WIFSIGNALED(status):
            write("exit_signal", str(os.WTERMSIG(status)))
            write("exit_code", str(128 + os.WTERMSIG(status)))
        else:
            write("exit_code", str(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 255))


def proc_table():
    """{pid: stat fields} of every live process (zombies left out: they hold nothing and take no signal)."""
    table = {}
    for p in pids():
        verdict, fields = read_stat(p)
        if verdict == ALIVE and fields[0] not in ("Z", "X"):
            table[p] = fields
    return table


def _int0(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


def run_members(rec, rid, rd, table=None):
    """[(pid, proof)] of the run whose pid record is ``rec``: the processes eagletui may signal.

    ``proof`` says why each one is ours: ``leader``, ``child`` (parent chain to the verified leader or
    waiter), ``session`` or ``environ``. The waiter itself is never a member: it only records the exit.
    """
    if table is None:
        table = proc_table()
    me = os.getpid()
    leader = _int0(rec.get("pid"))
    lstart = str(rec.get("start_time", ""))
    lst = _int0(lstart)
    roots = set()
    s = table.get(leader)
    leader_ok = s is not None and s[19] == lstart
    if leader_ok:
        roots.add(leader)
    waiter = _int0(rec.get("waiter_pid"))
    ws = table.get(waiter)
    if waiter and ws is not None and ws[19] == str(rec.get("waiter_start", "")):
        roots.add(waiter)
    else:
        waiter = 0
    sid = _int0(rec.get("sid")) or leader
    limit = None
    if not leader_ok:
        # The leader is gone: its session may have emptied and its number been reused, so a session
        # member counts only if it started before the leader died (the waiter recorded when); without
        # that record only the parent chain to the waiter or the environment can prove it.
        try:
            with open(os.path.join(rd, "exit_ticks")) as f:
                limit = int(f.read().strip())
        except (OSError, ValueError):
            limit = -1

    def descends(p):
        seen = 0
        cur = p
        start = _int0(table[p][19])
        while seen < 256:
            parent = _int0(table[cur][1])
            if parent in roots:
                return True
            ps = table.get(parent)
            if ps is None or parent <= 1:
                return False
            pstart = _int0(ps[19])
            if pstart > start:  # a re-used pid in the chain: not an ancestor
                return False
            cur, start, seen = parent, pstart, seen + 1
        return False

    out = []
    for p, f in table.items():
        if p in (me, waiter):
            continue
        start = _int0(f[19])
        if start < lst:
            continue  # older than the run: never ours, whatever it claims
        if p == leader and leader_ok:
            out.append((p, "leader"))
        elif descends(p):
            out.append((p, "child"))
        elif _int0(f[3]) == sid and (leader_ok or (limit is not None and 0 <= start <= limit)):
            out.append((p, "session"))
        elif environ_has(p, RUN_ID_VAR, rid) is True:
            out.append((p, "environ"))
    return out


def signal_proc(pid, start_time, sig):
    """Send ``sig`` to (pid, start time) only: with a pidfd the check and the signal name the same
    process; without one the window between them is a few microseconds. False if it is gone."""
    fd = None
    if hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return False
        except OSError:
            fd = None  # no pidfd here (old kernel, sandbox): plain kill after the check
    try:
        verdict, s = read_stat(pid)
        if verdict != ALIVE or s[19] != str(start_time) or s[0] in ("Z", "X"):
            return False
        try:
            if fd is not None:
                signal.pidfd_send_signal(fd, sig)
            else:
                os.kill(pid, sig)
        except ProcessLookupError:
            return False
        return True
    finally:
        if fd is not None:
            os.close(fd)


# ------------------------------------------------------------------------------ helpers


def _write(path, data):
    """Atomically, and 0600: command.sh holds the real secrets so that it can relaunch."""
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


def _out(obj):
    try:
        sys.stdout.write(json.dumps(obj))
        sys.stdout.flush()
    except OSError:
        pass  # the client is gone (connection dropped): what we did is on disk for it to find


def exit_info(rd):
    code = sig = None
    try:
        with open(os.path.join(rd, "exit_code")) as f:
            code = int(f.read().strip())
        with open(os.path.join(rd, "exit_signal")) as f:
            sig = int(f.read().strip())
    except (OSError, ValueError):
        pass
    return code, sig


def lock_key(port):
    """One lock per host and port: a runs dir shared over NFS by several hosts must not mix them."""
    import socket

    host = "".join(c if c.isalnum() or c in "-._" else "_" for c in socket.gethostname()) or "host"
    return f"{host}-{int(port)}"


def holder_state(holder):
    """``alive``/``dead``/``unknown`` for the run named in a lock record, with a description."""
    rid = str(holder.get("run_id", "?"))
    if holder.get("pid"):
        verdict, why = probe(holder["pid"], holder.get("start_time", ""))
        return verdict, f"run {rid} (pid {holder['pid']})"
    # A record without a pid: its launcher died (or is still starting it). Look for both.
    if processes_of_run(rid) or launcher_of_run(rid):
        return ALIVE, f"run {rid} (being launched)"
    lp = holder.get("launcher_pid")
    if lp:
        verdict, _ = probe(lp, holder.get("launcher_start", ""))
        if verdict != DEAD:
            return verdict, f"run {rid} (launcher pid {lp})"
    return DEAD, f"run {rid}"


def live_runs_on_port(runs, port, skip):
    """Runs in this runs dir on ``port`` whose server is alive or cannot be told dead."""
    found = []
    try:
        names = os.listdir(runs)
    except OSError:
        return found
    for n in names:
        if n == skip or n.startswith("."):
            continue
        run = _load(os.path.join(runs, n, "run.json"))
        if not isinstance(run, dict) or run.get("port") != port or not run.get("pid"):
            continue
        verdict, _ = probe(run["pid"], run.get("start_time", ""))
        if verdict != DEAD:
            found.append((verdict, run))
    return found


def _lock(fd, timeout):
    import fcntl

    t = time.time()
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.EAGAIN):
                raise
        if time.time() - t > timeout:
            return False
        time.sleep(0.05)


# ------------------------------------------------------------------------------ operations


def op_probe(args):
    """argv: pid start_time → {"state", "detail"}."""
    verdict, why = probe(int(args[0]), args[1])
    _out({"state": verdict, "detail": why})


def op_launch(args):
    """Launch the server in the spec on stdin, exclusively for this host and port.

    The lock (a POSIX lock on ``.locks/HOST-PORT.lock``, released by the kernel whatever happens to
    us) makes check-and-launch atomic; the record next to it names the holder so a refusal can say
    who. The record outlives us: a later launch is refused while its server is alive, and may take
    over only when the kernel says that server is gone. SIGHUP is ignored so a dropped SSH
    connection cannot interrupt us halfway: what we did is on disk for ``find`` to report.
    """
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    spec = json.load(sys.stdin)
    os.umask(0o077)  # run dirs hold logs with server args: private to the user
    runs = os.path.abspath(os.path.expanduser(spec["runs_dir"]))
    locks = os.path.join(runs, ".locks")
    os.makedirs(locks, exist_ok=True)
    port = int(spec["run"].get("port") or 0)
    run_id = spec["run_id"]
    key = os.path.join(locks, lock_key(port))
    lfd = os.open(key + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if not _lock(lfd, float(spec.get("lock_timeout", 30))):
            holder = _load(key + ".json") or {}
            _out({"refused": f"another launch on port {port} has held the lock for 30 s: {describe(holder)}"})
            return
        holder = _load(key + ".json")
        if isinstance(holder, dict) and holder.get("run_id") != run_id:
            verdict, who = holder_state(holder)
            if verdict != DEAD:
                state = "is running" if verdict == ALIVE else "may be running (cannot check it)"
                msg = f"port {port} on this host is held by {who}, which {state}{_by(holder)}"
                _out({"refused": msg, "holder": holder})
                return
        for verdict, run in live_runs_on_port(runs, port, run_id):
            state = "is running" if verdict == ALIVE else "may be running (cannot check it)"
            msg = f"port {port} on this host is used by run {run.get('run_id')} (pid {run.get('pid')}), which {state}"
            _out({"refused": msg, "holder": run})
            return
        st = read_stat(os.getpid())[1] or [""] * 20
        _write(
            key + ".json",
            json.dumps(
                {
                    "run_id": run_id,
                    "port": port,
                    "client": spec.get("client", ""),
                    "since": time.time(),
                    "launcher_pid": os.getpid(),
                    "launcher_start": st[19],
                }
            ),
        )
        info = _start(spec, runs, run_id)
        if "pid" in info:
            _write(
                key + ".json",
                json.dumps(
                    {
                        "run_id": run_id,
                        "port": port,
                        "client": spec.get("client", ""),
                        "since": time.time(),
                        "pid": info["pid"],
                        "pgid": info["pgid"],
                        "start_time": info["start_time"],
                    }
                ),
            )
        _out(info)
    finally:
        os.close(lfd)


def describe(holder):
    if not holder:
        return "holder unknown"
    return f"run {holder.get('run_id')} (pid {holder.get('pid', '?')}){_by(holder)}"


def _by(holder):
    client = holder.get("client")
    since = holder.get("since")
    when = time.strftime(" at %H:%M:%S", time.localtime(since)) if since else ""
    return f", launched by {client}{when}" if client else ""


def _start(spec, runs, run_id):
    """Create the run dir, fork a waiter that starts the server in its own session and records its
    exit; return the run's identity."""
    import subprocess

    rd = os.path.join(runs, run_id)
    os.makedirs(rd)

    def w(name, data):
        _write(os.path.join(rd, name), data)

    w("command.json", json.dumps(spec.get("argv_redacted", spec["argv"])))
    w("env.json", json.dumps(spec["env_redacted"], indent=1, sort_keys=True))
    w("command.sh", spec["command_sh"])
    log = os.path.join(rd, "server.log")
    open(log, "ab").close()
    cwd = os.path.abspath(os.path.expanduser(spec["workdir"]))
    env = dict(os.environ)
    env.update(spec["env"])
    env["PYTHONUNBUFFERED"] = "1"
    env[RUN_ID_VAR] = run_id
    r, wp = os.pipe()
    if os.fork() == 0:
        try:
            os.close(r)
            os.setsid()
            subreaper = become_subreaper()
            dn = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(dn, fd)
            logf = open(log, "ab", buffering=0)
            info = {"run_dir": rd, "log_path": log}
            try:
                p = subprocess.Popen(
                    spec["argv"],
                    stdin=subprocess.DEVNULL,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    cwd=cwd,
                    env=env,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as e:
                logf.write(f"eagletui: cannot start server: {e}\n".encode())
                w("exit_code", "127")
                info["error"] = str(e)
                os.write(wp, json.dumps(info).encode())
                os._exit(0)
            logf.close()
            st = read_stat(p.pid)[1]
            me = read_stat(os.getpid())[1] or [""] * 20
            ident = {
                "pid": p.pid,
                "pgid": int(st[2]),
                "sid": int(st[3]),
                "start_time": st[19],
                # the waiter: the server's parent and (where the kernel allows) the subreaper of
                # everything the server starts, so an orphaned child is still provably ours
                "waiter_pid": os.getpid(),
                "waiter_start": me[19],
                "subreaper": subreaper,
            }
            info.update(ident)
            w("pid", json.dumps(ident))
            run = dict(spec["run"], run_dir=rd, log_path=log, **ident)
            w("run.json", json.dumps(run))
            os.write(wp, json.dumps(info).encode())
            os.close(wp)
            _reap(p.pid, w)
        finally:
            os._exit(0)
    os.close(wp)
    data = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        data += b
    os.close(r)
    try:
        return json.loads(data.decode())
    except ValueError:
        return {"run_dir": rd, "log_path": log, "error": "the launcher's child reported nothing"}


def op_find(args):
    """argv: runs_dir run_id → what became of a launch whose answer was lost.

    ``running`` (with the run's identity), ``exited``, ``starting`` (its launcher is still at work:
    ask again) or ``absent`` (nothing on the host carries the run id: it never started).
    """
    runs = os.path.abspath(os.path.expanduser(args[0]))
    rid = args[1]
    rd = os.path.join(runs, rid)
    run = _load(os.path.join(rd, "run.json"))
    if isinstance(run, dict) and run.get("pid"):
        verdict, why = probe(run["pid"], run.get("start_time", ""))
        if verdict == DEAD:
            code, sig = exit_info(rd)
            _out({"state": "exited", "run": run, "code": code, "signal": sig})
        else:
            _out({"state": "running" if verdict == ALIVE else UNKNOWN, "run": run, "detail": why})
        return
    if launcher_of_run(rid) or processes_of_run(rid):
        _out({"state": "starting"})
        return
    if os.path.isdir(rd):
        code, sig = exit_info(rd)
        if code is not None:
            _out({"state": "exited", "run": {"run_dir": rd}, "code": code, "signal": sig})
            return
    _out({"state": "absent"})


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
    """None if the leader may be signalled (or is gone), else why not. The leader's environ is the
    launch's own (SGLang renames only its children); a different run id there is a refusal."""
    pid, st0 = int(rec["pid"]), str(rec["start_time"])
    verdict, s = read_stat(pid)
    if verdict == UNKNOWN:
        return "unknown", f"cannot read /proc/{pid}/stat"
    if verdict == DEAD or s[0] in ("Z", "X") or s[19] != st0:
        return None, ""  # gone (a reused pid is someone else's: it is simply not a member)
    has = environ_has(pid, RUN_ID_VAR, rid)
    if has is False and _environ_names_other_run(pid, rid):
        return "not_ours", f"pid {pid} carries another run's {RUN_ID_VAR}"
    return None, ""


def _environ_names_other_run(pid, rid):
    try:
        with open(f"/proc/{int(pid)}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return False
    key = (RUN_ID_VAR + "=").encode()
    return any(e.startswith(key) and e != key + rid.encode() for e in env)


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
    """argv: run_dir pid pgid start_time grace port run_id [group_wait kill_wait].

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
    rec, why = _load_record(rd, pid, pgid, st0)
    if rec is None:
        return _out({"result": "not_ours", "reason": why})
    bad, why = _leader_check(rec, rid)
    if bad:
        return _out({"result": bad, "reason": why})
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
    """argv: run_dir run_id → the run's live processes ([{pid, proof, name}]): the preflight of a
    relaunch leaves them out of "GPU memory is in use" (they are stopped first)."""
    rd, rid = args[0], args[1]
    rec = _load(os.path.join(rd, "pid"))
    if not isinstance(rec, dict):
        return _out([])
    _out([{"pid": p, "proof": w, "name": _comm(p)} for p, w in run_members(rec, rid, rd)])


def op_list(args):
    """argv: runs_dir → every run with ``state`` (alive/dead/unknown) and ``alive`` (state == alive)."""
    runs = os.path.abspath(os.path.expanduser(args[0]))
    res = []
    try:
        names = os.listdir(runs)
    except OSError:
        names = []
    for n in names:
        if n.startswith("."):
            continue
        rd = os.path.join(runs, n)
        run = _load(os.path.join(rd, "run.json"))
        if not isinstance(run, dict):
            continue
        try:
            verdict, _ = probe(run["pid"], run.get("start_time", ""))
        except (KeyError, TypeError, ValueError):
            verdict = UNKNOWN
        run["state"] = verdict
        run["alive"] = verdict == ALIVE
        try:
            run["mtime"] = os.path.getmtime(os.path.join(rd, "run.json"))
        except OSError:
            run["mtime"] = 0
        res.append(run)
    _out(res)


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
