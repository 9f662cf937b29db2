"""The live source for a Slurm launch: the queue, the job's state and every node's log, as one stream.

While the job waits, each state poll (``scontrol``) that changes something becomes a
:class:`~eagletui.core.events.JobStatus` (pending reason, queue position); when it starts, its nodes
are known and their logs (``node-<rank>.log``, written by ``srun --output=…%n…``) are tailed, each
through its own interpreter, so a traceback stays with the node that printed it. The head node
(rank 0, the one that serves HTTP) drives the launch's phases and readiness as a single host's log
would; every other node's phases become :class:`~eagletui.core.events.NodeProgress` (the phase panel's
per-node rows and the straggler), and its log lines join the one log view with a ``[node]`` prefix.
The batch script's own log (``srun: error: n2: task 1: Exited with exit code 3``, Slurm's
``*** JOB … CANCELLED … ***``) is tailed too, prefixed ``[slurm]``.

A failure names its node: the first node whose log shows one is the root cause, and what the other
nodes print afterwards (their NCCL peers vanished, srun killed them) is the cascade and is not
reported as a second failure. When no log says why, Slurm does: a job that ends FAILED, TIMEOUT,
NODE_FAIL or OUT_OF_MEMORY is a failure naming the node srun reported first, also when the log had
shown a ready server; a job cancelled by someone else is a failure too, never a clean stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagletui.core.events import (
    JOB_FAILED_STATES,
    Event,
    JobStatus,
    LogLine,
    LogStale,
    NodeProgress,
    Notice,
    PhaseFinished,
    PhaseProgress,
    PhaseStarted,
    ProcessExited,
    ServerFailed,
    ServerReady,
)
from eagletui.core.timings import Timings
from eagletui.remote.cancel import cancel_and_wait
from eagletui.remote.control import Liveness, RunInfo
from eagletui.remote.slurm import ACTIVE_STATES, as_dict
from eagletui.remote.source import UNKNOWN_NOTICE_AFTER, Backlog, LineLimiter, LiveSource, make_interpreter
from eagletui.remote.tail import LogTail
from eagletui.remote.transport import Transport, TransportError

if TYPE_CHECKING:
    from eagletui.remote.slurm import SlurmLauncher

#: ``srun: error: n2: task 1: Exited with exit code 3`` (the batch log): the node whose task failed.
SRUN_TASK_RE = re.compile(
    r"srun: error: (\S+): tasks? [\d,-]+: (Exited with exit code (\d+)|Killed|Terminated)"
)
#: Polls a running job may go without node names before its logs are tailed by rank alone.
NODES_WAIT_POLLS = 5


@dataclass
class NodeLog:
    index: int
    name: str
    path: str
    tail: LogTail
    interp: Any
    limiter: LineLimiter = field(default_factory=LineLimiter)
    failed: bool = False
    status: str = ""
    phase: str = ""


class JobSource(LiveSource):
    """Events of one Slurm launch (see the module docstring)."""

    control: SlurmLauncher

    def __init__(
        self,
        transport: Transport,
        control: SlurmLauncher,
        run: RunInfo,
        *,
        timings: Timings,
        log_format: str | None = None,
        history: bool = False,
    ) -> None:
        poll = control.settings.poll_s
        super().__init__(
            transport,
            control,
            run,
            timings=timings,
            poll_s=timings.watch.job_poll_s if poll is None else poll,
            log_format=log_format,
            history=history,
        )
        self.log_format = log_format
        self.multi = run.num_nodes > 1
        self.nodes: list[NodeLog] = []
        self._started = asyncio.Event()
        self._seq = 0
        self._last_status: tuple[Any, ...] | None = None
        self._failed_node: str | None = None  # the node whose failure was reported (the root cause)
        self._reported_failure = False
        self._srun_failed: str = ""  # the first node srun reported a failed task on
        self._ready = False
        self._running_polls = 0
        self.batch = LogTail(
            transport,
            run.batch_log,
            python=control.python,
            on_state=self._on_state,
            timings=timings,
            own=run.owned,
        )
        self._batch_buf = b""

    # ------------------------------------------------------------------ routing

    def _stopping(self) -> bool:
        """eagletui is cancelling this job (the workspace said so, or the launcher is at it)."""
        return self._exit_expected or self.run.run_id in self.control.cancelling

    def _node_name(self, index: int) -> str:
        if index < len(self.run.nodes):
            return self.run.nodes[index]
        return f"node{index}"

    def _start_nodes(self) -> None:
        if self.nodes:
            return
        for i, path in enumerate(self.run.node_logs or [self.run.log_path]):
            tail = LogTail(
                self.transport,
                path,
                on_state=self._on_state if i == 0 else None,
                on_reset=self._on_reset,
                python=self.control.python,
                timings=self.timings,
                own=self.run.owned,
            )
            interp = make_interpreter(self.run.launch, self.log_format)
            self.nodes.append(NodeLog(i, self._node_name(i), path, tail, interp))
        self.interp = self.nodes[0].interp  # the head node's phase decides staleness
        self._started.set()

    def _line(self, e: LogLine, prefix: str) -> LogLine:
        self._seq += 1
        text = f"[{prefix}] {e.text}" if prefix else e.text
        return dataclasses.replace(e, text=text, seq=self._seq)

    def _route(self, node: NodeLog, events: list[Event]) -> list[Event]:
        """One node's events → the merged stream (see the module docstring)."""
        out: list[Event] = []
        head = node.index == 0
        for e in events:
            if isinstance(e, LogLine):
                out.append(self._line(e, node.name if self.multi else ""))
                continue
            if isinstance(e, ServerFailed):
                if self._stopping():
                    continue  # scancel signalled every process: the children's deaths are our stop
                if self._failed_node is not None and self._failed_node != node.name:
                    continue  # the cascade of the first node's failure, not a second root cause
                self._failed_node = node.name
                self._reported_failure = True
                node.failed = True
                if self.multi:  # every report quotes the message: it names the node
                    e = dataclasses.replace(e, node=node.name, message=f"node {node.name}: {e.message}")
                out.append(e)
                if self.multi:
                    out.append(self._progress(node, e.phase or node.phase, "failed"))
                continue
            if self.multi:
                prog = self._node_event(node, e)
                if prog is not None:
                    out.append(prog)
            if isinstance(e, ServerReady) and head:
                self._ready = True
                out.append(e)
                if self.multi:
                    out += [self._progress(n, n.phase, "ready") for n in self.nodes if not n.failed]
                continue
            if head:
                out.append(e)
        return out

    def _node_event(self, node: NodeLog, e: Event) -> NodeProgress | None:
        if isinstance(e, PhaseStarted):
            return self._progress(node, e.phase, "active")
        if isinstance(e, PhaseProgress):
            return self._progress(node, e.phase, "active", e.done, e.total, e.unit)
        if isinstance(e, PhaseFinished):
            return self._progress(node, e.phase, "done", e.total, e.total)
        return None

    def _progress(
        self, node: NodeLog, phase: str, status: str, done: int = 0, total: int = 0, unit: str = ""
    ) -> NodeProgress:
        node.phase, node.status = phase or node.phase, status
        return NodeProgress(
            launch=self.run.launch,
            node=node.name,
            index=node.index,
            phase=node.phase,
            status=status,
            done=done,
            total=total,
            unit=unit,
        )

    def _batch_lines(self, data: bytes) -> list[Event]:
        self._batch_buf += data
        *lines, self._batch_buf = self._batch_buf.split(b"\n")
        if len(self._batch_buf) > 65536:
            lines.append(self._batch_buf)
            self._batch_buf = b""
        out: list[Event] = []
        for raw in lines:
            text = raw.decode(errors="replace").rstrip("\r")[:4096]
            if not text.strip():
                continue
            m = SRUN_TASK_RE.search(text)
            if m and not self._srun_failed and (m.group(3) is None or m.group(3) != "0"):
                self._srun_failed = m.group(1)
            kind = "error" if ("error" in text or "CANCELLED" in text) else "other"
            self._seq += 1
            out.append(LogLine(text=f"[slurm] {text}", kind=kind, seq=self._seq, launch=self.run.launch))
        return out

    # ------------------------------------------------------------------ loops

    async def _follow(self, node: NodeLog) -> None:
        end = node.tail.offset
        backlog = await self._backlog(node.path)
        async for off, data in node.tail.chunks():
            self._last_data = self.clock.monotonic()
            self._stale_sent = False
            if off < end:
                await self._put(self._route(node, node.interp.flush()))
                node.limiter = LineLimiter()
                backlog = Backlog(None)
            end = off + len(data)
            old, data = backlog.split(off, data)
            if old:
                events = backlog.mark(node.interp.feed_bytes(node.limiter.feed(old)))
                await self._put(self._route(node, events))
            await self._put(self._route(node, node.interp.feed_bytes(node.limiter.feed(data))))

    async def _follow_batch(self) -> None:
        async for _off, data in self.batch.chunks():
            await self._put(self._batch_lines(data))

    async def _tail_loop(self) -> None:
        batch = asyncio.create_task(self._follow_batch())
        try:
            await self._started.wait()
            await asyncio.gather(*(self._follow(n) for n in self.nodes))
        finally:
            await cancel_and_wait(batch, errors=False)

    def _status_event(self, out: dict[str, Any]) -> JobStatus | None:
        job = as_dict(out.get("job"))
        if not job:
            return None
        nodes = tuple(self.run.nodes) or tuple(
            str(n[0]) for n in out.get("nodes") or [] if isinstance(n, list) and n
        )
        position = out.get("position") if isinstance(out.get("position"), int) else None
        ended = str(job.get("state") or "") not in ACTIVE_STATES
        code = job.get("exit_code") if ended and isinstance(job.get("exit_code"), int) else None
        sig = job.get("signal") if ended and isinstance(job.get("signal"), int) else None
        source = "scontrol" if out.get("state") == "found" else str(job.get("source") or "recorded")
        queued_s = job.get("queued_s") if isinstance(job.get("queued_s"), int | float) else None
        key = (job.get("state"), job.get("reason"), position, nodes, code, sig)
        if key == self._last_status:
            return None
        self._last_status = key
        return JobStatus(
            launch=self.run.launch,
            job_id=self.run.job_id,
            state=str(job.get("state") or ""),
            reason=str(job.get("reason") or "")[:300],
            position=position,
            nodes=nodes,
            exit_code=code,
            signal=sig,
            source=source,
            queued_s=queued_s,
        )

    async def _drain_tail(self) -> None:
        """After the job ended, give every node's tail time to deliver its last bytes."""
        settle, limit = self.timings.watch.drain_settle_s, self.timings.watch.drain_limit_s
        sizes: dict[int, int] = {}
        paths = " ".join(shlex.quote(n.path) for n in self.nodes)
        if paths:
            with contextlib.suppress(TransportError, OSError, ValueError):
                res = await self.transport.run(
                    f"stat -c %s {paths} 2>/dev/null", timeout=self.timings.watch.stat_s
                )
                for n, size in zip(self.nodes, res.stdout.split(), strict=False):
                    sizes[n.index] = int(size)
        clock = self.clock
        t0 = clock.monotonic()
        while clock.monotonic() - t0 < limit:
            quiet = clock.monotonic() - self._last_data >= settle
            caught_up = all(n.tail.offset >= sizes.get(n.index, 0) for n in self.nodes)
            if quiet and caught_up:
                break
            await clock.sleep(0.05)
        await clock.sleep(min(settle, 0.3))  # the batch log's last lines (srun's summary)

    def _final_failure(self, job: dict[str, Any]) -> ServerFailed | None:
        """Slurm's word on a job that ended badly, when no node's log said why."""
        state = str(job.get("state") or "")
        if self._reported_failure or self._stopping():
            return None
        if state not in JOB_FAILED_STATES and state != "CANCELLED":
            return None
        node = self._srun_failed or (self.run.nodes[0] if self.run.nodes else "")
        raw = job.get("exit_raw") or (f"{job.get('exit_code')}:{job.get('signal') or 0}")
        where = f" on node {node}" if node and self.multi else ""
        after = " after the server was ready" if self._ready else ""
        if state == "CANCELLED":
            kind = "signal"
            message = (
                f"Slurm job {self.run.job_id} was cancelled outside eagletui{after} (scancel or an admin)"
            )
        else:
            kind = "oom" if state == "OUT_OF_MEMORY" else "died"
            reason = f", {job['reason']}" if job.get("reason") else ""
            message = f"Slurm job {self.run.job_id} ended {state}{where}{after} (ExitCode {raw}{reason})"
        hints = {
            "TIMEOUT": "the job reached its time limit (slurm.time); ask for more time",
            "NODE_FAIL": "a node of the job failed; Slurm drains it: relaunch lands elsewhere",
            "PREEMPTED": "a higher-priority job took the nodes",
            "OUT_OF_MEMORY": "the node's memory cgroup killed a task (host RAM, not GPU memory)",
        }
        return ServerFailed(
            kind=kind,
            message=message,
            hint=hints.get(state, f"see {self.run.batch_log} and the nodes' logs"),
            line="",
            phase=self.nodes[0].interp.state.phase if self.nodes else None,
            launch=self.run.launch,
            node=node if self.multi else "",
        )

    async def _watch_loop(self) -> None:
        while not self._stopped:
            state = await self._poll()
            if state is Liveness.UNKNOWN:
                self.unknown_checks += 1
                if self.unknown_checks == UNKNOWN_NOTICE_AFTER:
                    self._queue.put_nowait(
                        Notice(
                            level="warning",
                            message=f"cannot ask Slurm about job {self.run.job_id}: "
                            f"{self.control.last_check_detail}; still trying",
                            source="watch",
                        )
                    )
                await self.clock.sleep(self.poll_interval)
                continue
            self.unknown_checks = 0
            out = self.control.states.get(self.run.run_id) or {}
            ev = self._status_event(out)
            if ev is not None:
                self._queue.put_nowait(ev)
            job = as_dict(out.get("job"))
            js = str(job.get("state") or "")
            if js and js != "PENDING":
                self._running_polls += 1
                ran = bool(self.run.nodes or job.get("nodelist"))  # a job cancelled while pending never did
                if (
                    self.run.nodes
                    or self._running_polls >= NODES_WAIT_POLLS
                    or (state is Liveness.DEAD and ran)
                ):
                    self._start_nodes()
            if state is Liveness.DEAD:
                await self._finish(job)
                return
            self._check_stale()
            await self.clock.sleep(self.poll_interval)

    async def _poll(self) -> Liveness:
        try:
            return await self.control.liveness(self.run)
        except (TransportError, OSError, TimeoutError) as exc:
            self.control.last_check_detail = str(exc)
            return Liveness.UNKNOWN

    def _check_stale(self) -> None:
        if not self.nodes:
            return
        limit = self._stale_limit()
        silent = self.clock.monotonic() - self._last_data
        if limit is not None and self._link_up and not self._stale_sent and silent > limit:
            self._stale_sent = True
            self._queue.put_nowait(
                LogStale(seconds=round(silent, 1), phase=self.interp.state.phase, launch=self.run.launch)
            )

    async def _finish(self, job: dict[str, Any]) -> None:
        await self._drain_tail()
        for n in self.nodes:
            n.tail.stop()
            self._emit(self._route(n, n.interp.flush()))
        self.batch.stop()
        if self._batch_buf:
            self._emit(self._batch_lines(b"\n"))
        if self._exit_expected:
            self.run.alive = False
            return  # stopped by eagletui: the workspace reports the stop and the exit itself
        failure = self._final_failure(job) if job else None
        if failure is not None:
            self._queue.put_nowait(failure)
        code = job.get("exit_code") if isinstance(job.get("exit_code"), int) else None
        sig = job.get("signal") if isinstance(job.get("signal"), int) else None
        self.run.alive = False
        self._queue.put_nowait(ProcessExited(code=code, signal=sig, pid=None, launch=self.run.launch))

    def stop(self) -> None:
        self._stopped = True
        for n in self.nodes:
            n.tail.stop()
        self.batch.stop()
        self.tail.stop()
        self._started.set()
        for t in self._tasks:
            if not t.done():
                t.cancel()
