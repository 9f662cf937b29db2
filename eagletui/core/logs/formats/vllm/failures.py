"""vLLM's failure table, its priorities and the hints that name ``vllm serve`` flags; where a traceback
frame is in the startup.

Part of vLLM's log format (:mod:`eagletui.core.logs.formats.vllm`), apart so the table can be read (and
grown) as one list, like SGLang's :mod:`eagletui.core.logs.formats.sglang.failures`.
"""

from __future__ import annotations

from eagletui.core.logs.formats.nccl_warn import fatal_warning
from eagletui.core.logs.seam import Failure
from eagletui.core.logs.torch_oom import OOM_RULES, oversized_allocation

#: (substring, kind, priority, tag). Checked in order; the first hit wins for a line.
FAILURE_RULES: tuple[tuple[str, str, int, str], ...] = (
    ("is less than desired GPU memory utilization", "oom", 92, "gpu_memory_busy"),
    ("larger than the available KV cache memory", "oom", 92, "kv_too_small"),
    ("larger than the maximum number of tokens that can be stored in KV cache", "oom", 92, "kv_too_small"),
    ("No available memory for the cache blocks", "oom", 92, "kv_too_small"),
    *OOM_RULES,
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
    # multiprocessing's ``Process EngineCore:`` (``EngineCore_DP0:``, ``EngineCore_0:``) heads the traceback
    # of an exception that left the engine core's run_engine_core: the core raised, it did not vanish. The
    # API server's EngineDeadError about it may come first (two processes' lines interleave): a root cause's
    # priority, so it displaces that death once reported. After a line that named the failure already
    # (NAMED_BY) it is that failure's repeat, and the reader lowers it (:data:`REPEAT_PRIORITY`)
    ("Process EngineCore", "exception", 50, "engine_core_raised"),
    ("EngineDeadError", "died", 45, "engine_dead"),
    ("EngineCore encountered an issue", "died", 45, "engine_dead"),
    ("Fatal Python error", "died", 42, "process_killed"),
    ("Caught signal 11 (Segmentation fault", "died", 42, "process_killed"),  # UCX's handler
    (" died, exit code", "died", 40, "worker_died"),
    # multiproc_executor's worker monitor (``Worker proc VllmWorker-3 died unexpectedly, shutting down
    # executor.``; 0.33 adds ``(exit code: N)``; Ray v2: ``RayWorkerProc rank=N died unexpectedly``) and
    # the client's ``Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.`` (≤ 0.11)
    ("died unexpectedly", "died", 40, "worker_died"),
    # a worker's RPC answered with a failure: multiproc_executor raises ``RuntimeError(f"Worker failed with
    # error '{result}', please check the stack trace above for the root cause")`` (0.11 L248, 0.33 L526);
    # the worker's death the monitor reports after it is the consequence. ``result`` may span lines: the
    # message's head and its tail each name it. Above "died unexpectedly"
    ("Worker failed with error", "exception", 41, "worker_error"),
    ("please check the stack trace above for the root cause", "exception", 41, "worker_error"),
    ("WorkerProc failed to start", "exception", 36, "worker_failed"),
    # a worker's RPC raised (``capture_model``, ``execute_model``): the worker was up
    ("WorkerProc hit an exception", "exception", 36, "worker_exception"),
    # core.py's busy loop after a clean start (the first request, a bad batch): logger.exception
    ("EngineCore encountered a fatal error", "exception", 37, "engine_fatal"),
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
    "died",
    "ProcessGroup",
    "Caught signal",
    "root cause",
    "Process Engine",
)
#: The last words of a crash: the API server has given up (what it names is above it).
TERMINAL_TAGS = frozenset({"engine_init_failed", "argparse", "ambiguous_option", "http_port", "engine_dead"})
#: Worded by vLLM itself: such a line alone shows that the text is vLLM's output.
OWN_TAGS = frozenset(
    {
        "gpu_memory_busy",
        "kv_too_small",
        "engine_dead",
        "worker_failed",
        "engine_failed",
        "engine_init_failed",
        "engine_fatal",
        "worker_exception",
        "worker_died",
        "worker_error",
    }
)
#: Lines that name the engine's failure themselves: a ``Process EngineCore:`` traceback after one of them
#: repeats it (run_engine_core logs the failure, then re-raises it).
NAMED_BY = frozenset({"engine_fatal", "engine_failed", "worker_failed", "worker_exception", "worker_error"})
#: The priority of such a repeat: below every line of NAMED_BY.
REPEAT_PRIORITY = 30
#: Headers ``logger.exception`` prints above a traceback: the header stays the key line, the
#: traceback's exception becomes the message.
HEADLINE_TAGS = frozenset({"engine_fatal", "engine_failed", "worker_failed", "worker_exception", "engine_core_raised"})


def match_failure(msg: str) -> Failure | None:
    if not any(p in msg for p in _PREFILTER):
        return None
    for sub, kind, prio, tag in FAILURE_RULES:
        if sub in msg:
            return kind, prio, tag
    if "]:[E" in msg and ("ProcessGroupNCCL" in msg or "ProcessGroupGloo" in msg):
        return "nccl", 77, "nccl_error"  # PyTorch c10d at error level
    if fatal_warning(msg):
        return "nccl", 70, "nccl_warn"  # NCCL's bootstrap or a CUDA call it makes failed
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


#: Frames under ``/compilation/`` that every forward passes, compiled or not: the
#: ``@support_torch_compile`` wrapper's ``__call__`` (``compilation/decorators.py``) runs the model's
#: forward on every step, so a traceback through it (an MTP forward crashing while serving) is no sign of
#: torch.compile; a compile failure goes deeper (``torch/_dynamo``, ``compilation/backends.py``).
_EVERY_FORWARD = ("compilation/decorators.py",)


def frame_phase(line: str) -> tuple[str | None, bool]:
    head = line[:1000]
    if any(f in head for f in _EVERY_FORWARD):
        return None, any(d in head for d in _DRAFT_FRAMES)
    fam = next((f for needle, f in FRAME_PHASES if needle in head), None)
    return fam, any(d in head for d in _DRAFT_FRAMES)


def hint_for(kind: str, tag: str, phase: str | None, version: str | None, text: str = "") -> str:
    """What to change in the next ``vllm serve`` launch, by failure and where it happened."""
    if tag == "gpu_memory_busy":
        return "another process holds GPU memory: free it, or lower --gpu-memory-utilization to what is free"
    if tag == "kv_too_small":
        return "the KV cache cannot hold one request of --max-model-len: lower --max-model-len or raise --gpu-memory-utilization"
    if kind == "oom":
        oversized = oversized_allocation(text)
        if oversized is not None:
            return oversized
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
