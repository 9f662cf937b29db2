"""``eagletui trace FILE… [--json] [--baseline FILE…]``: where a decode cycle's GPU time goes.

Reads the Chrome traces SGLang's ``/start_profile`` writes (``{id}-TP-{rank}[-DP-…][-EP-…]-{stage}.trace.json.gz``,
plain or gzip, streamed — real ones reach hundreds of MB) and prints, per rank, the kernel time by
category (communication, gemm, attention, moe, other) of one decode **cycle** (draft + verify + draft
extend of a speculative server; one decode step of a plain one) and of each of its parts, with prefill
batches kept out, and the rank skew. ``--baseline`` takes another run's traces and adds the Δ per
category (per cycle when both have cycles). JSON contract: docs/trace-json.md. Exit 0 when every file
was read, 2 when one could not be.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eagletui.commands._args import ArgumentParser, command_timings, timings_from_env
from eagletui.commands._ssh import add_ssh_options, ssh_options
from eagletui.profiler import summarize_file
from eagletui.profiler.categories import ORDER
from eagletui.profiler.chrome import TraceError
from eagletui.profiler.rank import RankSummary
from eagletui.profiler.summary import report_json

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
    p.add_argument(
        "--steps",
        type=int,
        default=5,
        help="decode cycles to profile (with --capture): decode batches, each one draft + verify + draft "
        "extend on a speculative server",
    )
    p.add_argument("--out", default=None, help="where the fetched traces go (default: the data dir)")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the traces")
    p.add_argument(
        "--watch",
        type=float,
        default=15.0,
        help="seconds to watch the server after a capture before calling it healthy (with --capture)",
    )
    p.add_argument(
        "--with-stack",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ask the profiler for Python stacks (default: the server's own default)",
    )
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


def _progress(f: str) -> Callable[[int], None]:
    """A long file says how far it got (a 2 GiB trace gave no sign of life for minutes)."""

    def say(n: int) -> None:
        print(f"eagletui trace: {_inert(f)}: {n >> 20} MiB read…", file=sys.stderr, flush=True)

    return say


def _load(files: list[str]) -> tuple[list[RankSummary], list[str]]:
    ranks: list[RankSummary] = []
    errors: list[str] = []
    for f in files:
        try:
            r = summarize_file(f, progress=_progress(f))
            if not r.kernels and not r.skipped:
                # nothing read is not a summary of nothing: say so and exit non-zero
                errors.append(f"{f}: no kernel events in this trace: nothing to summarise")
                continue
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


def mean_categories(ranks: list[RankSummary], per_cycle: bool = False) -> dict[str, float]:
    """Per-category kernel ms, averaged over ranks: of one decode cycle with ``per_cycle`` (ranks without
    a cycle count their whole trace), else of the whole trace."""
    if not ranks:
        return {c.label: 0.0 for c in ORDER}
    rows = []
    for r in ranks:
        per = r.per_cycle() if per_cycle else None
        rows.append(per if per is not None else {c.label: r.ms(c.label) for c in ORDER})
    return {c.label: sum(row[c.label] for row in rows) / len(rows) for c in ORDER}


def _by_cycle(ranks: list[RankSummary], base: list[RankSummary] | None) -> bool:
    """Compare per decode cycle when every trace on both sides has cycles (prefill and trace length then
    do not matter); otherwise whole traces, as before cycles were known."""
    both = ranks + (base or [])
    return bool(both) and all(r.decode_cycles for r in both)


def stacked_bar(cats: dict[str, float], scale_ms: float, width: int = BAR_WIDTH) -> str:
    if scale_ms <= 0:
        return ""
    out = []
    for c in ORDER:
        n = round(cats.get(c.label, 0.0) / scale_ms * width)
        out.append(_GLYPHS[c.label] * n)
    return "".join(out)[:width]


def delta_json(ranks: list[RankSummary], base: list[RankSummary]) -> dict[str, Any]:
    by_cycle = _by_cycle(ranks, base)
    now, was = mean_categories(ranks, by_cycle), mean_categories(base, by_cycle)
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


_PART_LABEL = {"draft": "draft", "verify": "verify", "draft_extend": "draft extend", "decode": "decode step"}


def _cycle_lines(r: RankSummary) -> list[str]:
    """The decode cycle of one rank: categories per cycle, then per part, then what was kept out."""
    done = r.decode_cycles
    d = r.decode_json() or {}
    spec = d.get("kind") == "spec"
    unit = "cycle" if spec else "step"
    what = "decode cycles (draft + verify + draft extend)" if spec else "decode steps"
    cats = r.per_cycle() or {}
    total = sum(cats.values())
    lines = [
        f"  {len(done)} {what}: {total:.3f} ms of kernels a {unit} (median "
        f"{d.get('median_kernel_ms', 0.0):.3f}), {d.get('gpu_ms_per_cycle', 0.0):.3f} ms on the GPU"
    ]
    if d.get("batch_sizes"):
        lines[-1] += f"; batch sizes {', '.join(map(str, d['batch_sizes']))}"
    if d.get("bound") == "cpu":
        lines.append(
            f"  kernels fill {d['kernel_share'] * 100:.0f} % of the {unit}: it is bound by the CPU (the scheduler's "
            "work between launches), not the GPU; what a change costs here is mostly CPU time this profile does not "
            "show, so a prediction from it is only as good as this host's band, and a measured launch outranks it"
        )
    for c in ORDER:
        ms = cats.get(c.label, 0.0)
        lines.append(
            f"  {c.label:<14} {ms:10.3f} ms  {ms / total * 100 if total > 0 else 0.0:5.1f} %  a {unit}"
        )
    parts = d.get("parts") or {}
    if spec and parts:
        head = "".join(f"{c.label[:6]:>8}" for c in ORDER)
        lines.append(f"  per part, a {unit}:        GPU ms  kernels{head}")
        for stage, p in parts.items():
            label = _PART_LABEL.get(stage, "between parts")
            gpu = f"{p['gpu_ms']:8.3f}" if stage != "between" else "       –"
            row = "".join(f"{p['categories'][c.label]:8.3f}" for c in ORDER)
            lines.append(f"    {label:<20} {gpu} {p['kernel_ms']:8.3f}{row}")
    kept = []
    if r.prefill:
        kept.append(
            f"{len(r.prefill)} prefill batch(es), {sum(p.kernel_ms for p in r.prefill):.3f} ms of kernels"
        )
    if d.get("partial"):
        kept.append(f"{d['partial']} partial cycle(s) at the trace's edges")
    if r.outside_ms > 0:
        kept.append(f"{r.outside_ms:.3f} ms of kernels outside any stage (scheduler, result copies)")
    if kept:
        lines.append("  kept out: " + "; ".join(kept))
    return lines


def render_text(ranks: list[RankSummary], base: list[RankSummary] | None) -> str:
    lines: list[str] = []
    by_cycle = _by_cycle(ranks, base)
    if by_cycle:
        scale = max(sum((r.per_cycle() or {}).values()) for r in ranks + (base or []))
    else:
        scale = max([r.kernel_ms for r in ranks + (base or [])] or [0.0])
    for r in ranks:
        who = f"TP{r.rank}" if r.rank is not None else "rank ?"
        lines.append(f"{who}  {_inert(r.file)}")
        graph = f", {r.graph_kernels} replayed by CUDA graphs" if r.graph_kernels else ""
        if r.decode_cycles:
            lines += _cycle_lines(r)
            cats = r.per_cycle() or {}
            lines.append(f"  [{stacked_bar(cats, scale if by_cycle else sum(cats.values())):<{BAR_WIDTH}}]")
            lines.append(
                f"  kernel time {r.kernel_ms:10.3f} ms  in {r.kernels} kernels{graph} (the whole trace)"
            )
            lines.append("")
            continue
        lines.append(f"  kernel time {r.kernel_ms:10.3f} ms  in {r.kernels} kernels{graph}")
        for c in ORDER:
            t = r.categories[c.label]
            lines.append(
                f"  {c.label:<14} {r.ms(c.label):10.3f} ms  {r.share(c.label) * 100:5.1f} %  {t.count:7d} kernels"
            )
        cats = {c.label: r.ms(c.label) for c in ORDER}
        lines.append(f"  [{stacked_bar(cats, scale):<{BAR_WIDTH}}]")
        if r.prefill:
            lines.append(
                f"  {len(r.prefill)} prefill batch(es), no decode cycle: a prefill trace (the figures above are prefill)"
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
        lines.append(f"vs baseline (mean over ranks, {'per decode cycle' if by_cycle else 'whole traces'}):")
        for cat, d in delta_json(ranks, base).items():
            if d["delta_pct"] is not None:
                pct = f"{d['delta_pct']:+.1f} %"
            else:
                pct = "new" if d["ms"] > 0 else "—"
            lines.append(
                f"  {cat:<14} {d['baseline_ms']:10.3f} → {d['ms']:10.3f} ms  {d['delta_ms']:+9.3f} ms  {pct}"
            )
        lines.append(f"  baseline [{stacked_bar(mean_categories(base, by_cycle), scale):<{BAR_WIDTH}}]")
        lines.append(f"  this run [{stacked_bar(mean_categories(ranks, by_cycle), scale):<{BAR_WIDTH}}]")
    legend = "  ".join(f"{_GLYPHS[c.label]} {c.label}" for c in ORDER)
    lines.append(f"legend: {legend}")
    return "\n".join(lines)


async def capture_running(args: argparse.Namespace) -> list[str]:
    """Profile the newest live eagletui-launched server of ``--profile`` on ``--capture`` and fetch its
    DECODE traces here; returns their local paths. Raises ``CaptureError`` with a message for the user."""
    from eagletui.core.profile.load import load_profile
    from eagletui.core.profile.model import ProfileError
    from eagletui.remote.launcher import make_launcher
    from eagletui.remote.transport import open_transport

    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        raise CaptureError(str(exc)) from None
    try:
        transport = await open_transport(args.capture, ssh_options(args), timings=command_timings(args))
    except Exception as exc:
        raise CaptureError(f"cannot reach {args.capture}: {exc}") from None
    try:
        control = make_launcher(profile, transport, timings=command_timings(args))
        run = await _newest_run(control, profile, args.capture)
        tp_value = (run.config or {}).get("tp") or profile.args.get("--tp", profile.args.get("--tp-size", 1))
        try:
            tp = max(1, int(str(tp_value)))
        except ValueError:
            tp = 1
        port = await transport.forward_port(run.port or profile.port)
        out = args.out
        if out is None:
            out = _private_out_dir(run.run_id)
        print(f"eagletui trace: profiling run {run.run_id} (pid {run.pid}, tp {tp})", file=sys.stderr)
        if args.with_stack is False:
            print(f"  note: {NO_STACK_RISK}", file=sys.stderr)
        return await _capture_and_watch(args, profile, control, transport, run, port=port, ranks=tp, out=out)
    finally:
        await transport.close()


async def _newest_run(control: Any, profile: Any, target: str) -> Any:
    """The newest live run of this profile that eagletui launched on the host; ``CaptureError`` naming
    how the others differ when there is none."""
    from eagletui.remote.reattach import run_differences

    live = [r for r in await control.list_runs() if r.alive and r.owned]
    mine = [r for r in live if not run_differences(r, profile)]
    if not mine:
        others = "; ".join(
            f"run {r.run_id} differs in {', '.join(run_differences(r, profile))}" for r in live[:3]
        )
        raise CaptureError(
            f"no running server of this profile on {target} ({profile.runs_dir})"
            + (f" ({others})" if others else "")
        )
    return mine[0]


def _private_out_dir(run_id: str) -> str:
    """A fresh directory for the traces under the data dir's ``profiles`` (0700)."""
    import tempfile

    from eagletui.config import data_dir

    root = data_dir() / "profiles"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return tempfile.mkdtemp(prefix=f"{run_id}-", dir=root)


async def _capture_and_watch(
    args: argparse.Namespace,
    profile: Any,
    control: Any,
    transport: Any,
    run: Any,
    *,
    port: int,
    ranks: int,
    out: str,
) -> list[str]:
    """Capture the traces through the forwarded ``port``, then watch the server for ``--watch`` seconds
    (a profiler can take it down just after): the local paths, or ``CaptureError`` with what failed or
    how the server died (and the files that came)."""
    from eagletui.profiler.live import ProfileError as LiveError
    from eagletui.profiler.live import ProfileRequest, ServerGone, capture, log_size

    api_key = profile.args.get("--api-key")
    log_from = await log_size(transport, run.log_path)
    paths: list[Path] = []
    failed: str | None = None
    during = False

    async def alive() -> bool:
        return not await control.known_dead(run)

    try:
        paths = await capture(
            transport,
            f"http://127.0.0.1:{port}",
            python=profile.python,
            host_dir=run.run_dir,
            local_dir=Path(out),
            ranks=ranks,
            request=ProfileRequest(num_steps=args.steps, with_stack=args.with_stack),
            api_key=str(api_key) if api_key not in (None, True, False) else None,
            timeout=args.timeout,
            on_step=lambda m: print(f"  {m}", file=sys.stderr),
            alive=alive,
            log_path=run.log_path,
        )
        print(f"eagletui trace: traces in {out}", file=sys.stderr)
    except LiveError as exc:
        failed = str(exc)
        during = isinstance(exc, ServerGone)
    if during:
        # no traces came: the log since the capture began says why it died
        death = await watch_after_capture(control, transport, run, log_from, 0.0, when="during")
        failed = None
    else:
        # A profiler can take the server down after "Profiling done" (sglang 0.5.17: the scheduler
        # segfaulted in the torch profiler's destructor 0-2 s later): watch it before saying "done".
        print(f"  watching the server for {args.watch:.0f} s after the capture", file=sys.stderr)
        death = await watch_after_capture(control, transport, run, log_from, args.watch)
    if failed is not None or death is not None:
        raise CaptureError(
            "; ".join(x for x in (failed, death) if x),
            files=[str(p) for p in paths],
            died=death is not None,
        )
    print("  the server is still alive", file=sys.stderr)
    return [str(p) for p in paths]


#: What the lent H200 showed (docs/real-sglang.md): sglang 0.5.17 + torch 2.11, one native crash of the
#: scheduler in each of two sessions' captures with with_stack/record_shapes off, none in three with
#: the server's defaults. Too few to be sure; enough to say before the capture.
NO_STACK_RISK = (
    "with_stack off: on sglang 0.5.17 + torch 2.11 (H200) 2 of 3 such captures crashed the scheduler "
    "(2 of 10 with the server's defaults); profile a server you can afford to lose"
)

#: At most this much of the server log after the capture is read to triage a death.
DEATH_LOG_BYTES = 512 * 1024


async def watch_after_capture(
    control: Any, transport: Any, run: Any, log_from: int, seconds: float, *, when: str = "after"
) -> str | None:
    """None while the server stays alive and its log shows no failure for ``seconds``; else what
    happened: the triage of the log written since the capture began, with the exit when it is known."""

    from eagletui.profiler.live import log_since
    from eagletui.remote.control import Liveness

    clock = transport.timings.clock
    deadline = clock.monotonic() + max(0.0, seconds)
    dead = when == "during"  # the caller saw it die
    while not dead and clock.monotonic() < deadline:
        if await control.liveness(run, confirm=False) is Liveness.DEAD:
            dead = True
            break
        await clock.sleep(transport.timings.watch.poll_s)
    # a log that cannot be read is "": the liveness answer still stands
    text = await log_since(transport, run.log_path, log_from, DEATH_LOG_BYTES)
    failure = triage_text(text)
    if not dead and failure is None:
        return None
    what = f"the server died {when} the capture" if dead else "the server is failing after the capture"
    if dead:
        code, sig = await control.exit_info(run)
        if sig is not None or code is not None:
            what += f" (exit {'signal ' + str(sig) if sig is not None else code})"
    if failure is not None:
        what += f": {failure}"
    return what


def triage_text(text: str) -> str | None:
    """The first failure the log interpreter finds in ``text`` (kind: message; hint), or None."""
    from eagletui.core import events as ev
    from eagletui.core.phases.interpreter import LogInterpreter

    interp = LogInterpreter(launch=1, emit_lines=False)
    events = interp.feed(text) + interp.flush()
    for e in events:
        if isinstance(e, ev.ServerFailed):
            return f"{e.kind}: {e.message}" + (f" (hint: {e.hint})" if e.hint else "")
    return None


class CaptureError(Exception):
    """A capture that failed, or a server that died after it (``died``); ``files``: traces fetched."""

    def __init__(self, message: str, *, files: list[str] | None = None, died: bool = False) -> None:
        super().__init__(message)
        self.files = files or []
        self.died = died


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.timings = timings_from_env()
    if args.capture is not None:
        if not args.profile:
            print("eagletui trace: --capture needs --profile", file=sys.stderr)
            return 2
        import asyncio

        try:
            args.files = asyncio.run(capture_running(args))
        except CaptureError as exc:
            print(f"eagletui trace: {_inert(str(exc))}", file=sys.stderr)
            if not exc.files:
                return 3 if exc.died else 1
            # the traces came before the death: show them, and still fail
            args.files = exc.files
            rc = _report(args)
            return 3 if exc.died else (rc or 1)
    elif not args.files:
        print("eagletui trace: give trace FILEs, or --capture TARGET --profile P", file=sys.stderr)
        return 2
    return _report(args)


def _report(args: argparse.Namespace) -> int:
    ranks, errors = _load(args.files)
    base: list[RankSummary] | None = None
    if args.baseline:
        base, base_errors = _load(args.baseline)
        errors += base_errors
    for e in errors:
        print(f"eagletui trace: {_inert(e)}", file=sys.stderr)
    if args.capture is not None:
        for r in ranks:
            got = len(r.decode_cycles)
            if got != args.steps:
                print(
                    f"eagletui trace: asked for {args.steps} decode cycles, the trace of TP{r.rank} holds {got} "
                    "complete one(s)",
                    file=sys.stderr,
                )
    try:
        if args.json:
            rep = report_json(ranks)
            if base is not None:
                rep["baseline"] = report_json(base)
                rep["delta"] = delta_json(ranks, base)
                rep["delta_unit"] = "cycle" if _by_cycle(ranks, base) else "trace"
            print(json.dumps(rep, indent=2))
        elif ranks:
            print(render_text(ranks, base))
        sys.stdout.flush()
    except BrokenPipeError:
        # `eagletui trace … | head`: the reader left; say nothing more.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 2 if errors else 0
