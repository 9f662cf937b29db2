"""SGLang 0.5.17 refuses a launch whose weights take more than ``--mem-fraction-static`` of the memory free
before they loaded ("Loaded weights leave no GPU memory for the KV cache …"). Seen on the lent H200 when six
servers of a 12 GB target shared it at 0.12 each (tests/fixtures/real-sglang-0.5.17-7b/, README there).
eagletui read it as a generic exception ("read the exception above"); it is the memory-fraction failure,
with SGLang's own minimum in the hint and the cause a shared GPU gives. The simulator printed the older
"Not enough memory" for the same launch; at 0.5.17 it now prints what the real server does."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest_sim import SPEC_ARGS, SimProc

from eagletui.commands.parse import parse_path
from eagletui.sim import crashes

REAL = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-7b" / "kv-weights-fill-mem-fraction.log"


def test_the_real_refusal_is_a_memory_fraction_failure_with_sglangs_minimum() -> None:
    s = parse_path(str(REAL))
    assert s["state"] == "failed"
    assert s["phase"] == "kv_cache"
    f = s["failure"]
    assert f["kind"] == "oom"
    assert "Loaded weights leave no GPU memory for the KV cache" in f["message"]
    assert "raise --mem-fraction-static (now 0.12) above 0.486" in f["hint"]
    assert "another process loading on this GPU" in f["hint"]


def test_the_simulators_message_is_the_real_ones() -> None:
    """Word for word where the real one has no numbers of its own; the numbers from the simulated memory."""
    real = next(line for line in REAL.read_text().splitlines() if line.startswith("ValueError: "))
    sim = crashes.tb_weights_fill(0.12, 0.4852).splitlines()[-1]
    assert sim == real


@pytest.mark.slow
def test_a_simulated_launch_whose_weights_exceed_the_fraction_fails_as_the_real_one(tmp_path: Path) -> None:
    """Kimi-K2 at tp 8 is ~125 GB of weights a GPU on the 141 GB preset: 0.5 of the memory cannot hold them."""
    args = [*SPEC_ARGS, "--mem-fraction-static", "0.5", "--sim-version", "0.5.17"]
    with SimProc(args) as sim:
        assert sim.wait_exit(60) != 0
        log = tmp_path / "server.log"
        log.write_text(sim.text())
    s = parse_path(str(log))
    assert s["state"] == "failed"
    assert s["failure"]["kind"] == "oom"
    assert "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5" in s["failure"]["message"]
    assert "SGLang's own minimum" in s["failure"]["hint"]
