"""The simulator's ``/metrics`` text, in the shape of SGLang's Prometheus exposition.

The longest single answer the simulator builds (every gauge, counter and histogram eagletui's metrics
poller reads), so it sits apart from the HTTP handlers in :mod:`eagletui.sim.httpapi`, which serves it.
"""

from __future__ import annotations

import time

from eagletui.sim.engine import Engine, Histogram
from eagletui.sim.plan import GRAPH_PHASES, Plan
from eagletui.sim.serverstate import ServerState

SCHED_LABELS = ("engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank")


def _fmt_labels(labels: dict[str, str]) -> str:
    # prometheus_client's multiprocess collector (sglang sets PROMETHEUS_MULTIPROC_DIR) sorts label names.
    return ",".join(f'{k}="{labels[k]}"' for k in sorted(labels))


class _Exposition:
    """The exposition text being written, with the label sets of the tokenizer's families (``base``) and
    the scheduler's (``sched``)."""

    def __init__(self, model: str) -> None:
        self.base = {"engine_type": "unified", "model_name": model}
        self.sched = {**self.base, "moe_ep_rank": "0", "pp_rank": "0", "tp_rank": "0"}
        self.out: list[str] = []

    def head(self, name: str, kind: str, help_: str) -> None:
        self.out.append(f"# HELP {name} {help_}")
        self.out.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, labels: dict[str, str], value: float) -> None:
        self.out.append(f"{name}{{{_fmt_labels(labels)}}} {float(value)}")

    def gauge(self, name: str, value: float, help_: str, labels: dict[str, str] | None = None) -> None:
        self.head(name, "gauge", help_)
        self.sample(name, labels or self.sched, value)

    # A labelled family without samples yet is left out, as prometheus_client's multiprocess collector does.
    def by_streaming(self, name: str, values: dict[str, int], help_: str) -> None:
        if not values:
            return
        self.head(name, "counter", help_)
        for key in sorted(values):
            self.sample(name, {**self.base, "is_streaming": key}, values[key])

    def histogram(self, name: str, hist: Histogram, help_: str) -> None:
        if not hist.counts:
            return
        self.head(name, "histogram", help_)
        for key in sorted(hist.counts):
            labels = {**self.base, "is_streaming": key}
            counts = hist.counts[key]
            self.sample(f"{name}_sum", labels, hist.sums.get(key, 0.0))
            cum = 0
            for b, c in zip(hist.buckets, counts, strict=False):
                cum += c
                self.sample(f"{name}_bucket", {**labels, "le": str(float(b))}, cum)
            self.sample(f"{name}_bucket", {**labels, "le": "+Inf"}, sum(counts))
            self.sample(f"{name}_count", labels, sum(counts))

    def text(self) -> str:
        return "\n".join(self.out) + "\n"


def metrics_text(st: ServerState) -> str:
    """``/metrics`` in the shape of the real one (shared/fixtures/sglang-0.5.17-h200/metrics.txt): scheduler
    gauges labelled ``engine_type, model_name, moe_ep_rank, pp_rank, tp_rank``; tokenizer counters and
    histograms labelled ``engine_type, model_name`` (+ ``is_streaming``), counted when a request finishes
    (sglang/srt/observability/metrics_collector.py:observe_one_finished_request), so
    ``generation_tokens_total / spec_verify_calls_total`` ≈ the accept length. Multiprocess mode: the
    HELP/TYPE lines name counters with ``_total`` and there are no ``_created`` samples (as recorded)."""
    eng, plan = st.engine, st.plan
    x = _Exposition(plan.served_model_name)
    gen = eng.last_gen_throughput if time.monotonic() - eng._last_log_t < 10 or eng.busy else 0.0
    _startup_families(x, plan)
    _request_families(x, eng, plan)
    _scheduler_gauges(x, eng, plan, gen)
    return x.text()


def _startup_families(x: _Exposition, plan: Plan) -> None:
    """The engine's startup time by phase and its CUDA graph capture time by phase."""
    base = x.base
    x.head("sglang:startup_time_seconds", "gauge", "Engine startup duration by phase in seconds.")
    t = plan.timings
    for phase in ("load_weight", "kv_cache_allocation", "scheduler_e2e", "tokenizer_e2e"):
        x.sample("sglang:startup_time_seconds", {**base, "phase": phase}, t.get(phase, 0.0))
    x.head(
        "sglang:startup_cuda_graph_time_seconds", "gauge", "CUDA graph capture duration by phase in seconds."
    )
    for phase in GRAPH_PHASES:
        x.sample(
            "sglang:startup_cuda_graph_time_seconds", {**base, "phase": phase}, t.get(f"graph:{phase}", 0.0)
        )


def _request_families(x: _Exposition, eng: Engine, plan: Plan) -> None:
    """What finished requests add up to: latency histograms, token and request counters, graph passes."""
    base, sched = x.base, x.sched
    x.histogram(
        "sglang:time_to_first_token_seconds", eng.ttft, "Histogram of time to first token in seconds."
    )
    x.histogram(
        "sglang:e2e_request_latency_seconds", eng.e2e, "Histogram of End-to-end request latency in seconds"
    )
    if eng.graph_passes:
        x.head(
            "sglang:cuda_graph_passes_total",
            "counter",
            "Total number of forward passes categorized by CUDA graph.",
        )
    for mode in sorted(eng.graph_passes):
        x.sample("sglang:cuda_graph_passes_total", {**sched, "mode": mode}, eng.graph_passes[mode])
    x.by_streaming(
        "sglang:prompt_tokens_total", eng.prompt_tokens_total, "Number of prefill tokens processed."
    )
    x.by_streaming(
        "sglang:generation_tokens_total", eng.gen_tokens_total, "Number of generation tokens processed."
    )
    if plan.spec and eng.verify_calls_total:
        x.head(
            "sglang:spec_verify_calls_total", "counter", "Number of speculative decoding verification calls."
        )
        x.sample("sglang:spec_verify_calls_total", base, eng.verify_calls_total)
    x.by_streaming("sglang:num_requests_total", eng.requests_total, "Number of requests processed.")
    if eng.cached_tokens_total:
        x.head(
            "sglang:cached_tokens_total",
            "counter",
            "Number of cached prompt tokens by source (device/host/storage).",
        )
        x.sample("sglang:cached_tokens_total", {**base, "cache_source": "device"}, eng.cached_tokens_total)


def _scheduler_gauges(x: _Exposition, eng: Engine, plan: Plan, gen: float) -> None:
    """The scheduler's gauges: memory, sizes, queues, throughput, token usage and speculative decoding."""
    sched, gauge = x.sched, x.gauge
    gauge(
        "sglang:max_total_num_tokens",
        plan.max_total_tokens,
        "Maximum total number of tokens in the KV cache pool.",
    )
    gauge(
        "sglang:weight_memory_usage_gb", plan.weight_gb + plan.draft_gb, "Memory used by model weights in GB."
    )
    gauge(
        "sglang:kv_cache_memory_usage_gb",
        plan.kv_gb + plan.draft_kv_gb,
        "Memory used by the KV cache pools in GB.",
    )
    x.head("sglang:graph_memory_usage_gb", "gauge", "Memory used by captured device graphs in GB.")
    for phase in GRAPH_PHASES:
        x.sample("sglang:graph_memory_usage_gb", {**sched, "phase": phase}, plan.graph_gb.get(phase, 0.0))
    gauge("sglang:page_size", plan.args.page_size or 1, "KV cache page size in tokens.")
    gauge("sglang:context_len", plan.context_len, "Maximum context length.")
    gauge("sglang:num_running_reqs", len(eng.running), "The number of running requests.")
    gauge("sglang:num_queue_reqs", len(eng.waiting), "The number of requests in the waiting queue.")
    gauge("sglang:num_grammar_queue_reqs", 0, "The number of requests in the grammar waiting queue.")
    gauge("sglang:gen_throughput", gen, "The generation throughput (token/s).")
    used, usage = eng.token_usage()
    gauge("sglang:token_usage", usage, "The token usage.")
    gauge("sglang:num_used_tokens", used, "The number of used tokens.")
    if plan.spec:
        gauge(
            "sglang:spec_accept_length",
            eng.last_accept_len or 0.0,
            "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).",
        )
        gauge(
            "sglang:spec_accept_rate",
            eng.last_accept_rate or 0.0,
            "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch).",
        )
        # ``_active_spec_config_snapshot`` reads the worker's steps: the adaptive tier running now
        active = eng.adaptive.active if eng.adaptive is not None else None
        gauge("sglang:spec_num_steps", plan.steps if active is None else active, "Currently active speculative_num_steps.")
        gauge(
            "sglang:spec_num_draft_tokens",
            plan.ndt if active is None else active + 1,
            "Currently active speculative_num_draft_tokens (decouples from steps under topk>1).",
        )
    gauge("sglang:utilization", 1.0 if eng.busy else 0.0, "The utilization.")
    gauge(
        "sglang:is_cuda_graph", 1.0 if plan.cfg.cuda_graph else 0.0, "Whether the batch is using CUDA graph."
    )
