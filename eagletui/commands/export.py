"""``eagletui export FILE|NAME --format md|csv|json [-o OUT]``: a recorded session as a report.

Per run: the config diff vs the baseline, phase durations, tok/s, accept length, TTFT, Δ %, the
verdict, the speculation economics and the exact launch command with its environment (secrets
redacted). The recording is opened indexed (:class:`~eagletui.session.index.ReplaySource`) and only
its launch, phase, benchmark and config events — which the index has already picked out — are
decoded, so a long session exports without its log being read into memory (1M events: 1.3 s).
``NAME`` is looked up like ``eagletui replay`` does. Without ``-o`` the report goes to stdout; a file
is written 0600. No Textual import.
"""

from __future__ import annotations

import argparse
import sys

from eagletui.commands._args import ArgumentParser


def build_parser() -> argparse.ArgumentParser:
    from eagletui.session.export import FORMATS

    p = ArgumentParser(
        prog="eagletui export",
        description="Export a recorded session's runs as Markdown (for a report), CSV or JSON.",
    )
    p.add_argument(
        "file",
        help="a session file (.jsonl or .jsonl.gz), or a session's name (or a unique prefix of it) "
        "in the sessions dir: see 'eagletui sessions'",
    )
    p.add_argument("--format", "-f", choices=FORMATS, default="md", help="md (default), csv or json")
    p.add_argument(
        "--baseline",
        metavar="SESSION:RUN",
        default=None,
        help="also compare every run with run RUN of another session (Δ, and whether it is like for like)",
    )
    p.add_argument("-o", "--output", metavar="OUT", help="write here (0600) instead of stdout")
    return p


def export_file(name: str, fmt: str, cfg: object = None, baseline: str | None = None) -> str:
    """The report text for session ``name`` (a path or a name in the sessions dirs); raises
    ``LookupError``/``OSError``/``SessionError`` with a message for the user."""
    from eagletui.commands.replay import session_dirs
    from eagletui.session.catalog import resolve, session_name
    from eagletui.session.export import build_report
    from eagletui.session.export_render import render
    from eagletui.session.index import ReplaySource

    foreign = None
    if baseline:
        from eagletui.session.baseline import load_run

        foreign = load_run(baseline, session_dirs(cfg))  # BaselineError is a LookupError
    path = resolve(name, session_dirs(cfg))
    with ReplaySource.open(path) as source:
        report = build_report(
            # the index already holds every launch/phase/benchmark/config event (its seek context,
            # a superset of REPORT_TYPES): the log lines are never decoded
            (ev for _line, _t, ev in source.context),
            header=dict(source.header),
            title=f"eagletui session {session_name(path)}",
        )
        warnings = list(source.warnings)
        if foreign is not None:
            from eagletui.session.baseline import attach, gpu_of, warning

            attach(report, foreign, gpu=gpu_of(source))
            for rec in report.records:
                note = warning(rec.vs_external or {"comparable": True})
                if note:
                    warnings.append(f"run {rec.launch}: {note}")
    from eagletui.core.textsafe import inert

    for w in warnings:
        sys.stderr.write(f"eagletui: {inert(str(path))}: {inert(w)}\n")
    return render(report, fmt)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from eagletui.commands._ui import load_config
    from eagletui.core.textsafe import inert
    from eagletui.session.format import SessionError

    try:
        text = export_file(args.file, args.format, load_config(), args.baseline)
    except (LookupError, SessionError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, LookupError) and exc.args else str(exc)
        sys.stderr.write(f"eagletui: {inert(str(msg))}\n")
        return 2
    if args.output:
        from eagletui.session.export import write_private

        try:
            out = write_private(args.output, text)
        except OSError as exc:
            sys.stderr.write(f"eagletui: cannot write {inert(args.output)}: {inert(str(exc))}\n")
            return 2
        sys.stderr.write(f"eagletui: wrote {inert(str(out))}\n")
        return 0
    sys.stdout.write(text)
    return 0
