"""Adaptive speculation made visible (issue 35 item 5): the simulator against the wheel's own tier rule,
the log lines SGLang 0.5.23 prints for it (tier swaps, extra-tier captures, the silent fall-back to
static steps), their fold into the session model, and the one fall-back check the profile check, the
preflight and the diagnosis share. Pure and in-process: no server is started."""

from __future__ import annotations

import io
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from eagletui.core import events as ev
from eagletui.core.diagnosis.fold import Diagnoser
from eagletui.core.logs.formats.sglang import SGLANG
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.core.profile.lint import lint_profile
from eagletui.core.profile.load import parse_profile
from eagletui.core.servers.spec import adaptive_fallback
from eagletui.core.state.screen import SessionState
from eagletui.remote.preflight import flag_checks
from eagletui.sim.adaptive import DEFAULT_CONFIG, AdaptiveSteps, Slot

WHEEL = Path(__file__).parent / "fixtures" / "sglang-0.5.23-wheel" / "adaptive_step_slot.py.txt"

# The wheel's f-strings, filled in (eagle_worker_v2.py L1852/L1866, speculative_hook.py L1374)
SWITCH = "Switch adaptive runtime state: steps {a} -> {b}, draft_tokens {c} -> {d}"
BUILT = "Built adaptive runtime state steps={s}: elapsed={e:.2f}s, mem={m:.2f}GB"
FALLBACK = (
    "speculative_adaptive disabled: speculative_eagle_topk=4 (only topk=1 is supported). "
    "Falling back to static speculative params."
)


def _wheel_slot_class() -> Any:
    """The 0.5.23 wheel's ``AdaptiveStepSlot``, verbatim, with the three names of its module it uses."""

    class _Quiet:
        def info(self, *_a: Any) -> None: ...

    ns: dict[str, Any] = {"math": math, "logger": _Quiet(), "log_info_on_rank0": lambda _lg, _msg: None}
    exec(compile(WHEEL.read_text(), str(WHEEL), "exec"), ns)
    return ns["AdaptiveStepSlot"]


@pytest.mark.parametrize("key", ["1", "8", "32"])
def test_the_simulators_tier_rule_is_the_wheels(key: str) -> None:
    """Same EMA, same warm-up and interval, same down/up rule and zero-step probe: fed the same accepted
    drafts, the simulator's slot and the wheel's pick the same tier after every verify."""
    wheel_cls = _wheel_slot_class()
    rng = random.Random(int(key))
    for cfg in (DEFAULT_CONFIG[key], {**DEFAULT_CONFIG[key], "ceiling_coeff": 1.5, "update_interval": 2}):
        ours, theirs = Slot(3, dict(cfg)), wheel_cls(3, dict(cfg))
        for i in range(600):
            phase = (i // 120) % 3  # acceptance that falls, recovers, and sits in between
            accepted = [rng.choice(([0, 0, 1], [3, 5, 7, 6], [1, 2, 2])[phase]) for _ in range(rng.randint(1, 8))]
            ours.update(accepted)
            theirs.update(accepted)
            assert ours.steps == theirs.current_steps, (cfg, i)
            assert ours.ema == pytest.approx(theirs.ema_accept_len)


def test_batch_size_routes_the_tier_and_each_tier_captures_the_wheels_sizes() -> None:
    """``cuda_graph_bs_for_step`` of the default 0.5.23 config over the sizes a launch captured, and the
    swap ``activate_step_by_batch`` makes when the running batch crosses a slot's key."""
    graph_bs = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48]
    a = AdaptiveSteps(3, None, graph_bs)
    assert a.candidates() == [0, 1, 3, 5, 7]
    assert a.graph_bs_for_step(7) == a.graph_bs_for_step(5) == [1, 2, 4]
    assert a.graph_bs_for_step(3) == [1, 2, 4, 8, 12, 16, 24]
    assert a.graph_bs_for_step(1) == graph_bs
    assert a.graph_bs_for_step(0) == [8, 12, 16, 24, 32, 40, 48]
    assert a.activate(4) is None  # slot "1" starts at the launch's 3: nothing to swap
    assert a.activate(40) == (3, 1)  # slot "32" ([0, 1]) starts at its middle candidate
    assert a.activate(40) is None and a.activate(2) == (1, 3)


def _sim(extra: list[str]) -> tuple[Any, Any, io.StringIO]:
    from eagletui.sim.cli import parse_args
    from eagletui.sim.plan import resolve
    from eagletui.sim.server import _engine
    from eagletui.sim.serverstate import ServerState

    args = parse_args(
        [
            "--model-path", "moonshotai/Kimi-K2.5", "--tp-size", "8", "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", "lmsys/Kimi-K2.5-EAGLE3", "--cuda-graph-max-bs-decode", "48",
            "--enable-metrics", *extra,
        ]
    )  # fmt: skip
    from eagletui.sim.logfmt import SimLog

    err = io.StringIO()
    plan = resolve(args, {})
    log = SimLog(plan.tp, err=err, env={})
    return plan, ServerState(plan, _engine(args, {}, plan, log), log), err


@pytest.mark.slow  # imports the simulator's server (~2 s cold)
def test_the_simulator_reports_the_active_tier_where_the_wheel_does() -> None:
    """A swap is logged as the worker logs it; ``internal_states`` (the scheduler's args with every
    override) and ``sglang:spec_num_steps`` show the tier now, the top level the launch's steps."""
    from eagletui.sim.metrics import metrics_text
    from eagletui.sim.serverinfo import server_info_dict

    plan, st, err = _sim(["--speculative-num-steps", "3", "--speculative-adaptive"])
    st.engine._iteration_cfg(40)
    assert "Switch adaptive runtime state: steps 3 -> 1, draft_tokens 4 -> 2" in err.getvalue()
    info = server_info_dict(st)
    assert info["speculative_num_steps"] == 3 and info["speculative_adaptive"] is True
    assert info["internal_states"][0]["speculative_num_steps"] == 1
    assert info["internal_states"][0]["speculative_num_draft_tokens"] == 2
    assert re.search(r"^sglang:spec_num_steps\{.*\} 1\.0$", metrics_text(st), re.M)


def test_the_simulator_falls_back_like_the_wheel_when_topk_is_not_1() -> None:
    plan, st, _ = _sim(["--speculative-num-steps", "3", "--speculative-eagle-topk", "4", "--speculative-adaptive"])
    assert FALLBACK in plan.resolution_msgs
    assert plan.server_args["speculative_adaptive"] is False and st.engine.adaptive is None


def _launch_log() -> str:
    t = "[2026-12-02 08:{m:02d}:{s:02d} TP0] "
    lines = [
        "[2026-12-02 08:00:00] server_args=ServerArgs(model_path='m', tp_size=8, speculative_algorithm='EAGLE3', "
        "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, speculative_adaptive=True)",
        t.format(m=0, s=40) + BUILT.format(s=0, e=0.30, m=0.53),
        t.format(m=0, s=41) + BUILT.format(s=1, e=0.44, m=1.28),
        t.format(m=0, s=42) + BUILT.format(s=7, e=0.16, m=1.45),
        t.format(m=0, s=43) + "AdaptiveSpeculativeParams initialized: steps=3, candidate_steps=[1, 3, 5, 7]",
        t.format(m=1, s=0) + SWITCH.format(a=3, b=1, c=4, d=2),
        t.format(m=1, s=0) + SWITCH.format(a=1, b=3, c=2, d=4),  # the same second: kept (another change)
        t.format(m=1, s=0) + SWITCH.format(a=3, b=1, c=4, d=2),  # a repeat within the second: dropped
        t.format(m=1, s=5) + SWITCH.format(a=3, b=1, c=4, d=2),  # the same swap later: news
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("bulk", [False, True])
def test_swaps_captures_and_the_fallback_become_typed_notes(bulk: bool) -> None:
    it = LogInterpreter(launch=1, emit_lines=not bulk)
    text = _launch_log() + "[2026-12-02 08:02:00] " + FALLBACK + "\n"
    out = [*(it.feed_bulk(text) if bulk else it.feed(text)), *it.flush()]
    notes = [(e.key, e.value) for e in out if isinstance(e, ev.LaunchNote) and e.topic == "adaptive"]
    switches = [v for k, v in notes if k == "switch"]
    assert [(v["from"], v["to"]) for v in switches] == [(3, 1), (1, 3), (3, 1)]
    assert switches[0]["draft_to"] == 2
    assert [v for k, v in notes if k == "built"][2] == {"steps": 7, "elapsed": 0.16, "mem_gb": 1.45}
    assert ("fallback", {"reason": "speculative_eagle_topk=4 (only topk=1 is supported)"}) in notes


def test_the_session_model_folds_the_tier_over_time() -> None:
    s = SessionState()
    n = 0

    def note(key: str, value: dict[str, Any], wall: float) -> None:
        s.apply(ev.LaunchNote(topic="adaptive", key=key, value=value, launch=1, wall=wall))

    def decode(running: int, wall: float) -> None:
        nonlocal n
        n += 1
        s.apply(ev.DecodeStats(gen_throughput=100.0, running_req=running, accept_len=2.5, launch=1, wall=wall))

    s.apply(ev.LaunchStarted(launch=1, target="t", config={}, wall=0.0))
    note("init", {"steps": 3, "candidates": [1, 3, 5, 7]}, 1.0)
    for k, (steps, mem) in enumerate(((0, 0.53), (1, 1.28), (7, 1.45))):
        note("built", {"steps": steps, "elapsed": 0.3 + k, "mem_gb": mem}, 1.0)
    decode(4, 10.0)
    note("switch", {"from": 3, "to": 1, "draft_from": 4, "draft_to": 2}, 20.0)
    decode(40, 30.0)
    note("switch", {"from": 1, "to": 3, "draft_from": 2, "draft_to": 4}, 40.0)
    decode(4, 50.0)
    view = s.launch.adaptive if s.launch else None
    assert view is not None and view.active == 3 and view.swaps == 2
    # the chart: a vertical step at each swap, the tier carried to each Decode line; the batch beside it
    assert list(s.tier.points) == [(10.0, 3), (20.0, 3), (20.0, 1), (30.0, 1), (40.0, 1), (40.0, 3), (50.0, 3)]
    assert [v for _, v in s.running.points] == [4, 40, 4]
    assert view.shares(10.0, 50.0) == {1: 0.5, 3: 0.5}
    assert view.share_text(15.0, 35.0) == "steps 1 75% · 3 25%, 1 swap"
    assert view.capture_text() == "adaptive: +3 tiers (steps 0, 1, 7) 3.9 s, 3.26 GB"
    # a new launch starts a new chart
    s.apply(ev.LaunchStarted(launch=2, target="t", config={}, wall=60.0))
    assert not s.tier.points and not s.running.points and s.launch is not None and not s.launch.adaptive.on


# ------------------------------------------------------------------------- the fall-back, one check


def test_one_fallback_rule_for_the_profile_check_the_preflight_and_the_diagnosis(tmp_path: Path) -> None:
    base = {"--speculative-algorithm": "EAGLE3", "--speculative-adaptive": True}
    assert adaptive_fallback(base) is None
    assert adaptive_fallback({**base, "--speculative-eagle-topk": 1}) is None
    assert adaptive_fallback({**base, "--speculative-eagle-topk": 4}) == "speculative_eagle_topk=4 (only topk=1 is supported)"
    assert adaptive_fallback({"speculative_algorithm": "NGRAM", "speculative_adaptive": "true"}) == (
        "speculative_algorithm=NGRAM (only EAGLE/EAGLE3 are supported)"
    )
    assert adaptive_fallback({**base, "--enable-dp-attention": True, "--dp-size": 8}).startswith("attention DP")
    assert adaptive_fallback({**base, "--enable-dp-attention": True}) is None  # one DP rank: adaptive runs
    assert adaptive_fallback({"--speculative-eagle-topk": 4, "--speculative-algorithm": "EAGLE3"}) is None

    text = (
        '[target]\nhost = "local"\n\n[server.args]\nmodel-path = "m"\nspeculative-algorithm = "EAGLE3"\n'
        "speculative-eagle-topk = 4\nspeculative-adaptive = true\n"
    )
    path = tmp_path / "p.toml"
    path.write_text(text)
    prof = parse_profile(text, path)
    lint = lint_profile(prof, text, None)
    warn = [w for w in lint.warnings if "will not adapt" in str(w)]
    assert len(warn) == 1 and (warn[0].line, warn[0].col) == (8, 1)
    assert "speculative_eagle_topk=4" in str(warn[0]) and not lint.errors

    checks = flag_checks(list(prof.args), None, None, dict(prof.args))
    assert [c.status for c in checks if "will not adapt" in c.message] == ["warn"]

    d = Diagnoser()
    d.add_one(ev.LaunchStarted(launch=1, target="t", config={"args": dict(prof.args)}))
    found = {x.kind: x for x in d.diagnoses(1)}["adaptive_fallback"]
    assert found.level == "warn" and found.source == "profile" and "--speculative-eagle-topk 1" in found.hint
    # the server's own line, when the log shows it, is the evidence
    it = LogInterpreter(launch=1)
    d.add([*it.feed("[2026-12-02 08:00:00] " + FALLBACK + "\n"), *it.flush()])
    found = {x.kind: x for x in d.diagnoses(1)}["adaptive_fallback"]
    assert found.source == "log" and "speculative_adaptive disabled" in found.evidence


def test_the_notes_parse_only_the_wheels_wording() -> None:
    def notes(msg: str) -> list[Any]:
        return SGLANG.notes(SGLANG.classify("[2026-12-02 08:00:00 TP0] " + msg))

    assert notes(SWITCH.format(a=0, b=3, c=1, d=4))[0][2] == {"from": 0, "to": 3, "draft_from": 1, "draft_to": 4}
    assert notes("Switch adaptive runtime state: steps x -> 3") == []
    assert notes("Built adaptive runtime state steps=5: elapsed=nan s, mem=1GB") == []
    assert notes("speculative_adaptive disabled: " + "x" * 5000) == []  # no reason sentence: no note


def test_the_demo_runs_adaptive_on_request(tmp_path: Path) -> None:
    from eagletui.commands.demo import write_demo_profile
    from eagletui.core.profile.load import load_profile

    prof = load_profile(write_demo_profile(tmp_path, adaptive=True))
    assert prof.args.get("--speculative-adaptive") is True and adaptive_fallback(prof.args) is None
    assert "--speculative-adaptive" not in load_profile(write_demo_profile(tmp_path)).args


@pytest.mark.parametrize(
    ("extra", "invalid"),
    [({}, True), ({"--speculative-adaptive": True}, False), ({"--speculative-adaptive": True, "--speculative-eagle-topk": 4}, True)],
)
def test_an_adaptive_run_may_accept_more_than_its_first_tier(extra: dict[str, Any], invalid: bool) -> None:
    """The demo with --adaptive measured accept 4.11 at --speculative-num-steps 3 and the run book threw
    the run away as impossible (at most 4 per verify): adaptive runs tiers up to 7 (at most 8)."""
    from eagletui.core.runs.book import RunBook

    book = RunBook()
    args = {"--model-path": "m", "--speculative-algorithm": "EAGLE3", "--speculative-num-steps": 3, **extra}
    book.apply(ev.LaunchStarted(launch=1, target="local", config={"model": "m", "args": args}))
    book.apply(ev.BenchmarkStarted(bench=1, launch=1, workload={"concurrency": 4, "num_prompts": 12, "max_new_tokens": 128}))
    book.apply(ev.BenchmarkResult(bench=1, launch=1, output_throughput=500.0, accept_length=4.11, requests=12, duration_s=3.0))
    problems = " ".join(p for ps in book.runs[1].problems for p in ps)
    assert ("impossible accept length" in problems) is invalid, problems


def test_the_run_details_give_each_benchmarks_tiers_and_the_startup_cost() -> None:
    from eagletui.core.runs.book import RunBook
    from eagletui.core.state.adaptive import TierView
    from eagletui.ui.widgets.runs import adaptive_lines

    view = TierView()
    view.fold("init", {"steps": 3, "candidates": [1, 3, 5, 7]}, 0.0)
    view.fold("switch", {"from": 3, "to": 5}, 106.0)
    view.fold("built", {"steps": 7, "elapsed": 0.5, "mem_gb": 0.4}, 0.0)
    book = RunBook()
    book.apply(ev.LaunchStarted(launch=1, target="local", config={"args": {"--speculative-algorithm": "EAGLE3"}}))
    book.apply(ev.BenchmarkStarted(bench=1, launch=1, workload={"concurrency": 4}))
    book.apply(ev.BenchmarkResult(bench=1, launch=1, output_throughput=1.0, duration_s=10.0, wall=110.0))
    text = adaptive_lines(view, book.runs[1]).plain
    assert "started at steps 3, candidates [1, 3, 5, 7]; 1 swap\n" in text
    assert "bench 1 at concurrency 4: steps 3 60% · 5 40%, 1 swap" in text
    assert "startup: adaptive: +1 tier (steps 7) 0.5 s, 0.40 GB" in text
    view.fold("fallback", {"reason": "speculative_eagle_topk=4 (only topk=1 is supported)"}, 0.0)
    assert "will not adapt: speculative_eagle_topk=4" in adaptive_lines(view, None).plain
    assert adaptive_lines(TierView(), None).plain == ""


def test_the_launch_diagnosis_counts_swaps_and_the_extra_tiers_capture() -> None:
    it = LogInterpreter(launch=1)
    d = Diagnoser()
    d.add_one(ev.LaunchStarted(launch=1, target="t", config={}))
    d.add([*it.feed(_launch_log()), *it.flush()])
    steps = {x.kind: x for x in d.diagnoses(1)}["adaptive_steps"]
    assert "the batch size swapped the tier" in steps.text and "3 tier swaps logged" in steps.text
    assert "3 extra tiers captured at startup: 0.9 s, 3.26 GB" in steps.text
    assert steps.data["swaps"] == 3 and len(steps.data["built"]) == 3


def test_hostile_adaptive_notes_from_a_recording_are_ignored_not_fatal() -> None:
    import json

    s = SessionState()
    d = Diagnoser()
    for key, value in (
        ("built", {"steps": 3, "elapsed": "1e999", "mem_gb": [1]}),
        ("built", {"steps": -1, "elapsed": float("nan")}),
        ("switch", {"from": [], "to": "z"}),
        ("switch", {"from": 1, "to": 10**9}),
        ("init", {"steps": True, "candidates": ["a", 10**12, 3]}),
        ("fallback", {"reason": {"a": "\x1b]0;pwned\x07"}}),
        ("update", "not a dict"),
    ):
        note = ev.LaunchNote(launch=1, topic="adaptive", key=key, value=value, wall=1.0)
        s.apply(note)
        d.add_one(note)
    view = s.launch.adaptive if s.launch else None
    assert view is not None and view.swaps == 0 and view.capture_cost() is None and view.candidates == (3,)
    out = d.diagnoses(1)
    json.dumps([x.to_json() for x in out])
    assert {x.kind for x in out} == {"adaptive_fallback"}


def test_adaptive_tiers_larger_than_the_launch_are_refused_before_0_5_23() -> None:
    """Real (device.sh adaptive, 2026-12-02): 0.5.17 at steps 3 / 4 draft tokens with the default tiers died
    building steps 7 (sglang#30549). 0.5.23 sizes the buffer for the tiers; a launch at the largest tier
    fits; a launch that falls back to static steps builds no tier."""
    from eagletui.core.servers.spec_preflight import spec_config_findings

    args = {
        "--speculative-algorithm": "EAGLE3", "--speculative-draft-model-path": "/d", "--speculative-num-steps": 3,
        "--speculative-eagle-topk": 1, "--speculative-num-draft-tokens": 4, "--speculative-adaptive": True,
    }  # fmt: skip
    found = [f for f in spec_config_findings(args, "0.5.17") if f.check == "adaptive tiers"]
    assert [f.status for f in found] == ["fail"] and "sgl-project/sglang#30549" in found[0].text()
    assert "--speculative-num-steps 7 --speculative-num-draft-tokens 8" in found[0].message
    assert not [f for f in spec_config_findings(args, "0.5.23") if f.check == "adaptive tiers"]
    top = {**args, "--speculative-num-steps": 7, "--speculative-num-draft-tokens": 8}
    assert not [f for f in spec_config_findings(top, "0.5.17") if f.check == "adaptive tiers"]
    static = {**args, "--speculative-eagle-topk": 4}
    assert not [f for f in spec_config_findings(static, "0.5.17") if f.check == "adaptive tiers"]
    unknown = [f for f in spec_config_findings(args, None) if f.check == "adaptive tiers"]
    assert [f.status for f in unknown] == ["warn"]


def test_the_real_adaptive_crash_is_not_read_as_a_server_that_served() -> None:
    """The same real log: the launch diagnosis said "steps 3 all along (no change logged); 2 extra tiers
    captured" of a server that died before it was ready."""
    log = (Path(__file__).parent / "fixtures/real-0.5.17/eagletui-adaptive-tier-crash-084201.log").read_text()
    it = LogInterpreter(launch=1)
    d = Diagnoser()
    d.add_one(ev.LaunchStarted(launch=1, target="t", config={}))
    d.add([*it.feed(log), *it.flush()])
    steps = {x.kind: x for x in d.diagnoses(1)}["adaptive_steps"]
    assert "all along" not in steps.text and "did not serve" in steps.text
    assert "2 extra tiers captured at startup" in steps.text


@pytest.mark.slow
def test_the_simulator_dies_like_0_5_17_on_a_tier_larger_than_the_launch() -> None:
    from tests.conftest_sim import SimProc

    with SimProc(
        [
            "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", "lmsys/Kimi-K2.5-EAGLE3", "--speculative-num-steps", "3",
            "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4", "--speculative-adaptive",
            "--cuda-graph-max-bs-decode", "8", "--sim-version", "0.5.17", "--sim-speed", "50",
        ]
    ) as sim:  # fmt: skip
        sim.wait_exit(60)
        text = sim.text()
    assert "Built adaptive runtime state steps=1" in text
    assert "AssertionError: shared logits buffer holds 32 rows but caller needs 64" in text
    assert "ready to roll" not in text
