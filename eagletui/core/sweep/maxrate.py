"""The search for a launch's highest request rate under the SLO: which rate to benchmark next, and when
to stop.

Bisection over the rate, bounded: the first step is ``low`` (if it misses, nothing lower is searched:
the launch cannot take even that), the second ``high`` (if it meets, the answer is "at least ``high``"),
then the geometric middle of the highest rate that met and the lowest that missed — rates span orders
of magnitude, and the middle of 0.5 and 16 req/s is 2.8, not 8.25. It stops at the step budget, once
the bracket is narrower than :data:`RESOLUTION`, or when a step could not be judged. A step whose
percentile lies within the noise of a bound is run once more and judged on both runs' requests
(the driver does it: :mod:`eagletui.session.sweep.maxrate`); each run counts against the budget.

Pure: the driver feeds it verdicts (:class:`~eagletui.core.runs.max_rate.Trial`) and asks for the next
rate; the answer is :func:`~eagletui.core.runs.max_rate.sustainable`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from eagletui.core.profile.max_rate import MaxRateSpec
from eagletui.core.runs.max_rate import MaxRate, Trial, sustainable

#: the bracket [met, missed] is narrow enough once missed ÷ met is within this of 1
RESOLUTION = 0.05


@dataclass
class Bisection:
    """One launch's search: ``runs`` benchmarks taken so far (a noisy step takes two), the trials, and
    why it stopped ("" while it goes on)."""

    spec: MaxRateSpec
    trials: list[Trial] = field(default_factory=list)
    runs: int = 0
    stopped: str = ""

    def record(self, trial: Trial, runs: int = 1) -> None:
        self.trials.append(trial)
        self.runs += runs

    def answer(self) -> MaxRate:
        return sustainable(self.trials)

    def next_rate(self) -> float | None:
        """The rate to benchmark next, or None with :attr:`stopped` saying why."""
        if self.stopped:
            return None
        if self.runs >= self.spec.steps:
            return self._stop(f"the step budget ({self.spec.steps} benchmarks)")
        if not self.trials:
            return self.spec.low
        if any(t.meets is None for t in self.trials):
            return self._stop("a step could not be judged (no per-request records, or a failed benchmark)")
        m = self.answer()
        if m.rate is None:
            return self._stop(f"even {self.spec.low:g} req/s misses the SLO")
        if len(self.trials) == 1:
            return self.spec.high
        if m.fails_at is None:
            return self._stop(f"{self.spec.high:g} req/s, the highest searched, meets the SLO")
        if m.fails_at / m.rate <= 1.0 + RESOLUTION:
            return self._stop(f"bracketed within {RESOLUTION * 100:.0f} %")
        return round(math.sqrt(m.rate * m.fails_at), 3)

    def _stop(self, why: str) -> float | None:
        self.stopped = why
        return None
