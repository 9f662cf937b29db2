"""``eagletui parse LOG… [--json] [--format NAME]``: offline interpretation of server logs.

Streams each file in large blocks through :meth:`LogInterpreter.feed_bulk` (LogLine events off,
serving lines matched in bulk) and folds the rest with :class:`Summarizer`, so memory stays flat on
multi-GB logs. No Textual import: this runs on hosts
without a terminal UI stack.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import zlib
from collections.abc import Callable
from typing import IO, Any

from eagletui.commands._args import ArgumentParser
from eagletui.commands.host_files import read_host_file
from eagletui.core.logs.registry import formats, get_format
from eagletui.core.logs.seam import LogFormat
from eagletui.core.logs.sniff import records_owner
from eagletui.core.phases.interpreter import LogInterpreter
from eagletui.core.profile.redact import Redactor
from eagletui.core.state.summary import Summarizer
from eagletui.core.textsafe import inert, json_inert

#: Read size. Serving lines are matched a block at a time (LogInterpreter.feed_bulk), so large blocks
#: keep the per-call overhead negligible; memory stays around a few blocks.
CHUNK = 8 << 20
#: The start of a file read to see whose records it is made of (no --format given).
SNIFF_BYTES = 256 << 10
#: A compressed log may expand to at most this many bytes (``--max-decompressed``)...
MAX_DECOMPRESSED = 32 << 30
#: ...and, once past BOMB_FLOOR bytes, to at most this many times its compressed size: text logs
#: compress 5–50×, gzip's ceiling is ~1030× (a file of newlines), so 500× is a decompression bomb.
MAX_RATIO = 500
BOMB_FLOOR = 64 << 20
_STEP = 64 << 10


class Truncated(Exception):
    """Reading stopped early; ``reason`` says why. What was read before is still summarised."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _BoundedGzip:
    """Stream a gzip file (never whole), stopping at the size and ratio bounds and on corrupt data."""

    def __init__(self, path: str, max_bytes: int, max_ratio: float) -> None:
        self._raw = open(path, "rb")  # closed in close()
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="rb")
        self.max_bytes, self.max_ratio = max_bytes, max_ratio
        self.out = 0
        self._error: str | None = None

    def readinto(self, buf: bytearray) -> int:
        if self._error is not None:
            raise Truncated(self._error)
        room = self.max_bytes - self.out
        if room <= 0:
            raise Truncated(
                f"stopped after {_size(self.out)} of decompressed data (limit {_size(self.max_bytes)}, "
                "--max-decompressed)"
            )
        view = memoryview(buf)[: min(len(buf), room)]
        n = 0
        while n < len(view):  # in steps, so the data before a corrupt spot is kept
            try:
                got = self._gz.readinto(view[n : n + _STEP])
            except (zlib.error, EOFError, gzip.BadGzipFile) as exc:
                what = "ends early (truncated)" if isinstance(exc, EOFError) else f"is corrupt ({exc})"
                self._error = f"the gzip data {what} after {_size(self.out + n)}"
                if n:
                    break
                raise Truncated(self._error) from None
            if not got:
                break
            n += got
        self.out += n
        if self.out > BOMB_FLOOR:
            packed = max(1, self._raw.tell())
            if self.out > self.max_ratio * packed:
                raise Truncated(
                    f"stopped: {_size(packed)} of gzip expanded to {_size(self.out)} "
                    f"(more than {self.max_ratio:g}x; a decompression bomb, not a log?)"
                )
        return n

    def close(self) -> None:
        self._gz.close()
        self._raw.close()


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def parse_stream(
    fh: IO[bytes] | Any, sink: Callable[[list[Any]], None] | None = None, fmt: LogFormat | None = None
) -> dict[str, Any]:
    """Summary of one stream. ``sink`` (benchmarks, tests) sees every batch of items folded.

    A :class:`Truncated` raised by the stream ends the reading: the summary covers what came before
    and carries the reason in ``truncated``.
    """
    interp = LogInterpreter(launch=1, emit_lines=False, fmt=fmt)
    summ = Summarizer()
    buf = bytearray(CHUNK)  # reused: feed_bulk_bytes keeps no reference to it
    readinto = getattr(fh, "readinto", None)
    truncated: str | None = None
    while True:
        try:
            if readinto is not None:
                n = readinto(buf)
                chunk: bytes | bytearray = buf if n == CHUNK else buf[:n]
            else:
                chunk = fh.read(CHUNK)
                n = len(chunk)
        except Truncated as exc:
            truncated = exc.reason
            break
        if not n:
            break
        items = interp.feed_bulk_bytes(chunk)
        if sink is not None:
            sink(items)
        summ.add(items)
    items = interp.flush()
    if sink is not None:
        sink(items)
    summ.add(items)
    summ.set_version(interp.version)
    result = summ.result()
    result["url"] = interp.state.url or None
    if truncated is not None:
        result["truncated"] = truncated
    return result


def parse_path(
    path: str, max_bytes: int = MAX_DECOMPRESSED, max_ratio: float = MAX_RATIO, fmt: LogFormat | None = None
) -> dict[str, Any]:
    """Summary of one file (``-`` = stdin, ``.gz`` transparently, within the decompression bounds).

    Raises OSError if the file cannot be opened, including a closed stdin.
    """
    if path == "-":
        stdin = sys.stdin
        if stdin is None or getattr(stdin, "buffer", None) is None:
            raise OSError("standard input is closed")
        try:
            stdin.fileno()
        except (OSError, ValueError) as exc:
            raise OSError("standard input is closed") from exc
        return parse_stream(stdin.buffer, fmt=fmt)
    if path.endswith(".gz"):
        fh = _BoundedGzip(path, max_bytes, max_ratio)
        try:
            return parse_stream(fh, fmt=fmt)
        finally:
            fh.close()
    with open(path, "rb") as f:
        return parse_stream(f, fmt=fmt)


def _fmt_s(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f}s"


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    """Columns as wide as their widest cell (numbers right-aligned), two spaces apart."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return out


def render(path: str, s: dict[str, Any]) -> str:
    """The text summary. Everything that came from the log goes through :func:`inert`."""
    lines = [f"== {inert(path)}"]
    launch = s.get("launch")
    if launch:
        a = launch["args"]
        server = launch.get("server") or ""
        keys = _summary_keys(server)
        cfg = ", ".join(f"{k}={inert(str(a[k]))}" for k in keys if a.get(k) is not None)
        lines.append(f"launch: {inert(server or '?')} {inert(launch['version'] or '?')}  {cfg}")
    if s.get("launches", 0) > 1:
        lines.append(f"launches in file: {s['launches']} (showing the last)")
    if s.get("url"):
        lines.append(f"url: {inert(s['url'])}")
    if s["phases"]:
        rows = [["phase", "start", "end", "dur", "spread", "slowest", "progress"]]
        for p in s["phases"]:
            spread = p.get("spread")
            slow = p.get("slowest_rank")
            rows.append(
                [
                    p["name"],
                    inert(p["start"] or "—"),
                    inert(p["end"] or "—"),
                    _fmt_s(p["seconds"]),
                    "" if spread is None else f"{spread:.1f}s",
                    f"TP{slow}" if slow is not None and spread else "",
                    f"{p['done']}/{p['total']}" if p.get("total") else "",
                ]
            )
        lines += _table(rows, right={3, 4})
    lines.append(f"state: {s['state']}  (last phase: {s['phase'] or '—'})")
    if s.get("host_file"):
        lines[-1] = "state: no server log here"
        lines.append(f"not a server log: {s['host_file']['kind']} output: {inert(s['host_file']['says'])}")
    f = s.get("failure")
    if f:
        lines.append(f"failure: {f['kind']}: {inert(f['message'])}")
        if f.get("line") and f["line"] != f["message"]:
            lines.append(f"  key line: {inert(f['line'][:300])}")
        if f.get("hint"):
            lines.append(f"  hint: {inert(f['hint'])}")
    d = s["decode"]
    if d["count"]:
        g = d["gen_throughput"]
        lines.append(
            f"decode: {d['count']} lines; gen throughput median {g['median']:.1f} p90 {g['p90']:.1f} "
            f"max {g['max']:.1f} tok/s"
        )
        if d["accept_len"]:
            a = d["accept_len"]
            lines.append(f"  accept len median {a['median']:.2f} p90 {a['p90']:.2f} max {a['max']:.2f}")
        last = d["last"]
        acc = "" if last["accept_len"] is None else f", accept len {last['accept_len']:.2f}"
        lines.append(
            f"  last: {last['gen_throughput']:.1f} tok/s{acc}, running {last['running_req']}, "
            f"queued {last['queue_req']}"
        )
    sp = s.get("spec")
    if sp:
        lines.append(_spec_line(sp))
    for d in s.get("diagnosis") or []:
        mark = "⚠ " if d.get("level") == "warn" else ""
        lines.append(f"why: {mark}{inert(str(d.get('text', '')))}")
        if d.get("evidence"):
            lines.append(f"  from: {inert(str(d['evidence']))}")
        if d.get("hint"):
            lines.append(f"  hint: {inert(str(d['hint']))}")
    if s.get("truncated"):
        lines.append(f"incomplete: {inert(s['truncated'])}")
    return "\n".join(lines)


def _summary_keys(server: str) -> tuple[str, ...]:
    try:
        return get_format(server).summary_keys if server else ()
    except KeyError:
        return ()


def _spec_line(sp: dict[str, Any]) -> str:
    """The server's own speculative-decoding reports in one line (or two)."""
    out = f"spec decoding: {sp['count']} reports"
    acc = sp.get("accept_len")
    last = sp.get("last") or {}
    if acc:
        out += f"; mean acceptance length median {acc['median']:.2f} p90 {acc['p90']:.2f}"
    if last.get("accept_len") is not None:
        out += f" (last {last['accept_len']:.2f})"
    if last.get("accept_rate") is not None:
        out += f"; draft acceptance {100 * last['accept_rate']:.1f}%"
    if sp.get("drafted"):
        out += f"; {sp['accepted']}/{sp['drafted']} drafted tokens accepted"
    pos = last.get("per_position") or []
    if pos:
        shown = " ".join(f"{p:.2f}" for p in pos[:16]) + (" …" if len(pos) > 16 else "")
        out += f"\n  per position (last): {shown}"
    return out


def _other_format(path: str, limit: int, first: dict[str, Any]) -> dict[str, Any]:
    """No --format and the default format recognised nothing: the first other format that does, said
    on stderr (a file no format reads stays the default's "unknown")."""
    for other in formats()[1:]:
        s = parse_path(path, max_bytes=limit, fmt=other)
        if s["state"] != "unknown":
            print(f"eagletui parse: {inert(path)}: read as {other.name} (no --format given)", file=sys.stderr)
            return s
    return first


def _records_format(path: str, limit: int, first: dict[str, Any]) -> dict[str, Any]:
    """No --format and the default format read the file: another format's reading instead where the
    file's lines are that format's records and none is the default's (:mod:`eagletui.core.logs.sniff`),
    said on stderr."""
    fmts = formats()
    buf = bytearray(SNIFF_BYTES)
    try:
        fh: Any = _BoundedGzip(path, limit, MAX_RATIO) if path.endswith(".gz") else open(path, "rb")
        try:
            n = fh.readinto(buf)
        finally:
            fh.close()
    except (OSError, Truncated):
        return first
    other = records_owner(buf[:n].decode("utf-8", "replace").splitlines(), fmts[0], fmts[1:])
    if other is None:
        return first
    print(f"eagletui parse: {inert(path)}: read as {other.name} (no --format given: its lines are {other.name}'s records)", file=sys.stderr)
    return parse_path(path, max_bytes=limit, fmt=other)


def _write(text: str) -> bool:
    """Print to stdout; False if the reader went away (``parse … | head``), without a traceback."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would report the broken pipe again when it flushes stdout at exit: point stdout at
        # /dev/null first (the recipe in the signal module's documentation).
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return False
    return True


def main(argv: list[str]) -> int:
    ap = ArgumentParser(
        prog="eagletui parse", description="Summarize server logs (phases, failures, serving)."
    )
    ap.add_argument("logs", nargs="+", metavar="LOG", help="log file, .gz file, or - for stdin")
    ap.add_argument("--json", action="store_true", help="machine-readable output (docs/parse-json.md)")
    ap.add_argument(
        "--max-decompressed",
        type=int,
        default=MAX_DECOMPRESSED >> 20,
        metavar="MB",
        help=f"stop reading a .gz log after this many MB of decompressed data (default {MAX_DECOMPRESSED >> 20})",
    )
    names = [f.name for f in formats()]
    ap.add_argument(
        "--format",
        choices=names,
        default=None,
        help=f"the server's log format (default: {names[0]}, or the first format that recognises a file {names[0]} does not or whose records the file is made of)",
    )
    ns = ap.parse_args(argv)
    fmt = get_format(ns.format)
    results: list[dict[str, Any]] = []
    status = 0
    for path in ns.logs:
        limit = max(1, ns.max_decompressed) << 20
        try:
            s = parse_path(path, max_bytes=limit, fmt=fmt)
            if ns.format is None and path != "-":
                s = _other_format(path, limit, s) if s["state"] == "unknown" else _records_format(path, limit, s)
            if s["state"] == "unknown":
                host = read_host_file(path)  # nvidia-smi topo -m, NCCL_DEBUG=INFO: what they show
                if host is not None:
                    s["host_file"] = host
        except OSError as exc:
            print(f"eagletui parse: cannot read {inert(path)}: {inert(str(exc))}", file=sys.stderr)
            return 2
        if s.get("truncated"):
            print(f"eagletui parse: {inert(path)}: {inert(s['truncated'])}", file=sys.stderr)
            status = 1
        s["file"] = path
        results.append(s)
    # Summaries get pasted into issues and CI logs: the server-args line may carry --api-key's value
    # (and an error line may echo it). Learn everything first, then scrub every field.
    redactor = Redactor()
    redactor.value(results)
    results = redactor.value(results)
    if ns.json:
        out: Any = results[0] if len(results) == 1 else results
        ok = _write(json_inert(json.dumps(out, indent=2, ensure_ascii=False)))
    else:
        ok = _write("\n\n".join(render(r["file"], r) for r in results))
    return status if ok else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
