"""The sweep runner: clean GPUs → launch → ready → every cell benchmarked in rounds → record → next.

One :class:`SweepRunner` per host (or job slot) drains the shared :class:`~eagletui.session.sweep.queue.
SweepQueue`. For each launch:

1. **A clean GPU.** The previous launch's server is stopped, then the runner waits until every GPU's
   used memory is back to where it was right before that launch (:func:`~eagletui.remote.gpu.
   wait_released`, bounded by ``sweep.gpu_wait_s``). When the bound passes with memory still held the
   sweep **pauses** — the launch stays pending, the holders are named — rather than start a server on
   a GPU that is not free: ``--resume`` goes on once it is. The reading is kept in the queue
   (:mod:`~eagletui.session.sweep.gate`), so a resume's first launch waits for it the same way.
2. **Launch**, and wait until ready. A launch that runs out of GPU memory while another process still
   held memory on the GPU (torch's message says how much: :func:`~eagletui.core.host.gpu_memory.
   others_in_oom`) right after the previous server stopped is waited for and launched **once** more,
   and marked so (``oom_retry``).
3. **Benchmarks in rounds**: every cell (client point) once — its first run warms up at its own
   concurrency — then again each cell that still needs runs (:meth:`~eagletui.session.sweep.queue.SweepQueue.
   step`: fixed repeats, or adaptive until sure), so drift within a launch spreads over all cells.
4. **Record** the launch's, the benchmarks' and the between-launch times in the phase history, so the
   next sweep's plan has an ETA before it starts.

Cancelling :meth:`SweepRunner.run` (Ctrl-C, quitting the UI) leaves the server running and the launch
in flight marked so that a resume reattaches to it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from eagletui.core import events as ev
from eagletui.core.profile.sweep import Variant, apply_client, variant_profile
from eagletui.core.runs.latency import goodput_of
from eagletui.core.runs.validity import repeats_alike, timed_truly
from eagletui.session.sweep.cells import (
    BENCHMARKING,
    DONE,
    FAILED,
    IN_FLIGHT,
    LAUNCHING,
    MAX_RERUNS,
    PENDING,
    VariantState,
    client_fingerprint,
    why_not_counted,
)
from eagletui.session.sweep.gate import GateReference, reading_without
from eagletui.session.sweep.jobs import job_slots, resume_variant, slot_profile
from eagletui.session.sweep.kept_runs import keep_run
from eagletui.session.sweep.maxrate import search_max_rate
from eagletui.session.sweep.queue import SweepQueue
from eagletui.session.waits import wait_ready

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile
    from eagletui.session.model import SessionModel
    from eagletui.workspace import Workspace

#: Other processes' memory in an OOM message that says "the previous server had not released".
OOM_OTHERS_GIB = 1.0
#: sweep.step_profile: decode cycles asked of /start_profile (the bound on the whole capture is the
#: timings' ``sweep.profile_s``; a retry after an OOM without telemetry waits ``sweep.oom_settle_s``)
PROFILE_CYCLES = 5


def _timed(v: VariantState) -> bool:
    """A run of this launch timed its cycles truly: it counts, or the gate left it out only because the
    drafter accepted nothing (a random-weight draft: the cycle model still reads its timing, so its
    step profile is worth taking; seen on the lent H200, where every spec run was such a run)."""
    for c in v.cells:
        for r in c.repeats:
            bad = r.get("invalid")
            problems = [str(x) for x in bad] if isinstance(bad, list) else ([str(bad)] if bad else [])
            tok = r.get("tok_s")
            if r.get("error") or not isinstance(tok, int | float) or tok <= 0:
                continue
            if timed_truly(problems):
                return True
    return False


Say = Callable[[str], None]


def _slowest_phases(model: SessionModel) -> str:
    """`` (load_target 1.8s, warmup 0.6s, …)``: the launch's phases in one line, slowest first (a
    sweep prints one line per variant, not a line per phase)."""
    from eagletui.core.wording import phase_label

    la = model.state.launch
    if la is None:
        return ""
    durations = sorted(
        ((p, s) for p, s in la.phase_durations().items() if s >= 0.05 and p != "ready"), key=lambda x: -x[1]
    )
    if not durations:
        return ""
    return " (" + ", ".join(f"{phase_label(p)} {s:.1f}s" for p, s in durations[:3]) + ")"


class SweepRunner:
    """Runs a :class:`SweepQueue` on one connected :class:`Workspace` whose events feed ``model``.

    ``on_change`` is called after every state change (the UI repaints its queue view); the queue is
    saved at the same moments. Cancelling :meth:`run` (Ctrl-C, quitting the UI) leaves the server
    running and the variant in flight marked so that a resume reattaches to it."""

    def __init__(
        self,
        profile: Profile,
        queue: SweepQueue,
        workspace: Workspace,
        model: SessionModel,
        *,
        say: Say | None = None,
        on_change: Callable[[], None] | None = None,
        worker: str | None = None,
        slot: int = 0,
        pick: Callable[[SweepQueue], VariantState | None] | None = None,
        after: Callable[[SweepRunner, VariantState], None] | None = None,
    ) -> None:
        self.profile = profile
        #: the workspace's timings: the GPU gate's and the profile capture's waits, the clock of the ETA
        self.timings = workspace.timings
        self.clock = workspace.timings.clock
        #: a Slurm sweep's job slot (eagletui.session.sweep.jobs): its port offset and its jobs
        self.slot = slot
        #: who claims variants in the shared queue: the host (two runners on one host need two names)
        self.worker = worker or workspace.target
        self.queue = queue
        self.ws = workspace
        self.model = model
        self.say = say or (lambda _m: None)
        self.on_change = on_change or (lambda: None)
        self.current: VariantState | None = None
        self._reattached = False
        #: GPU memory right before the last launch (a resume starts from the one the queue kept)
        self.reference = GateReference(queue, self.worker)
        self._stopped_at: float | None = None  # when this runner last stopped a server of the sweep
        self._resumed = False
        #: ``eagletui tune``: which pending variant runs next (None: stop), and what to note after each
        #: one; a sweep runs its queue in order and notes nothing
        self.pick = pick
        self.after = after
        self._unsub = model.subscribe(self._observe)

    @property
    def history(self) -> Any:
        return getattr(self.model, "history", None)

    def _observe(self, e: ev.Event) -> None:
        cur = self.current
        if cur is not None and isinstance(e, ev.PhaseStarted):
            cur.phase = e.phase
            self.on_change()

    def _notice(self, message: str, level: str = "info") -> None:
        """Into the session (log view, recording): which variant the launches and results belong to."""
        with contextlib.suppress(Exception):
            self.model.dispatch(ev.Notice(level=level, message=message, source="sweep"))

    def _changed(self) -> None:
        self.queue.save()
        self.on_change()

    async def reattach(self) -> None:
        """Follow eagletui's live run on the host, if any (a resume after a kill, a reboot, lost SSH)."""
        with contextlib.suppress(Exception):
            self._reattached = await self.ws.attach_newest()

    def adopt_current(self) -> None:
        """The workspace already follows eagletui's live run (the UI reattached on connect): a
        variant left in flight may be matched to it instead of launched again."""
        run = self.ws.run
        self._reattached = run is not None and run.owned

    def _matches(self, v: VariantState, prof: Profile) -> bool:
        """Is the server we follow this variant's? By run id, else by its launch config."""
        run = self.ws.run
        if run is None or not run.owned or not self._reattached:
            return False
        if v.run_id:
            return run.run_id == v.run_id
        from eagletui.core.profile.model import config_diff

        return bool(run.config) and not {
            k: d for k, d in config_diff(run.config, prof.snapshot()).items() if k != "target"
        }

    async def run(self) -> SweepQueue:
        """Work through the queue until nothing is left (or it is aborted or paused)."""
        q = self.queue
        if q.paused:
            q.paused, q.aborted = "", False  # a resume: the gate looks again
        #: a resume of a sweep that launched before: without a kept reading the gate still looks
        self._resumed = q.started_wall is not None
        if q.started_wall is None:
            q.started_wall = self.clock.wall()
        q.note_eta(history=self.history, when="the start")  # checked against the time it takes
        try:
            while (v := self._next()) is not None:
                await self._run_variant(v)
                if self.after is not None:
                    self.after(self, v)
                    self._changed()
                if q.paused:
                    break
        finally:
            self.current = None
            self._unsub()
        if q.finished and not q.paused and q.finished_wall is None:
            q.finished_wall = self.clock.wall()
            q.save()
        return q

    def _next(self) -> VariantState | None:
        """The variant left in flight (a resume follows it), else the next in order or the one ``pick``
        chooses."""
        v = self.queue.next(self.worker)
        if self.pick is None or v is None or v.state in IN_FLIGHT:
            return v
        return self.pick(self.queue)

    # ------------------------------------------------------------------ the GPU gate

    async def _stop_previous(self, v: VariantState) -> bool | None:
        """Stop the server of the previous launch (ours, still running) before the next one: True when
        there was one to stop, False when there was none, None when the stop failed (the sweep is then
        paused: a second server is never started beside one that would not stop)."""
        run = self.ws.run
        if run is None or not run.owned or not run.alive:
            return False
        if self.reference.reading is None:
            # a resumed sweep: no reading from before this server's launch; the gate then waits
            # until its own processes' memory is gone from the reading taken now
            reading = await reading_without(self.ws, run, self.timings.sweep.gate_read_s)
            if reading is not None:
                self.reference.keep(reading)
        try:
            await self.ws.stop()
        except Exception as exc:
            self._pause(v, f"stopping launch #{run.launch} (run {run.run_id}) failed: {exc}")
            return None
        self._stopped_at = self.clock.monotonic()
        return True

    def _pause(self, v: VariantState, why: str) -> None:
        """Stop the sweep before ``v`` (left pending) and say why; ``--resume`` goes on from there."""
        q = self.queue
        v.state, v.phase = PENDING, ""
        q.paused, q.aborted = why, True
        self.say(f"  {why}")
        self.say(
            "  the sweep is paused so that no launch starts on GPUs that are not free; free them and resume"
        )
        self._notice(f"sweep paused: {why}", "error")
        self._changed()

    async def _gate(self, v: VariantState, label: str) -> bool:
        """Wait for the GPUs to be back to their reading from before the previous launch; False (and
        the sweep paused, the launch still pending) when the bound passed with memory still held."""
        from eagletui.remote.gpu import wait_released

        if self.ws.transport is None:
            return True
        if job_slots(self.profile):
            # a Slurm job runs on whichever node the scheduler gives it, GPUs allocated to it alone: the
            # login node's nvidia-smi says nothing about them, and the allocation is the gate
            v.gate = {"status": "scheduler", "waited_s": 0.0, "message": "GPUs allocated by Slurm"}
            return True
        q = self.queue
        before, what = self.reference.for_gate(label, resumed=self._resumed)
        res = await wait_released(
            self.ws.transport, before, timeout=q.gpu_wait_s, timings=self.timings, say=self.say, label=what
        )
        v.gate = res.to_dict()
        if res.status == "held":
            self._pause(v, res.message)
            return False
        if res.status == "clean" and res.waited_s >= 0.5:
            self.say(f"  GPU memory released after {res.waited_s:.1f}s")
        if res.reading is not None:
            self.reference.keep(res.reading)  # the reading right before this launch
        return True

    def _oom_retry_reason(self, v: VariantState, kind: str) -> str:
        """Why this failed launch is launched once more ("" when it is not): an OOM while another
        process still held GPU memory, right after this sweep stopped a server."""
        if kind != "oom" or v.oom_retry or self._stopped_at is None:
            return ""
        from eagletui.core.host.gpu_memory import others_in_oom

        la = self.model.state.launch
        failure = la.failure if la is not None else None
        text = " ".join(x for x in (getattr(failure, "line", ""), getattr(failure, "message", "")) if x)
        others = others_in_oom(text)
        ago = self.clock.monotonic() - self._stopped_at
        gate = v.gate.get("status", "unknown")
        if others is not None and others >= OOM_OTHERS_GIB:
            return (
                f"ran out of GPU memory while other processes still held {others:.1f} GiB, {ago:.0f}s after "
                f"the previous server stopped (GPU gate: {gate})"
            )
        if others is None and gate == "unknown":
            return (
                f"ran out of GPU memory {ago:.0f}s after the previous server stopped, with no GPU telemetry "
                "to wait on its release"
            )
        return ""

    # ------------------------------------------------------------------ one launch

    async def _run_variant(self, v: VariantState) -> None:
        q = self.queue
        self.current = v
        try:
            prof = variant_profile(self.profile, Variant(v.name, v.settings))
        except ValueError as exc:
            v.state, v.failure_kind, v.failure = FAILED, "config", str(exc)
            self._changed()
            return
        if job_slots(self.profile):
            # variants are Slurm jobs: each slot its own port; a variant in flight is followed by its job
            prof = slot_profile(prof, self.slot)
            if v.state in IN_FLIGHT and not self._matches(v, prof):
                self._reattached = await resume_variant(self.ws, v, prof)
        resumed = v.state in IN_FLIGHT and self._matches(v, prof)
        v.target = self.worker  # claimed before the first await: another host's runner skips it
        self._reattached = False  # a reattached run is used once, by the variant it belongs to
        self._notice(f"sweep {q.order.index(v.index) + 1}/{len(q.variants)}: {v.name}")
        v.attempts += 1
        v.started_wall = self.clock.wall()
        if resumed:
            self.say(
                f"[{v.index + 1}/{len(q.variants)}] {v.name}: following its running server {self.ws.run.run_id if self.ws.run else ''}"
            )
            if self.ws.run is not None:
                v.run_id = self.ws.run.run_id
            if await self._ready(v, prof, self.clock.monotonic(), learn=False):
                return
        else:
            v.state, v.phase, v.run_id = LAUNCHING, "launch", ""
            for c in v.cells:  # a new server: earlier runs were measured on another one
                c.repeats, c.stop, c.stop_text = [], "", ""
            self._changed()
            t_over = self.clock.monotonic()
            prev = self.ws.run
            label = f"launch #{prev.launch}" if prev is not None and prev.owned else "the previous launch"
            stopped = await self._stop_previous(v)
            if stopped is None:
                return
            v.phase = "waiting for GPU memory"
            self.on_change()
            if not await self._gate(v, label):
                return
            # the time between launches (a stop and the release of its memory): only where there was one
            v.overhead_s = self.clock.monotonic() - t_over if stopped else None
            self.say(f"[{v.index + 1}/{len(q.variants)}] {v.name}: launching")
            kind = await self._launch(v, prof)
            if kind is None:
                return
            reason = self._oom_retry_reason(v, kind)
            if reason:
                v.oom_retry = reason
                self.say(f"  {reason}: waiting for the GPUs, then launching once more")
                self._notice(f"sweep: {v.name} {reason}; launching once more", "warning")
                self._changed()
                if v.gate.get("status") == "unknown":
                    await self.clock.sleep(min(q.gpu_wait_s, self.timings.sweep.oom_settle_s))
                self._stopped_at = self.clock.monotonic()
                if not await self._gate(v, f"launch #{self.ws.launch_no}"):
                    return
                v.state, v.phase, v.failure_kind, v.failure = LAUNCHING, "launch", "", ""
                kind = await self._launch(v, prof)
                if kind is None:
                    return
            if kind:
                return
        await self._benchmark_cells(v, prof)

    async def _launch(self, v: VariantState, prof: Profile) -> str | None:
        """Launch and wait until ready. None: refused (recorded); "": ready; else the failure kind
        (recorded, the variant failed)."""
        t0 = self.clock.monotonic()
        try:
            await self.ws.launch(prof)
        except Exception as exc:
            v.state, v.failure_kind, v.failure = FAILED, "launch-refused", f"{exc}"[:500]
            self.say(f"  launch failed: {v.failure}")
            self._changed()
            return None
        v.launches += 1
        v.run_id = self.ws.run.run_id if self.ws.run is not None else ""
        self._changed()
        return await self._ready(v, prof, t0)

    async def _ready(self, v: VariantState, prof: Profile, t0: float, *, learn: bool = True) -> str:
        """Wait until the launch serves: "" then, else its failure kind (recorded, the variant failed).
        A followed (resumed) launch's time is its phases' sum and teaches the history nothing."""
        kind, why = await wait_ready(self.model, prof.ready_timeout_s, self.timings)
        if kind:
            v.state, v.failure_kind, v.failure = FAILED, kind, why[:500]
            self.say(f"  launch failed ({kind}): {why}")
            self._notice(f"sweep: {v.name} failed to launch ({kind}); going on", "warning")
            if kind == "timeout":
                with contextlib.suppress(Exception):
                    await self.ws.stop()  # ours and hung: the next variant relaunches anyway
            self._stopped_at = self.clock.monotonic()
            self._changed()
            return kind
        if not learn:
            if v.launch_s is None:
                la = self.model.state.launch
                v.launch_s = sum(la.phase_durations().values()) if la is not None else None
            return ""
        v.launch_s = self.clock.monotonic() - t0
        learned: dict[str, float] = {"launch": v.launch_s}
        if v.overhead_s is not None and v.launches == 1:
            learned["overhead"] = v.overhead_s
        self._learn("sweep:" + (v.launch_key or self._key(self.model.state.launch)), learned)
        return ""

    def _problems(self, r: ev.BenchmarkResult) -> list[str]:
        """Why the run book holds ``r`` invalid (the same gate as the runs table); [] when it counts."""
        run = self.model.runbook.runs.get(r.launch)
        if run is None:
            return []
        for res, problems in run.result_problems():
            if res is r or (res.bench == r.bench and res.launch == r.launch):
                return list(problems)
        return []

    def _key(self, la: Any) -> str:
        from eagletui.core.phases.history import history_key

        return history_key(la.config) if la is not None and la.config else ""

    def _learn(self, key: str, durations: dict[str, float]) -> None:
        """Timings for the next sweep's ETA (the history is optional: a sweep without one still runs)."""
        h = self.history
        if h is None or not key or key.endswith(":"):
            return
        with contextlib.suppress(Exception):
            h.record(key, {k: float(x) for k, x in durations.items() if x is not None and x >= 0})

    async def _benchmark_cells(self, v: VariantState, prof: Profile) -> None:
        q = self.queue
        policy = q.repeat_policy
        v.state, v.phase = BENCHMARKING, "benchmark"
        self._changed()
        self.say(
            f"  ready after {v.launch_s or 0:.1f}s{_slowest_phases(self.model)}; benchmarking {len(v.cells)} cell"
            f"{'s' if len(v.cells) != 1 else ''} ({policy.describe()})"
        )
        t1 = self.clock.monotonic()
        warm: set[int] = set()
        limit = policy.most + MAX_RERUNS
        while True:
            todo = [
                ci
                for ci, c in enumerate(v.cells)
                if not c.stop and len(c.repeats) < limit and q.step(v, ci).more
            ]
            if not todo:
                break
            for ci in todo:
                await self._bench_once(v, ci, prof, warm_up=ci not in warm)
                warm.add(ci)
            q.note_eta(history=self.history, when=f"launch {q.order.index(v.index) + 1}")
            self._changed()
        for ci, c in enumerate(v.cells):
            st = q.step(v, ci)
            if not c.stop:
                c.stop = st.reason if not st.more else "attempts"
                c.stop_text = st.text() if st.more is False else f"gave up after {len(c.repeats)} attempts"
        v.bench_s = (v.bench_s or 0.0) + (self.clock.monotonic() - t1)
        if q.step_profile and _timed(v) and prof.kind.is_spec(prof.args):
            await self._step_profile(v)
        if self.profile.sweep is not None and self.profile.sweep.max_rate is not None and v.good:
            await search_max_rate(self, v, prof)  # [sweep.max_rate]: the same launch, Poisson arrivals
        v.state, v.phase = DONE, ""
        if not v.good:
            v.state, v.failure_kind, v.failure = (
                FAILED,
                "benchmark",
                "; ".join(sorted({why_not_counted(r) for c in v.cells for r in c.repeats}))[:500],
            )
        for c in v.cells:
            mean, _sd, _n = c.tok_s()
            if mean is not None:
                acc = c.accept()
                where = f" at {c.label}" if len(v.cells) > 1 else ""
                self._notice(
                    f"sweep: {v.name}{where}: {mean:.1f} tok/s" + (f", accept {acc:.2f}" if acc else "")
                )
        e = q.note_eta(history=self.history, when=f"the end of launch {q.order.index(v.index) + 1}")
        if not q.finished:
            from eagletui.core.sweep.plan import fmt_duration

            done = sum(1 for x in q.variants if x.state not in (PENDING, *IN_FLIGHT))
            eta = fmt_duration(e.seconds) if e.complete else f"≥ {fmt_duration(e.seconds)}"
            self.say(f"  sweep: {done}/{len(q.variants)} launches, {q.runs()} benchmarks so far; ETA {eta}")
        self._changed()

    async def _step_profile(self, v: VariantState) -> None:
        """sweep.step_profile: a few decode cycles of this launch through SGLang's /start_profile, after
        its benchmarks (the profiler's overhead never touches a measured run). The profile joins the run
        book like the UI's P: the cycle model predicts the next launches from its split of a cycle. A
        capture that fails is said and kept on the variant; it fails nothing else."""
        v.phase = "step profile"
        self.on_change()
        self.say(f"  step profile: {PROFILE_CYCLES} decode cycles through /start_profile")
        level = "info"
        try:
            e = await self.ws.profile_step(num_steps=PROFILE_CYCLES, timeout=self.timings.sweep.profile_s)
        except Exception as exc:  # a workspace without a server, a transport error: said, not raised
            note, level = f"none: {exc}", "warning"
        else:
            s = e.summary
            if e.error or not s:
                note, level = f"none: {e.error or 'the traces held no decode step'}", "warning"
            elif s.get("unit") != "cycle":
                note, level = (
                    "no complete speculative cycle in the traces (the cycle model cannot use it)",
                    "warning",
                )
            else:
                parts = s.get("parts") or {}
                ms = " + ".join(
                    f"{k.replace('_', ' ')} {parts[k].get('gpu_ms', 0):.2f}"
                    for k in ("draft", "verify", "draft_extend")
                    if isinstance(parts.get(k), dict)
                )
                note = f"{s.get('steps')} decode cycles; GPU spans {ms} ms per cycle"
        v.profile_note = note[:400]
        self.say(f"  step profile: {v.profile_note}")
        self._notice(f"sweep: {v.name}: step profile: {v.profile_note}", level)
        self._changed()

    async def _bench_once(self, v: VariantState, ci: int, prof: Profile, *, warm_up: bool) -> None:
        c = v.cells[ci]
        settings = apply_client(prof.bench, c.client)
        settings = dataclasses.replace(settings, repeats=1)
        if warm_up:
            # the first benchmark of a cell in this launch warms up at its own concurrency (a full round:
            # bench/prompts.py), whatever the profile's warmup: cold kernels are not the setting's speed
            settings = dataclasses.replace(settings, warmup=max(1, settings.warmup))
        t = self.clock.monotonic()
        r = await self.ws.benchmark(settings=settings)
        seconds = self.clock.monotonic() - t
        problems = self._problems(r)
        # kept beside the queue: a resume's frontier folds every session's counted runs
        kept = "" if r.error or problems else keep_run(self.queue, v, self.model, r, self.profile)
        c.repeats.append(
            {
                "tok_s": r.output_throughput,
                "accept": r.accept_length,
                "ttft_ms": (r.stats.get("ttft_ms") or {}).get("median"),
                "concurrency": settings.concurrency,
                "goodput_tok_s": goodput_of(r, prof.slo),  # [sweep] objective = "goodput" ranks by it
                "requests": r.requests,
                "failed": r.failed,
                "error": r.error,
                "invalid": problems,
                "seconds": round(seconds, 3),
                "warm": warm_up,
                "kept": kept,
            }
        )
        if not r.error and not problems:
            key = "sweep-bench:" + v.launch_key + "|" + client_fingerprint(c.client)
            self._learn(key, {"first" if warm_up else "next": seconds})
        acc = f", accept {r.accept_length:.2f}" if r.accept_length else ""
        where = f" {c.label}" if len(v.cells) > 1 else ""
        err = f" ({r.error})" if r.error else ""
        pol = self.queue.repeat_policy
        of = f"/{pol.repeats}" if not pol.adaptive else ""
        tok = (
            f"{r.output_throughput:.1f} tok/s" if isinstance(r.output_throughput, int | float) else "no tok/s"
        )
        if problems:
            # the validity gate (issue 19): it does not count; a cause that a rerun of this launch would
            # repeat (a drafter that accepts nothing) ends the cell at once instead of wasting runs
            n = len(c.repeats)
            if repeats_alike(problems):
                c.stop, c.stop_text = (
                    "invalid",
                    f"invalid: {'; '.join(problems)} (not run again: every run of this launch would be)",
                )
                tail = "not run again (a rerun of this launch would be invalid the same way)"
            else:
                tail = "does not count; running it again"
            self.say(f"  attempt {n}{where}: {tok}{acc}{err}; invalid ({'; '.join(problems)}): {tail}")
        else:
            self.say(f"  repeat {len(c.good)}{of}{where}: {tok}{acc}{err}")
        self._changed()
