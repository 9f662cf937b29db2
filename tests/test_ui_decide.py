"""Issue 32: in the TUI, a vs-no-spec comparison whose band is wider than its effect is repeated until
decided or the stated time limit (``D``), by the same loop headless ``bench --decide-within`` runs
(:mod:`eagletui.session.decide`). The real app on the real simulator: the server up is the no-spec launch,
benchmarked with ``b``; a speculative launch of the same config, benchmarked twice, is in the run
book (recorded events, as a reattach or a replay brings them) a few per cent above it, within noise."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from eagletui.commands.bench import without_speculation
from eagletui.commands.demo import build_app
from eagletui.config import UserConfig
from eagletui.core import events as ev
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.call import WITHIN
from eagletui.session.decide import open_rows, spec_launch_for
from tests.test_ui_demo import fast_profile, quit_app, wait_for

pytestmark = pytest.mark.slow

SPEC = 7  # the recorded spec launch's number (after the live one)


def _spec_events(config: dict, fingerprint: str, tok_s: list[float], conc: int) -> list[ev.Event]:
    out: list[ev.Event] = [
        ev.LaunchStarted(launch=SPEC, target="local", config=config),
        ev.ServerReady(launch=SPEC),
    ]
    for i, v in enumerate(tok_s):
        b = 9000 + i
        out.append(ev.BenchmarkStarted(bench=b, launch=SPEC, workload={"concurrency": conc}))
        out.append(
            ev.BenchmarkResult(
                bench=b,
                launch=SPEC,
                output_throughput=v,
                accept_length=3.2,
                requests=6,
                duration_s=1.0,
                workload_fingerprint=fingerprint,
            )
        )
    return out


def _within_noise_spec(book: RunBook, config: dict, fingerprint: str, base: int, conc: int) -> list[ev.Event]:
    """Spec runs a few per cent above the measured no-spec runs, within noise, where more no-spec runs
    could still decide (tried on a copy of the run book: the noise is the simulator's)."""
    nospec = [r.output_throughput for r in book.runs[base].results]
    mean = sum(nospec) / len(nospec)
    for f in (1.02, 1.04, 1.06, 1.08, 1.10, 1.13, 1.16, 1.2, 1.25):
        events = _spec_events(config, fingerprint, [mean * f, mean * f * 1.05], conc)
        scratch = copy.deepcopy(book)
        for e in events:
            scratch.apply(e)
        rows = scratch.concurrency_table(SPEC)
        if rows and rows[0].call == WITHIN and open_rows(scratch, SPEC, base):
            return events
    raise AssertionError(f"no spec tok/s within noise and decidable around {nospec}")


async def test_d_repeats_the_no_spec_benchmark_until_decided_within_the_limit(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("EAGLETUI_TIMINGS", "fast,sweep.decide_s=4")
    spec_prof = fast_profile(tmp_path)
    prof = without_speculation(spec_prof)
    prof.bench = dataclasses.replace(prof.bench, num_prompts=4, max_new_tokens=16)
    app = build_app(prof, UserConfig(record=False, history_path=str(tmp_path / "h.jsonl")), preflight=False)
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 40)
        base = app.state.current
        await pilot.press("D")  # nothing to decide yet: said, and nothing runs
        await pilot.pause(0.2)
        assert any("nothing to decide" in n.message for n in app._notifications)
        await pilot.press("b")
        assert await wait_for(pilot, lambda: len(app.state.bench_results) == 1, 40)
        run = app.runbook.runs[base]
        fp = run.results[0].workload_fingerprint
        spec_config = {**run.config, "args": dict(spec_prof.args)}
        for e in _within_noise_spec(app.runbook, spec_config, fp, base, prof.bench.concurrency):
            app.runbook.apply(e)
        assert spec_launch_for(app.runbook, base) == SPEC

        app.clear_notifications()
        await pilot.press("D")  # says it repeats, at most the limit; toasts of each run and the end follow
        assert await wait_for(
            pilot,
            lambda: any(
                n.title == "repeat until decided" and "more no-spec run" in n.message
                for n in app._notifications
            ),
            40,
        )
        # more runs of the server up now, at the comparison's concurrency; the profile's own settings kept
        assert len(app.runbook.runs[base].results) > 1
        assert app.workspace.running_profile.bench.concurrency == prof.bench.concurrency
        done = next(
            n.message
            for n in app._notifications
            if n.title == "repeat until decided" and "more no-spec" in n.message
        )
        assert "limit 4 s" in done and ("every point decided" in done or "still within noise" in done)
        await quit_app(pilot)
