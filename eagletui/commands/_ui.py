"""Shared set-up for the commands that open the UI (demo, connect, replay)."""

from __future__ import annotations

import sys
from typing import Any

from eagletui.core.profile import Profile


def load_config() -> Any:
    from eagletui.config import load_user_config

    cfg, problems = load_user_config()
    for p in problems:
        sys.stderr.write(f"eagletui: config: {p}\n")
    return cfg


def make_recorder(cfg: Any, target: str, profile: Profile | None, enabled: bool = True) -> Any:
    if not enabled or not getattr(cfg, "record", True):
        return None
    from eagletui.core.redact import Redactor
    from eagletui.session.record import Recorder

    # Learns the profile's secrets (env, --api-key, its command) so log lines echoing them are scrubbed.
    redactor = Redactor.for_profile(profile) if profile else Redactor()
    try:
        return Recorder.create(
            cfg.sessions_dir, target=target, profile_name=profile.name if profile else "", redactor=redactor
        )
    except OSError as exc:
        sys.stderr.write(f"eagletui: not recording: {exc}\n")
        return None


def make_history(cfg: Any) -> Any:
    try:
        from eagletui.core.history import PhaseHistory

        return PhaseHistory.load(cfg.history_path)
    except Exception:
        return None


def add_ui_options(parser: Any) -> None:
    parser.add_argument("--theme", help="theme name (see themes/; t cycles in the app)")
    parser.add_argument("--no-record", action="store_true", help="do not record this session")
