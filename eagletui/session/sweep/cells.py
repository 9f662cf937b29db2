"""What the sweep queue holds per launch and per client point: :class:`VariantState` and :class:`CellState`,
their states, and the fingerprint that says two benchmarks ran the same client setting.

Plain data with ``to_dict``/``from_dict`` (the queue file is JSON, checked by :mod:`.check` before it is
read); the operations on them are :class:`~eagletui.session.sweep.queue.SweepQueue`'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagletui.core.profile.sweep import apply_client, client_label
from eagletui.core.stats.sample import mean_stdev

if TYPE_CHECKING:
    from eagletui.core.profile.model import BenchSettings
    from eagletui.core.profile.objective import Objective
PENDING = "pending"


LAUNCHING = "launching"


BENCHMARKING = "benchmarking"


DONE = "done"


FAILED = "failed"


SKIPPED = "skipped"


IN_FLIGHT = (LAUNCHING, BENCHMARKING)


#: Extra benchmarks a cell may run in place of failed repeats before it gives up.
MAX_RERUNS = 2


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


class SweepError(Exception):
    """A queue that cannot be used (damaged, from another sweep, locked by a running sweep)."""


def why_not_counted(r: dict[str, Any]) -> str:
    """Why a recorded run does not count: its error, else the validity gate's reasons (issue 19)."""
    return str(r.get("error") or "; ".join(r.get("invalid") or []) or "no tokens")


def client_fingerprint(point: dict[str, Any], bench: BenchSettings | None = None) -> str:
    """What a benchmark's duration depends on besides the server: the client point and the workload."""
    b = apply_client(bench, point) if bench is not None else None
    key: dict[str, Any] = {"point": point}
    if b is not None:
        key.update(
            runner=b.runner,
            prompts=b.prompts,
            num_prompts=b.num_prompts,
            concurrency=b.concurrency,
            max_new_tokens=b.max_new_tokens,
            input_len=b.input_len,
            request_rate=b.request_rate,
        )
    return json.dumps(key, sort_keys=True, default=str)


@dataclass
class CellState:
    """One client point of one launch and its runs (tok_s, accept, ttft_ms, seconds, warm, error …)."""

    client: dict[str, Any]
    repeats: list[dict[str, Any]] = field(default_factory=list)
    stop: str = ""  # why it ran no more (sweep_decide.Step.reason), "" while it may run again
    stop_text: str = ""

    @property
    def good(self) -> list[dict[str, Any]]:
        """Runs that count: measured, no error, and not marked invalid."""
        return [
            r
            for r in self.repeats
            if not r.get("error")
            and not r.get("invalid")
            and isinstance(r.get("tok_s"), int | float)
            and r["tok_s"] > 0
        ]

    def values(self) -> tuple[float, ...]:
        return tuple(float(r["tok_s"]) for r in self.good)

    def objective_values(self, objective: Objective | None, concurrency: int | None = None) -> tuple[float, ...]:
        """Each counted run's value under ``objective`` (None: tok/s), at the concurrency the run
        recorded (else ``concurrency``, else the client point's). A run the objective cannot judge (no
        goodput: no per-request records) is left out, not counted as zero."""
        if objective is None or objective.kind == "tok_s":
            return self.values()
        out = []
        for r in self.good:
            conc = _int(r.get("concurrency")) or concurrency or _int(self.client.get("concurrency")) or 1
            v = objective.value(float(r["tok_s"]), conc, r.get("goodput_tok_s"))
            if v is not None:
                out.append(v)
        return tuple(out)

    def tok_s(self) -> tuple[float | None, float | None, int]:
        return mean_stdev([r["tok_s"] for r in self.good])

    def accept(self) -> float | None:
        return mean_stdev([r.get("accept") for r in self.good])[0]

    def ttft_ms(self) -> float | None:
        return mean_stdev([r.get("ttft_ms") for r in self.good])[0]

    @property
    def label(self) -> str:
        return client_label(self.client)


@dataclass
class VariantState:
    """One launch of the sweep: a server config (``settings``) and its cells."""

    index: int  # position in the declared order (the baseline is 0; a drift re-check comes last)
    name: str
    settings: dict[str, Any]
    state: str = PENDING
    phase: str = ""  # the launch phase now (not persisted meaningfully; for views)
    run_id: str = ""
    launches: int = 0  # servers launched for this variant (a reattach is not a launch)
    attempts: int = 0
    cells: list[CellState] = field(default_factory=lambda: [CellState({})])
    failure_kind: str = ""
    failure: str = ""
    launch_s: float | None = None  # launch command → ready
    bench_s: float | None = None
    overhead_s: float | None = None  # the previous server's stop + waiting for its GPU memory
    started_wall: float | None = None
    target: str = ""  # the host that took it (several hosts share one queue)
    recheck_of: int | None = None  # the drift check: the same config as that variant, run at the end
    cost: list[int] = field(default_factory=list)  # sweep_decide.cost_of its server args (ties → cheaper)
    launch_key: str = ""  # core.history key of its launch (the ETA's learned times)
    #: the step profile taken after its benchmarks (sweep.step_profile): what it saw, or why none came
    profile_note: str = ""
    oom_retry: str = ""  # set when its launch ran out of GPU memory and was launched again once
    gate: dict[str, Any] = field(default_factory=dict)  # how the wait for clean GPUs before it ended
    #: ``eagletui tune``'s notes (eagletui.session.sweep.tuner): the prediction it was chosen on, the
    #: cycle model's forecasts from its launch, why it was never tried
    tune: dict[str, Any] = field(default_factory=dict)
    #: ``[sweep.max_rate]``'s answer for this launch (core.runs.max_rate.MaxRate.to_json, the search's
    #: stop reason and benchmarks); empty without the search
    max_rate: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> int:
        """The server config it launches: its own index, or the variant a drift check repeats."""
        return self.index if self.recheck_of is None else self.recheck_of

    # one-cell sweeps read like before: a variant's repeats are its cell's
    @property
    def repeats(self) -> list[dict[str, Any]]:
        if len(self.cells) == 1:
            return self.cells[0].repeats
        return [r for c in self.cells for r in c.repeats]

    @repeats.setter
    def repeats(self, value: list[dict[str, Any]]) -> None:
        self.cells[0].repeats = value

    @property
    def good(self) -> list[dict[str, Any]]:
        return [r for c in self.cells for r in c.good]

    def tok_s(self) -> tuple[float | None, float | None, int]:
        """Its one cell's mean, stdev and count (None for several cells: see the cells)."""
        return self.cells[0].tok_s() if len(self.cells) == 1 else (None, None, 0)

    def accept(self) -> float | None:
        return self.cells[0].accept() if len(self.cells) == 1 else None

    def ttft_ms(self) -> float | None:
        return self.cells[0].ttft_ms() if len(self.cells) == 1 else None
