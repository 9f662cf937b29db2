"""Indexed, streaming access to a recording: open a million-event session in a second, seek anywhere.

``read_session`` decodes every event into memory, which is right for exports and small files but
takes tens of seconds and gigabytes for a long recording. :class:`ReplaySource` never holds the file:

* **One streaming pass on open** finds the *seek points* (every ``LogCodec.SEEK_POINT`` events the
  recorder writes a keyframe marked ``"@":1`` after which nothing depends on earlier lines) and the
  lines of the events that make the timeline (launches, config changes, ready, failures, exits,
  benchmark results) and the state a seek must rebuild (phases, benchmark starts). The pass is a
  byte scan in C (``re``/``bytes.count``: :mod:`eagletui.session.seekpoints`); only the seek-point lines and the timeline events are
  parsed. The index is a list of ``(byte offset, line number, seconds from start)``: about 40 bytes
  per thousand events.
* **Reading** decodes one block (seek point to seek point) at a time, through the same
  :class:`~eagletui.session.format.LineDecoder` as ``read_session``, with a small LRU of decoded
  blocks, so seeking is a bisect plus at most a few thousand line decodes.
* **Files without seek points** (format version 1, the first version-2 files, hand-made files) get
  the same index from a slower pass that decodes every line once and keeps a snapshot of the codec
  state every 1,024 lines; everything else works the same.
* **Gzip**: decompressed once, through the same bounded reader as ``read_session`` (size and
  ratio limits against bombs), into a private temp file (0600 in a 0700 dir, removed on
  :meth:`ReplaySource.close`) that is then indexed like a plain file. Chosen over zlib seek points
  (saving the 32 KiB window every N events) because it is simple, exactly as fast to seek as a plain
  file, and recordings are ~10x compressible, so the temp file is the size a plain recording would be.

Times are seconds from the first event, stepping on the monotonic clock (the wall clock where the
monotonic one goes backwards), as in :func:`eagletui.session.replay.relative_times` without squeezing.
From one seek point to the next the step is measured between the two seek points, which is the same
sum unless the monotonic clock went backwards in between (events of another process): then the
timeline there follows the seek points' clocks.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eagletui.core.events import (
    Event,
    LaunchStarted,
    Notice,
    ProcessExited,
    ServerFailed,
    ServerReady,
    ServerStopped,
    TaskFailed,
)
from eagletui.core.host.page_cache import cache_state
from eagletui.core.phases.failures import exit_is_failure
from eagletui.core.phases.history import history_key
from eagletui.core.runs.book import RunBook
from eagletui.core.state.screen import SessionState
from eagletui.session.codec import LogCodec
from eagletui.session.decode import LineDecoder
from eagletui.session.format import (
    _GZIP_MAGIC,
    MAX_DECOMPRESSED,
    MAX_LINE,
    MAX_WARNINGS,
    SessionError,
    _chunks,
    _parse_header,
    has_offsets,
    self_contained,
)
from eagletui.session.seekpoints import _Block, find_seek_points
from eagletui.session.timeline import (
    CONTEXT_TYPES,
    TIMELINE_TYPES,
    Mark,
    Position,
    Summary,
    _label,
    _model_of,
    _step,
)

_SCAN_CHUNK = 8 * 1024**2
#: Decoded events kept for back-and-forth seeking, in whole blocks (SEEK_POINT events each, 1024 in
#: files written before issue 33).
_CACHE_EVENTS = 12 * 1024
#: The widest spacing of seek points a recorder ever wrote (1024 until issue 33, 256 since): a file
#: whose seek points are further apart than twice that is indexed by the full pass.
_WIDEST_SEEK_POINTS = 1024
#: Codec snapshots of the full pass (files without seek points), every this many lines.
_SNAPSHOT_LINES = 1024
#: Events before a seek target that are re-fed besides the context events (charts keep 2000 points).
SEEK_WINDOW = 2000


def _note(problem: str, kind: str, clock: tuple[float, float] | None) -> Event:
    """What a replay plays where a line was skipped: the reason, as a warning in the UI; for a
    benchmark's result, the benchmark's end (it failed: nothing else would ever end it)."""
    mono, wall = clock if clock is not None else (0.0, 0.0)
    if kind == "bench_result":
        return TaskFailed(task="bench", message=problem, mono=mono, wall=wall)
    return Notice(level="warning", source="replay", message=problem, mono=mono, wall=wall)


class ReplaySource:
    """A recording opened for indexed, streaming reading. Use :meth:`open`; close it (or use ``with``)."""

    def __init__(self, path: Path, plain: Path, tmpdir: str | None, warnings: list[str]):
        self.path = path
        self._plain = plain
        self._tmpdir = tmpdir
        self.warnings = warnings
        self._warned_lines: set[int] = set()
        self._noted: set[int] = set()
        self._fh = open(plain, "rb")
        self.header: dict[str, Any] = {}
        self._blocks: list[_Block] = []
        self._block_t: list[float] = []
        self._block_line: list[int] = []
        self._end = 0  # byte offset where reading stops (file end or the size bound)
        self.events_count = 0  # event lines (valid or not)
        self.context: list[tuple[int, float, Event]] = []  # (line, t, event) of CONTEXT_TYPES
        self.marks: list[Mark] = []
        self.duration = 0.0
        self._cache: OrderedDict[int, list[tuple[int, float, Event]]] = OrderedDict()
        #: (block, first line not decoded, events before it) of the block a seek stopped in
        self._partial: tuple[int, int, list[tuple[int, float, Event]]] | None = None

    # -- opening ----------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, *, max_bytes: int = MAX_DECOMPRESSED) -> ReplaySource:
        """Index ``path`` in one streaming pass. Raises :class:`SessionError` when it is not a session."""
        p = Path(path).expanduser()
        warnings: list[str] = []
        tmpdir = None
        plain = p
        try:
            with open(p, "rb") as fh:
                gz = fh.read(2) == _GZIP_MAGIC
        except FileNotFoundError:
            raise SessionError(p, "no such file") from None
        except IsADirectoryError:
            raise SessionError(p, "is a directory, not a session file") from None
        except OSError as exc:
            raise SessionError(p, f"cannot read: {exc.strerror or exc}") from None
        if gz:
            tmpdir = tempfile.mkdtemp(prefix="eagletui-replay-")  # 0700
            plain = Path(tmpdir) / "session.jsonl"
            try:
                fd = os.open(plain, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    for chunk in _chunks(p, warnings, max_bytes):
                        out.write(chunk)
            except BaseException:
                shutil.rmtree(tmpdir, ignore_errors=True)
                raise
        src = cls(p, plain, tmpdir, warnings)
        try:
            src._index(max_bytes)
        except BaseException:
            src.close()
            raise
        return src

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._fh.close()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
        self._cache.clear()
        self._partial = None

    def __enter__(self) -> ReplaySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def damaged(self) -> int:
        """Lines skipped so far (damaged, invalid, unknown types) in what has been read."""
        return len(self._warned_lines)

    def _warn(self, line: int, msg: str) -> bool:
        """Note a skipped line once; True while it is among the first :data:`MAX_WARNINGS` (those
        are also played, as notes where they were: a file of bad lines does not flood the screen)."""
        if line in self._warned_lines:
            return line in self._noted
        self._warned_lines.add(line)
        if len(self._warned_lines) <= MAX_WARNINGS:
            self.warnings.append(msg)
            self._noted.add(line)
            return True
        return False

    def _index(self, max_bytes: int) -> None:
        fh = self._fh
        first = fh.readline(MAX_LINE + 1)
        while first and not first.strip():
            first = fh.readline(MAX_LINE + 1)
        if not first.strip():
            raise SessionError(self.path, "empty file, not a session")
        self.header = _parse_header(first.decode("utf-8", errors="replace"), self.path)
        from eagletui.session.format import FORMAT_VERSION

        if self.header["version"] > FORMAT_VERSION:
            self.warnings.append(
                f"session format version {self.header['version']} is newer than this eagletui "
                f"understands ({FORMAT_VERSION}); loading what it can"
            )
        start = fh.tell()
        size = os.fstat(fh.fileno()).st_size
        self._end = min(size, max_bytes)
        if size > max_bytes:
            self.warnings.append(f"file larger than {max_bytes} bytes: stopped reading there")
        if not (self_contained(self.header) and self._scan(start)):
            self._blocks, self.context = [], []
            self._cache.clear()
            self._full_pass(start)
        self._block_t = [b.t for b in self._blocks]
        self._block_line = [b.line for b in self._blocks]
        for line, t, ev in self.context:
            kind = TIMELINE_TYPES.get(ev.type)
            if kind is not None:
                launch = getattr(ev, "launch", 0)
                self.marks.append(
                    Mark(kind, t, line, launch if isinstance(launch, int) else 0, _label(ev), ev)
                )
        if self._blocks:
            last = self._decode_block(len(self._blocks) - 1)
            if last:
                self.duration = last[-1][1]
            elif len(self._blocks) > 1:
                self.duration = self._blocks[-1].t

    def _lines_at(self, offset: int, line: int) -> Iterator[tuple[int, int, bytes, bool]]:
        """``(offset, line number, bytes, complete)`` from ``offset`` on; over-long lines reported
        and skipped without being held; blank lines counted, not yielded."""
        fh = self._fh
        fh.seek(offset)
        pos = offset
        while pos < self._end:
            raw = fh.readline(min(MAX_LINE + 1, self._end - pos))
            if not raw:
                return
            start = pos
            pos += len(raw)
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                self._warn(line, f"line {line + 2}: longer than {MAX_LINE} bytes, ignored")
                while raw and not raw.endswith(b"\n") and pos < self._end:
                    raw = fh.readline(min(_SCAN_CHUNK, self._end - pos))
                    pos += len(raw)
                line += 1
                continue
            complete = raw.endswith(b"\n")
            if raw.strip():
                yield start, line, raw, complete
            line += 1

    def _scan(self, start: int) -> bool:
        """The fast pass over a self-contained file: seek points and context lines by byte search.
        False when the seek points are too far apart to seek with (a file written whole by
        ``write_session``, or edited): the caller then indexes it with the full pass."""
        self._blocks, context_lines, self.events_count = find_seek_points(
            self._fh, start, self._end, chunk_size=_SCAN_CHUNK, max_line=MAX_LINE
        )
        starts = [0, *(b.line for b in self._blocks), self.events_count]
        if max(b - a for a, b in zip(starts, starts[1:], strict=False)) > 2 * _WIDEST_SEEK_POINTS:
            return False
        if not self._blocks or self._blocks[0].line != 0:
            # The first lines are not a seek point (damaged, or hand-made): read them from the top.
            self._blocks.insert(0, _Block(start, 0, 0.0, None, None))
            first = self._decode_block(0)
            if first and len(self._blocks) > 1:
                shift = first[-1][1] - 0.0  # later seek points were timed from the first of them
                base = self._blocks[1]
                for b in self._blocks[1:]:
                    b.t += shift + _step((first[-1][2].mono, first[-1][2].wall), *(base.clock or (0, 0)))
                self._cache.clear()
        self._decode_context(context_lines)
        return True

    def _decode_context(self, context_lines: list[tuple[int, int]]) -> None:
        """The context events of ``context_lines``, in ``self.context``."""
        # Decode the context lines, a block at a time, only as far as the last one needed.
        by_block: dict[int, set[int]] = {}
        block_lines = [b.line for b in self._blocks]
        for _off, ln in context_lines:
            by_block.setdefault(bisect.bisect_right(block_lines, ln) - 1, set()).add(ln)
        for k in sorted(by_block):
            want = by_block[k]
            upto = max(want)
            for ln, tt, ev in self._iter_block(k, stop_line=upto + 1):
                if ln in want and ev.type in CONTEXT_TYPES:
                    self.context.append((ln, tt, ev))

    def _full_pass(self, start: int) -> None:
        """The slow pass for files without seek points: decode every line once, keeping a snapshot of
        the codec every :data:`_SNAPSHOT_LINES` lines so later reads can start there."""
        codec = LogCodec(self_contained=self_contained(self.header), offsets=has_offsets(self.header))
        decoder = LineDecoder(codec)
        prev: tuple[float, float] | None = None
        t = 0.0
        n = 0
        line = 0
        for off, line, raw, complete in self._lines_at(start, 0):
            if n % _SNAPSHOT_LINES == 0:
                snap = copy.copy(codec)
                snap._bases = dict(codec._bases)
                self._blocks.append(_Block(off, line, t, prev, snap))
            n += 1
            ev, problem = decoder.decode(line + 2, raw, complete)
            if ev is None:
                if problem is not None:
                    self._warn(line, problem)
                continue
            t += _step(prev, ev.mono, ev.wall)
            prev = (ev.mono, ev.wall)
            if ev.type in CONTEXT_TYPES:
                self.context.append((line, t, ev))
        self.events_count = line + 1 if n else 0

    # -- reading ----------------------------------------------------------------------------------

    def _iter_block(self, k: int, stop_line: int | None = None) -> Iterator[tuple[int, float, Event]]:
        b = self._blocks[k]
        nxt = self._blocks[k + 1].line if k + 1 < len(self._blocks) else None
        stop = nxt if stop_line is None else (stop_line if nxt is None else min(nxt, stop_line))
        codec = (
            LogCodec(self_contained=True, offsets=has_offsets(self.header))
            if b.codec is None
            else copy.copy(b.codec)
        )
        if b.codec is not None:
            codec._bases = dict(b.codec._bases)
        decoder = LineDecoder(codec)
        prev, t = b.clock, b.t
        for _off, line, raw, complete in self._lines_at(b.offset, b.line):
            if stop is not None and line >= stop:
                return
            ev, problem = decoder.decode(line + 2, raw, complete)  # +2: 1-based, after the header
            if ev is None:
                if problem is not None and self._warn(line, problem):
                    yield line, t, _note(problem, decoder.skipped_type, prev)
                continue
            t += _step(prev, ev.mono, ev.wall)
            prev = (ev.mono, ev.wall)
            yield line, t, ev

    def _decode_block(self, k: int) -> list[tuple[int, float, Event]]:
        got = self._cache.get(k)
        if got is not None:
            self._cache.move_to_end(k)
            return got
        got = list(self._iter_block(k))
        self._cache_put(k, got)
        return got

    def _cache_put(self, k: int, got: list[tuple[int, float, Event]]) -> None:
        """Keep block ``k`` decoded, the least recently used going first past :data:`_CACHE_EVENTS`."""
        self._cache[k] = got
        self._cache.move_to_end(k)
        while len(self._cache) > 1 and sum(len(b) for b in self._cache.values()) > _CACHE_EVENTS:
            self._cache.popitem(last=False)

    def _block_of_line(self, line: int) -> int:
        return max(0, bisect.bisect_right(self._block_line, line) - 1)

    def events_from(self, position: Position | int = 0) -> Iterator[tuple[int, float, Event]]:
        """``(line, t, event)`` from a position (or line number) to the end, a block at a time."""
        line = position.line if isinstance(position, Position) else int(position)
        if not self._blocks:
            return
        k = self._block_of_line(line)
        while k < len(self._blocks):
            for item in self._decode_block(k):
                if item[0] >= line:
                    yield item
            k += 1

    def first_events(self, n: int = SEEK_WINDOW) -> list[Event]:
        """The first ``n`` events: what the first frame shows."""
        out: list[Event] = []
        for _line, _t, ev in self.events_from(0):
            out.append(ev)
            if len(out) >= n:
                break
        return out

    def events_before(self, position: Position, window: int = SEEK_WINDOW) -> list[tuple[int, float, Event]]:
        """The last ``window`` events before ``position``, oldest first."""
        if not self._blocks or position.line <= 0:
            return []
        k = self._block_of_line(position.line - 1)
        out: list[list[tuple[int, float, Event]]] = []
        have = 0
        while k >= 0 and have < window:
            partial = self._partial
            if (
                k not in self._cache
                and partial is not None
                and partial[0] == k
                and partial[1] >= position.line
            ):
                items = [x for x in partial[2] if x[0] < position.line]
            else:
                items = [x for x in self._decode_block(k) if x[0] < position.line]
            out.append(items)
            have += len(items)
            k -= 1
        flat = [x for items in reversed(out) for x in items]
        return flat[-window:] if window else []

    def catch_up(self, position: Position, window: int = SEEK_WINDOW) -> list[Event]:
        """What to fold into a fresh state to stand at ``position``: every context event before it
        (launches, config, phases, benchmarks, failures) and the last ``window`` events, in order."""
        recent = self.events_before(position, window)
        first_recent = recent[0][0] if recent else position.line
        older = [x for x in self.context if x[0] < first_recent]
        return [ev for _l, _t, ev in older] + [ev for _l, _t, ev in recent]

    # -- seeking ----------------------------------------------------------------------------------

    def at_time(self, t: float) -> Position:
        """The position after every event at or before ``t`` seconds (clamped to the recording)."""
        t = min(max(float(t), 0.0), self.duration)
        if not self._blocks:
            return Position(0, 0.0)
        k = max(0, bisect.bisect_right(self._block_t, t) - 1)
        while k < len(self._blocks):
            if k in self._cache:
                for line, tt, _ev in self._decode_block(k):
                    if tt > t + 1e-9:  # (a time summed another way may differ in the last bits)
                        return Position(line, t)
            else:  # decode only up to the target (a seek's catch-up reuses what was decoded)
                got: list[tuple[int, float, Event]] = []
                for item in self._iter_block(k):
                    if item[1] > t + 1e-9:
                        self._partial = (k, item[0], got)
                        return Position(item[0], t)
                    got.append(item)
                self._cache_put(k, got)
            k += 1
        return Position(self.events_count, t)

    def seek(
        self, *, time: float | None = None, launch: int | None = None, mark: Mark | None = None
    ) -> Position:
        """The position for exactly one of: ``time`` seconds from the start, just after launch
        ``launch`` started (``KeyError`` names the launches there are), or just after ``mark``."""
        if sum(x is not None for x in (time, launch, mark)) != 1:
            raise ValueError("seek needs exactly one of time, launch or mark")
        if mark is not None:
            return self.after_mark(mark)
        if launch is not None:
            return self.after_mark(self.launch_mark(launch))
        return self.at_time(float(time or 0.0))

    def after_mark(self, mark: Mark) -> Position:
        """Just after a mark's event (the mark itself is part of what the screen shows)."""
        return Position(mark.line + 1, mark.t)

    def launch_mark(self, launch: int) -> Mark:
        """The mark of launch ``launch``; ``KeyError`` says which launches there are."""
        for m in self.marks:
            if m.kind == "launch" and m.launch == launch:
                return m
        have = ", ".join(str(m.launch) for m in self.marks if m.kind == "launch") or "none"
        raise KeyError(f"no launch {launch} in this recording (launches: {have})")

    @property
    def launches(self) -> list[int]:
        return [m.launch for m in self.marks if m.kind == "launch"]

    # -- summary ----------------------------------------------------------------------------------

    def summary(self) -> Summary:
        h = self.header
        s = Summary(
            created=str(h.get("created", "")),
            target=str(h.get("target", "")),
            profile=str(h.get("profile", "")),
            duration=self.duration,
            events=self.events_count,
        )
        failed: set[int] = set()
        ready: set[int] = set()
        stopped: set[int] = set()
        # launches that failed, as the run book judges them: a failure line, or a death no line
        # explained (a recording made before the live triage has only its ProcessExited)
        for _line, _t, ev in self.context:
            if isinstance(ev, ServerFailed):
                failed.add(ev.launch)
            elif isinstance(ev, ServerReady):
                ready.add(ev.launch)
            elif isinstance(ev, ServerStopped):
                stopped.add(ev.launch)
            elif isinstance(ev, ProcessExited) and ev.launch not in stopped | failed:
                if exit_is_failure(ev.code, ev.signal, ready=ev.launch in ready):
                    failed.add(ev.launch)
        s.failures = len(failed)
        for m in self.marks:
            ev = m.event
            if isinstance(ev, LaunchStarted):
                s.launches += 1
                s.model = _model_of(ev.config) or s.model
        # the runs table's own fold over the context events: the same baseline, validity and pairing
        book = RunBook()
        for _line, _t, ev in self.context:
            book.apply(ev)
        best: tuple[float, int] | None = None
        accepts: list[float] = []
        for n, run in sorted(book.runs.items()):
            head = run.headline()
            if head is None:
                if run.invalid_reasons:
                    s.invalid.append({"launch": n, "reason": run.invalid_reasons[0]})
                continue
            tok = head.metric("tok_s").mean
            if tok is not None and (best is None or tok > best[0]):
                best = (tok, n)
            acc = head.metric("accept_len").mean
            if acc is not None:
                accepts.append(acc)
            e, ref = book.economics(n), book.reference(n)
            if ref is not None and not ref.like_for_like:  # shown with what differs, never judged
                s.spec_pairs.append(
                    {
                        "spec": n,
                        "no_spec": ref.label,
                        "speedup": None,
                        "concurrency": head.concurrency,
                        "like_for_like": False,
                        "unjudged": ref.unjudged(),
                        "differs_in": list(ref.names()),
                    }
                )
            elif e is not None and ref is not None:
                s.spec_pairs.append(
                    {
                        "spec": n,
                        "no_spec": ref.label,
                        "speedup": round(e.speedup, 4),
                        "concurrency": e.concurrency,
                        "like_for_like": ref.like_for_like,
                    }
                )
        if best is not None:
            s.best_tok_s, s.best_launch = best
        s.best_accept = max(accepts) if accepts else None
        base = book.base_run()
        if base is not None:
            s.baseline_tok_s, s.baseline_launch = base.metric("tok_s").mean, base.launch
        s.startup = self._startup()
        return s

    def _startup(self) -> list[dict[str, Any]]:
        """Each ready launch's startup, from the screen's own fold of the context events (its phases and
        launch → ready) and the preflight's page cache before it."""
        st = SessionState()
        for _line, _t, ev in self.context:
            st.apply(ev)
        out: list[dict[str, Any]] = []
        for n, la in sorted(st.launches.items()):
            phases = la.phase_durations()
            if la.ready_at is None or not phases or not la.config:
                continue
            obs = st.diagnoser.launches.get(n)
            try:
                key = history_key(la.config)
            except (TypeError, ValueError):
                continue
            out.append(
                {
                    "launch": n,
                    "signature": key,
                    "phases": {p: round(v, 3) for p, v in phases.items()},
                    "total": round(la.ready_after, 3) if la.ready_after is not None else None,
                    "cache": cache_state(obs.host.get("checkpoint")) if obs is not None else None,
                }
            )
        return out
