"""What an app process does differently when ``eagletui serve`` started it behind a browser tab.

The server says so in the environment (:mod:`eagletui.session.presence`): the owner's app writes a
feed of everything its session model folds, for the read-only views of the other tabs to follow
(:mod:`eagletui.session.feed`). Outside ``serve`` none of this runs.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from eagletui.session.presence import FEED_ENV, ROLE_ENV


def attach_owner_feed(app: Any) -> Any:
    """The :class:`~eagletui.session.feed.FeedWriter` following ``app``'s model when this process is a
    served session's owner, else None. A feed that cannot be written leaves the session running
    without views (said on stderr, which the server shows)."""
    path = os.environ.get(FEED_ENV, "")
    if os.environ.get(ROLE_ENV) != "owner" or not path:
        return None
    from eagletui.core.profile.redact import Redactor
    from eagletui.session.feed import FeedWriter

    model = app.model
    recorder = getattr(model, "recorder", None)
    redactor = getattr(recorder, "redactor", None)
    if redactor is None:
        redactor = Redactor.for_profile(model.profile) if model.profile is not None else Redactor()
    profile_name = model.profile.name if model.profile is not None else ""
    try:
        feed = FeedWriter(
            path,
            target=str(model.target or ""),
            profile_name=profile_name,
            source="replay" if app.driver.is_replay else "live",
            redactor=redactor,
        )
    except OSError as exc:
        sys.stderr.write(f"eagletui: no read-only views of this session: {exc}\n")
        return None
    feed.attach(model)
    return feed
