"""Bad profiles are refused with a location; secrets in args never leave the machine in clear."""

from __future__ import annotations

import pytest

from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.model import ProfileError, redact_argv
from eagletui.core.profile.redact import REDACTED


def err(text: str) -> ProfileError:
    with pytest.raises(ProfileError) as info:
        parse_profile(text, "p.toml")
    return info.value


def test_port_cannot_be_a_toggle() -> None:
    e = err('[[toggles]]\narg = "port"\nmin = 1\nmax = 2\n')
    assert "--port cannot be a toggle" in str(e) and e.line == 2


def test_same_flag_twice_in_two_spellings() -> None:
    e = err("[server.args]\ntp-size = 8\ntp_size = 4\n")
    assert "given twice" in str(e) and e.path == "p.toml" and e.line == 3


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[[toggles]]\nenv = "NCCL_ALGO"\nchoices = "Ring"\n', "choices must be a list"),
        ('[[toggles]]\narg = "speculative-num-steps"\nmin = "1"\nmax = 8\n', "min must be a number"),
        ('[[toggles]]\nenv = "X"\ntype = "bool"\nhelp = 3\n', "help must be a string"),
        ("[server.args]\nfoo = [{a = 1}]\n", "list items must be plain values"),
        ('[server.env]\n"BAD NAME" = "1"\n', "unsafe environment variable name"),
    ],
)
def test_bad_toggle_and_arg_values(toml: str, message: str) -> None:
    assert message in str(err(toml))


def test_metacharacters_stay_one_argv_item() -> None:
    prof = parse_profile('[server.args]\nchat-template = "$(rm -rf ~); `x` | y > z"\n', "p.toml")
    argv = prof.argv()
    i = argv.index("--chat-template")
    assert argv[i + 1] == "$(rm -rf ~); `x` | y > z"


def test_api_key_is_redacted_in_snapshot_and_argv_copies() -> None:
    prof = parse_profile('[server.args]\napi-key = "sk-verysecret123"\ntp = 8\n', "p.toml")
    assert prof.snapshot()["args"]["--api-key"] == REDACTED
    assert "sk-verysecret123" in prof.argv()  # the real launch still gets it
    shown = redact_argv(prof.argv())
    assert "sk-verysecret123" not in shown and REDACTED in shown
    assert redact_argv(["x", "--api-key=abc", "--tp", "8"]) == ["x", f"--api-key={REDACTED}", "--tp", "8"]


# ----------------------------------------------------------------- issue 11 item 8: types and ranges


@pytest.mark.parametrize(
    ("toml", "where", "message"),
    [
        # malformed TOML
        ('name = "x"\n[server]\nport = = 3\n', "p.toml:3:8", "invalid TOML"),
        # wrong types
        ("[server]\nruns_dir = 5\n", "p.toml:2:1", "server.runs_dir must be str, got int"),
        ('[server]\nruns_dir = ["a", "b"]\n', "p.toml:2:1", "server.runs_dir must be str, got list"),
        ('[server]\nruns_dir = "/a"\nlog_dir = "/b"\n', "p.toml:3:1", "not both"),
        ("name = 3\n", "p.toml:1:1", "name must be str"),
        ('[server]\nready_timeout_s = "10"\n', "p.toml:2:1", "ready_timeout_s must be int or float"),
        # non-finite and out-of-range numbers
        ("[server]\nready_timeout_s = nan\n", "p.toml:2:1", "must be a finite number, got nan"),
        ("[server]\nready_timeout_s = inf\n", "p.toml:2:1", "must be a finite number, got inf"),
        ("[server]\nready_timeout_s = -1\n", "p.toml:2:1", "must be greater than 0"),
        ("[server]\nready_timeout_s = 0\n", "p.toml:2:1", "must be greater than 0"),
        ("\n[server]\n  port = 70000\n", "p.toml:3:3", "server.port must be at least 1 and at most 65535"),
        ("[bench]\ntimeout_s = -5.0\n", "p.toml:2:1", "bench.timeout_s must be greater than 0"),
        (
            "[bench]\nnum_prompts = 1000000000\n",
            "p.toml:2:1",
            "bench.num_prompts must be at least 1 and at most",
        ),
        ("[bench]\nconcurrency = 0\n", "p.toml:2:1", "bench.concurrency must be at least 1"),
        ("[bench]\ntemperature = nan\n", "p.toml:2:1", "finite"),
        ("[bench]\nseed = -1\n", "p.toml:2:1", "bench.seed must be at least 0"),
        ("[verdict]\nmin_speedup = 0\n", "p.toml:2:1", "verdict.min_speedup must be greater than 0"),
        ("[verdict]\nmax_ttft_ms = inf\n", "p.toml:2:1", "finite"),
        ("[server.args]\nmem-fraction-static = nan\n", "p.toml:2:1", "must be a finite number"),
        # toggles with impossible ranges
        (
            '[[toggles]]\narg = "speculative-num-steps"\nmin = 8\nmax = 1\n',
            "p.toml:3:1",
            "min 8 is above max 1",
        ),
        (
            '[[toggles]]\narg = "speculative-num-steps"\nmin = 1\nmax = 8\nstep = 0\n',
            "p.toml:5:1",
            "step must be positive",
        ),
        # one option set twice under two names (argparse would silently keep the last)
        ("[server.args]\ntp = 8\ntp_size = 4\n", "p.toml:3:1", "both set --tp-size"),
        ("[server.args]\ntp-size = 8\ntensor-parallel-size = 4\n", "p.toml:3:1", "both set --tp-size"),
        ('[server.args]\nmodel = "a"\nmodel-path = "b"\n', "p.toml:3:1", "both set --model-path"),
        # unknown keys, with a suggestion
        ("[server]\nready_timout_s = 5\n", "p.toml:2:1", "did you mean 'ready_timeout_s'?"),
        ("[bench]\nnum_prompt = 5\n", "p.toml:2:1", "did you mean 'num_prompts'?"),
        ('[target]\nhots = "x"\n', "p.toml:2:1", "did you mean 'host'?"),
    ],
)
def test_bad_values_name_file_line_col(toml: str, where: str, message: str) -> None:
    text = str(err(toml))
    assert text.startswith(where + ": "), text
    assert message in text, text


def test_sane_values_still_load() -> None:
    prof = parse_profile(
        "[server]\nready_timeout_s = 7200\nruns_dir = '/r'\n[server.args]\ntp = 8\n"
        "[bench]\nnum_prompts = 500\ntemperature = 0.7\ntimeout_s = 600\n[verdict]\nmin_speedup = 1.2\n",
        "p.toml",
    )
    assert prof.ready_timeout_s == 7200 and prof.runs_dir == "/r" and prof.bench.num_prompts == 500
    argv = prof.argv()
    assert argv[argv.index("--tp") + 1] == "8"
