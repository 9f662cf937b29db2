"""Crash triage: which failure kind a line points to, how specific it is, and what to do about it.

A crashing tp=8 server prints a cascade: the root cause on one rank, then SIGQUIT/kill messages from
the parent and NCCL/TCPStore noise from the siblings. Each rule therefore carries a *priority*: root
causes (OOM, bad arguments, ports, NCCL, hangs, exceptions) outrank the cascade markers (died, signal),
and the phase machine keeps the most specific one.
"""

from __future__ import annotations

import re
from typing import Any

from eagletui.core.logs.formats.nccl_warn import fatal_warning
from eagletui.core.logs.formats.sglang import spec_crashes
from eagletui.core.logs.formats.sglang.capture_stage import stage_remedy
from eagletui.core.logs.torch_oom import OOM_RULES, oversized_allocation

#: (substring, kind, priority, tag). Checked in order; the first hit wins for a line.
FAILURE_RULES: tuple[tuple[str, str, int, str], ...] = (
    ("Not enough memory", "oom", 92, "kv_too_small"),
    # 0.5.17's kv_cache_configurator: the weights (target and draft) took more than --mem-fraction-static of
    # the memory free before they loaded; its own message names the smallest fraction that would do
    ("Loaded weights leave no GPU memory for the KV cache", "oom", 92, "kv_weights_fill"),
    *OOM_RULES,
    ("memory capacity is unbalanced", "oom", 85, "mem_unbalanced"),
    # model_runner's KV sizing found less than nothing left after the weights (the pool it then builds
    # cannot hold a request): ``max_total_tokens=131072 is larger than the profiled value -561981``
    ("than the profiled value -", "oom", 91, "kv_negative"),
    # A CUDA kernel fault (illegal memory access, device-side assert, …), also when the NCCL watchdog
    # is the one that notices it ("… watchdog thread terminated with exception: CUDA error: …").
    ("CUDA error: ", "exception", 79, "cuda_error"),
    ("error: ambiguous option", "bad_args", 88, "ambiguous_option"),
    ("error: unrecognized arguments", "bad_args", 88, "argparse"),
    ("error: argument ", "bad_args", 88, "argparse"),
    ("error: the following arguments are required", "bad_args", 88, "argparse"),
    ("address already in use", "port_in_use", 86, "http_port"),
    ("Address already in use", "port_in_use", 86, "http_port"),
    ("Port is already in use", "port_in_use", 86, "internal_port"),
    (" is not available in ", "port_in_use", 86, "internal_port"),
    ("Watchdog caught collective operation timeout", "nccl", 80, "collective_timeout"),
    ("failure detected by watchdog", "nccl", 79, "collective_timeout"),
    ("NCCL error", "nccl", 78, "nccl_error"),
    ("DistBackendError", "nccl", 78, "nccl_error"),
    ("ncclUnhandledCudaError", "nccl", 78, "nccl_error"),
    ("ncclInternalError", "nccl", 78, "nccl_error"),
    ("ncclSystemError", "nccl", 78, "nccl_error"),
    ("ncclRemoteError", "nccl", 78, "nccl_error"),
    ("ncclInvalidUsage", "nccl", 78, "nccl_error"),
    ("NCCL Error", "nccl", 78, "nccl_error"),
    ("NCCL communicator was aborted", "nccl", 78, "nccl_error"),
    ("watchdog timeout", "hang", 76, "watchdog"),
    ("failed to start within the timeout", "hang", 70, "start_timeout"),
    ("Watchdog timeout", "hang", 76, "watchdog"),
    ("Capture cuda graph failed", "exception", 65, "capture_failed"),
    (
        "for prefill runner",
        "exception",
        65,
        "capture_failed",
    ),  # "Fail when using backend: X for prefill runner."
    ("BackendCompilerFailed", "exception", 64, "compile"),
    ("InductorError", "exception", 64, "compile"),
    ("torch._dynamo.exc", "exception", 64, "compile"),
    ("warmup error", "exception", 62, "warmup"),
    # a kernel library (flashinfer, tvm_ffi) builds a kernel the first time a request needs it, and the
    # build fails: flashinfer's "Ninja build failed", tvm_ffi's "ninja exited with status N". Below the
    # capture rules: a build that fails during capture is a capture failure whose cause this names
    # --speculative-adaptive before 0.5.23: a tier with more draft tokens than the launch outgrows the logits
    # buffer the graph runners share (sglang#30549; 0.5.17 on the lent H200). Above the capture rules: it
    # happens while the extra tiers' graphs are captured, and this names why
    ("shared logits buffer holds", "exception", 66, "adaptive_buffer"),
    ("Ninja build failed", "exception", 63, "jit_build"),
    ("ninja exited with status", "exception", 63, "jit_build"),
    # the crashes the spec-config preflight prevents (spec_crashes.SIGNATURES): above the header
    *((needle, "exception", 61, spec_crashes.TAG) for needle, _, _ in spec_crashes.SIGNATURES),
    ("hit an exception", "exception", 60, "exception"),
    # A native crash (compiled code segfaulted): the fatal line faulthandler prints and SGLang's word
    # for a child killed by SIGSEGV/SIGBUS/SIGABRT/SIGFPE/SIGILL. Not terminal: the stack after it
    # says where (eagletui.core.phases.native_crash), and the cascade's own markers end the sequence.
    ("Fatal Python error: Segmentation fault", "died", 46, "native_crash"),
    ("Caught signal 11 (Segmentation fault", "died", 46, "native_crash"),  # UCX's handler, first
    ("Caught signal 7 (Bus error", "died", 46, "native_crash"),
    ("Fatal Python error: Bus error", "died", 46, "native_crash"),
    ("Fatal Python error: Aborted", "died", 46, "native_crash"),
    ("Fatal Python error: Floating point exception", "died", 46, "native_crash"),
    ("Fatal Python error: Illegal instruction", "died", 46, "native_crash"),
    ("crashed with exit code -11", "died", 44, "native_crash"),
    ("crashed with exit code -7.", "died", 44, "native_crash"),
    ("crashed with exit code -6.", "died", 44, "native_crash"),
    ("crashed with exit code -8.", "died", 44, "native_crash"),
    ("crashed with exit code -4.", "died", 44, "native_crash"),
    ("scheduler died during initialization", "died", 40, "scheduler_died"),
    # 0.4.x parent watching its children; also printed when an operator's kill reaches the children
    # first, so it does not end the sequence: a SIGTERM/shutdown right after it makes it a stop.
    ("Child process unexpectedly failed", "died", 40, "child_failed"),
    ("Fatal Python error", "died", 42, "process_killed"),
    ("scheduler is dead", "died", 40, "scheduler_died"),
    ("crashed with exit code", "died", 40, "subprocess_crashed"),
    (" terminated with ", "died", 38, "subprocess_crashed"),
    ("Initialization failed", "exception", 35, "init_failed"),
    # sgl_kernel's loader (sgl_kernel/load_utils.py): no build of its ops loads on this GPU/CUDA
    ("[sgl_kernel] CRITICAL", "exception", 66, "kernel_import"),
    ("leaked semaphore", "died", 20, "leaked_semaphore"),
    ("leaked shared_memory", "died", 20, "leaked_semaphore"),
    ("Received sigquit", "signal", 25, "sigquit"),
    ("SIGQUIT received", "signal", 25, "sigquit"),
    ("kill_process_tree called", "signal", 24, "kill_tree"),
    ("terminate called after throwing", "signal", 26, "abort"),
)

_PREFILTER = (
    "memory",
    "Memory",
    "error",
    "Error",
    "ERROR",
    "in use",
    "not available",
    "atchdog",
    "NCCL",
    "nccl",
    "failed",
    "Failed",
    "exception",
    "died",
    "dead",
    "exit code",
    "terminate",
    "semaphore",
    "sigquit",
    "SIGQUIT",
    "kill_process_tree",
    "Inductor",
    "dynamo",
    "shared_memory",
    "Child process",
    "Fatal Python",
    "timeout",
    "profiled value",
    "Caught signal",
    "CRITICAL",
)

#: Lines that end a crash sequence: once seen, the failure is reported.
TERMINAL_TAGS = frozenset(
    {
        "sigquit",
        "kill_tree",
        "abort",
        "scheduler_died",
        "subprocess_crashed",
        "init_failed",
        "http_port",
        "internal_port",
        "ambiguous_option",
        "argparse",
        "watchdog",
        "leaked_semaphore",
        "process_killed",
    }
)

#: Failures worded by SGLang itself: the line alone shows that the text is SGLang's output.
OWN_TAGS = frozenset(
    {
        "kv_too_small",
        "kv_weights_fill",
        "mem_unbalanced",
        "internal_port",
        "capture_failed",
        "warmup",
        "exception",
        "scheduler_died",
        "subprocess_crashed",
        "init_failed",
        "sigquit",
        "kill_tree",
        "watchdog",
        "kv_negative",
        "kernel_import",
        spec_crashes.TAG,
    }
)

#: A line of the failing exception's own traceback mentions NCCL (phase machine, in-group upgrade).
NCCL_IN_TRACEBACK: tuple[str, int, str] = ("nccl", 78, "nccl_error")

# What the shell or the kernel prints when the process is killed or crashes without a word of its own:
# bash ``Killed`` / ``bash: line 1: 4242 Killed  python3 …``, zsh ``[1]    4242 killed     python3 …``,
# ``Segmentation fault (core dumped)``, ``Aborted``, ``Bus error``.
_SHELL_DEATH_RE = re.compile(
    r"(?:\[\d+\][+-]? +\d+ +|\S+: line \d+: +\d+ +)?"
    r"(?:[Kk]illed|[Ss]egmentation fault|[Aa]borted|[Bb]us error)(?: +\(core dumped\))?(?: {2,}\S.*| *$)"
)
# Structural signs that a text is SGLang's output even without a ``[time]`` record: a traceback frame
# or a Python warning located in sglang's package, argparse output of sglang's launcher.
_SGLANG_EVIDENCE_RE = re.compile(
    r"\s*File \"[^\"]*sglang[^\"]*\", line \d+"
    r"|\S*sglang\S*\.py:\d+: \w*Warning: "
    r"|usage: (?:sglang|\S*launch_server\S*|\S*sglang\S*) "
    r"|(?:sglang \w+|\S*launch_server(?:\.py)?): error: "
)


# A collective-communication backend named in an error message (NCCL; Gloo; HCCL on Ascend NPUs), not
# an identifier that merely contains it (``nccl_port``).
_COMM_RE = re.compile(r"NCCL|HCCL|Gloo|(?<![\w])(?:nccl|gloo|hccl)(?![a-z_])")


def comm_backend_mention(msg: str) -> bool:
    """A traceback's message line (not a frame or its source line) naming a collective backend."""
    if msg.startswith("    ") or msg.lstrip().startswith('File "'):
        return False
    return _COMM_RE.search(msg[:1000]) is not None


def sglang_evidence(msg: str) -> bool:
    """True for a line that only SGLang's own output would hold (see _SGLANG_EVIDENCE_RE)."""
    head = msg[:400]
    return ("sglang" in head or "launch_server" in head) and _SGLANG_EVIDENCE_RE.match(head) is not None


def shell_death(text: str) -> bool:
    """True for a shell's or the C runtime's note that the process was killed or crashed."""
    return _SHELL_DEATH_RE.fullmatch(text[:400].strip()) is not None


_MEM_FRACTION_RE = re.compile(r"mem_fraction_static=([\d.]+)")
_AMBIGUOUS_RE = re.compile(r"ambiguous option: (--[\w-]+)")


def match_failure(msg: str) -> tuple[str, int, str] | None:
    """``(kind, priority, tag)`` for a line that signals a failure, else None."""
    if not any(p in msg for p in _PREFILTER):
        return None
    for sub, kind, prio, tag in FAILURE_RULES:
        if sub in msg:
            return kind, prio, tag
    if "]:[E" in msg and ("ProcessGroupNCCL" in msg or "ProcessGroupGloo" in msg):
        # PyTorch c10d at error level: ``[rank1]:[E909 08:45:30.12 ProcessGroupNCCL.cpp:2252] …``, or
        # Gloo's monitored barrier naming the rank that did not answer (the collective backend failed).
        return "nccl", 77, "nccl_error"
    if fatal_warning(msg):
        return "nccl", 70, "nccl_warn"  # the bootstrap or a CUDA call failed: NCCL's init dies next
    return None


def version_at_least(version: str | None, target: tuple[int, int, int]) -> bool | None:
    """Compare a version guess such as ``"0.5.16"`` or ``">=0.5.16"`` with ``target``; None if unknown."""
    if not version:
        return None
    if "," in version:  # a range ">=a,<=b": decided when the whole range lies on one side
        lo, _, hi = version.partition(",")
        if version_at_least(lo, target) is True:
            return True
        if version_at_least(hi, target) is False:
            return False
        return None
    v = version.lstrip(">=<~ ")
    try:
        parts = tuple(int(p) for p in re.findall(r"\d+", v)[:3])
    except ValueError:
        return None
    if not parts:
        return None
    parts = parts + (0,) * (3 - len(parts))
    if version.startswith("<"):
        return False if parts < target else None
    if version.startswith(">="):
        return True if parts >= target else None
    return parts >= target


def graph_bs_flag(version: str | None) -> str:
    """The flag that caps the decode CUDA-graph batch size in this version."""
    new = version_at_least(version, (0, 5, 16))
    if new is True:
        return "--cuda-graph-max-bs-decode"
    if new is False:
        return "--cuda-graph-max-bs"
    return "--cuda-graph-max-bs (≤0.5.13) / --cuda-graph-max-bs-decode (≥0.5.16)"


# A model path that is neither a directory on the host nor a hub repo id, in the words of
# huggingface_hub / transformers (the real 0.5.17 bad-draft launch: "OSError: Repo id must be in the
# form 'repo_name' or 'namespace/repo_name': '/tmp/sgw/tiny/no-such-draft'").
_BAD_PATH_RE = re.compile(
    r"Repo id must be in the form [^:]{0,80}: '([^']{1,500})'"
    r"|(?:Repository Not Found|not a valid model identifier|does not appear to have a file named)"
    r"[^']{0,120}'([^']{1,500})'"
    r"|'([^']{1,500})' (?:is not a local folder|does not appear to have a file named)"
    r"|Can't load (?:the )?(?:config|tokenizer) for '([^']{1,500})'"
    r"|No such file or directory: '([^']{1,500})'"
)
#: Server-args dests holding a model location → their flag; the draft's first: its failure is the one
#: people make while tuning speculation.
_PATH_FLAGS = (
    ("speculative_draft_model_path", "--speculative-draft-model-path"),
    ("model_path", "--model-path"),
    ("tokenizer_path", "--tokenizer-path"),
)


def _model_path_hint(text: str, phase: str | None, args: dict[str, Any] | None, draft: bool) -> str | None:
    """Name the flag whose path the exception complains about, or whose model failed to build."""
    args = args or {}
    m = _BAD_PATH_RE.search(text[:4000])
    if m:
        path = next(g for g in m.groups() if g)
        named = [
            flag
            for dest, flag in _PATH_FLAGS
            if isinstance(v := args.get(dest), str) and v and v.rstrip("/") == path.rstrip("/")
        ]
        if not named and draft:
            named = ["--speculative-draft-model-path"]  # the draft's traceback (the args line never came)
        if named:
            flag = named[0]
            return (
                f"{flag} {path!r} is neither a directory on the server's host nor a Hugging Face repo "
                f"id: fix {flag} (a path is resolved on the host, from the server's working directory)."
            )
        return (
            f"{path!r} is neither a directory on the server's host nor a Hugging Face repo id: fix the "
            "model path flag that names it (--model-path, --speculative-draft-model-path, --tokenizer-path)."
        )
    if phase == "load_draft":
        draft_path = args.get("speculative_draft_model_path")
        algo = args.get("speculative_algorithm")
        what = f" ({draft_path!r})" if isinstance(draft_path, str) and draft_path else ""
        algo_txt = f" for --speculative-algorithm {algo}" if isinstance(algo, str) and algo else ""
        return (
            f"Building the draft model failed: check --speculative-draft-model-path{what}: it must be a "
            f"draft checkpoint{algo_txt} made for this target (its config.json and architecture), "
            "or read the exception above."
        )
    return None


def hint_for(
    kind: str,
    tag: str,
    phase: str | None,
    version: str | None,
    text: str = "",
    args: dict[str, Any] | None = None,
    draft: bool = False,
) -> str:
    """A concrete next step, naming flags that exist in ``version`` (and, with the launch's ``args`` or
    ``draft``, its traceback being the draft model's, the flag whose value the failure is about)."""
    if kind == "oom":
        return _oom_hint(tag, phase, version, text)
    if kind == "bad_args":
        return _bad_args_hint(text)
    if kind == "port_in_use":
        if tag == "internal_port":
            return (
                "An internal port (ZMQ/NCCL) is taken, usually by a previous server: kill it or set "
                "--port / --nccl-port to a free range."
            )
        return "The HTTP port is taken: stop the old server or pass a different --port."
    if kind == "nccl":
        if tag == "collective_timeout":
            return (
                "A collective timed out: one rank is stuck or died. Check the other ranks' errors; "
                "retry with NCCL_DEBUG=INFO, and raise --dist-timeout only if the rank was just slow."
            )
        return (
            "NCCL failed: rerun with NCCL_DEBUG=INFO; try --disable-custom-all-reduce, NCCL_P2P_DISABLE=1 "
            "or NCCL_IB_DISABLE=1 to isolate the transport."
        )
    if kind == "hang":
        return _hang_hint(tag, phase)
    if kind == "exception":
        return _exception_hint(tag, phase, version, text, args, draft)
    if kind == "died":
        return _died_hint(tag, text)
    if kind == "signal":
        return "The server was torn down by a signal (a child failed or it was killed): look above for the first error."
    return ""


_RAISE_ABOVE_RE = re.compile(r"Raise --mem-fraction-static above (\d+(?:\.\d+)?)")
_UNDER_FRACTION_RE = re.compile(r"under --mem-fraction-static=(\d+(?:\.\d+)?)")


def _weights_fill_hint(text: str) -> str:
    """SGLang measures what its load used as the memory free before it minus free after, so another
    process loading on the same GPU at the same time (a second server) counts as this server's weights:
    the real case where a 12 GB target read "mem usage=63.49 GB" beside five servers loading."""
    cur = _UNDER_FRACTION_RE.search(text)
    above = _RAISE_ABOVE_RE.search(text)
    now = f" (now {cur.group(1)})" if cur else ""
    to = f" above {above.group(1)}, SGLang's own minimum" if above else ""
    return (
        f"The weights fill the static memory share: raise --mem-fraction-static{now}{to}, and cap the KV "
        "pool with --max-total-tokens if the GPU is shared; another process loading on this GPU at the same "
        "time counts as this server's weights (check nvidia-smi), as do the draft model's."
    )


def _oom_hint(tag: str, phase: str | None, version: str | None, text: str) -> str:
    """Out of memory: what to lower, by the phase it happened in (nothing, when one allocation is
    larger than the GPU)."""
    oversized = oversized_allocation(text)
    if oversized is not None:
        return oversized[0].upper() + oversized[1:]
    if tag == "kv_too_small":
        cur = _MEM_FRACTION_RE.search(text)
        now = f" (now {cur.group(1)})" if cur else ""
        return (
            f"KV cache pool too small: raise --mem-fraction-static{now}, or reduce "
            "--context-length / --max-running-requests, or add GPUs (--tp-size)."
        )
    if tag == "kv_weights_fill":
        return _weights_fill_hint(text)
    if tag == "mem_unbalanced":
        return (
            "GPUs have different free memory: another process holds memory on some GPUs "
            "(check nvidia-smi and kill leftovers of a previous launch)."
        )
    if phase == "capture_prefill" or "for prefill runner" in text:
        return (
            "OOM while capturing the prefill CUDA graph: lower --cuda-graph-max-bs-prefill or "
            "--mem-fraction-static, or disable it with --cuda-graph-backend-prefill=disabled."
        )
    if phase in ("capture_target", "capture_draft") or "Capture cuda graph failed" in text:
        return (
            f"OOM while capturing CUDA graphs: lower {graph_bs_flag(version)} (e.g. 16) or lower "
            "--mem-fraction-static (e.g. 0.8 or 0.7) to leave room for the graphs."
        )
    if phase in ("load_target", "load_draft", "dist_init", "launch"):
        return (
            "OOM while loading weights: the model does not fit at this TP size, or leftover "
            "processes hold GPU memory (check nvidia-smi); use a larger --tp-size or a quantized "
            "checkpoint."
        )
    if phase == "kv_cache":
        return "OOM while allocating the KV pool: lower --mem-fraction-static (e.g. 0.8)."
    return (
        "CUDA OOM while serving: lower --mem-fraction-static, --max-running-requests or "
        f"{graph_bs_flag(version)}."
    )


def _bad_args_hint(text: str) -> str:
    """A flag the server refused: a removed flag by its new name, an abbreviation spelled out."""
    m = _AMBIGUOUS_RE.search(text)
    if m and m.group(1) == "--cuda-graph-max-bs":
        return (
            "--cuda-graph-max-bs was removed in sglang 0.5.20: use --cuda-graph-max-bs-decode "
            "(and --cuda-graph-max-bs-prefill)."
        )
    if m:
        return f"{m.group(1)} is not a full flag name in this sglang version: spell out the flag."
    return "A command-line flag is wrong for this sglang version: check `sglang serve --help`."


def _hang_hint(tag: str, phase: str | None) -> str:
    """A launch that never got ready, or a forward batch past the watchdog."""
    if tag == "start_timeout":
        where = f" (it was in {phase})" if phase else ""
        return (
            f"The launcher stopped waiting before the server was ready{where}: a rank that never reports "
            "a phase is stuck (multi-node: check that every node reached the same phase and can reach "
            "--dist-init-addr), or the timeout is too short for this model's load."
        )
    return (
        "A forward batch exceeded --watchdog-timeout (default 300 s): likely a stuck collective "
        "or kernel; raise --watchdog-timeout only if batches are legitimately slow."
    )


def _exception_hint(
    tag: str, phase: str | None, version: str | None, text: str, args: dict[str, Any] | None, draft: bool
) -> str:
    """A Python exception: by its tag and phase, else the model path flag it names."""
    if tag == spec_crashes.TAG:
        known = spec_crashes.hint(text, args, version)
        if known is not None:
            return known
    if tag == "cuda_error":
        return (
            "A CUDA kernel faulted (illegal memory access / device-side assert): usually a kernel bug of "
            "the attention backend, CUDA graphs or a quantized path. Rerun with CUDA_LAUNCH_BLOCKING=1, "
            "and try another --attention-backend or disable CUDA graphs to isolate it."
        )
    if tag == "compile":
        return "torch.compile failed: drop --enable-torch-compile or lower --torch-compile-max-bs."
    if tag == "adaptive_buffer":
        return (
            "--speculative-adaptive built a tier with more draft tokens than the launch and outgrew the logits "
            "buffer the CUDA-graph runners share (SGLang before 0.5.23, sgl-project/sglang#30549): launch at "
            "the largest tier (--speculative-num-steps 7 --speculative-num-draft-tokens 8 with the default "
            "tiers; adaptive steps down from there), or give --speculative-adaptive-config candidate_steps no "
            "larger than the launch's steps, or upgrade to 0.5.23."
        )
    if tag == "jit_build":
        return (
            "A kernel library compiled a kernel on first use and the build failed (the ninja output above "
            "says why: sources not installed, no nvcc, a compiler error). After the server was ready this "
            "is the first request that needed the kernel, e.g. a sampled one (temperature > 0) in EAGLE's "
            "verify: install the library's prebuilt kernels (flashinfer-jit-cache / flashinfer-cubin of "
            "the same version) or a CUDA toolchain, and send such a request before benchmarking."
        )
    if phase == "capture_prefill":
        return (
            "The prefill CUDA graph capture failed: disable it with --cuda-graph-backend-prefill=disabled "
            "(it is on by default since 0.5.16), or read the exception above."
        )
    if tag == "capture_failed":
        return (
            f"CUDA graph capture failed: lower {graph_bs_flag(version)} or --mem-fraction-static; "
            "as a last resort disable CUDA graphs."
        )
    if tag == "warmup" or phase == "warmup":
        return "The warmup request failed: check the traceback above; --skip-server-warmup only hides it."
    named = _model_path_hint(text, phase, args, draft)
    if named:
        return named
    return "A server process raised an exception: read the exception above (key line)."


def _died_hint(tag: str, text: str) -> str:
    """A process that died: a native crash by what crashed, a kill by who likely sent it."""
    if tag == "native_crash":
        low = text.lower()
        if "profiler" in low:
            why = (
                "the torch profiler crashed (as sglang 0.5.17 did right after /start_profile finished): "
                "restart the server, and profile a server you can afford to lose"
            )
        elif "nccl" in low:
            why = (
                "NCCL crashed: rerun with NCCL_DEBUG=INFO; try --disable-custom-all-reduce or "
                "NCCL_P2P_DISABLE=1 to isolate the transport"
            )
        else:
            why = "restart; if it recurs, avoid what ran there and report the stack above with the versions"
        return (
            "A native crash, not a Python error: compiled code (a CUDA/NCCL library, a kernel, the torch "
            f"profiler) crashed, no flag was wrong; {why}."
        )
    if "-9" in text or "illed" in text:
        return "A process was SIGKILLed (exit -9), usually by the host OOM killer: check `dmesg -T | grep -i oom`."
    return (
        "The server process ended without an error line: likely killed from outside (OOM killer, "
        "container limit, Ctrl-C); check dmesg and the launcher's exit status."
    )


def capture_hint(stage: str, kind: str, version: str | None) -> str:
    """A failure during CUDA-graph capture: the stage its traceback names, and that stage's remedy."""
    what = "Out of memory" if kind == "oom" else "CUDA graph capture failed"
    has_env = version_at_least(version, (0, 5, 17))
    return f"{what} while capturing the {stage} CUDA graphs: {stage_remedy(stage, graph_bs_flag(version), has_env)}."
