"""Each counted benchmark of a sweep, kept beside its queue: the frontier of a resumed sweep is folded
from every session's runs, the same set its decisions rank.

The queue keeps one summary per benchmark (tok/s, goodput …): enough for the decisions, not for the
frontier, which pools each setting's per-request latencies under the SLO. A ``sweep --resume`` is a new
process with a new run book, so before this file its frontier held only the resumed session's runs
(2 of 4 configs) while its decisions ranked all four. Now each benchmark's launch config, workload and
result (the recording's events, secrets redacted) are appended as one JSON line to ``<queue>.runs.jsonl``
(0600) with the id its queue entry carries, and :func:`kept_book` folds those of the queue's counted
runs into one :class:`~eagletui.core.runs.book.RunBook` (one launch per variant, the benchmarks
renumbered): the frontier, its answer and the report read that book.

The file is untrusted input like a recording: bounded in size, each event checked against its type
before it is built, a bad line skipped and counted; lines of an earlier sweep at the same path (another
``created``) are ignored.

A new sweep at the same queue path (``sweep --restart``, a changed ``[sweep]``, a finished one started
again from the Queue tab) starts a new file at its first kept run: the earlier sweep's is **kept aside**
as ``<queue>.runs.prev.jsonl`` (replacing an older one), not removed, because with recording off
(``--no-record``) it may be the only copy of that sweep's per-request latencies; one generation aside
keeps the files bounded, where before the one file grew with every sweep ever run at that path.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagletui.core.events import BenchmarkResult, BenchmarkStarted, Event, LaunchStarted, Notice
from eagletui.core.private_files import FILE_MODE, private_dir
from eagletui.core.profile.redact import Redactor
from eagletui.session.decode import check_event_dict
from eagletui.session.model import SessionModel, runbook_for

if TYPE_CHECKING:
    from eagletui.core.profile.model import Profile
    from eagletui.core.runs.book import RunBook
    from eagletui.session.sweep.cells import VariantState
    from eagletui.session.sweep.queue import SweepQueue

#: the most of the file read back (a run's latency rows are bounded: 2048 per benchmark, ≈ 100 KiB)
MAX_KEPT_BYTES = 256 * 1024 * 1024


def kept_path(queue_file: Path) -> Path:
    """``<queue>.runs.jsonl`` beside the queue file."""
    return queue_file.with_name(queue_file.stem + ".runs.jsonl")


def prev_kept_path(queue_file: Path) -> Path:
    """``<queue>.runs.prev.jsonl``: the kept runs of the sweep that ran at this path before."""
    return queue_file.with_name(queue_file.stem + ".runs.prev.jsonl")


#: (kept file, queue ``created``) already checked by this process: a queue's first keep checks the file
_CHECKED: set[tuple[str, float]] = set()
#: a line starts with its sweep's ``created`` (:func:`keep_run` writes that key first)
_CREATED = re.compile(rb'\{"created": ([0-9.eE+-]+),')


def _new_book(queue_file: Path, created: float) -> None:
    """Before a queue's first keep: a file whose first line is another sweep's (a restart's new queue
    at the same path) goes aside (:func:`prev_kept_path`), so this sweep starts a new kept book. A first
    line that does not say (damaged) is left: only a sweep known to be another one's goes aside."""
    path = kept_path(queue_file)
    if (str(path), created) in _CHECKED:
        return
    try:
        with open(path, "rb") as f:
            m = _CREATED.match(f.read(64))
    except FileNotFoundError:
        m = None
    try:
        other = m is not None and float(m.group(1)) != created
    except ValueError:
        other = False
    if other:
        os.replace(path, prev_kept_path(queue_file))
    _CHECKED.add((str(path), created))


def keep_run(
    queue: SweepQueue,
    variant: VariantState,
    model: SessionModel,
    result: BenchmarkResult,
    profile: Profile,
) -> str:
    """Append one benchmark of the session's run book (redacted) for the queue's later folds; the id
    its queue entry carries, "" when nothing was kept (no queue file: nothing to resume; a write that
    failed: said as a warning notice, the sweep goes on)."""
    run = model.runbook.runs.get(result.launch)
    if queue.path is None or run is None:
        return ""
    workload = run.bench_workload.get(result.bench, {})
    events = (
        LaunchStarted(launch=result.launch, target=run.target, config=run.config),
        BenchmarkStarted(bench=result.bench, launch=result.launch, workload=workload),
        result,
    )
    rid = f"{variant.index}/{variant.run_id}/{result.launch}/{result.bench}"
    red = Redactor.for_profile(profile)
    line = {
        "created": queue.created,
        "variant": variant.index,
        "id": rid,
        "events": [red.event_dict(e) for e in events],
    }
    path = kept_path(queue.path)
    try:
        private_dir(path.parent)
        _new_book(queue.path, queue.created)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview((json.dumps(line, default=str) + "\n").encode())
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except OSError as exc:
        why = f"sweep: {variant.name}: cannot keep the run for a resume's frontier: {exc}"
        model.dispatch(Notice(level="warning", message=why, source="sweep"))
        return ""
    return rid


def counted_ids(queue: SweepQueue) -> set[str]:
    """The kept ids of the queue's counted benchmarks (its cells' good repeats and its max-rate steps)."""
    counted = {str(r.get("kept")) for v in queue.variants for c in v.cells for r in c.good if r.get("kept")}
    for v in queue.variants:  # [sweep.max_rate]'s benchmarks: the frontier's rate points
        ids = v.max_rate.get("kept")
        if isinstance(ids, list):
            counted.update(str(x) for x in ids if x)
    return counted


def kept_book(queue: SweepQueue, profile: Profile | None) -> tuple[RunBook, int, list[str]]:
    """The run book of the queue's counted benchmarks from every session (the decisions' set), how
    many of those the file held, and what could not be read (said by the caller)."""
    book = runbook_for(profile)
    counted = counted_ids(queue)
    problems: list[str] = []
    if queue.path is None or not counted:
        return book, 0, problems
    path = kept_path(queue.path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_KEPT_BYTES + 1)
    except FileNotFoundError:
        return book, 0, [f"{path}: missing: the frontier holds only this session's runs"]
    except OSError as exc:
        return book, 0, [f"cannot read {path}: {exc}"]
    if len(raw) > MAX_KEPT_BYTES:
        problems.append(f"{path}: over {MAX_KEPT_BYTES // 2**20} MiB, the rest not read")
    launched: set[int] = set()
    found, bad, bench = set(), 0, 0
    for line in raw[:MAX_KEPT_BYTES].splitlines():
        got = _entry(line, queue.created)
        if got is None:
            bad += 1
            continue
        if not got:
            continue  # an earlier sweep's line at the same path
        rid, variant, (launch, started, result) = got
        if rid not in counted or rid in found:
            continue
        found.add(rid)
        bench += 1
        n = variant + 1  # one launch per variant: a relaunch of it is the same config
        if n not in launched:
            launched.add(n)
            book.apply(_with(launch, launch=n))
        book.apply(_with(started, launch=n, bench=bench))
        book.apply(_with(result, launch=n, bench=bench))
    if bad:
        problems.append(f"{path}: {bad} damaged line(s) skipped")
    return book, len(found), problems


class SweepBook:
    """The book the TUI's frontier view (``v``) folds: the queue's kept runs, every session's, where it
    counted any (the set its decisions and ``sweep``'s report rank, so after a resume the view's points
    are the report's frontier), else the session's own run book (the report's fallback too). The view
    asks twice a second: the file is read again only when the queue's counted runs change."""

    def __init__(self) -> None:
        self._key: tuple[str, float, frozenset[str]] | None = None
        self._kept: RunBook | None = None

    def book(
        self, queue: SweepQueue | None, profile: Profile | None, session: RunBook
    ) -> tuple[RunBook, list[str]]:
        """(the book to fold, what could not be read: returned once, when the file was read)."""
        ids = counted_ids(queue) if queue is not None and queue.path is not None else set()
        if queue is None or queue.path is None or not ids:
            return session, []
        key = (str(queue.path), queue.created, frozenset(ids))
        if key != self._key:
            book, kept, problems = kept_book(queue, profile)
            self._key, self._kept = key, book if kept else None
        else:
            problems = []
        return (self._kept if self._kept is not None else session), problems


def _with(event: Event, **changes: Any) -> Event:
    d = event.to_dict()
    d.update(changes)
    return Event.from_dict(d)


def _entry(
    line: bytes, created: float
) -> tuple[str, int, tuple[LaunchStarted, BenchmarkStarted, BenchmarkResult]] | tuple[()] | None:
    """One line: (id, variant, its three events); () for another sweep's line; None when damaged."""
    try:
        d = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(d, dict):
        return None
    if d.get("created") != created:
        return ()
    rid, variant, evs = d.get("id"), d.get("variant"), d.get("events")
    if not isinstance(rid, str) or type(variant) is not int or variant < 0 or not isinstance(evs, list):
        return None
    kinds = ("launch_started", "bench_started", "bench_result")
    if len(evs) != 3:
        return None
    out = []
    for want, e in zip(kinds, evs, strict=True):
        if not isinstance(e, dict) or e.get("type") != want:
            return None
        try:
            if check_event_dict(e) is not None:
                return None
            out.append(Event.from_dict(e))
        except (KeyError, TypeError, ValueError):
            return None
    launch, started, result = out
    assert isinstance(launch, LaunchStarted) and isinstance(started, BenchmarkStarted)
    assert isinstance(result, BenchmarkResult)
    return rid, variant, (launch, started, result)
