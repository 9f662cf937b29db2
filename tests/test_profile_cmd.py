"""Profile validation, `eagletui profile init|check`, and pasted-command parsing."""

from __future__ import annotations

import json

import pytest

from eagletui.commands.profile import main
from eagletui.core.profile import ProfileError, load_profile, parse_launch_command, parse_profile


def test_bad_toml_has_location(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\n[server]\nport = = 3\n')
    with pytest.raises(ProfileError) as ei:
        load_profile(p)
    assert ei.value.line == 3 and ei.value.col is not None
    assert str(ei.value).startswith(f"{p}:3:")


def test_unknown_key_has_location():
    with pytest.raises(ProfileError) as ei:
        parse_profile('name = "x"\n\n[bench]\nnum_prompts = 4\nconcurency = 2\n', "f.toml")
    assert ei.value.line == 5 and ei.value.col == 1 and "concurency" in ei.value.message


def test_unsafe_env_name_rejected():
    with pytest.raises(ProfileError, match="unsafe environment variable name"):
        parse_profile('[server.env]\n"A;rm -rf" = "1"\n')
    with pytest.raises(ProfileError):
        parse_launch_command("BAD-NAME=1 python -m sglang.launch_server --tp 1")


def test_shell_metacharacters_stay_intact_in_argv():
    prof = parse_profile(
        '[server]\ncommand = "python -m sglang.launch_server"\n[server.args]\n'
        'model-path = "/m/$(whoami); rm -rf ~ | cat `id` && x > y"\n[server.env]\nA = "$HOME;ls"\n'
    )
    argv = prof.argv()
    i = argv.index("--model-path")
    assert argv[i + 1] == "/m/$(whoami); rm -rf ~ | cat `id` && x > y"
    assert prof.env["A"] == "$HOME;ls"


def test_parse_launch_command_forms():
    cmd = parse_launch_command(
        "$ NCCL_ALGO=Tree NCCL_PROTO=LL128 python3.12 -m sglang.launch_server \\\n"
        "  --model-path moonshotai/Kimi-K2.5 --tp 8 --trust-remote-code --port 31000 --host 0.0.0.0 \\\n"
        "  --mem-fraction-static=0.85 --cuda-graph-bs 1 2 4 --chat-template '{a; b}' --dist-timeout 0600"
    )
    assert cmd.env == {"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL128"}
    assert cmd.python == "python3.12" and cmd.command == ["{python}", "-m", "sglang.launch_server"]
    assert cmd.port == 31000 and cmd.host == "0.0.0.0"
    assert cmd.args["--tp"] == 8 and cmd.args["--trust-remote-code"] is True
    assert cmd.args["--mem-fraction-static"] == 0.85 and cmd.args["--cuda-graph-bs"] == [1, 2, 4]
    assert cmd.args["--chat-template"] == "{a; b}" and cmd.args["--dist-timeout"] == "0600"
    serve = parse_launch_command("env A=1 sglang serve --model-path m --speculative-num-steps=3")
    assert serve.command == ["sglang", "serve"] and serve.env == {"A": "1"}
    assert serve.args == {"--model-path": "m", "--speculative-num-steps": 3}


def test_init_from_command_writes_loadable_commented_profile(tmp_path, capsys):
    f = tmp_path / "mine.toml"
    cmd = (
        "NCCL_ALGO=Tree python -m sglang.launch_server --model-path m --tp 8 --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path d --cuda-graph-max-bs-decode 64 --x 'a;b|c' --port 31000"
    )
    assert main(["init", str(f), "--from-command", cmd]) == 0
    text = f.read_text()
    assert text.count("#") > 5
    prof = load_profile(f)
    assert prof.port == 31000 and prof.env == {"NCCL_ALGO": "Tree"}
    argv = prof.argv()
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    assert argv[argv.index("--x") + 1] == "a;b|c"
    keys = {t.key for t in prof.toggles}
    assert {"env:NCCL_ALGO", "arg:--speculative-num-steps", "arg:--cuda-graph-max-bs-decode"} <= keys
    # refuses to overwrite without --force
    assert main(["init", str(f)]) == 1
    assert "--force" in capsys.readouterr().err
    assert main(["init", str(f), "--force"]) == 0
    load_profile(f)


@pytest.mark.parametrize("example", ["demo", "kimi"])
def test_init_examples(tmp_path, example):
    f = tmp_path / f"{example}.toml"
    assert main(["init", str(f), "--example", example]) == 0
    prof = load_profile(f)
    assert prof.args["--speculative-algorithm"] == "EAGLE3"
    if example == "demo":
        assert "{sys_python}" in f.read_text()
    else:
        assert prof.args["--tp"] == 8 and prof.args["--trust-remote-code"] is True
        assert "--cuda-graph-max-bs-decode" in prof.args


def test_check_prints_argv(tmp_path, capsys):
    f = tmp_path / "k.toml"
    main(["init", str(f), "--example", "kimi"])
    capsys.readouterr()
    assert main(["check", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["argv"][-4:] == ["--host", "127.0.0.1", "--port", "30000"]
    bad = tmp_path / "bad.toml"
    bad.write_text("[bench]\nnope = 1\n")
    assert main(["check", str(bad)]) == 1
    assert "bad.toml:2:1" in capsys.readouterr().err
