"""``eagletui demo``: the whole experience on a laptop, driven through the real launch path.

The demo writes the packaged demo profile to a temp dir (with a free port), launches the bundled
SGLang simulator exactly as a real server would be launched on ``local``, and stops it on quit.
"""

from __future__ import annotations

import argparse
import re
import socket
import sys
import tempfile
from pathlib import Path

from eagletui.commands._args import ArgumentParser


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's range for ports it hands to outgoing connections (Linux's default where unreadable)."""
    try:
        lo, hi = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[:2])
    except (OSError, ValueError):
        return 32768, 60999
    return (lo, hi) if 1024 < lo <= hi <= 65535 else (32768, 60999)


#: How long a port handed out stays claimed for its caller (the time a launch may take to bind it)
PORT_CLAIM_LIFETIME = 600.0  # seconds: a claim, not a wait (no engine waits on it)


def _claims_dir() -> Path | None:
    """This user's directory of claimed ports (``<tmp>/eagletui-ports-<uid>``, 0700), None where it is
    not safely ours (another owner, a link, writable by others): then nothing is claimed."""
    import os
    import stat

    d = Path(tempfile.gettempdir()) / f"eagletui-ports-{os.getuid()}"
    try:
        d.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(d)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return d


def _claim(base: int, span: int) -> bool:
    """Claim ``base .. base + span - 1`` for this caller: False when a claim younger than
    :data:`PORT_CLAIM_LIFETIME` holds one of them. Two callers that drew the same free port a moment
    apart both found it free and the second launch failed with "address already in use" (two test
    suites on one machine); a claim file, created exclusively, makes the second draw another."""
    import time

    d = _claims_dir()
    if d is None:
        return True
    now = time.time()
    if base % 64 == 0:  # now and then, the stale claims go (a suite draws thousands)
        for old in d.iterdir():
            try:
                if now - old.lstat().st_mtime >= PORT_CLAIM_LIFETIME:
                    old.unlink()
            except OSError:
                pass
    made: list[Path] = []
    for p in range(base, base + span):
        taken = _take(d / str(p), now)
        if taken is False:
            for g in made:
                g.unlink(missing_ok=True)
            return False
        if taken:
            made.append(d / str(p))
    return True


def _take(f: Path, now: float) -> bool | None:
    """Claim one port's file: True (created, or a stale claim renewed), False (a fresh claim holds it),
    None (it cannot be claimed here: the bind check alone decides)."""
    import os

    try:
        os.close(os.open(f, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
        return True
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        if now - os.lstat(f).st_mtime < PORT_CLAIM_LIFETIME:
            return False
        os.utime(f, (now, now), follow_symlinks=False)
        return True
    except OSError:
        return False


def free_port(span: int = 1) -> int:
    """A port ``p`` on 127.0.0.1 with ``p .. p + span - 1`` free now, drawn outside the kernel's ephemeral
    range.

    Why not ``bind(port 0)``: that port comes from the ephemeral range, which the kernel also hands to
    every outgoing connection; between this check and the server's own bind, any client on the machine
    may take it (a loaded CI saw a simulator's launch refused as "port in use" that way). Ports outside
    the range are only ever bound on purpose; a claim (:func:`_claim`) keeps two callers from being
    handed the same one. Falls back to ``bind(0)`` where nothing outside is free."""
    import random

    lo, hi = _ephemeral_range()
    spans = [(r0, r1) for r0, r1 in ((10000, lo - 1), (hi + 1, 65535)) if r1 - r0 >= 1000 + span]
    rng = random.Random()
    for _ in range(200 if spans else 0):
        r0, r1 = spans[rng.randrange(len(spans))]
        base = rng.randrange(r0, r1 - span + 2)
        socks: list[socket.socket] = []
        try:
            for p in range(base, base + span):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
        if _claim(base, span):
            return base
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_PORT_LINE = re.compile(r"^port = \d+", re.M)


def with_free_port(text: str, port: int | None = None) -> str:
    """A simulator profile's text with its ``[server]`` port (the first ``port = N`` line) replaced by
    ``port`` or a free one: a fixed port in a packaged example collides when two users on one machine
    run it (the second launch is refused as "port in use")."""
    return _PORT_LINE.sub(f"port = {port or free_port()}", text, count=1)


def write_demo_profile(
    directory: Path, *, port: int | None = None, time_scale: float | None = None, adaptive: bool = False
) -> Path:
    """The packaged demo profile, with a free port and its runs kept under ``directory``; ``adaptive``
    adds ``--speculative-adaptive`` (SGLang 0.5.23's tiers, as the simulator runs them)."""
    from importlib.resources import files

    text = files("eagletui.profiles").joinpath("demo.toml").read_text(encoding="utf-8")
    text = with_free_port(text, port)
    if adaptive:
        text = text.replace("[server.args]\n", "[server.args]\nspeculative-adaptive = true\n", 1)
    text = text.replace('runs_dir = "~/.eagletui/runs"', f'runs_dir = "{directory / "runs"}"', 1)
    if time_scale is not None:
        text = re.sub(r"sim-time-scale = [0-9.]+", f"sim-time-scale = {time_scale}", text, count=1)
    path = directory / "demo.toml"
    path.write_text(text, encoding="utf-8")
    return path


def build_parser() -> argparse.ArgumentParser:
    from eagletui.commands._ui import add_ui_options

    p = ArgumentParser(prog="eagletui demo", description="Run the SGLang simulator and tune it in the UI.")
    p.add_argument(
        "--time-scale",
        type=float,
        default=None,
        help="simulated launch speed (1.0 = a real ~10 min launch; default ≈ 20 s)",
    )
    p.add_argument("--port", type=int, default=None, help="HTTP port for the simulator (default: a free one)")
    p.add_argument(
        "--adaptive",
        action="store_true",
        help="launch with --speculative-adaptive: the tier over time in the accept chart and the run details",
    )
    add_ui_options(p)
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from eagletui.commands._tty import require_terminal

    if rc := require_terminal("demo"):
        return rc
    from eagletui.commands._ui import load_config, make_history, make_recorder, run_app
    from eagletui.core.profile.load import load_profile

    with tempfile.TemporaryDirectory(prefix="eagletui-demo-") as tmp:
        path = write_demo_profile(Path(tmp), port=args.port, time_scale=args.time_scale, adaptive=args.adaptive)
        profile = load_profile(path)
        cfg = load_config()
        app = build_app(
            profile,
            cfg,
            theme=args.theme,
            history=make_history(cfg),
            recorder=make_recorder(cfg, "local", profile, enabled=not args.no_record),
        )
        signum: int | None = None
        try:
            # SIGTERM/SIGHUP/SIGINT quit like q does; if that hangs, the emergency stop still runs
            signum = run_app(app, on_force=lambda: _emergency_cleanup(app, Path(tmp)))
        finally:
            # also after a forced exit: the simulator, then (leaving the with) the temp dir go
            code = _cleanup(app)
        return 128 + signum if signum else code


def build_app(profile, cfg, *, theme=None, history=None, recorder=None, preflight=True, timings=None):
    from eagletui.core.timings import Timings
    from eagletui.session.drivers import DemoDriver
    from eagletui.ui.app import EagleApp
    from eagletui.workspace import Workspace

    timings = timings or Timings.from_env()

    def factory(emit):
        return Workspace(profile, emit, target="local", preflight=preflight, timings=timings)

    return EagleApp(
        timings=timings,
        profile=profile,
        target="local",
        driver=DemoDriver(factory),
        user_config=cfg,
        theme_name=theme,
        history=history,
        recorder=recorder,
    )


def _cleanup(app) -> int:
    """Belt and braces: whatever happened in the UI, the demo's server does not outlive the demo. The
    host-side stop goes first (it records how the server ended); when it fails or leaves the server
    up, the simulator this process started is killed directly, by its pid and start time."""
    ws = app.workspace
    if ws is not None and ws.run is not None and ws.run.owned:
        import asyncio

        async def stop() -> None:
            try:
                if await ws.control.liveness(ws.run) != "dead":  # unknown: stop checks on the host
                    await ws.control.stop(ws.run, grace=ws.timings.control.demo_grace_s)
            except Exception as exc:
                _say(f"eagletui: the host-side stop of the demo server failed ({exc}): killing it directly")

        asyncio.run(stop())
        if not _kill_local(app):
            _say(f"eagletui: could not stop the demo server (pid {ws.run.pid}): stop it with kill")
    if app.recorder is not None and getattr(app.recorder, "path", None):
        _say(app.recorder.outcome()[0])
    return 0


def _kill_local(app) -> bool:
    """SIGTERM, then SIGKILL, to the process group of the simulator this demo started, only while
    its pid still has the start time we recorded (a reused pid is left alone). True when it is gone."""
    import os
    import signal
    import time

    ws = app.workspace
    run = getattr(ws, "run", None) if ws is not None else None

    def ours() -> bool:
        if run is None:
            return False
        try:
            with open(f"/proc/{int(run.pid)}/stat", encoding="ascii", errors="replace") as f:
                return f.read().rsplit(")", 1)[1].split()[19] == str(run.start_time)
        except (OSError, IndexError, ValueError):
            return False

    if run is None or not getattr(run, "owned", False) or not run.pgid or not ours():
        return True
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(int(run.pgid), sig)
        except ProcessLookupError:
            break
        except PermissionError:
            return False
        deadline = time.monotonic() + app.timings.control.demo_kill_wait_s
        while ours() and time.monotonic() < deadline:
            time.sleep(app.timings.session.busy_poll_s)
        if not ours():
            break
    return not ours()


def _emergency_cleanup(app, tmp: Path) -> None:
    """From the signal watchdog thread, when the clean quit did not finish: stop the simulator we
    started (only if its pid still has the start time we recorded) and remove the temp dir."""
    import shutil

    _kill_local(app)
    shutil.rmtree(tmp, ignore_errors=True)


def _say(msg: str) -> None:
    """stderr may be a terminal that hung up (SIGHUP): cleaning up matters more than saying so."""
    try:
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
