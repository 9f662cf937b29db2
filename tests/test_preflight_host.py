"""Preflight on what a real launch needs: GPUs for a real server, room in the Hugging Face cache
(or on the local model's filesystem), and an honest label for the local machine."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from eagletui.commands.demo import free_port
from eagletui.core.profile.model import Profile
from eagletui.core.timings import FAST
from eagletui.remote.local import LocalTransport
from eagletui.remote.preflight import run_preflight
from eagletui.remote.transport import SSHOptions, open_transport
from tests.sshd import SshdServer, sshd_server_fixture  # noqa: F401

PY = sys.executable

EMPTY_SMI = "#!/bin/sh\nexit 0\n"  # a driver that answers but lists no GPUs


def _profile(tmp_path: Path, module: str, **args) -> Profile:
    return Profile(
        command=("{python}", "-m", module),
        python=PY,
        workdir=str(tmp_path),
        runs_dir=str(tmp_path / "runs"),
        port=free_port(),
        args=args,
    )


def _path_without_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smi: str | None = None) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "true").symlink_to("/bin/true")
    if smi is not None:
        (bindir / "nvidia-smi").write_text(smi)
        (bindir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))


def by_name(checks):
    return {c.name: c for c in checks}


@pytest.mark.parametrize("smi", [None, EMPTY_SMI], ids=["no-nvidia-smi", "no-gpus-listed"])
async def test_no_gpus_fails_a_real_server_and_warns_for_the_simulator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smi: str | None
) -> None:
    _path_without_nvidia_smi(tmp_path, monkeypatch, smi)
    real = by_name(
        await run_preflight(LocalTransport(), _profile(tmp_path, "sglang.launch_server", **{"--tp-size": 8}))
    )
    assert real["gpus"].status == "fail", real["gpus"]
    assert "needs 8 GPUs" in real["gpus"].message
    sim = by_name(
        await run_preflight(LocalTransport(), _profile(tmp_path, "eagletui.sim", **{"--tp-size": 8}))
    )
    assert sim["gpus"].status == "warn" and "simulator" in sim["gpus"].message


async def test_disk_check_looks_at_the_hugging_face_cache(tmp_path: Path) -> None:
    prof = _profile(tmp_path, "eagletui.sim", **{"--model-path": "org/model"})
    prof.env["HF_HOME"] = str(tmp_path / "hf")
    disk = by_name(await run_preflight(LocalTransport(), prof))["disk"]
    assert f"Hugging Face cache {tmp_path / 'hf' / 'hub'}" in disk.message, disk
    assert "logs" not in disk.message
    prof.env["HF_HUB_CACHE"] = str(tmp_path / "hubcache")  # wins over HF_HOME, as in huggingface_hub
    disk = by_name(await run_preflight(LocalTransport(), prof))["disk"]
    assert str(tmp_path / "hubcache") in disk.message


async def test_disk_check_of_a_local_model_looks_at_its_filesystem(tmp_path: Path) -> None:
    model = tmp_path / "weights"
    model.mkdir()
    (model / "config.json").write_text("{}")
    checks = by_name(
        await run_preflight(
            LocalTransport(), _profile(tmp_path, "eagletui.sim", **{"--model-path": str(model)})
        )
    )
    assert "model's filesystem" in checks["disk"].message and str(model) in checks["disk"].message


@pytest.mark.sshd
async def test_remote_check_is_labelled_ssh_and_reads_the_hosts_cache(
    tmp_path: Path, sshd_server: SshdServer
) -> None:
    t = await open_transport(
        sshd_server.alias,
        SSHOptions(config_file=str(sshd_server.config_file), known_hosts=str(sshd_server.known_hosts)), timings=FAST,
    )
    try:
        prof = _profile(tmp_path, "eagletui.sim", **{"--model-path": "org/model"})
        prof.env["HF_HOME"] = str(tmp_path / "remote-hf")
        checks = by_name(await run_preflight(t, prof))
    finally:
        await t.close()
    assert "host" not in checks and checks["ssh"].status == "pass"
    assert checks["ssh"].message.startswith(f"connected to {sshd_server.alias}")
    assert str(tmp_path / "remote-hf" / "hub") in checks["disk"].message


def test_local_label_in_the_command(tmp_path: Path) -> None:
    from eagletui.remote.preflight import connection_check_name

    assert connection_check_name("local") == "host"
    assert connection_check_name("gpu-box") == "ssh"


def _cached_repo(hub: Path, repo: str, total: int | None, present: int) -> None:
    """A Hugging Face cache entry as a started download leaves it: the snapshot's safetensors index
    (the first file fetched) and ``present`` bytes of blobs."""
    root = hub / ("models--" + repo.replace("/", "--"))
    snap = root / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    if total is not None:
        index = {"metadata": {"total_size": total}, "weight_map": {}}
        (snap / "model.safetensors.index.json").write_text(json.dumps(index))
    (root / "blobs").mkdir()
    (root / "blobs" / "aaaa").write_bytes(b"\0" * present)


async def test_disk_check_compares_the_free_space_with_the_models_size(tmp_path: Path) -> None:
    """Issue 20 item 19: 81.8 GB free passed for a model that needs hundreds of GB."""
    import shutil

    hub = tmp_path / "hf" / "hub"
    free = shutil.disk_usage(tmp_path).free
    _cached_repo(hub, "org/huge", total=free * 3, present=4096)  # far more than this disk has
    _cached_repo(hub, "org/small", total=10_000, present=4096)
    prof = _profile(tmp_path, "eagletui.sim", **{"--model-path": "org/huge"})
    prof.env["HF_HUB_CACHE"] = str(hub)
    disk = by_name(await run_preflight(LocalTransport(), prof))["disk"]
    assert disk.status == "fail", disk
    assert "does not fit" in disk.message and "org/huge needs" in disk.message, disk.message
    prof.args["--model-path"] = "org/small"
    disk = by_name(await run_preflight(LocalTransport(), prof))["disk"]
    assert disk.status == "pass" and "org/small needs 0.0 GB more" in disk.message, disk
    prof.args["--model-path"] = "org/not-cached"
    disk = by_name(await run_preflight(LocalTransport(), prof))["disk"]
    assert "size of org/not-cached is unknown" in disk.message, disk
    if free < 500e9:
        assert disk.status == "warn"


async def test_disk_check_reads_a_local_models_safetensors_index(tmp_path: Path) -> None:
    model = tmp_path / "weights"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors.index.json").write_text('{"metadata": {"total_size": 640000000000}}')
    disk = by_name(
        await run_preflight(
            LocalTransport(), _profile(tmp_path, "eagletui.sim", **{"--model-path": str(model)})
        )
    )["disk"]
    assert "is on the host (640.0 GB)" in disk.message, disk
