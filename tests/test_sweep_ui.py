"""The Queue tab on the real app and the real simulator: reorder and skip before the start, `w` runs
the profile's sweep to the end, each row shows tok/s · accept · Δ %."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from eagletui.commands.demo import build_app, free_port
from eagletui.commands.profile import example_text
from eagletui.config import UserConfig
from eagletui.core.profile.load import load_profile
from eagletui.ui.widgets.queue import SweepQueueView, row_text, title_text
from eagletui.ui.widgets.tabbar import TabBar
from tests.test_ui_demo import pid_alive, quit_app

pytestmark = pytest.mark.slow


async def wait_for(pilot, predicate, timeout: float = 60.0, step: float = 0.1) -> bool:
    waited = 0.0
    while waited < timeout:
        if predicate():
            return True
        await pilot.pause(step)
        waited += step
    return predicate()


def sweep_profile(tmp_path: Path):
    text = example_text("demo-sweep")
    text = text.replace("port = 30017", f"port = {free_port()}", 1)
    text = text.replace('runs_dir = "~/.eagletui/runs"', f'runs_dir = "{tmp_path / "runs"}"', 1)
    text = re.sub(r"sim-time-scale = [0-9.]+", "sim-time-scale = 0.003", text, count=1)
    text = text.replace('repeats = "adaptive"', "repeats = 1", 1)
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    prof = load_profile(path)
    prof.args["--sim-speed"] = 20
    prof.bench = dataclasses.replace(prof.bench, num_prompts=4, concurrency=2, max_new_tokens=24, warmup=0)
    return prof


async def test_queue_tab_runs_the_sweep_with_skip_and_reorder(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLETUI_DATA_DIR", str(tmp_path / "data"))
    prof = sweep_profile(tmp_path)
    app = build_app(prof, UserConfig(record=False, history_path=str(tmp_path / "h.jsonl")), preflight=False)
    async with app.run_test(size=(160, 50)) as pilot:
        assert await wait_for(pilot, lambda: app.state.server_state == "ready", 60)
        await pilot.press("5")
        view = app.screen.query_one(SweepQueueView)
        assert view.display and view.has_focus
        assert "queue" in app.screen.query_one(TabBar).visible_tabs()
        q = view.queue
        assert q is not None and len(q.variants) == 4
        await pilot.press("down", "down", "less_than_sign")  # the third variant runs second
        assert q.order == [0, 2, 1, 3]
        await pilot.press("down", "down", "x")  # skip the last one
        assert q.variants[3].state == "skipped"
        await pilot.press("w")
        assert await wait_for(pilot, lambda: view.running, 10)
        assert await wait_for(pilot, lambda: not view.running, 180), [v.state for v in q.variants]
        assert [v.state for v in q.variants] == ["done", "done", "done", "skipped"]
        runs = {v.index: v.run_id for v in q.variants[:3]}
        launch_no = {i: int(r.split("-L")[1].split("-")[0]) for i, r in runs.items()}
        assert launch_no[0] < launch_no[2] < launch_no[1]  # the run order that was set
        text = str(view.render())
        assert "sweep 4/4" in text and "finished" in text
        assert re.search(r"tok/s · accept \d\.\d\d · Δ [+-]\d+\.\d%", text), text
        # the queue is the headless command's: saved 0600 with the results
        saved = json.loads(Path(q.path).read_text())
        assert [v["state"] for v in saved["variants"]] == ["done", "done", "done", "skipped"]
        assert oct(Path(q.path).stat().st_mode & 0o777) == "0o600"
        last_pid = app.workspace.run.pid
        await quit_app(pilot)
    assert not pid_alive(last_pid), "the sweep's last server outlived the demo"


def test_rows_for_each_state(tmp_path):
    from eagletui.core.profile.load import parse_profile
    from eagletui.session.sweep.queue import SweepQueue

    prof = parse_profile(example_text("demo-sweep"), "d.toml")
    q = SweepQueue.plan(prof.sweep, target="local", profile_path="d.toml")
    v0, v1, v2, v3 = q.variants
    v0.state, v0.repeats = "done", [{"tok_s": 100.0, "accept": 3.0}]
    v1.state, v1.repeats = "done", [{"tok_s": 110.0, "accept": 3.1}]
    v2.state, v2.phase = "launching", "load_target"
    v3.state, v3.failure_kind = "failed", "oom"
    assert row_text(q, 0).endswith("done  100.0 tok/s · accept 3.00 · baseline")
    assert row_text(q, 1).endswith("110.0 tok/s · accept 3.10 · Δ +10.0%")
    assert row_text(q, 2, phase_eta=75).endswith("launching (load_target, launch ETA 1:15)")
    assert row_text(q, 3).endswith("failed (oom)")
    assert title_text(q, True).startswith("sweep 3/4 · 2–6 runs (adaptive) · running · ETA")
    assert title_text(None, False).startswith("no sweep")
