"""``eagletui sessions [DIR] [--json]``: the recorded sessions, newest first, one line each.

No Textual import: the listing is the index pass of each recording (see
:mod:`eagletui.session.catalog`), so it runs anywhere and stays quick on long recordings.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from eagletui.commands._args import ArgumentParser

COLUMNS = (
    "name",
    "start",
    "target",
    "model",
    "duration",
    "launches",
    "best tok/s",
    "best accept",
    "baseline",
    "spec vs no-spec",
)


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _start(created: str) -> str:
    return created.replace("T", " ")[:16] if created else "?"


def _model(model: str) -> str:
    return model.rsplit("/", 1)[-1] if model else ""


def _pair(p: dict[str, Any]) -> str:
    """``#2÷#3 0.71×``; a pair that is not like for like is never a ratio: ``#4÷#3 unjudged (--sim-host)``."""
    if p.get("unjudged") or p.get("like_for_like") is False:
        names = [str(n) for n in p.get("differs_in") or []]
        return f"#{p.get('spec')}÷{p.get('no_spec')} unjudged" + (f" ({', '.join(names)})" if names else "")
    sp = p.get("speedup")
    return f"#{p.get('spec')}÷{p.get('no_spec')} {sp:.2f}×" if isinstance(sp, int | float) else ""


def row(entry: Any) -> list[str]:
    s = entry.summary
    if s is None:
        return [entry.name, "(unreadable)", "", "", "", "", "", "", "", ""]
    launches = str(s.launches) + (f" ({s.failures} failed)" if s.failures else "")
    best = f"{s.best_tok_s:.1f} (#{s.best_launch})" if s.best_tok_s is not None else "-"
    accept = f"{s.best_accept:.2f}" if s.best_accept is not None else "-"
    base = f"{s.baseline_tok_s:.1f} (#{s.baseline_launch})" if s.baseline_tok_s is not None else "-"
    pairs = " ".join(_pair(p) for p in s.spec_pairs if isinstance(p, dict))
    return [
        entry.name,
        _start(s.created),
        s.target or "?",
        _model(s.model) or "-",
        _duration(s.duration),
        launches,
        best,
        accept,
        base,
        pairs or "-",
    ]


def table(entries: list[Any]) -> str:
    from eagletui.core.textsafe import inert

    rows = [list(COLUMNS)] + [[inert(c) for c in row(e)] for e in entries]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    out = []
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for e in entries:
        if e.summary is None:
            out.append(f"error: {inert(e.name)}: {inert(e.error)}")
        elif e.warnings:
            out.append(f"note: {inert(e.name)}: {inert(e.warnings[0])}")
        if e.summary is not None and any(not p.get("like_for_like", True) for p in e.summary.spec_pairs):
            out.append(
                f"note: {inert(e.name)}: unjudged: a spec run with no like-for-like no-spec run "
                "(the nearest differs in what is named; no speedup is judged on it)"
            )
    return "\n".join(out) + "\n"


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="eagletui sessions",
        description="List recorded sessions, newest first (replay one with 'eagletui replay NAME').",
    )
    p.add_argument(
        "dir", nargs="?", help="a directory of recordings (default: the sessions dir of the config)"
    )
    p.add_argument("--json", action="store_true", help="one JSON document: a list of sessions")
    p.add_argument(
        "--limit", type=int, default=200, help="list at most this many (newest first; default 200)"
    )
    return p


def startup_table(entries: list[Any]) -> str:
    """Startup, cold and warm, per launch signature, over the listed sessions' launches (the run book):
    p50/p90 of launch → ready and of the longest phases, split by the page cache the preflight measured."""
    from eagletui.core.phases.startup_stats import MAX_SIGNATURES, record_of, startup_lines
    from eagletui.core.textsafe import inert

    groups: dict[str, list[Any]] = {}
    # oldest session first, so a signature's place is its most recent launch's
    for e in reversed(entries):
        for row in (e.summary.startup if e.summary is not None else None) or []:
            rec = record_of(row)
            if rec is not None:
                sig = str(row["signature"])
                groups[sig] = [*groups.pop(sig, []), rec]  # re-inserted: the most recent signature last
    keys = list(groups)[-MAX_SIGNATURES:]
    lines = startup_lines((k, groups[k]) for k in reversed(keys))
    if not lines:
        return ""
    n = sum(len(groups[k]) for k in keys)
    head = (
        f"startup by launch signature ({n} launch{'es' if n != 1 else ''} that reached ready; "
        "p50/p90 by page cache, as the preflight measured it)"
    )
    return "\n".join([head, *(inert(x) for x in lines)]) + "\n"


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from eagletui.core.textsafe import inert
    from eagletui.session.catalog import list_sessions

    cache = False
    if args.dir is None:
        from eagletui.commands._ui import load_config

        directory = Path(load_config().sessions_dir).expanduser()
        cache = True  # eagletui's own dir: summaries are cached beside the recordings
    else:
        directory = Path(args.dir).expanduser()
    if not directory.is_dir():
        if args.json:
            sys.stdout.write("[]\n")
        sys.stderr.write(f"eagletui: no sessions dir {inert(str(directory))}\n")
        return 0 if args.dir is None else 2
    entries = list_sessions(directory, cache=cache, limit=max(1, args.limit))
    if args.json:
        sys.stdout.write(json.dumps([e.to_dict() for e in entries], indent=1) + "\n")
        return 0
    if not entries:
        sys.stdout.write(f"no sessions in {inert(str(directory))}\n")
        return 0
    sys.stdout.write(table(entries))
    startup = startup_table(entries)
    if startup:
        sys.stdout.write("\n" + startup)
    return 0
