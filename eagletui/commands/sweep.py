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
import contextlib
import dataclasses
import json
import shlex
import sys
from typing import Any

from eagletui.commands._args import ArgumentParser
from eagletui.commands._ssh import add_ssh_options, ssh_options
from eagletui.core.profile.load import load_profile
from eagletui.core.profile.model import ProfileError
from eagletui.core.profile.redact import Redactor
from eagletui.core.profile.toggles import split_key
from eagletui.core.textsafe import inert, inert_lines

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
    from eagletui.core.profile.sweep import variant_label

    return variant_label(settings)


def _cell_text(c: dict[str, Any]) -> str:
    tok = f"{c['tok_s']:.1f}" if c["tok_s"] is not None else "-"
    ci = f" ± {c['ci_pct']:.1f} %" if c.get("ci_pct") is not None else ""
    acc = f"{c['accept_length']:.2f}" if c["accept_length"] is not None else "-"
    d = f"{c['delta_pct']:+.1f}%" if c["delta_pct"] is not None else "-"
    runs = c.get("runs", 0)
    return f"{tok}{ci} tok/s ({runs} run{'s' if runs != 1 else ''})  accept {acc}  Δ {d}"


def print_human(report: dict[str, Any]) -> None:
    from eagletui.core.profile.sweep import fmt_value as show

    pol = report.get("policy") or {}
    print(
        f"sweep of {report['profile']} on {report['target']} ({pol.get('text') or str(report['repeats']) + ' repeat(s)'})"
    )
    for r in report["variants"]:
        why = f" ({'; '.join(r['reasons'])})" if r["reasons"] else ""
        retry = " [launched twice: out of GPU memory the first time]" if r.get("oom_retry") else ""
        cells = r.get("cells") or []
        if len(cells) == 1:
            print(
                f"  {r['index'] + 1:>2}. {inert(r['name'])}: {_cell_text(cells[0])}  {r['verdict']}{inert(why)}{retry}"
            )
            continue
        print(f"  {r['index'] + 1:>2}. {inert(r['name'])}: {r['verdict']}{inert(why)}{retry}")
        for c in cells:
            print(f"        {inert(c['label'])}: {_cell_text(c)}")
    for r in report["variants"]:
        if r.get("step_profile"):
            print(f"  step profile of {inert(r['name'])}: {inert(r['step_profile'])}")
    decisions = report.get("decisions") or []
    for d in decisions:
        if d.get("winner") is None:
            continue
        where = f" at {inert(d['label'])}" if len(decisions) > 1 else ""
        print(f"decision{where}: {inert(d['winner'])} — {inert(d['how_sure'])}")
        if len(d["ranking"]) > 1:
            print("  ranked: " + " > ".join(inert(n) for n in d["ranking"]))
    for e in report["effects"]:
        name = split_key(e["factor"])[1].lstrip("-")
        # the band printed is the one the rule used (twice the effect's error), and its reading
        print(f"effect of {name} {show(e['from'])}→{show(e['to'])}: {e['delta_pct']:+.1f}% ({e['band']})")
    if report.get("drift"):
        print(inert(report["drift"]["text"]))
    xo = report.get("crossover")
    if xo and xo["rows"]:
        print(f"crossover by {xo['factor']}:")
        for row in xo["rows"]:
            print(f"  {inert(row['range'])}: {inert(row['winner'])}  ({inert('; '.join(row['how_sure']))})")
        if xo.get("sglang_adaptive_config"):
            print(
                "  SGLang: "
                + inert(_adaptive_flags(xo["launch_args"], "FILE"))
                + " with FILE = "
                + json.dumps(xo["sglang_adaptive_config"], separators=(",", ":"))
            )
        elif xo.get("why_not"):
            print(f"  no --speculative-adaptive-config: {inert(xo['why_not'])}")
    if report["best"]:
        print(
            f"best: {inert(report['best']['name'])} at {report['best']['tok_s']:.1f} tok/s ({inert(report['best']['how_sure'])})"
        )
    pooled = report.get("noise")
    runs = f"{report.get('runs', 0)} benchmarks in {report.get('launches', 0)} launches for {report.get('cells', 0)} cells"
    print(runs + (f"; {pooled['text']}" if pooled else ""))
    eta = report.get("eta_check")
    if eta and eta.get("actual_s") is not None:
        from eagletui.core.sweep.plan import fmt_duration

        print(
            f"ETA check: {fmt_duration(eta['predicted_s'])} predicted at {eta['when']}, "
            f"{fmt_duration(eta['actual_s'])} taken ({eta['error_pct']:+.1f} %)"
        )
    if report.get("paused"):
        print(f"paused: {inert(report['paused'])}")


def _adaptive_flags(args: dict[str, Any], path: str) -> str:
    """The launch flags that serve the crossover: ``--speculative-adaptive --speculative-adaptive-config PATH …``."""
    parts: list[str] = []
    for k, v in args.items():
        if v is True:
            parts.append(k)
        else:
            parts.extend([k, path if k == "--speculative-adaptive-config" else str(v)])
    return shlex.join(parts)


def points_raw(queue: Any) -> list[dict[str, Any]]:
    return [dict(c.client) for c in queue.variants[0].cells] if queue.variants else []


def plan_lines(queue: Any, history: Any, targets: list[str], profile: Any = None) -> list[str]:
    """``sweep --plan``: the launches in order with their cells and estimates, and the whole-sweep ETA."""
    from eagletui.core.sweep.plan import fmt_duration

    q = queue
    eta = q.eta(history=history)
    configs = sum(1 for v in q.variants if v.recheck_of is None)
    points = [c.label for c in q.variants[0].cells] if q.variants else []
    cells = configs * len(points)
    pol = q.repeat_policy
    runs = pol.repeats if not pol.adaptive else eta.runs_per_cell
    out = [
        f"sweep plan of {q.profile} on {', '.join(targets)}: {len(q.variants)} launch"
        f"{'es' if len(q.variants) != 1 else ''} for {configs} server config{'s' if configs != 1 else ''}"
        + (" (+1 drift check)" if len(q.variants) > configs else "")
        + f", {cells} cell{'s' if cells != 1 else ''} ({len(points)} client setting{'s' if len(points) != 1 else ''} a launch, "
        f"no relaunch between them)",
        f"repeats: {pol.describe()}; ~{runs:.1f} runs a cell expected",
        "client settings: " + ", ".join(inert(p) for p in points),
    ]
    if profile is not None:
        for p in points_raw(q):
            c = p.get("concurrency")
            n = p.get("num_prompts", profile.bench.num_prompts)
            if isinstance(c, int) and c > n:
                out.append(
                    f"note: at concurrency={c} only {n} prompts are sent: at most {n} requests are in flight "
                    "(raise bench.num_prompts to the highest concurrency)"
                )
    for pos, i in enumerate(q.order):
        v = q.variants[i]
        est = eta.per_launch.get(i)
        if est is None:
            when = v.state
        elif est <= 0 and not eta.complete:  # nothing of it learned yet: not "~0:00"
            when = "time not known yet"
        else:
            when = f"{'~' if eta.complete else '≥ '}{fmt_duration(est)}"
        tag = " (baseline)" if v.index == 0 else (" (drift check)" if v.recheck_of is not None else "")
        left = sum(1 for c in v.cells if not c.stop) if v.state not in ("done", "failed", "skipped") else 0
        out.append(
            f"  {pos + 1:>2}. {inert(v.name)}{tag}: {v.state}; {left} cell{'s' if left != 1 else ''} to benchmark, {when}"
        )
    hosts = f"{q.workers} host{'s' if q.workers != 1 else ''}"
    if eta.complete:
        out.append(
            f"ETA {fmt_duration(eta.seconds)} on {hosts} (learned launch times and benchmark durations)"
        )
    else:
        least = f"≥ {fmt_duration(eta.seconds)}" if eta.seconds > 0 else "not known yet"
        out.append(
            f"ETA {least} on {hosts}; not yet known: {'; '.join(eta.unknown)} (learned as the sweep runs)"
        )
    return out


async def _amain(ns: argparse.Namespace) -> int:
    from eagletui.session.model import SessionModel
    from eagletui.session.sweep.cells import SweepError
    from eagletui.session.sweep.files import QueueLock, queue_path
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
    from eagletui.session.sweep.cells import SweepError
    from eagletui.session.sweep.queue import spec_fingerprint

    fresh = SweepQueue.plan(
        spec, target=target, profile_path=ns.profile, profile=profile, workers=_workers(profile, targets)
    )
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
        f"sweep: {len(queue.variants)} launches × {len(queue.variants[0].cells)} client setting(s) on {target} "
        f"({queue.repeat_policy.describe()}); "
        + ", ".join(f"{n} {k}" for k, n in sorted(c.items()))
        + f"; queue {qpath}"
    )

    from eagletui.config import load_user_config

    cfg, problems = load_user_config()
    for problem in problems:
        _say(f"eagletui: config: {problem}")
    history = _history(cfg)
    for line in plan_lines(queue, history, targets, profile):
        _say(line)
    profile.bench = dataclasses.replace(profile.bench, repeats=1)  # one repeat per benchmark() call
    from eagletui.session.sweep.jobs import job_slots, slot_worker

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
        # the sweep learns launch and benchmark times (the next sweep's plan has an ETA at its start)
        model = SessionModel(target=target, profile=profile, recorder=recorder, history=history)
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
    _write_crossover(ns, report)
    if predictions:
        # each variant the cycle model predicted from an earlier one, predicted vs measured (issue 25)
        report["predictions"] = predictions
    if ns.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_human(report)
        for p in predictions:
            over = p.get("over_launches")
            tail = (
                f"; over launches {', '.join(map(str, over['launches']))} and {', '.join(map(str, over['source_launches']))}: "
                f"{over['predicted_tok_s']:.1f} vs {over['measured_tok_s']:.1f} ({over['error_pct']:+.1f} %; one setting's "
                f"launches spread {max(over['spread_pct'], over['source_spread_pct']):.0f} %)"
                if over
                else ""
            )
            print(
                f"  predicted {p['setting']} at concurrency {p['concurrency']} from launch {p['predicted_from']}: "
                f"{p['predicted_tok_s']:.1f} tok/s, measured {p['measured_tok_s']:.1f} ({p['error_pct']:+.1f} %){tail}"
            )
    return exit_status(report)


def _prediction_rows(model: Any, target: str) -> list[dict[str, Any]]:
    """Predicted vs measured for every run of this host's session that an earlier one predicted."""
    from eagletui.core.predict.next_launch import checks

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
            old = SweepQueue.load(qpath)
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
