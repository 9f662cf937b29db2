"""Throughput of ``eagletui parse --json`` versus SGLang's own polars log parser, on one synthetic log, and
of ``parse --format vllm`` on a vLLM serving log of as many lines (its row, and its ratio to the SGLang path
in the same run: ``vllm_ratio``).

Usage::

    python benchmarks/parse_throughput.py [--lines N] [--sglang-parser PATH] [--keep FILE]

SGLang's parser is ``sglang/srt/debug_utils/log_parser.py`` (0.5.10+). Fetch it without installing
sglang::

    pip download --no-deps sglang -d /tmp/sglang_whl
    unzip -o /tmp/sglang_whl/sglang-*.whl 'sglang/srt/debug_utils/log_parser.py' -d /tmp/sglang_src
    pip install polars

and pass ``--sglang-parser /tmp/sglang_src/sglang/srt/debug_utils/log_parser.py`` or set
``SGLANG_LOG_PARSER``. Without it only our numbers are reported.

The log imitates a tp=8 EAGLE-3 server in the 0.5.5 format (``#queue-req: N, `` with the trailing
comma SGLang's regex needs): a startup, then HTTP access, Prefill and Decode lines in serving
proportions. Each parser runs in its own subprocess so peak RSS is its own. The last output line is
a JSON object.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def generate(path: Path, n_lines: int, seed: int = 7, uvicorn_ts: bool = False) -> int:
    """Write the log streaming (bounded memory); returns the number of Decode lines.

    ``uvicorn_ts``: uvicorn lines as a real SGLang server writes them, behind its own
    ``[YYYY-MM-DD HH:MM:SS]`` timestamp (the default keeps the bare form the baseline was measured on).

    One piece: it writes one synthetic server log top to bottom in the order a server writes it.
    """
    rnd = random.Random(seed)
    t = 12 * 3600
    n = 0
    decodes = 0

    def stamp() -> str:
        return f"2026-03-14 {t // 3600 % 24:02d}:{t % 3600 // 60:02d}:{t % 60:02d}"

    with path.open("w", encoding="utf-8") as f:
        head = [
            f"[{stamp()}] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-70B-Instruct', tp_size=8, "
            "speculative_algorithm='EAGLE3', speculative_num_steps=5, speculative_eagle_topk=4, "
            "speculative_num_draft_tokens=8, mem_fraction_static=0.85, cuda_graph_max_bs=48)"
        ]
        for r in range(8):
            head.append(f"[{stamp()} TP{r}] Init torch distributed begin.")
        for r in range(8):
            head.append(f"[{stamp()} TP{r}] Init torch distributed ends. mem usage=0.52 GB")
        for draft in (False, True):
            for r in range(8):
                head.append(f"[{stamp()} TP{r}] Load weight begin. avail mem=78.50 GB")
            typ = "LlamaForCausalLMEagle3" if draft else "LlamaForCausalLM"
            for r in range(8):
                head.append(
                    f"[{stamp()} TP{r}] Load weight end. type={typ}, dtype=torch.bfloat16, "
                    "avail mem=39.10 GB, mem usage=37.40 GB."
                )
            for r in range(8):
                head.append(
                    f"[{stamp()} TP{r}] KV Cache is allocated. #tokens: 480000, K size: 9.00 GB, V size: 9.00 GB"
                )
                head.append(f"[{stamp()} TP{r}] Memory pool end. avail mem=20.50 GB")
            word = "draft " if draft else ""
            for r in range(8):
                head.append(
                    f"[{stamp()} TP{r}] Capture {word}cuda graph begin. This can take up to several minutes. avail mem=20.50 GB"
                )
            head.append(
                "\r".join(
                    f"Capturing batches (bs={bs} avail_mem=20.10 GB): {i * 12:3d}%|#   | {i}/8 [00:0{i}<00:00,  2.40it/s]"
                    for i, bs in enumerate([48, 32, 24, 16, 8, 4, 2, 1], 1)
                )
            )
            for r in range(8):
                head.append(
                    f"[{stamp()} TP{r}] Capture {word}cuda graph end. Time elapsed: 6.20 s. mem usage=1.10 GB. avail mem=19.40 GB."
                )
        head.append(
            f"[{stamp()} TP0] max_total_num_tokens=480000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            "max_running_requests=48, context_len=131072, available_gpu_mem=19.40 GB"
        )
        uv = (lambda: f"[{stamp()}] ") if uvicorn_ts else (lambda: "")
        head += [
            f"{uv()}INFO:     Started server process [4242]",
            f"{uv()}INFO:     Waiting for application startup.",
            f"{uv()}INFO:     Application startup complete.",
            f"{uv()}INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
            f'{uv()}INFO:     127.0.0.1:51234 - "GET /get_model_info HTTP/1.1" 200 OK',
            f"[{stamp()} TP0] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0, ",
            f'{uv()}INFO:     127.0.0.1:51236 - "POST /generate HTTP/1.1" 200 OK',
            f"[{stamp()}] The server is fired up and ready to roll!",
        ]
        f.write("\n".join(head) + "\n")
        n = len(head)
        buf: list[str] = []
        while n < n_lines:
            t += 1
            r = rnd.random()
            if r < 0.15:
                run = rnd.randint(20, 48)
                acc = rnd.uniform(2.5, 4.2)
                gen = rnd.uniform(2500, 5200)
                buf.append(
                    f"[{stamp()} TP0] Decode batch, #running-req: {run}, #token: {rnd.randint(20000, 90000)}, "
                    f"token usage: {rnd.random():.2f}, accept len: {acc:.2f}, accept rate: {acc / 8:.2f}, "
                    f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: {rnd.randint(0, 9)}, "
                )
                decodes += 1
            elif r < 0.55:
                buf.append(
                    f"[{stamp()} TP0] Prefill batch, #new-seq: {rnd.randint(1, 4)}, #new-token: {rnd.randint(100, 8192)}, "
                    f"#cached-token: {rnd.randint(0, 4000)}, token usage: {rnd.random():.2f}, "
                    f"#running-req: {rnd.randint(0, 47)}, #queue-req: {rnd.randint(0, 9)}, "
                )
            else:
                buf.append(
                    f'{uv()}INFO:     127.0.0.1:{rnd.randint(30000, 60000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
                )
            n += 1
            if len(buf) >= 10000:
                f.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            f.write("\n".join(buf) + "\n")
    return decodes


#: The startup of a real vLLM 0.25.1 MTP server (DGX Spark, tests/fixtures/vllm): the vLLM log's head.
VLLM_HEAD = ROOT / "tests/fixtures/vllm/ready-0251-mtp-qwen38-dgxspark.log"


def generate_vllm(path: Path, n_lines: int, seed: int = 7) -> int:
    """A vLLM 0.25 serving log: a real startup, then each stats interval (vLLM logs its stats every 10 s)
    as uvicorn's access lines of the requests it finished and the engine's stats line with its
    ``SpecDecoding metrics`` line. A request is 128-512 output tokens, so an interval at G tokens/s
    finishes about 10·G/320 requests: access lines are most of the log, as on a busy server. Returns the
    number of stats lines.

    One piece: it writes one log top to bottom in the order the server writes it."""
    rnd = random.Random(seed)
    head = []
    for line in VLLM_HEAD.read_text(encoding="utf-8").splitlines():
        head.append(line)
        if "Application startup complete" in line:
            break
    t = 10 * 3600 + 30 * 60
    stats = 0
    pid = "(APIServer pid=554845) "

    def stamp() -> str:
        return f"08-21 {t // 3600 % 24:02d}:{t % 3600 // 60:02d}:{t % 60:02d}"

    with path.open("w", encoding="utf-8") as f:
        f.write("\n".join(head) + "\n")
        n = len(head)
        buf: list[str] = []
        while n < n_lines:
            t += 10
            gen = rnd.uniform(50, 1500)
            for _ in range(round(10 * gen / rnd.uniform(128, 512))):
                buf.append(
                    f'{pid}INFO:     127.0.0.1:{rnd.randint(30000, 60000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
                )
            buf.append(
                f"{pid}INFO {stamp()} [loggers.py:273] Engine 000: Avg prompt throughput: "
                f"{rnd.uniform(0, 9000):.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, "
                f"Running: {rnd.randint(1, 32)} reqs, Waiting: {rnd.randint(0, 9)} reqs, "
                f"GPU KV cache usage: {rnd.uniform(0, 90):.1f}%, Prefix cache hit rate: {rnd.uniform(0, 60):.1f}%"
            )
            acc = rnd.uniform(1.5, 3.6)
            drafted = rnd.randint(300, 9000)
            accepted = int(drafted * (acc - 1) / 3)
            rates = ", ".join(f"{rnd.uniform(0.2, 0.9):.3f}" for _ in range(3))
            buf.append(
                f"{pid}INFO {stamp()} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: {acc:.2f}, "
                f"Accepted throughput: {accepted / 10:.2f} tokens/s, Drafted throughput: {drafted / 10:.2f} tokens/s, "
                f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: {rates}, "
                f"Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%"
            )
            stats += 1
            if len(buf) >= 10000 or n + len(buf) >= n_lines:
                n += len(buf)
                f.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            f.write("\n".join(buf) + "\n")
    return stats


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_ours(path: str, rows_out: str, fmt_name: str | None = None) -> dict:
    """``eagletui parse``'s own code path (:func:`eagletui.commands.parse.parse_stream`), in the default
    format or ``fmt_name``'s (``parse --format vllm``)."""
    sys.path.insert(0, str(ROOT))
    from eagletui.commands.parse import parse_stream
    from eagletui.core.logs.registry import get_format

    fmt = get_format(fmt_name) if fmt_name else None

    base = _peak_rss_mb()
    gens: list[float] = []

    def sink(items: list) -> None:  # every Decode row, in order, for the rows_identical check
        for e in items:
            if e.type == "decode_rows":
                gens.extend(e.gen)
            elif e.type == "decode_stats":
                gens.append(e.gen_throughput)

    t0, c0 = time.perf_counter(), time.process_time()
    with open(path, "rb") as fh:
        result = parse_stream(fh, sink, fmt=fmt)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    Path(rows_out).write_text(json.dumps(gens))
    return {
        "seconds": dt,
        "cpu_seconds": cpu,
        "peak_rss_mb": _peak_rss_mb(),
        "base_rss_mb": base,
        "state": result["state"],
        "decode_count": result["decode"]["count"],
    }


def run_sglang(path: str, parser: str, rows_out: str) -> dict:
    spec = importlib.util.spec_from_file_location("sglang_log_parser", parser)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import polars  # noqa: F401  (import cost outside the timing, like ours)

    t0 = time.perf_counter()
    with open(path, encoding="utf-8", errors="replace") as fh:
        df = mod.parse(fh.read())
    dt = time.perf_counter() - t0
    Path(rows_out).write_text(json.dumps(df["gen_throughput"].to_list()))
    return {"seconds": dt, "peak_rss_mb": _peak_rss_mb(), "rows": df.height}


def main() -> int:
    """One piece: each row is timed against the baseline of the same run, in the order printed; the
    last line is the JSON of every row."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--sglang-parser", default=os.environ.get("SGLANG_LOG_PARSER", ""))
    ap.add_argument("--keep", default="", help="write the log here and keep it")
    ap.add_argument(
        "--uvicorn-ts",
        action="store_true",
        help="uvicorn lines behind SGLang's timestamp, as real servers print them (default: bare, the baseline)",
    )
    ap.add_argument("--_child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("EAGLETUI_BENCH_QUICK", "") not in ("", "0"),
        help="short mode for CI (also EAGLETUI_BENCH_QUICK=1): 20k lines",
    )
    ns = ap.parse_args()
    if ns.quick:
        ns.lines = min(ns.lines, 20_000)
    if ns._child:
        which, path, rows = ns._child
        if which == "sglang":
            res = run_sglang(path, ns.sglang_parser, rows)
        else:
            res = run_ours(path, rows, "vllm" if which == "vllm" else None)
        print(json.dumps(res))
        return 0

    tmp = Path(tempfile.mkdtemp(prefix="eagletui-bench-"))
    log = Path(ns.keep) if ns.keep else tmp / "bench.log"
    decodes = generate(log, ns.lines, uvicorn_ts=ns.uvicorn_ts)
    file_mb = log.stat().st_size / 1e6
    with log.open("rb") as fh:
        n_lines = sum(buf.count(b"\n") for buf in iter(lambda: fh.read(1 << 20), b""))
    print(f"log: {log} ({n_lines} lines, {file_mb:.1f} MB, {decodes} Decode lines)")

    def child(which: str, path: Path = log) -> dict:
        rows = tmp / f"{which}.rows.json"
        cmd = [sys.executable, __file__, "--_child", which, str(path), str(rows)]
        if ns.sglang_parser:
            cmd[2:2] = ["--sglang-parser", ns.sglang_parser]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        res = json.loads(out)
        res["rows_file"] = rows
        return res

    ours = child("ours")
    lps = n_lines / ours["seconds"]
    print(
        f"eagletui: {ours['seconds']:.2f} s, {lps:,.0f} lines/s, peak RSS {ours['peak_rss_mb']:.0f} MB "
        f"(interpreter baseline {ours['base_rss_mb']:.0f} MB), state={ours['state']}, decode={ours['decode_count']}"
    )
    report = {
        "uvicorn_ts": ns.uvicorn_ts,
        "lines": n_lines,
        "file_mb": round(file_mb, 1),
        "lines_per_s": round(lps),
        # CPU time of the parse alone: comparable across runs on a busy shared machine, unlike wall time.
        "lines_per_cpu_s": round(n_lines / max(ours["cpu_seconds"], 1e-9)),
        "seconds": round(ours["seconds"], 3),
        "peak_rss_mb": round(ours["peak_rss_mb"], 1),
        "sglang_lines_per_s": None,
        "ratio": None,
        "rows_identical": None,
        "sglang_seconds": None,
    }
    # the vLLM row: `parse --format vllm` on a vLLM serving log of as many lines, in the same run
    vlog = tmp / "bench-vllm.log"
    vstats = generate_vllm(vlog, ns.lines)
    with vlog.open("rb") as fh:
        v_lines = sum(buf.count(b"\n") for buf in iter(lambda: fh.read(1 << 20), b""))
    vl = child("vllm", vlog)
    vlps = v_lines / vl["seconds"]
    # per CPU-second: comparable between the two rows on a busy shared machine, unlike wall time
    v_cpu = v_lines / max(vl["cpu_seconds"], 1e-9)
    s_cpu = n_lines / max(ours["cpu_seconds"], 1e-9)
    print(
        f"eagletui --format vllm: {vl['seconds']:.2f} s, {vlps:,.0f} lines/s, {v_cpu:,.0f} lines per CPU-second "
        f"({v_lines} lines, {vstats} stats lines), peak RSS {vl['peak_rss_mb']:.0f} MB, state={vl['state']}, "
        f"decode={vl['decode_count']}; {v_cpu / s_cpu:.2f}x the SGLang path's lines per CPU-second"
    )
    report.update(
        vllm_lines=v_lines,
        vllm_lines_per_s=round(vlps),
        vllm_lines_per_cpu_s=round(v_cpu),
        vllm_seconds=round(vl["seconds"], 3),
        vllm_peak_rss_mb=round(vl["peak_rss_mb"], 1),
        vllm_decode=vl["decode_count"],
        vllm_ratio=round(v_cpu / s_cpu, 2),
    )
    vlog.unlink()
    parser = ns.sglang_parser
    if not parser or not Path(parser).is_file():
        print(
            "SGLang's log_parser.py not found: set SGLANG_LOG_PARSER or pass --sglang-parser (see the module "
            "docstring: pip download --no-deps sglang; unzip sglang/srt/debug_utils/log_parser.py; pip install polars)"
        )
    else:
        try:
            sg = child("sglang")
        except subprocess.CalledProcessError as exc:
            print(f"SGLang parser failed (is polars installed?): {exc.stderr.strip()[-500:]}")
        else:
            slps = n_lines / sg["seconds"]
            a = json.loads(Path(ours["rows_file"]).read_text())
            b = json.loads(Path(sg["rows_file"]).read_text())
            identical = len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True))
            print(
                f"sglang:   {sg['seconds']:.2f} s, {slps:,.0f} lines/s, peak RSS {sg['peak_rss_mb']:.0f} MB, "
                f"{sg['rows']} Decode rows; rows identical: {identical} ({len(a)} vs {len(b)})"
            )
            report.update(
                sglang_lines_per_s=round(slps),
                ratio=round(lps / slps, 2),
                rows_identical=identical,
                sglang_seconds=round(sg["seconds"], 3),
                sglang_peak_rss_mb=round(sg["peak_rss_mb"], 1),
            )
    if not ns.keep:
        log.unlink()
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
