"""vLLM's log format (0.6 – 0.25): the :class:`~eagletui.core.logs.seam.LogFormat` of ``vllm serve``.

Built from real vLLM output posted in public issues and repositories (``tests/fixtures/vllm``). What
differs from SGLang, and where the seam takes it:

* Records: ``LEVEL MM-DD HH:MM:SS [file.py:N] message`` (``file.py:N]`` without the bracket before
  0.8), since 0.10 behind the writer's actor ``(EngineCore_DP0 pid=1) ``. Actors decide ranks:
  ``Worker_TP3``/``VllmWorker rank=3`` are ranks; the API server never is; the engine core is the
  only rank of a TP=1 server and none beside its workers (a :class:`_Reader` notices which).
* Startup: the API server's ``non-default args`` (or, before it existed, the engine's ``Initializing
  … LLM engine (vX) with config:``), weight load per rank (target, then ``Loading drafter model``),
  ``torch.compile`` and the profiling run, KV cache sizing, CUDA-graph capture shown only as bars
  (``(mixed prefill-decode, PIECEWISE)`` and ``(decode, FULL)``: two phases that a bar starts),
  ``init engine … took``, then the API server's routes and uvicorn's ``Application startup complete``
  (ready; there is no warmup request).
* Serving: ``Engine 000: Avg prompt throughput …, Avg generation throughput …`` every interval and,
  with speculation, ``SpecDecoding metrics: …`` on the next line. The two are one sample: the reader
  holds the stats line until its metrics line comes. The metrics line changed wording three times
  (V0 ``Speculative metrics: Draft acceptance rate: 0.642, System efficiency …``; 0.8–0.10
  ``SpecDecoding metrics: Draft acceptance rate: 38.8%, Mean acceptance length …``; 0.11+ ``Mean
  acceptance length …, Avg Draft acceptance rate: 17.5%``) and is read as key/value pairs, so the
  next wording still parses.
* Failures: every traceback line is logged at ERROR level with the prefix (``ERROR … [core.py:718]
  File …``), so those records continue the traceback (``Rec.cont``); the root cause is the engine
  core's first exception, not ``Engine core initialization failed. See root cause above`` that the API
  server prints last.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from eagletui.core.logs.formats import progress
from eagletui.core.logs.seam import (
    DECODE,
    ERROR,
    HTTP,
    PHASE,
    PROGRESS,
    SCAN_LIMIT,
    TRACEBACK,
    WARNING,
    Failure,
    LaunchFacts,
    LineReader,
    LogFormat,
    Rec,
    VersionGuess,
)

# ------------------------------------------------------------------ record prefix

#: ``(Actor pid=N) `` / ``(VllmWorker rank=2 pid=N) `` / Ray's ``(Actor pid=N, ip=…) ``.
_ACTOR = r"\((?P<actor>[A-Za-z_][\w.-]{0,63})(?: rank=(?P<arank>\d{1,6}))? pid=\d{1,10}(?:, ip=[\d.:a-f]{1,64})?\) *"
ACTOR_RE = re.compile(_ACTOR)
#: The record start: level, ``MM-DD HH:MM:SS`` (milliseconds in some builds), ``[file.py:N]``.
PREFIX_RE = re.compile(
    r"(?:" + _ACTOR + r")?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) +"
    r"(?P<date>\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{3})\d*)? "
    r"\[?(?P<file>[\w./-]{1,120}):(?P<lineno>\d{1,7})\] ?"
)
_RANK_ACTOR_RE = re.compile(r"(?:Worker|VllmWorker)\w*?(?:_TP(?P<tp>\d+))?")
_UVICORN_LEVELS = ("INFO:     ", "ERROR:    ", "WARNING:  ", "DEBUG:    ", "CRITICAL: ")
#: uvicorn's access line as vLLM 0.10 formats it (``INFO  127.0.0.1:53300 "POST …" 200 OK``)
_ACCESS_RE = re.compile(
    r'(?:INFO:?\s+)?[\w.:\[\]-]{3,64}(?: -)? "(?:GET|POST|PUT|DELETE|HEAD|OPTIONS) \S+ HTTP/'
)


def _rank_of_actor(actor: str, arank: str | None) -> tuple[bool, str, int | None]:
    """(is a rank, rank key, rank number) of a writer, before the reader knows of workers."""
    if actor.startswith("APIServer") or actor.startswith("api_server"):
        return False, "", None
    m = _RANK_ACTOR_RE.fullmatch(actor) or _RANK_ACTOR_RE.match(actor)
    if m is not None and actor.startswith(("Worker", "VllmWorker")):
        if arank is not None:
            return True, f"TP{arank}", int(arank)
        if m.group("tp") is not None:
            return True, f"TP{m.group('tp')}", int(m.group("tp"))
        return True, actor, None  # a worker without a number (V0's VllmWorkerProcess)
    return True, "", None  # the engine core (the only rank until workers show up), Ray's engine


# ------------------------------------------------------------------ messages

# (substring, tag, kind), first match wins; checked on prefixed messages only.
MSG_RULES: tuple[tuple[str, str, str], ...] = (
    ("non-default args: ", "server_args", PHASE),
    ("LLM engine (v", "engine_config", PHASE),
    ("vLLM API server version ", "version", PHASE),
    ("distributed_init_method=", "dist_begin", PHASE),
    (" is assigned as DP rank", "dist_end", PHASE),
    ("Starting to load model", "load_begin", PHASE),
    ("Loading drafter model", "load_begin", PHASE),
    ("Loading weights took", "load_end", PHASE),
    ("Loading model weights took", "load_end", PHASE),
    ("Model loading took", "load_commit", PHASE),
    ("for vLLM's torch.compile", "compile_begin", PHASE),
    ("torch.compile takes", "compile_end", PHASE),
    ("torch.compile took", "compile_end", PHASE),
    ("Dynamo bytecode transform time", "compile_info", PHASE),
    ("Compiling a graph for", "compile_info", PHASE),
    ("Initial profiling/warmup run took", "compile_info", PHASE),
    ("Profiling CUDA graph memory", "kv_alloc", PHASE),
    ("Available KV cache memory", "kv_alloc", PHASE),
    ("GPU KV cache size", "pool_end", PHASE),
    ("# GPU blocks:", "pool_end", PHASE),
    ("Maximum concurrency for", "kv_info", PHASE),
    ("Capturing the model for CUDA graphs", "capture_begin", PHASE),
    ("Graph capturing finished", "summary", PHASE),
    ("init engine (profile, create kv cache", "timings", PHASE),
)
_VERSION_RE = re.compile(r"(?:version |LLM engine \(v)(\d+\.\d+(?:\.\d+)?(?:[.+\w-]*)?)")
_URL_RE = re.compile(r"on (https?://\S+)")
_STATS_RE = re.compile(r"Avg prompt throughput: ")
_SPEC_HEADS = ("SpecDecoding metrics: ", "Speculative metrics: ")
# A key of a "Key: value, Key: value" stats line (a value such as "0.983, 0.949" holds commas).
_KV_SPLIT_RE = re.compile(r",\s+(?=[A-Z#][\w #/-]{0,48}: )")
_NUM_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+|nan|inf)", re.IGNORECASE)

# argparse's "prog: error: …" (``vllm serve: error: unrecognized arguments: --x``)
_ARGPARSE_RE = re.compile(
    r"^[\w./ -]{1,80}: error: (?:unrecognized arguments|the following arguments are required|argument |"
    r"ambiguous option|invalid choice|expected |one of the arguments)"
)


def _split_kv(body: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in _KV_SPLIT_RE.split(body.strip().rstrip(".,")):
        k, _, v = part.partition(": ")
        if v:
            out[k.strip()] = v.strip()
    return out


def _num(text: str | None) -> float | None:
    if not text:
        return None
    m = _NUM_RE.match(text.strip())
    if m is None:
        return None
    try:
        v = float(m.group())
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parse_stats(msg: str) -> dict[str, Any] | None:
    """The fields of an ``Avg prompt throughput …`` line as DecodeStats fields, None if incomplete.

    An interval with nothing running and nothing generated is an idle tick, not a decode sample.
    """
    i = msg.find("Avg prompt throughput: ")
    if i < 0:
        return None
    kv = _split_kv(msg[i:])
    gen = _num(kv.get("Avg generation throughput"))
    if gen is None:
        return None
    running = _num(kv.get("Running"))
    waiting = _num(kv.get("Waiting") or kv.get("Pending"))
    usage = _num(kv.get("GPU KV cache usage"))
    run = int(running) if running is not None and 0 <= running < 1e9 else 0
    if gen <= 0 and run == 0:
        return {}
    return {
        "gen_throughput": gen,
        "running_req": run,
        "queue_req": int(waiting) if waiting is not None and 0 <= waiting < 1e9 else 0,
        "token_usage": None if usage is None else round(usage / 100.0, 6),
    }


def parse_spec(msg: str, steps: int | None = None) -> dict[str, Any] | None:
    """A speculative-decoding metrics line (any of the three wordings) → SpecDecodeStats fields.

    ``accept_len`` is the mean accepted tokens per verify step, bonus token included: printed since
    0.9; before that it is derived when the counts allow (V0: emitted × k / drafted; 0.8:
    1 + k × accepted / drafted, with ``steps`` = k from the launch). ``accept_rate`` is a fraction.
    """
    head = next((h for h in _SPEC_HEADS if h in msg), None)
    if head is None:
        return None
    kv = _split_kv(msg[msg.find(head) + len(head) :])
    if not kv:
        return None
    mean = _num(kv.get("Mean acceptance length"))
    rate_text = kv.get("Avg Draft acceptance rate") or kv.get("Draft acceptance rate")
    rate = _num(rate_text)
    if rate is not None and rate_text is not None and rate_text.rstrip().endswith("%"):
        rate /= 100.0
    accepted = _num(kv.get("Accepted") or kv.get("Number of accepted tokens"))
    drafted = _num(kv.get("Drafted") or kv.get("Number of draft tokens"))
    emitted = _num(kv.get("Number of emitted tokens"))
    k = _num(kv.get("Number of speculative tokens")) or _num(kv.get("Current speculative depth")) or steps
    if mean is None and k and drafted:
        if emitted is not None:
            mean = emitted * k / drafted
        elif accepted is not None:
            mean = 1.0 + k * accepted / drafted
    pos_text = kv.get("Per-position acceptance rate")
    per_pos = tuple(v for v in (_num(x) for x in pos_text.split(",")) if v is not None) if pos_text else ()
    # bounded by what speculation can give: at most k drafted tokens and a bonus token per step
    if mean is not None and not 1.0 <= mean <= (k + 1 if k else 65):
        mean = None
    if rate is not None and not 0.0 <= rate <= 1.0:
        rate = None
    if per_pos and not all(0.0 <= v <= 1.0 for v in per_pos):
        per_pos = ()
    count_ok = accepted is not None and drafted is not None and 0 <= accepted <= drafted < 1e15
    out = {
        "accept_len": None if mean is None else round(mean, 4),
        "accept_rate": None if rate is None else round(rate, 6),
        "accepted": int(accepted) if count_ok and accepted is not None else None,
        "drafted": int(drafted) if count_ok and drafted is not None else None,
        "per_position": per_pos[:64],
        "steps": int(k) if k else None,
        "cumulative": emitted is not None,  # V0 printed totals since start
    }
    if out["accept_len"] is None and out["accept_rate"] is None and out["drafted"] is None:
        return None
    return out


def _capture_bar(head: str) -> dict[str, Any] | None:
    """What graph a ``Capturing … CUDA graph…`` bar captures (None: not a capture bar)."""
    if "Capturing" not in head or "graph" not in head.lower():
        return None
    low = head[: head.find("%") if "%" in head else 200].lower()
    if "capturing prefill cuda graphs" in low or "draft" in low or "speculator" in low:
        return {"draft": True, "what": "decode"}
    if "piecewise" in low or "mixed" in low:
        return {"draft": False, "what": "prefill"}
    return {"draft": False, "what": "decode"}


# ------------------------------------------------------------------ failures

#: (substring, kind, priority, tag). Checked in order; the first hit wins for a line.
FAILURE_RULES: tuple[tuple[str, str, int, str], ...] = (
    ("is less than desired GPU memory utilization", "oom", 92, "gpu_memory_busy"),
    ("larger than the available KV cache memory", "oom", 92, "kv_too_small"),
    ("larger than the maximum number of tokens that can be stored in KV cache", "oom", 92, "kv_too_small"),
    ("No available memory for the cache blocks", "oom", 92, "kv_too_small"),
    ("CUDA out of memory", "oom", 90, "cuda_oom"),
    ("OutOfMemoryError", "oom", 90, "cuda_oom"),
    ("CUDA error: out of memory", "oom", 90, "cuda_oom"),
    ("CUDA error: ", "exception", 79, "cuda_error"),
    ("error: ambiguous option", "bad_args", 88, "ambiguous_option"),
    ("error: unrecognized arguments", "bad_args", 88, "argparse"),
    ("error: argument ", "bad_args", 88, "argparse"),
    ("error: the following arguments are required", "bad_args", 88, "argparse"),
    ("address already in use", "port_in_use", 86, "http_port"),
    ("Address already in use", "port_in_use", 86, "http_port"),
    ("Watchdog caught collective operation timeout", "nccl", 80, "collective_timeout"),
    ("failure detected by watchdog", "nccl", 79, "collective_timeout"),
    ("NCCL error", "nccl", 78, "nccl_error"),
    ("DistBackendError", "nccl", 78, "nccl_error"),
    ("ncclUnhandledCudaError", "nccl", 78, "nccl_error"),
    ("ncclInternalError", "nccl", 78, "nccl_error"),
    ("ncclSystemError", "nccl", 78, "nccl_error"),
    ("ncclRemoteError", "nccl", 78, "nccl_error"),
    ("BackendCompilerFailed", "exception", 64, "compile"),
    ("InductorError", "exception", 64, "compile"),
    ("torch._dynamo.exc", "exception", 64, "compile"),
    ("EngineDeadError", "died", 45, "engine_dead"),
    ("EngineCore encountered an issue", "died", 45, "engine_dead"),
    ("Fatal Python error", "died", 42, "process_killed"),
    (" died, exit code", "died", 40, "worker_died"),
    ("WorkerProc failed to start", "exception", 36, "worker_failed"),
    ("EngineCore failed to start", "exception", 35, "engine_failed"),
    ("Engine core initialization failed", "exception", 34, "engine_init_failed"),
    ("Engine process failed to start", "exception", 34, "engine_init_failed"),
    ("leaked semaphore", "died", 20, "leaked_semaphore"),
    ("leaked shared_memory", "died", 20, "leaked_semaphore"),
    ("terminate called after throwing", "signal", 26, "abort"),
)
_PREFILTER = (
    "memory",
    "Memory",
    "error",
    "Error",
    "ERROR",
    "in use",
    "atchdog",
    "NCCL",
    "nccl",
    "failed",
    "Failed",
    "Dead",
    "issue",
    "semaphore",
    "shared_memory",
    "Fatal",
    "terminate",
    "Inductor",
    "dynamo",
)
#: The last words of a crash: the API server has given up (what it names is above it).
TERMINAL_TAGS = frozenset({"engine_init_failed", "argparse", "ambiguous_option", "http_port", "engine_dead"})
#: Worded by vLLM itself: such a line alone shows that the text is vLLM's output.
OWN_TAGS = frozenset(
    {"gpu_memory_busy", "kv_too_small", "engine_dead", "worker_failed", "engine_failed", "engine_init_failed"}
)
_COMM_RE = re.compile(r"NCCL|HCCL|Gloo|(?<![\w])(?:nccl|gloo|hccl)(?![a-z_])")
_EVIDENCE_RE = re.compile(
    r"\s*File \"[^\"]*/vllm/[^\"]*\", line \d+|usage: vllm |vllm(?: serve)?: error: |\S*api_server\.py: error: "
)
_SHELL_DEATH_RE = re.compile(
    r"(?:\[\d+\][+-]? +\d+ +|\S+: line \d+: +\d+ +)?(?:[Kk]illed|[Ss]egmentation fault|[Aa]borted)"
    r"(?: +\(core dumped\))?(?: {2,}\S.*| *$)"
)


def match_failure(msg: str) -> Failure | None:
    if not any(p in msg for p in _PREFILTER):
        return None
    for sub, kind, prio, tag in FAILURE_RULES:
        if sub in msg:
            return kind, prio, tag
    return None


# Where a traceback frame is in the startup: (needle, phase family); innermost match wins.
FRAME_PHASES: tuple[tuple[str, str], ...] = (
    ("in init_device", "dist_init"),
    ("in init_distributed_environment", "dist_init"),
    ("in initialize_model_parallel", "dist_init"),
    ("in load_model", "load"),
    ("in load_weights", "load"),
    ("/model_loader/", "load"),
    ("/compilation/", "compile"),
    ("in compile_or_warm_up_model", "capture"),
    ("in capture_model", "capture"),
    ("in _dummy_sampler_run", "kv_cache"),
    ("in determine_available_memory", "kv_cache"),
    ("in profile_run", "kv_cache"),
    ("in _initialize_kv_caches", "kv_cache"),
    ("in initialize_from_config", "kv_cache"),
)
_DRAFT_FRAMES = ("/spec_decode/", "eagle.py", "drafter", "proposer")


def frame_phase(line: str) -> tuple[str | None, bool]:
    head = line[:1000]
    fam = next((f for needle, f in FRAME_PHASES if needle in head), None)
    return fam, any(d in head for d in _DRAFT_FRAMES)


def hint_for(kind: str, tag: str, phase: str | None, version: str | None, text: str = "") -> str:
    """What to change in the next ``vllm serve`` launch, by failure and where it happened."""
    if tag == "gpu_memory_busy":
        return "another process holds GPU memory: free it, or lower --gpu-memory-utilization to what is free"
    if tag == "kv_too_small":
        return "the KV cache cannot hold one request of --max-model-len: lower --max-model-len or raise --gpu-memory-utilization"
    if kind == "oom":
        if "sampler" in text:
            return "lower --max-num-seqs (the sampler warmup runs that many requests at once) or --gpu-memory-utilization"
        if phase in ("load_target", "load_draft"):
            return "the weights do not fit: raise --tensor-parallel-size or use a quantized checkpoint"
        if phase and phase.startswith("capture"):
            return "lower --max-cudagraph-capture-size (or --enforce-eager) and --gpu-memory-utilization"
        return "lower --gpu-memory-utilization, --max-num-seqs or --max-model-len"
    if kind == "bad_args":
        return "vllm serve refused a flag: compare with `vllm serve --help=all` of the installed version"
    if kind == "port_in_use":
        return "another process listens on the port: stop it or choose another --port"
    if kind == "nccl":
        return "rerun with NCCL_DEBUG=INFO to see which ranks fail to connect; check NCCL_SOCKET_IFNAME"
    if tag == "compile":
        return "torch.compile failed: --enforce-eager (or -O0) skips it; the traceback names the op"
    if phase == "compile":
        return "the engine core raised while compiling or profiling the model (the traceback names why); --enforce-eager skips torch.compile"
    if kind == "died":
        return "the engine core died: the lines before this one (or dmesg) say why"
    return ""


# ------------------------------------------------------------------ launch facts

_KW_RE = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\w+\([^()]*\)|\{[^{}]*\}|[^,()\[\]{}]+)")


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text.strip()


def parse_args_text(raw: str) -> dict[str, Any]:
    """``{'model': …}`` (``non-default args``) or ``model='…', tensor_parallel_size=1, …`` (the engine
    config) → dict; a ``SpeculativeConfig(method='eagle3', …)`` value becomes a dict too."""
    raw = raw.strip()[:200_000]
    if raw.startswith("{"):
        val = _literal(raw)
        if isinstance(val, dict):
            return {str(k): v for k, v in val.items()}
    out: dict[str, Any] = {}
    for k, v in _KW_RE.findall(raw):
        v = v.strip()
        if v.startswith("SpeculativeConfig("):
            out[k] = {kk: _literal(vv) for kk, vv in _KW_RE.findall(v[len("SpeculativeConfig(") : -1])}
        else:
            out[k] = _literal(v)
    return out


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str) and v.isdigit():
        v = int(v)
    return v if isinstance(v, int) and v > 0 else None


def launch_facts(raw: Any) -> LaunchFacts:
    """Launch facts of a ``non-default args`` dict or an engine config line (vLLM's names in raw)."""
    args = parse_args_text(raw) if isinstance(raw, str) else {}
    return facts_from_args(args, non_default=isinstance(raw, str) and raw.strip().startswith("{"))


def facts_from_args(args: dict[str, Any], non_default: bool = True) -> LaunchFacts:
    spec = args.get("speculative_config")
    if isinstance(spec, str) and spec.strip().startswith("{"):
        import json

        try:
            spec = json.loads(spec)
        except ValueError:
            spec = None
    spec = spec if isinstance(spec, dict) else {}
    steps = _int(spec.get("num_speculative_tokens", spec.get("num_spec_tokens")))
    algo = spec.get("method")
    if not algo and spec.get("model"):
        algo = "draft_model"
    model = args.get("model") or args.get("model_tag")
    draft = spec.get("model")
    tp = _int(args.get("tensor_parallel_size"))
    return LaunchFacts(
        model=model if isinstance(model, str) and model else None,
        draft_model=draft if isinstance(draft, str) and draft and draft != model else None,
        # "non-default args" leave out what is at its default: one rank, one stage, one replica
        tp=tp if tp is not None else (1 if non_default else None),
        pp=_int(args.get("pipeline_parallel_size")) or (1 if non_default else None),
        dp=_int(args.get("data_parallel_size")) or (1 if non_default else None),
        spec_algorithm=str(algo) if algo else None,
        spec_steps=steps,
        spec_topk=1 if steps else None,  # vLLM drafts one chain
        spec_draft_tokens=steps,
        port=_int(args.get("port")),
        raw=args,
    )


# ------------------------------------------------------------------ classification


def classify(text: str, frame: bool = False) -> Rec:
    """One logical line → a record (stateless; :class:`_Reader` adds what needs the lines before)."""
    if "\x1b[" in text[:SCAN_LIMIT]:
        text = re.sub(r"\x1b\[[0-9;]{0,32}m", "", text)
    head = text if len(text) <= SCAN_LIMIT else text[:SCAN_LIMIT]
    m = PREFIX_RE.match(head)
    if m is None and ("INFO" in head or "ERROR" in head or "WARNING" in head or "DEBUG" in head):
        m = PREFIX_RE.search(head, 0, 400)
        if m is not None and "`" in head[: m.start()]:
            m = None  # quoted in prose
    if m is not None:
        return _prefixed(text, m, frame)
    a = ACTOR_RE.match(head) if head[:1] == "(" else None
    rec = Rec(text=text, msg=text, frame=frame)
    if a is not None:
        rec.rank_actor, rec.ranks, rec.tp = _rank_of_actor(a.group("actor"), a.group("arank"))
        rec.actor = a.group("actor")
        rec.prefix_end = a.end()
        rec.msg = text[a.end() :]
        if rec.tp is not None:
            rec.rank_span = (1, 1 + len(rec.actor))
    _unprefixed(rec, rec.msg[:SCAN_LIMIT])
    return rec


def _prefixed(text: str, m: re.Match[str], frame: bool) -> Rec:
    actor = m.group("actor") or ""
    is_rank, ranks, tp = _rank_of_actor(actor, m.group("arank")) if actor else (True, "", None)
    ms = m.group("ms")
    end = m.end()
    rec = Rec(
        text=text,
        msg=text[end:],
        ranks=ranks,
        tp=tp,
        ts_text=m.group("date") + " " + m.group("time") + ("." + ms if ms else ""),
        has_date=True,
        has_ms=ms is not None,
        prefixed=True,
        frame=frame,
        rank_actor=is_rank,
        prefix_end=end,
        rank_span=(m.start("actor"), m.end("actor")) if tp is not None else (0, 0),
        actor=actor,
    )
    msg = rec.msg[:SCAN_LIMIT]
    level = m.group("level")
    if level == "ERROR" or level == "CRITICAL":
        _error_record(rec, msg)
        return rec
    if msg.startswith(_UVICORN_LEVELS) or _ACCESS_RE.match(msg):
        _uvicorn(rec, msg)
        return rec
    if _STATS_RE.search(msg[:80]):
        rec.kind, rec.tag = DECODE, "stats"
        rec.data = parse_stats(msg) or {}
        return rec
    if any(h in msg[:40] for h in _SPEC_HEADS):
        spec = parse_spec(msg)
        if spec is not None:
            rec.kind, rec.tag, rec.data = DECODE, "spec", {"spec": spec}
            return rec
    for sub, tag, kind in MSG_RULES:
        if sub in msg:
            rec.tag, rec.kind = tag, kind
            _phase_fields(rec, msg)
            return rec
    if "Starting vLLM" in msg and "http" in msg:
        u = _URL_RE.search(msg)
        rec.kind, rec.tag = HTTP, "http_up"
        rec.data = {"url": u.group(1) if u else ""}
        return rec
    fm = match_failure(msg)
    if fm is not None:
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": fm}
    elif level == "WARNING":
        rec.kind = WARNING
    return rec


def _phase_fields(rec: Rec, msg: str) -> None:
    tag = rec.tag
    if tag == "server_args":
        rec.data = {"raw": msg[msg.find("non-default args: ") + len("non-default args: ") :]}
    elif tag == "engine_config":
        i = msg.find("with config: ")
        rec.data = {"raw": msg[i + len("with config: ") :] if i >= 0 else "", "engine": True}
    elif tag == "load_begin":
        rec.data = {"draft": "drafter" in msg}


def _error_record(rec: Rec, msg: str) -> None:
    """An ERROR record: a failure line, or a piece of a traceback that continues the one before."""
    stripped = msg.lstrip()
    if stripped.startswith("Traceback (most recent call last)"):
        rec.kind, rec.tag, rec.cont = ERROR, "traceback_start", True
        return
    fm = match_failure(msg)
    if stripped.startswith('File "') and '", line ' in stripped:
        rec.kind, rec.tag, rec.cont = TRACEBACK, "frame", True
        return
    if fm is not None:
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": fm}
        # the message of an exception inside the traceback, or the header line that starts one
        rec.cont = not stripped.startswith(("EngineCore failed", "WorkerProc failed"))
        return
    rec.kind = ERROR
    if (
        msg[:1] in (" ", "^", "~")
        or not stripped
        or stripped.startswith(("The above exception", "During handling"))
    ):
        rec.kind, rec.cont = TRACEBACK, True
    elif _EXC_LINE_RE.match(stripped):
        rec.tag, rec.cont = "exc_line", True


_EXC_LINE_RE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Failed))(?:: |$)"
)


def _uvicorn(rec: Rec, body: str) -> None:
    if "HTTP/1." in body and '" ' in body:
        rec.kind, rec.tag = HTTP, "access"
        return
    rec.kind = HTTP
    if "Application startup complete" in body:
        rec.kind, rec.tag = PHASE, "ready"
    elif "Uvicorn running on" in body:
        rec.tag = "http_up"
        rec.data = {"url": body.split("running on ", 1)[1].split(" ", 1)[0]}
    elif "Shutting down" in body or "Finished server process" in body or "Application shutdown" in body:
        rec.tag = "http_shutdown"
    if body.startswith("ERROR"):
        fm = match_failure(body)
        rec.kind = ERROR
        if fm is not None:
            rec.tag, rec.data = "fail", {"failure": fm}
    elif body.startswith("WARNING"):
        rec.kind = WARNING


def _unprefixed(rec: Rec, head: str) -> None:
    """Lines without a record prefix (behind an actor or bare): bars, uvicorn, tracebacks, argparse."""
    stripped = head.lstrip()
    if progress.is_bar(head):
        count = progress.bar_count(head)
        if count is not None:
            rec.kind, rec.frame = PROGRESS, True
            done, total = count
            if "Completed |" in head or "checkpoint shards" in head:
                rec.tag, rec.data = "bar_shards", {"done": done, "total": total, "label": ""}
            else:
                cap = _capture_bar(head)
                if cap is not None:
                    label = (
                        "FULL" if "FULL" in head[:120] else "PIECEWISE" if "PIECEWISE" in head[:120] else ""
                    )
                    rec.tag = "bar_capture"
                    rec.data = {"done": done, "total": total, "label": label, **cap}
                    elapsed = progress.bar_elapsed(head)
                    if elapsed is not None:
                        rec.data["elapsed"] = elapsed
            return
    if stripped.startswith(_UVICORN_LEVELS) or _ACCESS_RE.match(stripped):
        _uvicorn(rec, stripped)
        return
    if stripped.startswith("Traceback (most recent call last)"):
        rec.kind, rec.tag = TRACEBACK, "traceback_start"
        return
    if stripped.startswith('File "') and '", line ' in stripped:
        rec.kind, rec.tag = TRACEBACK, "frame"
        return
    if _ARGPARSE_RE.match(stripped):
        found = match_failure(stripped)
        fm = found if found is not None and found[0] == "bad_args" else ("bad_args", 88, "argparse")
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": fm}
        return
    if stripped.startswith("usage: "):
        rec.kind, rec.tag = ERROR, "usage"
        return
    if _SHELL_DEATH_RE.fullmatch(stripped[:400].strip()):
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": ("died", 45, "process_killed")}
        return
    failure = match_failure(stripped)
    if failure is not None:
        rec.kind, rec.tag, rec.data = ERROR, "fail", {"failure": failure}
    elif "Warning" in stripped or "WARNING" in stripped or "deprecated" in stripped:
        rec.kind = WARNING
    elif _EXC_LINE_RE.match(stripped):
        rec.tag = "exc_line"


# ------------------------------------------------------------------ the reader


class _Reader(LineReader):
    """Per-interpreter state: which writers are ranks, the launch's k, a stats line awaiting its
    speculative-decoding metrics (one interval's sample is the two lines together)."""

    __slots__ = ("workers", "spec", "steps", "pending", "args_seen", "tb_key")

    def __init__(self, fmt: LogFormat) -> None:
        super().__init__(fmt)
        self.classify = self._classify
        self.workers = False  # a Worker_TPn actor was seen: the engine core is not a rank
        # whether the launch speculates (then its stats lines wait for their metrics line); None: not
        # known yet (a log that starts mid-run), and stats lines wait too
        self.spec: bool | None = None
        self.steps: int | None = None
        self.pending: dict[str, Any] | None = None
        self.args_seen = False
        self.tb_key: tuple[str, str] | None = None  # writer and source line of the traceback being logged

    def _classify(self, text: str, frame: bool = False) -> Rec:
        rec = classify(text, frame)
        actor = rec.actor
        if actor:
            if actor.startswith(("Worker", "VllmWorker")):
                self.workers = True
            elif self.workers and rec.rank_actor:
                rec.rank_actor = False  # the engine core beside its workers
        if rec.prefixed:
            self._traceback(rec)
        tag = rec.tag
        if tag == "server_args" or tag == "engine_config":
            self._launch(rec)
        elif tag == "stats":
            self._stats(rec)
        elif tag == "spec":
            self._spec(rec)
        return rec

    def _traceback(self, rec: Rec) -> None:
        """``logger.exception`` writes each traceback line as its own ERROR record with the same
        writer and source location: those records continue the traceback, whatever their text."""
        if rec.kind not in (ERROR, TRACEBACK):
            self.tb_key = None
            return
        m = PREFIX_RE.search(rec.text, 0, rec.prefix_end + 1)
        if m is None or m.group("level") not in ("ERROR", "CRITICAL"):
            self.tb_key = None
            return
        key = (rec.actor, m.group("file") + ":" + m.group("lineno"))
        if key == self.tb_key:
            rec.cont = True
            if rec.kind == ERROR and not rec.tag:
                rec.kind = TRACEBACK
        elif rec.tag in ("traceback_start", "fail"):
            self.tb_key = key

    def _launch(self, rec: Rec) -> None:
        engine = rec.tag == "engine_config"
        facts = launch_facts(rec.data.get("raw", ""))
        if engine and self.args_seen:
            # the engine repeats what the API server's args line said: only its version is new
            self.args_seen = False
            rec.tag = "version"
        else:
            rec.tag = "server_args"
            self.args_seen = not engine
            self.spec = facts.spec_algorithm is not None
            self.steps = facts.spec_steps
            self.pending = None
        if engine and self.steps is None:
            self.steps = facts.spec_steps
            self.spec = self.spec or facts.spec_algorithm is not None

    def _stats(self, rec: Rec) -> None:
        data, rec.tag = rec.data, "decode"
        if self.spec is False or not data:
            held, self.pending = self.pending, None
            rec.data = held if held and not data else data
            return
        # with speculation the interval's metrics line follows: hold this one (emit an unpaired one)
        rec.data = self.pending or {}
        self.pending = data

    def _spec(self, rec: Rec) -> None:
        self.spec = True
        spec = rec.data["spec"]
        if spec.get("accept_len") is None and self.steps and spec.get("drafted"):
            spec = parse_spec(rec.msg, self.steps) or spec
            rec.data["spec"] = spec
        held, self.pending = self.pending, None
        if held:
            rec.data["decode"] = {
                **held,
                "accept_len": spec["accept_len"],
                "accept_rate": spec["accept_rate"],
            }

    def flush(self) -> list[Rec]:
        held, self.pending = self.pending, None
        if not held:
            return []
        return [Rec(text="", msg="", kind=DECODE, tag="decode", data=held)]


# ------------------------------------------------------------------ the format


class VLLMFormat(LogFormat):
    """vLLM's log format (see the module docstring)."""

    name = "vllm"
    label = "vLLM"
    terminal_tags = TERMINAL_TAGS
    own_tags = OWN_TAGS
    draft_types = ("Eagle", "EAGLE", "MTP", "DFlash", "Medusa", "Draft")
    summary_keys = (
        "model",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "speculative_config",
        "gpu_memory_utilization",
        "max_num_seqs",
        "max_model_len",
        "max_num_batched_tokens",
    )
    bar_marks = progress.BAR_MARKS
    #: the API server starts after the engine is warm: no warmup phase between "up" and "ready"
    http_warmup = False

    classifies_failures = True
    classify = staticmethod(classify)
    match_failure = staticmethod(match_failure)

    def parse_server_args(self, raw: Any) -> LaunchFacts:
        return launch_facts(raw)

    def facts_from_args(self, args: dict[str, Any]) -> LaunchFacts:
        return facts_from_args(args)

    def reader(self) -> LineReader:
        return _Reader(self)

    is_bar = staticmethod(progress.is_bar)

    def split_glued(self, segment: str) -> list[str]:
        return progress.split_glued(segment, PREFIX_RE)

    def ts_seconds(self, ts_text: str) -> float | None:
        """``MM-DD HH:MM:SS[.mmm]`` (vLLM prints no year): days in a leap year + time of day."""
        try:
            month, day = int(ts_text[0:2]), int(ts_text[3:5])
            h, mi, s = int(ts_text[6:8]), int(ts_text[9:11]), int(ts_text[12:14])
            if not (1 <= month <= 12 and 1 <= day <= 31 and h < 24 and mi < 60 and s < 62):
                return None
            import datetime as _dt

            days = _dt.date(2000, month, day).toordinal()
        except (ValueError, IndexError):
            return None
        secs = days * 86400.0 + h * 3600 + mi * 60 + s
        if len(ts_text) >= 18 and ts_text[14] == ".":
            secs += int(ts_text[15:18]) / 1000.0
        return secs

    frame_phase = staticmethod(frame_phase)
    hint_for = staticmethod(hint_for)

    def message_phase(self, text: str) -> str | None:
        head = text[:2000]
        if "warming up sampler" in head:
            return "kv_cache"
        if "GPU memory utilization" in head:
            return "dist_init"
        return None

    def evidence(self, msg: str) -> bool:
        head = msg[:400]
        return "vllm" in head and _EVIDENCE_RE.match(head) is not None

    def comm_backend_mention(self, msg: str) -> bool:
        if msg.startswith("    ") or msg.lstrip().startswith('File "'):
            return False
        return _COMM_RE.search(msg[:1000]) is not None

    def version_marks(self, msg: str, ver: VersionGuess) -> None:
        if "version " in msg or "LLM engine (v" in msg:
            m = _VERSION_RE.search(msg[:300])
            if m is not None:
                ver.exact = m.group(1)


VLLM = VLLMFormat()

__all__ = ["VLLM", "VLLMFormat", "classify", "launch_facts", "parse_spec", "parse_stats"]
