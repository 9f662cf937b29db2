"""``eagletui parse LOG… [--json]``: offline interpretation of SGLang server logs.

Streams each file in large blocks through :meth:`LogInterpreter.feed_bulk` (LogLine events off,
serving lines matched in bulk) and folds the rest with :class:`Summarizer`, so memory stays flat on
multi-GB logs. No Textual import: this runs on hosts
without a terminal UI stack.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Callable
from typing import IO, Any

from eagletui.core.log_interpreter import LogInterpreter
from eagletui.core.summary import Summarizer

#: Read size. Serving lines are matched a block at a time (LogInterpreter.feed_bulk), so large blocks
#: keep the per-call overhead negligible; memory stays around a few blocks.
CHUNK = 8 << 20


def parse_stream(fh: IO[bytes], sink: Callable[[list[Any]], None] | None = None) -> dict[str, Any]:
    """Summary of one stream. ``sink`` (benchmarks, tests) sees every batch of items folded."""
    interp = LogInterpreter(launch=1, emit_lines=False)
    summ = Summarizer()
    buf = bytearray(CHUNK)  # reused: feed_bulk_bytes keeps no reference to it
    readinto = getattr(fh, "readinto", None)
    while True:
        if readinto is not None:
            n = readinto(buf)
            chunk: bytes | bytearray = buf if n == CHUNK else buf[:n]
        else:
            chunk = fh.read(CHUNK)
            n = len(chunk)
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
    return result


def parse_path(path: str) -> dict[str, Any]:
    """Summary of one file (``-`` = stdin, ``.gz`` transparently). Raises OSError if unreadable."""
    if path == "-":
        return parse_stream(sys.stdin.buffer)
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            return parse_stream(fh)  # type: ignore[arg-type]
    with open(path, "rb") as fh:
        return parse_stream(fh)


def _fmt_s(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f}s"


def render(path: str, s: dict[str, Any]) -> str:
    lines = [f"== {path}"]
    launch = s.get("launch")
    if launch:
        a = launch["args"]
        keys = (
            "model_path",
            "tp_size",
            "speculative_algorithm",
            "speculative_draft_model_path",
            "speculative_num_steps",
            "speculative_eagle_topk",
            "speculative_num_draft_tokens",
            "mem_fraction_static",
            "cuda_graph_max_bs",
            "max_running_requests",
            "attention_backend",
        )
        cfg = ", ".join(f"{k}={a[k]}" for k in keys if a.get(k) is not None)
        lines.append(f"launch: sglang {launch['version'] or '?'}  {cfg}")
    if s.get("launches", 0) > 1:
        lines.append(f"launches in file: {s['launches']} (showing the last)")
    if s["phases"]:
        lines.append(f"{'phase':<15} {'start':<24} {'end':<24} {'dur':>8} {'spread':>8}  progress")
        for p in s["phases"]:
            prog = f"{p['done']}/{p['total']}" if p.get("total") else ""
            spread = p.get("spread")
            sp = "" if spread is None else f"{spread:.1f}s"
            if p.get("slowest_rank") is not None and spread:
                sp += f" (TP{p['slowest_rank']})"
            lines.append(
                f"{p['name']:<15} {p['start'] or '—':<24} {p['end'] or '—':<24} "
                f"{_fmt_s(p['seconds']):>8} {sp:>8}  {prog}"
            )
    lines.append(f"state: {s['state']}  (last phase: {s['phase'] or '—'})")
    f = s.get("failure")
    if f:
        lines.append(f"failure: {f['kind']}: {f['message']}")
        if f.get("line") and f["line"] != f["message"]:
            lines.append(f"  key line: {f['line'][:300]}")
        if f.get("hint"):
            lines.append(f"  hint: {f['hint']}")
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
        lines.append(
            f"  last: {last['gen_throughput']:.1f} tok/s, accept len {last['accept_len']}, "
            f"running {last['running_req']}, queued {last['queue_req']}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="eagletui parse", description="Summarize SGLang server logs.")
    ap.add_argument("logs", nargs="+", metavar="LOG", help="log file, .gz file, or - for stdin")
    ap.add_argument("--json", action="store_true", help="machine-readable output (docs/parse-json.md)")
    ns = ap.parse_args(argv)
    results: list[dict[str, Any]] = []
    for path in ns.logs:
        try:
            s = parse_path(path)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            print(f"eagletui parse: cannot read {path}: {exc}", file=sys.stderr)
            return 2
        s["file"] = path
        results.append(s)
    if ns.json:
        out: Any = results[0] if len(results) == 1 else results
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print("\n\n".join(render(r["file"], r) for r in results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
