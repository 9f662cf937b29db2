"""Plan by relaunch: server factors launch, client factors only benchmark; ``sweep --plan``; the order;
the ETA from learned times, checked against the time a sweep on the simulator took."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eagletui.commands.demo import free_port
from eagletui.commands.sweep import main
from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.model import ProfileError
from eagletui.core.sweep.plan import launch_order, makespan
from eagletui.session.sweep.queue import SweepQueue
from tests.conftest_sim import sim_profile_toml

REST = """[server.env]
NCCL_ALGO = "Ring"
SGLANG_LOG_MS = "1"
[[toggles]]
env = "NCCL_ALGO"
choices = ["Ring", "Tree", "NVLS"]
[bench]
num_prompts = 8
concurrency = 2
max_new_tokens = 24
warmup = 0
[sweep]
repeats = 2
[sweep.matrix]
NCCL_ALGO = ["Ring", "Tree", "NVLS"]
concurrency = [1, 2, 4, 8]
"""


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("EAGLETUI_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path


def _profile(tmp_path: Path) -> str:
    return sim_profile_toml(tmp_path, free_port(), name="plantest", filename="plan.toml", rest=REST)


# ------------------------------------------------------------------ pure


def test_client_factors_do_not_multiply_launches():
    p = parse_profile(_profile_text(), "p.toml")
    spec = p.sweep
    assert len(spec.variants) == 3 and spec.client_factors == ("concurrency",)
    assert spec.client_points() == [{"concurrency": c} for c in (1, 2, 4, 8)]
    q = SweepQueue.plan(spec, target="local", profile_path="p.toml", profile=p)
    assert len(q.variants) == 3 and all(len(v.cells) == 4 for v in q.variants)
    assert [v.cells[2].client for v in q.variants] == [{"concurrency": 4}] * 3
    assert len({v.launch_key for v in q.variants}) == 1  # NCCL_ALGO does not change launch times


def _profile_text() -> str:
    return (
        'name = "t"\n[server]\ncommand = ["python3", "-m", "eagletui.sim"]\n[server.args]\nmodel-path = "m"\n'
        + REST
    )


@pytest.mark.parametrize(
    ("sweep", "words"),
    [
        ('[sweep]\n[[sweep.variants]]\nname = "a"\nset = { concurrency = 4 }\n', "is a client setting"),
        ("[sweep]\n[sweep.matrix]\nconcurrency = [0, 4]\n", "out of range"),
        ("[sweep]\n[sweep.matrix]\nconcurrency = [4, 4]\n", "listed twice"),
        ("[sweep]\n[sweep.matrix]\nconcurrency = [1.5]\n", "not an integer"),
        (
            '[sweep]\n[[sweep.variants]]\nname = "a"\n[sweep.client]\nconcurency = [1]\n',
            "did you mean 'concurrency'",
        ),
        (
            "[sweep]\nrepeats = 2\nmax_repeats = 4\n[sweep.matrix]\nconcurrency = [1]\n",
            'applies to repeats = "adaptive"',
        ),
        ("[sweep]\nmax_repeats = 1\n[sweep.matrix]\nconcurrency = [1]\n", "sweep.max_repeats must be"),
        ("[sweep]\ngpu_wait_s = -1\n[sweep.matrix]\nconcurrency = [1]\n", "sweep.gpu_wait_s"),
        ('[sweep]\ndrift_check = "yes"\n[sweep.matrix]\nconcurrency = [1]\n', "sweep.drift_check"),
    ],
)
def test_client_and_policy_errors_are_located(sweep, words):
    base = (
        'name = "t"\n[server]\ncommand = ["python3", "-m", "eagletui.sim"]\n[server.args]\nmodel-path = "m"\n'
    )
    with pytest.raises(ProfileError) as ei:
        parse_profile(base + sweep, "p.toml")
    assert words in ei.value.message and ei.value.line is not None


def test_only_client_factors_is_one_launch_and_request_rate_is_a_client_factor():
    base = (
        'name = "t"\n[server]\ncommand = ["python3", "-m", "eagletui.sim"]\n[server.args]\nmodel-path = "m"\n'
    )
    p = parse_profile(
        base + "[sweep]\n[sweep.matrix]\nrequest_rate = [0, 2.5]\nmax_new_tokens = [64, 256]\n", "p"
    )
    assert len(p.sweep.variants) == 1 and len(p.sweep.client_points()) == 4
    assert p.sweep.client_points()[1] == {"request_rate": 0.0, "max_new_tokens": 256}


def test_order_baseline_first_then_nearest_and_repeated_configs_spread():
    a, b, c = {}, {"x": 1}, {"x": 1, "y": 2}
    assert launch_order([a, c, b]) == [0, 2, 1]  # one change before two
    # a variant list repeating configs: launches of one config as far apart as possible
    order = launch_order([a, b, b, c, a])
    assert order[0] == 0 and order.index(4) > order.index(3)
    assert abs(order.index(1) - order.index(2)) >= 2


def test_makespan_divides_over_workers():
    assert makespan([10, 10, 10, 10]) == 40
    assert makespan([10, 10, 10, 10], workers=2) == 20
    assert makespan([10, 10], busy=[5], workers=2) == 15
    assert makespan([], busy=[7, 3]) == 7


def test_drift_check_when_it_costs_at_most_a_fifth():
    base = (
        'name = "t"\n[server]\ncommand = ["python3", "-m", "eagletui.sim"]\n[server.args]\nmodel-path = "m"\n'
    )
    tog = '[[toggles]]\nenv = "A"\nchoices = ["1", "2", "3", "4", "5"]\n'
    five = parse_profile(base + tog + '[sweep]\n[sweep.matrix]\nA = ["1", "2", "3", "4", "5"]\n', "p")
    q = SweepQueue.plan(five.sweep, target="local", profile_path="p")
    assert len(q.variants) == 6 and q.variants[-1].recheck_of == 0 and q.order[-1] == 5
    three = parse_profile(base + tog + '[sweep]\n[sweep.matrix]\nA = ["1", "2", "3"]\n', "p")
    assert len(SweepQueue.plan(three.sweep, target="l", profile_path="p").variants) == 3
    forced = parse_profile(base + tog + '[sweep]\ndrift_check = true\n[sweep.matrix]\nA = ["1", "2"]\n', "p")
    assert len(SweepQueue.plan(forced.sweep, target="l", profile_path="p").variants) == 3


# ------------------------------------------------------------------ sweep --plan


def test_plan_prints_launches_cells_and_what_the_eta_still_lacks(dirs, capsys):
    assert main(["local", "--profile", _profile(dirs), "--plan"]) == 0
    out = capsys.readouterr().out
    assert "3 launches for 3 server configs, 12 cells (4 client settings a launch" in out
    assert "client settings: concurrency=1, concurrency=2, concurrency=4, concurrency=8" in out
    assert re.search(r"1\. NCCL_ALGO=Ring \(baseline\): pending; 4 cells", out)
    assert "not yet known: " in out and "launch time" in out
    # nothing learned yet: the plan says so, it does not promise zero minutes
    assert "~0:00" not in out and "ETA ≥ 0:00" not in out, out
    assert "4 cells to benchmark, time not known yet" in out and "ETA not known yet on 1 host" in out
    assert not (dirs / "runs").exists()  # nothing launched


# ------------------------------------------------------------------ on the simulator


@pytest.mark.serial  # measures the simulator's speed: run last, alone
@pytest.mark.slow
def test_3_configs_x_4_concurrencies_is_3_launches_and_the_eta_holds(dirs, capsys):
    prof = _profile(dirs)
    rc = main(["local", "--profile", prof, "--json", "--no-preflight"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    rep = json.loads(out.out)
    assert rep["launches"] == 3 and rep["cells"] == 12 and rep["runs"] == 24
    runs = [p for p in (dirs / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(runs) == 3  # 3 servers, not 12
    assert all(len(v["cells"]) == 4 and all(c["runs"] == 2 for c in v["cells"]) for v in rep["variants"])
    assert [d["label"] for d in rep["decisions"]] == [f"concurrency={c}" for c in (1, 2, 4, 8)]
    assert all(d["winner"] and d["how_sure"] for d in rep["decisions"])
    # the first benchmark of each cell warmed up at its own concurrency, the second did not
    for v in rep["variants"]:
        for c in v["cells"]:
            assert [r["warm"] for r in c["repeats"]] == [True, False]

    # the second time, the plan knows every part of the ETA before anything runs
    assert main(["local", "--profile", prof, "--plan"]) == 0
    plan = capsys.readouterr().out
    assert re.search(r"ETA \d+:\d\d on 1 host \(learned", plan), plan
    rc = main(["local", "--profile", prof, "--json", "--no-preflight", "--restart"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    again = json.loads(out.out)
    eta = again["eta_check"]
    assert eta["launches_done_then"] == 0  # predicted at the start
    predicted, actual = eta["predicted_s"], eta["actual_s"]
    assert eta["error_pct"] == pytest.approx((predicted - actual) / actual * 100, abs=1.0), eta  # both rounded to 0.1 s
    # The ETA was learned from the first sweep's launches and benchmarks and is checked against the
    # second's. The simulator is CPU-bound: where the machine's load changes between the two (other
    # tests starting or finishing) every launch and benchmark of the second takes longer or shorter
    # alike. Compare at the first sweep's pace: the ratio of the same launches' and benchmarks' own
    # times is the machine's change, not the ETA's; what the ETA adds (the time between launches,
    # how the parts sum) is still checked, and an ETA that left out a launch is a third off. 25 %, not
    # 15: beside a second suite on the two cores the load also changes *within* a sweep, which one pace
    # for the whole sweep cannot take out (-15.7 % and -20.7 % measured so, 2026-12-03); a launch left
    # out still fails it.
    pace = _measured_s(again) / _measured_s(rep)
    error = (predicted * pace - actual) / actual * 100
    assert abs(error) <= 25.0, (eta, f"{pace=:.2f} {error=:.1f}")


def _measured_s(report: dict) -> float:
    """Seconds a sweep's launches, benchmarks and the stops and waits between launches took by their own
    clocks (every part the ETA sums: under load the stops slow down too)."""
    return sum(v["launch_s"] + v["bench_s"] + (v.get("overhead_s") or 0.0) for v in report["variants"])


def test_the_drift_check_runs_last_and_on_the_baselines_host():
    base = (
        'name = "t"\n[server]\ncommand = ["python3", "-m", "eagletui.sim"]\n[server.args]\nmodel-path = "m"\n'
    )
    tog = '[[toggles]]\nenv = "A"\nchoices = ["1", "2", "3"]\n'
    p = parse_profile(base + tog + '[sweep]\ndrift_check = true\n[sweep.matrix]\nA = ["1", "2", "3"]\n', "p")
    q = SweepQueue.plan(p.sweep, target="a+b", profile_path="p")
    recheck = q.variants[3]
    assert recheck.recheck_of == 0 and "drift check" in recheck.name
    q.move(3, -3)  # even moved to the front, it waits for every other launch
    assert q.next("a").index == 0
    q.variants[0].state, q.variants[0].target = "done", "a"
    assert q.next("b").index == 1
    q.variants[1].state, q.variants[2].state = "launching", "launching"
    q.variants[1].target, q.variants[2].target = "b", "b"
    assert q.next("b").index == 1  # b's own launch in flight (a resume) comes first
    q.variants[1].state = q.variants[2].state = "done"
    assert q.next("b") is None  # another host would measure the hosts' difference, not drift
    assert q.next("a").index == 3
    # a baseline that did not run: nothing to re-check
    q2 = SweepQueue.plan(p.sweep, target="a", profile_path="p")
    q2.variants[0].state = "failed"
    for v in q2.variants[1:3]:
        v.state = "done"
    assert q2.next() is None and q2.variants[3].state == "skipped"


def test_plan_notes_a_concurrency_above_the_prompts(dirs, capsys):
    path = Path(_profile(dirs))
    path.write_text(path.read_text().replace("concurrency = [1, 2, 4, 8]", "concurrency = [1, 16]"))
    assert main(["local", "--profile", str(path), "--plan"]) == 0
    assert "note: at concurrency=16 only 8 prompts are sent" in capsys.readouterr().out


@pytest.mark.slow
def test_a_drift_check_is_reported(dirs, capsys):
    path = Path(_profile(dirs))
    text = path.read_text().replace(
        'NCCL_ALGO = ["Ring", "Tree", "NVLS"]\n', 'NCCL_ALGO = ["Ring", "Tree"]\n'
    )
    text = text.replace("concurrency = [1, 2, 4, 8]", "concurrency = [2]").replace(
        "repeats = 2\n", "repeats = 2\ndrift_check = true\n"
    )
    path.write_text(text)
    rc = main(["local", "--profile", str(path), "--json", "--no-preflight"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    rep = json.loads(out.out)
    rows = rep["variants"]
    assert [r["drift_check_of"] for r in rows] == [None, None, rows[0]["name"]]
    assert rep["launches"] == 3 and rows[2]["state"] == "done"
    # it ran last: its server is the newest run
    runs = sorted((dirs / "runs").glob("*/server.log"), key=lambda p: p.stat().st_mtime)
    assert rows[2]["run_id"] in str(runs[-1])
    drift = rep["drift"]
    assert drift["state"] == "done" and drift["detected"] in (True, False)
    assert drift["points"][0]["label"] == "concurrency=2" and drift["points"][0]["delta_pct"] is not None
    assert drift["text"].startswith(("no drift", "drift: the baseline moved"))
    # the finished sweep run again prints its report (issue 20), the drift line among it
    main(["local", "--profile", str(path), "--no-preflight"])
    assert drift["text"] in capsys.readouterr().out


def test_a_repeat_launch_never_goes_before_the_baseline() -> None:
    """The lent H200's sweep "steps 3, steps 2, steps 3 again, steps 2 again" launched "steps 2 again"
    first: the spreading of repeat launches had put it in front of the baseline."""
    from eagletui.core.sweep.plan import launch_order

    steps = "speculative-num-steps"
    order = launch_order([{}, {steps: 2}, {steps: 3}, {steps: 2}])
    assert order[0] == 0 and sorted(order) == [0, 1, 2, 3]
    assert order.index(3) - order.index(1) >= 2  # the repeat still as far as it can go from the first
    for n in range(2, 7):  # every repeat of one other config: the baseline still leads
        assert launch_order([{}] + [{steps: 2}] * n)[0] == 0
