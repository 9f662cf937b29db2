"""``eagletui bench TARGET --profile FILE [--launch] [--repeats N] [--json]``: headless benchmarking.

For scripts and CI: launch (optionally) the profile's server on TARGET, wait until it serves, run the
profile's benchmark N times, print one result (JSON on stdout with ``--json``) and stop what we
started, also on failure and on Ctrl-C, SIGTERM or SIGHUP (then the JSON has what finished and an
``interrupted`` block, and the exit status is 128 + the signal: :mod:`eagletui.commands._signals`).

The same orchestrator as the UI: a :class:`~eagletui.workspace.Workspace` launches, tails and
benchmarks; its events go into a :class:`~eagletui.session.model.SessionModel`, so readiness is the
phase machine's ``ServerReady`` (as on screen), not a poll of ``/health``, and the runner, the API key
and the result file are chosen in one place. :class:`~eagletui.commands._headless.PhasePrinter`, the
model's observer here, prints the phase lines on stderr in order, where the UI would paint them; what is
printed and returned at the end is :mod:`eagletui.commands._bench_report`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
from typing import Any

from eagletui.commands._args import ArgumentParser, command_timings, timings_from_env
from eagletui.commands._bench_report import print_report, summarize_repeats
from eagletui.commands._headless import PhasePrinter, _say
from eagletui.commands._signals import Interrupt, run_headless, withdraw
from eagletui.commands._ssh import add_ssh_options, ssh_options
from eagletui.core import events as ev
from eagletui.core.events import BenchmarkResult
from eagletui.core.profile.load import load_profile
from eagletui.core.profile.model import Profile, ProfileError
from eagletui.core.profile.redact import Redactor
from eagletui.core.servers.spec import without_speculation as no_spec_args
from eagletui.session.baseline import warning as baseline_warning
from eagletui.session.decide import decide
from eagletui.session.model import SessionModel
from eagletui.session.waits import wait_exit, wait_ready, why_not_ready
from eagletui.workspace import Workspace

EXIT_OK, EXIT_BENCH_FAILED, EXIT_USAGE, EXIT_LAUNCH_FAILED, EXIT_STOP_FAILED = 0, 1, 2, 3, 4
#: The benchmark ran but its recording is missing events (disk full, the file removed): a script
#: that keeps the session as the run's evidence must not take it as whole.
EXIT_NOT_RECORDED = 5


async def _log_tail(ws: Workspace, n: int = 20) -> str:
    run = ws.run
    if run is None or ws.transport is None:
        return ""
    with contextlib.suppress(Exception):
        res = await ws.transport.run(["tail", "-n", str(n), run.log_path])
        return str(res.stdout)
    return ""


def without_speculation(profile: Profile) -> Profile:
    """The same profile with every speculation flag of its server kind removed (everything else kept,
    :func:`eagletui.core.servers.spec.without_speculation`): the no-spec reference a spec run must beat."""
    args = no_spec_args(profile.args, profile.kind)
    return dataclasses.replace(profile, args=args, name=f"{profile.name} (no spec)")


async def _repeats(
    ws: Workspace, repeats: int, redactor: Redactor, concurrencies: list[int] | None = None
) -> list[BenchmarkResult]:
    """``repeats`` benchmarks at each of ``concurrencies`` (the profile's own when None) against the
    server ``ws`` follows."""
    results: list[BenchmarkResult] = []
    levels: list[int | None] = list(concurrencies) if concurrencies else [None]
    for conc in levels:
        prof = ws.running_profile or ws.profile
        if conc is not None:
            prof.bench = dataclasses.replace(prof.bench, concurrency=conc)
            _say(f"concurrency {conc}")
        for i in range(repeats):
            r = await ws.benchmark()
            results.append(r)
            _say(
                f"repeat {i + 1}/{repeats}: {r.output_throughput:.1f} tok/s"
                + (f", accept {r.accept_length:.2f}" if r.accept_length else "")
                + (f" ({redactor.text(r.error)})" if r.error else "")
            )
    return results


def launch_failure(model: SessionModel, why: str, *, stage: str = "launch") -> dict[str, Any]:
    """The JSON contract's record of a launch that did not reach ready: the triage of the current
    launch (kind, key line, hint, phase) and its exit, or just why when nothing was launched."""
    la = model.state.launch
    out: dict[str, Any] = {"stage": stage, "error": why}
    if la is not None:
        out["launch"] = la.launch
        out["exit_code"], out["exit_signal"] = la.exit_code, la.exit_signal
        f = la.failure
        if f is not None:
            out.update(kind=f.kind, message=f.message, line=f.line, hint=f.hint, phase=f.phase)
    return out


async def _launch_and_wait(
    ws: Workspace, model: SessionModel, profile: Profile, redactor: Redactor, label: str
) -> dict[str, Any] | None:
    """Launch ``profile`` (stopping what we run first) and wait until ready: None, or the failure."""
    try:
        await ws.launch(profile)
    except Exception as exc:
        _say(f"eagletui: {label}launch failed: {exc}")
        stage = getattr(exc, "stage", "launch")
        return redactor.value(launch_failure(model, str(exc), stage="stop" if stage == "stop" else "launch"))
    _say(f"{label}launched on {ws.target}; log: {ws.run.log_path if ws.run else '?'}")
    why = why_not_ready(*await wait_ready(model, profile.ready_timeout_s, ws.timings))
    if why:
        _say(f"eagletui: {label}server {why}")
        # the log says why; the exit comes a moment later (SGLang kills its tree right after the error)
        await wait_exit(model, ws.timings.session.exit_record_s, ws.timings)
        tail = redactor.text(await _log_tail(ws))
        if tail:
            _say("---- last log lines ----\n" + tail)
        return redactor.value(launch_failure(model, why))
    _say(f"{label}server ready")
    return None


async def _amain(ns: argparse.Namespace) -> int:
    try:
        profile = load_profile(ns.profile)
    except ProfileError as exc:
        _say(str(exc))
        return EXIT_USAGE
    if ns.vs_no_spec and not profile.kind.is_spec(profile.args):
        flags = " or ".join(profile.kind.spec_flags)
        _say(f"eagletui: --vs-no-spec needs a profile with {flags}")
        return EXIT_USAGE
    ns.launch = ns.launch or ns.vs_no_spec  # we relaunch: only a server we started may be stopped
    foreign = None
    if ns.baseline:
        foreign = _load_baseline(ns.baseline)
        if isinstance(foreign, str):
            _say(f"eagletui: {foreign}")
            return EXIT_USAGE
    target = ns.target or profile.target
    repeats = ns.repeats or profile.bench.repeats
    redactor = Redactor.for_profile(profile)
    # One repeat per Workspace.benchmark() call: each gets its own progress line here.
    profile.bench = dataclasses.replace(profile.bench, repeats=1)
    recorder = _recorder(ns, target, profile)
    model = SessionModel(target=target, profile=profile, recorder=recorder, learn_history=False)
    model.subscribe(PhasePrinter(samples=not ns.json, timings=command_timings(ns)))
    model.on_problem(PhasePrinter.problem)
    ws = Workspace(
        profile, model.dispatch, target=target, preflight=False, ssh=ssh_options(ns), timings=command_timings(ns)
    )
    try:
        await ws.connect()
    except Exception as exc:
        _say(f"eagletui: cannot reach {target}: {exc}")
        await ws.close()
        return EXIT_LAUNCH_FAILED
    # Everything measured goes into ``summary`` as it is measured, so a failure later (the no-spec
    # relaunch, the stop) still prints what came before it: the JSON contract never comes back empty.
    summary: dict[str, Any] = {"target": target, "profile": profile.name}
    code = EXIT_OK
    try:
        code = await _measure(ns, ws, model, profile, target, repeats, redactor, foreign, summary)
    except asyncio.CancelledError:
        if not withdraw(ns.interrupt):
            raise
        # SIGTERM, SIGHUP or Ctrl-C: what finished is reported, what we started is stopped below
        code = ns.interrupt.exit_code
        _measured_so_far(ns, model, profile, target, redactor, summary)
        summary["interrupted"] = ns.interrupt.to_json()
        _say(f"eagletui: interrupted by {ns.interrupt.name} during the {ns.interrupt.stage or 'setup'}")
    finally:
        if not await _stop_what_we_started(ws, redactor, summary):
            code = EXIT_STOP_FAILED
        job = ws.job_report()
        if job is not None:
            summary["job"] = job  # a Slurm launch: its job id and the state it ended in
        await ws.close()
        model.close()
        if recorder is not None and recorder.events_written:
            said, whole = recorder.outcome()
            _say(said if whole else f"eagletui: {said}")
            if not whole:
                summary["recording"] = {"complete": False, "message": redactor.text(said)}
                code = code or EXIT_NOT_RECORDED
    if recorder is not None and "session" not in summary and model.state.launch is not None:
        from eagletui.session.catalog import session_name

        # what --baseline SESSION:RUN and 'eagletui sessions' know this run by
        summary["session"] = {"name": session_name(recorder.path), "run": model.state.launch.launch}
    if "diagnosis" not in summary and model.state.launch is not None:
        # a launch that failed still says what its log showed (a slow load before the OOM, …)
        summary["diagnosis"] = diagnosis_json(model, model.state.launch.launch, redactor)
    if ns.json:
        print(json.dumps(summary, indent=2))
    return code


async def _stop_what_we_started(ws: Workspace, redactor: Redactor, summary: dict[str, Any]) -> bool:
    """Stop the server this command launched (none else), its outcome in ``summary["stop"]``; False when
    the stop failed: a server left running holds the port and the GPUs, never a silent success."""
    if ws.run is None or not ws.run.owned or not ws.run.launched_here:
        return True
    _say("stopping the server")
    try:
        await ws.stop()
    except Exception as exc:
        _say(f"eagletui: stopping the server failed: {exc}")
        summary["stop"] = {"ok": False, "error": redactor.text(str(exc))}
        return False
    out = ws.last_stop
    summary["stop"] = {"ok": True}
    if out is not None:
        summary["stop"].update(ended_by=out.ended_by, seconds=out.seconds)
        _say(f"the server {out.describe()}")
    return True


def _measured_so_far(
    ns: argparse.Namespace,
    model: SessionModel,
    profile: Profile,
    target: str,
    redactor: Redactor,
    summary: dict[str, Any],
) -> None:
    """An interrupted run's ``summary``: the benchmarks that finished before the signal, as the run book
    filed them (the one in flight measured nothing); printed on the terminal too without ``--json``."""
    book = model.runbook
    measured = [n for n in sorted(book.runs) if book.runs[n].results]
    if "requests" not in summary:
        run = book.runs[measured[0]] if measured else None
        done = list(run.results) if run is not None else []
        summary.update(redactor.value(summarize_repeats(done, profile, target, run)))
    elif ns.vs_no_spec and "no_spec" not in summary and len(measured) > 1:
        run = book.runs[measured[-1]]
        nospec = without_speculation(profile)
        summary["no_spec"] = redactor.value(summarize_repeats(list(run.results), nospec, target, run))
    if measured and "diagnosis" not in summary:  # the report's why lines: those of the run it shows
        summary["diagnosis"] = diagnosis_json(model, measured[0], redactor)
    if not ns.json and summary.get("requests"):
        base = summary.get("no_spec")
        print_report(summary, base if isinstance(base, dict) and "requests" in base else None, False)


def diagnosis_json(model: SessionModel, launch: int, redactor: Redactor) -> list[dict[str, Any]]:
    """The launch's diagnoses (docs/diagnosis.md) as the JSON contract carries them, scrubbed."""
    from eagletui.core.predict.next_launch import explain

    return list(redactor.value([d.to_json() for d in explain(model.state.diagnoser, model.runbook, launch)]))


async def _measure(
    ns: argparse.Namespace,
    ws: Workspace,
    model: SessionModel,
    profile: Profile,
    target: str,
    repeats: int,
    redactor: Redactor,
    foreign: Any,
    summary: dict[str, Any],
) -> int:
    """Launch, benchmark, (relaunch without speculation, benchmark), fill ``summary``: the exit status."""
    ns.interrupt.stage = "launch" if ns.launch else "attach"
    if not await _server_up(ns, ws, model, profile, target, redactor, summary):
        return EXIT_LAUNCH_FAILED
    ns.interrupt.stage = "benchmark"
    results = await _repeats(ws, repeats, redactor, ns.concurrency)
    spec_launch = model.state.launch.launch if model.state.launch is not None else 0
    book = model.runbook
    # Errors may echo the key (``Invalid API key provided: …``): what is printed is scrubbed.
    summary.update(redactor.value(summarize_repeats(results, profile, target, book.runs.get(spec_launch))))
    summary["warmup"] = "a round of requests at each concurrency before measuring (kernel JIT)"
    base_summary: dict[str, Any] | None = None
    if ns.vs_no_spec:
        base_summary = await _measure_no_spec(
            ns, ws, model, profile, target, repeats, redactor, summary, spec_launch
        )
        if base_summary is None:
            return EXIT_LAUNCH_FAILED
    economics = _economics_json(model, spec_launch)
    if economics is not None:
        summary["economics"] = economics
    summary["diagnosis"] = diagnosis_json(model, spec_launch, redactor)
    nxt = next((d for d in summary["diagnosis"] if d["kind"] == "next_launch"), None)
    if nxt is not None and nxt["data"].get("adaptive_config"):
        # the best step count per measured concurrency, as --speculative-adaptive-config takes it
        summary["adaptive_config"] = nxt["data"]["adaptive_config"]
    if base_summary is not None and model.state.launch is not None:
        base_summary["diagnosis"] = diagnosis_json(model, model.state.launch.launch, redactor)
    if foreign is not None:
        summary["baseline"] = _vs_baseline(model, spec_launch, profile, results, foreign)
        note = baseline_warning(summary["baseline"])
        if note:
            _say(f"eagletui: warning: {note}")
    if not ns.json:
        print_report(summary, base_summary, foreign is not None)
    # the validity gate (no tokens, failed requests, impossible counts, …) and any failed request
    ok = all(
        s["requests"] > 0 and s["failed"] == 0 and not s["invalid"] and s["by_concurrency"]
        for s in (summary, base_summary)
        if s is not None
    )
    return EXIT_OK if ok else EXIT_BENCH_FAILED


async def _server_up(
    ns: argparse.Namespace,
    ws: Workspace,
    model: SessionModel,
    profile: Profile,
    target: str,
    redactor: Redactor,
    summary: dict[str, Any],
) -> bool:
    """A server to benchmark: launched and ready (``--launch``), or the one that answers at the
    profile's port, adopted; False when there is none (``summary`` says why)."""
    if ns.launch:
        failed = await _launch_and_wait(ws, model, profile, redactor, "")
        if failed is not None:
            summary["launch_failure"] = failed
            summary["error"] = f"launch failed: {failed['error']}"
            return False
    else:
        missing = await _no_server(ws, profile, target)
        if missing:
            _say(missing)
            summary["error"] = (
                f"no server answers at port {profile.port} on {target}: start it or use --launch"
            )
            return False
        await _adopt_running_server(ws, model, profile, target)
    return True


async def _measure_no_spec(
    ns: argparse.Namespace,
    ws: Workspace,
    model: SessionModel,
    profile: Profile,
    target: str,
    repeats: int,
    redactor: Redactor,
    summary: dict[str, Any],
    spec_launch: int,
) -> dict[str, Any] | None:
    """``--vs-no-spec``: relaunch without the speculative flags and benchmark the same way, then more
    no-spec runs where they can tell a point from its noise (:mod:`eagletui.session.decide`); its
    summary (also ``summary["no_spec"]``), or None when the relaunch failed (``summary`` says why)."""
    nospec = without_speculation(profile)
    _say("relaunching without the speculative flags")
    summary["order"] = ["spec", "no_spec"]
    ns.interrupt.stage = "no-spec launch"
    failed = await _launch_and_wait(ws, model, nospec, redactor, "no-spec ")
    if failed is not None:
        summary["no_spec"] = {"launch_failure": failed}
        summary["error"] = f"no-spec launch failed: {failed['error']}"
        return None
    ns.interrupt.stage = "no-spec benchmark"
    base_results = await _repeats(ws, repeats, redactor, ns.concurrency)
    base_launch = model.state.launch.launch if model.state.launch is not None else -1
    limit = ns.decide_within if ns.decide_within is not None else ws.timings.sweep.decide_s
    if limit > 0 and spec_launch in model.runbook.runs:
        summary["decide"] = await decide(ws, model, spec_launch, base_launch, limit, _say)
        run = model.runbook.runs.get(base_launch)
        base_results = list(run.results) if run is not None else base_results
    base_summary: dict[str, Any] = redactor.value(
        summarize_repeats(base_results, nospec, target, model.runbook.runs.get(base_launch))
    )
    summary["no_spec"] = base_summary
    return base_summary


def _economics_json(model: SessionModel, spec_launch: int) -> dict[str, Any] | None:
    """The ``economics`` block: the spec run against its no-spec reference, per concurrency and where
    speculation stops paying; None without a reference to compare with."""
    book = model.runbook
    econ = book.economics(spec_launch) if spec_launch in book.runs else None
    ref = book.reference(spec_launch) if spec_launch in book.runs else None
    if ref is not None and not ref.like_for_like:  # shown with what differs, never judged
        return (book.unjudged_json(spec_launch) or {}) | {"crossover": None, "crossover_text": "", "points": []}
    if econ is None or ref is None:
        return None
    points = book.economics_points(spec_launch)
    return {
        **econ.to_json(),
        "crossover": book.crossover(spec_launch),
        "crossover_text": book.across(spec_launch),
        "points": [e.to_json() for _, e in points],
        "by_concurrency": [r.to_json() for r in book.concurrency_table(spec_launch)],
        "vs": ref.label,
        "like_for_like": ref.like_for_like,
        "differences": list(ref.differences),
        "sentence": book.economics_sentence(spec_launch),
    }


async def _no_server(ws: Workspace, profile: Profile, target: str) -> str:
    """Without ``--launch``: "" when a server answers at the profile's port, else what to tell the
    user (no server answers there, and ``--launch`` starts one) instead of firing every request."""
    from eagletui.bench.probe import Silent, no_server_answer

    if profile.bench.runner != "builtin":  # bench_serving / a command reach the server their own way
        return ""
    try:
        url = await ws.base_url()
    except Exception as exc:
        return f"eagletui: cannot reach port {profile.port} on {target}: {exc}"
    why = await no_server_answer(url, timeout=ws.timings.http.probe_s)
    if why is None:
        return ""
    if isinstance(why, Silent):  # busy or stalled, not absent: the benchmark's stall watch decides
        _say(f"eagletui: warning: port {profile.port} on {target}: {why}; benchmarking anyway")
        return ""
    return (
        f"eagletui: no server answers at port {profile.port} on {target} ({why}).\n"
        f"  Start it with 'eagletui bench {target} --profile {_profile_arg(profile)} --launch' "
        "(launches it, benchmarks, stops it), or check the profile's [server] port."
    )


def _profile_arg(profile: Profile) -> str:
    return str(profile.path) if getattr(profile, "path", None) else "PROFILE"


def _recorder(ns: argparse.Namespace, target: str, profile: Profile) -> Any:
    """The session recording of a headless run (as the UI records one), so it is listed by
    ``eagletui sessions`` and can be a later ``--baseline SESSION:RUN``; None with ``--no-record``."""
    if ns.no_record:
        return None
    from eagletui.commands._ui import load_config, make_recorder

    cfg = load_config()
    if ns.record:
        cfg.sessions_dir = ns.record
        cfg.record = True
    return make_recorder(cfg, target, profile)


async def _adopt_running_server(ws: Workspace, model: SessionModel, profile: Profile, target: str) -> None:
    """Without ``--launch`` the results need a launch to belong to (runs are numbered from 1): the run
    eagletui started on this port when there is one (reattached, with its recorded config), else the
    server that answers, recorded as an external launch with the profile's config."""
    try:
        if await ws.attach_newest():  # only a run of this profile (its port, command, model)
            return
    except Exception as exc:  # no run list: the server still answers, benchmark it as external
        _say(f"eagletui: cannot list eagletui's runs on {target}: {exc}")
    ws.launch_no = max(ws.launch_no, 1)
    config = {**profile.snapshot(), "external": True}  # not launched here: its config is the profile's
    model.dispatch(ev.LaunchStarted(launch=ws.launch_no, target=target, config=config))
    model.dispatch(ev.ServerReady(launch=ws.launch_no))


def _load_baseline(text: str) -> Any:
    """The ``--baseline SESSION:RUN`` run (a :class:`~eagletui.session.baseline.ForeignRun`), or why not."""
    from eagletui.commands._ui import load_config
    from eagletui.commands.replay import session_dirs
    from eagletui.session.baseline import load_run

    try:
        return load_run(text, session_dirs(load_config()))
    except LookupError as exc:
        return str(exc.args[0]) if exc.args else str(exc)


def _vs_baseline(
    model: SessionModel, launch: int, profile: Profile, results: list[BenchmarkResult], foreign: Any
) -> dict[str, Any]:
    """The ``baseline`` block: this run (as the run book folded it) against the earlier session's."""
    from eagletui.core.runs.run import Run
    from eagletui.session.baseline import compare

    run = model.runbook.runs.get(launch)
    if run is None or not run.good_results:  # no launch of ours to fold onto: the results alone
        run = Run(launch=launch, config=profile.snapshot(), results=list(results))
    gpus = model.state.gpus
    gpu = gpus[0].get("name") if gpus and isinstance(gpus[0], dict) else ""
    return compare(run, foreign, gpu=gpu if isinstance(gpu, str) else "")


def _concurrency_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not values or any(not 1 <= v <= 10_000 for v in values):
        raise argparse.ArgumentTypeError("concurrencies must be between 1 and 10000")
    return sorted(set(values))


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="eagletui bench", description="Benchmark a server headlessly.")
    p.add_argument(
        "target", nargs="?", default=None, help='"local" or an SSH target (default: the profile\'s)'
    )
    p.add_argument("--profile", required=True, help="profile TOML")
    add_ssh_options(p)
    p.add_argument("--launch", action="store_true", help="launch the server first and stop it afterwards")
    p.add_argument("--repeats", type=int, default=None, help="benchmark runs (default: bench.repeats)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="sessions dir for the recording (default: the data dir's); see 'eagletui sessions'",
    )
    p.add_argument("--no-record", action="store_true", help="do not record the session")
    p.add_argument(
        "--concurrency",
        type=_concurrency_list,
        default=None,
        metavar="N[,N…]",
        help="benchmark at each of these concurrencies (default: bench.concurrency); with --vs-no-spec "
        "the economics say where speculation stops paying",
    )
    p.add_argument(
        "--decide-within",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --vs-no-spec: the most time spent on more no-spec runs where a concurrency is within its "
        "noise and more runs could tell it (default: the timings' sweep.decide_s, 600 s; 0: none)",
    )
    p.add_argument(
        "--vs-no-spec",
        action="store_true",
        help="then relaunch without the speculation flags, benchmark again and print the economics "
        "(implies --launch)",
    )
    p.add_argument(
        "--baseline",
        metavar="SESSION:RUN",
        default=None,
        help="compare with run RUN of an earlier session (a file, or a name as in 'eagletui sessions'): "
        "Δ, economics against a no-spec run, and a warning when it is not like for like",
    )
    return p


def main(argv: list[str]) -> int:
    try:
        ns = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if ns.repeats is not None and ns.repeats < 1:
        _say("eagletui: --repeats must be at least 1")
        return EXIT_USAGE
    if ns.decide_within is not None and not (math.isfinite(ns.decide_within) and ns.decide_within >= 0):
        _say("eagletui: --decide-within must be a number of seconds ≥ 0")
        return EXIT_USAGE
    ns.timings = timings_from_env()

    def amain(got: Interrupt) -> Any:
        ns.interrupt = got
        return _amain(ns)

    return run_headless(amain)
