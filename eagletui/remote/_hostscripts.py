"""Small Python programs run on the host with ``python -c`` (stdlib only, Python ≥ 3.6).

They exist so each operation is one round trip and so the check-then-signal in ``stop`` happens on
the host, next to the process, instead of racing across the network.
"""

# Reads a JSON spec on stdin; creates the run dir; forks a waiter that starts the server in its own
# session and records exit_code when it ends; prints the run's identity as JSON.
LAUNCH = r"""
import json, os, signal, subprocess, sys, time
spec = json.load(sys.stdin)
os.umask(0o077)  # run dirs hold logs with server args: private to the user
runs = os.path.abspath(os.path.expanduser(spec["runs_dir"]))
os.makedirs(runs, exist_ok=True)
rd = os.path.join(runs, spec["run_id"])
os.makedirs(rd)
def w(name, data):
    tmp = os.path.join(rd, "." + name + ".tmp")
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:  # command.sh has secrets
        f.write(data)
    os.replace(tmp, os.path.join(rd, name))
w("command.json", json.dumps(spec.get("argv_redacted", spec["argv"])))
w("env.json", json.dumps(spec["env_redacted"], indent=1, sort_keys=True))
w("command.sh", spec["command_sh"])
log = os.path.join(rd, "server.log")
open(log, "ab").close()
cwd = os.path.abspath(os.path.expanduser(spec["workdir"]))
env = dict(os.environ)
env.update(spec["env"])
env["PYTHONUNBUFFERED"] = "1"
env["EAGLETUI_RUN_ID"] = spec["run_id"]
r, wp = os.pipe()
if os.fork() == 0:
    try:
        os.close(r)
        os.setsid()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        dn = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(dn, fd)
        logf = open(log, "ab", buffering=0)
        info = {"run_dir": rd, "log_path": log}
        try:
            p = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                 cwd=cwd, env=env, start_new_session=True, close_fds=True)
        except OSError as e:
            logf.write(("eagletui: cannot start server: %s\n" % e).encode())
            w("exit_code", "127")
            info["error"] = str(e)
            os.write(wp, json.dumps(info).encode())
            os._exit(0)
        logf.close()
        with open("/proc/%d/stat" % p.pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
        info.update(pid=p.pid, pgid=int(st[2]), start_time=st[19])
        run = dict(spec["run"], run_dir=rd, log_path=log, pid=p.pid, pgid=int(st[2]), start_time=st[19])
        w("pid", json.dumps({"pid": p.pid, "pgid": int(st[2]), "start_time": st[19]}))
        w("run.json", json.dumps(run))
        os.write(wp, json.dumps(info).encode())
        os.close(wp)
        rc = p.wait()
        if rc < 0:
            w("exit_signal", str(-rc))
            rc = 128 - rc
        w("exit_code", str(rc))
    finally:
        os._exit(0)
os.close(wp)
data = b""
while True:
    b = os.read(r, 65536)
    if not b:
        break
    data += b
sys.stdout.write(data.decode())
"""

# argv: run_dir pid pgid start_time grace port run_id
STOP = r"""
import json, os, signal, sys, time
rd, pid, pgid, st0, grace, port, rid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
def out(**kw):
    sys.stdout.write(json.dumps(kw)); sys.exit(0)
def stat(p):
    try:
        with open("/proc/%d/stat" % p) as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
def tagged(p):
    try:
        with open("/proc/%d/environ" % p, "rb") as f:
            return ("EAGLETUI_RUN_ID=" + rid).encode() in f.read().split(b"\0")
    except OSError:
        return False
def members():
    res = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = stat(int(d))
            if s and int(s[2]) == pgid and s[0] not in "ZX":
                res.append(int(d))
    return res
def exit_info():
    code = sig = None
    try:
        code = int(open(os.path.join(rd, "exit_code")).read().strip())
        sig = int(open(os.path.join(rd, "exit_signal")).read().strip())
    except (OSError, ValueError):
        pass
    return code, sig
try:
    rec = json.load(open(os.path.join(rd, "pid")))
except (OSError, ValueError):
    out(result="not_ours", reason="no eagletui run record in %s" % rd)
if (rec.get("pid"), rec.get("pgid"), str(rec.get("start_time"))) != (pid, pgid, st0):
    out(result="not_ours", reason="pid/pgid/start time differ from the run record in %s" % rd)
s = stat(pid)
if s is not None and s[0] not in "ZX":
    if s[19] != st0:
        out(result="not_ours", reason="pid %d was reused by another process (start time differs)" % pid)
    if not tagged(pid):
        out(result="not_ours", reason="pid %d does not carry this run's EAGLETUI_RUN_ID" % pid)
m = members()
for p in m:
    if not tagged(p):
        out(result="not_ours", reason="process group %d contains pid %d not started by this run" % (pgid, p))
if not m:
    code, sig = exit_info()
    out(result="gone", code=code, signal=sig)
def gone():
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return not members()
os.killpg(pgid, signal.SIGTERM)
t = time.time()
while time.time() - t < grace and not gone():
    time.sleep(0.05)
killed = False
if not gone():
    killed = True
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    t = time.time()
    while time.time() - t < 10 and not gone():
        time.sleep(0.05)
def listening():
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(name).read().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            f = ln.split()
            if len(f) > 3 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False
t = time.time()
while port and time.time() - t < 15 and listening():
    time.sleep(0.1)
t = time.time()
while time.time() - t < 3 and not os.path.exists(os.path.join(rd, "exit_code")):
    time.sleep(0.05)
code, sig = exit_info()
out(result="stopped", code=code, signal=sig, killed=killed, port_busy=bool(port) and listening())
"""

# argv: runs_dir
LIST = r"""
import json, os, sys
runs = os.path.abspath(os.path.expanduser(sys.argv[1]))
res = []
try:
    names = os.listdir(runs)
except OSError:
    names = []
for n in names:
    rd = os.path.join(runs, n)
    try:
        run = json.load(open(os.path.join(rd, "run.json")))
    except (OSError, ValueError):
        continue
    alive = False
    try:
        s = open("/proc/%d/stat" % run["pid"]).read().rsplit(")", 1)[1].split()
        alive = s[19] == str(run["start_time"]) and s[0] not in "ZX"
    except (OSError, IndexError, KeyError):
        pass
    run["alive"] = alive
    try:
        run["mtime"] = os.path.getmtime(os.path.join(rd, "run.json"))
    except OSError:
        run["mtime"] = 0
    res.append(run)
sys.stdout.write(json.dumps(res))
"""

# No argv. sglang servers (and the simulator) on the host that eagletui did not start.
DISCOVER = r"""
import json, os, stat as S, sys
res = []
me = os.getpid()
for d in os.listdir("/proc"):
    if not d.isdigit() or int(d) == me:
        continue
    try:
        argv = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
    except OSError:
        continue
    argv = [a.decode("utf-8", "replace") for a in argv if a]
    hit = False
    for i, a in enumerate(argv):
        if a in ("sglang.launch_server", "eagletui.sim") and i > 0 and argv[i - 1] == "-m":
            hit = True
        if os.path.basename(a) == "sglang" and i + 1 < len(argv) and argv[i + 1] == "serve":
            hit = True
    if not hit:
        continue
    try:
        env = open("/proc/%s/environ" % d, "rb").read().split(b"\0")
        if any(e.startswith(b"EAGLETUI_RUN_ID=") for e in env):
            continue
    except OSError:
        pass
    log = None
    for fd in ("1", "2"):
        p = "/proc/%s/fd/%s" % (d, fd)
        try:
            if S.S_ISREG(os.stat(p).st_mode):
                log = os.readlink(p)
                break
        except OSError:
            pass
    try:
        st = open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()
        pgid, start = int(st[2]), st[19]
    except (OSError, IndexError):
        pgid, start = 0, ""
    port = None
    for i, a in enumerate(argv):
        if a == "--port" and i + 1 < len(argv):
            port = argv[i + 1]
        elif a.startswith("--port="):
            port = a.split("=", 1)[1]
    try:
        port = int(port) if port is not None else None
    except ValueError:
        port = None
    try:
        ppid = int(open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        ppid = 0
    res.append(dict(pid=int(d), ppid=ppid, pgid=pgid, start_time=start, cmdline=argv, log_path=log, port=port))
pids = set(r["pid"] for r in res)
sys.stdout.write(json.dumps([r for r in res if r["ppid"] not in pids]))
"""
