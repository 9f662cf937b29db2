"""A spec run's no-spec reference: the no-spec run it is compared with to say whether speculation pays.

The like-for-like one (its launch equals the spec run's minus the ``--speculative-*`` flags, same
workload), else the one with the fewest other differences, named with them. Apart from
:mod:`eagletui.core.runs.book` so each part of the run book stays a readable size.
"""

from __future__ import annotations

from dataclasses import dataclass

from eagletui.core.runs.baseline import _Baseline
from eagletui.core.runs.compare import launch_differences
from eagletui.core.runs.run import Run


@dataclass(frozen=True)
class Reference:
    """A spec run's no-spec reference: the run, how it is named (``#3`` / ``SESSION:RUN``) and what
    else differs between the two launches (empty: like for like)."""

    run: Run
    label: str
    differences: tuple[str, ...] = ()

    @property
    def like_for_like(self) -> bool:
        return not self.differences

    def names(self) -> tuple[str, ...]:
        """What differs, by name only (``--sim-host``, ``NCCL_ALGO``): for a narrow column."""
        return tuple(d.split(" (", 1)[0] for d in self.differences)

    def listed(self) -> str:
        """What else differs, shortened for a line: ``NCCL_ALGO (Tree vs Ring); --sim-host (…)`` (+N more)."""
        text = "; ".join(self.differences[:3])
        if len(self.differences) > 3:
            text += f" (+{len(self.differences) - 3} more)"
        return text

    def phrase(self) -> str:
        """``no-spec #3`` or ``no-spec #3, which also differs in NCCL_ALGO (Tree vs Ring)``."""
        text = f"no-spec {self.label}"
        if self.differences:
            text += ", which also differs in " + self.listed()
        return text

    def unjudged(self) -> str:
        """Why nothing is judged on this pair ("" when it is like for like): ``unjudged: differs in
        --sim-host (h200-nvlink vs unset) from no-spec #3``. docs/economics.md: such a pair is shown but
        never judged (no verdict, break-even, cycle model or prediction), so every view says this instead."""
        if not self.differences:
            return ""
        return f"unjudged: differs in {self.listed()} from no-spec {self.label}"


class _References(_Baseline):
    """The no-spec reference of each spec run of :class:`~eagletui.core.runs.book.RunBook`."""

    def reference(self, launch: int) -> Reference | None:
        return self._cached("reference", launch, lambda: self._reference(launch))  # type: ignore[no-any-return]

    def _reference(self, launch: int) -> Reference | None:
        """A spec run's no-spec reference (None for a no-spec run, or when no valid no-spec run of the
        same model shares a setting with it): the like-for-like one — the pinned baseline if it is one,
        else the latest — or, failing that, the one with the fewest other differences, named with them."""
        run = self.runs[launch]
        if not run.is_spec or not run.good_results:
            return None
        candidates = [r for r in self.runs.values() if r is not run]
        if self.external is not None:
            candidates.append(self.external)
        base = self.base_run()
        best: tuple[tuple[int, int, int], Reference] | None = None
        for other in candidates:
            if other.is_spec or not other.good_results or not other.config:
                continue
            if run.model and other.model and run.model != other.model:
                continue
            if not any(other.group_like(g) is not None for g in run.groups()):
                continue
            diffs = tuple(launch_differences(run, other))
            rank = (len(diffs), 0 if other is base else 1, -other.launch if other is not self.external else 0)
            ref = Reference(other, self.label_of(other), diffs)
            if best is None or rank < best[0]:
                best = (rank, ref)
        return best[1] if best is not None else None

    def like_reference(self, launch: int) -> Reference | None:
        """The spec run's reference when it is like for like: the only one a verdict, an alarm, the
        economics or a prediction may be built on (None: no reference, or one that also differs in
        something else)."""
        ref = self.reference(launch)
        return ref if ref is not None and ref.like_for_like else None

    def missing_reference(self, launch: int) -> str:
        """What a spec run lacks for a model built on a no-spec run: ``no no-spec run at this setting``,
        or ``no like-for-like no-spec run (unjudged: differs in … from no-spec #3)``."""
        ref = self.reference(launch)
        if ref is not None and not ref.like_for_like:
            return f"no like-for-like no-spec run ({ref.unjudged()})"
        return "no no-spec run at this setting"

    def nospec_reference(self, launch: int) -> Run | None:
        """The run of :meth:`reference` (None when there is none)."""
        ref = self.reference(launch)
        return ref.run if ref is not None else None
