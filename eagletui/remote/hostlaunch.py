"""Launch and find, for the host program (a part of ``hostside``): stdlib only, Python >= 3.6.

``launch`` takes the host-and-port lock, refuses while the holder's server is alive (or cannot be told
dead), and forks the waiter that starts the server and records its exit; ``find`` says what became of a
launch whose answer was lost. Apart from :mod:`hoststop` because the two operations share only the
/proc readers (:mod:`hostproc`) and the run dir's files (:mod:`hostfiles`).
"""

import errno
import json
import os
import signal
import sys
import time

# isort: off
# host-program: local imports (host_source drops the lines down to the end marker: on the
# host the parts are one program text, and these names are its own)
from eagletui.remote.hostfiles import (
    _load,
    _open_own,
    _out,
    _touch,
    _write,
    exit_info,
    run_dir_problem,
    runs_dir_problem,
)
from eagletui.remote.hostproc import (
    ALIVE,
    DEAD,
    RUN_ID_VAR,
    UNKNOWN,
    _reap,
    become_subreaper,
    launcher_of_run,
    probe,
    processes_of_run,
    read_stat,
)
# host-program: end of local imports
# isort: on


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
        if n == skip or n.startswith(".") or run_dir_problem(os.path.join(runs, n)):
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
    port = int(spec["run"].get("port") or 0)
    run_id = spec["run_id"]
    lfd, key, shared, refusal = _launch_lock(runs, spec.get("runs_group") or "", port)
    if refusal:
        return _out(refusal)
    try:
        if not _lock(lfd, float(spec.get("lock_timeout", 30))):
            holder = _load(key + ".json", any_owner=shared) or {}
            _out({"refused": f"another launch on port {port} has held the lock for 30 s: {describe(holder)}"})
            return
        holder = _load(key + ".json", any_owner=shared)
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
        record = {"run_id": run_id, "port": port, "client": spec.get("client", ""), "since": time.time()}
        mode = 0o640 if shared else 0o600
        _write(key + ".json", json.dumps(dict(record, launcher_pid=os.getpid(), launcher_start=st[19])), mode)
        info = _start(spec, runs, run_id)
        if "pid" in info:
            ident = {k: info[k] for k in ("pid", "pgid", "start_time")}
            _write(key + ".json", json.dumps(dict(record, since=time.time(), **ident)), mode)
        _out(info)
    finally:
        os.close(lfd)


def _launch_lock(runs, group, port):
    """(lock fd, lock path without its suffix, shared, None) for ``port`` in the runs dir (created if
    missing, and only if it is to be trusted), or (None, '', False, refusal) saying why not."""
    try:
        os.makedirs(runs, exist_ok=True)
    except OSError as e:
        return None, "", False, {"error": f"cannot create the runs dir {runs}: {e}"}
    untrusted = runs_dir_problem(runs, group)
    if untrusted:
        return None, "", False, {"refused": untrusted}
    locks, shared = locks_dir(runs, group)
    if locks is None:
        return None, "", False, {"refused": shared}
    key = os.path.join(locks, lock_key(port))
    try:
        lfd = _open_own(key + ".lock", os.O_RDWR | os.O_CREAT, any_owner=shared, mode=0o660 if shared else 0o600)
    except Exception as e:  # a link or a stranger's file in place of the lock: refuse, say which
        return None, "", False, {"refused": f"cannot take the launch lock: {e}"}
    return lfd, key, shared, None


def locks_dir(runs, group):
    """(path, shared) of the runs dir's ``.locks``, created if missing; shared (group-writable, files
    of other members read) when the profile names the group the runs dir is shared with. (None, why)
    when it is a link or not a directory: a planted ``.locks`` is not used."""
    import stat as S

    locks = os.path.join(runs, ".locks")
    shared = bool(group)
    try:
        try:
            os.mkdir(locks)
            if shared:
                os.chmod(locks, 0o2770)
        except FileExistsError:
            pass
        st = os.lstat(locks)
    except OSError as e:
        return None, f"cannot create {locks}: {e}"
    if not S.S_ISDIR(st.st_mode):
        return None, f"{locks} is not a directory (a symbolic link?): not using it"
    if not shared and st.st_uid != os.getuid():
        return None, f"{locks} is not yours: not using it"
    return locks, shared


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
    rd = os.path.join(runs, run_id)
    os.makedirs(rd)
    w = _run_file_writer(rd)
    w("command.json", json.dumps(spec.get("argv_redacted", spec["argv"])))
    w("env.json", json.dumps(spec["env_redacted"], indent=1, sort_keys=True))
    w("command.sh", spec["command_sh"])
    log = os.path.join(rd, "server.log")
    _touch(log)
    cwd = os.path.abspath(os.path.expanduser(spec["workdir"]))
    env = dict(os.environ)
    env.update(spec["env"])
    env["PYTHONUNBUFFERED"] = "1"
    env[RUN_ID_VAR] = run_id
    r, wp = os.pipe()
    if os.fork() == 0:
        try:
            os.close(r)
            _waiter(spec, rd, log, cwd, env, wp)
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


def _run_file_writer(rd):
    """``w(name, data)``: write one file of the run dir ``rd`` (atomically, 0600)."""

    def w(name, data):
        _write(os.path.join(rd, name), data)

    return w


def _waiter(spec, rd, log, cwd, env, wp):
    """The forked waiter: start the server in its own session, send its identity down the pipe
    ``wp`` (and write it to the run dir), then reap it and record its exit. It never goes back to
    the launcher's code: the caller ends the child with ``os._exit`` whatever happens."""
    import subprocess

    w = _run_file_writer(rd)
    os.setsid()
    subreaper = become_subreaper()
    dn = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(dn, fd)
    logf = os.fdopen(_open_own(log, os.O_WRONLY | os.O_APPEND), "ab", buffering=0)
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


def op_find(args):
    """argv: runs_dir run_id [runs_group] → what became of a launch whose answer was lost.

    ``running`` (with the run's identity), ``exited``, ``starting`` (its launcher is still at work:
    ask again), ``absent`` (nothing on the host carries the run id: it never started) or
    ``refused`` (the runs dir or the run dir is not to be trusted: ``detail`` says why).
    """
    runs = os.path.abspath(os.path.expanduser(args[0]))
    rid = args[1]
    rd = os.path.join(runs, rid)
    untrusted = runs_dir_problem(runs, args[2] if len(args) > 2 else "")
    if not untrusted and os.path.lexists(rd):
        untrusted = run_dir_problem(rd)
    if untrusted:
        return _out({"state": "refused", "detail": untrusted})
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
