"""An SSH auth failure against a real sshd names ``user@host`` once (it read ``root@root@localhost``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.core.timings import FAST
from eagletui.remote.transport import AuthFailed, SSHOptions, open_transport
from tests.sshd import SshdServer, keygen, sshd_server_fixture  # noqa: F401

pytestmark = pytest.mark.sshd


async def test_auth_failure_with_user_in_target(
    sshd_server: SshdServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)  # only the wrong key may be offered
    wrong = tmp_path / "wrong"
    keygen(wrong)
    cfg = tmp_path / "cfg"
    cfg.write_text(
        "Host 127.0.0.1\n"
        f"  IdentityFile {wrong}\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {sshd_server.known_hosts}\n"
        "  StrictHostKeyChecking yes\n"
        "  BatchMode yes\n"
    )
    target = sshd_server.target  # user@127.0.0.1:PORT
    with pytest.raises(AuthFailed) as exc:
        await open_transport(
            target, SSHOptions(config_file=str(cfg), known_hosts=str(sshd_server.known_hosts)), timings=FAST
        )
    msg = str(exc.value)
    assert f"authentication failed for {target}:" in msg, msg
    assert f"{sshd_server.user}@{sshd_server.user}@" not in msg
