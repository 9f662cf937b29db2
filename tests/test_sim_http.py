"""Real-process, real-HTTP tests of the simulator's API, pacing and ground-truth counters."""

from __future__ import annotations

import asyncio
import json
import re
import time

import aiohttp
import pytest
from conftest_sim import READY, SPEC_ARGS, SimProc

DECODE_RE = re.compile(
    r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} TP0\] Decode batch, #running-req: \d+, #token: \d+, "
    r"token usage: \d+\.\d\d, accept len: (\d+\.\d\d), accept rate: \d+\.\d\d, cuda graph: True, "
    r"gen throughput \(token/s\): \d+\.\d\d, #queue-req: \d+$",
    re.M,
)
ROBUST_RE = re.compile(
    r"Decode batch(?: \[(?P<iter>\d+)\])?[.,] #running-req: (?P<run>\d+), .*?gen throughput \(token/s\): "
    r"(?P<gen_tps>[\d.]+), #queue-req: (?P<queue>\d+)"
)


@pytest.fixture(scope="module")
def spec_sim():
    with SimProc(
        SPEC_ARGS
        + ["--sim-shards", "4", "--enable-metrics", "--decode-log-interval", "5", "--sim-speed", "4"]
    ) as sim:
        sim.wait_for(READY)
        yield sim


async def _stream_generate(
    s: aiohttp.ClientSession, base: str, max_new: int, ignore_eos: bool = True, text: str = "hello there"
) -> tuple[list[dict], list[float]]:
    payload = {
        "text": text,
        "sampling_params": {"max_new_tokens": max_new, "ignore_eos": ignore_eos},
        "stream": True,
    }
    events, times = [], []
    async with s.post(f"{base}/generate", json=payload) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/event-stream")
        async for line in r.content:
            line = line.decode().rstrip("\n")
            if not line:
                continue
            assert line.startswith("data: ")
            raw = line[6:]
            if raw == "[DONE]":
                events.append({"done": True})
                break
            events.append(json.loads(raw))
            times.append(time.monotonic())
    return events, times


@pytest.mark.slow
async def test_health_503_until_warmup_done() -> None:
    with SimProc(
        ["--model-path", "m-8b", "--sim-shards", "2"], env={"EAGLETUI_SIM_WARMUP_DELAY": "1.5"}
    ) as sim:
        sim.wait_for("Uvicorn running on")
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{sim.base}/health") as r:
                assert r.status == 503
            async with s.get(f"{sim.base}/health_generate") as r:
                assert r.status == 503
            sim.wait_for(READY)
            async with s.get(f"{sim.base}/health") as r:
                assert r.status == 200
            async with s.get(f"{sim.base}/metrics") as r:
                assert r.status == 404  # no --enable-metrics
            async with s.get(f"{sim.base}/get_server_info") as r:
                assert r.status == 200 and (await r.json())["status"] == "ready"
        assert (
            "] Endpoint '/get_server_info' is deprecated and will be removed in a future version. "
            "Please use '/server_info' instead.\n"
        ) in sim.text()


@pytest.mark.slow
async def test_streaming_generate_meta_info(spec_sim: SimProc) -> None:
    async with aiohttp.ClientSession() as s:
        events, _ = await _stream_generate(s, spec_sim.base, 120)
    assert events[-1] == {"done": True}
    final = events[-2]
    meta = final["meta_info"]
    assert meta["completion_tokens"] == 120
    assert meta["finish_reason"] == {"type": "length", "length": 120}
    assert len(final["text"].split()) == 120 and len(final["output_ids"]) == 120
    for key in ("id", "prompt_tokens", "cached_tokens", "e2e_latency", "spec_verify_ct", "spec_accept_rate"):
        assert key in meta
    assert meta["spec_accept_length"] == pytest.approx(120 / meta["spec_verify_ct"])
    assert 2.4 < meta["spec_accept_length"] < 4.0
    # cumulative text, monotonically growing completion_tokens, finish_reason only at the end
    counts = [e["meta_info"]["completion_tokens"] for e in events[:-1]]
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
    assert all(e["meta_info"]["finish_reason"] is None for e in events[:-2])
    assert events[-3]["text"] and final["text"].startswith(events[-3]["text"])
    assert "e2e_latency" not in events[0]["meta_info"]
    # spec_* fields only in the final chunk (real: shared/fixtures/sglang-0.5.17-h200/generate.jsonl)
    assert all(not any(k.startswith("spec_") for k in e["meta_info"]) for e in events[:-2])
    assert sum(meta["spec_correct_drafts_histogram"]) == meta["spec_verify_ct"]
    assert meta["spec_num_proposed_drafts"] == meta["spec_verify_ct"] * 3
    # the simulator reports 0.5.23, which no longer sends the FIXME aliases (issue 32)
    assert "spec_accept_histogram" not in meta and "spec_accepted_drafts" not in meta


async def test_non_stream_stops_at_random_length_without_ignore_eos(spec_sim: SimProc) -> None:
    async with aiohttp.ClientSession() as s:
        lens = []
        for i in range(4):
            payload = {"text": f"q{i}", "sampling_params": {"max_new_tokens": 60}}
            async with s.post(f"{spec_sim.base}/generate", json=payload) as r:
                out = await r.json()
            lens.append(out["meta_info"]["completion_tokens"])
            assert 1 <= lens[-1] <= 60
            assert out["meta_info"]["finish_reason"]["type"] in ("stop", "length")
        assert any(n < 60 for n in lens)


async def test_sim_stats_ground_truth_and_decode_lines(spec_sim: SimProc) -> None:
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{spec_sim.base}/flush_cache") as r:
            assert r.status == 200
        async with s.get(f"{spec_sim.base}/metrics") as r:
            before = _counters(await r.text())
        results = await asyncio.gather(
            *[_stream_generate(s, spec_sim.base, 150, text=f"p{i}") for i in range(8)]
        )
        async with s.get(f"{spec_sim.base}/sim/stats") as r:
            stats = await r.json()
        async with s.get(f"{spec_sim.base}/server_info") as r:
            info = await r.json()
        async with s.get(f"{spec_sim.base}/metrics") as r:
            metrics = await r.text()
    metas = [ev[-2]["meta_info"] for ev, _ in results]
    assert stats["output_tokens"] == sum(m["completion_tokens"] for m in metas) == 8 * 150
    assert stats["verify_ct"] == sum(m["spec_verify_ct"] for m in metas)
    assert stats["requests_finished"] == 8
    assert stats["accept_len"] == pytest.approx(1200 / stats["verify_ct"])
    assert stats["decode_accept_len"] == pytest.approx(stats["expected"]["accept_len"], abs=0.3)
    assert stats["expected"]["accept_len"] == pytest.approx(3.2, abs=0.05)
    assert len(stats["per_request"]) == 8 and all(p["decode_tok_s"] > 0 for p in stats["per_request"])
    # server_info: flat args + internal_states[0]
    assert info["tp_size"] == 8 and info["speculative_algorithm"] == "EAGLE3" and info["version"] == "0.5.23"
    st0 = info["internal_states"][0]
    assert st0["last_gen_throughput"] > 0
    assert 2.4 < st0["avg_spec_accept_length"] < 4.0
    for name in (
        "sglang:gen_throughput",
        "sglang:spec_accept_length",
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        "sglang:generation_tokens_total",
        "sglang:prompt_tokens_total",
        "sglang:spec_verify_calls_total",
        "sglang:time_to_first_token_seconds_bucket",
    ):
        assert name in metrics
    text = spec_sim.text()
    lines = DECODE_RE.findall(text)
    assert lines, text[-2000:]
    assert all(ROBUST_RE.search(ln) for ln in text.split("\n") if "Decode batch" in ln)
    assert re.search(
        r'^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\] INFO:     127\.0\.0\.1:\d+ - "POST /flush_cache HTTP/1\.1" 200 OK$',
        text,
        re.M,
    )
    assert "Cache flushed successfully!" in text
    # /metrics counts per FINISHED request (metrics_collector.py:observe_one_finished_request): the
    # streamed tokens and the requests' verify counts, so their ratio is the accept length, not the batch
    # size times it.
    after = _counters(metrics)
    gen = after[("sglang:generation_tokens_total", "true")] - before.get(
        ("sglang:generation_tokens_total", "true"), 0
    )
    verify = after[("sglang:spec_verify_calls_total", "")] - before.get(
        ("sglang:spec_verify_calls_total", ""), 0
    )
    assert gen == 8 * 150
    assert verify == sum(m["spec_verify_ct"] for m in metas)
    assert gen / verify == pytest.approx(stats["accept_len"])
    reqs = after[("sglang:num_requests_total", "true")] - before.get(("sglang:num_requests_total", "true"), 0)
    assert reqs == 8


def _counters(text: str) -> dict[tuple[str, str], float]:
    """(name, is_streaming or "") → value of the counter samples of a /metrics text."""
    out: dict[tuple[str, str], float] = {}
    for m in re.finditer(r"^(sglang:\w+_total)\{([^}]*)\} (\S+)$", text, re.M):
        streaming = re.search(r'is_streaming="(\w+)"', m.group(2))
        out[(m.group(1), streaming.group(1) if streaming else "")] = float(m.group(3))
    return out


@pytest.mark.slow
async def test_flush_cache_timeout_waits_for_idle(spec_sim: SimProc) -> None:
    """0.5.23 flush_wrapper.py: without ?timeout a busy server refuses at once; with one it waits for idle."""
    async with aiohttp.ClientSession() as s:
        task = asyncio.ensure_future(_stream_generate(s, spec_sim.base, 1500, text="busy"))
        for _ in range(500):  # until the request is admitted
            async with s.get(f"{spec_sim.base}/metrics") as r:
                if re.search(r"^sglang:num_running_reqs\{[^}]*\} 1\.0$", await r.text(), re.M):
                    break
            await asyncio.sleep(0.01)
        assert not task.done()
        async with s.post(f"{spec_sim.base}/flush_cache") as r:
            assert r.status == 400
            assert await r.text() == "Flush cache failed.\n"
        async with s.post(f"{spec_sim.base}/flush_cache?timeout=60") as r:
            body = await r.text()
            assert r.status == 200, body
            assert body.startswith("Cache flushed.")
        # it answered only once the request had finished: the server is idle then, and the stream (about
        # 6 s long, admitted just before the flush) ends right after the answer. Its last chunk may still
        # be on the way when the answer comes (the flush waits for the scheduler, not for the client), so
        # the end is awaited with a bound far shorter than the request, not asserted at the same instant
        async with s.get(f"{spec_sim.base}/metrics") as r:
            assert re.search(r"^sglang:num_running_reqs\{[^}]*\} 0\.0$", await r.text(), re.M)
        events, _ = await asyncio.wait_for(task, timeout=2.0)
        assert events[-2]["meta_info"]["completion_tokens"] == 1500
        async with s.post(f"{spec_sim.base}/flush_cache?timeout=-1") as r:
            assert r.status == 422


@pytest.mark.slow
async def test_single_stream_pacing_matches_model(spec_sim: SimProc) -> None:
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{spec_sim.base}/flush_cache") as r:
            assert r.status == 200
        events, times = await _stream_generate(s, spec_sim.base, 400)
        async with s.get(f"{spec_sim.base}/sim/stats") as r:
            stats = await r.json()
    n_first = events[0]["meta_info"]["completion_tokens"]
    client_rate = (400 - n_first) / (times[-1] - times[0])
    per = stats["per_request"][0]
    assert per["completion_tokens"] == 400
    # the client sees what the server paced (same events, tiny transport jitter)
    assert client_rate == pytest.approx(per["decode_tok_s"], rel=0.05)
    expected = stats["expected"]["single_stream_tok_s"]  # includes --sim-speed 4
    assert per["decode_tok_s"] == pytest.approx(expected, rel=0.15)


async def test_concurrency_gives_higher_aggregate(spec_sim: SimProc) -> None:
    async with aiohttp.ClientSession() as s:
        t = time.monotonic()
        await _stream_generate(s, spec_sim.base, 80)
        single = 80 / (time.monotonic() - t)
        t = time.monotonic()
        await asyncio.gather(*[_stream_generate(s, spec_sim.base, 80, text=f"c{i}") for i in range(32)])
        aggregate = 32 * 80 / (time.monotonic() - t)
    # batching: 32 streams at once go far faster together than one alone (about 20x idle). The bound
    # is 4x: 32 streams are CPU for the simulator and the client, and with CI and another suite on the
    # same two cores the ratio measured 5.6x (8x failed there; one stream alone hardly needs a core)
    assert aggregate > 4 * single


async def test_openai_endpoints(spec_sim: SimProc) -> None:
    base = spec_sim.base
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{base}/v1/models") as r:
            models = await r.json()
        assert models["data"][0]["id"] == "moonshotai/Kimi-K2-Instruct"
        async with s.post(
            f"{base}/v1/completions", json={"prompt": "hi", "max_tokens": 12, "ignore_eos": True}
        ) as r:
            out = await r.json()
        assert out["object"] == "text_completion" and out["usage"]["completion_tokens"] == 12
        assert len(out["choices"][0]["text"].split()) == 12
        payload = {
            "messages": [{"role": "user", "content": "hello"}],
            "max_tokens": 20,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        chunks = []
        async with s.post(f"{base}/v1/chat/completions", json=payload) as r:
            async for line in r.content:
                line = line.decode().strip()
                if line.startswith("data: "):
                    chunks.append(line[6:])
        assert chunks[-1] == "[DONE]"
        objs = [json.loads(c) for c in chunks[:-1]]
        assert objs[0]["choices"][0]["delta"]["role"] == "assistant"
        assert all(o["object"] == "chat.completion.chunk" for o in objs)
        content = "".join(o["choices"][0]["delta"].get("content") or "" for o in objs if o["choices"])
        assert len(content.split()) == 20
        assert objs[-1]["choices"] == [] and objs[-1]["usage"]["completion_tokens"] == 20
        assert objs[-2]["choices"][0]["finish_reason"] == "length"
        async with s.get(f"{base}/model_info") as r:
            info = await r.json()
        assert info["architectures"] == ["DeepseekV3ForCausalLM"] and info["is_generation"] is True
        async with s.get(f"{base}/get_server_info") as r:
            assert r.status == 200


async def test_a_client_that_goes_mid_stream_is_aborted_without_a_traceback(spec_sim: SimProc) -> None:
    """SGLang ends a stream whose client went (a benchmark cancelled by the user or a SIGTERM) and aborts
    its request without a word (0.5.17 http_server: StreamingResponse + create_abort_task); the simulator
    logged aiohttp's "Error handling request" and a traceback, which the log pane showed after every
    cancelled benchmark. Clients go before the headers, after them and after the first event."""
    host, port = "127.0.0.1", spec_sim.port
    gen = json.dumps({"text": "hi", "sampling_params": {"max_new_tokens": 400, "ignore_eos": True}, "stream": True})
    oai = json.dumps({"prompt": "hi", "max_tokens": 400, "ignore_eos": True, "stream": True})
    for path, body in (("/generate", gen), ("/v1/completions", oai)):
        for upto in (b"", b"\r\n\r\n", b"data: "):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(
                f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
            )
            await writer.drain()
            if upto:
                await reader.readuntil(upto)
            writer.close()
    async with aiohttp.ClientSession() as s:  # the streams cut above have written (and failed) since
        events, _ = await _stream_generate(s, spec_sim.base, 40)
    assert events[-1] == {"done": True}
    log = spec_sim.text()
    assert "Error handling request" not in log and "Traceback" not in log, log[-3000:]
