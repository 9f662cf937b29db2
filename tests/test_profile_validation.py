"""Bad profiles are refused with a location; secrets in args never leave the machine in clear."""

from __future__ import annotations

import pytest

from eagletui.core.profile import REDACTED, ProfileError, parse_profile, redact_argv


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
