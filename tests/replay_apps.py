"""The app over a recording, replayed at instant speed: what the UI tests drive instead of a live host."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from eagletui.config import UserConfig
from eagletui.core.events import Event
from eagletui.core.profile.model import Profile
from eagletui.session.format import read_session
from eagletui.session.replay import Replayer
from eagletui.ui.app import EagleApp

EXAMPLE = Path(__file__).resolve().parent.parent / "sessions" / "example-demo.jsonl"


def replay_app(
    events: Sequence[Event] | None = None,
    *,
    profile: Profile | None = None,
    theme: str | None = None,
    user_config: UserConfig | None = None,
) -> EagleApp:
    if events is None:
        _header, events, _warnings = read_session(EXAMPLE)
    replayer = Replayer(events)
    replayer.set_speed("instant")
    return EagleApp(
        profile=profile,
        target="local",
        mode="replay",
        replay=replayer,
        user_config=user_config or UserConfig(record=False),
        theme_name=theme,
    )


@contextlib.asynccontextmanager
async def replayed(size: tuple[int, int], **kwargs) -> AsyncIterator[tuple[EagleApp, object]]:
    """``(app, pilot)`` once the whole recording has been folded in and painted."""
    app = replay_app(**kwargs)
    async with app.run_test(size=size) as pilot:
        await app.replay_done.wait()
        await pilot.pause()
        yield app, pilot
