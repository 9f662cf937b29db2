"""Secrets are redacted by what they are, everywhere they are shown, recorded or exported, and nothing
that merely has TOKEN in its name is lost (issue 11 item 7)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from eagletui.commands._ui import make_recorder
from eagletui.commands.demo import free_port
from eagletui.core import events as ev
from eagletui.core.phases.history import history_key
from eagletui.core.profile.launch import parse_launch_command
from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.model import Profile, config_diff
from eagletui.core.profile.redact import REDACTED, Redactor, is_secret_flag, is_secret_name
from eagletui.core.timings import FAST
from eagletui.remote.control import ServerControl
from eagletui.remote.local import LocalTransport
from eagletui.session.export import export_markdown, export_runs_csv
from eagletui.session.format import read_session

PY = sys.executable
KEY = "plainKey-4242-zz"  # no token shape: only its flag says it is secret
ADMIN = "adm1nPass-77"
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"

PROFILE = f"""
name = "sec"
[server]
command = "python3 -m sglang.launch_server --admin-api-key={ADMIN}"
port = 30001
[server.args]
model-path = "/models/m"
speculative-num-draft-tokens = 4
max-total-tokens = 65536
tokenizer-path = "/models/tok"
skip-tokenizer-init = true
api-key = "{KEY}"
[server.env]
HF_TOKEN = "{HF}"
NCCL_ALGO = "Tree"
"""


def _all_text(obj: object) -> str:
    return json.dumps(obj, default=str)


# ------------------------------------------------------------------------------ what is a secret


@pytest.mark.parametrize(
    ("flag", "secret"),
    [
        ("--api-key", True),
        ("--admin-api-key", True),
        ("--ssl-keyfile-password", True),
        ("--watermark-config", True),  # SGLang redacts it from its own launch command
        ("--api", True),  # argparse's unique-prefix rule: sglang reads this as --api-key
        ("--api-key=x", True),
        ("--ssl-keyfile", False),
        ("--speculative-num-draft-tokens", False),
        ("--max-total-tokens", False),
        ("--tokenizer-path", False),
        ("--skip-tokenizer-init", False),
        ("--speculative-token-map", False),
    ],
)
def test_secret_flags_come_from_the_real_table(flag: str, secret: bool) -> None:
    assert is_secret_flag(flag) is secret


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("HUGGING_FACE_HUB_TOKEN", True),
        ("OPENAI_API_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("WANDB_API_KEY", True),
        ("DB_PASSWORD", True),
        ("api_key", True),
        ("watermark_key_b", True),
        ("max_total_tokens", False),
        ("tokenizer_path", False),
        ("new_token_ratio", False),
        ("cached_token", False),
        ("MAX_NEW_TOKEN", False),
        ("NCCL_ALGO", False),
    ],
)
def test_secret_env_names_by_whole_words(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_no_event_field_is_taken_for_a_secret() -> None:
    import dataclasses

    fields = {f.name for cls in ev.ALL_EVENT_TYPES for f in dataclasses.fields(cls)}
    assert [f for f in fields if is_secret_name(f)] == []


# ------------------------------------------------------------------------------ argv and text


def test_a_bare_switch_keeps_the_next_argument() -> None:
    argv = [
        "python3",
        "--skip-tokenizer-init",
        "--tp",
        "8",
        "--enable-metrics",
        "--speculative-num-draft-tokens",
        "4",
    ]
    assert Redactor().argv(argv) == argv
    assert Redactor().text(" ".join(argv)) == " ".join(argv)


def test_secret_flag_value_forms() -> None:
    r = Redactor()
    out = r.argv(
        [
            "x",
            "--api-key",
            KEY,
            f"--admin-api-key={ADMIN}",
            "--api",
            "k3y-by-prefix",
            "--api-key",
            "--tp",
            "2",
        ]
    )
    assert out == [
        "x",
        "--api-key",
        REDACTED,
        f"--admin-api-key={REDACTED}",
        "--api",
        REDACTED,
        "--api-key",
        "--tp",
        "2",
    ]
    assert {KEY, ADMIN, "k3y-by-prefix"} <= r.secrets
    # and once learnt, a bare echo anywhere is scrubbed
    assert r.text(f"401 Invalid API key provided: {KEY}") == f"401 Invalid API key provided: {REDACTED}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "server_args=ServerArgs(tokenizer_path='/t', api_key='zzKEY99', max_total_tokens=5)",
            "server_args=ServerArgs(tokenizer_path='/t', api_key='***', max_total_tokens=5)",
        ),
        (
            '{"api_key": "zzKEY99", "speculative_num_draft_tokens": 4}',
            '{"api_key": "***", "speculative_num_draft_tokens": 4}',
        ),
        ("curl -H 'Authorization: Basic dXNlcjpwYXNz'", "curl -H 'Authorization: Basic ***'"),
        ("Bearer abc.def.ghi rejected", "Bearer *** rejected"),
        ("fetch https://bob:hunter22@host/x", "fetch https://bob:***@host/x"),
        (f"using {HF} for download", "using *** for download"),
        ("token: Zx9kQ2mP7vR4tY8wL1nB6cD3 accepted", "token: *** accepted"),
        (
            "#running-req: 3, #token: 1234, token usage: 0.05",
            "#running-req: 3, #token: 1234, token usage: 0.05",
        ),
        ("--max-total-tokens 4096 --tokenizer-path /tok", "--max-total-tokens 4096 --tokenizer-path /tok"),
        ("rid=0123456789abcdef0123456789abcdef token ids", "rid=0123456789abcdef0123456789abcdef token ids"),
        ("api_key=None admin_api_key=None", "api_key=None admin_api_key=None"),
    ],
)
def test_text(text: str, expected: str) -> None:
    assert Redactor().text(text) == expected


def test_echo_of_a_secret_learnt_from_the_log_is_scrubbed() -> None:
    r = Redactor()
    r.text("server_args=ServerArgs(api_key='zzKEY99')")
    assert r.text("Invalid API key provided: zzKEY99.") == "Invalid API key provided: ***."


# ------------------------------------------------------------------------------ the profile


def test_num_draft_tokens_change_can_be_applied() -> None:
    """The staged change must show as a pending diff (the app says 'no pending changes' otherwise)."""
    base = parse_profile(PROFILE)
    new = base.with_values({"arg:--speculative-num-draft-tokens": 8})
    diff = config_diff(base.snapshot(), new.snapshot())
    assert diff == {"arg:--speculative-num-draft-tokens": [4, 8]}
    assert new.argv()[new.argv().index("--speculative-num-draft-tokens") + 1] == "8"


def test_snapshot_hides_secrets_only() -> None:
    snap = parse_profile(PROFILE).snapshot()
    text = _all_text(snap)
    for secret in (KEY, ADMIN, HF):
        assert secret not in text
    assert snap["args"]["--speculative-num-draft-tokens"] == 4
    assert snap["args"]["--max-total-tokens"] == 65536
    assert snap["args"]["--tokenizer-path"] == "/models/tok"
    assert snap["args"]["--skip-tokenizer-init"] is True
    assert snap["args"]["--api-key"] == REDACTED
    assert snap["env"] == {"HF_TOKEN": REDACTED, "NCCL_ALGO": "Tree"}
    assert snap["command"][-1] == f"--admin-api-key={REDACTED}"


def test_eta_history_key_keeps_num_draft_tokens() -> None:
    a = history_key(parse_profile(PROFILE).snapshot())
    b = history_key(parse_profile(PROFILE).with_values({"arg:--speculative-num-draft-tokens": 8}).snapshot())
    assert '"--speculative-num-draft-tokens":"4"' in a and a != b


def test_pasted_command_switch_before_positional_model() -> None:
    cmd = parse_launch_command("sglang serve --trust-remote-code meta-llama/Llama-3.1-8B --tp 2")
    assert cmd.args["--trust-remote-code"] is True
    assert cmd.args["--model-path"] == "meta-llama/Llama-3.1-8B"


# ------------------------------------------------------------------------------ the host's run dir

SHOW_ARGV = "import json, sys; print('ARGV ' + json.dumps(sys.argv[1:]), flush=True)"


async def test_command_sh_runnable_and_private_run_json_redacted(tmp_path: Path) -> None:
    prof = Profile(
        command=(PY, "-c", SHOW_ARGV),
        python=PY,
        runs_dir=str(tmp_path / "runs"),
        workdir=str(tmp_path),
        port=39998,
        args={"--api-key": KEY, "--speculative-num-draft-tokens": 4, "--skip-tokenizer-init": True},
        env={"HF_TOKEN": HF, "NCCL_ALGO": "Tree"},
    )
    control = ServerControl(LocalTransport(), str(tmp_path / "runs"), python=PY, timings=FAST)
    run = await control.launch(prof, launch=1)
    rd = Path(run.run_dir)
    for _ in range(200):
        if (rd / "exit_code").exists():
            break
        await asyncio.sleep(0.05)
    sh = rd / "command.sh"
    assert stat.S_IMODE(sh.stat().st_mode) == 0o600
    for name in ("run.json", "command.json", "env.json", "pid"):
        assert stat.S_IMODE((rd / name).stat().st_mode) == 0o600, name
        text = (rd / name).read_text()
        assert KEY not in text and HF not in text, name
    run_json = json.loads((rd / "run.json").read_text())
    assert run_json["config"]["args"]["--speculative-num-draft-tokens"] == 4
    assert "--speculative-num-draft-tokens" in run_json["argv"] and "4" in run_json["argv"]
    # runnable: the real values reach the program
    res = subprocess.run(["sh", str(sh)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("ARGV "))
    args = json.loads(line[5:])
    assert args[args.index("--api-key") + 1] == KEY
    assert args[args.index("--speculative-num-draft-tokens") + 1] == "4"
    assert "--skip-tokenizer-init" in args


# ------------------------------------------------------------------------------ recordings and exports


def test_recording_scrubs_echoes_of_the_profile_key(tmp_path: Path) -> None:
    prof = parse_profile(PROFILE)
    cfg = SimpleNamespace(record=True, sessions_dir=str(tmp_path / "sessions"))
    rec = make_recorder(cfg, "box", prof)
    assert rec is not None
    rec.write(ev.LaunchStarted(launch=1, target="box", command=tuple(prof.argv()), config=prof.snapshot()))
    rec.write(ev.LogLine(text=f"ERROR: Invalid API key provided: {KEY}"))
    rec.write(ev.LogLine(text=f"admin key {ADMIN} rejected"))
    rec.write(ev.LogLine(text="server_args=ServerArgs(api_key='learntFromLog9', tp_size=2)"))
    rec.write(ev.Notice(message="echo: learntFromLog9"))
    rec.close()
    raw = rec.path.read_text()
    for secret in (KEY, ADMIN, HF, "learntFromLog9"):
        assert secret not in raw, secret
    assert stat.S_IMODE(rec.path.stat().st_mode) == 0o600
    _, events, _ = read_session(rec.path)
    launch = events[0]
    assert isinstance(launch, ev.LaunchStarted)
    assert launch.config["args"]["--speculative-num-draft-tokens"] == 4
    cmd = list(launch.command)
    assert cmd[cmd.index("--speculative-num-draft-tokens") + 1] == "4"
    assert cmd[cmd.index("--skip-tokenizer-init") + 1] != REDACTED


def test_exports_have_no_secret(tmp_path: Path) -> None:
    prof = parse_profile(PROFILE)
    events: list[ev.Event] = [
        ev.LaunchStarted(
            launch=1, target="box", command=tuple(prof.argv()), config={"args": dict(prof.args)}
        ),
        ev.LaunchDetected(args={"api_key": "lateKey-123", "tp_size": 2}, launch=1),
        ev.ServerFailed(launch=1, kind="auth", message="Invalid API key provided: lateKey-123"),
    ]
    md = export_markdown(events)
    export_runs_csv(events, tmp_path / "runs.csv")
    csv_text = (tmp_path / "runs.csv").read_text()
    for text in (md, csv_text):
        assert KEY not in text and "lateKey-123" not in text
        assert "--speculative-num-draft-tokens" in text


# ------------------------------------------------------------------------------ commands


def test_profile_check_prints_no_secret(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    p.write_text(PROFILE)
    for extra in ([], ["--json"]):
        res = subprocess.run(
            [PY, "-m", "eagletui", "profile", "check", str(p), *extra],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
        assert res.returncode == 0, res.stderr
        out = res.stdout + res.stderr
        for secret in (KEY, ADMIN, HF):
            assert secret not in out
        assert "--speculative-num-draft-tokens" in out and '"4"' in out


@pytest.mark.slow
def test_bench_launch_sends_the_api_key_and_prints_no_secret(tmp_path: Path, capsys) -> None:
    from eagletui.commands.bench import main

    port = free_port()
    p = tmp_path / "sim.toml"
    p.write_text(
        f"""
name = "simkey"
[target]
python = "{PY}"
workdir = "{tmp_path}"
[server]
command = ["{{python}}", "-m", "eagletui.sim"]
port = {port}
runs_dir = "{tmp_path}/runs"
ready_timeout_s = 60
[server.args]
model-path = "moonshotai/Kimi-K2.5"
tp = 8
speculative-algorithm = "EAGLE3"
speculative-draft-model-path = "lmsys/Kimi-K2.5-EAGLE3"
speculative-num-draft-tokens = 4
api-key = "{KEY}"
sim-time-scale = 0.003
sim-speed = 20
[bench]
num_prompts = 3
concurrency = 3
max_new_tokens = 16
warmup = 0
"""
    )
    rc = main(["local", "--profile", str(p), "--launch", "--json"])
    out = capsys.readouterr()
    assert KEY not in out.out and KEY not in out.err
    assert rc == 0, out.err
    data = json.loads(out.out)
    assert data["failed"] == 0 and data["requests"] == 3
    assert data["config"]["args"]["--api-key"] == REDACTED
    assert data["config"]["args"]["--speculative-num-draft-tokens"] == 4


def test_parse_output_has_no_key_from_the_server_args_line(tmp_path: Path, capsys) -> None:
    from eagletui.commands.parse import main

    real = Path("/work/shared/fixtures/sglang-0.5.17-h200/eagle3-cudagraph-serve-profile-sigterm.log")
    if not real.exists():
        pytest.skip("shared SGLang fixture not present")
    text = real.read_text(encoding="utf-8", errors="replace")
    assert "api_key=None" in text
    log = tmp_path / "server.log"
    log.write_text(text.replace("api_key=None", "api_key='parseKey-777'", 1))
    for extra in (["--json"], []):
        assert main([*extra, str(log)]) == 0
        out = capsys.readouterr().out
        assert "parseKey-777" not in out
    assert main(["--json", str(log)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["launch"]["args"]["api_key"] == REDACTED
    assert data["launch"]["args"]["tokenizer_path"] == "/tmp/sgw/tiny/target"


def test_argparse_usage_message_keeps_its_metavars() -> None:
    """SGLang's bad-flag error prints its usage: ``[--api-key API_KEY]`` holds no secret, and learning
    ``API_KEY`` as one would blank it out of every later ``OPENAI_API_KEY``."""
    real = Path("/work/shared/fixtures/sglang-0.5.17-h200/ambiguous-flag-pp.txt")
    usage = real.read_text(encoding="utf-8", errors="replace") if real.exists() else "[--api-key API_KEY]"
    r = Redactor()
    assert r.text(usage) == usage
    assert r.secrets == frozenset()
    assert r.text("export OPENAI_API_KEY_FILE=/x") == "export OPENAI_API_KEY_FILE=/x"
