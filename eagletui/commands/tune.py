"""``eagletui tune [TARGET] --profile P [--json] [--resume] [--restart]``: find the best setting of a profile's
``[tune]`` space with as few launches as the cycle model allows.

Each launch is chosen by expected improvement (:mod:`eagletui.core.sweep.tune`): the cycle model's
prediction with this host's track record for the speculative factors, an exploration prior for the
others, shrunk as they are measured. It stops when no configuration left can beat the best beyond the
noise at the declared confidence, or at the budget. The launches run through the sweep's machinery
(:mod:`eagletui.session.sweep.runner`: the GPU gate between launches, benchmarks in rounds, a step
profile of each speculative launch, the queue saved after every step), so a tune killed by anything,
SIGKILL included, continues with ``--resume`` without launching again what it launched; a configuration
is launched twice only when that repeat tells the best two apart (once a tune).

The report (``--json``: the same as an object): the best setting with its margin over the runner-up and
how sure, every launch predicted vs measured, what was never tried and why, and SGLang's
``--speculative-adaptive-config`` form where the best launch's ranking gives one.

Exit status: 0 a best setting was found, 1 none (every launch failed, or interrupted), 2 usage or
profile errors.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from typing import Any

from eagletui.commands._args import ArgumentParser, timings_from_env
from eagletui.commands._signals import Interrupt, run_headless, withdraw
from eagletui.commands._ssh import add_ssh_options
from eagletui.commands.sweep import add_run_options, run_locked
from eagletui.core.profile.load import load_profile
from eagletui.core.profile.model import ProfileError
from eagletui.core.profile.redact import Redactor
from eagletui.core.textsafe import inert_lines

EXIT_OK, EXIT_NONE, EXIT_USAGE = 0, 1, 2


def _say(msg: str) -> None:
    print(inert_lines(msg), file=sys.stderr, flush=True)


async def _amain(ns: argparse.Namespace) -> int:
    try:
        profile = load_profile(ns.profile)
    except ProfileError as exc:
        _say(str(exc))
        return EXIT_USAGE
    if profile.tune is None:
        _say(f"eagletui: {ns.profile} has no [tune] table (docs/sweeps.md: tune)")
        return EXIT_USAGE
    target = ns.target or profile.target
    qpath = _queue_path(ns, target)
    return await run_locked(qpath, lambda: _run(ns, profile, target, qpath))


def _queue_path(ns: argparse.Namespace, target: str) -> Any:
    from pathlib import Path

    from eagletui.session.sweep.files import queue_path

    if ns.queue_dir:
        return queue_path(target, ns.profile, Path(ns.queue_dir))
    from eagletui.config import data_dir

    return queue_path(target, ns.profile, data_dir() / "tunes")


def _open(ns: argparse.Namespace, profile: Any, target: str, qpath: Any) -> tuple[Any, bool, int | None]:
    """(the queue, whether it is finished already, the exit status when there is none to run)."""
    from eagletui.session.sweep.cells import SweepError
    from eagletui.session.sweep.queue import SweepQueue, spec_fingerprint

    spec = profile.tune.sweep_spec()
    if qpath.exists() and not ns.restart:
        try:
            old = SweepQueue.load(qpath)
        except SweepError as exc:
            _say(f"eagletui: {exc}; start over with --restart")
            return None, False, EXIT_USAGE
        if old.fingerprint != spec_fingerprint(spec):
            _say("eagletui: the profile's [tune] changed since this tune began; --restart to start over")
            return None, False, EXIT_USAGE
        if old.finished:
            _say(
                f"eagletui: this tune of {target} finished ({qpath}): its report follows; --restart runs it again"
            )
            return old, True, None
        if not ns.resume:
            _say(
                f"eagletui: a tune of this profile on {target} is unfinished ({qpath}); --resume or --restart"
            )
            return None, False, EXIT_USAGE
        old.aborted = False
        return old, False, None
    fresh = SweepQueue.plan(spec, target=target, profile_path=ns.profile, profile=profile)
    return fresh, False, None


async def _run(ns: argparse.Namespace, profile: Any, target: str, qpath: Any) -> int:
    import asyncio

    from eagletui.commands.sweep import _history, _sweep_host
    from eagletui.config import load_user_config
    from eagletui.session.model import SessionModel
    from eagletui.session.sweep.runner import SweepRunner
    from eagletui.session.sweep.tuner import Tuner, tune_report
    from eagletui.workspace import Workspace

    queue, finished, refused = _open(ns, profile, target, qpath)
    if refused is not None:
        return refused
    spec = profile.tune
    tuner = Tuner(profile, spec, now=ns.timings.clock.wall, say=_say)
    frontier: list[dict[str, Any]] = []  # the run book's frontier (issue 35), as sweep reports it
    if not finished:
        queue.save(qpath)
        _say(
            f"tune: {len(queue.variants)} configurations on {target}, objective {spec.objective.describe()}, "
            f"budget {spec.budget_launches} launches"
            + (f" or {spec.budget_hours:g} hours" if spec.budget_hours else "")
            + f"; stops when nothing left beats the best beyond the noise ({spec.confidence * 100:g} %)"
        )
        cfg, problems = load_user_config()
        for problem in problems:
            _say(f"eagletui: config: {problem}")
        profile.bench = dataclasses.replace(profile.bench, repeats=1)  # one repeat per benchmark() call
        try:
            await _sweep_host(
                ns,
                profile,
                queue,
                target,
                None,
                cfg=cfg,
                history=_history(cfg),
                several=False,
                predictions=[],
                frontier=frontier,
                not_recorded=[],
                SessionModel=SessionModel,
                SweepRunner=SweepRunner,
                Workspace=Workspace,
                hooks={"pick": tuner.pick, "after": tuner.after},
            )
        except asyncio.CancelledError:
            if not withdraw(ns.interrupt):
                raise
    report = Redactor.for_profile(profile).value(tune_report(tuner, queue))
    report["frontier"] = Redactor.for_profile(profile).value(frontier)
    report["queue"] = str(qpath)
    if ns.interrupt.signum is not None:
        resume = shlex.join(
            ["eagletui", "tune", *([ns.target] if ns.target else []), "--profile", ns.profile]
        )
        report["interrupted"] = {**ns.interrupt.to_json(), "resume": resume + " --resume"}
    if ns.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_report(report)
    if ns.interrupt.signum is not None:
        return int(ns.interrupt.exit_code)
    return EXIT_OK if report["best"] is not None else EXIT_NONE


def print_report(rep: dict[str, Any]) -> None:
    """The report as text: the best, each launch predicted vs measured, what was never tried."""
    out = [f"tune: {rep['objective']['text']}: {rep['launches']} launches of {rep['space']} configurations"]
    best = rep.get("best")
    if best is None:
        out.append("no configuration measured")
    else:
        out.append(f"best: {best['config']} = {best['value']:.1f}")
        if best.get("margin"):
            out.append(f"  over {best['runner_up']}: {best['margin']}")
        if best.get("speculative_adaptive_config"):
            out.append(
                f"  as --speculative-adaptive-config: {json.dumps(best['speculative_adaptive_config'])}"
            )
    if rep.get("stopped"):
        out.append(f"stopped: {rep['stopped']}")
    out.append("launches (predicted vs measured):")
    for r in rep["tried"]:
        pred = (
            f"predicted {r['predicted']:.1f} [{r['predicted_band'][0]:.1f} … {r['predicted_band'][1]:.1f}]"
            if "predicted" in r
            else "the start"
        )
        meas = f"measured {r['measured']:.1f}" if r["measured"] is not None else r["state"]
        miss = "" if r.get("within_band", True) else "  MISSED its band"
        out.append(f"  {r['config']}: {pred}, {meas}{miss}")
    if rep["never_tried"]:
        out.append("never tried:")
        out += [f"  {r['config']}: {r['why']}" for r in rep["never_tried"]]
    print(inert_lines("\n".join(out)))


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="eagletui tune", description="Find the best setting of a profile's [tune] space.")
    p.add_argument(
        "target", nargs="?", default=None, help='"local" or an SSH target (default: the profile\'s)'
    )
    p.add_argument("--profile", required=True, help="profile TOML with a [tune] table")
    add_ssh_options(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--resume", action="store_true", help="continue the unfinished tune of this profile")
    p.add_argument(
        "--restart", action="store_true", help="discard an unfinished or finished tune and start over"
    )
    add_run_options(p)
    return p


def main(argv: list[str]) -> int:
    try:
        ns = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    ns.timings = timings_from_env()
    ns.command = "tune"

    def amain(got: Interrupt) -> Any:
        ns.interrupt = got
        got.stage = "tune"
        return _amain(ns)

    return run_headless(amain)
