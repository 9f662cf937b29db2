"""Every fixture log parses to its expected JSON (tests/fixtures/logs/*.log + *.expected.json)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from eagletui.commands.parse import main, parse_path
from eagletui.core.events import FAILURE_KINDS, LOG_PHASES, PHASES

FIXTURES = Path(__file__).parent / "fixtures" / "logs"
LOGS = sorted(FIXTURES.glob("*.log"))


def _expected(log: Path) -> dict:
    return json.loads(log.with_suffix(".expected.json").read_text())


def test_corpus_present() -> None:
    names = {p.stem for p in LOGS}
    for ver in ("030", "040", "046", "0410", "055", "0510", "0513", "0516", "0521", "0523"):
        assert f"ok_{ver}_tp8" in names
    kinds = {_expected(p)["failure"]["kind"] for p in LOGS if _expected(p)["failure"]}
    assert set(FAILURE_KINDS) - {"stale"} <= kinds


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_fixture_matches_expected(log: Path) -> None:
    got = parse_path(str(log))
    exp = _expected(log)
    for key in ("state", "phase", "failure", "launch", "launches"):
        assert got[key] == exp[key], key
    assert [p["name"] for p in got["phases"]] == [p["name"] for p in exp["phases"]]
    for g, e in zip(got["phases"], exp["phases"], strict=True):
        for k in ("name", "start", "end", "seconds", "done", "total"):
            assert g[k] == e[k], (g["name"], k)
    assert got["decode"] == exp["decode"]
    assert got["phase"] is None or got["phase"] in PHASES


@pytest.mark.parametrize(
    "stem,state,kind,needle",
    [
        ("ok_0523_tp8", "ready", None, None),
        ("fail_oom_capture_0513", "failed", "oom", "--cuda-graph-max-bs "),
        ("fail_oom_capture_draft_0523", "failed", "oom", "--cuda-graph-max-bs-decode"),
        ("fail_oom_kv_0521", "failed", "oom", "raise --mem-fraction-static"),
        ("fail_bad_args_0523", "failed", "bad_args", "--cuda-graph-max-bs-decode"),
        ("fail_nccl_timeout_0516", "failed", "nccl", "NCCL_DEBUG"),
        ("fail_died_oomkiller_0521", "failed", "died", "dmesg"),
        ("fail_signal_0523", "failed", "signal", None),
        ("stopped_0523", "stopped", None, None),
        ("serving_only_0510", "ready", None, None),
        ("loading_0523_cut", "loading", None, None),
    ],
)
def test_semantics(stem: str, state: str, kind: str | None, needle: str | None) -> None:
    """Hand-checked meaning, independent of the regenerated expected files."""
    s = parse_path(str(FIXTURES / f"{stem}.log"))
    assert s["state"] == state
    if kind is None:
        assert s["failure"] is None
    else:
        assert s["failure"]["kind"] == kind
        if needle:
            assert needle in s["failure"]["hint"]


def test_oom_beats_sigquit_cascade() -> None:
    s = parse_path(str(FIXTURES / "fail_oom_capture_0513.log"))
    assert s["failure"]["kind"] == "oom"
    assert "Capture cuda graph failed" in s["failure"]["message"]
    assert s["phase"] == "capture_target"


def test_tp8_phase_order_new_and_old() -> None:
    for stem in ("ok_0513_tp8", "ok_0516_tp8"):
        s = parse_path(str(FIXTURES / f"{stem}.log"))
        names = [p["name"] for p in s["phases"]]
        # The prefill CUDA graph is captured at startup from 0.5.16 on (breakable backend).
        # (queued is a Slurm job's wait: no log shows it)
        want = [p for p in LOG_PHASES if (p != "capture_prefill" or stem == "ok_0516_tp8") and p != "compile"]
        assert names == want, stem
        assert all(p["seconds"] is not None for p in s["phases"]), stem
        cap = next(p for p in s["phases"] if p["name"] == "capture_target")
        assert cap["total"] == 8 and cap["done"] == 8


def test_decode_summary() -> None:
    s = parse_path(str(FIXTURES / "ok_0523_tp8.log"))
    d = s["decode"]
    assert d["count"] == 12
    assert d["last"] == {
        "gen_throughput": 4011.1,
        "accept_len": 3.41,
        "accept_rate": 0.34,
        "running_req": 32,
        "queue_req": 0,
    }
    assert d["gen_throughput"]["max"] == 4400.5


def test_cli_json_and_gz(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = FIXTURES / "ok_0516_tp8.log"
    gz = tmp_path / "x.log.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    assert main([str(src), str(gz), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out, list) and len(out) == 2
    assert out[0]["state"] == out[1]["state"] == "ready"
    assert main([str(src)]) == 0
    text = capsys.readouterr().out
    assert "capture_target" in text and "state: ready" in text


def test_cli_unreadable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing.log")]) == 2
    assert "cannot read" in capsys.readouterr().err


# ------------------------------------------------------------------ hostile input (issues 11, 13)

ROOT = Path(__file__).parents[1]


def _cli(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "eagletui", "parse", *args], capture_output=True, text=True, env=env, **kw
    )


@pytest.mark.slow
def test_cli_corrupt_and_truncated_gzip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged .gz: a clear message, the part read before it summarised, exit 1, no traceback."""
    import random

    rnd = random.Random(3)
    serving = "".join(
        f"[2026-03-14 12:02:{i % 60:02d} TP0] Decode batch, #running-req: {rnd.randint(1, 48)}, #token: "
        f"{rnd.randint(1, 90000)}, token usage: 0.{rnd.randint(10, 99)}, gen throughput (token/s): "
        f"{rnd.uniform(1000, 5000):.2f}, #queue-req: {rnd.randint(0, 9)}\n"
        for i in range(20000)
    )
    data = gzip.compress((FIXTURES / "ok_0516_tp8.log").read_bytes() + serving.encode())
    corrupt = bytearray(data)
    for i in range(len(corrupt) // 2, len(corrupt) // 2 + 64):
        corrupt[i] ^= 0x5A
    (tmp_path / "corrupt.log.gz").write_bytes(bytes(corrupt))
    (tmp_path / "cut.log.gz").write_bytes(data[: len(data) // 2])
    for name, word in (("corrupt.log.gz", "corrupt"), ("cut.log.gz", "ends early")):
        assert main([str(tmp_path / name), "--json"]) == 1, name
        cap = capsys.readouterr()
        assert word in cap.err, name
        out = json.loads(cap.out)
        assert word in out["truncated"] and out["state"] != "unknown", name


def test_cli_stdin_closed() -> None:
    r = _cli(["-"], stdin=subprocess.DEVNULL)  # empty stdin is fine
    assert r.returncode == 0 and "state: unknown" in r.stdout
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        ["sh", "-c", 'exec "$0" -m eagletui parse - <&-', sys.executable],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 2, r.stderr
    assert "standard input is closed" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_cli_decompression_bomb_and_cap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """200 MB of newlines in 200 KB of gzip stops at the ratio bound; a real log obeys the size cap."""
    bomb = tmp_path / "bomb.log.gz"
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip container
    with bomb.open("wb") as f:
        block = b"\n" * (16 << 20)
        for _ in range(12):
            f.write(comp.compress(block))
        f.write(comp.flush())
    assert bomb.stat().st_size < 1 << 20
    assert main([str(bomb)]) == 1
    cap = capsys.readouterr()
    assert "decompression bomb" in cap.err and "incomplete:" in cap.out
    # The size cap, with the option (MB): a 2 MB log read with a 1 MB budget.
    big = tmp_path / "big.log.gz"
    text = (FIXTURES / "ok_0523_tp8.log").read_bytes()
    big.write_bytes(gzip.compress(text * (2 * (1 << 20) // len(text) + 1)))
    assert main([str(big), "--max-decompressed", "1", "--json"]) == 1
    cap = capsys.readouterr()
    assert "--max-decompressed" in json.loads(cap.out)["truncated"]


def test_cli_output_is_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Escape sequences in the log (OSC 0 title, OSC 52 clipboard, a C1 CSI) never reach the terminal."""
    evil = "\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\u009b31m\u202e"
    log = tmp_path / "evil.log"
    log.write_text(
        f"[2026-01-01 12:00:00] server_args={{'model_path': 'm{evil}', 'tp_size': 1}}\n"
        "[2026-01-01 12:00:01 TP0] Load weight begin. avail mem=70.00 GB\n"
        f"[2026-01-01 12:00:02 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        f"RuntimeError: boom{evil}\n"
        "[2026-01-01 12:00:02] Received sigquit from a child process. It usually means the child failed.\n",
        encoding="utf-8",
    )
    for args in ([str(log)], [str(log), "--json"]):
        assert main(args) == 0
        out = capsys.readouterr().out
        for bad in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert bad not in out, (args, repr(bad))
    assert "RuntimeError: boom␛]0;pwned␇" in main_text(log, capsys)
    assert main([str(log), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["failure"]["message"] == "RuntimeError: boom" + evil  # JSON keeps the data, escaped


def main_text(log: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main([str(log)]) == 0
    return capsys.readouterr().out


def test_cli_text_table(capsys: pytest.CaptureFixture[str]) -> None:
    """No "accept len None"; the dur/spread columns line up whatever the slowest-rank text."""
    out = main_text(FIXTURES / "ok_030_tp8.log", capsys)  # 0.3.x prints no accept len
    assert "None" not in out
    out = main_text(FIXTURES / "ok_0523_tp8.log", capsys)
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("phase "))
    header = lines[head]
    rows = lines[head + 1 : next(i for i, ln in enumerate(lines) if ln.startswith("state:"))]
    for col in ("dur", "spread"):
        end = header.index(col) + len(col)
        for row in rows:
            if row[header.index(col) : end].strip():
                assert row[end - 1] != " " and row[end : end + 1] in ("", " "), (col, row)


@pytest.mark.slow
def test_cli_broken_pipe_is_quiet() -> None:
    """``parse --json … | head`` ends without a BrokenPipeError traceback."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    files = [str(FIXTURES / "ok_0523_tp8.log")] * 80  # far more than a pipe buffer of JSON
    for extra in (["--json"], []):
        p = subprocess.Popen(
            [sys.executable, "-m", "eagletui", "parse", *extra, *files],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert p.stdout is not None and p.stderr is not None
        p.stdout.readline()
        p.stdout.close()
        err = p.stderr.read().decode()
        p.wait(timeout=60)
        assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_no_textual_import() -> None:
    code = "import sys, eagletui.commands.parse; print('textual' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


def _per_line_summary(data: bytes, step: int) -> tuple[dict, list[float]]:
    """The reference: LogInterpreter.feed_bytes line by line (no bulk scan), any chunking."""
    from eagletui.core.phases.interpreter import LogInterpreter
    from eagletui.core.state.summary import Summarizer

    interp = LogInterpreter(launch=1, emit_lines=False)
    summ = Summarizer()
    gens: list[float] = []
    for pos in range(0, len(data), step):
        evs = interp.feed_bytes(data[pos : pos + step])
        gens += [e.gen_throughput for e in evs if e.type == "decode_stats"]
        summ.add(evs)
    evs = interp.flush()
    gens += [e.gen_throughput for e in evs if e.type == "decode_stats"]
    summ.add(evs)
    summ.set_version(interp.version)
    result = summ.result()
    result["url"] = interp.state.url or None
    return result, gens


def _bulk_summary(data: bytes, step: int) -> tuple[dict, list[float]]:
    """parse_stream's path (feed_bulk_bytes), read in ``step``-byte blocks."""
    import io

    from eagletui.commands import parse as parse_cmd

    gens: list[float] = []

    def sink(items: list) -> None:
        for e in items:
            if e.type == "decode_rows":
                gens.extend(e.gen)
            elif e.type == "decode_stats":
                gens.append(e.gen_throughput)

    old = parse_cmd.CHUNK
    parse_cmd.CHUNK = step
    try:
        return parse_cmd.parse_stream(io.BytesIO(data), sink), gens
    finally:
        parse_cmd.CHUNK = old


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_bulk_path_equals_per_line(log: Path) -> None:
    """``parse`` folds serving runs in bulk: same JSON and Decode rows as line-by-line feeding."""
    data = log.read_bytes()
    ref, ref_gens = _per_line_summary(data, 1 << 20)
    assert _per_line_summary(data, 97) == (ref, ref_gens)
    for step in (1 << 23, 4096, 333, 64):
        assert _bulk_summary(data, step) == (ref, ref_gens), step
    assert parse_path(str(log)) == ref


def _serving_log(n: int) -> bytes:
    """A startup, then n serving lines with a few interruptions the bulk scan must hand to the classifier."""
    head = (FIXTURES / "ok_0516_tp8.log").read_bytes()
    lines = []
    for i in range(n):
        t = f"[2026-03-14 13:{i // 60 % 60:02d}:{i % 60:02d} TP0] "
        k = i % 7
        if k == 0:
            lines.append(
                t + f"Decode batch, #running-req: {i % 48}, #token: {1000 + i}, token usage: 0.{i % 97:02d}, "
                f"accept len: {2 + i % 200 / 100:.2f}, accept rate: 0.{i % 89:02d}, cuda graph: True, "
                f"gen throughput (token/s): {3000 + i * 1.25:.2f}, #queue-req: {i % 9}"
            )
        elif k in (1, 2):
            lines.append(
                t + f"Prefill batch, #new-seq: 1, #new-token: {i}, #cached-token: 0, #queue-req: 0, "
            )
        elif k == 3:
            lines.append(f'INFO:     127.0.0.1:{40000 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        elif k == 4 and i % 5 == 0:
            lines.append(
                t
                + f"Decode batch, #running-req: {i % 48}, #full token: 7, gen throughput (token/s): 9.50, #queue-req: 0"
            )
        elif k == 5 and i % 11 == 0:
            lines.append(t + "Some warning about the cache")
        else:
            lines.append(
                t + f"Decode batch [{i}], #running-req: 3, #token: 9, token usage: 0.01, cuda graph: False, "
                f"gen throughput (token/s): {i % 1000}.5, #queue-req: 0, "
            )
    return head + "\n".join(lines).encode() + b"\nINFO:     Shutting down\n[2026-03-14 14:00:00] tail"


@pytest.mark.slow
def test_bulk_path_equals_per_line_on_serving_log() -> None:
    data = _serving_log(20_000)
    ref, ref_gens = _per_line_summary(data, 1 << 16)
    assert ref["state"] == "stopped" and ref["decode"]["count"] > 8000
    for step in (1 << 23, 1 << 16, 4099):
        assert _bulk_summary(data, step) == (ref, ref_gens), step


def test_text_that_is_not_an_sglang_log_stays_unknown(tmp_path) -> None:
    """Random text, binary junk: no launch is invented from lines that are not SGLang's."""
    import json as _json
    import subprocess
    import sys

    junk = tmp_path / "junk.log"
    junk.write_bytes(b"hello world\n\x00\xff not a log\nsome other program's output\n")
    out = subprocess.run(
        [sys.executable, "-m", "eagletui", "parse", "--json", str(junk)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = _json.loads(out)
    assert data["state"] == "unknown" and data["phase"] is None and data["phases"] == []
