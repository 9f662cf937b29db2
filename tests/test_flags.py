"""Version-dependent flag spellings are caught before a launch is wasted on argparse."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagletui.commands.demo import write_demo_profile
from eagletui.core.profile.load import load_profile
from eagletui.core.servers.flags import check_flags, parse_version
from eagletui.core.timings import FAST
from eagletui.workspace import Workspace
from eagletui.workspace.errors import WorkspaceError


def test_parse_version_variants() -> None:
    assert parse_version("0.5.23") == (0, 5, 23)
    assert parse_version("sglang 0.4.10rc1") == (0, 4, 10)
    assert parse_version("0.5.5.post1") == (0, 5, 5)
    assert parse_version(None) is None and parse_version("unknown") is None


@pytest.mark.parametrize(
    ("flag", "version", "error", "warning"),
    [
        ("--cuda-graph-max-bs", "0.5.23", "removed in sglang 0.5.20", None),
        ("--stream-output", "0.5.23", "use --incremental-streaming-output", None),
        # the real wheels' parsers (eagletui/data/sglang-flags): 0.5.19 is the last with --stream-output
        ("--stream-output", "0.5.22", "removed in sglang 0.5.20", None),
        ("--stream-output", "0.5.19", None, "prefer --incremental-streaming-output"),
        ("--cuda-graph-bs", "0.5.23", "use --cuda-graph-bs-decode", None),
        ("--cuda-graph-max-bs", "0.5.16", None, "deprecated since sglang 0.5.14"),
        ("--cuda-graph-max-bs", "0.5.13", None, None),
        ("--cuda-graph-max-bs-decode", "0.5.13", "does not exist before sglang 0.5.14", None),
        ("--cuda-graph-max-bs-decode", "0.5.23", None, None),
        (
            "--enable-flashinfer-allreduce-fusion",
            "0.5.21",
            None,
            "prefer --flashinfer-allreduce-fusion-backend",
        ),
        ("--tp", "0.3.0", None, None),
    ],
)
def test_check_flags(flag: str, version: str, error: str | None, warning: str | None) -> None:
    errors, warnings = check_flags([flag], version)
    assert (error in errors[0]) if error else not errors
    assert (warning in warnings[0]) if warning else not warnings


def test_unknown_version_checks_nothing() -> None:
    assert check_flags(["--cuda-graph-max-bs"], None) == ([], [])


@pytest.mark.parametrize(
    ("flag", "match"),
    [
        # the host's own parser (here the simulator's) says which flags exist; argparse's rule names the
        # closest spelling
        ("--speculative-num-stepz", r"--speculative-num-stepz \(did you mean --speculative-num-steps\?\)"),
    ],
)
async def test_preflight_refuses_a_flag_before_launch(tmp_path: Path, flag: str, match: str) -> None:
    prof = load_profile(write_demo_profile(tmp_path, time_scale=0.004))
    prof.args[flag] = 32
    events = []
    ws = Workspace(prof, events.append, target="local", preflight=True, timings=FAST)
    await ws.connect()
    try:
        with pytest.raises(WorkspaceError, match=match):
            await ws.launch()
        assert ws.server_version == "0.5.23"
        assert ws.run is None
        assert not any(e.type == "launch_started" for e in events)
    finally:
        await ws.close(stop_server=True)


async def test_ui_preflight_falls_back_to_the_real_0_5_23_table(tmp_path: Path) -> None:
    """sglang is not importable here, so its parser cannot be asked: the bundled real table decides,
    with argparse's rule (``--tp`` passes as ``--tp-size``, ``--pp`` is ambiguous)."""
    prof = load_profile(write_demo_profile(tmp_path, time_scale=0.004))
    prof.command = ("{python}", "-m", "sglang.launch_server")
    prof.args = {
        "--model-path": "m",
        "--tp": 8,
        "--pp": 2,
        "--stream-output": True,
        "--reasoning-parser": "kimi-k2",
    }
    events = []
    ws = Workspace(prof, events.append, target="local", preflight=True, timings=FAST)
    await ws.connect()
    try:
        with pytest.raises(WorkspaceError) as ei:
            await ws.launch()
        msg = str(ei.value)
        assert "flags: ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size" in msg
        assert "flags: the server does not accept --stream-output (use --incremental-streaming-output)" in msg
        assert "sglang 0.5.23's flags (the newest shipped: the server's version is unknown)" in msg
        assert "invalid choice for --reasoning-parser: 'kimi-k2' (did you mean 'kimi_k2'?" in msg
        assert "--tp" not in msg.replace("--tp-size", "")
        notice = next(e for e in events if e.type == "notice" and e.source == "preflight")
        assert "--pp" in notice.message
    finally:
        await ws.close(stop_server=True)


def test_unknown_flags_without_a_parser_refuses_nothing() -> None:
    from eagletui.remote.known_flags import unknown_flags

    assert unknown_flags(["--anything"], None) == []
    # argparse's rule: a unique prefix is accepted, an unknown spelling is refused
    assert unknown_flags(["--tp", "--prot"], {"--tp-size", "--port"}) == [
        "the server does not accept --prot (did you mean --port?)"
    ]


def test_host_answer_keeps_parser_order_and_abbrev_rule() -> None:
    from eagletui.remote.known_flags import table_from_answer

    t = table_from_answer(
        'noise\n{"flags": ["--pp-size", "--pp-max", "--tp-size"], "allow_abbrev": false, "choices": {"--pp-max": [1, 2]}}'
    )
    assert t is not None and t.options == ("--pp-size", "--pp-max", "--tp-size") and not t.allow_abbrev
    assert t.bad_choices("--pp-max", 3) == "invalid choice for --pp-max: '3' (choose from 1, 2)"
    assert t.bad_choices("--pp-max", 2) is None
    assert table_from_answer('{"error": "ImportError: no torch"}') is None
    assert table_from_answer("not json") is None
