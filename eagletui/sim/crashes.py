"""How the simulated server dies: SGLang's scheduler tracebacks (CUDA OOM at load or graph capture, not
enough memory for the KV cache, an NCCL failure) and the ``kill_process_tree`` SIGKILL that follows.

The tracebacks are long verbatim text that mirrors the real server's, so they live apart from the
startup sequence (:mod:`eagletui.sim.startup`) that decides when to print them.
"""

from __future__ import annotations

import math
import os
import signal
import sys

from eagletui.sim.logfmt import ERROR, SimLog

GPU_TOTAL_GB = 139.81  # an H200; a launch uses its host preset's ``gpu_total_gb``
PKG = "/usr/local/lib/python3.12/dist-packages"


def die_by_sigkill(log: SimLog) -> None:
    pid = os.getpid()
    log.line(f"kill_process_tree called: parent_pid={pid}, include_parent=True, pid={pid}", level=ERROR)
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(pid, signal.SIGKILL)


def sigquit_from_child(log: SimLog) -> None:
    log.line("Received sigquit from a child process. It usually means the child failed.", level=ERROR)
    die_by_sigkill(log)


_TB_HEAD = [
    f'  File "{PKG}/sglang/srt/managers/scheduler.py", line 3261, in run_scheduler_process',
    "    scheduler = Scheduler(",
    "                ^^^^^^^^^^",
    f'  File "{PKG}/sglang/srt/managers/scheduler.py", line 391, in __init__',
    "    self.init_model_worker()",
    f'  File "{PKG}/sglang/srt/managers/scheduler.py", line 598, in init_model_worker',
    "    self.tp_worker = TpModelWorker(",
    "                     ^^^^^^^^^^^^^^",
    f'  File "{PKG}/sglang/srt/managers/tp_worker.py", line 247, in __init__',
    "    self.model_runner = ModelRunner(",
    "                        ^^^^^^^^^^^^",
    f'  File "{PKG}/sglang/srt/model_executor/model_runner.py", line 371, in __init__',
    "    self.initialize(min_per_gpu_memory)",
    f'  File "{PKG}/sglang/srt/model_executor/model_runner.py", line 455, in initialize',
]


def oom_message(
    rank: int,
    alloc_gib: float,
    free_mib: float,
    total_gb: float = GPU_TOTAL_GB,
    process_gib: float | None = None,
) -> str:
    """torch's wording; ``process_gib`` is what *this* process holds (default: all that is not free —
    less when another process still holds memory on the GPU, which torch's message then shows)."""
    used = total_gb - free_mib / 1024 if process_gib is None else process_gib
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {alloc_gib:.2f} GiB. GPU {rank} has a "
        f"total capacity of {total_gb:.2f} GiB of which {free_mib:.2f} MiB is free. Including non-PyTorch "
        f"memory, this process has {used:.2f} GiB memory in use. Of the allocated memory {used - 1.9:.2f} GiB "
        "is allocated by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def tb_oom_load(
    rank: int, total_gb: float = GPU_TOTAL_GB, free_mib: float = 412.0, process_gib: float | None = None
) -> str:
    lines = [
        "Traceback (most recent call last):",
        *_TB_HEAD,
        "    self.load_model()",
        f'  File "{PKG}/sglang/srt/model_executor/model_runner.py", line 902, in load_model',
        "    self.model = get_model(",
        "                 ^^^^^^^^^^",
        f'  File "{PKG}/sglang/srt/model_loader/loader.py", line 642, in load_model',
        "    self.load_weights_and_postprocess(",
        f'  File "{PKG}/sglang/srt/model_loader/loader.py", line 671, in load_weights_and_postprocess',
        "    model.load_weights(weights)",
        f'  File "{PKG}/torch/utils/_device.py", line 104, in __torch_function__',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        oom_message(rank, 1.75, free_mib, total_gb, process_gib),
    ]
    return "\n".join(lines)


CAPTURE_SOLUTIONS = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
    "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


def tb_oom_capture(rank: int, total_gb: float = GPU_TOTAL_GB) -> str:
    oom = oom_message(rank, 2.0, 788.0, total_gb)
    lines = [
        "Traceback (most recent call last):",
        f'  File "{PKG}/sglang/srt/model_executor/runner_backend_utils/__init__.py", line 112, in capture',
        "    self.capture_one_batch_size(bs, forward, num_tokens_per_req)",
        f'  File "{PKG}/torch/cuda/graphs.py", line 186, in __exit__',
        "    self.cuda_graph.capture_end()",
        oom,
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        *_TB_HEAD,
        "    self.init_cuda_graphs()",
        f'  File "{PKG}/sglang/srt/model_executor/model_runner_components/cuda_graph_setup.py", line 87, in init_cuda_graphs',
        "    runner.capture()",
        f'  File "{PKG}/sglang/srt/model_executor/runner_backend_utils/__init__.py", line 118, in capture',
        "    raise Exception(",
        f"Exception: Capture cuda graph failed: {oom.split(': ', 1)[1]}",
        CAPTURE_SOLUTIONS.rstrip("\n"),
    ]
    return "\n".join(lines)


def tb_not_enough_memory(mem_fraction: float) -> str:
    return "\n".join(
        [
            "Traceback (most recent call last):",
            *_TB_HEAD,
            "    self.init_memory_pool(min_per_gpu_memory)",
            f'  File "{PKG}/sglang/srt/model_executor/pool_configurator.py", line 214, in configure',
            "    raise RuntimeError(",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: mem_fraction_static={mem_fraction}",
        ]
    )


def tb_weights_fill(mem_fraction: float, minimum: float) -> str:
    """SGLang 0.5.17's refusal when the weights alone take more than ``mem_fraction`` of the memory free
    before they loaded (kv_cache_configurator; seen on the lent H200, tests/fixtures/real-sglang-0.5.17-7b;
    the 0.5.23 wheel's ``_profile_available_bytes`` raises the same text, rounding up to 3 decimals alike)."""
    raise_above = math.ceil(minimum * 1000) / 1000
    return "\n".join(
        [
            "Traceback (most recent call last):",
            *_TB_HEAD,
            "    self.init_memory_pools()",
            f'  File "{PKG}/sglang/srt/mem_cache/kv_cache_configurator.py", line 1647, in _profile_available_bytes',
            "    raise ValueError(",
            "ValueError: Loaded weights leave no GPU memory for the KV cache under "
            f"--mem-fraction-static={mem_fraction}. Raise --mem-fraction-static above {raise_above:.3f} "
            f"(minimum viable = 1 - available/pre = {minimum:.4f}). If using speculative decoding, draft weights "
            "are now counted.",
        ]
    )


def tb_nccl(rank: int) -> str:
    return "\n".join(
        [
            "Traceback (most recent call last):",
            f'  File "{PKG}/sglang/srt/managers/scheduler.py", line 3261, in run_scheduler_process',
            "    scheduler = Scheduler(",
            "                ^^^^^^^^^^",
            f'  File "{PKG}/sglang/srt/distributed/bootstrap.py", line 142, in init_parallel_runtime',
            "    initialize_model_parallel(",
            f'  File "{PKG}/sglang/srt/distributed/parallel_state.py", line 1530, in initialize_model_parallel',
            "    _TP = init_model_parallel_group(",
            f'  File "{PKG}/torch/distributed/distributed_c10d.py", line 4807, in barrier',
            "    work = group.barrier(opts=opts)",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^",
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:3356, unhandled system error (run with NCCL_DEBUG=INFO for details), "
            "NCCL version 2.27.3",
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
            "Last error:",
            f"socketProgress: Connection closed by remote peer 127.0.0.1<{40000 + rank}>",
        ]
    )


def scheduler_exception(log: SimLog, rank: int, tb: str) -> None:
    log.line(f"Scheduler hit an exception: {tb}", rank=rank, level=ERROR)


def profiler_segfault(pid: int) -> list[str]:
    """What a scheduler prints when the torch profiler's result is destroyed on a bad pointer (seen on
    sglang 0.5.17 + torch 2.11 on an H200, 0-2 s after ``Profiling done``): Python's faulthandler
    block with the native frame, then the process dies by SIGSEGV."""
    return [
        "Fatal Python error: Segmentation fault",
        "",
        f"Thread 0x{pid:012x} (most recent call first):",
        f'  File "{PKG}/torch/profiler/profiler.py", line 786 in __exit__',
        f'  File "{PKG}/sglang/srt/utils/profile_utils.py", line 331 in stop',
        f'  File "{PKG}/sglang/srt/managers/scheduler_components/profiler_manager.py", line 262 in stop_profile',
        f'  File "{PKG}/sglang/srt/managers/scheduler.py", line 1188 in event_loop_overlap',
        "",
        "Extension modules: numpy._core._multiarray_umath, torch._C, torch._C._fft, sgl_kernel.common_ops "
        "(total: 64)",
        f"*** SIGSEGV (@0x0) received by PID {pid}; stack trace: ***",
        "    @     0x7f3c1e4a1520 (unknown)",
        "    @     0x7f3b2c3f6d41 torch::autograd::profiler::ProfilerResult::~ProfilerResult()",
        "    @     0x7f3b2c3f7a10 std::_Sp_counted_base<>::_M_release()",
    ]


def profiler_abort(pid: int) -> list[str]:
    """What scheduler 0 printed on sglang 0.5.17 + torch 2.11 (H200) when glibc found a corrupt heap
    while the profiler recorded its second capture on that server (``with_stack`` and
    ``record_shapes`` off): the allocator's message, then faulthandler's block with the Python frames
    (the garbage collector ran inside ``flatten_arrays_to_pinned_cpu``); the process dies by SIGABRT
    and no trace of that capture is written."""
    return [
        "munmap_chunk(): invalid pointer",
        "Fatal Python error: Aborted",
        "",
        f"Current thread 0x{pid:012x} (most recent call first):",
        "  Garbage-collecting",
        f'  File "{PKG}/sglang/srt/utils/common.py", line 1216 in flatten_arrays_to_pinned_cpu',
        f'  File "{PKG}/sglang/srt/managers/schedule_batch.py", line 2310 in prepare_for_extend',
        f'  File "{PKG}/sglang/srt/managers/scheduler.py", line 3313 in _get_new_batch_prefill_raw',
        f'  File "{PKG}/sglang/srt/managers/scheduler.py", line 1738 in event_loop_overlap',
        "",
        "Extension modules: numpy._core._multiarray_umath, torch._C, torch._C._fft, sgl_kernel.common_ops "
        "(total: 64)",
    ]


def tb_adaptive_buffer(have: int, need: int, vocab: int) -> str:
    """SGLang 0.5.17's scheduler dying while ``--speculative-adaptive`` builds a tier with more draft tokens
    than the launch (the real frames of tests/fixtures/real-0.5.17/eagletui-adaptive-tier-crash-084201.log):
    the logits buffer the graph runners share was sized for the launch's draft tokens (sglang#30549)."""
    return "\n".join(
        [
            "Traceback (most recent call last):",
            f'  File "{PKG}/sglang/srt/managers/scheduler.py", line 4931, in run_scheduler_process',
            "    scheduler = Scheduler(",
            f'  File "{PKG}/sglang/srt/managers/scheduler.py", line 985, in init_model_worker',
            "    self.init_all_cuda_graphs()",
            f'  File "{PKG}/sglang/srt/speculative/eagle_worker_v2.py", line 1095, in init_cuda_graphs',
            "    self.adaptive_controller.init_states(",
            f'  File "{PKG}/sglang/srt/speculative/adaptive_runtime_state.py", line 103, in init_states',
            "    state = self.worker.build_adaptive_runtime_state(",
            f'  File "{PKG}/sglang/srt/model_executor/graph_shared_output.py", line 56, in get_logits_buffer',
            "    assert rows <= self.max_rows, (",
            f"AssertionError: shared logits buffer holds {have} rows but caller needs {need} (vocab_size={vocab})",
            "",
        ]
    )

