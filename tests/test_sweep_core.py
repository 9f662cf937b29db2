"""[sweep] schema (errors with file:line:col), the plan, the queue's operations and the effects math."""

from __future__ import annotations

import math
import os
import stat

import pytest

from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.model import ProfileError, Verdict
from eagletui.core.profile.sweep import variant_profile
from eagletui.core.sweep.effects import Measured, best, delta_pct, judge, main_effects, ranked
from eagletui.session.sweep.cells import DONE, FAILED, PENDING, SKIPPED, SweepError
from eagletui.session.sweep.files import queue_path
from eagletui.session.sweep.queue import SweepQueue

BASE = """name = "t"
[server]
command = ["python3", "-m", "eagletui.sim"]
[server.args]
model-path = "m"
speculative-algorithm = "EAGLE3"
[server.env]
NCCL_ALGO = "Ring"

[[toggles]]
env = "NCCL_ALGO"
choices = ["Ring", "Tree", "NVLS"]

[[toggles]]
arg = "enable-flashinfer-allreduce-fusion"
type = "bool"

[[toggles]]
arg = "speculative-algorithm"
choices = ["EAGLE3"]

[[toggles]]
arg = "speculative-num-steps"
type = "int"
min = 1
max = 8
"""


def _load(sweep: str):
    return parse_profile(BASE + sweep, "p.toml")


def _err(sweep: str) -> ProfileError:
    with pytest.raises(ProfileError) as ei:
        _load(sweep)
    return ei.value


def _line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate((BASE + text).splitlines()) if needle in line)


# ------------------------------------------------------------------ schema


def test_matrix_is_crossed_in_order_with_canonical_values():
    p = _load(
        '[sweep]\nrepeats = 3\n[sweep.matrix]\n"enable-flashinfer-allreduce-fusion" = [false, true]\n'
        'NCCL_ALGO = ["Ring", "Tree"]\n'
    )
    spec = p.sweep
    assert spec.repeats == 3 and spec.factorial
    assert spec.factors == ("arg:--enable-flashinfer-allreduce-fusion", "env:NCCL_ALGO")
    assert [v.settings for v in spec.variants] == [
        {"arg:--enable-flashinfer-allreduce-fusion": False, "env:NCCL_ALGO": "Ring"},
        {"arg:--enable-flashinfer-allreduce-fusion": False, "env:NCCL_ALGO": "Tree"},
        {"arg:--enable-flashinfer-allreduce-fusion": True, "env:NCCL_ALGO": "Ring"},
        {"arg:--enable-flashinfer-allreduce-fusion": True, "env:NCCL_ALGO": "Tree"},
    ]
    last = variant_profile(p, spec.variants[3])
    assert last.args["--enable-flashinfer-allreduce-fusion"] is True and last.env["NCCL_ALGO"] == "Tree"
    first = variant_profile(p, spec.variants[0])
    assert "--enable-flashinfer-allreduce-fusion" not in first.args and first.env["NCCL_ALGO"] == "Ring"


def test_variant_list_with_unset_and_names():
    p = _load(
        '[sweep]\n[[sweep.variants]]\nname = "no spec"\nset = { "speculative-algorithm" = "" }\n'
        '[[sweep.variants]]\nset = { "--speculative-num-steps" = 5, "env:NCCL_ALGO" = "Tree" }\n'
    )
    a, b = p.sweep.variants
    assert a.name == "no spec" and a.settings == {"arg:--speculative-algorithm": None}
    assert "--speculative-algorithm" not in variant_profile(p, a).args
    assert b.settings == {"arg:--speculative-num-steps": 5, "env:NCCL_ALGO": "Tree"}
    assert b.name == "speculative-num-steps=5 NCCL_ALGO=Tree"
    assert not p.sweep.factorial


def test_unknown_toggle_points_at_its_line_with_a_suggestion():
    sweep = '[sweep]\n[sweep.matrix]\nNCCL_ALGOO = ["Ring"]\n'
    e = _err(sweep)
    assert e.path == "p.toml" and e.line == _line_of(sweep, "NCCL_ALGOO") and e.col == 1
    assert "did you mean 'NCCL_ALGO'" in e.message
    assert str(e).startswith(f"p.toml:{e.line}:1: ")


def test_value_refused_by_toggle_rules_is_located():
    sweep = '[sweep]\n[sweep.matrix]\nNCCL_ALGO = ["Ring", "Bogus"]\n'
    e = _err(sweep)
    assert e.line == _line_of(sweep, "Bogus") and "'Bogus' is not one of" in e.message
    sweep = '[sweep]\n[[sweep.variants]]\nname = "a"\n[[sweep.variants]]\nname = "b"\nset = { "speculative-num-steps" = 99 }\n'
    e = _err(sweep)
    assert (
        e.line == _line_of(sweep, "= 99") and "above the maximum 8" in e.message and "variant 2" in e.message
    )


@pytest.mark.parametrize(
    ("sweep", "needle", "words"),
    [
        ('[sweep]\nrepeats = 0\n[sweep.matrix]\nNCCL_ALGO = ["Ring"]\n', "repeats", "sweep.repeats must be"),
        ('[sweep]\nrepeat = 2\n[sweep.matrix]\nNCCL_ALGO = ["Ring"]\n', "repeat =", "did you mean 'repeats'"),
        ("[sweep]\nrepeats = 2\n", "[sweep]", "exactly one of"),
        ("[sweep]\n[sweep.matrix]\nNCCL_ALGO = []\n", "NCCL_ALGO = []", "non-empty list"),
        ('[sweep]\n[sweep.matrix]\nNCCL_ALGO = ["Ring", "Ring"]\n', 'Ring", "Ring', "listed twice"),
        ('[sweep]\n[[sweep.variants]]\nnam = "x"\n', "nam =", "unknown key 'nam'"),
        (
            '[sweep]\n[[sweep.variants]]\nname = "x"\n[[sweep.variants]]\nname = "x"\n',
            "[sweep]",
            "two sweep variants",
        ),
    ],
)
def test_schema_errors_name_file_line_col(sweep, needle, words):
    e = _err(sweep)
    assert words in e.message
    assert e.line == _line_of(sweep, needle) and e.col is not None


def test_malformed_toml_in_sweep_is_located():
    sweep = "[sweep]\nrepeats = = 2\n"
    e = _err(sweep)
    assert e.line == _line_of(sweep, "repeats") and "invalid TOML" in e.message


def test_demo_sweep_example_parses():
    from eagletui.commands.profile import example_text

    p = parse_profile(example_text("demo-sweep"), "demo-sweep.toml")
    assert len(p.sweep.variants) == 4 and p.sweep.repeats >= 2 and len(p.sweep.factors) == 2


# ------------------------------------------------------------------ effects (hand-made numbers)

F, N = "arg:--fusion", "env:NCCL_ALGO"


def _m(fusion, algo, tok, sd=None, n=1):
    return Measured(f"{fusion}-{algo}", {F: fusion, N: algo}, tok, sd, n)


def test_delta_and_ranking():
    assert delta_pct(110, 100) == pytest.approx(10.0)
    assert delta_pct(None, 100) is None and delta_pct(1, 0) is None
    res = [_m(False, "Ring", 100), _m(True, "Ring", 120), _m(False, "Tree", None)]
    assert [m.name for m in ranked(res)] == ["True-Ring", "False-Ring"]
    assert best(res).tok_s == 120 and best([_m(False, "Ring", None)]) is None


def test_main_effects_2x2_with_noise_band():
    res = [
        _m(False, "Ring", 100.0, sd=2.0, n=4),
        _m(False, "Tree", 90.0, sd=2.0, n=4),
        _m(True, "Ring", 110.0, sd=2.0, n=4),
        _m(True, "Tree", 99.0, sd=2.0, n=4),
    ]
    eff = {e.factor: e for e in main_effects(res, [F, N])}
    # fusion: Ring 100→110 (+10 %), Tree 90→99 (+10 %)
    assert eff[F].ref is False and eff[F].level is True and eff[F].pairs == 2
    assert eff[F].delta_pct == pytest.approx(10.0)
    # NCCL Tree: 100→90 (-10 %), 110→99 (-10 %)
    assert eff[N].delta_pct == pytest.approx(-10.0)
    # se% of each: 2/sqrt(4)/mean*100 ; band = sqrt(Σ se_a²+se_b²)/pairs
    se = lambda mean: 1.0 / mean * 100  # noqa: E731
    band_f = math.sqrt(se(100) ** 2 + se(110) ** 2 + se(90) ** 2 + se(99) ** 2) / 2
    assert eff[F].noise_pct == pytest.approx(band_f)
    assert eff[F].clear is True
    d = eff[N].to_dict()
    assert d["from"] == "Ring" and d["to"] == "Tree" and d["delta_pct"] == -10.0


def test_effect_within_noise_and_unknown_noise():
    res = [_m(False, "Ring", 100.0, 10.0, 2), _m(True, "Ring", 101.0, 10.0, 2)]
    (e,) = main_effects(res, [F])
    assert e.delta_pct == pytest.approx(1.0) and e.clear is False
    (e,) = main_effects([_m(False, "Ring", 100.0), _m(True, "Ring", 105.0)], [F])
    assert e.noise_pct is None and e.clear is None


def test_effects_skip_missing_pairs_and_three_levels():
    res = [
        _m(False, "Ring", 100.0),
        _m(False, "Tree", 80.0),
        _m(False, "NVLS", 105.0),
        _m(True, "Ring", None),  # failed: its pairs are left out
        _m(True, "Tree", 88.0),
        _m(True, "NVLS", None),
    ]
    effs = main_effects(res, [F, N])
    fusion = [e for e in effs if e.factor == F]
    assert len(fusion) == 1 and fusion[0].pairs == 1 and fusion[0].delta_pct == pytest.approx(10.0)
    algo = {e.level: e for e in effs if e.factor == N}
    assert algo["Tree"].delta_pct == pytest.approx(-20.0) and algo["Tree"].pairs == 1
    assert algo["NVLS"].delta_pct == pytest.approx(5.0)


def test_judge():
    v = Verdict(min_accept_len=2.0, min_speedup=1.0, min_tok_s=50)
    assert judge(100, 3.0, 20, 100, v, is_spec=True) == ("pass", [])
    verdict, why = judge(100, 1.5, 20, 100, v, is_spec=True)
    assert verdict == "fail" and "accept 1.50 < 2" in why[0]
    assert judge(100, None, 20, 100, v, is_spec=False)[0] == "pass"  # no-spec: accept not judged
    assert judge(90, 3.0, 20, 100, v, is_spec=True)[0] == "fail"  # slower than the baseline
    assert judge(None, None, None, 100, v, is_spec=True) == ("fail", ["no tokens measured"])


# ------------------------------------------------------------------ the queue


def _queue(tmp_path):
    p = _load('[sweep]\n[sweep.matrix]\nNCCL_ALGO = ["Ring", "Tree", "NVLS"]\n')
    q = SweepQueue.plan(p.sweep, target="local", profile_path=str(tmp_path / "p.toml"))
    q.save(tmp_path / "q.json")
    return q


def test_queue_operations_and_persistence(tmp_path):
    q = _queue(tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path / "q.json").st_mode) == 0o600
    assert q.next().index == 0
    assert q.move(2, -5) is None and q.order == [2, 0, 1] and q.next().index == 2
    assert q.skip(2) is None and q.variants[2].state == SKIPPED and q.next().index == 0
    assert q.skip(2) is not None  # not pending any more
    q.variants[0].state = FAILED
    assert q.retry(0) is None and q.variants[0].state == PENDING
    assert q.retry(1) is not None
    q.variants[1].state = "launching"
    assert q.next().index == 1  # in flight first (a resume)
    q.abort()
    assert q.next() is None and q.finished
    q.save()
    back = SweepQueue.load(tmp_path / "q.json")
    assert back.order == [2, 0, 1] and back.aborted and back.variants[2].state == SKIPPED
    assert back.variants[1].state == "launching"


def test_queue_eta_from_learned_cycles(tmp_path):
    q = _queue(tmp_path)
    assert q.eta_s() is None
    v = q.variants[0]
    v.state, v.launch_s, v.bench_s = DONE, 30.0, 10.0
    assert q.eta_s() == pytest.approx(80.0)  # two pending × 40 s
    q.variants[1].state, q.variants[1].started_wall = "launching", 1000.0
    assert q.eta_s(now=1010.0) == pytest.approx(40.0 + 30.0)


@pytest.mark.parametrize(
    "payload",
    [
        b"{",
        b"[]",
        b'{"version": 1}',
        b"\xff\xfe",
        b'{"version": 1, "target": "x", "profile": "p", "fingerprint": "f", "repeats": 1, "factors": [], "variants": [{"index": 0, "name": "a", "settings": {}}], "order": [0, 0]}',
    ],
)
def test_damaged_queue_is_refused_clearly(tmp_path, payload):
    path = tmp_path / "q.json"
    path.write_bytes(payload)
    with pytest.raises(SweepError):
        SweepQueue.load(path)


def test_queue_path_is_keyed_by_target_and_profile(tmp_path):
    a = queue_path("local", str(tmp_path / "p.toml"), tmp_path)
    b = queue_path("gpu-box", str(tmp_path / "p.toml"), tmp_path)
    c = queue_path("local", str(tmp_path / "q.toml"), tmp_path)
    assert len({a, b, c}) == 3 and a.parent == tmp_path and a.suffix == ".json"
    assert "/" not in queue_path("u@h:22/../x", "p.toml", tmp_path).name


def test_pending_sweep_is_found_for_the_connect_hint(tmp_path):
    from eagletui.session.sweep.queue import pending_sweep

    prof = str(tmp_path / "p.toml")
    assert pending_sweep("local", prof, tmp_path) is None
    p = _load('[sweep]\n[sweep.matrix]\nNCCL_ALGO = ["Ring", "Tree"]\n')
    q = SweepQueue.plan(p.sweep, target="local", profile_path=prof)
    q.save(queue_path("local", prof, tmp_path))
    assert pending_sweep("local", prof, tmp_path) is not None
    assert pending_sweep("other-host", prof, tmp_path) is None
    for v in q.variants:
        v.state = DONE
    q.save()
    assert pending_sweep("local", prof, tmp_path) is None


def test_shipped_demo_eagle3_recording_tells_the_story(tmp_path):
    """sessions/demo-eagle3.jsonl: found by its bare name; four launches, each benchmarked: a no-spec
    baseline, a good drafter, a poor-drafter probe (accept ≈ 1.5) and fusion + NCCL."""
    from pathlib import Path

    from eagletui.commands.replay import session_dirs
    from eagletui.config import UserConfig
    from eagletui.core.events import BenchmarkResult, LaunchStarted, Notice
    from eagletui.session.catalog import resolve
    from eagletui.session.format import read_session

    path = resolve("demo-eagle3", session_dirs(UserConfig(sessions_dir=str(tmp_path))))
    assert Path(path).name == "demo-eagle3.jsonl"
    _h, events, warnings = read_session(path)
    assert not warnings
    launches = [e for e in events if isinstance(e, LaunchStarted)]
    results = [e for e in events if isinstance(e, BenchmarkResult)]
    assert len(launches) == 4 and len(results) == 4
    assert "--speculative-algorithm" not in launches[0].config["args"]
    assert results[0].accept_length is None and 3.0 < results[1].accept_length < 3.5
    assert 1.3 < results[2].accept_length < 1.7
    assert "weak" in launches[2].config["args"]["--speculative-draft-model-path"]
    assert launches[3].config["args"].get("--enable-flashinfer-allreduce-fusion") is True
    assert launches[3].config["env"].get("NCCL_PROTO") == "LL"
    assert sum(1 for e in events if isinstance(e, Notice) and e.source == "sweep") >= 8
