"""``eagletui replay FILE|NAME [--at TIME | --launch N]``: a recorded session, shown in the same UI
through the same event path.

The recording is opened indexed (:class:`~eagletui.session.index.ReplaySource`) and played by a
:class:`~eagletui.session.replay.StreamReplayer`, so a million-event session starts in about a second
and is never held whole. ``NAME`` is looked up in the sessions dir (exact name, else a unique prefix).
With ``--at``/``--launch`` the replay starts paused at that point, the screen rebuilt from the
events before it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from eagletui.commands._args import ArgumentParser, timings_from_env


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


def replay_warning(warnings: list[str], events: list[Any]) -> Any:
    """A warning Notice for the start of the replay: the app shows it as a toast (and it is in the log
    of what was replayed), timed like the first event so it does not stretch the timeline."""
    from eagletui.core.events import Notice

    first = events[0] if events else None
    more = f" and {len(warnings) - 1} more problem(s) (listed on stderr)" if len(warnings) > 1 else ""
    clock = {"wall": first.wall, "mono": first.mono} if first is not None else {}
    return Notice(
        level="warning", source="replay", message=f"damaged recording: {warnings[0]}{more}", **clock
    )


def parse_time(value: str) -> float:
    """``90``, ``90.5``, ``1:30`` or ``1:02:03`` → seconds from the start of the recording."""
    parts = value.strip().split(":")
    if not 1 <= len(parts) <= 3:
        raise argparse.ArgumentTypeError(f"not a time: {value!r} (seconds, MM:SS or HH:MM:SS)")
    try:
        nums = [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time: {value!r} (seconds, MM:SS or HH:MM:SS)") from None
    if any(n < 0 or n != n or n == float("inf") for n in nums) or any(n >= 60 for n in nums[1:]):
        raise argparse.ArgumentTypeError(f"not a time: {value!r} (seconds, MM:SS or HH:MM:SS)")
    total = 0.0
    for n in nums:
        total = total * 60 + n
    return total


def _launch_number(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a launch number is a positive integer, not {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("a launch number is 1 or more")
    return n


def session_dirs(cfg: Any) -> list[Any]:
    """Where a bare session name is looked up: the config's sessions dir, ./sessions, and the
    recordings shipped with eagletui (``sessions/`` of a source checkout)."""
    from pathlib import Path

    import eagletui

    dirs = [Path(getattr(cfg, "sessions_dir", "") or ".").expanduser(), Path("sessions")]
    shipped = Path(eagletui.__file__).resolve().parent.parent / "sessions"
    if shipped.resolve() not in {d.resolve() for d in dirs}:
        dirs.append(shipped)
    return dirs


def open_replay(args: argparse.Namespace, cfg: Any) -> tuple[Any, Any] | str:
    """``(source, replayer)`` ready for the UI, or the error to print. Name lookup, indexing,
    warnings and the ``--at``/``--launch`` start point; no UI import."""
    from eagletui.core.textsafe import inert
    from eagletui.session.catalog import Ambiguous, NotFound, resolve
    from eagletui.session.format import SessionError
    from eagletui.session.index import ReplaySource
    from eagletui.session.replay import StreamReplayer

    try:
        path = resolve(args.file, session_dirs(cfg))
    except (Ambiguous, NotFound) as exc:
        return str(exc)
    try:
        source = ReplaySource.open(path)
    except (SessionError, OSError) as exc:
        return str(exc)
    replayer = StreamReplayer(source, max_gap=5.0)
    replayer.set_speed(args.speed)
    try:
        if args.launch is not None:
            replayer.start_at(launch=args.launch)
        elif args.at is not None:
            if args.at > source.duration:
                source.close()
                return (
                    f"{path}: --at {args.at:g} s is past the end of the recording ({source.duration:.1f} s)"
                )
            replayer.start_at(time=args.at)
    except KeyError as exc:
        source.close()
        return f"{path}: {exc.args[0]}"
    source.first_events(1)  # the first block: its damage is reported now, not mid-replay
    for w in source.warnings:
        sys.stderr.write(f"eagletui: {inert(str(path))}: {inert(w)}\n")
    if source.warnings:
        first = source.first_events(1)
        replayer.prepend([replay_warning(list(source.warnings), first)])  # the UI covers stderr
    return source, replayer


def build_parser() -> argparse.ArgumentParser:
    from eagletui.commands._ui import add_ui_options

    p = ArgumentParser(prog="eagletui replay", description="Replay a recorded session in the UI.")
    p.add_argument(
        "file",
        help="a session file (.jsonl or .jsonl.gz), or a session's name (or a unique prefix of it) "
        "in the sessions dir: see 'eagletui sessions'",
    )
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--at",
        type=parse_time,
        metavar="TIME",
        help="start paused at TIME: seconds from the start, or HH:MM:SS",
    )
    start.add_argument(
        "--launch", type=_launch_number, metavar="N", help="start paused just after launch N began"
    )
    p.add_argument(
        "--speed", type=parse_speed, default=10.0, help="replay speed: 1 = real time, 10 (default), instant"
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="follow a session file as it grows, read-only (one another eagletui is recording, or "
        "what 'eagletui serve' gives a second tab): everything so far at once, then each new event",
    )
    add_ui_options(p)
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from eagletui.commands._ui import load_config
    from eagletui.core.textsafe import inert
    from eagletui.session.drivers import ReplayDriver

    cfg = load_config()
    if args.follow:
        return follow(args, cfg)
    opened = open_replay(args, cfg)
    if isinstance(opened, str):
        sys.stderr.write(f"eagletui: {inert(opened)}\n")
        return 2
    from eagletui.commands._tty import require_terminal

    if rc := require_terminal("replay"):  # after the file check: a bad file says so either way
        opened[0].close()
        return rc
    source, replayer = opened
    from eagletui.ui.app import EagleApp

    app = EagleApp(
        profile=None,
        target=str(source.header.get("target", "replay")),
        driver=ReplayDriver(replayer),
        user_config=cfg,
        theme_name=args.theme,
    )
    from eagletui.commands._ui import run_app

    try:
        signum = run_app(app)  # SIGTERM/SIGHUP/SIGINT: a clean quit, the terminal restored
    finally:
        source.close()  # a gzip recording's temp copy goes with it
    return 128 + signum if signum else 0


def follow(args: argparse.Namespace, cfg: Any) -> int:
    """``replay --follow``: a read-only view of a session that is still being written."""
    from eagletui.commands._tty import require_terminal
    from eagletui.core.textsafe import inert
    from eagletui.session.catalog import Ambiguous, NotFound, resolve
    from eagletui.session.feed import FeedFollower
    from eagletui.session.follow import FollowDriver
    from eagletui.session.presence import Presence

    if args.at is not None or args.launch is not None:
        sys.stderr.write("eagletui replay: --follow starts at the live end: no --at or --launch\n")
        return 2
    try:
        path = resolve(args.file, session_dirs(cfg))
    except (Ambiguous, NotFound) as exc:
        sys.stderr.write(f"eagletui: {inert(str(exc))}\n")
        return 2
    if rc := require_terminal("replay"):
        return rc
    from eagletui.commands._ui import run_app
    from eagletui.ui.app import EagleApp

    follower = FeedFollower(path)
    timings = timings_from_env()
    app = EagleApp(
        profile=None,
        target=_peek_target(path),
        driver=FollowDriver(follower, presence=Presence.from_env(), timings=timings),
        user_config=cfg,
        theme_name=args.theme,
        timings=timings,
    )
    try:
        signum = run_app(app)
    finally:
        follower.close()
    return 128 + signum if signum else 0


def _peek_target(path: Any) -> str:
    """The recording's target for the header, before the follower reads it (it may not be there yet)."""
    import json

    try:
        with open(path, "rb") as fh:
            header = json.loads(fh.readline(64 * 1024).decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return "follow"
    target = header.get("target") if isinstance(header, dict) else None
    return target if isinstance(target, str) and target else "follow"
