"""The simulator titles its child processes as SGLang does, so a tool that looks for the scheduler by
title finds it on the simulator exactly when it would on a real server.

SGLang 0.5.17 (``managers/scheduler.py``, ``run_scheduler_process``) sets ``sglang::scheduler`` plus
`` TP<rank>`` only when ``tp_size > 1``. The GPU run of 2026-12-02 (one H200, tp 1) had a plain
``sglang::scheduler``; the simulator said ``sglang::scheduler_TP0``, and the real-server script's stall
check, written against the simulator, found nothing to stop.
"""

from __future__ import annotations

from eagletui.sim.children import Children


def test_one_gpu_scheduler_has_no_rank_suffix() -> None:
    assert Children(1).titles == ["sglang::scheduler", "sglang::detokenizer"]


def test_tensor_parallel_schedulers_are_titled_by_rank() -> None:
    assert Children(2).titles == ["sglang::scheduler_TP0", "sglang::scheduler_TP1", "sglang::detokenizer"]
    # a multi-node launch: this node holds ranks 4 and 5 of 8
    assert Children(8, [4, 5]).titles[:2] == ["sglang::scheduler_TP4", "sglang::scheduler_TP5"]
