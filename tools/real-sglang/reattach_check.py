"""Reattach follows only the run of its own profile (issue 18 item 3), on the real server:

    python3 tools/real-sglang/reattach_check.py PROFILE_A PROFILE_B

launches A's server with speculative-num-steps one below the file's (a toggle applied in an earlier
session), asks a workspace of B (another port) to reattach (it must not, and must name A's run), then one
of A (it must, must say a stop asks first, and must relaunch with `r` what the server runs, not the file:
issue 31 item 2), benchmarks A's server headless (recorded) and checks that a reattach starts with that
benchmark in its runs table (issue 33 item 19), then stops A's server. One JSON line per check on stdout.
"""

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from eagletui.core.events import Notice
from eagletui.core.profile.load import load_profile
from eagletui.core.timings import FAST
from eagletui.remote.control import Liveness
from eagletui.session.drivers import LiveDriver
from eagletui.workspace import Workspace


class _Shows:
    """A driver's host that folds what it is given into a session model (the screen's part)."""

    def __init__(self, model) -> None:
        self.model, self.notes = model, []

    def dispatch(self, ev) -> None:
        self.model.dispatch(ev)

    def notify(self, message, **_k) -> None:
        self.notes.append(message)


async def _earlier_runs_shown(pa: str, a2: Workspace, d: LiveDriver) -> None:
    """Issue 33 item 19: a headless bench of the running server (recorded in the sessions dir), then what
    a reattach's runs table starts with: that benchmark, not nothing."""
    from eagletui.config import default_sessions_dir
    from eagletui.session.model import SessionModel
    from eagletui.session.record import Recorder

    r = subprocess.run(
        [sys.executable, "-m", "eagletui", "bench", "local", "--profile", pa, "--json"],
        capture_output=True, text=True, timeout=150,
    )
    rec = Recorder(Path(default_sessions_dir()) / "reattach-check.jsonl", target="local", profile_name="a")
    model = SessionModel(target="local", recorder=rec)
    host = _Shows(model)
    await d._earlier_benchmarks(model, host, a2)
    run = model.runbook.runs.get(a2.run.launch)
    check(
        "reattach: the runs table starts with the benchmark an earlier session ran on this server",
        r.returncode == 0 and run is not None and bool(run.good_results) and a2.bench_no >= 1,
        f"bench rc {r.returncode}; {host.notes}; next bench {a2.bench_no + 1}; {r.stderr[-400:]}",
    )
    rec.close()


class _SaysNo:
    """The driver's host answering "n" to its question (what a user at the dialog does)."""

    def __init__(self) -> None:
        self.asked = ""

    async def ask(self, question: str) -> bool:
        self.asked = question
        return False

    def notify(self, *_a, **_k) -> None:
        pass

    def dispatch(self, _ev) -> None:
        pass


def check(name, ok, detail=""):
    print(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)[:1500]}), flush=True)


async def main(pa: str, pb: str) -> None:
    seen: list = []
    a = Workspace(load_profile(pa), seen.append, target="local", preflight=False, timings=FAST)
    await a.connect()
    steps = int(a.profile.args["--speculative-num-steps"])  # type: ignore[arg-type]
    await a.launch(a.profile.with_values({"arg:--speculative-num-steps": steps - 1}))  # as `a` would
    log = Path(a.run.log_path)
    t = time.monotonic()
    while b"ready to roll" not in log.read_bytes() and time.monotonic() - t < 240:
        await asyncio.sleep(1)
    check("reattach: A's server ready", b"ready to roll" in log.read_bytes(), a.run.run_id)
    notes: list = []
    b = Workspace(load_profile(pb), notes.append, target="local", preflight=False, timings=FAST)
    await b.connect()
    got = await b.attach_newest()
    msgs = [e.message for e in notes if isinstance(e, Notice)]
    check("reattach: profile B (another port) does not take A's run", not got and any(a.run.run_id in m for m in msgs), msgs)
    await b.close()
    notes.clear()
    a2 = Workspace(load_profile(pa), notes.append, target="local", preflight=False, timings=FAST)
    await a2.connect()
    got = await a2.attach_newest()
    msgs = [e.message for e in notes if isinstance(e, Notice)]
    check("reattach: profile A follows its run and says why", got and a2.run.run_id == a.run.run_id, msgs)
    check("reattach: stopping a run of another session asks first", await a2.needs_consent(), "")
    said = [m for m in msgs if "r relaunches the running config" in m]
    check(
        "reattach: r relaunches the running config (the applied steps), and says the file differs",
        a2.profile.args.get("--speculative-num-steps") == steps - 1
        and a2.file_profile.args.get("--speculative-num-steps") == steps
        and bool(said),
        f"r would launch steps {a2.profile.args.get('--speculative-num-steps')}; {said}",
    )
    # issue 33 item 12: "n" at "Stop it?" changes nothing (the UI takes the control before asking)
    host = _SaysNo()
    d = LiveDriver(None)
    d.workspace = a2
    d.control_busy = True
    await d.stop(host)
    alive = await a2.control.liveness(a2.run)
    check(
        "reattach: a declined stop gives the control back and leaves the server up",
        host.asked and not d.control_busy and alive is not Liveness.DEAD,
        f"asked={host.asked} busy={d.control_busy} liveness={alive}",
    )
    await _earlier_runs_shown(pa, a2, d)
    await a2.close()
    await a.stop()
    check("reattach: A stopped by its launcher", a.last_stop is not None and a.last_stop.ended_by == "leader", a.last_stop)
    await a.close()


asyncio.run(main(sys.argv[1], sys.argv[2]))
