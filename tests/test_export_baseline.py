"""``eagletui export --baseline SESSION:RUN``: every run also compared with a run of another session,
with the like-for-like guard; without the flag the export is unchanged."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from eagletui import cli
from eagletui.core import events as ev
from eagletui.session.record import Recorder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "sessions" / "example-demo.jsonl"
DEMO = ROOT / "sessions" / "demo-eagle3.jsonl"


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGLETUI_CONFIG_DIR", str(tmp_path / "config"))


def _export(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = cli.main(["export", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _tp4(path: Path) -> Path:
    cfg = {"target": "local", "model": "moonshotai/Kimi-K2.5", "tp": 4, "args": {}}
    with Recorder(path, target="local", profile_name="old") as rec:
        rec.write(ev.LaunchStarted(launch=1, target="local", config=cfg, wall=1.8e9, mono=1.0))
        rec.write(
            ev.BenchmarkResult(bench=1, launch=1, output_throughput=200.0, requests=6, wall=1.8e9, mono=2.0)
        )
    return path


def test_json_compares_every_run_with_the_other_sessions_run(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _export(capsys, str(DEMO), "--format", "json", "--baseline", f"{EXAMPLE}:1")
    assert rc == 0, err
    doc = json.loads(out)
    ext = doc["external_baseline"]
    assert ext["session"] == "example-demo" and ext["run"] == 1 and ext["tok_s"] > 0
    assert doc["baseline"] == 1  # the session's own baseline is kept
    for run in doc["runs"]:
        vs = run["vs_baseline"]
        assert vs["comparable"] is True and vs["reasons"] == []
        want = (run["tok_s"]["mean"] / ext["tok_s"] - 1) * 100
        assert vs["delta_pct"] == pytest.approx(want)
    assert "not like for like" not in err


@pytest.mark.slow
def test_not_like_for_like_is_warned_and_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _tp4(tmp_path / "old.jsonl")
    rc, out, err = _export(capsys, str(DEMO), "--format", "json", "--baseline", f"{old}:1")
    assert rc == 0, err
    assert all(r["vs_baseline"]["reasons"] == ["different tp (8 vs 4)"] for r in json.loads(out)["runs"])
    assert "run 1: baseline old:1 is not like for like: different tp (8 vs 4)" in err
    rc, out, _ = _export(capsys, str(DEMO), "--format", "csv", "--baseline", f"{old}:1")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and all(r["vs_baseline_comparable"] == "no" for r in rows)
    assert rows[0]["vs_baseline_reasons"] == "different tp (8 vs 4)"
    rc, out, _ = _export(capsys, str(DEMO), "--baseline", f"{old}:1")
    assert "## vs old:1" in out and "no: different tp (8 vs 4)" in out


def test_without_the_flag_nothing_changes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _export(capsys, str(DEMO), "--format", "json")
    doc = json.loads(out)
    assert "external_baseline" not in doc and all("vs_baseline" not in r for r in doc["runs"])
    rc, out, _ = _export(capsys, str(DEMO), "--format", "csv")
    assert "vs_baseline_comparable" not in out.splitlines()[0]


def test_a_bad_baseline_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _export(capsys, str(DEMO), "--baseline", f"{EXAMPLE}:9")
    assert rc == 2 and out == "" and "no run 9 in session example-demo" in err
    rc, out, err = _export(capsys, str(DEMO), "--baseline", "nosuchsession:1")
    assert rc == 2 and "no session 'nosuchsession'" in err
