"""``parse`` of the files eagletui's hints ask users for (issue 34 item 5): ``nvidia-smi topo -m`` output
and an ``NCCL_DEBUG=INFO`` log say what they show instead of "unknown". Real outputs
(tests/fixtures/real-diagnosis, provenance in its README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagletui.commands.parse import main

DIAG = Path(__file__).parent / "fixtures" / "real-diagnosis"


def _json(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    assert main([str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_topology_matrix_says_its_links(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(capsys, DIAG / "topo-a100-x4-partial-nvlink.txt")
    assert d["state"] == "unknown"
    h = d["host_file"]
    assert h["kind"] == "nvidia-smi topo -m" and h["fabric"] == "partial_nvlink" and h["gpus"] == [0, 1, 2, 3]
    assert "NVLink between some of the 4 GPUs" in h["says"]
    pcie = _json(capsys, DIAG / "topo-l40s-x4-pcie.txt")["host_file"]
    assert pcie["fabric"] == "pcie" and "worst path SYS" in pcie["says"]


def test_an_nccl_debug_log_says_its_transports_and_channels(capsys: pytest.CaptureFixture[str]) -> None:
    h = _json(capsys, DIAG / "nccl-h200x2-nvlink.log")["host_file"]
    assert h["kind"] == "NCCL_DEBUG=INFO"
    assert h["version"].startswith("2.28.9") and h["ranks"] == 2
    assert h["transports"] == {"P2P/CUMEM": 48} and h["ring_channels"] == 24
    assert main([str(DIAG / "nccl-h200x2-nvlink.log")]) == 0
    assert "not a server log: NCCL_DEBUG=INFO output: NCCL 2.28.9" in capsys.readouterr().out


def test_a_server_log_gets_no_host_file(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(capsys, Path(__file__).parent / "fixtures" / "real" / "h34-warmup-prefill-exception-single-gpu-no-tp-prefix.log")
    assert d["state"] == "failed" and "host_file" not in d
