"""SGLang server simulator: ``python -m eagletui.sim`` behaves like ``python -m sglang.launch_server``.

Modules (imported lazily; this package imports nothing heavy):

* :mod:`eagletui.sim.cli` — argparse command line (sglang 0.5.23 flag table + ``--sim-*``);
* :mod:`eagletui.sim.perf` — pure performance model, :func:`eagletui.sim.perf.expected`;
* :mod:`eagletui.sim.logfmt` — SGLang 0.5.23 log line and tqdm frame formatting;
* :mod:`eagletui.sim.plan` — the launch plan resolved from the command line and environment;
* :mod:`eagletui.sim.startup` — the startup log sequence and failure injection;
* :mod:`eagletui.sim.crashes` — the scheduler tracebacks and SIGKILL of a failed launch;
* :mod:`eagletui.sim.engine` — continuous-batching scheduler loop and ground-truth counters;
* :mod:`eagletui.sim.httpapi` — aiohttp application (SGLang HTTP API + ``/sim/stats``);
* :mod:`eagletui.sim.serverstate` — what the HTTP handlers share (plan, engine, log, flags);
* :mod:`eagletui.sim.metrics` — the ``/metrics`` Prometheus text;
* :mod:`eagletui.sim.answers` — ``meta_info``, ``usage``, finish reasons, OpenAI bodies of generation answers;
* :mod:`eagletui.sim.serverinfo` — the ``/server_info`` and ``/model_info`` answers;
* :mod:`eagletui.sim.profiler` — ``/start_profile`` traces following the cost model;
* :mod:`eagletui.sim.chrome_trace` — one rank's Chrome trace of a profile (kernels, ranges, graph replays);
* :mod:`eagletui.sim.server` — process orchestration, signals, exit codes;
* :mod:`eagletui.sim.vllm` — the vLLM simulator (``python -m eagletui.sim.vllm serve``), with
  :mod:`eagletui.sim.vllm_log` (its log records) and :mod:`eagletui.sim.vllm_http` (engine and HTTP side).
"""

# A real ``import sglang`` takes 17-19 s on a GPU host (torch, triton, CUDA libraries), even warm:
# the simulator can be told to be as slow, so tests see a preflight that imports what it only needs
# to find. Only when asked: nothing else pays for it.
import os as _os

if _os.environ.get("EAGLETUI_SIM_IMPORT_DELAY"):
    import time as _time

    _time.sleep(float(_os.environ["EAGLETUI_SIM_IMPORT_DELAY"]))
