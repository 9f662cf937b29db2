"""The sweep queue: launches, each benchmarking every client point, written down after every step.

A sweep is hours of launches, so its queue is written down after every step and nothing is lost when
eagletui quits, the SSH link drops or the laptop reboots: ``eagletui sweep --resume`` (or the UI) reads
the queue back, reattaches to the server that is running on the host and goes on from there.

**What is queued.** One entry (:class:`VariantState`) per *launch*: a server config of the sweep, plus
— with the drift check — the baseline again at the end. Each entry holds one :class:`CellState` per
client point (concurrency, prompt set, lengths, request rate: :mod:`eagletui.core.sweep.effects`), all
benchmarked within that one launch; the runs of a cell are its repeats. The order and the ETA follow
:mod:`eagletui.core.sweep.plan`, the repeats and decisions :mod:`eagletui.core.sweep.decide`.

**Where the queue lives.** Locally, next to the recordings: ``<data dir>/sweeps/<target>-<profile>-
<hash>.json`` (dir 0700, file 0600, replaced atomically), keyed by target + profile path. The host's
run dir would survive the loss of the laptop, but the queue is the laptop's plan, the runs on the host
are the host's facts, and resuming reconciles the two: a launch marked *launching* or *benchmarking*
is matched to the live run on the host by its run id (or, when the kill came between the launch and
the write, by the launch config) and followed rather than launched again; a launch whose run is gone
is launched again. A launch *done* is never run twice; repeats already measured are kept.

A failed launch is recorded with its triage kind (``oom``, ``nccl``, ``timeout``…) and the sweep goes
on. :class:`SweepQueue` also holds the operations a person can do while it runs: skip, retry, abort,
move up/down. The runner is :mod:`eagletui.session.sweep.runner`, the report
:mod:`eagletui.session.sweep.report`. No Textual here; the headless command and the UI's queue view
both drive this.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagletui.core.profile.objective import Objective
from eagletui.core.profile.sweep import (
    RepeatPolicy,
    SweepSpec,
    Variant,
    variant_profile,
)
from eagletui.core.stats.sample import mean_stdev
from eagletui.core.sweep.decide import Cell, cost_of, decide, pool_by_config, step_in
from eagletui.core.sweep.effects import Measured
from eagletui.core.sweep.plan import launch_order
from eagletui.session.sweep.cells import (
    DONE,
    FAILED,
    IN_FLIGHT,
    PENDING,
    SKIPPED,
    CellState,
    SweepError,
    VariantState,
)
from eagletui.session.sweep.eta import Eta, sweep_eta
from eagletui.session.sweep.files import MAX_QUEUE_BYTES, QUEUE_VERSION, queue_path

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile
    from eagletui.core.sweep.decide import Decision, Step

MAX_ETA_LOG = 200


@dataclass
class SweepQueue:
    """The sweep's plan and progress; every change is saved by the runner (:meth:`save`)."""

    target: str
    profile: str  # the profile file's path
    fingerprint: str  # of the spec: a changed [sweep] is a different sweep
    repeats: int  # fixed: runs a cell; adaptive: the floor
    factors: list[str]
    variants: list[VariantState]
    order: list[int]  # indices in run order (reorder moves these)
    policy: dict[str, Any] = field(default_factory=dict)  # sweep_decide.RepeatPolicy.to_dict()
    client_factors: list[str] = field(default_factory=list)
    workers: int = 1  # hosts or parallel jobs: the ETA divides by them
    gpu_wait_s: float = 300.0
    step_profile: bool = False  # a step profile of each speculative launch after its benchmarks
    #: what the decisions optimise (Objective.to_json); the spec's, adopted again on a resume (:meth:`adopt`)
    objective: dict[str, Any] = field(default_factory=dict)
    aborted: bool = False
    paused: str = ""  # why the sweep stopped itself (GPU memory still held …); a resume clears it
    #: per worker (host), the GPU reading right before its last launch (gpu_memory.Reading.to_dict):
    #: what a resume's gate waits for, as the gate mid-sweep does
    gpu_reference: dict[str, Any] = field(default_factory=dict)
    created: float = field(default_factory=time.time)
    started_wall: float | None = None
    finished_wall: float | None = None
    first_eta: dict[str, Any] = field(default_factory=dict)  # the first complete ETA: wall, eta_s, done
    eta_log: list[list[float]] = field(default_factory=list)  # [wall, eta_s] as it ran
    path: Path | None = None

    # ------------------------------------------------------------------ building

    @classmethod
    def plan(
        cls,
        spec: SweepSpec,
        *,
        target: str,
        profile_path: str,
        profile: Profile | None = None,
        workers: int = 1,
    ) -> SweepQueue:
        """The queue of a spec: one launch per variant (each with every client point) in the planned
        order (:func:`~eagletui.core.sweep.plan.launch_order`), and the drift re-check at the end.
        With ``profile`` each launch knows its cost (ties) and history key (ETA)."""
        points = spec.client_points()
        vs: list[VariantState] = []
        for i, v in enumerate(spec.variants):
            vs.append(VariantState(i, v.name, dict(v.settings), cells=[CellState(dict(p)) for p in points]))
        order = launch_order([v.settings for v in spec.variants])
        if spec.drift_enabled():
            base = spec.variants[0]
            vs.append(
                VariantState(
                    len(vs),
                    f"{base.name} (again: drift check)",
                    dict(base.settings),
                    cells=[CellState(dict(p)) for p in points],
                    recheck_of=0,
                )
            )
            order.append(len(vs) - 1)
        if profile is not None:
            from eagletui.core.phases.history import history_key

            for vstate in vs:
                try:
                    prof = variant_profile(profile, Variant(vstate.name, vstate.settings))
                except ValueError:
                    continue
                cost = cost_of(prof.args)
                # speculation on or off as the server kind defines it (SGLang's flags, vLLM's JSON)
                vstate.cost = [1 if prof.kind.is_spec(prof.args) else 0, *cost[1:]]
                vstate.launch_key = history_key(prof.snapshot())
        policy = spec.repeat_policy
        return cls(
            target=target,
            profile=profile_path,
            fingerprint=spec_fingerprint(spec),
            repeats=policy.floor,
            factors=list(spec.factors),
            variants=vs,
            order=order,
            policy=policy.to_dict(),
            client_factors=list(spec.client_factors),
            workers=max(1, workers),
            gpu_wait_s=spec.gpu_wait_s,
            step_profile=spec.step_profile,
            objective=spec.objective.to_json(),
        )

    @property
    def repeat_policy(self) -> RepeatPolicy:
        if not self.policy:
            return RepeatPolicy(adaptive=False, repeats=self.repeats)
        return RepeatPolicy.from_dict(self.policy)

    @property
    def goal(self) -> Objective:
        """What the decisions optimise (tok/s at each client point for a queue that names none)."""
        return Objective.from_json(self.objective)

    def adopt(self, spec: SweepSpec) -> SweepQueue:
        """The saved queue under the profile's objective now: the objective changes which config wins,
        not what was run, so a resumed or finished sweep is decided again without a launch."""
        self.objective = spec.objective.to_json()
        return self

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("path", None)
        d["version"] = QUEUE_VERSION
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SweepQueue:
        if not isinstance(d, dict) or d.get("version") != QUEUE_VERSION:
            raise SweepError("not a sweep queue of this eagletui version")
        from eagletui.session.sweep.check import queue_problem

        problem = queue_problem(d)
        if problem is not None:
            raise SweepError(f"damaged sweep queue: {problem}")
        try:
            names = VariantState.__dataclass_fields__
            vs = []
            for x in d["variants"]:
                fields = {k: v for k, v in x.items() if k in names and k != "cells"}
                cells = [
                    CellState(
                        dict(c["client"]),
                        list(c.get("repeats") or []),
                        str(c.get("stop", "")),
                        str(c.get("stop_text", "")),
                    )
                    for c in x.get("cells") or [{"client": {}}]
                ]
                vs.append(VariantState(**fields, cells=cells))
            q = cls(
                target=str(d["target"]),
                profile=str(d["profile"]),
                fingerprint=str(d["fingerprint"]),
                repeats=int(d["repeats"]),
                factors=[str(f) for f in d["factors"]],
                variants=vs,
                order=[int(i) for i in d["order"]],
                policy=dict(d.get("policy") or {}),
                client_factors=[str(f) for f in d.get("client_factors") or []],
                workers=max(1, int(d.get("workers", 1))),
                gpu_wait_s=float(d.get("gpu_wait_s", 300.0)),
                step_profile=d.get("step_profile") is True,
                objective=dict(d.get("objective") or {}),
                aborted=bool(d.get("aborted", False)),
                paused=str(d.get("paused", "")),
                gpu_reference={str(k): v for k, v in dict(d.get("gpu_reference") or {}).items()},
                created=float(d.get("created", time.time())),
                started_wall=_opt_float(d.get("started_wall")),
                finished_wall=_opt_float(d.get("finished_wall")),
                first_eta=dict(d.get("first_eta") or {}),
                eta_log=[[float(a), float(b)] for a, b in (d.get("eta_log") or [])][-MAX_ETA_LOG:],
            )
            q.repeat_policy  # noqa: B018 - a damaged policy fails here, not mid-sweep
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SweepError(f"damaged sweep queue: {exc}") from None
        if sorted(q.order) != list(range(len(vs))) or [v.index for v in vs] != list(range(len(vs))):
            raise SweepError("damaged sweep queue: its order does not list every variant once")
        if any(v.recheck_of is not None and not 0 <= v.recheck_of < len(vs) for v in vs):
            raise SweepError("damaged sweep queue: a drift check names no variant")
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

    def _recheck_blocked(self, v: VariantState, target: str | None) -> bool:
        """A drift check runs last, on the host that ran the baseline (another host would measure the
        difference between hosts, not drift)."""
        if v.recheck_of is None:
            return False
        base = self.variants[v.recheck_of]
        if target is not None and base.target and base.target != target:
            return True
        return any(o.state == PENDING and o.recheck_of is None and o.index != v.index for o in self.variants)

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
            v = self.variants[i]
            if v.state != PENDING:
                continue
            if v.recheck_of is not None and self.variants[v.recheck_of].state in (FAILED, SKIPPED):
                v.state, v.failure = SKIPPED, "the baseline it re-checks did not run"
                continue
            if self._recheck_blocked(v, target):
                continue
            return v
        return None

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for v in self.variants:
            out[v.state] = out.get(v.state, 0) + 1
        return out

    def runs(self) -> int:
        """Benchmarks run so far (every attempt, failed ones included)."""
        return sum(len(c.repeats) for v in self.variants for c in v.cells)

    def launches(self) -> int:
        return sum(v.launches for v in self.variants)

    def cycle_s(self) -> float | None:
        """Learned seconds per launch (launch → ready → benchmarks), from this sweep's done ones."""
        cycles = [
            (v.launch_s or 0) + (v.bench_s or 0) for v in self.variants if v.state == DONE and v.launch_s
        ]
        return sum(cycles) / len(cycles) if cycles else None

    # ------------------------------------------------------------------ statistics

    def launch_cells(self) -> list[Cell]:
        """One :class:`~eagletui.core.sweep.decide.Cell` per launch and client point (its config's
        index, its valid runs): the noise is pooled over these."""
        return self._cells(None)

    def _cells(self, objective: Objective | None) -> list[Cell]:
        return [
            Cell(v.config, ci, c.objective_values(objective), tuple(v.cost))
            for v in self.variants
            for ci, c in enumerate(v.cells)
        ]

    def cells(self) -> list[Cell]:
        """One cell per server config and client point, a drift check's runs pooled with its config's."""
        return pool_by_config(self.launch_cells())

    def step(self, v: VariantState, ci: int) -> Step:
        """Does cell ``ci`` of launch ``v`` need another run (:func:`~eagletui.core.sweep.decide.step_in`)?
        A drift check is compared with its config's first launch, not with the leader."""
        policy = self.repeat_policy
        me = Cell(v.config, ci, v.cells[ci].values(), tuple(v.cost))
        others = [
            Cell(w.config, cj, c.values(), tuple(w.cost))
            for w in self.variants
            for cj, c in enumerate(w.cells)
            if (w.index, cj) != (v.index, ci)
        ]
        ref = None
        if v.recheck_of is not None:
            base = self.variants[v.recheck_of]
            ref = Cell(base.config, ci, base.cells[ci].values(), tuple(base.cost))
        return step_in(me, others, policy, reference=ref)

    def decisions(self) -> list[Decision]:
        """One decision per client point over every config measured there, by the objective's value of
        each run (how many runs a cell took was decided on its tok/s: the measurement's own noise)."""
        launch_cells = self._cells(self.goal)
        cells = pool_by_config(launch_cells)
        points = len(self.variants[0].cells) if self.variants else 0
        conf = self.repeat_policy.confidence
        return [decide(cells, ci, conf, noise_cells=launch_cells) for ci in range(points)]

    # ------------------------------------------------------------------ ETA

    def eta(self, now: float | None = None, history: Any = None) -> Eta:
        """Seconds until the sweep is done (:func:`~eagletui.session.sweep.eta.sweep_eta`)."""
        return sweep_eta(self, time.time() if now is None else now, history)

    def eta_s(self, now: float | None = None, history: Any = None) -> float | None:
        """The ETA in seconds, None while a part of it is still unknown."""
        e = self.eta(now, history)
        return e.seconds if e.complete else None

    def note_eta(self, now: float | None = None, history: Any = None, *, when: str = "") -> Eta:
        """Log the ETA as the sweep runs; the first complete one is kept (with ``when``: "the start",
        "launch 2") to check it against the time the sweep then took."""
        now = time.time() if now is None else now
        e = self.eta(now, history)
        if e.complete and not self.finished:
            self.eta_log.append([round(now, 3), round(e.seconds, 3)])
            del self.eta_log[:-MAX_ETA_LOG]
            if not self.first_eta:
                done = sum(1 for v in self.variants if v.state in (DONE, FAILED, SKIPPED))
                self.first_eta = {"wall": now, "eta_s": e.seconds, "launches_done": done, "when": when}
        return e

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
        v.state, v.failure, v.failure_kind, v.run_id = PENDING, "", "", ""
        for c in v.cells:
            c.repeats, c.stop, c.stop_text = [], "", ""
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
        """One per cell of a done launch (drift checks pooled into their config): tok/s mean, stdev, n,
        with the client point's values as ``bench:<key>`` settings (the effects pair like with like)."""
        out = []
        for v in self.variants:
            if v.recheck_of is not None:
                continue
            for ci, c in enumerate(v.cells):
                values: list[float] = []
                for w in self.variants:
                    if w.config == v.index and w.state == DONE:
                        values.extend(w.cells[ci].values())
                mean, sd, n = mean_stdev(values) if v.state == DONE else (None, None, 0)
                settings = {**v.settings, **{f"bench:{k}": x for k, x in c.client.items()}}
                name = v.name if len(v.cells) == 1 else f"{v.name} @ {c.label}"
                out.append(Measured(name, settings, mean, sd, n))
        return out

    def report(self, verdict: Any = None, profile: Profile | None = None) -> dict[str, Any]:
        """Every launch with its cells, verdicts, the decisions per client point and how sure each is,
        the ranking, main effects, drift check, crossover, run counts and the ETA check."""
        from eagletui.session.sweep.report import build_report

        return build_report(self, verdict, profile)


def _opt_float(v: Any) -> float | None:
    return None if v is None else float(v)


def _is_spec(profile: Profile, v: VariantState) -> bool:
    try:
        p = variant_profile(profile, Variant(v.name, v.settings))
    except ValueError:
        return False
    return p.kind.is_spec(p.args)


def spec_fingerprint(spec: SweepSpec) -> str:
    blob = json.dumps(
        {
            "v": [[v.name, v.settings] for v in spec.variants],
            "r": spec.repeats,
            "c": [[k, list(vals)] for k, vals in spec.client],
            "p": spec.repeat_policy.to_dict(),
            "d": spec.drift_enabled(),
            **({"sp": True} if spec.step_profile else {}),
            **({"mr": asdict(spec.max_rate)} if spec.max_rate is not None else {}),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# The runner lives beside the queue; imported here so ``from eagletui.session.sweep.queue import SweepRunner``
# keeps working for the command, the UI and the tests.


def pending_sweep(target: str, profile_path: str, root: str | Path | None = None) -> SweepQueue | None:
    """The unfinished sweep queue for this target + profile, if any (for ``eagletui connect``'s hint)."""
    path = queue_path(target, profile_path, root)
    if not path.exists():
        return None
    with contextlib.suppress(SweepError):
        q = SweepQueue.load(path)
        return None if q.finished else q
    return None
