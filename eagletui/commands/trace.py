"""``eagletui trace FILE… [--json] [--baseline FILE…]``: where a decode step's GPU time goes.

Reads the Chrome traces SGLang's ``/start_profile`` writes (``{id}-TP-{rank}[-DP-…][-EP-…]-{stage}.trace.json.gz``,
plain or gzip, streamed — real ones reach hundreds of MB) and prints, per rank, the kernel time by
category (communication, gemm, attention, moe, other), per step where the trace marks steps, and the
rank skew. ``--baseline`` takes another run's traces and adds the Δ per category. JSON contract:
docs/trace-json.md. Exit 0 when every file was read, 2 when one could not be.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from eagletui.commands._args import ArgumentParser
from eagletui.commands._ssh import add_ssh_options, ssh_options
from eagletui.profiler import RankSummary, TraceError, report_json, summarize_file
from eagletui.profiler.categories import ORDER

BAR_WIDTH = 40
_GLYPHS = {"communication": "█", "gemm": "▓", "attention": "▒", "moe": "░", "other": "·"}


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="eagletui trace",
        description="Summarise torch-profiler traces (SGLang /start_profile output) by kernel category.",
    )
    p.add_argument(
        "files", nargs="*", metavar="FILE", help="trace files (.trace.json or .trace.json.gz), one per rank"
    )
    p.add_argument(
        "--capture",
        metavar="TARGET",
        default=None,
        help='profile the running server on TARGET ("local" or an SSH target) instead of reading files',
    )
    p.add_argument("--profile", default=None, help="profile TOML of the running server (with --capture)")
    p.add_argument("--steps", type=int, default=5, help="decode steps to profile (with --capture)")
    p.add_argument("--out", default=None, help="where the fetched traces go (default: the data dir)")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the traces")
    add_ssh_options(p)
    p.add_argument(
        "--json", action="store_true", help="print the JSON report (docs/trace-json.md) instead of text"
    )
    p.add_argument(
        "--baseline",
        nargs="+",
        metavar="FILE",
        default=None,
        help="the baseline run's traces: adds Δ per category",
    )
    return p


def _inert(text: str) -> str:
    """Kernel names come from the file: never let one carry a terminal escape sequence."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


def _load(files: list[str]) -> tuple[list[RankSummary], list[str]]:
    ranks: list[RankSummary] = []
    errors: list[str] = []
    for f in files:
        try:
            r = summarize_file(f)
            ranks.append(r)
            if r.skipped:
                print(
                    f"eagletui trace: {_inert(f)}: {r.skipped} event(s) skipped (a ts or dur that is not "
                    "a finite, non-negative number, or nested too deep to read); the rest is summarised",
                    file=sys.stderr,
                )
        except TraceError as exc:
            errors.append(str(exc))
        except OSError as exc:
            errors.append(f"{f}: {exc.strerror or exc}")
    ranks.sort(key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0, r.file))
    return ranks, errors


def mean_categories(ranks: list[RankSummary]) -> dict[str, float]:
    """Per-category kernel ms, averaged over ranks (what one rank's step costs)."""
    if not ranks:
        return {c.label: 0.0 for c in ORDER}
    return {c.label: sum(r.ms(c.label) for r in ranks) / len(ranks) for c in ORDER}


def stacked_bar(cats: dict[str, float], scale_ms: float, width: int = BAR_WIDTH) -> str:
    if scale_ms <= 0:
        return ""
    out = []
    for c in ORDER:
        n = round(cats.get(c.label, 0.0) / scale_ms * width)
        out.append(_GLYPHS[c.label] * n)
    return "".join(out)[:width]


def delta_json(ranks: list[RankSummary], base: list[RankSummary]) -> dict[str, Any]:
    now, was = mean_categories(ranks), mean_categories(base)
    out: dict[str, Any] = {}
    for c in ORDER:
        a, b = now[c.label], was[c.label]
        out[c.label] = {
            "ms": round(a, 4),
            "baseline_ms": round(b, 4),
            "delta_ms": round(a - b, 4),
            "delta_pct": round((a - b) / b * 100.0, 2) if b > 0 else None,
        }
    return out


def render_text(ranks: list[RankSummary], base: list[RankSummary] | None) -> str:
    lines: list[str] = []
    scale = max([r.kernel_ms for r in ranks + (base or [])] or [0.0])
    for r in ranks:
        who = f"TP{r.rank}" if r.rank is not None else "rank ?"
        lines.append(f"{who}  {_inert(r.file)}")
        lines.append(f"  kernel time {r.kernel_ms:10.3f} ms  in {r.kernels} kernels")
        for c in ORDER:
            t = r.categories[c.label]
            lines.append(
                f"  {c.label:<14} {r.ms(c.label):10.3f} ms  {r.share(c.label) * 100:5.1f} %  {t.count:7d} kernels"
            )
        cats = {c.label: r.ms(c.label) for c in ORDER}
        lines.append(f"  [{stacked_bar(cats, scale):<{BAR_WIDTH}}]")
        if r.steps:
            n = len(r.steps)
            mean = sum(s.kernel_ms for s in r.steps) / n
            comm = sum(s.categories["communication"] for s in r.steps) / n
            med = sorted(s.kernel_ms for s in r.steps)[n // 2]
            lines.append(
                f"  {n} steps: mean {mean:.3f} ms of kernels (median {med:.3f}), communication {comm:.3f} ms a step"
            )
        lines.append("")
    rep = report_json(ranks)
    sk = rep["skew"]
    if sk is not None:
        worst = max(sk["ranks"], key=lambda x: x["wait_ms"])
        lines.append(
            f"rank skew: up to {sk['max_wait_ms']:.3f} ms of communication is waiting "
            f"(TP{worst['rank']} waits longest; fastest rank spends {sk['fastest_communication_ms']:.3f} ms)"
        )
    if base:
        lines.append("")
        lines.append("vs baseline (mean over ranks):")
        for cat, d in delta_json(ranks, base).items():
            if d["delta_pct"] is not None:
                pct = f"{d['delta_pct']:+.1f} %"
            else:
                pct = "new" if d["ms"] > 0 else "—"
            lines.append(
                f"  {cat:<14} {d['baseline_ms']:10.3f} → {d['ms']:10.3f} ms  {d['delta_ms']:+9.3f} ms  {pct}"
            )
        lines.append(f"  baseline [{stacked_bar(mean_categories(base), scale):<{BAR_WIDTH}}]")
        lines.append(f"  this run [{stacked_bar(mean_categories(ranks), scale):<{BAR_WIDTH}}]")
    legend = "  ".join(f"{_GLYPHS[c.label]} {c.label}" for c in ORDER)
    lines.append(f"legend: {legend}")
    return "\n".join(lines)


async def capture_running(args: argparse.Namespace) -> list[str]:
    """Profile the newest live eagletui-launched server of ``--profile`` on ``--capture`` and fetch its
    DECODE traces here; returns their local paths. Raises ``CaptureError`` with a message for the user."""
    import tempfile

    from eagletui.config import data_dir
    from eagletui.core.profile import ProfileError, load_profile
    from eagletui.profiler.live import ProfileError as LiveError
    from eagletui.profiler.live import ProfileRequest, capture
    from eagletui.remote.control import ServerControl
    from eagletui.remote.transport import open_transport

    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        raise CaptureError(str(exc)) from None
    try:
        transport = await open_transport(args.capture, ssh_options(args))
    except Exception as exc:
        raise CaptureError(f"cannot reach {args.capture}: {exc}") from None
    try:
        control = ServerControl(transport, runs_dir=profile.runs_dir, python=profile.python)
        live = [r for r in await control.list_runs() if r.alive]
        if not live:
            raise CaptureError(f"no running server of this profile on {args.capture} ({profile.runs_dir})")
        run = live[0]
        tp_value = (run.config or {}).get("tp") or profile.args.get("--tp", profile.args.get("--tp-size", 1))
        try:
            tp = max(1, int(str(tp_value)))
        except ValueError:
            tp = 1
        port = await transport.forward_port(run.port or profile.port)
        out = args.out
        if out is None:
            root = data_dir() / "profiles"
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
            out = tempfile.mkdtemp(prefix=f"{run.run_id}-", dir=root)
        api_key = profile.args.get("--api-key")
        print(f"eagletui trace: profiling run {run.run_id} (pid {run.pid}, tp {tp})", file=sys.stderr)
        paths = await capture(
            transport,
            f"http://127.0.0.1:{port}",
            python=profile.python,
            host_dir=run.run_dir,
            local_dir=Path(out),
            ranks=tp,
            request=ProfileRequest(num_steps=args.steps),
            api_key=str(api_key) if api_key not in (None, True, False) else None,
            timeout=args.timeout,
            on_step=lambda m: print(f"  {m}", file=sys.stderr),
        )
        print(f"eagletui trace: traces in {out}", file=sys.stderr)
        return [str(p) for p in paths]
    except LiveError as exc:
        raise CaptureError(str(exc)) from None
    finally:
        await transport.close()


class CaptureError(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.capture is not None:
        if not args.profile:
            print("eagletui trace: --capture needs --profile", file=sys.stderr)
            return 2
        import asyncio

        try:
            args.files = asyncio.run(capture_running(args))
        except CaptureError as exc:
            print(f"eagletui trace: {_inert(str(exc))}", file=sys.stderr)
            return 1
    elif not args.files:
        print("eagletui trace: give trace FILEs, or --capture TARGET --profile P", file=sys.stderr)
        return 2
    ranks, errors = _load(args.files)
    base: list[RankSummary] | None = None
    if args.baseline:
        base, base_errors = _load(args.baseline)
        errors += base_errors
    for e in errors:
        print(f"eagletui trace: {_inert(e)}", file=sys.stderr)
    try:
        if args.json:
            rep = report_json(ranks)
            if base is not None:
                rep["baseline"] = report_json(base)
                rep["delta"] = delta_json(ranks, base)
            print(json.dumps(rep, indent=2))
        elif ranks:
            print(render_text(ranks, base))
        sys.stdout.flush()
    except BrokenPipeError:
        # `eagletui trace … | head`: the reader left; say nothing more.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 2 if errors else 0
