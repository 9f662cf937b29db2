"""``eagletui sweep --profile P [TARGET] [--json] [--resume] [--plan]``: run a profile's ``[sweep]`` unattended.

For overnight runs and CI: each server config is launched once, waited for, and benchmarked at every
client point (concurrency, prompt set, lengths, request rate), each cell repeated until the answer is
clear (docs/sweeps.md); between launches the GPUs' memory must be back to where it was. A failed launch
is recorded with its triage kind and the sweep goes on. ``--plan`` prints the launches, benchmarks and
ETA without running anything. Progress goes to stderr; the result (``--json``: every launch with its
cells, the decisions per client point and how sure each is, the ranking, each factor's main effect,
the drift check, the crossover and the run counts) to stdout; ``--crossover FILE`` writes the
crossover as the host SGLang's ``--speculative-adaptive-config`` JSON where the winners allow one.

The queue is saved after every step (see :mod:`eagletui.session.sweep.queue`), so a sweep interrupted by
Ctrl-C, SIGTERM, SIGHUP, a lost SSH link or a reboot continues with ``--resume``, following the server the
host is running rather than launching it again (a signal still prints the report of what was measured,
with an ``interrupted`` block, and exits with 128 + the signal).

Several hosts: ``[sweep] targets = ["gpu1", "gpu2"]`` runs one runner per host over the same queue,
each taking the next variant (a TARGET on the command line runs on that host alone). Each host
gets its own recording.

Exit status: 0 every variant passed, 1 a variant failed its verdict (or the sweep did not finish),
3 only launch failures, 2 usage or profile errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import shlex
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from eagletui.commands._args import ArgumentParser, command_timings, timings_from_env
from eagletui.commands._signals import Interrupt, run_headless, withdraw
from eagletui.commands._ssh import add_ssh_options, ssh_options
from eagletui.commands._sweep_report import _adaptive_flags, _print_predictions, plan_lines, print_human
from eagletui.core.profile.load import load_profile
from eagletui.core.profile.model import ProfileError
from eagletui.core.profile.redact import Redactor
from eagletui.core.runs.frontier import frontiers
from eagletui.core.textsafe import inert_lines

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_LAUNCH_FAILED = 0, 1, 2, 3


def _say(msg: str) -> None:
    print(inert_lines(msg), file=sys.stderr, flush=True)


def exit_status(report: dict[str, Any]) -> int:
    """0 all pass; 1 any verdict failed or variants left undone; 3 launch failures only."""
    verdicts = [r["verdict"] for r in report["variants"]]
    if any(v == "fail" for v in verdicts):
        return EXIT_FAIL
    if any(v in ("pending", "launching", "benchmarking") for v in verdicts):
        return EXIT_FAIL
    if any(v == "launch-failed" for v in verdicts):
        return EXIT_LAUNCH_FAILED
    return EXIT_OK


async def _amain(ns: argparse.Namespace) -> int:
    from eagletui.session.model import SessionModel
    from eagletui.session.sweep.files import queue_path
    from eagletui.session.sweep.queue import SweepQueue
    from eagletui.session.sweep.runner import SweepRunner
    from eagletui.workspace import Workspace

    try:
        profile = load_profile(ns.profile)
    except ProfileError as exc:
        _say(str(exc))
        return EXIT_USAGE
    if profile.sweep is None:
        _say(
            f"eagletui: {ns.profile} has no [sweep] table (see 'eagletui profile init F --example demo-sweep')"
        )
        return EXIT_USAGE
    spec = profile.sweep
    # several hosts (sweep.targets) each take the next variant; a TARGET on the command line runs on it alone
    targets = [ns.target] if ns.target else list(dict.fromkeys(spec.targets)) or [profile.target]
    if profile.slurm is not None:
        # a cluster: the scheduler places the jobs; the login node is the one target
        targets = [ns.target or profile.target]
    target = "+".join(targets)
    qpath = queue_path(target, ns.profile, ns.queue_dir)
    if ns.plan:
        return _print_plan(ns, profile, spec, targets, target, qpath)
    return await run_locked(
        qpath,
        lambda: _run(
            ns, profile, spec, targets, target, qpath, SessionModel, SweepQueue, SweepRunner, Workspace
        ),
    )


async def run_locked(qpath: Any, run: Callable[[], Awaitable[int]]) -> int:
    """``run()`` holding the queue's lock (one runner per queue: a sweep's or a tune's); EXIT_USAGE, said,
    when another eagletui holds it."""
    from eagletui.session.sweep.cells import SweepError
    from eagletui.session.sweep.files import QueueLock

    lock = QueueLock(qpath)
    try:
        lock.acquire()
    except SweepError as exc:
        _say(f"eagletui: {exc}")
        return EXIT_USAGE
    try:
        return await run()
    finally:
        lock.release()


async def _run(
    ns, profile, spec, targets, target, qpath, SessionModel, SweepQueue, SweepRunner, Workspace
) -> int:  # type: ignore[no-untyped-def]
    queue, refused = _open_queue(ns, profile, spec, targets, target, qpath, SweepQueue)
    if refused is not None:
        return refused
    _save_and_announce(queue, qpath, target)

    from eagletui.config import load_user_config

    cfg, problems = load_user_config()
    for problem in problems:
        _say(f"eagletui: config: {problem}")
    history = _history(cfg)
    for line in plan_lines(queue, history, targets, profile):
        _say(line)
    profile.bench = dataclasses.replace(profile.bench, repeats=1)  # one repeat per benchmark() call
    from eagletui.session.sweep.jobs import job_slots

    slots = job_slots(profile)
    # one worker per host, or on a Slurm cluster one per job slot (slurm.max_parallel jobs at once)
    workers = [(t, None) for t in targets] if not slots else [(targets[0], i) for i in range(slots)]
    several = len(workers) > 1

    predictions: list[dict[str, Any]] = []
    frontier: list[dict[str, Any]] = []  # each host's frontier (its run book's: issue 35)
    not_recorded: list[str] = []  # hosts whose recording misses events (disk full, file removed)
    try:
        reached = await asyncio.gather(
            *(
                _sweep_host(
                    ns,
                    profile,
                    queue,
                    t,
                    s,
                    cfg=cfg,
                    history=history,
                    several=several,
                    predictions=predictions,
                    frontier=frontier,
                    not_recorded=not_recorded,
                    SessionModel=SessionModel,
                    SweepRunner=SweepRunner,
                    Workspace=Workspace,
                )
                for t, s in workers
            )
        )
    except asyncio.CancelledError:
        if not withdraw(ns.interrupt):
            raise
        # SIGTERM, SIGHUP or Ctrl-C: each host said how to resume (its server left running); the report
        # of what was measured still comes, with the signal, and the exit status says it
        reached = [True]
    if not any(reached):
        return EXIT_LAUNCH_FAILED
    report = Redactor.for_profile(profile).value(queue.report(profile.verdict, profile))
    report["queue"] = str(qpath)
    if ns.interrupt.signum is not None:
        resume = shlex.join(
            ["eagletui", "sweep", *([ns.target] if ns.target else []), "--profile", ns.profile]
        )
        report["interrupted"] = {**ns.interrupt.to_json(), "resume": resume + " --resume"}
    _write_crossover(ns, report)
    if predictions:
        # each variant the cycle model predicted from an earlier one, predicted vs measured (issue 25)
        report["predictions"] = predictions
    report["frontier"] = Redactor.for_profile(profile).value(_frontier(queue, profile, frontier))
    if ns.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_human(report)
        _print_predictions(predictions)
    if ns.interrupt.signum is not None:
        return ns.interrupt.exit_code
    if not_recorded:
        _say(f"eagletui: the recording of {', '.join(not_recorded)} is incomplete (said above): exit 1")
        return exit_status(report) or EXIT_FAIL
    return exit_status(report)


def _frontier(queue: Any, profile: Any, sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frontier of every counted run of the queue, this session's and a resumed sweep's earlier
    ones (the set its decisions rank: ``kept_runs``); each host's session book where none was kept."""
    from eagletui.session.sweep.kept_runs import kept_book

    book, kept, problems = kept_book(queue, profile)
    for problem in problems:
        _say(f"eagletui: frontier: {problem}")
    return [f.to_json() for f in frontiers(book)] if kept else sessions


def _save_and_announce(queue: Any, qpath: Any, target: str) -> None:
    """Save the queue (a resume reads it) and say in one line what the sweep will do."""
    queue.save(qpath)
    c = queue.counts()
    _say(
        f"sweep: {len(queue.variants)} launches × {len(queue.variants[0].cells)} client setting(s) on {target} "
        f"({queue.repeat_policy.describe()}); "
        + ", ".join(f"{n} {k}" for k, n in sorted(c.items()))
        + f"; queue {qpath}"
    )


def _open_queue(
    ns: argparse.Namespace,
    profile: Any,
    spec: Any,
    targets: list[str],
    target: str,
    qpath: Any,
    SweepQueue: Any,
) -> tuple[Any, int | None]:
    """The queue to run: a fresh plan, or the saved one with ``--resume`` (failed variants again with
    ``--retry-failed``); (None, the exit status) when there is none to run: an unfinished or aborted
    sweep without ``--resume`` or ``--restart``, a changed ``[sweep]``, or a finished one (its report
    is printed again)."""
    from eagletui.session.sweep.cells import SweepError
    from eagletui.session.sweep.queue import spec_fingerprint

    fresh = SweepQueue.plan(
        spec, target=target, profile_path=ns.profile, profile=profile, workers=_workers(profile, targets)
    )
    if qpath.exists() and not ns.restart:
        try:
            old = SweepQueue.load(qpath).adopt(spec)
        except SweepError as exc:
            _say(f"eagletui: {exc}; start over with --restart")
            return None, EXIT_USAGE
        if not ns.resume and not old.finished:
            _say(
                f"eagletui: a sweep of this profile on {target} is unfinished ({qpath}); "
                "continue it with --resume or start over with --restart"
            )
            return None, EXIT_USAGE
        if old.aborted and not ns.resume and old.fingerprint == spec_fingerprint(spec):
            _say(
                f"eagletui: the sweep of this profile on {target} was aborted ({qpath}); "
                "continue it with --resume or start over with --restart"
            )
            return None, EXIT_USAGE
        if (
            old.finished
            and not old.aborted
            and old.fingerprint == spec_fingerprint(spec)
            and not ns.retry_failed
        ):
            # finished already: its report again, never a silent new run of every variant
            import time as _time

            when = _time.strftime("%Y-%m-%d %H:%M", _time.localtime(qpath.stat().st_mtime))
            _say(
                f"eagletui: this sweep of {target} finished (queue {qpath}, {when}): its report follows; "
                "--restart runs it again"
            )
            report = Redactor.for_profile(profile).value(old.report(profile.verdict, profile))
            report["queue"] = str(qpath)
            # its frontier too, from the runs kept beside the queue (none kept: none to show)
            report["frontier"] = Redactor.for_profile(profile).value(_frontier(old, profile, []))
            if ns.json:
                print(json.dumps(report, indent=2, default=str))
            else:
                print_human(report)
            return None, exit_status(report)
        if ns.resume:
            if old.fingerprint != spec_fingerprint(spec):
                _say(
                    "eagletui: the profile's [sweep] changed since the queue was written; --restart to start over"
                )
                return None, EXIT_USAGE
            queue = old
            if ns.retry_failed:
                for v in queue.variants:
                    if v.state in ("failed", "skipped"):
                        queue.retry(v.index)
            queue.aborted = False
        else:
            queue = fresh
    elif ns.resume and not qpath.exists():
        _say(f"eagletui: no sweep of this profile on {target} to resume; starting it")
        queue = fresh
    else:
        queue = fresh
    return queue, None


async def _sweep_host(
    ns: argparse.Namespace,
    profile: Any,
    queue: Any,
    target: str,
    slot: int | None,
    *,
    cfg: Any,
    history: Any,
    several: bool,
    predictions: list[dict[str, Any]],
    frontier: list[dict[str, Any]],
    not_recorded: list[str],
    SessionModel: Any,
    SweepRunner: Any,
    Workspace: Any,
    hooks: dict[str, Any] | None = None,
) -> bool:
    """One host (or job slot) taking the next variant until none is left; True if it reached a host.
    ``hooks``: the runner's ``pick`` and ``after`` (``eagletui tune`` chooses which variant runs next)."""
    from eagletui.commands._headless import PhasePrinter
    from eagletui.session.sweep.jobs import slot_worker

    label = target if slot is None else f"job slot {slot + 1}"
    say = (lambda m: _say(f"[{label}] {m}")) if several else _say
    recorder = _host_recorder(ns, cfg, profile, target, say)
    # the sweep learns launch and benchmark times (the next sweep's plan has an ETA at its start)
    model = SessionModel(target=target, profile=profile, recorder=recorder, history=history)
    # one line per variant and step: no line per phase (20 a launch), progress every 30 s
    model.subscribe(
        PhasePrinter(samples=False, phases=False, progress_every=30.0, timings=command_timings(ns))
    )
    model.on_problem(PhasePrinter.problem)
    ws = Workspace(
        profile,
        model.dispatch,
        target=target,
        preflight=not ns.no_preflight,
        ssh=ssh_options(ns),
        slot=slot or 0,
        timings=command_timings(ns),
    )
    interrupted = False
    try:
        try:
            await ws.connect()
        except Exception as exc:
            say(f"eagletui: cannot reach {target}: {exc}")
            return False
        try:
            if slot is None:
                runner = SweepRunner(profile, queue, ws, model, say=say, **(hooks or {}))
                await runner.reattach()
            else:  # its variants in flight are found by their run (job) ids, one by one
                runner = SweepRunner(
                    profile, queue, ws, model, say=say, worker=slot_worker(target, slot), slot=slot
                )
            await runner.run()
        except (asyncio.CancelledError, KeyboardInterrupt):
            interrupted = True  # the server in flight keeps running for --resume (said below)
            raise
        predictions.extend(_prediction_rows(model, target))
        frontier.extend(f.to_json() for f in frontiers(model.runbook))
        return True
    finally:
        if not await _host_done(ns, ws, model, recorder, target, say, interrupted):
            not_recorded.append(label)


def _host_recorder(ns: argparse.Namespace, cfg: Any, profile: Any, target: str, say: Any) -> Any:
    """The host's session recording (``--record`` or the config's), or None (said when it cannot be made)."""
    recorder = None
    if not ns.no_record and (cfg.record or ns.record):
        from eagletui.session.record import Recorder

        try:
            recorder = Recorder.create(
                ns.record or cfg.sessions_dir,
                target=target,
                profile_name=profile.name,
                redactor=Redactor.for_profile(profile),
            )
        except OSError as exc:
            say(f"eagletui: not recording: {exc}")
    return recorder


async def _host_done(
    ns: argparse.Namespace, ws: Any, model: Any, recorder: Any, target: str, say: Any, interrupted: bool
) -> bool:
    """A host's part of the sweep has ended: say how to resume after an interruption (its server left
    running), else stop the server unless ``--keep-server``; close the workspace and the model. False
    when its recording misses events (the sweep then exits non-zero)."""
    ns_targets = [ns.target] if ns.target else []
    if interrupted:
        command = getattr(ns, "command", "sweep")
        resume = shlex.join(["eagletui", command, *ns_targets, "--profile", ns.profile, "--resume"])
        run = ws.run
        if run is not None and run.owned and run.alive:
            left = (
                f"the server of the variant in flight (run {run.run_id}, pid {run.pid}) keeps running "
                f"on {target} and --resume follows it instead of launching it again"
            )
        else:
            left = "no server of this sweep is running"
        say(f"interrupted: the queue is saved; {left}. Resume with: {resume}")
    elif ws.run is not None and ws.run.owned and not ns.keep_server:
        say("sweep over: stopping the server")
        try:
            await ws.stop()
        except Exception as exc:
            say(f"eagletui: stopping the server failed: {exc}")
    await ws.close()
    model.close()
    if recorder is None:
        return True
    said, whole = recorder.outcome()
    say(said)
    return whole


def _prediction_rows(model: Any, target: str) -> list[dict[str, Any]]:
    """Predicted vs measured for every run of this host's session that an earlier one predicted."""
    from eagletui.core.predict.checks import checks

    book = model.runbook
    out = []
    for n in sorted(book.runs):
        for ck in checks(book, n):
            out.append({"target": target, **ck.to_json()})
    return out


def _workers(profile: Any, targets: list[str]) -> int:
    """What the ETA divides over: the hosts, or on a Slurm cluster the job slots (slurm.max_parallel)."""
    from eagletui.session.sweep.jobs import job_slots

    return job_slots(profile) or len(targets)


def _history(cfg: Any) -> Any:
    """The phase history (launch times, and the sweep's benchmark and between-launch times)."""
    from eagletui.core.phases.history import PhaseHistory

    try:
        return PhaseHistory.load(cfg.history_path)
    except Exception as exc:  # no ETA from history is a worse plan, never a failed sweep
        _say(f"eagletui: phase history not read: {exc}")
        return None


def _print_plan(
    ns: argparse.Namespace, profile: Any, spec: Any, targets: list[str], target: str, qpath: Any
) -> int:
    """``--plan``: the unfinished queue's remaining plan, else the fresh one; nothing is launched."""
    from eagletui.config import load_user_config
    from eagletui.session.sweep.cells import SweepError
    from eagletui.session.sweep.queue import SweepQueue, spec_fingerprint

    queue = SweepQueue.plan(
        spec, target=target, profile_path=ns.profile, profile=profile, workers=_workers(profile, targets)
    )
    if qpath.exists() and not ns.restart:
        with contextlib.suppress(SweepError):
            old = SweepQueue.load(qpath).adopt(spec)
            if old.fingerprint == spec_fingerprint(spec) and not old.finished:
                queue = old
                _say(f"eagletui: the unfinished sweep in {qpath}: what is left of it")
    cfg, _problems = load_user_config()
    for line in plan_lines(queue, _history(cfg), targets, profile):
        print(inert_lines(line))
    return EXIT_OK


def _write_crossover(ns: argparse.Namespace, report: dict[str, Any]) -> None:
    """``--crossover FILE``: the SGLang adaptive config of the crossover (0600), or why there is none."""
    if not ns.crossover:
        return
    xo = report.get("crossover") or {}
    cfg = xo.get("sglang_adaptive_config")
    if not cfg:
        why = xo.get("why_not") or "the sweep has no concurrency factor with two or more values"
        _say(f"eagletui: no --speculative-adaptive-config written: {why}")
        return
    import os

    path = os.path.expanduser(ns.crossover)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
    except OSError as exc:
        _say(f"eagletui: cannot write {path}: {exc.strerror or exc}")
        return
    report["crossover"]["file"] = path
    _say(f"crossover written to {path}; launch with: {_adaptive_flags(xo['launch_args'], path)}")


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="eagletui sweep", description="Run a profile's [sweep] unattended.")
    p.add_argument(
        "target", nargs="?", default=None, help='"local" or an SSH target (default: the profile\'s)'
    )
    p.add_argument("--profile", required=True, help="profile TOML with a [sweep] table")
    add_ssh_options(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument(
        "--plan",
        action="store_true",
        help="print the launches, benchmarks and ETA of the sweep (what is left of an unfinished one); run nothing",
    )
    p.add_argument(
        "--crossover",
        default=None,
        metavar="FILE",
        help="write the best speculative setting per concurrency range as SGLang's --speculative-adaptive-config JSON",
    )
    p.add_argument("--resume", action="store_true", help="continue the unfinished sweep of this profile")
    p.add_argument("--restart", action="store_true", help="discard an unfinished sweep and start over")
    p.add_argument(
        "--retry-failed", action="store_true", help="with --resume: run failed/skipped variants again"
    )
    add_run_options(p)
    return p


def add_run_options(p: argparse.ArgumentParser) -> None:
    """What ``sweep`` and ``tune`` share: the server at the end, the preflight, the recording, the queue."""
    p.add_argument("--keep-server", action="store_true", help="leave the last launch's server running")
    p.add_argument("--no-preflight", action="store_true", help="skip the pre-launch checks")
    p.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="sessions dir for the recording (default: the data dir's)",
    )
    p.add_argument("--no-record", action="store_true", help="do not record the session")
    p.add_argument("--queue-dir", default=None, metavar="DIR", help=argparse.SUPPRESS)


def main(argv: list[str]) -> int:
    try:
        ns = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    ns.timings = timings_from_env()

    def amain(got: Interrupt) -> Any:
        ns.interrupt = got
        got.stage = "sweep"
        return _amain(ns)

    return run_headless(amain)
