"""The /proc readers and the ownership proof of the host program (the first part of ``hostside``).

Stdlib only, Python >= 3.6, like the rest of the program: :func:`eagletui.remote.transport.host_source`
sends this text, then :mod:`hostfiles`, :mod:`hostlaunch`, :mod:`hoststop` and :mod:`hostside`, as one
``python3 -c`` program. Apart because it is the one part every operation leans on: the liveness probe
and the proof of which processes are a run's, which decide what ``launch`` refuses and what ``stop``
may signal; the unit tests import it directly.
"""

import errno
import os
import signal

# isort: off
# host-program: local imports (host_source drops the lines down to the end marker: on the
# host the parts are one program text, and these names are its own)
from eagletui.remote.hostfiles import _int_file
# host-program: end of local imports
# isort: on

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


def environ(pid):
    """The process's initial environment as a list of ``NAME=VALUE`` bytes; None if unreadable."""
    try:
        with open(f"/proc/{int(pid)}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return None


def environ_has(pid, name, value):
    """True/False whether NAME=VALUE is in the process's initial environment; None if unreadable."""
    env = environ(pid)
    return None if env is None else (name + "=" + value).encode() in env


def run_id_of(pid):
    """The ``EAGLETUI_RUN_ID`` in the process's environment ('' when none, None if unreadable)."""
    env = environ(pid)
    if env is None:
        return None
    key = (RUN_ID_VAR + "=").encode()
    for e in env:
        if e.startswith(key):
            return e[len(key) :].decode("utf-8", "replace")
    return ""


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
#   host's uptime) name the process, but prove nothing on their own: anyone can read both from /proc
#   and write them into a record. What proves it ours (:func:`prove_leader`) is the run id in its
#   environment (set by the launch; only its owner and root can read it), or, where setproctitle
#   wiped that, its parent being the run's waiter, whose command line ends ``launch RUN_ID``;
# * its session: the leader was started with setsid(), so its session id is its pid, and a session
#   is only inherited through fork; the kernel does not hand that pid out again while any member of
#   the session lives;
# * the parent chain: every descendant of the proven leader, or of the verified waiter, which is
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


def started(start_time):
    """When the process with this /proc start time began: ``started_ago`` (seconds, by the kernel's own
    count) and ``started_clock`` (its local time of day in seconds: the clock the server's log
    timestamps use, so a reattach can time the log's lines from the real start); {} if unknown."""
    now = uptime_ticks()
    try:
        ticks = int(start_time)
    except (TypeError, ValueError):
        return {}
    if now is None or ticks > now:
        return {}
    ago = (now - ticks) / float(os.sysconf("SC_CLK_TCK"))
    import time

    at = time.time() - ago
    lt = time.localtime(at)
    clock = lt.tm_hour * 3600 + lt.tm_min * 60 + lt.tm_sec + at % 1
    return {"started_ago": round(ago, 3), "started_clock": round(clock, 3)}


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


def waiter_of_run(rec, rid, table):
    """The waiter's pid when the record's (waiter pid, start time) is alive and is the launcher of run
    ``rid`` (its command line ends ``launch RID``: a planter copying a pid and start time from /proc
    cannot make a stranger's process say that), else 0."""
    waiter = _int0(rec.get("waiter_pid"))
    ws = table.get(waiter)
    if not waiter or ws is None or ws[19] != str(rec.get("waiter_start", "")):
        return 0
    argv = cmdline(waiter) or []
    return waiter if argv[-2:] == ["launch", rid] and "-c" in argv else 0


OURS, OTHER, UNPROVEN, GONE = "ours", "other", "unproven", "gone"


def prove_leader(rec, rid, table=None):
    """(verdict, why): whether the record's leader (pid, start time) is run ``rid``'s, by what a
    planter cannot copy from /proc.

    ``ours``: its environment carries ``EAGLETUI_RUN_ID=rid`` (the launch set it), or (an environment
    wiped by setproctitle, as vLLM's API server does) its parent is the run's own waiter.
    ``other``: it carries another run's id (the record is stale: its pid is another run's now).
    ``unproven``: neither (a stranger's process whose pid and start time were copied into a record).
    ``gone``: no such process any more (a reused pid has another start time). ``unknown``: /proc
    could not be read.
    """
    pid, st0 = _int0(rec.get("pid")), str(rec.get("start_time", ""))
    verdict, s = read_stat(pid)
    if verdict == UNKNOWN:
        return UNKNOWN, f"cannot read /proc/{pid}/stat"
    if verdict == DEAD or s[0] in ("Z", "X") or s[19] != st0:
        return GONE, f"process {pid} has exited"
    has = run_id_of(pid)
    if has == rid:
        return OURS, "its environment carries the run id"
    if has:
        return OTHER, f"pid {pid} is run {has}'s now (its environment says so): this record of run {rid} is stale"
    if table is None:
        table = proc_table()
    waiter = waiter_of_run(rec, rid, table)
    if waiter and _int0(s[1]) == waiter:
        return OURS, "its parent is the run's waiter"
    return UNPROVEN, (
        f"pid {pid} carries no {RUN_ID_VAR}={rid} in its environment and its parent is not the run's "
        "launcher: nothing proves it is the process eagletui started (a record with a copied pid and "
        "start time proves nothing)"
    )


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
    lst = _int0(rec.get("start_time", ""))
    roots = set()
    leader_ok = leader in table and prove_leader(rec, rid, table)[0] == OURS
    if leader_ok:
        roots.add(leader)
    waiter = waiter_of_run(rec, rid, table)
    if waiter:
        roots.add(waiter)
    sid = _int0(rec.get("sid")) or leader
    limit = None
    if not leader_ok:
        # The leader is gone: its session may have emptied and its number been reused, so a session
        # member counts only if it started before the leader died (the waiter recorded when); without
        # that record only the parent chain to the waiter or the environment can prove it.
        limit = _int_file(os.path.join(rd, "exit_ticks"))
        if limit is None:
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
