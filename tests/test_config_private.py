"""What eagletui creates on the user's machine is private: dirs 0700, files 0600, whatever the umask
(issue 11 item 10: the data dir came out 0755); and an auth error names ``user@host`` once."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from eagletui import config as c
from eagletui.core import events as ev
from eagletui.core.phases.history import PhaseHistory
from eagletui.session.export import export_runs_csv
from eagletui.session.record import Recorder


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Nested and missing: every level eagletui creates must come out 0700, not just the last one.
    monkeypatch.setenv("EAGLETUI_CONFIG_DIR", str(tmp_path / "home" / "cfg" / "eagletui"))
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(tmp_path / "home" / "share" / "eagletui"))
    old = os.umask(0o022)  # the usual umask, which gave 0755
    try:
        yield
    finally:
        os.umask(old)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_recording_dirs_and_file_are_private(tmp_path: Path) -> None:
    with Recorder.create(target="box", profile_name="p") as rec:
        rec.write(ev.LogLine(text="x"))
    assert rec.path.parent == c.data_dir() / "sessions"
    assert mode(c.data_dir()) == 0o700
    assert mode(c.data_dir() / "sessions") == 0o700
    assert mode(c.data_dir().parent) == 0o700  # created by us too
    assert mode(rec.path) == 0o600


def test_existing_data_dir_from_an_older_version_is_tightened(tmp_path: Path) -> None:
    c.data_dir().mkdir(parents=True)
    os.chmod(c.data_dir(), 0o755)
    outside = tmp_path / "shared-sessions"
    outside.mkdir()
    os.chmod(outside, 0o755)
    Recorder.create(target="box", profile_name="p").close()
    assert mode(c.data_dir()) == 0o700
    # a sessions dir the user chose and made is theirs: its mode is left alone, the file is still 0600
    with Recorder.create(outside, target="box", profile_name="p") as rec:
        pass
    assert mode(outside) == 0o755 and mode(rec.path) == 0o600


def test_default_config_file_is_private() -> None:
    p = c.write_default_config()
    assert mode(p) == 0o600
    assert mode(c.config_dir()) == 0o700 and mode(c.config_dir().parent) == 0o700


def test_history_file_and_dir_are_private() -> None:
    h = PhaseHistory(c.default_history_path())
    h.record("k", {"load_target": 12.0})
    assert not h.warnings
    assert mode(Path(c.default_history_path())) == 0o600
    assert mode(c.data_dir()) == 0o700


def test_csv_export_is_private(tmp_path: Path) -> None:
    out = tmp_path / "runs.csv"
    export_runs_csv([ev.LaunchStarted(launch=1, target="box")], out)
    assert mode(out) == 0o600


# ------------------------------------------------------------------------------ the auth message


@pytest.mark.parametrize(
    ("target", "username", "expected"),
    [
        ("root@localhost", "root", "authentication failed for root@localhost:"),
        ("localhost", "root", "authentication failed for root@localhost:"),
        ("gpu-box", "alice", "authentication failed for alice@gpu-box:"),
        ("bob@[::1]:2222", "bob", "authentication failed for bob@[::1]:2222:"),
    ],
)
def test_auth_failed_names_user_at_host_once(target: str, username: str, expected: str) -> None:
    from eagletui.remote.transport import AuthFailed

    msg = str(AuthFailed(target, username, ["publickey"], ["publickey"]))
    assert msg.startswith(expected), msg
    assert f"{username}@{username}@" not in msg
