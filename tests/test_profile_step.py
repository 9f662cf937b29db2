"""The step profiler end to end: Workspace.profile_step against the real simulator (a real process that
serves /start_profile and writes torch-format traces per rank), the ProfileCaptured event folded into the
run book, recorded and replayed, and the step bars beside the baseline run's."""

from __future__ import annotations

import asyncio

import pytest

from eagletui.commands.demo import free_port
from eagletui.core.events import Event, ProfileCaptured
from eagletui.core.profile.load import load_profile
from eagletui.core.runs.book import RunBook
from eagletui.core.timings import FAST
from eagletui.session.model import SessionModel
from eagletui.session.waits import wait_ready
from eagletui.workspace import Workspace
from tests.conftest_sim import sim_profile_toml


def _profile(tmp_path, port: int, extra: str = "") -> str:
    return sim_profile_toml(
        tmp_path, port, draft="lmsys/Kimi-K2.5-poor-EAGLE3", args='sim-host = "pcie-rtx6000"\n' + extra
    )


async def _profile_once(tmp_path, extra: str = "") -> tuple[ProfileCaptured, SessionModel]:
    profile = load_profile(_profile(tmp_path, free_port(), extra))
    model = SessionModel(target="local", profile=profile, learn_history=False)
    ws = Workspace(profile, model.dispatch, target="local", preflight=False, timings=FAST)
    await ws.connect()
    try:
        await ws.launch()
        assert await wait_ready(model, 60, FAST) == ("", "")
        ev = await ws.profile_step(num_steps=3, local_dir=str(tmp_path / "traces"), timeout=60)
    finally:
        await ws.close(stop_server=True)
        model.close()
    return ev, model


@pytest.mark.slow
def test_profile_step_on_pcie_preset_shows_communication_dominating(tmp_path):
    ev, model = asyncio.run(_profile_once(tmp_path))
    assert ev.error == "", ev.error
    assert len(ev.files) == 8  # one DECODE trace per tp rank
    s = ev.summary
    assert s["ranks"] == 8 and s["step_ms"] > 0
    assert s["steps"] == 3 and s["unit"] == "cycle"  # three decode cycles, as asked
    cats = s["categories"]
    assert set(cats) == {"communication", "gemm", "attention", "moe", "other"}
    assert cats["communication"] == max(cats.values())  # all-reduce over PCIe dominates the step
    run = model.runbook.runs[ev.launch]
    assert run.step_profile == s
    # recorded and replayed: the same run book state
    book = RunBook()
    book.apply(Event.from_dict(ev.to_dict()))
    assert book.runs[ev.launch].step_profile == s


def test_profile_step_without_a_server_is_a_clear_error(tmp_path):
    from eagletui.workspace.errors import WorkspaceError

    profile = load_profile(_profile(tmp_path, free_port()))
    ws = Workspace(profile, lambda e: None, target="local", preflight=False, timings=FAST)
    with pytest.raises(WorkspaceError, match="no server to profile"):
        asyncio.run(ws.profile_step())


@pytest.mark.slow
def test_trace_capture_headless_against_the_running_server(tmp_path, capsys):
    """``eagletui trace --capture local --profile P --json``: finds the running run of the profile, takes
    the profile through /start_profile, fetches every rank's DECODE trace and prints the JSON report."""
    import json

    from eagletui.commands import trace

    path = _profile(tmp_path, free_port())

    async def go() -> int:
        profile = load_profile(path)
        model = SessionModel(target="local", profile=profile, learn_history=False)
        ws = Workspace(profile, model.dispatch, target="local", preflight=False, timings=FAST)
        await ws.connect()
        try:
            await ws.launch()
            assert await wait_ready(model, 60, FAST) == ("", "")
            argv = ["--capture", "local", "--profile", path, "--steps", "3", "--out", str(tmp_path / "t")]
            return await asyncio.to_thread(trace.main, [*argv, "--json", "--timeout", "60"])
        finally:
            await ws.close(stop_server=True)
            model.close()

    rc = asyncio.run(go())
    out = capsys.readouterr()
    assert rc == 0, out.err
    rep = json.loads(out.out)
    assert len(rep["ranks"]) == 8 and rep["skew"] is not None
    # --steps 3 means three decode cycles (draft + verify + draft extend), prefill kept out
    for r in rep["ranks"]:
        assert r["decode"]["cycles"] == 3 and r["decode"]["kind"] == "spec", r["decode"]
        assert set(r["decode"]["parts"]) == {"draft", "verify", "draft_extend"}
        assert r["graph_kernels"] > 0 and r["decode"]["categories"]["attention"] > 0
    comm = rep["ranks"][0]["categories"]["communication"]
    assert comm["share"] == max(c["share"] for c in rep["ranks"][0]["categories"].values())
    assert len(list((tmp_path / "t").glob("*-DECODE.trace.json.gz"))) == 8


def test_trace_capture_without_a_running_server(tmp_path, capsys):
    from eagletui.commands import trace

    rc = trace.main(["--capture", "local", "--profile", _profile(tmp_path, free_port())])
    assert rc == 1 and "no running server" in capsys.readouterr().err
    assert trace.main(["--capture", "local"]) == 2
    assert trace.main([]) == 2


@pytest.mark.slow
def test_profile_step_without_a_run_dir_uses_a_private_host_dir(tmp_path):
    """Issue 20 item 6: a followed server has no run dir of ours; the traces went to the fixed
    /tmp/eagletui-profiles, a name another local user can create first. Now: a fresh 0700 dir."""
    import os
    import stat

    from eagletui.core.events import Notice

    async def go() -> tuple[ProfileCaptured, list[str], list[int]]:
        profile = load_profile(_profile(tmp_path, free_port()))
        model = SessionModel(target="local", profile=profile, learn_history=False)
        said: list[str] = []
        modes: list[int] = []

        def emit(e: Event) -> None:
            model.dispatch(e)
            if isinstance(e, Notice) and e.source == "profile":
                said.append(e.message)
                if "traces go to " in e.message:
                    d = e.message.split("traces go to ", 1)[1].split(" on the host", 1)[0]
                    modes.append(stat.S_IMODE(os.stat(d).st_mode))

        ws = Workspace(profile, emit, target="local", preflight=False, timings=FAST)
        await ws.connect()
        run_dir = ""
        try:
            await ws.launch()
            assert await wait_ready(model, 60, FAST) == ("", "")
            assert ws.run is not None
            run_dir, ws.run.run_dir = ws.run.run_dir, ""  # as for a server followed read-only
            ev = await ws.profile_step(num_steps=3, local_dir=str(tmp_path / "traces"), timeout=60)
        finally:
            if ws.run is not None and run_dir:
                ws.run.run_dir = run_dir  # the stop needs the run's record to prove the server ours
            await ws.close(stop_server=True)
            model.close()
        return ev, said, modes

    ev, said, modes = asyncio.run(go())
    assert ev.error == "", ev.error
    assert len(ev.files) == 8
    where = [m for m in said if "traces go to " in m]
    assert where and "/tmp/eagletui-profiles" not in where[0], said
    assert modes == [0o700]
    d = where[0].split("traces go to ", 1)[1].split(" on the host", 1)[0]
    assert not os.path.exists(d)  # removed after fetching
