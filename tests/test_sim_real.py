"""The simulator against a REAL sglang server (issue 14 item 4).

``tests/fixtures/real-0.5.17/`` was recorded from a real sglang 0.5.17 server on an H200 (see its README):
an EAGLE-3 launch with CUDA graphs, serving, ``/metrics``, ``/server_info``, ``/generate`` answers and a
SIGTERM shutdown. The simulator runs the same scenario (tp 1, EAGLE3 3/1/4, decode graphs up to bs 8) and
must read the same to eagletui's own parser (``python -m eagletui parse --json``: phase sequence, state;
the parser's line kinds for each class of line both logs have) and answer in the same shapes (metric
families, types and label sets; ``/server_info`` keys; ``meta_info`` keys of final and streamed chunks).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest_sim import READY, REPO, SimProc

REAL = REPO / "tests" / "fixtures" / "real-0.5.17"
REAL_LOG = REAL / "eagle3-cudagraph-serve-profile-sigterm.log"

ARGS = [
    "--model-path",
    "/tmp/sgw/tiny/target",
    "--speculative-algorithm",
    "EAGLE3",
    "--speculative-draft-model-path",
    "/tmp/sgw/tiny/draft",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
    "--cuda-graph-max-bs-decode",
    "8",
    "--attention-backend",
    "triton",
    "--sampling-backend",
    "pytorch",
    "--tp",
    "1",
    "--context-length",
    "4096",
    "--enable-metrics",
    # The real run passed a deprecated flag (0.5.17's --cuda-graph-max-bs); of 0.5.23's deprecated flags
    # this one leaves a tp=1 launch unchanged, so both logs carry the deprecation warning.
    "--enable-dp-attention",
    "--sim-params-b",
    "8",
    "--sim-shards",
    "1",
    # the release of the real run: its answers carry what 0.5.17 sends (the FIXME aliases included)
    "--sim-version",
    "0.5.17",
]


class Run:
    log = ""
    metrics = ""
    server_info: dict[str, Any] = {}
    single: dict[str, Any] = {}
    batch: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    rc: int | None = None


def _post(base: str, path: str, body: dict[str, Any]) -> str:
    req = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def _get(base: str, path: str) -> str:
    with urllib.request.urlopen(base + path, timeout=60) as r:
        return r.read().decode()


@pytest.fixture(scope="module")
def run() -> Run:
    out = Run()
    with SimProc(ARGS) as sim:
        sim.wait_for(READY)
        sp = {"max_new_tokens": 64, "ignore_eos": True}
        out.single = json.loads(_post(sim.base, "/generate", {"text": "Hello", "sampling_params": sp}))
        out.batch = json.loads(
            _post(sim.base, "/generate", {"text": ["a b", "c d e", "f"], "sampling_params": sp})
        )
        raw = _post(
            sim.base,
            "/generate",
            # 120 tokens, not 24: the server sends what piled up since its last chunk (as SGLang's tokenizer
            # manager does), and a loaded machine got 24 tokens in two chunks, with no middle one to compare
            {"text": "stream", "sampling_params": {"max_new_tokens": 120, "ignore_eos": True}, "stream": True},
        )
        out.chunks = [json.loads(ln[6:]) for ln in raw.split("\n") if ln.startswith("data: {")]
        out.metrics = _get(sim.base, "/metrics")
        out.server_info = json.loads(_get(sim.base, "/server_info"))
        sim.proc.send_signal(signal.SIGTERM)
        out.rc = sim.wait_exit(30)
        out.log = sim.text()
    return out


def _parse_json(path: Path) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, "-m", "eagletui", "parse", "--json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(REPO),
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.slow
def test_phase_sequence_and_state_match_real(run: Run, tmp_path: Path) -> None:
    assert run.rc == 0
    sim_log = tmp_path / "sim.log"
    sim_log.write_text(run.log)
    sim, real = _parse_json(sim_log), _parse_json(REAL_LOG)
    assert [p["name"] for p in sim["phases"]] == [p["name"] for p in real["phases"]]
    assert (sim["state"], sim["phase"], sim["failure"]) == (real["state"], real["phase"], real["failure"])
    assert real["state"] == "stopped"
    # every phase finished in both; the capture bars were followed to their end
    for s, r in zip(sim["phases"], real["phases"], strict=True):
        assert (s["end"] is None) == (r["end"] is None), s["name"]
        assert (s["done"] == s["total"]) and (r["done"] == r["total"]), s["name"]
    assert sim["decode"]["count"] > 0 and real["decode"]["count"] > 0


# Classes of lines, told apart by their wording (alternatives: 0.5.17 | 0.5.23 spellings).
LINE_CLASSES: dict[str, str] = {
    "launch_warning": r"launch_server\.py:\d+: UserWarning: 'python -m sglang\.launch_server' is still supported",
    # the parser strips the bold-yellow colour code sglang prints around it
    "deprecated_flag": r"^(?:\x1b\[1;33m)?'--[\w-]+' is deprecated and will be removed in a future release\.",
    "server_args": r"^\[[^\]]+\] server_args=",
    "dist_begin": r"\] Init (?:torch distributed|parallel) begin\.$",
    "dist_end": r"\] Init (?:torch distributed|parallel) ends\. elapsed=",
    "load_begin": r"\] Load weight begin\. avail mem=",
    "load_end": r"\] Load weight end\. elapsed=",
    "shard_bar": r"(?:loading shards|checkpoint shards): +\d+% Completed \| \d+/\d+ \[",
    "kv_alloc": r"\] KV Cache is allocated\. dtype: ",
    "pool_end": r"\] Memory pool end\. avail mem=",
    "capture_prefill_begin": r"\] Capture (?:target|draft) prefill CUDA graph begin\. backend=breakable, num_tokens=\[",
    "capture_prefill_end": r"\] Capture (?:target|draft) prefill CUDA graph end\. elapsed=",
    "prefill_bar": r"^Capturing (?:num tokens|prefill shape) \(num_tokens=\d+ avail_mem=[\d.]+ GB\): +\d+%\|",
    "capture_verify_begin": r"\] Capture target verify CUDA graph begin\. backend=full, num_tokens_per_req=4, ",
    "capture_verify_end": r"\] Capture target verify CUDA graph end\. ",
    "capture_draft_begin": r"\] Capture draft (?:decode|extend) CUDA graph begin\. backend=full, ",
    "capture_draft_end": r"\] Capture draft (?:decode|extend) CUDA graph end\. elapsed=",
    "batch_bar": r"^Capturing batches \(bs=\d+ avail_mem=[\d.]+ GB\): +\d+%\|",
    "summary": r"\] max_total_num_tokens=\d+, chunked_prefill_size=",
    "timings": r"\] Engine startup timings \(s\): load_weight=.*cuda_graph=\{prefill=",
    "uvicorn_lifecycle": r"^\[[\d\- :]+\] INFO:     (?:Started server process|Waiting for application startup"
    r"|Application startup complete|Uvicorn running on)",
    "uvicorn_access_ok": r'^\[[\d\- :]+\] INFO:     127\.0\.0\.1:\d+ - "(?:GET|POST) /\S+ HTTP/1\.1" 200 OK$',
    "uvicorn_access_503": r'^\[[\d\- :]+\] INFO:     127\.0\.0\.1:\d+ - "GET /health HTTP/1\.1" 503 ',
    "ready": r"\] The server is fired up and ready to roll!$",
    "prefill": r"\] Prefill batch, #new-seq: \d+, .*cuda graph: True, input throughput",
    "decode": r"\] Decode batch, #running-req: \d+, .*accept len: [\d.]+, accept rate: [\d.]+, cuda graph: True",
    "sigterm": r"\] SIGTERM received\. signum=None frame=None\. Draining requests and shutting down\.\.\.$",
    "graceful": r"\] Gracefully exiting\.\.\. Remaining number of requests 0\. Remaining requests remaining_rids=\[\]\.$",
    "kill_tree": r"\] kill_process_tree called: parent_pid=\d+, include_parent=\w+, pid=\d+$",
}


def _kinds_by_class(text: str) -> dict[str, set[str]]:
    from eagletui.core.phases.interpreter import LogInterpreter

    li = LogInterpreter()
    events = li.feed(text if text.endswith("\n") else text + "\n")
    out: dict[str, set[str]] = {}
    for e in events:
        if type(e).__name__ != "LogLine":
            continue
        for name, rx in LINE_CLASSES.items():
            if re.search(rx, e.text):
                out.setdefault(name, set()).add(e.kind)
    return out


def test_line_kinds_match_real(run: Run) -> None:
    """Each class of line occurs in both logs, and eagletui's parser gives it the same kind in both."""
    real = _kinds_by_class(REAL_LOG.read_text(encoding="utf-8", errors="replace"))
    # the sim's /health probes: the real log has them from the launcher polling during warmup
    sim_text = run.log
    sim = _kinds_by_class(sim_text)
    missing_real = sorted(set(LINE_CLASSES) - set(real) - {"uvicorn_access_503"})
    assert not missing_real, missing_real  # the classes describe the real log
    for name in LINE_CLASSES:
        if name == "uvicorn_access_503":
            continue  # depends on who polls /health before ready, not on the server
        assert name in sim, f"the simulator never printed a {name} line"
        assert sim[name] == real[name], (name, sim[name], real[name])


# --- shapes ----------------------------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$")


def _families(text: str) -> dict[str, tuple[str, set[tuple[str, frozenset[str]]]]]:
    """family → (type, {(sample suffix, label names)})."""
    out: dict[str, tuple[str, set[tuple[str, frozenset[str]]]]] = {}
    types: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            out[name] = (kind, set())
            continue
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, line
        name, labels = m.group(1), m.group(2) or ""
        keys = frozenset(re.findall(r'(\w+)="', labels))
        family = next(f for f in sorted(types, key=len, reverse=True) if name.startswith(f))
        out[family][1].add((name[len(family) :], keys))
        float(m.group(3))
    return out


def test_metrics_shape_matches_real(run: Run) -> None:
    real = _families((REAL / "metrics.txt").read_text())
    sim = _families(run.metrics)
    must = {
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        "sglang:gen_throughput",
        "sglang:token_usage",
        "sglang:num_used_tokens",
        "sglang:spec_accept_length",
        "sglang:spec_accept_rate",
        "sglang:spec_num_steps",
        "sglang:spec_num_draft_tokens",
        "sglang:spec_verify_calls_total",
        "sglang:generation_tokens_total",
        "sglang:prompt_tokens_total",
        "sglang:num_requests_total",
        "sglang:time_to_first_token_seconds",
        "sglang:e2e_request_latency_seconds",
        "sglang:startup_time_seconds",
        "sglang:startup_cuda_graph_time_seconds",
        "sglang:graph_memory_usage_gb",
        "sglang:max_total_num_tokens",
        "sglang:is_cuda_graph",
    }
    assert must <= set(sim)
    assert set(sim) <= set(real), sorted(set(sim) - set(real))
    for family, (kind, samples) in sim.items():
        rkind, rsamples = real[family]
        assert kind == rkind, family
        assert samples, family
        assert samples <= rsamples, (family, samples - rsamples)
    # the scheduler's label set and the tokenizer's (§12)
    assert ("", frozenset({"engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank"})) in sim[
        "sglang:num_running_reqs"
    ][1]
    assert sim["sglang:spec_verify_calls_total"][1] == {("", frozenset({"engine_type", "model_name"}))}
    # per finished request: generated tokens / verify calls is an accept length, not a batch multiple
    gen = sum(
        float(v) for v in re.findall(r"^sglang:generation_tokens_total\{[^}]*\} (\S+)$", run.metrics, re.M)
    )
    verify = float(re.search(r"^sglang:spec_verify_calls_total\{[^}]*\} (\S+)$", run.metrics, re.M).group(1))
    assert 1.0 < gen / verify < 4.0


NON_ARG_KEYS = {
    "status",
    "max_total_num_tokens",
    "max_req_input_len",
    "startup_time",
    "internal_states",
    "version",
    "kv_events",
}
STATE_KEYS = {
    "max_speculative_num_draft_tokens",
    "last_gen_throughput",
    "memory_usage",
    "startup_time",
    "effective_max_running_requests_per_dp",
    "avg_spec_accept_length",
}


def test_server_info_shape_matches_real(run: Run) -> None:
    real = json.loads((REAL / "server_info.json").read_text())
    sim = run.server_info
    assert NON_ARG_KEYS <= set(real) and NON_ARG_KEYS <= set(sim)
    table = json.loads((REPO / "eagletui/data/sglang-0.5.23-server-args.json").read_text())["actions"]
    dests = {v["dest"] for v in table.values()}
    # everything else at the top level is a 0.5.23 server argument
    assert set(sim) - NON_ARG_KEYS <= dests, sorted(set(sim) - NON_ARG_KEYS - dests)
    r0, s0 = real["internal_states"][0], sim["internal_states"][0]
    assert STATE_KEYS <= set(r0) and STATE_KEYS <= set(s0)
    assert set(s0["memory_usage"]) == set(r0["memory_usage"])
    assert list(s0["memory_usage"]["graph"]) == list(r0["memory_usage"]["graph"])
    assert set(sim["startup_time"]) == set(real["startup_time"])
    assert list(sim["startup_time"]["cuda_graph"]) == list(real["startup_time"]["cuda_graph"])
    assert sim["status"] == real["status"] == "ready"
    assert sim["tp_size"] == real["tp_size"] == 1
    assert sim["speculative_algorithm"] == real["speculative_algorithm"] == "EAGLE3"
    assert sim["cuda_graph_max_bs_decode"] == real["cuda_graph_max_bs_decode"] == 8


def _real_generate() -> tuple[dict, list[dict], list[dict]]:
    single: dict = {}
    batch: list[dict] = []
    chunks: list[dict] = []
    for line in (REAL / "generate.jsonl").read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if line.startswith("data: {"):
            chunks.append(json.loads(line[6:]))
        elif line.startswith("{"):
            single = json.loads(line)
        elif line.startswith("["):
            batch = json.loads(line)
    return single, batch, chunks


def test_meta_info_shape_matches_real(run: Run) -> None:
    single, batch, chunks = _real_generate()
    assert set(run.single) == set(single) == {"text", "output_ids", "meta_info"}
    assert set(run.single["meta_info"]) == set(single["meta_info"])
    assert [set(b["meta_info"]) for b in run.batch] == [set(b["meta_info"]) for b in batch]
    # streamed: the first chunk, a middle chunk and the final chunk each have the real key set
    assert len(run.chunks) >= 3 and len(chunks) >= 3
    for i in (0, 1, -1):
        assert set(run.chunks[i]["meta_info"]) == set(chunks[i]["meta_info"]), i
    # spec_* only on the final chunk, and the accept length is completion tokens per verify step
    for c in (*run.chunks[:-1], *chunks[:-1]):
        assert not [k for k in c["meta_info"] if k.startswith("spec_")]
    for m in (run.single["meta_info"], single["meta_info"]):
        assert m["spec_accept_length"] == pytest.approx(m["completion_tokens"] / m["spec_verify_ct"])
        assert sum(m["spec_accept_histogram"]) == m["spec_verify_ct"]
        assert m["spec_num_proposed_drafts"] == 3 * m["spec_verify_ct"]
