"""One run model: the runs table, the exports and the ETA history read the same fold and spellings."""

from __future__ import annotations

import csv
from pathlib import Path

from eagletui.core import events as ev
from eagletui.core.phases.history import history_key
from eagletui.core.profile.model import normalize_flag
from eagletui.core.runs.book import RunBook
from eagletui.core.runs.run import RunOutcome, RunVerdict
from eagletui.core.servers.flags import KEY_FLAGS
from eagletui.session.export import CSV_COLUMNS, export_runs_csv, summarize_runs


def _events() -> list[ev.Event]:
    t = 1_700_000_000.0
    return [
        ev.LaunchStarted(launch=1, target="box", config={"args": {"--tp": 2}}, wall=t, mono=0.0),
        ev.LaunchDetected(
            launch=1, args={"model_path": "org/model", "tp_size": 2, "mem_fraction_static": 0.8}
        ),
        ev.PhaseStarted(phase="load_target", launch=1, wall=t + 1, mono=1.0),
        ev.PhaseFinished(phase="load_target", launch=1, wall=t + 31, mono=31.0),  # no seconds in the log
        ev.ServerReady(launch=1, wall=t + 40, mono=40.0),
        ev.BenchmarkResult(bench=1, launch=1, output_throughput=900.0, requests=8, wall=t + 60, mono=60.0),
        # the server dies without a line the classifier knows: only its exit code says so
        ev.ProcessExited(code=1, launch=1, wall=t + 70, mono=70.0),
    ]


def test_the_table_and_the_export_agree_on_a_silent_crash(tmp_path: Path) -> None:
    book = RunBook()
    for e in _events():
        book.apply(e)
    run = book.runs[1]
    assert run.outcome == RunOutcome.FAILED and run.failure == "exited with code 1"
    # measured before the server died: the measurement stands (a lone no-spec run: nothing to judge) and
    # the failure is the launch's (issue 31 item 7's rule, said in the row)
    assert book.row(1).verdict == RunVerdict.NONE
    assert "the launch failed after this run was measured" in (book.row(1).failed_after or "")
    assert run.phases == {"load_target": 30.0} and run.ready_after == 40.0
    assert run.model == "org/model" and run.tp == 2
    assert run.args["--mem-fraction-static"] == 0.8  # the server's own args line, spelled as a flag
    [exported] = summarize_runs(_events())
    assert (exported.outcome, exported.failure, exported.phases) == (run.outcome, run.failure, run.phases)
    p = tmp_path / "runs.csv"
    export_runs_csv(_events(), p)
    row = next(csv.DictReader(p.open()))
    assert row["outcome"] == "failed" and row["failure"] == "exited with code 1"
    assert row["--mem-fraction-static"] == "0.8" and row["model"] == "org/model"


def test_a_stopped_server_is_not_a_failure() -> None:
    book = RunBook()
    for e in _events()[:6] + [
        ev.ServerStopped(reason="stopped by user", launch=1),
        ev.ProcessExited(code=-15, launch=1),
    ]:
        book.apply(e)
    assert book.runs[1].outcome == RunOutcome.STOPPED and book.runs[1].failure is None


def test_one_spelling_of_flags_and_one_list_of_tuned_flags() -> None:
    assert normalize_flag("speculative_num_steps", strict=False) == "--speculative-num-steps"
    assert normalize_flag("--tp_size", strict=False) == "--tp-size"
    assert normalize_flag(" -x ", strict=False) == "--x"  # lenient: read back from logs, never raises
    assert all(f in CSV_COLUMNS for f in KEY_FLAGS)


def test_history_keys_did_not_move() -> None:
    """Stored phase histories are keyed by this string: the unified flag list must not change it."""
    snap = {
        "target": "box",
        "model": "m",
        "tp": 8,
        "args": {
            "speculative_algorithm": "EAGLE3",
            "--speculative-num-steps": 3,
            "--mem-fraction-static": 0.8,
            "--disable-cuda-graph": True,
            "--cuda-graph-max-bs": 64,
        },
    }
    assert history_key(snap) == (
        '{"flags":{"--cuda-graph-max-bs":"64","--disable-cuda-graph":"true","--speculative-algorithm":"EAGLE3",'
        '"--speculative-num-steps":"3"},"model":"m","target":"box","tp":"8"}'
    )
