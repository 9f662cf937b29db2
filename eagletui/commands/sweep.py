"""``eagletui sweep --profile P [TARGET] [--json] [--resume]``: run a profile's ``[sweep]`` unattended.

For overnight runs and CI: each variant is applied, launched, waited for, benchmarked (× repeats) and
recorded, then the next; a failed launch is recorded with its triage kind and the sweep goes on.
Progress goes to stderr; the result (``--json``: every variant with its settings, state, tok/s,
accept length, Δ % vs the first variant and verdict, the ranking, each factor's main effect and the
best combination) to stdout.

The queue is saved after every step (see :mod:`eagletui.session.sweep`), so a sweep interrupted by
Ctrl-C, a lost SSH link or a reboot continues with ``--resume``, following the server the host is
running rather than launching it again.

Several hosts: ``[sweep] targets = ["gpu1", "gpu2"]`` runs one runner per host over the same queue,
each taking the next variant (a TARGET on the command line runs on that host alone). Each host
gets its own recording.

Exit status: 0 every variant passed, 1 a variant failed its verdict (or the sweep did not finish),
3 only launch failures, 2 usage or profile errors.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import shlex
import sys
from typing import Any

from eagletui.commands._args import ArgumentParser
from eagletui.commands._ssh import add_ssh_options, ssh_options
from eagletui.core.profile import ProfileError, load_profile
from eagletui.core.redact import Redactor
from eagletui.core.textsafe import inert, inert_lines
from eagletui.core.toggle_kinds import split_key

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


def _fmt_settings(settings: dict[str, Any]) -> str:
    from eagletui.core.sweep import variant_label

    return variant_label(settings)


def print_human(report: dict[str, Any]) -> None:
    from eagletui.core.sweep import fmt_value as show

    print(f"sweep of {report['profile']} on {report['target']} ({report['repeats']} repeat(s) a variant)")
    for r in report["variants"]:
        tok = f"{r['tok_s']:.1f}" if r["tok_s"] is not None else "-"
        sd = f" ± {r['tok_s_stdev']:.1f}" if r["tok_s_stdev"] is not None else ""
        acc = f"{r['accept_length']:.2f}" if r["accept_length"] is not None else "-"
        d = f"{r['delta_pct']:+.1f}%" if r["delta_pct"] is not None else "-"
        why = f" ({'; '.join(r['reasons'])})" if r["reasons"] else ""
        print(
            f"  {r['index'] + 1:>2}. {inert(r['name'])}: {tok}{sd} tok/s  accept {acc}  Δ {d}  {r['verdict']}{inert(why)}"
        )
    if report["ranking"]:
        print("ranked: " + " > ".join(inert(n) for n in report["ranking"]))
    for e in report["effects"]:
        name = split_key(e["factor"])[1].lstrip("-")
        # the band printed is the one the rule used (twice the effect's error), and its reading
        print(f"effect of {name} {show(e['from'])}→{show(e['to'])}: {e['delta_pct']:+.1f}% ({e['band']})")
    if report["best"]:
        print(f"best: {inert(report['best']['name'])} at {report['best']['tok_s']:.1f} tok/s")


async def _amain(ns: argparse.Namespace) -> int:
    from eagletui.session.model import SessionModel
    from eagletui.session.sweep import QueueLock, SweepError, SweepQueue, SweepRunner, queue_path
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
    lock = QueueLock(qpath)
    try:
        lock.acquire()
    except SweepError as exc:
        _say(f"eagletui: {exc}")
        return EXIT_USAGE
    try:
        return await _run(
            ns, profile, spec, targets, target, qpath, SessionModel, SweepQueue, SweepRunner, Workspace
        )
    finally:
        lock.release()


async def _run(
    ns, profile, spec, targets, target, qpath, SessionModel, SweepQueue, SweepRunner, Workspace
) -> int:  # type: ignore[no-untyped-def]
    from eagletui.commands.bench import PhasePrinter
    from eagletui.session.sweep import SweepError, spec_fingerprint

    fresh = SweepQueue.plan(spec, target=target, profile_path=ns.profile)
    if qpath.exists() and not ns.restart:
        try:
            old = SweepQueue.load(qpath)
        except SweepError as exc:
            _say(f"eagletui: {exc}; start over with --restart")
            return EXIT_USAGE
        if not ns.resume and not old.finished:
            _say(
                f"eagletui: a sweep of this profile on {target} is unfinished ({qpath}); "
                "continue it with --resume or start over with --restart"
            )
            return EXIT_USAGE
        if old.aborted and not ns.resume and old.fingerprint == spec_fingerprint(spec):
            _say(
                f"eagletui: the sweep of this profile on {target} was aborted ({qpath}); "
                "continue it with --resume or start over with --restart"
            )
            return EXIT_USAGE
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
            if ns.json:
                print(json.dumps(report, indent=2, default=str))
            else:
                print_human(report)
            return exit_status(report)
        if ns.resume:
            if old.fingerprint != spec_fingerprint(spec):
                _say(
                    "eagletui: the profile's [sweep] changed since the queue was written; --restart to start over"
                )
                return EXIT_USAGE
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
    queue.save(qpath)
    c = queue.counts()
    _say(
        f"sweep: {len(queue.variants)} variants × {queue.repeats} repeat(s) on {target}; "
        + ", ".join(f"{n} {k}" for k, n in sorted(c.items()))
        + f"; queue {qpath}"
    )

    from eagletui.config import load_user_config

    cfg, problems = load_user_config()
    for problem in problems:
        _say(f"eagletui: config: {problem}")
    profile.bench = dataclasses.replace(profile.bench, repeats=1)  # one repeat per benchmark() call
    from eagletui.session.sweep_jobs import job_slots, slot_worker

    slots = job_slots(profile)
    # one worker per host, or on a Slurm cluster one per job slot (slurm.max_parallel jobs at once)
    workers = [(t, None) for t in targets] if not slots else [(targets[0], i) for i in range(slots)]
    several = len(workers) > 1

    async def worker(target: str, slot: int | None = None) -> bool:
        """One host (or job slot) taking the next variant until none is left; True if it reached a host."""
        label = target if slot is None else f"job slot {slot + 1}"
        say = (lambda m: _say(f"[{label}] {m}")) if several else _say
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
        model = SessionModel(target=target, profile=profile, recorder=recorder, learn_history=False)
        # one line per variant and step: no line per phase (20 a launch), progress every 30 s
        model.subscribe(PhasePrinter(samples=False, phases=False, progress_every=30.0))
        model.on_problem(PhasePrinter.problem)
        ws = Workspace(
            profile,
            model.dispatch,
            target=target,
            preflight=not ns.no_preflight,
            ssh=ssh_options(ns),
            slot=slot or 0,
        )
        interrupted = False
        try:
            try:
                await ws.connect()
            except Exception as exc:
                say(f"eagletui: cannot reach {target}: {exc}")
                return False
            if slot is None:
                runner = SweepRunner(profile, queue, ws, model, say=say)
                await runner.reattach()
            else:  # its variants in flight are found by their run (job) ids, one by one
                runner = SweepRunner(
                    profile, queue, ws, model, say=say, worker=slot_worker(target, slot), slot=slot
                )
            try:
                await runner.run()
            except (asyncio.CancelledError, KeyboardInterrupt):
                interrupted = True
                raise
            predictions.extend(_prediction_rows(model, target))
            return True
        finally:
            if interrupted:
                resume = shlex.join(["eagletui", "sweep", *ns_targets, "--profile", ns.profile, "--resume"])
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
            if recorder is not None:
                say(f"session recorded to {recorder.path}")

    ns_targets = [ns.target] if ns.target else []
    predictions: list[dict[str, Any]] = []
    reached = await asyncio.gather(*(worker(t, s) for t, s in workers))
    if not any(reached):
        return EXIT_LAUNCH_FAILED
    report = Redactor.for_profile(profile).value(queue.report(profile.verdict, profile))
    report["queue"] = str(qpath)
    if predictions:
        # each variant the cycle model predicted from an earlier one, predicted vs measured (issue 25)
        report["predictions"] = predictions
    if ns.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_human(report)
        for p in predictions:
            print(
                f"  predicted {p['setting']} at concurrency {p['concurrency']} from launch {p['predicted_from']}: "
                f"{p['predicted_tok_s']:.1f} tok/s, measured {p['measured_tok_s']:.1f} ({p['error_pct']:+.1f} %)"
            )
    return exit_status(report)


def _prediction_rows(model: Any, target: str) -> list[dict[str, Any]]:
    """Predicted vs measured for every run of this host's session that an earlier one predicted."""
    from eagletui.core.predict import checks

    book = model.runbook
    out = []
    for n in sorted(book.runs):
        for ck in checks(book, n):
            out.append({"target": target, **ck.to_json()})
    return out


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="eagletui sweep", description="Run a profile's [sweep] unattended.")
    p.add_argument(
        "target", nargs="?", default=None, help='"local" or an SSH target (default: the profile\'s)'
    )
    p.add_argument("--profile", required=True, help="profile TOML with a [sweep] table")
    add_ssh_options(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--resume", action="store_true", help="continue the unfinished sweep of this profile")
    p.add_argument("--restart", action="store_true", help="discard an unfinished sweep and start over")
    p.add_argument(
        "--retry-failed", action="store_true", help="with --resume: run failed/skipped variants again"
    )
    p.add_argument("--keep-server", action="store_true", help="leave the last variant's server running")
    p.add_argument("--no-preflight", action="store_true", help="skip the pre-launch checks")
    p.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="sessions dir for the recording (default: the data dir's)",
    )
    p.add_argument("--no-record", action="store_true", help="do not record the session")
    p.add_argument("--queue-dir", default=None, metavar="DIR", help=argparse.SUPPRESS)
    return p


def main(argv: list[str]) -> int:
    try:
        ns = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        return asyncio.run(_amain(ns))
    except KeyboardInterrupt:
        return 130
