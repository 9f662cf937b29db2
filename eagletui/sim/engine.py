"""Continuous-batching scheduler loop of the simulator and its ground-truth counters.

The loop runs in the server's asyncio event loop. Each iteration's duration comes from
:mod:`eagletui.sim.perf`; the loop sleeps until the iteration's deadline on a monotonic schedule (deadlines
are accumulated, not re-measured, so pacing does not drift), then hands the produced tokens to the
requests. Tokens are counted in :class:`SimStats` at the moment they are handed to a request's stream,
which is exactly what the HTTP layer sends.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import random
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eagletui.sim import perf
from eagletui.sim.adaptive import AdaptiveSteps
from eagletui.sim.drafters import known_accept
from eagletui.sim.logfmt import SimLog

#: how often a stopped scheduler is looked for (a /proc read per scheduler), and the pause while one is
HELD_LOOK_S = 0.05

WORDS = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et "
    "dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea "
    "commodo consequat duis aute irure in reprehenderit voluptate velit esse cillum eu fugiat nulla pariatur "
    "excepteur sint occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est laborum"
).split()

# Histogram buckets of the real /metrics (shared/fixtures/sglang-0.5.17-h200/metrics.txt).
TTFT_BUCKETS = (
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    2.0,
    4.0,
    6.0,
    8.0,
    10.0,
    20.0,
    40.0,
    60.0,
    80.0,
    100.0,
    200.0,
    400.0,
)
E2E_BUCKETS = (*TTFT_BUCKETS, 600.0, 1200.0, 1800.0, 2400.0)


class Histogram:
    """Cumulative Prometheus histogram per label value (``is_streaming``)."""

    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts: dict[str, list[int]] = {}
        self.sums: dict[str, float] = {}

    def observe(self, key: str, value: float) -> None:
        counts = self.counts.setdefault(key, [0] * (len(self.buckets) + 1))
        idx = next((i for i, b in enumerate(self.buckets) if value <= b), len(self.buckets))
        counts[idx] += 1
        self.sums[key] = self.sums.get(key, 0.0) + value


def _streaming(r: SimRequest) -> str:
    return "true" if r.streaming else "false"


def count_prompt_tokens(text: str | None = None, input_ids: list[int] | None = None) -> int:
    if input_ids is not None:
        return max(1, len(input_ids))
    return max(1, round(len(text or "") / 4))


@dataclass(eq=False)
class SimRequest:
    prompt_tokens: int
    max_new_tokens: int
    target_len: int
    prompt_key: str = ""
    rid: str = field(default_factory=lambda: uuid.uuid4().hex)
    internal: bool = False  # warmup / health probes: not in /sim/stats
    cached_tokens: int = 0
    created: float = field(default_factory=time.monotonic)
    first_token_t: float | None = None
    last_token_t: float | None = None
    completion_tokens: int = 0
    output_ids: list[int] = field(default_factory=list)
    verify_ct: int = 0
    decode_tokens: int = 0
    streaming: bool = False
    #: accepted draft tokens per verify step → count (meta_info ``spec_accept_histogram``)
    accept_hist: list[int] = field(default_factory=list)
    received_wall: float = field(default_factory=time.time)
    prefill_wall: float | None = None
    finished_wall: float | None = None
    finished: bool = False
    aborted: bool = False
    updates: asyncio.Queue = field(default_factory=asyncio.Queue)

    def words(self, n: int | None = None) -> list[str]:
        ids = self.output_ids if n is None else self.output_ids[:n]
        return [WORDS[i % len(WORDS)] for i in ids]

    def text(self, n: int | None = None) -> str:
        return " ".join(self.words(n))

    @property
    def remaining(self) -> int:
        return self.target_len - self.completion_tokens

    def finish_reason(self) -> dict[str, Any] | None:
        if not self.finished:
            return None
        if self.completion_tokens >= self.max_new_tokens:
            return {"type": "length", "length": self.max_new_tokens}
        return {"type": "stop", "matched": 2}


class SimStats:
    """Ground-truth counters since start or the last ``/flush_cache`` (non-internal requests only)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.output_tokens = 0
        self.decode_tokens = 0
        self.verify_ct = 0
        self.prompt_tokens = 0
        self.requests_started = 0
        self.requests_finished = 0
        self.first_request_t: float | None = None
        self.first_token_t: float | None = None
        self.last_token_t: float | None = None
        self.per_request: deque[dict[str, Any]] = deque(maxlen=512)

    def snapshot(self) -> dict[str, Any]:
        window = None
        tok_s = None
        if self.first_request_t is not None and self.last_token_t is not None:
            window = self.last_token_t - self.first_request_t
            tok_s = self.output_tokens / window if window > 0 else None
        per = list(self.per_request)
        rates = [r["decode_tok_s"] for r in per if r["decode_tok_s"] is not None]
        return {
            "output_tokens": self.output_tokens,
            "decode_tokens": self.decode_tokens,
            "prompt_tokens": self.prompt_tokens,
            "verify_ct": self.verify_ct,
            "accept_len": (self.output_tokens / self.verify_ct) if self.verify_ct else None,
            "decode_accept_len": (self.decode_tokens / self.verify_ct) if self.verify_ct else None,
            "requests_started": self.requests_started,
            "requests_finished": self.requests_finished,
            "window_s": window,
            "output_tok_s": tok_s,
            "mean_request_decode_tok_s": (sum(rates) / len(rates)) if rates else None,
            "per_request": per,
        }


class Engine:
    """Scheduler + TP0 stats reporter."""

    def __init__(
        self,
        args: Any,
        cfg: perf.PerfConfig,
        log: SimLog,
        *,
        max_running: int,
        max_total_tokens: int,
        env: dict[str, str],
        seed: int = 0,
    ) -> None:
        self.args = args
        self.cfg = cfg
        self.log = log
        self.max_running = max_running
        self.max_total_tokens = max_total_tokens
        self.chunked_prefill = getattr(args, "chunked_prefill_size", None) or 8192
        self.interval = max(1, int(getattr(args, "decode_log_interval", 40) or 40))
        self.log_iters = env.get("SGLANG_LOG_FORWARD_ITERS", "").strip().lower() in ("1", "true", "yes")
        #: SGLANG_RECORD_STEP_TIME (0.5.17 metrics_reporter.py): seconds per decode iteration at each
        #: logged batch size, the gap between two decode log lines ÷ the log interval
        self.record_step_time = env.get("SGLANG_RECORD_STEP_TIME", "").strip().lower() in ("1", "true", "yes")
        self.step_time_dict: dict[int, list[float]] = {}
        self.rng = random.Random(seed * 7919 + 17)
        self.len_rng = random.Random(seed * 104729 + 3)
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.wake = asyncio.Event()
        self.stats = SimStats()
        self.forward_ct = 0
        self.decode_ct = 0
        self._next: float | None = None
        self._seen_prompts: set[str] = set()
        # metrics (Prometheus / server_info)
        self.last_gen_throughput = 0.0
        self.last_accept_len: float | None = None
        self.last_accept_rate: float | None = None
        self.avg_spec_accept_length: float | None = None
        self.cum_accept_tokens = 0
        self.cum_accept_count = 0
        # Prometheus counters, by ``is_streaming``: like sglang's TokenizerMetricsCollector
        # (sglang/srt/observability/metrics_collector.py:observe_one_finished_request) they grow when a
        # request FINISHES, by its totals; spec_verify_calls by the request's verify count.
        self.gen_tokens_total: dict[str, int] = {}
        self.prompt_tokens_total: dict[str, int] = {}
        self.requests_total: dict[str, int] = {}
        self.cached_tokens_total = 0
        self.verify_calls_total = 0
        self.graph_passes: dict[str, int] = {}
        self.ttft = Histogram(TTFT_BUCKETS)
        self.e2e = Histogram(E2E_BUCKETS)
        self.prefill_graph = False
        self.prefill_graph_max_tokens = 0
        self.profiler: Any = None  # eagletui.sim.profiler.SimProfiler, set by the server
        #: whether a scheduler process is stopped (Children.scheduler_stopped, set by the server)
        self.held: Callable[[], bool] | None = None
        self._held_at, self._held_now = float("-inf"), False
        self._interval_tokens = 0
        self._interval_req_rounds = 0
        self._interval_accepted = 0  # bonus + correct drafts, a cut verify's in full (SGLang's count)
        self._last_log_t = time.monotonic()
        self._rid = itertools.count()
        self.task: asyncio.Task | None = None
        # CUDA graphs cover batches up to the largest captured size; a larger batch runs eagerly and its
        # Decode line says ``cuda graph: False`` (SGLang's can_run_cuda_graph)
        self.graph_bs = sorted(set(getattr(args, "cuda_graph_bs_decode", None) or [])) or None
        self.graph_max_bs = int(max(self.graph_bs) if self.graph_bs else getattr(args, "cuda_graph_max_bs_decode", 0) or 0)
        self.last_graph = cfg.cuda_graph
        #: positions the draft was trained on (``--sim-draft-context``): past them acceptance falls
        self.draft_context = int(getattr(args, "sim_draft_context", None) or 0)
        #: a drafter of known acceptance (``--sim-drafter``, :mod:`eagletui.sim.drafters`)
        self.drafter = str(getattr(args, "sim_drafter", None) or "")
        self.adaptive: AdaptiveSteps | None = None
        if cfg.spec and cfg.topk == 1 and getattr(args, "speculative_adaptive", False):
            self.adaptive = AdaptiveSteps(
                cfg.num_steps,
                getattr(args, "speculative_adaptive_config", None),
                self.graph_bs,
                str(getattr(args, "sim_version", "") or ""),
            )

    # --- public -------------------------------------------------------------------------------------

    def start(self) -> None:
        self._last_log_t = time.monotonic()
        self.task = asyncio.get_running_loop().create_task(self.run())

    def new_request(
        self,
        *,
        prompt_tokens: int,
        max_new_tokens: int,
        ignore_eos: bool,
        prompt_key: str = "",
        internal: bool = False,
        rid: str | None = None,
    ) -> SimRequest:
        max_new = max(0, int(max_new_tokens))
        if ignore_eos or max_new <= 1:
            target = max_new
        else:
            target = self.len_rng.randint(max(1, (max_new * 3) // 10), max_new)
        req = SimRequest(
            prompt_tokens=prompt_tokens,
            max_new_tokens=max_new,
            target_len=target,
            prompt_key=prompt_key,
            internal=internal,
        )
        if rid:
            req.rid = rid
        return req

    def submit(self, req: SimRequest) -> None:
        if not req.internal:
            if self.stats.first_request_t is None:
                self.stats.first_request_t = req.created
            self.stats.requests_started += 1
            self.stats.prompt_tokens += req.prompt_tokens
        if req.target_len <= 0:
            req.finished = True
            self._on_finish(req)
            req.updates.put_nowait(0)
            return
        self.waiting.append(req)
        self.wake.set()

    def abort(self, req: SimRequest) -> None:
        if req.finished:
            return
        req.aborted = True
        req.finished = True
        self._on_finish(req)
        if req in self.waiting:
            self.waiting.remove(req)
        if req in self.running:
            self.running.remove(req)

    @property
    def busy(self) -> bool:
        return bool(self.waiting or self.running)

    def flush(self) -> bool:
        if self.busy:
            return False
        self.stats.reset()
        self._seen_prompts.clear()
        self.cum_accept_tokens = 0
        self.cum_accept_count = 0
        self.avg_spec_accept_length = None
        self._interval_tokens = self._interval_req_rounds = self._interval_accepted = 0
        return True

    def token_usage(self) -> tuple[int, float]:
        used = sum(r.prompt_tokens + r.completion_tokens for r in self.running)
        return used, used / max(self.max_total_tokens, 1)

    # --- loop ---------------------------------------------------------------------------------------

    async def _pace(self, dt_s: float) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._next is None or now - self._next > 0.1:
            self._next = now  # idle (or badly behind): restart the schedule, never burst to catch up
        self._next += dt_s
        delay = self._next - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)

    def _held(self) -> bool:
        """A scheduler process is stopped (``held``, looked at every ``HELD_LOOK_S`` at most)."""
        if self.held is None:
            return False
        now = time.monotonic()
        if now - self._held_at >= HELD_LOOK_S:
            self._held_at, self._held_now = now, self.held()
        return self._held_now

    async def run(self) -> None:
        while True:
            if self._held():
                # SIGSTOP of a scheduler: no batch runs, requests wait; the HTTP side still answers
                self._next = None
                await asyncio.sleep(HELD_LOOK_S)
                continue
            if not self.busy:
                self._next = None
                self.wake.clear()
                await self.wake.wait()
                continue
            admitted = self._admit()
            if admitted:
                await self._prefill(admitted)
            elif self.running:
                await self._decode()
            else:
                await asyncio.sleep(0)

    def _admit(self) -> list[SimRequest]:
        out: list[SimRequest] = []
        budget = self.chunked_prefill
        while self.waiting and len(self.running) + len(out) < self.max_running:
            req = self.waiting[0]
            if out and req.prompt_tokens > budget:
                break
            self.waiting.popleft()
            if req.aborted:
                continue
            if req.prompt_key and req.prompt_key in self._seen_prompts:
                req.cached_tokens = max(0, req.prompt_tokens - 1)
            if req.prompt_key:
                self._seen_prompts.add(req.prompt_key)
            budget -= req.prompt_tokens - req.cached_tokens
            out.append(req)
        return out

    async def _prefill(self, batch: list[SimRequest]) -> None:
        new_tokens = sum(r.prompt_tokens - r.cached_tokens for r in batch)
        cached = sum(r.cached_tokens for r in batch)
        dt = perf.prefill_ms(self.cfg, new_tokens) / 1000.0 * perf.noise(self.rng)
        used, usage = self.token_usage()
        used += sum(r.prompt_tokens for r in batch)
        it = f" [{self.forward_ct}]" if self.log_iters else ""
        # 0.5.23 replays prefill CUDA graphs (breakable backend) for extends within the captured buckets.
        graph = self.prefill_graph and 2 <= new_tokens <= self.prefill_graph_max_tokens
        prof = self.profiler is not None and self.profiler.begin("EXTEND")
        mode = "prefill_cuda_graph" if graph else "prefill_none"
        self.graph_passes[mode] = self.graph_passes.get(mode, 0) + 1
        self.log.line(
            f"Prefill batch{it}, #new-seq: {len(batch)}, #new-token: {new_tokens}, #cached-token: {cached}, "
            f"token usage: {used / max(self.max_total_tokens, 1):.2f}, #running-req: {len(self.running)}, "
            f"#queue-req: {len(self.waiting)}, #pending-token: 0, cuda graph: {graph}, "
            f"input throughput (token/s): {new_tokens / dt if dt > 0 else 0.0:.2f}",
            rank=0,
        )
        t0 = time.time()
        await self._pace(dt)
        if prof:
            parts = {"forward": perf.prefill_ms(self.cfg, new_tokens)}
            self.profiler.on_step("EXTEND", len(batch), new_tokens, t0, time.time() - t0, parts)
        self.forward_ct += 1
        for r in batch:
            if r.aborted:
                continue
            r.prefill_wall = time.time()
            self.cached_tokens_total += r.cached_tokens
            self.running.append(r)
            self._emit(r, 1, decode=False)
        self._reap()

    def _iteration_cfg(self, bs: int) -> perf.PerfConfig:
        """This iteration's configuration: adaptive speculation's step count for the batch (activating its
        tier first, as ``activate_step_by_batch`` does, with SGLang's line for a swap), eager when the
        batch is larger than every captured graph."""
        cfg = self.cfg
        if self.adaptive is not None:
            swap = self.adaptive.activate(bs)
            if swap is not None:
                self.log.line(
                    f"Switch adaptive runtime state: steps {swap[0]} -> {swap[1]}, "
                    f"draft_tokens {swap[0] + 1} -> {swap[1] + 1}",
                    rank=0,
                )
            steps = self.adaptive.active
            cfg = dataclasses.replace(cfg, spec=steps > 0, num_steps=max(1, steps), num_draft_tokens=max(2, steps + 1))
        if cfg.cuda_graph and self.graph_max_bs and bs > self.graph_max_bs:
            cfg = dataclasses.replace(cfg, cuda_graph=False)
        return cfg

    def _accept_len(self, cfg: perf.PerfConfig, r: SimRequest) -> int:
        if self.drafter and cfg.spec:
            return known_accept(self.drafter, perf.accept_depth(cfg), r.prompt_key)
        if self.draft_context and r.prompt_tokens + r.completion_tokens > self.draft_context:
            return perf.sample_accept_len(dataclasses.replace(cfg, draft_p=cfg.draft_p / 3.0), self.rng)
        return perf.sample_accept_len(cfg, self.rng)

    async def _decode(self) -> None:
        bs = len(self.running)
        cfg = self._iteration_cfg(bs)
        self.last_graph = cfg.cuda_graph
        raw = [self._accept_len(cfg, r) for r in self.running]
        mean_raw = sum(raw) / bs
        dt = perf.iteration_ms(cfg, bs, mean_raw) / 1000.0 * perf.noise(self.rng)
        prof = self.profiler is not None and self.profiler.begin("DECODE")
        t0 = time.time()
        await self._pace(dt)
        if prof:
            parts = (
                perf.spec_parts_ms(cfg, bs, mean_raw) if cfg.spec else {"forward": perf.decode_ms(cfg, bs)}
            )
            tokens = bs * (cfg.num_draft_tokens if cfg.spec else 1)
            self.profiler.on_step("DECODE", bs, tokens, t0, time.time() - t0, parts)
        self.forward_ct += 1
        self.decode_ct += 1
        mode = "decode_cuda_graph" if cfg.cuda_graph else "decode_none"
        self.graph_passes[mode] = self.graph_passes.get(mode, 0) + 1
        produced = accepted = 0
        batch = list(self.running)
        for r, drafted in zip(batch, raw, strict=False):
            if r.aborted:
                continue
            n = min(drafted, r.remaining)
            if cfg.spec:
                r.verify_ct += 1
                # the drafts the verify accepted, counted before max_new_tokens cuts its tokens: the real
                # 0.5.17 server's histogram puts a cut last verify in full ([0, 0, 516] for 12 requests of
                # 128 tokens at steps 2; tests/fixtures/real-sglang-0.5.17-pair-work)
                acc = max(0, drafted - 1)
                if len(r.accept_hist) <= acc:
                    r.accept_hist.extend([0] * (acc + 1 - len(r.accept_hist)))
                r.accept_hist[acc] += 1
                if not r.internal:
                    self.stats.verify_ct += 1
                accepted += drafted
            produced += n
            self._emit(r, n, decode=True)
        self._interval_tokens += produced
        self._interval_req_rounds += len(batch)
        self._interval_accepted += accepted
        if cfg.spec:
            self.cum_accept_tokens += accepted
            self.cum_accept_count += len(batch)
        if self.adaptive is not None:
            moved = self.adaptive.on_verify([max(0, n - 1) for n in raw] if cfg.spec else [0] * len(raw), bs)
            if moved is not None:
                self.log.line(
                    f"Adaptive spec params updated: steps {moved[0]} -> {moved[1]} (ema_accept_len={moved[2]:.2f})",
                    rank=0,
                )
        if self.decode_ct % self.interval == 0:
            self._log_decode()
        self._reap()

    def _emit(self, r: SimRequest, n: int, *, decode: bool) -> None:
        if n <= 0:
            return
        now = time.monotonic()
        start = len(r.output_ids)
        r.output_ids.extend(self.len_rng.randrange(len(WORDS)) + 1000 * ((start + i) % 7) for i in range(n))
        r.completion_tokens += n
        if decode:
            r.decode_tokens += n
        if r.first_token_t is None:
            r.first_token_t = now
            self.ttft.observe(_streaming(r), now - r.created)
        r.last_token_t = now
        if r.completion_tokens >= r.target_len:
            r.finished = True
            self._on_finish(r)
        if not r.internal:
            st = self.stats
            st.output_tokens += n
            if decode:
                st.decode_tokens += n
            if st.first_token_t is None:
                st.first_token_t = now
            st.last_token_t = now
            if r.finished:
                st.requests_finished += 1
                span = (r.last_token_t - r.first_token_t) if r.first_token_t is not None else 0.0
                st.per_request.append(
                    {
                        "rid": r.rid,
                        "completion_tokens": r.completion_tokens,
                        "verify_ct": r.verify_ct,
                        "ttft_s": r.first_token_t - r.created,
                        "e2e_s": now - r.created,
                        "decode_tok_s": (r.completion_tokens - 1) / span if span > 0 else None,
                        "tok_s": r.completion_tokens / (now - r.created) if now > r.created else None,
                    }
                )
        r.updates.put_nowait(r.completion_tokens)

    def _on_finish(self, r: SimRequest) -> None:
        key = _streaming(r)
        r.finished_wall = time.time()
        self.prompt_tokens_total[key] = self.prompt_tokens_total.get(key, 0) + r.prompt_tokens
        self.gen_tokens_total[key] = self.gen_tokens_total.get(key, 0) + r.completion_tokens
        self.requests_total[key] = self.requests_total.get(key, 0) + 1
        if r.verify_ct > 0:
            self.verify_calls_total += r.verify_ct
        self.e2e.observe(key, time.monotonic() - r.created)

    def _reap(self) -> None:
        self.running = [r for r in self.running if not r.finished]

    def _log_decode(self) -> None:
        now = time.monotonic()
        elapsed = max(now - self._last_log_t, 1e-9)
        self.last_gen_throughput = self._interval_tokens / elapsed
        if self.record_step_time:
            self.step_time_dict.setdefault(len(self.running), []).append(elapsed / self.interval)
        used, usage = self.token_usage()
        spec = ""
        if self.cfg.spec:
            a = self._interval_accepted / max(self._interval_req_rounds, 1)
            rate = perf.accept_rate(self.cfg, a)
            self.last_accept_len, self.last_accept_rate = a, rate
            self.avg_spec_accept_length = self.cum_accept_tokens / max(self.cum_accept_count, 1)
            spec = f"accept len: {a:.2f}, accept rate: {rate:.2f}, "
        it = f" [{self.forward_ct}]" if self.log_iters else ""
        self.log.line(
            f"Decode batch{it}, #running-req: {len(self.running)}, #token: {used}, token usage: {usage:.2f}, "
            f"{spec}cuda graph: {self.last_graph}, gen throughput (token/s): {self.last_gen_throughput:.2f}, "
            f"#queue-req: {len(self.waiting)}",
            rank=0,
        )
        self._last_log_t = now
        self._interval_tokens = self._interval_req_rounds = self._interval_accepted = 0
