"""The sweep runner: apply → relaunch → ready → benchmark (× repeats) → record → next, unattended.

A sweep is hours of launches, so its queue is written down after every step and nothing is lost when
eagletui quits, the SSH link drops or the laptop reboots: ``eagletui sweep --resume`` (or the UI) reads
the queue back, reattaches to the server that is running on the host and goes on from there.

**Where the queue lives.** Locally, next to the recordings: ``<data dir>/sweeps/<target>-<profile>-
<hash>.json`` (dir 0700, file 0600, replaced atomically), keyed by target + profile path. The host's
run dir would survive the loss of the laptop, but the queue is the laptop's plan, the runs on the host
are the host's facts, and resuming reconciles the two: a variant marked *launching* or *benchmarking*
is matched to the live run on the host by its run id (or, when the kill came between the launch and
the write, by the launch config) and followed rather than launched again; a variant whose run is gone
is launched again. A variant *done* is never run twice; repeats already measured are kept.

A failed launch is recorded with its triage kind (``oom``, ``nccl``, ``timeout``…) and the sweep goes
on. :class:`SweepQueue` also holds the operations a person can do while it runs: skip, retry, abort,
move up/down. No Textual here; the headless command and the UI's queue view both drive this.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagletui.core import events as ev
from eagletui.core.state import ServerState
from eagletui.core.stats import mean_stdev
from eagletui.core.sweep import (
    Measured,
    SweepSpec,
    Variant,
    best,
    delta_pct,
    judge,
    main_effects,
    ranked,
    variant_profile,
)
from eagletui.session.sweep_jobs import job_slots, resume_variant, slot_profile

if TYPE_CHECKING:
    from eagletui.core.profile import Profile
    from eagletui.session.model import SessionModel
    from eagletui.workspace import Workspace

PENDING, LAUNCHING, BENCHMARKING, DONE, FAILED, SKIPPED = (
    "pending",
    "launching",
    "benchmarking",
    "done",
    "failed",
    "skipped",
)
IN_FLIGHT = (LAUNCHING, BENCHMARKING)
QUEUE_VERSION = 1
#: Extra benchmarks a variant may run in place of invalid repeats before it is marked failed.
MAX_RERUNS = 2
MAX_QUEUE_BYTES = 4 * 1024 * 1024


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


class SweepError(Exception):
    """A queue that cannot be used (damaged, from another sweep, locked by a running sweep)."""


@dataclass
class VariantState:
    index: int  # position in the profile's declared order (the baseline is 0)
    name: str
    settings: dict[str, Any]
    state: str = PENDING
    phase: str = ""  # the launch phase now (not persisted meaningfully; for views)
    run_id: str = ""
    launches: int = 0  # servers launched for this variant (a reattach is not a launch)
    attempts: int = 0
    repeats: list[dict[str, Any]] = field(default_factory=list)  # tok_s, accept, ttft_ms, error
    failure_kind: str = ""
    failure: str = ""
    launch_s: float | None = None  # launch → ready
    bench_s: float | None = None
    started_wall: float | None = None
    target: str = ""  # the host that took it (several hosts share one queue)

    @property
    def good(self) -> list[dict[str, Any]]:
        """Repeats that count: measured, no error, and valid by the run book's gate."""
        return [
            r
            for r in self.repeats
            if not r.get("error") and not r.get("invalid") and (r.get("tok_s") or 0) > 0
        ]

    def tok_s(self) -> tuple[float | None, float | None, int]:
        return mean_stdev([r["tok_s"] for r in self.good])

    def accept(self) -> float | None:
        return mean_stdev([r.get("accept") for r in self.good])[0]

    def ttft_ms(self) -> float | None:
        return mean_stdev([r.get("ttft_ms") for r in self.good])[0]


@dataclass
class SweepQueue:
    """The sweep's plan and progress; every change is saved by the runner (:meth:`save`)."""

    target: str
    profile: str  # the profile file's path
    fingerprint: str  # of the spec: a changed [sweep] is a different sweep
    repeats: int
    factors: list[str]
    variants: list[VariantState]
    order: list[int]  # indices in run order (reorder moves these)
    aborted: bool = False
    created: float = field(default_factory=time.time)
    path: Path | None = None

    # ------------------------------------------------------------------ building

    @classmethod
    def plan(cls, spec: SweepSpec, *, target: str, profile_path: str) -> SweepQueue:
        vs = [VariantState(i, v.name, dict(v.settings)) for i, v in enumerate(spec.variants)]
        return cls(
            target=target,
            profile=profile_path,
            fingerprint=spec_fingerprint(spec),
            repeats=spec.repeats,
            factors=list(spec.factors),
            variants=vs,
            order=list(range(len(vs))),
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("path", None)
        d["version"] = QUEUE_VERSION
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SweepQueue:
        if not isinstance(d, dict) or d.get("version") != QUEUE_VERSION:
            raise SweepError("not a sweep queue of this eagletui version")
        from eagletui.session.sweep_check import queue_problem

        problem = queue_problem(d)
        if problem is not None:
            raise SweepError(f"damaged sweep queue: {problem}")
        try:
            names = VariantState.__dataclass_fields__
            vs = [VariantState(**{k: v for k, v in x.items() if k in names}) for x in d["variants"]]
            q = cls(
                target=str(d["target"]),
                profile=str(d["profile"]),
                fingerprint=str(d["fingerprint"]),
                repeats=int(d["repeats"]),
                factors=[str(f) for f in d["factors"]],
                variants=vs,
                order=[int(i) for i in d["order"]],
                aborted=bool(d.get("aborted", False)),
                created=float(d.get("created", time.time())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SweepError(f"damaged sweep queue: {exc}") from None
        if sorted(q.order) != list(range(len(vs))) or [v.index for v in vs] != list(range(len(vs))):
            raise SweepError("damaged sweep queue: its order does not list every variant once")
        return q

    # ------------------------------------------------------------------ persistence

    def save(self, path: Path | None = None) -> None:
        """Atomically replace the queue file (0600): a kill mid-write leaves the previous one."""
        path = path or self.path
        if path is None:
            return
        from eagletui.core.private_files import private_dir

        private_dir(path.parent)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self.path = path

    @classmethod
    def load(cls, path: Path) -> SweepQueue:
        try:
            with open(path, "rb") as f:
                raw = f.read(MAX_QUEUE_BYTES + 1)
        except OSError as exc:
            raise SweepError(f"cannot read the sweep queue {path}: {exc}") from None
        if len(raw) > MAX_QUEUE_BYTES:
            raise SweepError(f"{path}: too large for a sweep queue")
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SweepError(f"{path}: not JSON: {exc}") from None
        except RecursionError:
            raise SweepError(f"{path}: not a sweep queue: nested too deep to read") from None
        try:
            q = cls.from_dict(data)
        except SweepError as exc:
            raise SweepError(f"{path}: {exc}") from None
        q.path = path
        return q

    # ------------------------------------------------------------------ queries

    @property
    def finished(self) -> bool:
        return self.aborted or self.next() is None and not self.in_flight()

    def in_flight(self) -> list[VariantState]:
        return [v for v in self.variants if v.state in IN_FLIGHT]

    def next(self, target: str | None = None) -> VariantState | None:
        """The variant to work on: one left in flight (a resume) first, else the next pending.
        With ``target``, a variant in flight on another host is that host's, not ours."""
        if self.aborted:
            return None
        for i in self.order:
            v = self.variants[i]
            if v.state in IN_FLIGHT and (target is None or v.target in ("", target)):
                return v
        for i in self.order:
            if self.variants[i].state == PENDING:
                return self.variants[i]
        return None

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for v in self.variants:
            out[v.state] = out.get(v.state, 0) + 1
        return out

    def cycle_s(self) -> float | None:
        """Learned seconds per variant (launch → ready → benchmarks), from this sweep's done ones."""
        cycles = [
            (v.launch_s or 0) + (v.bench_s or 0) for v in self.variants if v.state == DONE and v.launch_s
        ]
        return sum(cycles) / len(cycles) if cycles else None

    def eta_s(self, now: float | None = None) -> float | None:
        """Seconds until the sweep is done, from the learned cycle time (None until one variant finished)."""
        cycle = self.cycle_s()
        if cycle is None:
            return None
        now = time.time() if now is None else now
        left = sum(1 for v in self.variants if v.state == PENDING) * cycle
        for v in self.in_flight():
            left += max(0.0, cycle - (now - (v.started_wall or now)))
        return left

    # ------------------------------------------------------------------ operations

    def skip(self, index: int) -> str | None:
        v = self.variants[index]
        if v.state != PENDING:
            return f"{v.name} is {v.state}: only a pending variant can be skipped"
        v.state = SKIPPED
        return None

    def retry(self, index: int) -> str | None:
        v = self.variants[index]
        if v.state not in (FAILED, SKIPPED):
            return f"{v.name} is {v.state}: only a failed or skipped variant can be retried"
        v.state, v.failure, v.failure_kind, v.run_id, v.repeats = PENDING, "", "", "", []
        self.aborted = False
        return None

    def abort(self) -> None:
        """Stop after the variant in flight; what is pending stays pending (a resume clears it)."""
        self.aborted = True

    def move(self, index: int, by: int) -> str | None:
        """Move a pending variant ``by`` places in the run order (negative = earlier)."""
        if self.variants[index].state != PENDING:
            return "only a pending variant can be moved"
        pos = self.order.index(index)
        new = max(0, min(len(self.order) - 1, pos + by))
        self.order.insert(new, self.order.pop(pos))
        return None

    # ------------------------------------------------------------------ results

    def measured(self) -> list[Measured]:
        out = []
        for v in self.variants:
            mean, sd, n = v.tok_s() if v.state == DONE else (None, None, 0)
            out.append(Measured(v.name, v.settings, mean, sd, n))
        return out

    def report(self, verdict: Any = None, profile: Profile | None = None) -> dict[str, Any]:
        """Every variant with its settings, state, tok/s, accept, Δ % vs variant 0 and verdict; the
        ranking, each factor's main effect and the best combination."""
        measured = self.measured()
        base = measured[0].tok_s if measured else None
        base_m = measured[0] if measured else None
        rows = []
        for v, m in zip(self.variants, measured, strict=True):
            accept, ttft = v.accept(), v.ttft_ms()
            if v.state == DONE:
                spec_on = _is_spec(profile, v) if profile is not None else accept is not None
                verdict_s, reasons = judge(
                    m.tok_s,
                    accept,
                    ttft,
                    base if v.index else None,
                    verdict,
                    is_spec=spec_on,
                    stdev=m.stdev,
                    n=m.n,
                    base_stdev=base_m.stdev if base_m is not None else None,
                    base_n=base_m.n if base_m is not None else 1,
                )
            elif v.state == FAILED and v.failure_kind == "benchmark":
                verdict_s, reasons = "fail", [v.failure]
            elif v.state == FAILED:
                verdict_s, reasons = "launch-failed", [f"{v.failure_kind}: {v.failure}".strip(": ")]
            else:
                verdict_s, reasons = v.state, []
            rows.append(
                {
                    "index": v.index,
                    "name": v.name,
                    "settings": {k: v2 for k, v2 in v.settings.items()},
                    "state": v.state,
                    "tok_s": _r(m.tok_s, 2),
                    "tok_s_stdev": _r(m.stdev, 2),
                    "accept_length": _r(accept, 3),
                    "ttft_ms": _r(ttft, 1),
                    "delta_pct": _r(delta_pct(m.tok_s, base), 2) if v.index else (0.0 if base else None),
                    "verdict": verdict_s,
                    "reasons": reasons,
                    "triage_kind": v.failure_kind or None,
                    "run_id": v.run_id or None,
                    "host": v.target or None,
                    "launches": v.launches,
                    "repeats": v.repeats,
                    "launch_s": _r(v.launch_s, 2),
                    "bench_s": _r(v.bench_s, 2),
                }
            )
        top = best(measured)
        return {
            "target": self.target,
            "profile": self.profile,
            "repeats": self.repeats,
            "baseline": self.variants[0].name if self.variants else None,
            "variants": rows,
            "ranking": [m.name for m in ranked(measured)],
            "effects": [e.to_dict() for e in main_effects(measured, self.factors)],
            "best": None
            if top is None
            else {"name": top.name, "settings": top.settings, "tok_s": _r(top.tok_s, 2)},
            "counts": self.counts(),
            "aborted": self.aborted,
        }


def _is_spec(profile: Profile, v: VariantState) -> bool:
    try:
        p = variant_profile(profile, Variant(v.name, v.settings))
    except ValueError:
        return False
    return p.kind.is_spec(p.args)


def _r(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def spec_fingerprint(spec: SweepSpec) -> str:
    blob = json.dumps(
        {"v": [[v.name, v.settings] for v in spec.variants], "r": spec.repeats}, sort_keys=True, default=str
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def queue_path(target: str, profile_path: str, root: str | Path | None = None) -> Path:
    """``<data dir>/sweeps/<target>-<profile stem>-<hash>.json``, one queue per target + profile."""
    if root is None:
        from eagletui.config import data_dir

        root = data_dir() / "sweeps"
    full = str(Path(profile_path).expanduser().resolve())
    h = hashlib.sha256(f"{target}\0{full}".encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{target}-{Path(profile_path).stem}")[:60]
    return Path(root).expanduser() / f"{slug}-{h}.json"


def pending_sweep(target: str, profile_path: str, root: str | Path | None = None) -> SweepQueue | None:
    """The unfinished sweep queue for this target + profile, if any (for ``eagletui connect``'s hint)."""
    path = queue_path(target, profile_path, root)
    if not path.exists():
        return None
    with contextlib.suppress(SweepError):
        q = SweepQueue.load(path)
        return None if q.finished else q
    return None


class QueueLock:
    """One runner per queue: an exclusive ``flock`` on ``<queue>.lock`` (released by the kernel when
    the process dies, SIGKILL included, so a killed sweep never blocks its resume)."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(path.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl

        from eagletui.core.private_files import private_dir

        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise SweepError(f"another eagletui sweep is running this queue ({self.path})") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# ------------------------------------------------------------------------------------------ runner


async def wait_ready(model: SessionModel, timeout: float, poll: float = 0.1) -> tuple[str, str]:
    """Until the phase machine says the current launch serves: ("", "") then, else (kind, why)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        la = model.state.launch
        status = la.status if la is not None else None
        if status == ServerState.READY:
            return "", ""
        if la is not None and status in (ServerState.FAILED, ServerState.EXITED, ServerState.STOPPED):
            if la.failure is not None:
                return la.failure.kind, la.failure.message
            return "exited", "the server process exited before it was ready"
        await asyncio.sleep(poll)
    return "timeout", f"not ready after {timeout:.0f}s"


Say = Callable[[str], None]


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
    ) -> None:
        self.profile = profile
        #: a Slurm sweep's job slot (eagletui.session.sweep_jobs): its port offset and its jobs
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
        self._unsub = model.subscribe(self._observe)

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
        from eagletui.core.profile import config_diff

        return bool(run.config) and not {
            k: d for k, d in config_diff(run.config, prof.snapshot()).items() if k != "target"
        }

    def _problems(self, r: ev.BenchmarkResult) -> list[str]:
        """Why the run book holds ``r`` invalid (the same gate as the runs table); [] when it counts."""
        run = self.model.runbook.runs.get(r.launch)
        if run is None:
            return []
        for res, problems in run.result_problems():
            if res is r or (res.bench == r.bench and res.launch == r.launch):
                return list(problems)
        return []

    async def run(self) -> SweepQueue:
        """Work through the queue until nothing is left (or it is aborted)."""
        try:
            while (v := self.queue.next(self.worker)) is not None:
                await self._run_variant(v)
        finally:
            self.current = None
            self._unsub()
        return self.queue

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
        v.started_wall = time.time()
        if resumed:
            self.say(
                f"[{v.index + 1}/{len(q.variants)}] {v.name}: following its running server {self.ws.run.run_id if self.ws.run else ''}"
            )
            if self.ws.run is not None:
                v.run_id = self.ws.run.run_id
        else:
            v.state, v.phase, v.run_id = LAUNCHING, "launch", ""
            v.repeats = []  # a new server: earlier repeats were measured on another one
            self._changed()
            self.say(f"[{v.index + 1}/{len(q.variants)}] {v.name}: launching")
            try:
                await self.ws.launch(prof)
            except Exception as exc:
                v.state, v.failure_kind, v.failure = FAILED, "launch-refused", f"{exc}"[:500]
                self.say(f"  launch failed: {v.failure}")
                self._changed()
                return
            v.launches += 1
            v.run_id = self.ws.run.run_id if self.ws.run is not None else ""
            self._changed()
        t0 = time.monotonic()
        kind, why = await wait_ready(self.model, prof.ready_timeout_s)
        if kind:
            v.state, v.failure_kind, v.failure = FAILED, kind, why[:500]
            self.say(f"  launch failed ({kind}): {why}")
            self._notice(f"sweep: {v.name} failed to launch ({kind}); going on", "warning")
            if kind == "timeout":
                with contextlib.suppress(Exception):
                    await self.ws.stop()  # ours and hung: the next variant relaunches anyway
            self._changed()
            return
        if not resumed or v.launch_s is None:
            la = self.model.state.launch
            total = sum(la.phase_durations().values()) if la is not None else 0.0
            v.launch_s = total or (time.monotonic() - t0)
        v.state, v.phase = BENCHMARKING, "benchmark"
        self._changed()
        self.say(
            f"  ready after {v.launch_s:.1f}s{_slowest_phases(self.model)}; "
            f"benchmarking × {q.repeats - len(v.repeats)}"
        )
        t1 = time.monotonic()
        # an invalid repeat (the validity gate: failed requests, a dead server, a dropped link …) does
        # not count and is run again, at most MAX_RERUNS times a variant
        while len(v.good) < q.repeats and len(v.repeats) < q.repeats + MAX_RERUNS:
            r = await self.ws.benchmark()
            problems = self._problems(r)
            v.repeats.append(
                {
                    "tok_s": r.output_throughput,
                    "accept": r.accept_length,
                    "ttft_ms": (r.stats.get("ttft_ms") or {}).get("median"),
                    "requests": r.requests,
                    "failed": r.failed,
                    "error": r.error,
                    "invalid": problems,
                }
            )
            acc = f", accept {r.accept_length:.2f}" if r.accept_length else ""
            bad = f"; invalid ({'; '.join(problems)}), run again" if problems else ""
            self.say(f"  repeat {len(v.good)}/{q.repeats}: {r.output_throughput:.1f} tok/s{acc}{bad}")
            self._changed()
        v.bench_s = (v.bench_s or 0.0) + (time.monotonic() - t1)
        v.state, v.phase = DONE, ""
        if not v.good:
            v.state, v.failure_kind, v.failure = (
                FAILED,
                "benchmark",
                "; ".join(
                    sorted(
                        {
                            str(r.get("error") or "; ".join(r.get("invalid") or []) or "no tokens")
                            for r in v.repeats
                        }
                    )
                )[:500],
            )
        mean, _sd, _n = v.tok_s()
        if mean is not None:
            acc_mean = v.accept()
            self._notice(
                f"sweep: {v.name}: {mean:.1f} tok/s" + (f", accept {acc_mean:.2f}" if acc_mean else "")
            )
        self._changed()
