"""Process orchestration: startup log → HTTP bind (uvicorn lines) → warmup → serve; signals and exit codes.

Exit behaviour (like SGLang 0.5.23):

* scheduler failures (``Scheduler hit an exception``, watchdog) → ``kill_process_tree`` → SIGKILL → -9/137;
* HTTP port taken (really, or ``EAGLETUI_SIM_FAIL=port-in-use``) → uvicorn ``[Errno 98]`` → exit 1;
* SIGTERM while serving → sglang's handler (``loop.add_signal_handler``, hence ``signum=None frame=None``):
  ``SIGTERM received…Draining requests``, ``Gracefully exiting… Remaining number of requests N`` until no
  request is left (sglang/srt/managers/tokenizer_manager.py:sigterm_watchdog polls every 5 s; scaled here),
  ``kill_process_tree``, then uvicorn's shutdown lines → exit 0;
* SIGINT while serving → uvicorn's own handler: its shutdown lines → exit 0;
* SIGQUIT while serving → ``SIGQUIT received. signum=None, frame=None. It usually means one child failed.``
  then ``kill_process_tree`` → SIGKILL;
* any signal during startup → killed by SIGTERM (-15).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from eagletui.sim import crashes
from eagletui.sim.children import Children
from eagletui.sim.cli import DEFAULT_TIME_SCALE
from eagletui.sim.logfmt import ERROR, WARNING, SimLog

if TYPE_CHECKING:
    from eagletui.sim.engine import Engine
    from eagletui.sim.plan import Plan


def run_main(args: Any) -> int:
    try:
        return asyncio.run(_amain(args))
    except KeyboardInterrupt:
        return 0


def _die_by_sigterm() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


async def _warmup(host: str, port: int, log: SimLog, scale: float, api_key: str | None = None) -> None:
    import aiohttp

    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '', '::') else host}:{port}"
    await asyncio.sleep(min(1.0, 1.0 * scale / DEFAULT_TIME_SCALE) * 0.5)
    # Sim-only knob (tests): hold the warmup so the "bound but not ready" window (503) is observable.
    await asyncio.sleep(float(os.environ.get("EAGLETUI_SIM_WARMUP_DELAY") or 0))
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    async with aiohttp.ClientSession(headers=headers) as s:
        async with s.get(f"{base}/model_info") as r:
            await r.read()
        payload = {
            "text": "The capital city of France is",
            "sampling_params": {"temperature": 0, "max_new_tokens": 8},
        }
        async with s.post(f"{base}/generate", json=payload) as r:
            await r.read()
            if r.status != 200:
                raise RuntimeError(f"warmup /generate returned {r.status}")
        # http_server.py:_freeze_gc_after_server_warmup — then "The server is fired up and ready to roll!".
        try:
            async with s.post(f"{base}/freeze_gc", timeout=aiohttp.ClientTimeout(total=10)) as r:
                await r.read()
        except (aiohttp.ClientError, TimeoutError):
            log.line("post-warmup freeze_gc failed", level=30)


async def _amain(args: Any) -> int:
    from eagletui.sim.plan import resolve
    from eagletui.sim.startup import Startup

    env = dict(os.environ)
    env["_SIM_ARGV"] = " ".join(sys.argv[1:])
    plan = resolve(args, env)
    # SGLang starts its schedulers and detokenizer first, then loads weights in them: fork them now,
    # before any signal handler is installed (they keep the default dispositions, as SGLang's do).
    children = Children(plan.tp, plan.local)
    children.start()
    lease = _gpu_lease(args, env, plan.local or list(range(plan.tp)), children)
    log = SimLog(
        plan.tp, ep_size=plan.ep, log_level=args.log_level, log_level_http=args.log_level_http, env=env
    )
    log.bars = plan.head
    loop = asyncio.get_running_loop()
    # During startup a signal simply kills the launcher (SIGINT is treated like SIGTERM).
    loop.add_signal_handler(signal.SIGINT, _die_by_sigterm)

    await Startup(plan, log, lease).run()
    if not plan.head:
        return await _follower_node(plan, log, children, args, lease)
    return await _head_node(args, env, plan, log, children, lease)


async def _head_node(
    args: Any, env: dict[str, str], plan: Plan, log: SimLog, children: Children, lease: Any
) -> int:
    """Node 0 after its startup log: the engine, the HTTP server (uvicorn's lines), warmup, "ready to
    roll", then serving until a signal or a crash ends it."""
    from aiohttp import web

    from eagletui.sim.httpapi import make_app
    from eagletui.sim.serverstate import ServerState

    engine = _engine(args, env, plan, log)
    engine.held = children.scheduler_stopped  # SIGSTOP of a scheduler holds the batches
    state = ServerState(plan, engine, log)
    app = make_app(state)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    pid = os.getpid()
    log.uvicorn(f"Started server process [{pid}]")
    log.uvicorn("Waiting for application startup.")
    log.uvicorn("Application startup complete.")
    host, port = args.host, args.port
    bind_error = await _bind(runner, host, port, plan.fail)
    if bind_error:
        log.uvicorn(bind_error, level="ERROR")
        log.uvicorn("Waiting for application shutdown.")
        log.uvicorn("Application shutdown complete.")
        await runner.cleanup()
        if lease is not None:
            lease.exited()
        return 1
    log.uvicorn(f"Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")
    engine.start()

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    sigterm = asyncio.Event()
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGTERM, lambda: _on_sigterm(log, state, sigterm))
    loop.create_task(_sigterm_watchdog(plan, log, engine, children, sigterm, stop, pid))

    if not args.skip_server_warmup:
        try:
            await _warmup(host, port, log, plan.scale, plan.args.api_key)
        except Exception as e:
            log.line(f"Initialization failed. warmup error: {e!r}", level=ERROR)
            crashes.die_by_sigkill(log)
    _arm_profile_failures(plan, log, children, engine, loop)
    state.ready = True
    # the handler before the ready line (SGLang sets its SIGQUIT handler at launch): a SIGQUIT sent the
    # moment the line is read found none yet on a loaded machine, and the default action ended the server
    loop.add_signal_handler(
        signal.SIGQUIT, lambda: loop.create_task(_running_phase_sigquit(log, children, plan.scale))
    )
    log.line("The server is fired up and ready to roll!")
    loop.create_task(_subprocess_watchdog(plan, log, children))

    if plan.fail == "crash-after-ready":
        delay = float(
            env.get("EAGLETUI_SIM_FAIL_DELAY") or min(3.0, max(0.5, 3.0 * plan.scale / DEFAULT_TIME_SCALE))
        )
        loop.create_task(_crash_after_ready(delay, log, children, pid, plan.scale))

    await stop.wait()
    await _shut_down(plan, log, state, runner, children, lease, sigterm)
    return 0


async def _shut_down(
    plan: Plan, log: SimLog, state: Any, runner: Any, children: Children, lease: Any, sigterm: asyncio.Event
) -> None:
    """uvicorn's shutdown lines, the engine and the HTTP server stopped, then the children (after
    SIGTERM with sglang's ``kill_process_tree`` line)."""
    pid = os.getpid()
    engine = state.engine
    state.shutting_down = True
    log.uvicorn("Shutting down")
    log.uvicorn("Waiting for application shutdown.")
    log.uvicorn("Application shutdown complete.")
    log.uvicorn(f"Finished server process [{pid}]")
    if engine.task:
        engine.task.cancel()
    try:
        await asyncio.wait_for(runner.cleanup(), timeout=2.0)
    except (TimeoutError, asyncio.CancelledError):
        pass
    if sigterm.is_set():
        # sglang/launch_server.py: ``finally: kill_process_tree(os.getpid(), include_parent=False)``
        log.line(f"kill_process_tree called: parent_pid={pid}, include_parent=False, pid={pid}")
    if plan.rendezvous is not None:
        plan.rendezvous.close()  # the ShutdownReq reaching the other nodes' schedulers
    children.kill_all()
    if lease is not None:
        lease.exited()  # held for --sim-gpu-release-s more seconds


def _engine(args: Any, env: dict[str, str], plan: Plan, log: SimLog) -> Engine:
    """The scheduler's engine with its profiler and the prefill graphs captured at startup."""
    from eagletui.sim.engine import Engine

    engine = Engine(
        args,
        plan.cfg,
        log,
        max_running=plan.max_running,
        max_total_tokens=plan.max_total_tokens,
        env=env,
        seed=args.sim_seed,
    )
    from eagletui.sim.profiler import SimProfiler

    engine.profiler = SimProfiler(plan.cfg, log, plan.tp, plan.ep, seed=args.sim_seed)
    engine.prefill_graph = plan.prefill_graph
    engine.prefill_graph_max_tokens = max(plan.prefill_tokens) if plan.prefill_tokens else 0
    return engine


async def _bind(runner: Any, host: str, port: int, fail: str) -> str | None:
    """Bind the HTTP port; uvicorn's error when it is taken (or ``EAGLETUI_SIM_FAIL=port-in-use``)."""
    from aiohttp import web

    bind_error: str | None = None
    if fail == "port-in-use":
        bind_error = (
            f"[Errno 98] error while attempting to bind on address ('{host}', {port}): address already in use"
        )
    else:
        try:
            site = web.TCPSite(runner, host, port, backlog=1024)
            await site.start()
        except OSError as e:
            if e.errno == errno.EADDRINUSE or "address already in use" in str(e):
                bind_error = str(e)
                if not bind_error.startswith("[Errno"):
                    bind_error = f"[Errno 98] {bind_error}"
            else:
                bind_error = f"[Errno {e.errno}] {e.strerror or e}"
    return bind_error


async def _sigterm_watchdog(
    plan: Plan,
    log: SimLog,
    engine: Engine,
    children: Children,
    sigterm: asyncio.Event,
    stop: asyncio.Event,
    pid: int,
) -> None:
    """tokenizer_manager.py:sigterm_watchdog: after SIGTERM, drain the requests, then stop the server."""
    await sigterm.wait()
    poll = min(5.0, max(0.05, 5.0 * plan.scale))  # 5 s in sglang; scaled like the rest of the launch
    while True:
        await asyncio.sleep(poll)
        if children.stopping:
            return  # a child died first: the SIGQUIT path tears the server down instead
        rids = [r.rid for r in (*engine.waiting, *engine.running) if not r.internal]
        log.line(
            f"Gracefully exiting... Remaining number of requests {len(rids)}. "
            f"Remaining requests remaining_rids={rids!r}."
        )
        if not rids:
            break
    # ShutdownReq: the schedulers exit; child exits are expected now, not crashes.
    children.stopping = True
    log.line(f"kill_process_tree called: parent_pid={pid}, include_parent=False, pid={pid}")
    children.kill_all()
    stop.set()


async def _subprocess_watchdog(plan: Plan, log: SimLog, children: Children) -> None:
    """SGLang's SubprocessWatchdog: a child that died while serving tears the server down."""
    interval = min(1.0, max(0.01, 1.0 * plan.scale))  # 1 s in sglang, 5× the SIGTERM poll
    while not children.stopping:
        await asyncio.sleep(interval)
        crashed = children.crashed()
        if crashed is not None and not children.stopping:
            name, cpid, code = crashed
            log.line(
                f"Subprocess {name} (pid={cpid}) crashed with exit code {code}. "
                "Triggering SIGQUIT for cleanup...",
                level=ERROR,
            )
            await _running_phase_sigquit(log, children, plan.scale)
            return


def _arm_profile_failures(
    plan: Plan, log: SimLog, children: Children, engine: Engine, loop: asyncio.AbstractEventLoop
) -> None:
    """``EAGLETUI_SIM_FAIL=abort-during-profile`` / ``segv-after-profile``: the profiler's hooks that kill
    a scheduler while it records, or after it wrote its traces."""
    if plan.fail == "abort-during-profile":
        def abort_on_decode(stage: str | None) -> None:
            if stage == "DECODE":
                _abort_a_scheduler(log, children, engine.profiler)

        engine.profiler.on_begin = abort_on_decode
    if plan.fail == "segv-after-profile":
        engine.profiler.on_done = lambda: loop.call_later(
            min(1.0, max(0.05, 1.0 * plan.scale)), _segfault_a_scheduler, log, children
        )


async def _crash_after_ready(delay: float, log: SimLog, children: Children, pid: int, scale: float) -> None:
    """``EAGLETUI_SIM_FAIL=crash-after-ready``: ``delay`` s after "ready to roll" a scheduler dies."""
    await asyncio.sleep(delay)
    # a scheduler killed from outside (the host's OOM killer, say): the watchdog notices
    schedulers = children.pids[:-1]
    if schedulers:
        os.kill(schedulers[min(3, len(schedulers) - 1)], signal.SIGKILL)
    else:
        log.line(
            f"Subprocess scheduler_3 (pid={pid + 4}) crashed with exit code -9. Triggering SIGQUIT "
            "for cleanup...",
            level=ERROR,
        )
        await _running_phase_sigquit(log, children, scale)


#: seconds a node R > 0 takes, after rank 0's shutdown reached it, to tear its schedulers down (at any time
#: scale: NCCL teardown does not shrink with the simulated load times)
FOLLOWER_TEARDOWN_S = 2.0


async def _follower_node(plan: Any, log: SimLog, children: Children, args: Any, lease: Any = None) -> int:
    """A node R > 0 of a multi-node launch (see :mod:`eagletui.sim.multinode`): no tokenizer, no HTTP
    server; it blocks until node 0 goes away (its shutdown, or its death), then its schedulers exit."""
    loop = asyncio.get_running_loop()
    host = args.host if args.host not in ("", None) else "127.0.0.1"
    log.line(f"Dummy health check server started in background thread at {host}:{args.port}")
    sigterm = asyncio.Event()

    def on_sigterm() -> None:
        if not sigterm.is_set():
            log.line(
                f"SIGTERM received on node_rank {plan.node_rank}; waiting for the rank-0 ShutdownReq "
                "broadcast to stop the schedulers.",
                level=WARNING,
            )
        sigterm.set()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    loop.add_signal_handler(signal.SIGINT, on_sigterm)
    lost = plan.rendezvous.lost
    while not lost.is_set():
        crashed = children.crashed()
        if crashed is not None:
            name, cpid, code = crashed
            log.line(
                f"Subprocess {name} (pid={cpid}) crashed with exit code {code}. Triggering SIGQUIT for cleanup...",
                level=ERROR,
            )
            children.kill_all()

            crashes.die_by_sigkill(log)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(lost.wait(), 0.5)
        if sigterm.is_set() and not lost.is_set():
            # the ShutdownReq never came (node 0 was killed too): the orchestrator's kill is the backstop
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), 10.0)
            break
    if not sigterm.is_set():
        # rank 0's ShutdownReq ended the schedulers: each still releases its host resources and aborts the
        # distributed environment (``run_scheduler_process``'s ``finally``) before node R's main process
        # returns, and a SIGTERM that lands meanwhile (scancel signals every node's step at once, but a
        # loaded node delivers it late) still reaches the handler and its line
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(sigterm.wait(), FOLLOWER_TEARDOWN_S)
    children.stopping = True
    children.kill_all()
    if lease is not None:
        lease.exited()  # held for --sim-gpu-release-s more seconds
    return 0


def _gpu_lease(args: Any, env: dict[str, str], ranks: list[int], children: Children) -> Any:
    """The simulated GPU memory this server (this node, of a multi-node one) holds, EAGLETUI_SIM_GPU_DIR
    set: the scheduler of its ``i``-th rank on GPU ``i``."""
    from eagletui.sim import gpumem

    d = gpumem.gpu_dir(env)
    if d is None:
        return None
    n = len(ranks)
    pids = children.pids[:n] or [os.getpid()] * n
    names = children.titles[:n]  # SGLang's titles, with or without the child processes
    try:
        return gpumem.Lease.open(d, list(zip(pids, names, range(n), strict=False)), args.sim_gpu_release_s)
    except OSError:
        return None


def _on_sigterm(log: SimLog, state: Any, sigterm: asyncio.Event) -> None:
    """tokenizer_manager.py SignalHandler.sigterm_handler, installed with ``loop.add_signal_handler`` (so
    called without arguments): a WARNING record, then the watchdog drains."""
    if sigterm.is_set():
        return
    log.line(
        "SIGTERM received. signum=None frame=None. Draining requests and shutting down...", level=WARNING
    )
    state.shutting_down = True
    sigterm.set()


async def _running_phase_sigquit(log: SimLog, children: Children, scale: float) -> None:
    """tokenizer_manager.py SignalHandler.running_phase_sigquit_handler (``loop.add_signal_handler``):
    the crash diagnostics (``dump_requests_before_crash``: a 5 s settle, scaled), then
    ``kill_process_tree`` of the children and itself (SIGKILL)."""

    if children.stopping:
        return
    children.stopping = True
    log.line("SIGQUIT received. signum=None, frame=None. It usually means one child failed.", level=ERROR)
    log.line("Sleeping 5 seconds before crash diagnostics to let GPU activity settle.")
    await asyncio.sleep(min(5.0, max(0.05, 5.0 * scale)))
    if not [p for p in children.pids if p not in children.status and _alive(p)]:
        log.line("No live scheduler processes found; skipping py-spy and CUDA coredump.", level=ERROR)
    children.kill_all()
    crashes.die_by_sigkill(log)


def _segfault_a_scheduler(log: SimLog, children: Children) -> None:
    """``EAGLETUI_SIM_FAIL=segv-after-profile``: scheduler 0 dies of SIGSEGV after a profile, as one
    did on sglang 0.5.17; the subprocess watchdog then tears the server down."""
    from eagletui.sim.crashes import profiler_segfault

    _kill_a_scheduler(log, children, profiler_segfault, signal.SIGSEGV)


def _abort_a_scheduler(log: SimLog, children: Children, profiler: Any) -> None:
    """``EAGLETUI_SIM_FAIL=abort-during-profile``: scheduler 0 aborts while the DECODE profile records,
    before any trace of it is written (sglang 0.5.17's ``munmap_chunk(): invalid pointer``)."""
    from eagletui.sim.crashes import profiler_abort

    profiler.abandon()  # the process that recorded is gone: nothing of this capture is written
    _kill_a_scheduler(log, children, profiler_abort, signal.SIGABRT)


def _kill_a_scheduler(log: SimLog, children: Children, lines: Any, sig: int) -> None:
    """Scheduler 0 prints what a native crash prints (``lines(pid)``) and dies by ``sig``."""
    if not children.pids:
        return
    victim = children.pids[0]
    for line in lines(victim):
        log.raw(line)
    with contextlib.suppress(ProcessLookupError):
        os.kill(victim, sig)


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return not done
