"""``eagletui parse --format vllm``'s fast paths (access lines and stats/metrics pairs scanned in bulk, lone
serving lines read with the reader's pairing) give what the full path gives: the classifier and the
reader on every line, no fast path at all. On every real vLLM fixture, on the throughput benchmark's
corpus and on a serving log of the cases that must leave the bulk scan; and bounded values."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest

from eagletui.commands import parse as parse_cmd
from eagletui.core.logs.formats.vllm import VLLM, VLLMFormat
from eagletui.core.logs.formats.vllm.serving import parse_spec, parse_stats
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.core.state.summary import Summarizer

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted((ROOT / "tests/fixtures/vllm").glob("*.log"))


class _NoFastPath(VLLMFormat):
    fast = None


def _full(data: bytes) -> tuple[dict[str, Any], list[Any]]:
    """The reference: every line through classify, the reader and the phase machine."""
    interp = LogInterpreter(launch=1, emit_lines=False, fmt=_NoFastPath())
    summ = Summarizer()
    gens: list[Any] = []
    for evs in (interp.feed_bytes(data), interp.flush()):
        gens += [(e.gen_throughput, e.accept_len) for e in evs if e.type == "decode_stats"]
        summ.add(evs)
    summ.set_version(interp.version)
    result = summ.result()
    result["url"] = interp.state.url or None
    return result, gens


def _bulk(data: bytes, step: int) -> tuple[dict[str, Any], list[Any]]:
    """``parse``'s own path (parse_stream, feed_bulk_bytes) in ``step``-byte blocks: the same samples (gen
    throughput and accept length of each) as the reference."""
    gens: list[Any] = []

    def sink(items: list[Any]) -> None:
        for e in items:
            if e.type == "decode_rows":
                assert len(e.acc) == len(e.gen)  # every scanned pair has both
                gens.extend(zip(e.gen, e.acc, strict=True))
            elif e.type == "decode_stats":
                gens.append((e.gen_throughput, e.accept_len))

    old = parse_cmd.CHUNK
    parse_cmd.CHUNK = step
    try:
        return parse_cmd.parse_stream(io.BytesIO(data), sink, fmt=VLLM), gens
    finally:
        parse_cmd.CHUNK = old


def _same(data: bytes, steps: tuple[int, ...] = (1 << 20, 4099, 313)) -> dict[str, Any]:
    ref = _full(data)
    for step in steps:
        assert _bulk(data, step) == ref, step
    return ref[0]


def test_real_fixtures_parse_alike() -> None:
    for log in LOGS:
        data = log.read_bytes()
        ref = _full(data)
        assert _bulk(data, 1 << 20) == ref, log.name
        assert _bulk(data, 777) == ref, log.name


def _benchmark_corpus(tmp_path: Path, lines: int) -> bytes:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import parse_throughput
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    path = tmp_path / "vllm.log"
    parse_throughput.generate_vllm(path, lines)
    return path.read_bytes()


def test_the_benchmark_corpus_parses_alike(tmp_path: Path) -> None:
    s = _same(_benchmark_corpus(tmp_path, 3000))
    assert s["state"] == "ready" and s["decode"]["count"] > 70 and s["spec"]["count"] == s["decode"]["count"]


_PID = "(APIServer pid=7) "


def _stats(t: str, gen: str, run: str = "4", engine: str = "000", tail: str = "") -> str:
    return (
        f"{_PID}INFO 08-21 {t} [loggers.py:273] Engine {engine}: Avg prompt throughput: 10.0 tokens/s, "
        f"Avg generation throughput: {gen} tokens/s, Running: {run} reqs, Waiting: 0 reqs, "
        f"GPU KV cache usage: 5.0%, Prefix cache hit rate: 0.0%{tail}"
    )


def _spec(t: str, mean: str, accepted: str = "300", drafted: str = "600", rate: str = "50.0") -> str:
    return (
        f"{_PID}INFO 08-21 {t} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: {mean}, "
        f"Accepted throughput: 30.00 tokens/s, Drafted throughput: 60.00 tokens/s, Accepted: {accepted} tokens, "
        f"Drafted: {drafted} tokens, Per-position acceptance rate: 0.700, 0.500, 0.300, "
        f"Avg Draft acceptance rate: {rate}%"
    )


def _access(i: int) -> str:
    return f'{_PID}INFO:     127.0.0.1:{40000 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK'


def _serving(spec_args: bool = True) -> bytes:
    """A startup, then serving with everything the bulk scan must hand to the full path."""
    head = (ROOT / "tests/fixtures/vllm/ready-0251-mtp-qwen38-dgxspark.log").read_text().splitlines()
    if not spec_args:
        head = [
            ln.replace(", 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}", "").replace(
                "speculative_config=SpeculativeConfig(method='mtp', model='RedHatAI/Qwen3.8-27B-INT4', num_spec_tokens=3), ",
                "",
            )
            for ln in head
        ]
    head = head[: next(i for i, ln in enumerate(head) if "Application startup complete" in ln) + 1]
    out = list(head)
    for i in range(230):
        t = f"10:{30 + i // 60:02d}:{i % 60:02d}"
        out += [_access(i * 10 + j) for j in range(i % 5)]
        k = i % 23
        if not spec_args and i < 4:
            out.append(_stats(t, "40.0"))  # stats of their own: the launch said nothing of speculation
            continue
        if k == 3:
            out += [_stats(t, "nan"), _spec(t, "2.10")]  # not a sample (nan), the report still counts
        elif k == 5:
            out += [_stats(t, "1e999"), _spec(t, "2.2")]  # an overflowing number
        elif k == 7:
            out += [_stats(t, "99999999999.0"), _spec(t, "2.3")]  # above any real throughput
        elif k == 9:
            out += [_stats(t, "50.0"), _spec(t, "70.0")]  # acceptance beyond what speculation gives
        elif k == 11:
            out += [_stats(t, "50.0"), _spec(t, "2.0", accepted="700", drafted="600")]
        elif k == 13:
            out += [_stats(t, "50.0", engine="000"), _stats(t, "60.0", engine="001"), _spec(t, "2.4"), _spec(t, "2.5")]
        elif k == 15:
            out += [_stats(t, "0.0", run="0"), _spec(t, "1.0", accepted="0", drafted="0", rate="0.0")]  # idle tick
        elif k == 17:
            out += [_stats(t, "80.0")]  # a stats line whose metrics line never came
        elif k == 19:
            out += ["\x1b[32m" + _stats(t, "90.0") + "\x1b[0m", _spec(t, "\x1b]0;title\x07 2.6")]
        elif k == 21:
            out += [_stats(t, "90.0", tail=", Running: 9 reqs"), _spec(t, "2.7")]  # a key printed twice
        else:
            out += [_stats(t, f"{100 + i}.5"), _spec(t, f"{1 + (i % 30) / 10:.2f}")]
        if k % 2:
            # a line of no serving kind after each case: each case is alone in its scanned run
            out.append(f"{_PID}INFO 08-21 {t} [chat_utils.py:1] Detected the chat template content format")
        if i == 150:
            out += [
                f"{_PID}ERROR 08-21 {t} [serving_chat.py:1] Error in chat completion",
                f"{_PID}ERROR 08-21 {t} [serving_chat.py:1] Traceback (most recent call last):",
                f'{_PID}ERROR 08-21 {t} [serving_chat.py:1]   File "/x/vllm/entrypoints/openai/serving_chat.py", line 1',
                f"{_PID}ERROR 08-21 {t} [serving_chat.py:1] ValueError: bad request",
            ]
    out.append(f"{_PID}INFO:     Shutting down")
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("spec_args", [True, False], ids=["spec", "no-spec-args"])
def test_a_serving_log_of_edge_cases_parses_alike(spec_args: bool) -> None:
    s = _same(_serving(spec_args))
    assert s["decode"]["count"] > 140 and s["spec"]["count"] > 200
    assert s["decode"]["last"]["gen_throughput"] < 1e9


def test_values_are_bounded() -> None:
    base = "Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: {} tokens/s, Running: 2 reqs, Waiting: 1 reqs, GPU KV cache usage: {}%"
    assert parse_stats(base.format("nan", "1.0")) is None
    assert parse_stats(base.format("inf", "1.0")) is None
    assert parse_stats(base.format("1e999", "1.0")) is None
    assert parse_stats(base.format("99999999999", "1.0")) is None  # no server generates 10^11 tokens/s
    assert parse_stats(base.format("40.0", "250.0"))["token_usage"] is None  # a share above 100 %
    assert parse_stats(base.format("40.0", "nan"))["token_usage"] is None
    ok = parse_stats(base.format("40.0", "12.5"))
    assert ok == {"gen_throughput": 40.0, "running_req": 2, "queue_req": 1, "token_usage": 0.125}
    spec = "SpecDecoding metrics: Mean acceptance length: {}, Accepted throughput: 1.0 tokens/s, Drafted throughput: 2.0 tokens/s, Accepted: {} tokens, Drafted: {} tokens, Per-position acceptance rate: 0.5, Avg Draft acceptance rate: {}%"
    assert parse_spec(spec.format("70.0", 1, 2, "50.0"))["accept_len"] is None
    assert parse_spec(spec.format("nan", 1, 2, "50.0"))["accept_len"] is None
    huge = parse_spec(spec.format("2.0", 10**16, 10**17, "50.0"))
    assert huge["accepted"] is None and huge["drafted"] is None
    assert parse_spec(spec.format("2.0", 1, 2, "150.0"))["accept_rate"] is None
