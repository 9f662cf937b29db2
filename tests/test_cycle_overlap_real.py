"""Issue 32, the prediction item: on the lent H200 (SGLang 0.5.17, tiny pair) a cycle is bound by the
scheduler's CPU work, and the draft graph's replay (0.24 ms) runs on the GPU while the CPU still prepares
the verify (the GPU idles 2.4 ms profiled after it). More draft forwards fill that idle instead of adding
to the cycle: the isolated grid measured steps 2-5 within noise of one cycle at c = 4 (4.38, 4.54, 4.51,
4.24 ms), where the additive model priced steps 5 a tenth slower than steps 3. Pure model tests from the
real profile's summary (fixtures/real-sglang-0.5.17-gpu16)."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import pytest

from eagletui.core.cycle.fit import fit_parts
from eagletui.core.cycle.model import CycleParts, Measurement, SpecSettings, predict
from eagletui.core.runs.economics import profile_parts

GRID = json.loads((Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-gpu16" / "grid.json").read_text())
S3 = SpecSettings(steps=3)


def _mean_cycle(steps: int, c: int) -> float:
    """A stream's cycle from the mean of a setting's launches: accept ÷ (tok/s ÷ c), ms."""
    rs = GRID["launches"][f"steps {steps}"][str(c)]
    tok = sum(r["output_throughput"] for r in rs) / len(rs)
    return 1000.0 * (steps + 1) * c / tok


@functools.cache
def _parts(c: int, idle: bool = True) -> CycleParts:
    """The parts eagletui reads from round 1's steps-3 launch at ``c`` and its profile (``idle``: with the
    profile's GPU idle after the draft, as this branch's profiler writes it; without: an older summary)."""
    prof: dict[str, Any] = copy.deepcopy(GRID["profile_steps3_round1"])
    if not idle:
        for parts in (prof["parts"], *prof["parts_by_bs"].values()):
            parts["draft"].pop("idle_after_ms", None)
    base = next(r for r in GRID["launches"]["steps 3"][str(c)] if r["round"] == 1)
    parts = fit_parts(S3, 1000.0 * 4 * c / base["output_throughput"], 4.0, float("nan"), profile=profile_parts(prof, c))
    assert parts is not None
    return parts


def test_the_profile_shows_the_draft_replay_hiding_under_the_cpu() -> None:
    draft = GRID["profile_steps3_round1"]["parts"]["draft"]
    assert draft["idle_after_ms"] > 5 * draft["replay_ms"]
    parts = _parts(4)
    assert parts.regime == "overlap" and parts.hidden_ms > 2 * parts.draft_step_ms
    assert "overlap" in parts.source and "the longer of CPU and GPU" in parts.source


def test_longer_chains_at_c4_cost_what_the_grid_measured() -> None:
    """Steps 4 and 5 relative to steps 3 (the base launch's own distance from its setting's mean taken
    out), within ±10 % of the means of both launches: the additive model put steps 5's cycle +12.9 % off."""
    parts = _parts(4)
    base = parts.cycle_ms(S3, 4.0)
    for steps in (4, 5):
        predicted = parts.cycle_ms(SpecSettings(steps=steps), steps + 1.0) / base
        measured = _mean_cycle(steps, 4) / _mean_cycle(3, 4)
        assert predicted / measured - 1 == pytest.approx(0, abs=0.10), (steps, predicted, measured)


def test_steps_1_leaves_the_draft_graph_and_saves_as_much_in_either_regime() -> None:
    """Steps 1 captures no draft graph: what the hidden forwards cost goes with it, so the overlap does not
    change steps 1 (the turn-4 session's 3 → 1 prediction holds)."""
    s1 = SpecSettings(steps=1)
    assert _parts(1).cycle_ms(s1, 2.0) == pytest.approx(_parts(1, idle=False).cycle_ms(s1, 2.0), rel=1e-9)


def test_a_summary_without_the_idle_stays_additive_and_the_band_keeps_the_additive_cycle() -> None:
    old = _parts(4, idle=False)
    assert old.regime == "additive" and old.hidden_ms == 0
    s5 = SpecSettings(steps=5)
    assert old.cycle_ms(s5, 6.0) == pytest.approx(old.cycle_ms(S3, 4.0) + 2 * old.draft_step_ms)
    m = Measurement(S3, (1.0,), _parts(4), concurrency=4)
    p = predict(m, s5)
    additive = 1000.0 * 6.0 / old.cycle_ms(s5, 6.0)
    assert p.tok_s_low is not None and p.tok_s_low <= additive * 1.0001 < p.tok_s
