"""``eagletui demo``: the whole experience on a laptop, driven through the real launch path.

The demo writes the packaged demo profile to a temp dir (with a free port), launches the bundled
SGLang simulator exactly as a real server would be launched on ``local``, and stops it on quit.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_demo_profile(directory: Path, *, port: int | None = None, time_scale: float | None = None) -> Path:
    """The packaged demo profile, with a free port and its runs kept under ``directory``."""
    from importlib.resources import files

    text = files("eagletui.profiles").joinpath("demo.toml").read_text(encoding="utf-8")
    text = text.replace("port = 30000", f"port = {port or free_port()}", 1)
    text = text.replace('runs_dir = "~/.eagletui/runs"', f'runs_dir = "{directory / "runs"}"', 1)
    if time_scale is not None:
        import re

        text = re.sub(r"sim-time-scale = [0-9.]+", f"sim-time-scale = {time_scale}", text, count=1)
    path = directory / "demo.toml"
    path.write_text(text, encoding="utf-8")
    return path


def build_parser() -> argparse.ArgumentParser:
    from eagletui.commands._ui import add_ui_options

    p = argparse.ArgumentParser(
        prog="eagletui demo", description="Run the SGLang simulator and tune it in the UI."
    )
    p.add_argument(
        "--time-scale",
        type=float,
        default=None,
        help="simulated launch speed (1.0 = a real ~10 min launch; default ≈ 20 s)",
    )
    p.add_argument("--port", type=int, default=None, help="HTTP port for the simulator (default: a free one)")
    add_ui_options(p)
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from eagletui.commands._tty import require_terminal

    if rc := require_terminal("demo"):
        return rc
    from eagletui.commands._ui import load_config, make_history, make_recorder
    from eagletui.core.profile import load_profile

    with tempfile.TemporaryDirectory(prefix="eagletui-demo-") as tmp:
        path = write_demo_profile(Path(tmp), port=args.port, time_scale=args.time_scale)
        profile = load_profile(path)
        cfg = load_config()
        app = build_app(
            profile,
            cfg,
            theme=args.theme,
            history=make_history(cfg),
            recorder=make_recorder(cfg, "local", profile, enabled=not args.no_record),
        )
        app.run()
        return _cleanup(app)


def build_app(profile, cfg, *, theme=None, history=None, recorder=None, preflight=True):
    from eagletui.ui.app import EagleApp
    from eagletui.workspace import Workspace

    def factory(emit):
        return Workspace(profile, emit, target="local", preflight=preflight)

    return EagleApp(
        profile=profile,
        target="local",
        mode="demo",
        workspace_factory=factory,
        user_config=cfg,
        theme_name=theme,
        history=history,
        recorder=recorder,
    )


def _cleanup(app) -> int:
    """Belt and braces: whatever happened in the UI, the demo's server does not outlive the demo."""
    ws = app.workspace
    if ws is not None and ws.run is not None and ws.run.owned:
        import asyncio

        async def stop() -> None:
            try:
                if await ws.control.is_alive(ws.run):
                    await ws.control.stop(ws.run, grace=5)
            except Exception as exc:  # pragma: no cover - reported, not raised
                sys.stderr.write(f"eagletui: could not stop the demo server: {exc}\n")

        asyncio.run(stop())
    if app.recorder is not None and getattr(app.recorder, "path", None):
        sys.stderr.write(f"session recorded to {app.recorder.path}\n")
    return 0
