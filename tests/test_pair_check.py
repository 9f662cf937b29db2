"""tools/real-sglang/pair_check.py, the real-server script's checker for the known-acceptance pairs (issue 31),
on what the lent H200 measured: the "work" pair at steps 2 (fixtures/real-sglang-0.5.17-pair-work: eagletui's
``bench --json``, the server's own log, the profile) and make_known_drafters' report and prompt file of the
"half" pair. Pure: reads files, starts nothing (milliseconds)."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-pair-work"
TURN4 = Path(__file__).parent / "fixtures" / "real-sglang-0.5.17-turn4-shared" / "outputs"
_spec = importlib.util.spec_from_file_location("pair_check", ROOT / "tools/real-sglang/pair_check.py")
assert _spec is not None and _spec.loader is not None
pc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pc)


def _work(bench: dict | None = None, log: bool = True) -> list[dict]:
    n, eos = pc.profile_tokens(str(HERE / "grid-r1-s2.toml"))
    logs = [(HERE / "grid-r1-s2.log").read_text()] if log else []
    return pc.check_pair("work", bench or json.loads((HERE / "grid-r1-s2.json").read_text()),
                         n_tokens=n, ignore_eos=eos, logs=logs, log_given=log)


def _half_inputs() -> tuple[dict, list[dict]]:
    """make_known_drafters' report of the half pair and its prompt file (fixtures)."""
    pairs = json.loads((HERE / "half-pairs-check.json").read_text())
    qa = [json.loads(x) for x in (HERE / "half-qa.jsonl").read_text().splitlines() if x.strip()]
    return pairs, qa


def _half_run(bench_file: str, log_file: str) -> tuple[dict, list[dict]]:
    """A half-pair bench JSON and its server log (fixtures) through the checker, with the category
    flags of make_known_drafters' report and the prompt file: the bench and the rows."""
    flags, problems = pc.category_flags(*_half_inputs())
    bench = json.loads((HERE / bench_file).read_text())
    rows = pc.check_pair("half", bench, n_tokens=128, ignore_eos=True, flags=flags, flag_problems=problems,
                         logs=[(HERE / log_file).read_text()], log_given=True)
    return bench, rows


def _failed(rows: list[dict]) -> list[str]:
    return [r["check"] for r in rows if "check" in r and not r["ok"]]


def test_the_real_work_pair_passes_every_check() -> None:
    """Steps 2, 12 requests of 128 tokens: eagletui showed 2.9767 (128 ÷ 43 verifies, the prefill's token
    counted), 3.0 from the drafts, every position 1.0, [0, 0, 516]; the server's 18 decode lines 3.00."""
    rows = _work()
    assert _failed(rows) == []
    assert len([r for r in rows if "check" in r]) == 10
    fig = rows[-1]["figures"]
    assert fig["expected"]["shown"] == pytest.approx(128 / 43)
    assert fig["expected"]["histogram"] == [0, 0, 516]
    assert fig["server_log"] == {"weighted_mean": 3.0, "lines": 18}


def test_the_checker_fails_what_is_wrong() -> None:
    """Every check can fail: a shown accept 2 % high, a position that lost acceptance, a request outside the
    last bin, the server's log lines missing, an unknown token count."""
    bench = json.loads((HERE / "grid-r1-s2.json").read_text())
    bad = copy.deepcopy(bench)
    acc = bad["accept"]
    acc["definitions"]["shown"]["value"] *= 1.02
    acc["per_position"] = [1.0, 0.97]
    acc["per_request"]["bins"][-2:] = [1, 11]
    failed = _failed(_work(bad, log=False))
    assert any("shown accept (pooled" in c for c in failed)
    assert any("per draft position" in c for c in failed)
    assert any("per-request accept histogram" in c for c in failed)
    assert len(failed) == 3
    assert _failed(pc.check_pair("work", bench, n_tokens=128, ignore_eos=True, logs=[], log_given=True)) == [
        "work pair: the server log has decode lines with accept len"
    ]
    assert _failed(pc.check_pair("work", bench, n_tokens=128, ignore_eos=False)) == [
        "work pair: the run's steps and tokens per request are known (bench config, profile's [bench])"
    ]


def test_half_pooled_expectation_is_the_real_run_3s_accept() -> None:
    """Pooled vs per request: the real half pair's run 3 (20 prompts ending in "." at 4.0, 12 ending in "?"
    at 128/127) measured 1.8928 = 4096 ÷ 2164 verifies, far below the per-request mean 2.88; the
    category flags come from make_known_drafters' report of that same device run."""
    pairs, qa = _half_inputs()
    flags, problems = pc.category_flags(pairs, qa)
    assert problems == [] and {c: (len(f), sum(f)) for c, f in flags.items()} == {"request": (20, 20), "question": (12, 0)}
    exp = pc.expected(3, 128, {c: (len(f), sum(f) / len(f)) for c, f in flags.items()})
    real = json.loads((TURN4 / "call3-hb-category.json").read_text())["repeats"]["runs"][0]["accept_length"]
    assert exp["shown"] == pytest.approx(real, rel=1e-9)
    assert exp["per_request_mean"] == pytest.approx((20 * 4 + 12 * 128 / 127) / 32)
    assert exp["per_position"] == [pytest.approx(640 / 2164)] * 3
    assert exp["histogram"] == [12 * 127, 0, 0, 20 * 32]
    assert exp["by_category"] == {"request": 4.0, "question": pytest.approx(128 / 127)}


def test_half_categories_must_be_the_prompt_files() -> None:
    """A bench JSON whose categories are not the prompt file's (or a report that disagrees with the file)
    fails, with both lists said."""
    pairs, qa = _half_inputs()
    flags, problems = pc.category_flags(pairs, qa[:-1])
    assert problems and "in the prompt file" in problems[0]
    bench = json.loads((HERE / "grid-r1-s2.json").read_text())
    bench["accept"]["by_category"] = {"chat": {"n": 12, "mean": 2.98}, "other": {"n": 0, "mean": None}}
    rows = pc.check_pair("half", bench, n_tokens=128, ignore_eos=True, flags=flags, flag_problems=problems)
    assert "half pair: the bench's categories are the prompt file's (its by_category names)" in _failed(rows)


def test_a_half_run_passes_and_its_log_is_only_bounded() -> None:
    """The half pair as the simulator serves it (``--sim-drafter half``, the dry run of ``device.sh final``
    with PAIR=half): every check against the construction passes; its decode lines (1.96 weighted, 2.00
    plain) are no pooled figure (1.887), so for this pair they are only bounded by the two modes."""
    flags = pc.category_flags(*_half_inputs())[0]
    bench, rows = _half_run("half-sim-bench.json", "half-sim-server.log")
    assert _failed(rows) == []
    names = [r["check"] for r in rows if "check" in r]
    assert "half pair: accept of the 'question' prompts (mean per request) within 1 % of the construction's" in names
    assert "half pair: the server's decode lines lie between 1.0 and steps + 1 = 4" in names
    # the request prompts' mean, had the half draft missed them, fails
    bench["accept"]["by_category"]["request"]["mean"] = 1.0
    assert _failed(pc.check_pair("half", bench, n_tokens=128, ignore_eos=True, flags=flags)) == [
        "half pair: accept of the 'request' prompts (mean per request) within 1 % of the construction's"
    ]


def test_a_real_sweeps_spec_variants_are_checked_at_their_steps() -> None:
    """The real maxrate sweep (work pair): "steps 3" finished at 4.0 at c = 1 and 4, "no spec" is no
    speculation and was cut short: one check, passing; a repeat at 3.9 fails it; at steps 2 (a variant's
    own setting) the same 4.0 is wrong (2.98 expected)."""
    sweep = json.loads((HERE / "maxrate-sweep.json").read_text())
    rows = pc.check_sweep("work", sweep, steps=3, n_tokens=128, ignore_eos=True)
    assert [r["ok"] for r in rows if "check" in r] == [True]
    sweep["variants"][0]["repeats"][1]["accept"] = 3.9
    assert _failed(pc.check_sweep("work", sweep, steps=3, n_tokens=128, ignore_eos=True)) == [
        "work pair: sweep variant 'steps 3' (steps 3): every benchmark's accept within 1 % of the construction's"
    ]
    sweep["variants"][0]["repeats"][1]["accept"] = 4.0
    sweep["variants"][0]["settings"] = {"arg:--speculative-num-steps": 2}
    assert len(_failed(pc.check_sweep("work", sweep, steps=3, n_tokens=128, ignore_eos=True))) == 1


def test_the_real_half_pair_passes_every_check() -> None:
    """The half pair on the real server (the lent H200, ``PAIR=half device.sh final``): every figure eagletui
    showed is the construction's within 1 % (pooled 1.8928 = 4096 ÷ 2164, per request 2.878, "request" 4.00,
    "question" 1.00, every position 0.2957, [1524, 0, 0, 640]); its 15 decode lines only lie in 1 … 4."""
    bench, rows = _half_run("half-real-bench.json", "half-real-server.log")
    assert _failed(rows) == []
    assert len([r for r in rows if "check" in r]) >= 12
    fig = rows[-1]["figures"]
    assert fig["expected"]["shown"] == pytest.approx(4096 / 2164, rel=1e-4)
    assert fig["eagletui"]["per_position"] == [0.2957] * 3
