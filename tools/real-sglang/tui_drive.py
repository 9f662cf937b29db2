"""Drive ``eagletui connect local --profile P`` in tmux as a user would, against the real server, and run
``trace --capture`` on the server the TUI launched. Screens go to OUTDIR/screens.txt; every check is a
line of OUTDIR/tui.jsonl ({"check", "ok", "detail"}).

    python3 tools/real-sglang/tui_drive.py PROFILE OUTDIR

The flow: connect (launch #1) → ready → b → benchmark done → 3, ← (speculative-num-steps 3 → 2), d →
a (preflight, stop #1, launch #2) → ready → r (stop #2, launch #3) → ready → trace --capture twice
(the server's own profiler defaults, then eagletui's old with_stack/record_shapes false), each watched
for 15 s → s (stop #3) → q. Between steps the run dirs say which launches are alive.
"""

import glob
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from eagletui.remote import hostproc

P, OUT = sys.argv[1], sys.argv[2]
TM = os.environ.get("TMUX_BIN", "tmux")
S = "etr"
# the tmux server's socket: each dry run has its own (two dry runs side by side, as in CI, would otherwise
# share one server and each one's kill-server would end the other's session)
SOCKET = os.environ.get("ETR_TMUX_SOCKET", "etr")
T0 = time.time()
READY_S = 240


def tm(*a):
    return subprocess.run([TM, "-L", SOCKET, *a], capture_output=True, text=True)


def screen():
    return tm("capture-pane", "-p", "-t", S).stdout


n = [0]


def cap(tag):
    n[0] += 1
    s = screen()
    with open(os.path.join(OUT, "screens.txt"), "a") as f:
        f.write(f"\n===== [{time.time() - T0:6.1f}s] {n[0]:02d} {tag} =====\n{s}")
    return s


def check(name, ok, detail=""):
    with open(os.path.join(OUT, "tui.jsonl"), "a") as f:
        f.write(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)[:2000], "t": round(time.time() - T0, 1)}) + "\n")
    print(f"[{time.time() - T0:6.1f}s] {'PASS' if ok else 'FAIL'} {name} {str(detail)[:200]}", flush=True)


def key(*k, wait=0.6):
    tm("send-keys", "-t", S, *k)
    time.sleep(wait)


def header(s):
    return (s.splitlines() or [""])[0]


def wait_for(pred, timeout, every=1.0):
    t = time.time()
    while time.time() - t < timeout:
        s = screen()
        if pred(s):
            return s
        time.sleep(every)
    return None


def confirm_if_asked():
    s = screen()
    if "(y/n)" in s or "(y)" in s:
        key("y", wait=1.5)
        return True
    return False


def alive_runs():
    out = []
    for f in sorted(glob.glob(os.path.expanduser("~/.eagletui/runs/*/pid"))):
        rd = os.path.dirname(f)
        try:
            rec = json.load(open(f))
        except (OSError, ValueError):
            continue
        if hostproc.run_members(rec, os.path.basename(rd), rd):
            out.append(os.path.basename(rd))
    return out


def spec_counters():
    """SGLang 0.5.17's own counters on /metrics (observability/metrics_collector.py): tokens generated and
    verifies, summed over their label sets; None where /metrics does not answer."""
    port = re.search(r"^port\s*=\s*(\d+)", open(P).read(), re.M)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port and port.group(1)}/metrics", timeout=10) as r:
            text = r.read().decode(errors="replace")
    except (OSError, ValueError) as exc:
        return {"error": str(exc)}
    out = {}
    for name in ("sglang:generation_tokens_total", "sglang:spec_verify_calls_total"):
        out[name] = sum(float(m) for m in re.findall(rf"^{name}(?:{{[^}}]*}})? ([0-9.e+]+)$", text, re.M))
    return out


def ready_launch(k):
    return lambda s: f"launch #{k}" in header(s) and ("server ready" in header(s) or "failed" in header(s) or "exited" in header(s))


cmd = f"{sys.executable} -m eagletui connect local --profile {P} --no-record; echo EXIT=$? > {OUT}/connect.exit; sleep 900"
tm("kill-server")
tm("new-session", "-d", "-s", S, "-x", "200", "-y", "50", cmd)
time.sleep(3)
cap("start")
# a server eagletui did not start (on a shared machine: somebody else's) is offered read-only: decline
if wait_for(lambda s: "did not start is running" in s or "launch #1" in header(s), 30, every=0.5) and (
    "did not start is running" in screen()
):
    cap("foreign-server-offered")
    key("n", wait=1)
s = wait_for(ready_launch(1), READY_S)
cap("launch-1")
check("tui: launch #1 ready", s is not None and "server ready" in header(s), header(s or screen()))
m0 = spec_counters()
key("b", wait=3)
cap("bench-running")
s = wait_for(lambda s: "run #1:" in s, 120)
time.sleep(2)
cap("bench-done")
check("tui: b benchmarks", s is not None, "run #1 line" if s else "no result line")
# issue 31: the server's /metrics over the benchmark (its warm-up included) beside the accept the TUI shows;
# with the work pair every request accepts alike, so the two are one pooled figure; with another pair the
# warm-up's requests weigh in, so it is only recorded (tui-metrics.json)
m1 = spec_counters()
shown = re.search(r"run #1: .*?accept ([0-9.]+)", s or "")
gen, ver = (m1.get(k, 0) - m0.get(k, 0) for k in ("sglang:generation_tokens_total", "sglang:spec_verify_calls_total"))
metrics_accept = gen / ver if ver > 0 else None
fig = {"before": m0, "after": m1, "metrics_accept": metrics_accept, "tui_accept": shown and float(shown.group(1))}
json.dump(fig, open(os.path.join(OUT, "tui-metrics.json"), "w"), indent=1)
if os.environ.get("PAIR") == "work":
    check("tui: /metrics accept over b (Δ generation_tokens_total ÷ Δ spec_verify_calls_total) within 1 % of the TUI's",
          shown is not None and metrics_accept is not None
          and abs(metrics_accept - float(shown.group(1))) <= 0.01 * metrics_accept, fig)
key("3", wait=1.5)
key("Left", wait=1)
cap("tune-after-left")
key("d", wait=0.5)
# a loaded machine draws the diff late: a key sent before it is up would go to the screen below, and
# an Escape sent too early leaves the modal open (it then takes the keys meant for the main screen)
wait_for(lambda s: "escape closes" in s, 30, every=0.3)
cap("diff")
key("Escape", wait=0.5)
wait_for(lambda s: "escape closes" not in s, 30, every=0.3)
before = alive_runs()
key("a", wait=2)
confirm_if_asked()
cap("after-a")
key("1", wait=0.5)
s = wait_for(ready_launch(2), READY_S, every=2)
cap("launch-2")
after = alive_runs()
check("tui: a relaunches with the change", s is not None and "server ready" in header(s), header(s or screen()))
check("tui: a stopped launch #1", len(after) == 1 and after != before, f"before {before} after {after}")
key("r", wait=2)
confirm_if_asked()
cap("after-r")
s = wait_for(ready_launch(3), READY_S, every=2)
cap("launch-3")
runs3 = alive_runs()
check("tui: r relaunches", s is not None and "server ready" in header(s), header(s or screen()))
check("tui: r stopped launch #2", len(runs3) == 1 and runs3 != after, f"before {after} after {runs3}")

# trace --capture on the server the TUI launched: first the server's own profiler defaults, then the
# arguments eagletui used to send (after which sglang 0.5.17's scheduler once segfaulted)
for tag, extra in (("default", []), ("no-stack", ["--no-with-stack"])):
    r = subprocess.run(
        [sys.executable, "-m", "eagletui", "trace", "--capture", "local", "--profile", P, "--steps", "5",
         "--out", os.path.join(OUT, f"trace-{tag}"), "--timeout", "120", "--watch", "15", *extra],
        capture_output=True, text=True, timeout=200,
    )
    for ext, text in (("out", r.stdout), ("err", r.stderr)):
        open(os.path.join(OUT, f"trace-{tag}.{ext}"), "w").write(text)
    for f in glob.glob(os.path.join(OUT, f"trace-{tag}", "*.trace.json*")):
        j = subprocess.run([sys.executable, "-m", "eagletui", "trace", f, "--json"], capture_output=True, text=True)
        open(f + ".summary.json", "w").write(j.stdout)
    check(f"trace --capture ({tag}): rc {r.returncode}", r.returncode in (0, 3), r.stderr[-600:])
    if r.returncode == 3:
        break
cap("after-traces")
# P: the step profile in the TUI shows the same draft / verify / draft-extend split as trace (issue 33
# item 18); the profile takes a few decode steps under the server's own load, so it may take a while
key("P", wait=2)
s = wait_for(lambda s: "step profile of run" in s or "profile failed" in s, 150, every=1)
cap("step-profile")
check(
    "tui: P shows the cycle's draft / verify / draft extend split",
    s is not None and "a cycle: draft " in s and " verify " in s and "draft extend " in s,
    (s or screen())[-1500:],
)
if "escape closes" in screen() or "step profile of run" in screen():
    key("Escape", wait=0.5)
runs_t = alive_runs()
if "escape closes" in screen():  # nothing may be left open over the main screen before s
    key("Escape", wait=0.5)
key("s", wait=2)
confirm_if_asked()
# the header says "stopped" as soon as the log shows SGLang's shutdown; the stop itself (SIGTERM to
# the leader, its drain, its kill_process_tree) takes ~6 s more: wait for the processes, not the words
t = time.time()
while alive_runs() and time.time() - t < 90:
    time.sleep(1)
s = screen()
cap("after-s")
check("tui: s stops", not alive_runs(), f"alive before {runs_t}, after {alive_runs()} ({time.time() - t:.1f} s); {header(s)}")
key("q", wait=2)
confirm_if_asked()
time.sleep(3)
cap("after-q")
code = open(os.path.join(OUT, "connect.exit")).read().strip() if os.path.exists(os.path.join(OUT, "connect.exit")) else "?"
check("tui: q exits", code == "EXIT=0", code)
tm("kill-server")
