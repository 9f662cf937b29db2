"""Speculation economics arithmetic, and the NCCL INFO summary on a real NCCL 2.28 log."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.core.cycle.economics import crossover, economics, per_request
from eagletui.core.host.nccl import NcclFold, summarize

NCCL_LOG = Path(__file__).resolve().parent / "fixtures" / "traces" / "nccl-debug-info-tp2.log"


def test_the_original_case_loses_and_says_why() -> None:
    """Baseline 82 tok/s; drafter B accepts 1.5 at 52 tok/s (the brief's numbers)."""
    e = economics(52.0, 1.5, 82.0)
    assert e is not None
    assert e.speedup == pytest.approx(52 / 82)
    assert e.baseline_step_ms == pytest.approx(1000 / 82)
    assert e.cycle_ms == pytest.approx(1.5 / 52 * 1000)
    assert e.break_even_accept_len == pytest.approx((1.5 / 52) / (1 / 82))  # ≈ 2.37
    assert e.needed_cycle_ms == pytest.approx(1.5 / 82 * 1000)  # ≈ 18.3
    assert not e.pays
    s = e.sentence()
    assert s.startswith("EAGLE-3 -37 %") and "accept ≥ 2.37. It accepts 1.50." in s and "≤ 18.3 ms would pay. The cycle takes 28.8 ms." in s
    assert set(e.to_json()) >= {
        "speedup",
        "accept_len",
        "cycle_ms",
        "baseline_step_ms",
        "break_even_accept_len",
        "needed_cycle_ms",
        "concurrency",
    }


def test_a_winning_drafter_and_the_crossover() -> None:
    win = economics(160.0, 3.2, 90.0, concurrency=1)
    assert win is not None and win.pays and win.break_even_accept_len < 3.2
    lose = economics(40.0, 2.0, 45.0, concurrency=32)
    assert lose is not None and not lose.pays
    assert crossover([(32, lose), (1, win)]) == 32
    assert crossover([(1, win)]) is None


@pytest.mark.parametrize(
    "args", [(0.0, 1.5, 82.0), (52.0, None, 82.0), (52.0, 1.5, float("nan")), (52.0, 1.5, None)]
)
def test_not_computable_is_none(args) -> None:
    assert economics(*args) is None


def test_per_request() -> None:
    assert per_request(800.0, 8) == 100.0
    assert per_request(80.0, None) == 80.0
    assert per_request(None, 4) is None


def test_real_nccl_info_log() -> None:
    s = summarize(NCCL_LOG.read_text().splitlines())
    assert s.version == "2.28.9+cuda13.0"
    assert s.transport_kinds() == ["P2P"]
    assert s.peers[(0, 1)] == "P2P/CUMEM" and s.peers[(1, 0)] == "P2P/CUMEM"
    assert s.coll_channels == 24 and s.nvls_channels == 0 and s.p2p_channels == 32
    assert s.nvls is False  # NCCL_NVLS_ENABLE set by environment to 0
    assert s.env["NCCL_NVLS_ENABLE"] == "0"
    assert s.init_seconds == pytest.approx(0.57)
    assert s.ranks == 2 and s.network == "Socket"
    line = s.one_line()
    assert "NCCL 2.28.9" in line and "P2P/CUMEM" in line and "NVLS off" in line and "init 0.57 s" in line


def test_other_transports_and_non_nccl_lines() -> None:
    fold = NcclFold()
    assert not fold.add("[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=70.00 GB")
    fold.add("node:1:1 [3] NCCL INFO Channel 01/0 : 3[3] -> 4[4] via SHM/direct/direct")
    fold.add("node:1:1 [7] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0")
    fold.add("node:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring")
    s = fold.summary
    assert set(s.transport_kinds()) == {"SHM", "NET"}
    assert s.env == {"NCCL_ALGO": "Ring"}
    assert "NCCL_ALGO=Ring" in s.one_line()
