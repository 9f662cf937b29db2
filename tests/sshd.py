"""A real OpenSSH sshd on 127.0.0.1 for integration tests: its own keys, config, known_hosts.

Nothing under the real ``~/.ssh`` is read or written: the client side gets a private ssh config
(``Host etest``) and known_hosts in a temp dir. Tests that need it are skipped with a reason when
``/usr/sbin/sshd`` is missing or will not start.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from eagletui.commands.demo import free_port

SSHD = "/usr/sbin/sshd"
ALIAS = "etest"


def keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "eagletui-test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


@dataclass
class SshdServer:
    dir: Path
    port: int
    user: str
    proc: subprocess.Popen
    client_key: Path
    host_key: Path
    config_file: Path
    known_hosts: Path
    alias: str = ALIAS

    @property
    def target(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    @property
    def host_pub(self) -> str:
        return " ".join(self.host_key.with_suffix(".pub").read_text().split()[0:2])

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_pub}\n"

    def fingerprint(self) -> str:
        out = subprocess.run(
            ["ssh-keygen", "-l", "-E", "sha256", "-f", str(self.host_key.with_suffix(".pub"))],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return out.split()[1]

    def write_config(self, path: Path, *, known_hosts: Path, identity: Path | None = None) -> Path:
        """An ssh config with the alias, for tests that vary known_hosts or the key."""
        path.write_text(
            f"Host {self.alias}\n"
            f"  HostName 127.0.0.1\n"
            f"  Port {self.port}\n"
            f"  User {self.user}\n"
            f"  IdentityFile {identity or self.client_key}\n"
            f"  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {known_hosts}\n"
            f"  StrictHostKeyChecking yes\n"
            f"  BatchMode yes\n"
        )
        return path

    def connection_pids(self) -> list[int]:
        """Per-connection sshd processes (children of the listener): killing one cuts that connection."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        return [int(x) for x in out.split()]

    def kill_connections(self) -> int:
        pids = self.connection_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(pids)


def _wait_banner(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> bool:
    """Wait until sshd answers with its banner. An sshd that exited is a failure at once; the bound
    only stops a hang: readiness, not a number, decides (10 s once decided, and a machine at load 15
    can take several seconds to start sshd and load its keys)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                if s.recv(64).startswith(b"SSH-"):
                    return True
        except OSError:
            time.sleep(0.05)
    return False


def start_sshd(base: Path) -> SshdServer:
    """Start sshd in ``base``; raises RuntimeError with sshd's own words if it will not come up."""
    if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None:
        raise FileNotFoundError(f"{SSHD} or ssh-keygen not installed")
    base.mkdir(parents=True, exist_ok=True)
    host_key = base / "host_ed25519"
    client_key = base / "id_ed25519"
    keygen(host_key)
    keygen(client_key)
    auth = base / "authorized_keys"
    auth.write_text(client_key.with_suffix(".pub").read_text())
    auth.chmod(0o600)
    # sshd insists on its privilege-separation directory even with our own config.
    with contextlib.suppress(OSError):
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    port = free_port()
    cfg = base / "sshd_config"
    cfg.write_text(
        f"Port {port}\n"
        "ListenAddress 127.0.0.1\n"
        f"HostKey {host_key}\n"
        f"PidFile {base / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {auth}\n"
        "UsePAM no\n"
        "StrictModes no\n"
        "PermitRootLogin yes\n"
        "PubkeyAuthentication yes\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "MaxStartups 200\n"
        "MaxSessions 200\n"
        "AllowTcpForwarding yes\n"
        "LogLevel ERROR\n"
    )
    log = open(base / "sshd.log", "ab")
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(cfg)], stdout=log, stderr=log, stdin=subprocess.DEVNULL
    )
    if not _wait_banner(port, proc):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"sshd did not start: {(base / 'sshd.log').read_text()[-2000:]}")
    known = base / "known_hosts"
    srv = SshdServer(
        dir=base,
        port=port,
        user=getpass.getuser(),
        proc=proc,
        client_key=client_key,
        host_key=host_key,
        config_file=base / "ssh_config",
        known_hosts=known,
    )
    known.write_text(srv.known_hosts_line())
    srv.write_config(srv.config_file, known_hosts=known)
    return srv


def stop_sshd(srv: SshdServer) -> None:
    srv.proc.terminate()
    try:
        srv.proc.wait(5)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        srv.proc.wait()


@pytest.fixture(scope="session", name="sshd_server")
def sshd_server_fixture():
    base = Path(tempfile.mkdtemp(prefix="eagletui-sshd-"))
    try:
        srv = start_sshd(base)
    except (FileNotFoundError, RuntimeError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"real sshd unavailable: {exc}")
    try:
        yield srv
    finally:
        stop_sshd(srv)
        shutil.rmtree(base, ignore_errors=True)


__all__ = ["SshdServer", "free_port", "keygen", "sshd_server_fixture", "start_sshd", "stop_sshd"]
