"""The run book's judgement of each run: warnings, alarms and the pass / fail / invalid verdict.

A verdict applies the profile's thresholds (:class:`~eagletui.core.profile.model.Verdict`) to the run,
its speedup vs the baseline and vs its no-spec reference judged with the one noise rule; the accept
length by each definition feeds the warnings. Apart from :mod:`eagletui.core.runs.book` so each part of
the run book stays a readable size.
"""

from __future__ import annotations

from typing import Any

from eagletui.core.runs.accept import definitions as accept_definitions
from eagletui.core.runs.accept import position_deltas
from eagletui.core.runs.baseline import _concs, short_of
from eagletui.core.runs.compare import comparability
from eagletui.core.runs.reference import _References
from eagletui.core.runs.run import Run, RunVerdict
from eagletui.core.stats.noise import SUGGEST_REPEATS
from eagletui.core.wording import describe_failure

#: Below this accept length speculation is (nearly) never accepting a draft token.
ACCEPT_ALARM = 1.2
#: A spec run's speedup vs its no-spec reference must reach this when the profile does not say.
DEFAULT_SPEC_SPEEDUP = 1.0


class _Verdicts(_References):
    """Warnings, alarms and verdicts of the runs of :class:`~eagletui.core.runs.book.RunBook`."""

    # ------------------------------------------------------------------ accept length, defined

    def accept_definitions(self, launch: int) -> dict[str, Any]:
        """The run's accept length by each definition (:func:`eagletui.core.runs.accept.definitions`)."""
        return self._cached("accept", launch, lambda: accept_definitions(self.runs[launch]))  # type: ignore[no-any-return]

    def position_deltas(self, launch: int) -> list[float | None]:
        """Acceptance per draft position minus the baseline run's, in percentage points."""
        base = self.base_run()
        if base is None or base is self.runs[launch]:
            return []
        return position_deltas(self.runs[launch], base)

    # ------------------------------------------------------------------ warnings and verdicts

    def warnings(self, launch: int) -> list[str]:
        run = self.runs[launch]
        out: list[str] = list(run.excluded())
        base = self.base_run()
        if base is not None and base is self.external:
            reasons = comparability(run, base) if run.good_results else []
            if reasons:
                out.append(f"not like for like vs {self.external_label}: " + "; ".join(reasons))
        if base is not None and base is not run and run.good_results and base.good_results:
            if self._common(run, base)[0] is None:
                out.append(
                    f"workload differs from baseline {self.label_of(base)}: Δ not comparable "
                    f"(concurrency {_concs(run)} vs {_concs(base)})"
                )
        if run.good_results:
            info = self.accept_definitions(launch)
            warn = info.get("warning") or info.get("bimodal")
            if warn:
                out.append(str(warn))
        return out

    def alarms(self, launch: int) -> list[str]:
        run = self.runs[launch]
        out: list[str] = []
        acc = run.metric("accept_len").mean
        if acc is not None and acc < ACCEPT_ALARM and (run.is_spec or not run.config):
            out.append(f"accept length {acc:.2f} ≈ 1: speculation is not working")
        if run.is_spec:
            ref = self.like_reference(launch)
            if ref is not None:
                mine, theirs = self._common(run, ref.run)
                tok = mine.metric("tok_s").mean if mine else None
                ref_tok = theirs.metric("tok_s").mean if theirs else None
                if tok is not None and ref_tok and tok < ref_tok:
                    out.append(f"spec run slower than no-spec {ref.label} ({tok:.0f} < {ref_tok:.0f} tok/s)")
        return out

    def failed_after(self, launch: int) -> str | None:
        """The one rule for a launch that failed once it had been measured, said in words (None when it
        does not apply): its valid results keep their verdict, because the validity gate already left out
        every result the failure cut (a death during a benchmark makes that result invalid); the failure
        is the launch's outcome, after the measurement, and is shown beside the verdict, never in place
        of it. The runs table, the run details, every export and a replay read it from here."""
        run = self.runs[launch]
        if not run.failure or not run.good_results:
            return None
        what = describe_failure(run.failure_kind, run.failure_phase) if run.failure_kind else run.failure
        return (
            f"the launch failed after this run was measured ({what}): the measurement counts and the "
            "verdict is its; the failure is the launch's"
        )

    def verdict_for(self, launch: int) -> tuple[RunVerdict, list[str]]:
        """``pass``/``fail``/``invalid``/``unjudged``/``—`` (nothing to judge) with the reasons behind it.

        ``unjudged`` where nothing failed but the comparison the verdict needs is not like for like (a
        spec run whose nearest no-spec run differs in more than speculation; a baseline of another session
        on another model, tp or GPU): never a ``pass`` on a pair docs/economics.md says is not judged."""
        run = self.runs[launch]
        v = self.verdict
        if run.results and not run.good_results:  # measured and nothing counts (a crash mid-run too)
            return RunVerdict.INVALID, run.invalid_reasons or ["benchmark failed"]
        if run.failure and not run.good_results:  # failed before anything counted: the launch's verdict
            if run.failure_kind:  # in words ("out of GPU memory during …"), then the server's message
                what = describe_failure(run.failure_kind, run.failure_phase)
                message = run.failure.partition(": ")[2]
                return RunVerdict.FAIL, [f"launch failed: {what}" + (f" ({message})" if message else "")]
            return RunVerdict.FAIL, [f"launch failed: {run.failure}"]
        if not run.good_results:
            return RunVerdict.NONE, []
        fails: list[str] = []
        passes: list[str] = []
        invalid: list[str] = []
        tok = run.metric("tok_s").mean
        acc = run.metric("accept_len").mean
        ttft = run.metric("ttft_ms").mean
        if v.min_accept_len is not None and (run.is_spec or acc is not None):
            if acc is None:
                fails.append("no accept length reported")
            elif acc < v.min_accept_len:
                fails.append(f"accept len {acc:.2f} < {v.min_accept_len:g}")
            else:
                passes.append(f"accept len {acc:.2f} ≥ {v.min_accept_len:g}")
        base = self.base_run()
        # a no-spec run of another config says nothing about speculation here: shown, never judged
        unjudged: list[str] = []
        ref = self.reference(launch) if run.is_spec else None
        if ref is not None and not ref.like_for_like:
            unjudged.append(ref.unjudged())
            ref = None
        if v.min_speedup is not None and base is not None and base is not run and base.good_results:
            unlike = comparability(run, base) if base is self.external else []
            if unlike:  # a run of another session on another model, tp or GPU: no Δ to judge by
                unjudged.append(f"unjudged vs baseline {self.label_of(base)}: " + "; ".join(unlike))
            elif ref is None or ref.run is not base:  # vs baseline: did the change help (not vs no-spec)
                self._speedup_check(
                    run, base, f"vs baseline {self.label_of(base)}", v.min_speedup, passes, fails, invalid
                )
        if ref is not None:
            need = v.min_spec_speedup if v.min_spec_speedup is not None else DEFAULT_SPEC_SPEEDUP
            name = f"vs no-spec {ref.label}"
            if ref.run is base and v.min_speedup is not None:  # one comparison, the stricter bar
                need, name = max(need, v.min_speedup), f"vs no-spec {ref.label} (the baseline)"
            self._speedup_check(run, ref.run, name, need, passes, fails, invalid)
        if v.min_tok_s is not None and tok is not None:
            if tok < v.min_tok_s:
                fails.append(f"{tok:.0f} tok/s < {v.min_tok_s:g}")
            else:
                passes.append(f"{tok:.0f} tok/s ≥ {v.min_tok_s:g}")
        if v.max_ttft_ms is not None and ttft is not None:
            if ttft > v.max_ttft_ms:
                fails.append(f"TTFT p50 {ttft:.0f} ms > {v.max_ttft_ms:g}")
            else:
                passes.append(f"TTFT p50 {ttft:.0f} ms ≤ {v.max_ttft_ms:g}")
        if invalid:
            return RunVerdict.INVALID, invalid
        if fails:  # what was not judged is said too: a fail vs the baseline is no verdict on speculation
            return RunVerdict.FAIL, [*fails, *unjudged]
        if unjudged:
            return RunVerdict.UNJUDGED, [*unjudged, *passes]
        if passes:
            return RunVerdict.PASS, passes
        return RunVerdict.NONE, []

    def _speedup_check(
        self,
        run: Run,
        other: Run,
        name: str,
        need: float,
        passes: list[str],
        fails: list[str],
        invalid: list[str],
    ) -> None:
        """One speedup threshold against one comparison, judged with the one noise rule and its band."""
        mine, theirs = self._common(run, other)
        if mine is None or theirs is None:
            invalid.append(
                f"not comparable {name}: a different workload or concurrency "
                f"(concurrency {_concs(run)} vs {_concs(other)})"
            )
            return
        tok, btok = mine.metric("tok_s"), theirs.metric("tok_s")
        if not btok.mean or tok.mean is None:
            return
        speedup = tok.mean / btok.mean
        short, b = short_of(tok, btok, need)
        said = any(SUGGEST_REPEATS in r for r in (*passes, *fails, *invalid))
        noise = b.text() + ("" if b.measured or said else f"; {SUGGEST_REPEATS}")
        if speedup >= need:
            passes.append(f"speedup {speedup:.2f}× ≥ {need:g}× {name} ({noise})")
        elif short:
            fails.append(f"speedup {speedup:.2f}× < {need:g}× {name}, outside the noise band ({noise})")
        else:  # below the bar by less than the run-to-run noise: not a measured shortfall
            passes.append(f"speedup {speedup:.2f}× within the noise band of {need:g}× {name} ({noise})")
