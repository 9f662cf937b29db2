"""vLLM's log format (eagletui/core/logs/formats/vllm/) on real vLLM output posted publicly.

tests/fixtures/vllm/NAME.log + NAME.expect.json: provenance and the reading a vLLM user gives each
excerpt; they cover 0.6.3 – 0.25.1 and the three wordings of the speculative-decoding metrics line.
The parser runs as ``eagletui parse --format vllm --json`` does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagletui.commands.parse import main as parse_main
from eagletui.commands.parse import parse_path
from eagletui.core import events as ev
from eagletui.core.logs.formats.vllm import VLLM
from eagletui.core.logs.formats.vllm.facts import launch_facts
from eagletui.core.logs.formats.vllm.lines import classify
from eagletui.core.logs.formats.vllm.serving import parse_spec, parse_stats
from eagletui.core.logs.registry import get_format
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.core.state.summary import Summarizer

FIXTURES = Path(__file__).parent / "fixtures" / "vllm"
LOGS = sorted(FIXTURES.glob("*.log"))


def _expect(log: Path) -> dict[str, Any]:
    return json.loads(log.with_suffix(".expect.json").read_text(encoding="utf-8"))


def _events(text: str, chunk: int | None = None) -> list[ev.Event]:
    it = LogInterpreter(launch=1, fmt=VLLM)
    out: list[ev.Event] = []
    if chunk is None:
        out += it.feed(text)
    else:
        for i in range(0, len(text), chunk):
            out += it.feed(text[i : i + chunk])
    return out + it.flush()


def test_the_corpus_is_well_formed() -> None:
    versions = set()
    for log in LOGS:
        e = _expect(log)
        assert e["source"].startswith("https://github.com/"), log.name
        assert e["state"] in {"ready", "loading", "failed", "stopped", "unknown"}, log.name
        assert (e["failure_kind"] is not None) == (e["state"] == "failed"), log.name
        assert e["failure_kind"] is None or e["failure_kind"] in ev.FAILURE_KINDS
        versions.add((e["version"] or "?").split(".")[1] if e["version"] else "?")
    assert len(versions - {"?"}) >= 3  # at least three minor versions


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_real_vllm_log_reads_right(log: Path) -> None:
    got = parse_path(str(log), fmt=VLLM)
    exp = _expect(log)
    assert got["state"] == exp["state"], got["failure"]
    assert (got["failure"] or {}).get("kind") == exp["failure_kind"]
    names = [p["name"] for p in got["phases"]]
    if "phases" in exp:
        assert names == exp["phases"]
    if "url" in exp:
        assert got["url"] == exp["url"]
    spec = got["spec"]
    if "spec_accept_len_last" in exp:
        assert spec is not None and spec["last"]["accept_len"] == pytest.approx(
            exp["spec_accept_len_last"], abs=1e-3
        )
    if "spec_accept_rate_last" in exp:
        assert spec["last"]["accept_rate"] == pytest.approx(exp["spec_accept_rate_last"], abs=1e-4)
    if "spec_per_position_last" in exp:
        assert spec["last"]["per_position"] == pytest.approx(exp["spec_per_position_last"])
    if "decode_count" in exp:
        assert got["decode"]["count"] == exp["decode_count"]
    if "server_version" in exp:
        assert got["launch"]["version"] == exp["server_version"]
        assert got["launch"]["server"] == "vllm"
    for k, v in (exp.get("facts") or {}).items():
        assert got["launch"]["facts"][k] == v, k


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_live_and_chunked_reading_agree_with_parse(log: Path) -> None:
    """The live path (feed, LogLine events) in any chunking folds to the summary parse gives."""
    text = log.read_text(encoding="utf-8")
    want = parse_path(str(log), fmt=VLLM)
    for chunk in (None, 97, 4096):
        s = Summarizer()
        s.add(_events(text, chunk))
        got = s.result()
        for key in ("state", "phase", "phases", "failure", "decode", "spec"):
            assert got[key] == want[key], (chunk, key)


def test_the_cli_reads_vllm_and_names_the_server(capsys: pytest.CaptureFixture[str]) -> None:
    log = FIXTURES / "ready-0251-dflash-serving-stopped-dgxspark.log"
    assert parse_main(["--format", "vllm", str(log)]) == 0
    out = capsys.readouterr().out
    assert "launch: vllm 0.25.1  model=poolside/Laguna-S-2.1-NVFP4" in out
    assert "spec decoding: 64 reports" in out and "per position (last):" in out
    assert "capture_prefill" in out and "capture_target" in out and "compile" in out


# ----------------------------------------------------------------- the metrics line, any wording


@pytest.mark.parametrize(
    ("line", "accept_len", "rate", "per_pos"),
    [
        # V0 (0.6): cumulative counts, no mean: emitted × k / drafted
        (
            "Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.598, Number of speculative "
            "tokens: 3, Number of accepted tokens: 8547, Number of draft tokens: 13311, Number of emitted tokens: 10616.",
            10616 * 3 / 13311,
            0.642,
            (),
        ),
        # 0.9 / 0.10.2: percent first, then the mean
        (
            "SpecDecoding metrics: Draft acceptance rate: 88.8%, Mean acceptance length: 5.44, Accepted throughput: "
            "4.37 tokens/s, Drafted throughput: 4.92 tokens/s, Accepted: 262 tokens, Drafted: 295 tokens, "
            "Per-position acceptance rate: 0.983, 0.949, 0.915, 0.881, 0.712",
            5.44,
            0.888,
            (0.983, 0.949, 0.915, 0.881, 0.712),
        ),
        # 0.11+: the mean first, the average rate last
        (
            "SpecDecoding metrics: Mean acceptance length: 3.62, Accepted throughput: 2.87 tokens/s, Drafted "
            "throughput: 16.42 tokens/s, Accepted: 76 tokens, Drafted: 435 tokens, Per-position acceptance rate: "
            "0.793, 0.552, Avg Draft acceptance rate: 17.5%",
            3.62,
            0.175,
            (0.793, 0.552),
        ),
        # a wording not seen yet still parses by its keys
        (
            "SpecDecoding metrics: Mean acceptance length: 2.50, Current speculative depth: 7, Some new key: 12, "
            "Accepted: 10 tokens, Drafted: 20 tokens",
            2.5,
            None,
            (),
        ),
    ],
)
def test_spec_metrics_are_key_value_pairs(
    line: str, accept_len: float, rate: float | None, per_pos: tuple[float, ...]
) -> None:
    d = parse_spec(line)
    assert d is not None
    assert d["accept_len"] == pytest.approx(accept_len, abs=1e-3)
    assert d["accept_rate"] == (None if rate is None else pytest.approx(rate))
    assert d["per_position"] == pytest.approx(per_pos)


def test_spec_metrics_of_0_8_need_the_launch_k_and_impossible_values_are_dropped() -> None:
    line = "SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: 30 tokens, Drafted: 60 tokens"
    assert parse_spec(line)["accept_len"] is None  # no k: not guessed
    assert parse_spec(line, steps=3)["accept_len"] == pytest.approx(1 + 3 * 30 / 60)
    bad = parse_spec(
        "SpecDecoding metrics: Mean acceptance length: 99.0, Accepted: 5 tokens, Drafted: 10 tokens, "
        "Per-position acceptance rate: 1.5, Avg Draft acceptance rate: 250.0%",
        steps=4,
    )
    assert bad is not None and bad["accept_len"] is None and bad["accept_rate"] is None
    assert (bad["accepted"], bad["drafted"], bad["per_position"]) == (5, 10, ())
    # more accepted than drafted and nothing else: nothing to report
    assert (
        parse_spec(
            "SpecDecoding metrics: Mean acceptance length: -1, Accepted: 90 tokens, Drafted: 10 tokens"
        )
        is None
    )
    nan = parse_spec(
        "SpecDecoding metrics: Draft acceptance rate: nan%, Accepted: 0 tokens, Drafted: 0 tokens"
    )
    assert nan["accept_rate"] is None and nan["drafted"] == 0


def test_stats_lines_of_v0_and_v1() -> None:
    v1 = parse_stats(
        "Engine 000: Avg prompt throughput: 6.8 tokens/s, Avg generation throughput: 10.6 tokens/s, Running: 1 reqs,"
        " Waiting: 2 reqs, GPU KV cache usage: 0.7%, Prefix cache hit rate: 0.0%"
    )
    assert v1 == {"gen_throughput": 10.6, "running_req": 1, "queue_req": 2, "token_usage": 0.007}
    v0 = parse_stats(
        "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 75.3 tokens/s, Running: 6 reqs, "
        "Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 9.2%, CPU KV cache usage: 0.0%."
    )
    assert v0 == {"gen_throughput": 75.3, "running_req": 6, "queue_req": 3, "token_usage": 0.092}
    idle = "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs"
    assert parse_stats(idle) == {}  # an idle tick is not a decode sample


# ----------------------------------------------------------------- two lines, one sample

ARGS_SPEC = (
    "(APIServer pid=1) INFO 08-01 20:59:09 [api_utils.py:273] non-default args: {'model': 'm', "
    "'speculative_config': {'method': 'eagle3', 'model': 'd', 'num_speculative_tokens': 3}}\n"
)
ARGS_PLAIN = "(APIServer pid=1) INFO 08-01 20:59:09 [api_utils.py:273] non-default args: {'model': 'm'}\n"
STATS = (
    "(APIServer pid=1) INFO 08-01 21:24:09 [loggers.py:273] Engine 000: Avg prompt throughput: 6.8 tokens/s, "
    "Avg generation throughput: {gen} tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.7%, "
    "Prefix cache hit rate: 0.0%\n"
)
SPEC = (
    "(APIServer pid=1) INFO 08-01 21:24:09 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {acc}, "
    "Accepted: 76 tokens, Drafted: 435 tokens, Per-position acceptance rate: 0.793, 0.552, 0.448, "
    "Avg Draft acceptance rate: 17.5%\n"
)
ACCESS = '(APIServer pid=1) INFO:     127.0.0.1:43282 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'


def _decodes(events: list[ev.Event]) -> list[tuple[float, float | None]]:
    return [(e.gen_throughput, e.accept_len) for e in events if isinstance(e, ev.DecodeStats)]


def test_throughput_and_acceptance_of_one_interval_make_one_sample() -> None:
    text = ARGS_SPEC + STATS.format(gen=10.6) + SPEC.format(acc=3.62) + ACCESS + STATS.format(gen=20.0)
    text += SPEC.format(acc=2.5)
    assert _decodes(_events(text)) == [(10.6, 3.62), (20.0, 2.5)]
    # line by line, and with an access line between the pair, the same
    assert _decodes(_events(text, chunk=1)) == [(10.6, 3.62), (20.0, 2.5)]
    text2 = ARGS_SPEC + STATS.format(gen=10.6) + ACCESS + SPEC.format(acc=3.62)
    assert _decodes(_events(text2)) == [(10.6, 3.62)]


def test_a_stats_line_without_its_pair_still_counts() -> None:
    # the log ends before the metrics line; a second stats line comes first
    text = ARGS_SPEC + STATS.format(gen=10.6) + STATS.format(gen=20.0)
    assert _decodes(_events(text)) == [(10.6, None), (20.0, None)]
    # without speculation nothing waits
    it = LogInterpreter(launch=1, fmt=VLLM)
    out = it.feed(ARGS_PLAIN + STATS.format(gen=10.6))
    assert _decodes(out) == [(10.6, None)]


def test_each_interpreter_has_its_own_reader() -> None:
    """Formats are shared singletons: the held stats line of one log never pairs with another's."""
    a, b = LogInterpreter(launch=1, fmt=VLLM), LogInterpreter(launch=1, fmt=VLLM)
    a.feed(ARGS_SPEC + STATS.format(gen=10.6))
    out_b = b.feed(ARGS_SPEC + SPEC.format(acc=2.0))
    assert _decodes(out_b) == []
    assert _decodes(a.feed(SPEC.format(acc=3.0))) == [(10.6, 3.0)]


# ----------------------------------------------------------------- ranks, prefixes, failures

TP2 = """\
(APIServer pid=10) INFO 05-06 20:58:40 [api_utils.py:273] non-default args: {'model': 'm', 'tensor_parallel_size': 2}
(Worker_TP0 pid=11) INFO 05-06 20:59:01 [gpu_model_runner.py:4830] Starting to load model m...
(Worker_TP1 pid=12) INFO 05-06 20:59:01 [gpu_model_runner.py:4830] Starting to load model m...
(Worker_TP0 pid=11) INFO 05-06 20:59:57 [default_loader.py:384] Loading weights took 24.84 seconds
(Worker_TP1 pid=12) INFO 05-06 20:59:58 [default_loader.py:384] Loading weights took 25.10 seconds
(Worker_TP0 pid=11) INFO 05-06 21:00:20 [gpu_worker.py:538] Available KV cache memory: 6.97 GiB
(Worker_TP1 pid=12) INFO 05-06 21:00:20 [gpu_worker.py:538] Available KV cache memory: 6.97 GiB
(EngineCore pid=9) INFO 05-06 21:00:21 [kv_cache_utils.py:2146] GPU KV cache size: 94,135 tokens
"""


def test_the_engine_core_is_not_a_rank_beside_its_workers() -> None:
    """At TP=2 the progress reads 2/2: the engine core's lines are global, not a third rank."""
    out = _events(TP2)
    load = [e for e in out if isinstance(e, ev.PhaseProgress) and e.phase == "load_target"]
    assert load and {e.ranks_total for e in load} == {2}
    assert [e.ranks_done for e in load] == [1, 2]
    kv = [e for e in out if isinstance(e, ev.PhaseFinished) and e.phase == "kv_cache"]
    assert kv and kv[0].log_time == "05-06 21:00:21"  # the engine core's global line ends it
    lines = [e for e in out if isinstance(e, ev.LogLine)]
    w1 = next(e for e in lines if e.text.startswith("(Worker_TP1") and "Loading weights" in e.text)
    assert w1.rank == 1 and w1.text[w1.rank_start : w1.rank_end] == "Worker_TP1"
    assert w1.text[w1.prefix_end :] == "Loading weights took 25.10 seconds"
    core = next(e for e in lines if e.text.startswith("(EngineCore"))
    assert core.rank is None
    api = next(e for e in lines if e.text.startswith("(APIServer"))
    assert api.rank is None


def test_a_tp1_engine_core_is_the_rank() -> None:
    rec = classify(
        "(EngineCore pid=9) INFO 08-01 21:09:13 [default_loader.py:430] Loading weights took 11.07 seconds"
    )
    assert rec.rank_actor and rec.ranks == "" and rec.tag == "load_end" and rec.prefixed
    assert rec.ts_text == "08-01 21:09:13"


def test_the_root_cause_is_the_engine_cores_exception_not_the_wrapper() -> None:
    s = parse_path(str(FIXTURES / "oom-sampler-warmup-tp-08x-issue17939.log"), fmt=VLLM)
    assert s["failure"]["kind"] == "oom"
    assert "warming up sampler" in s["failure"]["message"]
    assert "max-num-seqs" in s["failure"]["hint"]
    tail = (
        "ERROR 05-10 16:00:20 [core.py:396] RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {'EngineCore_0': 1}\n"
    )
    text = (FIXTURES / "oom-sampler-warmup-tp-08x-issue17939.log").read_text() + tail
    fails = [e for e in _events(text) if isinstance(e, ev.ServerFailed)]
    assert len(fails) == 1 and fails[0].kind == "oom", fails


def test_launch_facts_from_both_launch_lines() -> None:
    f = launch_facts(
        "{'model_tag': 'Qwen/Q', 'model': 'Qwen/Q', 'tensor_parallel_size': 8, 'speculative_config': "
        "{'method': 'eagle3', 'model': 'yuhuili/EAGLE3', 'num_speculative_tokens': 5}, 'port': 8001}"
    )
    assert (f.model, f.tp, f.pp, f.spec_algorithm, f.draft_model, f.spec_steps, f.port) == (
        "Qwen/Q",
        8,
        1,
        "eagle3",
        "yuhuili/EAGLE3",
        5,
        8001,
    )
    engine = launch_facts(
        "model='m', speculative_config=SpeculativeConfig(method='dflash', model='d', num_spec_tokens=15), "
        "tokenizer='m', tensor_parallel_size=2, pipeline_parallel_size=1, data_parallel_size=1"
    )
    assert (engine.model, engine.tp, engine.spec_algorithm, engine.spec_steps, engine.draft_model) == (
        "m",
        2,
        "dflash",
        15,
        "d",
    )
    assert launch_facts("not a dict {").model is None  # never raises


def test_the_vllm_log_stays_unknown_to_the_sglang_format() -> None:
    """The registry does not guess: the default format reads a vLLM log as not its own."""
    s = parse_path(str(FIXTURES / "ready-0251-mtp-qwen38-dgxspark.log"), fmt=get_format("sglang"))
    assert s["state"] == "unknown"


def test_the_bar_only_capture_phases_start_once_and_take_the_bars_clock() -> None:
    text = (FIXTURES / "ready-0251-dflash-serving-stopped-dgxspark.log").read_text()
    out = _events(text)
    starts = [e for e in out if isinstance(e, ev.PhaseStarted) and e.phase.startswith("capture")]
    assert [e.phase for e in starts] == ["capture_prefill", "capture_target"]
    assert all(e.log_time for e in starts)
    done = {e.phase: e for e in out if isinstance(e, ev.PhaseFinished)}
    assert done["capture_prefill"].seconds == 4.0 and done["capture_target"].seconds == 5.0


def test_without_format_parse_tries_the_other_formats_only_for_what_the_default_cannot_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    vllm_log = FIXTURES / "ready-0251-mtp-qwen38-dgxspark.log"
    not_a_log = (
        Path(__file__).parent / "fixtures" / "real" / "unknown-client-capability-probe-not-server-log.log"
    )
    sglang_log = Path(__file__).parent / "fixtures" / "real" / "serve-eagle3-accept-issue11948.log"
    assert parse_main(["--json", str(vllm_log), str(not_a_log), str(sglang_log)]) == 0
    out = capsys.readouterr()
    got = json.loads(out.out)
    assert [g["state"] for g in got] == ["ready", "unknown", "ready"]
    assert got[0]["launch"]["server"] == "vllm"
    assert "read as vllm (no --format given)" in out.err and out.err.count("read as") == 1
    # an explicit --format is never second-guessed
    assert parse_main(["--json", "--format", "sglang", str(vllm_log)]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "unknown"
