"""`eagletui bench local --launch` end to end against the real simulator (a real process)."""

from __future__ import annotations

import json
import socket

import pytest

from eagletui.commands.bench import main
from eagletui.commands.demo import free_port as _free_port
from tests.conftest_sim import sim_profile_toml


def _profile(tmp_path, port: int, extra_args: str = "", speed: float = 20, tokens: int = 48) -> str:
    rest = f"[bench]\nnum_prompts = 6\nconcurrency = 3\nmax_new_tokens = {tokens}\nwarmup = 1"
    return sim_profile_toml(
        tmp_path, port, args="enable-metrics = true\n" + extra_args, rest=rest, speed=speed
    )


@pytest.mark.slow
def test_bench_local_launch_json_against_simulator(tmp_path, capsys):
    port = _free_port()
    # --sim-speed 1: a request's 48 tokens take about 60 ms; at 20 (3 ms) a loaded machine read each answer
    # in one go and every gap between tokens measured 0
    prof = _profile(tmp_path, port, speed=1)
    rc = main(["local", "--profile", prof, "--launch", "--repeats", "2", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    assert data["output_throughput"] > 0 and data["requests"] == 12 and data["failed"] == 0
    assert 2.0 < data["accept_length"] < 4.5  # sim default drafter ≈ 3.2
    assert set(data["ttft_ms"]) == {"mean", "median", "p90", "p99"} and data["itl_ms"]["mean"] > 0
    assert len(data["workload_fingerprint"]) == 64
    assert data["config"]["args"]["--speculative-algorithm"] == "EAGLE3"
    assert data["repeats"]["n"] == 2 and len(data["repeats"]["runs"]) == 2
    assert data["repeats"]["output_throughput"]["stdev"] is not None
    # the server we launched is stopped: nothing listens on the port any more
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_bench_unreachable_server_fails_cleanly(tmp_path, capsys):
    """Issue 20 item 9: no server at the port is said as such, with --launch suggested, and no
    request is fired (it used to report "6 request(s) failed: connection failed")."""
    prof = _profile(tmp_path, port := _free_port())
    rc = main(["local", "--profile", prof, "--json"])
    out = capsys.readouterr()
    assert rc == 3
    assert f"no server answers at port {port} on local" in out.err and "--launch" in out.err
    assert "request(s) failed" not in out.err
    data = json.loads(out.out)  # the JSON contract: a document with the error, never empty
    assert data["error"].startswith(f"no server answers at port {port}") and "requests" not in data


def test_bench_bad_profile(tmp_path, capsys):
    p = tmp_path / "bad.toml"
    p.write_text("[bench]\nbogus = 1\n")
    assert main(["local", "--profile", str(p)]) == 2
    assert "bad.toml:2" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_launch_that_fails_reports_the_phase_machines_verdict(tmp_path, capsys):
    """Readiness comes from the log (as on screen): a crash while loading is named, with its hint."""
    port = _free_port()
    env = '\n[server.env]\nEAGLETUI_SIM_FAIL = "oom-load"\n'
    rc = main(["local", "--profile", _profile(tmp_path, port, extra_args=env), "--launch", "--json"])
    out = capsys.readouterr()
    assert rc == 3, out.err
    assert "eagletui: server failed (oom)" in out.err and "hint:" in out.err
    assert "  phase load_target …" in out.err  # phase lines on stderr, in order, before the verdict
    # the JSON contract carries the failed launch (issue 18 item 7): kind, key line, hint, phase, exit
    doc = json.loads(out.out)
    f = doc["launch_failure"]
    assert f["stage"] == "launch" and f["kind"] == "oom" and f["phase"] == "load_target", f
    assert "OutOfMemoryError" in f["line"] and f["hint"] and f["exit_signal"] == 9, f
    assert "requests" not in doc and doc["error"].startswith("launch failed")
    assert doc["stop"]["ok"] is True  # nothing was left running
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.serial  # measures the simulator's speed: run last, alone
@pytest.mark.slow
def test_bench_vs_no_spec_on_pcie_preset_says_speculation_loses(tmp_path, capsys):
    """The one-command answer: spec run, relaunch without --speculative-*, economics. On the PCIe preset
    the all-reduce-bound verify makes EAGLE-3 slower than plain decoding.

    At ``--sim-speed 2``, not 20: at 20 a no-spec benchmark is ~0.1 s of emulated GPU time, so a loaded
    machine's scheduling delays (the same absolute delay on either side) set the ratio: it measured
    0.54, 0.88 and 1.06 (a failure) at load 11-12 for a true ~0.72. At 2 the emulated time is ten times
    what those delays add, and the same load measured 0.69 and 0.77."""
    port = _free_port()
    prof = _profile(tmp_path, port, 'sim-host = "pcie-rtx6000"', speed=2)
    rc = main(["local", "--profile", prof, "--vs-no-spec", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    assert data["config"]["args"]["--speculative-algorithm"] == "EAGLE3"
    nospec = data["no_spec"]
    assert not any(k.startswith("--speculative-") for k in nospec["config"]["args"])
    assert nospec["config"]["args"]["--tp"] == 8 and nospec["accept_length"] is None
    econ = data["economics"]
    assert set(econ) >= {
        "speedup",
        "accept_len",
        "cycle_ms",
        "baseline_step_ms",
        "break_even_accept_len",
        "needed_cycle_ms",
    }
    assert econ["speedup"] < 1.0 and econ["break_even_accept_len"] > econ["accept_len"]
    assert econ["needed_cycle_ms"] < econ["cycle_ms"] and econ["concurrency"] == 3
    # issue 19: a break-even beyond what steps 3 / topk 1 can accept (4) is said to be out of reach,
    # never named as a goal. On this preset it sits near 4.5, so a run measured on a loaded 2-core
    # machine can land either side of 4: the rule is checked on whichever side it landed.
    assert econ["max_accept"] == 4
    assert econ["break_even_reachable"] is (econ["break_even_accept_len"] <= econ["max_accept"])
    if not econ["break_even_reachable"]:
        assert "is out of reach. At most 4 tokens per verify" in econ["sentence"]
        assert "needs accept ≥" not in econ["sentence"]
    else:
        assert "out of reach" not in econ["sentence"]
    assert "relaunching without the speculative flags" in out.err
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_bench_vs_no_spec_needs_a_spec_profile(tmp_path, capsys):
    p = tmp_path / "plain.toml"
    p.write_text('name = "plain"\n[server.args]\nmodel-path = "m"\n')
    assert main(["local", "--profile", str(p), "--vs-no-spec"]) == 2
    assert "--speculative-algorithm" in capsys.readouterr().err


@pytest.mark.serial  # measures the simulator's speed: run last, alone
@pytest.mark.slow
def test_bench_vs_no_spec_on_h200_nvlink_says_speculation_pays(tmp_path, capsys):
    """Requests long enough that the decode, not the prefill and the TTFT, makes the aggregate (issue 32:
    48 tokens a request gave +3 %, within the noise, while the decode itself ran twice as fast)."""
    rc = main(
        [
            "local",
            "--profile",
            _profile(tmp_path, _free_port(), 'sim-host = "h200-nvlink"', speed=4, tokens=256),
            "--vs-no-spec",
            "--json",
        ]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    econ = json.loads(out.out)["economics"]
    assert econ["speedup"] > 1.0 and econ["break_even_accept_len"] < econ["accept_len"]
    assert econ["call"] == "pays" and ": pays. Accept" in econ["sentence"], econ["sentence"]
    row = econ["by_concurrency"][0]
    assert row["steady"]["source"] == "the benchmark's ITL" and row["steady"]["agrees"] is True


@pytest.mark.serial  # measures the simulator's speed: run last, alone
@pytest.mark.slow
def test_bench_vs_no_spec_over_several_concurrencies(tmp_path, capsys):
    """Economics per concurrency both runs measured, and where speculation stops paying (None: it pays
    at every concurrency measured on the NVLink preset)."""
    # --sim-speed 0.5: a no-spec step of 4.8 ms, long beside what a loaded machine adds per token (the
    # client's and the simulator's Python), which both sides pay per token: at 4 and at 2 (1.2 ms steps)
    # that overhead turned the 1.5x win into a loss beside another suite
    prof = _profile(tmp_path, _free_port(), 'sim-host = "h200-nvlink"', speed=0.5)
    rc = main(["local", "--profile", prof, "--vs-no-spec", "--concurrency", "2,1", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    assert [c["concurrency"] for c in data["by_concurrency"]] == [1, 2]
    assert [c["concurrency"] for c in data["no_spec"]["by_concurrency"]] == [1, 2]
    econ = data["economics"]
    assert [p["concurrency"] for p in econ["points"]] == [1, 2]
    assert all(p["speedup"] > 1.0 for p in econ["points"]) and econ["crossover"] is None
    assert "Pays at every concurrency measured, 1–2." in econ["sentence"]


def test_bench_concurrency_list_is_checked(tmp_path, capsys):
    assert main(["local", "--profile", _profile(tmp_path, 1), "--concurrency", "4,x"]) == 2
    assert main(["local", "--profile", _profile(tmp_path, 1), "--concurrency", "0"]) == 2


def _baseline_recording(path, *, tp: int, spec: bool = False, tok: float = 50.0):
    """An earlier session's recording: one launch of the sim's model, benchmarked at concurrency 3."""
    from eagletui.core import events as ev
    from eagletui.session.record import Recorder

    args = {"--speculative-algorithm": "EAGLE3"} if spec else {}
    cfg = {"target": "local", "model": "moonshotai/Kimi-K2.5", "tp": tp, "args": args}
    with Recorder(path, target="local", profile_name="old") as rec:
        rec.write(ev.LaunchStarted(launch=1, target="local", config=cfg, wall=1.8e9, mono=1.0))
        rec.write(ev.ServerReady(launch=1, wall=1.8e9 + 1, mono=2.0))
        rec.write(
            ev.BenchmarkStarted(bench=1, launch=1, workload={"concurrency": 3}, wall=1.8e9 + 2, mono=3.0)
        )
        rec.write(
            ev.BenchmarkResult(bench=1, launch=1, output_throughput=tok, requests=6, wall=1.8e9 + 3, mono=4.0)
        )
    return path


def test_bench_baseline_errors_before_connecting(tmp_path, capsys):
    prof = _profile(tmp_path, _free_port())
    assert main(["local", "--profile", prof, "--baseline", "no-colon"]) == 2
    assert "SESSION:RUN" in capsys.readouterr().err
    assert main(["local", "--profile", prof, "--baseline", "no-such-session-xyz:1"]) == 2
    assert "no session 'no-such-session-xyz'" in capsys.readouterr().err
    rec = _baseline_recording(tmp_path / "old.jsonl", tp=8)
    assert main(["local", "--profile", prof, "--baseline", f"{rec}:5"]) == 2
    assert "no run 5 in session old (runs: 1)" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_baseline_from_an_earlier_session_warns_when_not_like_for_like(tmp_path, capsys):
    """A no-spec tp=4 run of an earlier session as the baseline: Δ against it, the guard says the
    comparison is not like for like, and the economics show the pair unjudged."""
    rec = _baseline_recording(tmp_path / "old.jsonl", tp=4)
    prof = _profile(tmp_path, _free_port())
    rc = main(["local", "--profile", prof, "--launch", "--baseline", f"{rec}:1", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    b = json.loads(out.out)["baseline"]
    assert b["session"] == "old" and b["run"] == 1 and b["tok_s"] == 50.0
    assert b["delta_pct"] is not None and b["comparable"] is False
    assert b["reasons"] == ["different tp (8 vs 4)"]
    # shown with what differs, never judged (issue 32): no speedup, break-even or cycle model on it
    assert "economics" in b and "of no-spec old:1" in b["economics"]["sentence"]
    assert b["economics"]["unjudged"] == "unjudged: differs in tp (8 vs 4) from no-spec old:1"
    assert b["economics"]["speedup"] is None and b["economics"]["break_even_accept_len"] is None
    assert "not like for like: different tp (8 vs 4)" in out.err


@pytest.mark.slow
def test_headless_bench_runs_are_sessions_and_baselines(tmp_path, capsys):
    """Issue 20 item 21: a headless bench is recorded like a UI session: listed by 'eagletui sessions'
    and usable as --baseline SESSION:RUN (with --launch, and against a server already running)."""
    from eagletui.commands import sessions as sessions_cmd

    sessions = tmp_path / "sessions"
    port = _free_port()
    prof = _profile(tmp_path, port)
    rc = main(["local", "--profile", prof, "--launch", "--json", "--record", str(sessions)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    first = json.loads(out.out)["session"]
    assert first["run"] == 1 and "session recorded to" in out.err
    assert sessions_cmd.main([str(sessions), "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["launches"] == 1 and listed["best_tok_s"] > 0
    # the recorded run is a baseline for the next headless run
    rc = main(
        ["local", "--profile", prof, "--launch", "--json", "--record", str(sessions),
         "--baseline", f"{sessions / (first['name'] + '.jsonl')}:1"]
    )  # fmt: skip
    out = capsys.readouterr()
    assert rc == 0, out.err
    doc = json.loads(out.out)
    assert doc["baseline"]["run"] == 1 and doc["baseline"]["comparable"], doc["baseline"]


@pytest.mark.slow
def test_headless_bench_of_a_server_it_did_not_launch_is_recorded_as_run_1(tmp_path, capsys):
    import subprocess

    from eagletui.core.profile.load import load_profile

    port = _free_port()
    prof = _profile(tmp_path, port)
    # started by hand, as a user would: eagletui has no run of it
    sim = subprocess.Popen(load_profile(prof).argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import asyncio
        import time

        from eagletui.bench.probe import no_server_answer

        deadline = time.monotonic() + 60
        while asyncio.run(no_server_answer(f"http://127.0.0.1:{port}", timeout=2)) is not None:
            assert time.monotonic() < deadline and sim.poll() is None
            time.sleep(0.3)
        sessions = tmp_path / "sessions"
        rc = main(["local", "--profile", prof, "--json", "--record", str(sessions)])
        out = capsys.readouterr()
        assert rc == 0, out.err
        doc = json.loads(out.out)
        assert doc["session"]["run"] == 1
        from eagletui.session.baseline import load_run

        run = load_run(f"{sessions / (doc['session']['name'] + '.jsonl')}:1", [sessions]).run
        assert run.good_results and run.config.get("external") is True
    finally:
        sim.terminate()
        sim.wait(10)


@pytest.mark.serial  # measures the simulator's speed: run last, alone
@pytest.mark.slow
def test_bench_vs_no_spec_runs_no_spec_again_until_a_point_leaves_its_noise(tmp_path, capsys):
    """Issue 32: a benchmark long enough for the band it needs. A drafter near break-even on the NVLink
    preset: two runs a side leave +10–20 % inside its band; the no-spec server, still up, runs again
    where more runs of that side can tell (within --decide-within), and what stays open says why."""
    prof = _profile(
        tmp_path, _free_port(), 'sim-host = "h200-nvlink"\nsim-draft-quality = 0.55', speed=4
    )
    rc = main(
        ["local", "--profile", prof, "--vs-no-spec", "--repeats", "2", "--decide-within", "30", "--json"]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    decide = data["decide"]
    assert decide["limit_s"] == 30 and decide["used_s"] <= 30 + 10
    row = data["economics"]["by_concurrency"][0]
    extra = decide["extra_no_spec_runs"].get("3", 0)
    # the no-spec side's runs at 3 are the repeats and the extra ones, in the table and in its summary
    assert row["nospec_tok_s"]["n"] == 2 + extra == data["no_spec"]["by_concurrency"][0]["runs"]
    if row["call"] == "within noise":
        assert decide["undecided"]["3"], decide  # and why it stayed open
    else:
        assert "3" not in decide["undecided"]
    if extra:
        assert "concurrency 3: within noise" in out.err and "no-spec run 3:" in out.err


def test_decide_within_is_checked(tmp_path, capsys):
    assert main(["local", "--profile", _profile(tmp_path, 1), "--decide-within", "-1"]) == 2
    assert "--decide-within must be" in capsys.readouterr().err


@pytest.mark.slow
def test_headless_bench_of_a_server_eagletui_launched_is_valid(tmp_path):
    """Issue 31 item 1 (real: 3 of 3 runs thrown away; simulator 2 of 2): ``bench`` without ``--launch``
    reattaches to the run eagletui launched and reads its log from the first line; the server-args line
    read back then is the launch itself, long past, not "the server restarted during the run"."""
    import asyncio
    import sys

    from eagletui.core.profile.load import load_profile
    from eagletui.core.timings import FAST
    from eagletui.remote.control import ServerControl
    from eagletui.remote.local import LocalTransport

    port = _free_port()
    # a benchmark of a few seconds: the log's backfill (the launch's own lines) lands inside it
    rest = "[bench]\nnum_prompts = 40\nconcurrency = 2\nmax_new_tokens = 64\nwarmup = 1"
    prof = sim_profile_toml(tmp_path, port, args="enable-metrics = true\n", rest=rest, speed=5)
    control = ServerControl(LocalTransport(), str(tmp_path / "runs"), python=sys.executable, timings=FAST)
    run = asyncio.run(control.launch(load_profile(prof), launch=1))
    try:
        log = tmp_path / "runs" / run.run_id / "server.log"
        import time

        deadline = time.monotonic() + 60
        while "ready to roll" not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-2000:]
            time.sleep(0.1)
        import os
        import subprocess

        # a process of its own, as a user runs it (in-process the backfill tends to win the race)
        env = {**os.environ, "EAGLETUI_TIMINGS": "fast"}
        argv = [sys.executable, "-m", "eagletui", "bench", "local", "--profile", prof, "--json", "--no-record"]
        out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        rc = out.returncode
        doc = json.loads(out.stdout)
        assert doc["invalid"] == [] and rc == 0, (doc["invalid"], out.stderr[-2000:])
        assert doc["output_throughput"] > 0 and doc["config"].get("external") is None  # the reattached run
        assert "stop" not in doc  # not launched by this command: left running
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) == 0
    finally:
        asyncio.run(control.stop(run))


@pytest.mark.slow
def test_headless_bench_on_a_full_disk_says_what_was_not_recorded_and_exits_non_zero(tmp_path, capsys):
    """Issue 33 item 10: with the disk full while recording, ``bench`` said "session recorded", exit 0,
    and the benchmark's result was missing from the file. A real 64 KiB tmpfs, nearly full."""
    import subprocess

    from eagletui.commands.bench import EXIT_NOT_RECORDED

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(sessions)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (sessions / "filler").write_bytes(b"x" * (56 * 1024))  # room for the header and a little more
        prof = _profile(tmp_path, _free_port())
        rc = main(["local", "--profile", prof, "--launch", "--json", "--record", str(sessions)])
        out = capsys.readouterr()
        assert rc == EXIT_NOT_RECORDED, out.err
        assert "incomplete:" in out.err and "could not be written" in out.err, out.err
        assert "session recorded to" not in out.err.replace("eagletui: session recorded to", "")
        assert json.loads(out.out)["recording"]["complete"] is False
    finally:
        subprocess.run(["umount", "-l", str(sessions)])
