"""`eagletui bench TARGET --launch` over a real OpenSSH sshd: launch through the SSH transport, the
benchmark through a forwarded port, and the stop, like on a GPU host."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from eagletui.commands.bench import main
from tests.sshd import SshdServer, sshd_server_fixture  # noqa: F401
from tests.test_bench_command import _free_port, _profile

pytestmark = [pytest.mark.sshd, pytest.mark.slow]


def test_bench_over_ssh_launches_forwards_and_stops(tmp_path: Path, capsys, sshd_server: SshdServer) -> None:
    port = _free_port()
    ssh = ["--ssh-config", str(sshd_server.config_file), "--known-hosts", str(sshd_server.known_hosts)]
    rc = main([sshd_server.alias, "--profile", _profile(tmp_path, port), "--launch", "--json", *ssh])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert f"launched on {sshd_server.alias}" in out.err and "server ready" in out.err
    data = json.loads(out.out)
    assert data["target"] == sshd_server.alias
    assert data["requests"] == 6 and data["failed"] == 0 and data["output_throughput"] > 0
    assert 2.0 < data["accept_length"] < 4.5
    # the server started over SSH was stopped over SSH: nothing listens on its port any more
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_bench_over_ssh_refuses_an_unknown_host_key(tmp_path: Path, capsys, sshd_server: SshdServer) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    cfg = sshd_server.write_config(tmp_path / "cfg", known_hosts=empty)
    ssh = ["--ssh-config", str(cfg), "--known-hosts", str(empty)]
    rc = main([sshd_server.alias, "--profile", _profile(tmp_path, _free_port()), "--launch", *ssh])
    err = capsys.readouterr().err
    assert rc != 0
    assert "cannot reach" in err and "host key" in err.lower(), err
    assert empty.read_text() == ""  # nothing was added without --accept-new-host-key


def test_bench_over_ssh_with_no_server_says_so(tmp_path: Path, capsys, sshd_server: SshdServer) -> None:
    """Issue 20 item 9 over the SSH forward: a refused connection on the host shows here as a closed
    connection; it is still "no server answers", with --launch suggested."""
    port = _free_port()
    ssh = ["--ssh-config", str(sshd_server.config_file), "--known-hosts", str(sshd_server.known_hosts)]
    rc = main([sshd_server.alias, "--profile", _profile(tmp_path, port), *ssh])
    err = capsys.readouterr().err
    assert rc == 3, err
    assert f"no server answers at port {port} on {sshd_server.alias}" in err and "--launch" in err
    assert "request(s) failed" not in err
