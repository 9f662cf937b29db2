"""``eagletui export`` on real recordings: Markdown for a report, CSV, JSON (docs/export-json.md),
secrets gone from every format, files 0600; and the runs table's ``E`` key."""

from __future__ import annotations

import csv
import io
import json
import shutil
import stat
from pathlib import Path

import pytest

from eagletui import cli
from eagletui.session.format import read_session, write_session

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "sessions" / "example-demo.jsonl"
CRASH = ROOT / "tests" / "fixtures" / "sessions" / "crash-oom-capture.jsonl"

HF = "hf_" + "Qz8xLmN3pR7tV2wY5aB9cD4eF6gH1jK0"
API = "sk-" + "live-7Hq2Zr9Lw4Xm8Np3Kt6Vb1Yc5"


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGLETUI_CONFIG_DIR", str(tmp_path / "config"))


def _export(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = cli.main(["export", *argv])
    got = capsys.readouterr()
    return rc, got.out, got.err


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_markdown_of_the_example_is_a_report(capsys: pytest.CaptureFixture[str]) -> None:
    rc, md, _ = _export(capsys, str(EXAMPLE))
    assert rc == 0
    assert md.startswith("# eagletui session example-demo")
    lines = md.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| # | change vs baseline"))
    table = lines[head : head + 5]
    assert table[1].startswith("|---:|")
    assert all(row.count("|") == table[0].count("|") for row in table)  # a table that stays a table
    assert table[2].startswith("| 1 ★ | baseline | stopped |") and "227.7" in table[2]
    assert "--enable-flashinfer-allreduce-fusion on" in table[3] and "+4.9%" in table[3]
    assert "--speculative-algorithm unset" in table[4] and "+52.4%" in table[4]
    for n in (1, 2, 3):
        assert f"## Launch {n} on `local`" in md
    # the exact launch, environment first, in a fenced block
    assert "```sh\nNCCL_ALGO=Ring /" in md and "-m eagletui.sim --model-path moonshotai/Kimi-K2.5" in md
    assert "| load_target | 8.0 |" in md  # phase durations
    # #1 has no fusion, #3 (its only no-spec run) has: shown with that difference, never judged
    assert "- verdict: **unjudged**: unjudged: differs in --enable-flashinfer-allreduce-fusion (unset vs on)" in md
    assert "economics vs no-spec #3 at concurrency 4: speedup 0.69×" in md  # #2: like for like
    assert "spec run slower than no-spec #3" in md


def test_json_is_the_documented_document(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _export(capsys, str(EXAMPLE), "--format", "json")
    assert rc == 0
    doc = json.loads(out)
    assert doc["format"] == "eagletui-export" and doc["version"] == 2 and doc["baseline"] == 1
    assert doc["session"]["launches"] == 3 and doc["session"]["config_changes"] == 2
    r1, r2, r3 = doc["runs"]
    assert r1["baseline"] and r1["diff_text"] == "baseline" and r1["delta_pct"]["tok_s"] is None
    assert r2["diff_vs_baseline"] == {"arg:--enable-flashinfer-allreduce-fusion": [None, True]}
    assert r3["diff_vs_baseline"]["arg:--speculative-algorithm"] == ["EAGLE3", None]
    assert r3["delta_pct"]["tok_s"] == pytest.approx(52.4, abs=0.05) and r3["delta_significant"]["tok_s"]
    assert r1["tok_s"]["n"] == 1 and r1["accept_len"]["mean"] == pytest.approx(3.207, abs=1e-3)
    assert r1["ttft_ms"]["mean"] == pytest.approx(46.4, abs=0.05)
    assert r1["phases_s"]["load_target"] == 8.0 and r1["ready_after_s"] == pytest.approx(12.59, abs=0.01)
    assert r1["env"] == {"NCCL_ALGO": "Ring"} and r1["command"][1:3] == ["-m", "eagletui.sim"]
    assert r1["command_line"].startswith("NCCL_ALGO=Ring ")
    # economics: per-request tok/s (÷ concurrency 4) against the like-for-like no-spec run, #3
    e = r2["economics"]
    assert r2["economics_vs"] == 3 and r2["concurrency"] == 4 and e["concurrency"] == 4
    assert e["speedup"] == pytest.approx(r2["tok_s"]["mean"] / r3["tok_s"]["mean"], rel=1e-3)
    assert e["cycle_ms"] == pytest.approx(
        r2["accept_len"]["mean"] / (r2["tok_s"]["mean"] / 4) * 1000, rel=1e-3
    )
    assert e["pays"] is False and r3["economics"] is None  # no-spec: nothing to weigh
    # #1 (no fusion) vs #3 (fusion): the pair is shown with what differs and never judged
    assert r1["economics_vs"] == 3 and r1["economics"]["speedup"] is None
    assert r1["economics"]["differences"] == ["--enable-flashinfer-allreduce-fusion (unset vs on)"]
    assert r1["benchmarks"][0]["concurrency"] == 4 and r1["benchmarks"][0]["error"] is None
    # the demo recording carries no thresholds: only whether speculation pays (default 1×) is judged
    assert r1["verdict"] == "unjudged" and r2["verdict"] == "fail"


def test_csv_one_row_per_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs.csv"
    rc, stdout, err = _export(capsys, str(EXAMPLE), "--format", "csv", "-o", str(out))
    assert rc == 0 and stdout == "" and str(out) in err
    assert _mode(out) == 0o600
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["launch"] for r in rows] == ["1", "2", "3"]
    assert rows[0]["baseline"] == "yes" and rows[0]["speedup"] == "" and rows[0]["economics_vs"] == "3"
    assert rows[0]["verdict"] == "unjudged" and rows[1]["speedup"].startswith("0.6")
    assert rows[1]["diff_vs_baseline"] == "'--enable-flashinfer-allreduce-fusion on"  # formula-safe
    assert rows[2]["delta_tok_s_pct"].startswith("52.")
    assert rows[0]["env"] == "NCCL_ALGO=Ring" and "--speculative-algorithm EAGLE3" in rows[0]["command"]


def test_a_failed_launch_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _export(capsys, str(CRASH), "-f", "json")
    assert rc == 0
    [run] = json.loads(out)["runs"]
    assert run["outcome"] == "failed" and run["failure_kind"] == "oom"
    assert run["verdict"] == "fail" and run["reasons"][0].startswith("launch failed: out of GPU memory")
    assert run["phases_s"] and run["tok_s"]["mean"] is None and run["economics"] is None
    rc, md, _ = _export(capsys, str(CRASH))
    # issue 19: a launch that failed is never the (auto) baseline: there is none yet
    assert "| 1 | no baseline | failed |" in md and "- outcome: **failed** (oom" in md


def _leaky_recording(directory: Path) -> Path:
    """The example as an old eagletui (or a hand-made file) may have left it: keys in clear in the
    env, the argv, the config args and the server's args line."""
    header, events, _ = read_session(EXAMPLE)
    out = []
    for ev in events:
        d = ev.to_dict()
        if d["type"] == "launch_started":
            d["command"] = [*d["command"], "--api-key", API]
            d["config"]["env"] = {**d["config"]["env"], "HF_TOKEN": HF}
            d["config"]["args"] = {**d["config"]["args"], "--api-key": API}
        if d["type"] == "launch_detected":
            d["args"] = {**d["args"], "api_key": API}
        out.append(type(ev).from_dict(d))
    return write_session(directory / "leaky.jsonl", header, out)


@pytest.mark.parametrize("fmt", ["md", "csv", "json"])
def test_secrets_never_reach_an_export(tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    leaky = _leaky_recording(tmp_path)
    assert HF in leaky.read_text() and API in leaky.read_text()  # the test has something to catch
    out = tmp_path / f"report.{fmt}"
    out.write_text("old")
    out.chmod(0o644)  # an existing file is narrowed, not left readable
    rc, _, _ = _export(capsys, str(leaky), "--format", fmt, "-o", str(out))
    assert rc == 0 and _mode(out) == 0o600
    text = out.read_text()
    assert HF not in text and API not in text
    # the placeholder is shell-quoted in a command line (a pasted '***' cannot glob)
    assert any(f in text for f in ("HF_TOKEN='***'", "HF_TOKEN=***", '"HF_TOKEN": "***"'))
    assert any(f in text for f in ("--api-key '***'", '"--api-key": "***"'))
    assert "NCCL_ALGO=Ring" in text or '"NCCL_ALGO": "Ring"' in text  # the rest is untouched


def test_names_are_resolved_like_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sessions").mkdir()
    shutil.copy(CRASH, tmp_path / "sessions" / "20261201-0900-gpu-box.jsonl")
    monkeypatch.chdir(tmp_path)  # ./sessions is one of the places a name is looked up
    rc, out, _ = _export(capsys, "20261201", "-f", "json")
    assert rc == 0 and json.loads(out)["runs"][0]["failure_kind"] == "oom"
    rc, out, err = _export(capsys, "no-such-session")
    assert rc == 2 and out == "" and "no session 'no-such-session'" in err
    with pytest.raises(SystemExit) as exc:
        cli.main(["export", str(EXAMPLE), "--format", "xml"])
    assert exc.value.code == 2 and "invalid choice: 'xml'" in capsys.readouterr().err


@pytest.mark.slow
async def test_e_key_exports_the_runs_table(tmp_path: Path) -> None:
    from eagletui.commands import replay as replay_cmd
    from eagletui.config import UserConfig
    from eagletui.session.drivers import ReplayDriver
    from eagletui.ui.app import EagleApp

    cfg = UserConfig(record=False, sessions_dir=str(tmp_path / "sessions"))
    opened = replay_cmd.open_replay(
        replay_cmd.build_parser().parse_args([str(EXAMPLE), "--launch", "2"]), cfg
    )
    assert not isinstance(opened, str)
    _source, replayer = opened
    app = EagleApp(
        profile=None, target="local", driver=ReplayDriver(replayer), user_config=cfg, theme_name=None
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await pilot.press("E")
        await pilot.pause()
        out = tmp_path / "sessions" / "example-demo-export.md"
        assert out.exists() and _mode(out) == 0o600
        assert _mode(out.parent) == 0o700
        md = out.read_text()
        # what the runs table shows at this point of the replay: launches 1 and 2, not yet 3
        assert "## Launch 1" in md and "## Launch 2" in md and "## Launch 3" not in md
        assert any(str(out) in str(n.message) for n in app._notifications)
        await pilot.press("E")  # a second export does not overwrite the first
        await pilot.pause()
        assert (tmp_path / "sessions" / "example-demo-export-2.md").exists()


def test_the_index_context_holds_every_event_a_report_needs() -> None:
    """``eagletui export`` folds the index's context events only: a report type missing from them
    would silently drop a column."""
    from eagletui.session.export import REPORT_TYPES
    from eagletui.session.timeline import CONTEXT_TYPES

    assert REPORT_TYPES <= CONTEXT_TYPES
