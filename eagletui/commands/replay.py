"""``eagletui replay FILE``: a recorded session, shown in the same UI through the same event path."""

from __future__ import annotations

import argparse
import sys


def parse_speed(value: str):
    if value in ("instant", "max"):
        return "instant"
    try:
        speed = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("speed is a number (e.g. 1, 10) or 'instant'") from None
    if speed <= 0:
        raise argparse.ArgumentTypeError("speed must be positive")
    return speed


def build_parser() -> argparse.ArgumentParser:
    from eagletui.commands._ui import add_ui_options

    p = argparse.ArgumentParser(prog="eagletui replay", description="Replay a recorded session in the UI.")
    p.add_argument("file", help="a session file (.jsonl or .jsonl.gz) from the sessions dir or sessions/")
    p.add_argument(
        "--speed", type=parse_speed, default=10.0, help="replay speed: 1 = real time, 10 (default), instant"
    )
    add_ui_options(p)
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from eagletui.session.format import SessionError, read_session
    from eagletui.session.replay import Replayer

    try:
        header, events, warnings = read_session(args.file)
    except (SessionError, OSError) as exc:
        sys.stderr.write(f"eagletui: {exc}\n")
        return 2
    for w in warnings:
        sys.stderr.write(f"eagletui: {args.file}: {w}\n")
    from eagletui.commands._tty import require_terminal

    if rc := require_terminal("replay"):  # after the file check: a bad file says so either way
        return rc
    from eagletui.commands._ui import load_config
    from eagletui.ui.app import EagleApp

    cfg = load_config()
    replayer = Replayer(events, max_gap=5.0)
    replayer.set_speed(args.speed)
    app = EagleApp(
        profile=None,
        target=str(header.get("target", "replay")),
        mode="replay",
        replay=replayer,
        user_config=cfg,
        theme_name=args.theme,
    )
    app.run()
    return 0
