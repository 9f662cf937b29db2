"""Profile validation, `eagletui profile init|check`, and pasted-command parsing."""

from __future__ import annotations

import json

import pytest

from eagletui.commands.profile import main
from eagletui.core.profile.launch import parse_launch_command
from eagletui.core.profile.load import load_profile, parse_profile
from eagletui.core.profile.model import ProfileError


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


def _kimi(tmp_path, replace=None, extra=""):
    from eagletui.commands.profile import example_text

    text = example_text("kimi")
    for old, new in (replace or {}).items():
        assert old in text
        text = text.replace(old, new)
    f = tmp_path / "k.toml"
    f.write_text(text + extra)
    return f, text + extra


def _line_of(text, needle, nth=0):
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    return hits[nth]


def test_check_accepts_the_shipped_profiles_and_names_expanded_prefixes(capsys):
    from importlib import resources

    for name in ("demo.toml", "kimi-k25-eagle3.toml"):
        path = resources.files("eagletui").joinpath("profiles", name)
        assert main(["check", str(path)]) == 0, capsys.readouterr()
    assert main(["check", str(resources.files("eagletui").joinpath("profiles", "kimi-k25-eagle3.toml"))]) == 0
    out = capsys.readouterr().out
    assert "flags: --tp is accepted as --tp-size (a unique prefix)" in out
    assert (
        "flags: 17 checked against sglang 0.5.23's flags (the newest shipped: the server's version is unknown)"
        in out
    )


def test_check_refuses_flags_sglang_refuses_with_location(tmp_path, capsys):
    f, text = _kimi(
        tmp_path,
        {"cuda-graph-max-bs-decode = 48": "cuda-graph-max-bs = 48", "tp = 8": "pp = 2"},
        '\n[[toggles]]\narg = "stream-output"\ntype = "bool"\n',
    )
    assert main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    pp = _line_of(text, "pp = 2")
    bs = _line_of(text, "cuda-graph-max-bs = 48")
    so = _line_of(text, 'arg = "stream-output"')
    assert f"error: {f}:{pp}:1: ambiguous option: --pp could match --pp-size" in out
    assert f"error: {f}:{bs}:1: ambiguous option: --cuda-graph-max-bs could match" in out
    # a toggle's flag counts too: the toggle would put it on the argv
    assert f"error: {f}:{so}:1: the server does not accept --stream-output" in out
    assert "3 error(s)" in out
    assert main(["check", str(f), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and [e["line"] for e in doc["errors"]] == sorted([pp, bs, so])


def test_check_refuses_a_toggle_with_an_empty_range(tmp_path, capsys):
    """Refused when the profile is loaded (core.profile validates ranges), located at the toggle's min."""
    f, text = _kimi(tmp_path, extra='\n[[toggles]]\nenv = "NCCL_NTHREADS"\ntype = "int"\nmin = 1\nmax = 0\n')
    assert main(["check", str(f)]) == 1
    res = capsys.readouterr()
    line = len(text.splitlines()) - 1  # min = 1 is the line before the last
    assert f"{f}:{line}:1: toggle NCCL_NTHREADS: min 1 is above max 0" in res.err
    assert ": ok (" not in res.out
    f2, text2 = _kimi(tmp_path, extra='\n[[toggles]]\nenv = "NCCL_NTHREADS"\nmin = 1\nmax = 8\nstep = 0\n')
    assert main(["check", str(f2)]) == 1
    res = capsys.readouterr()
    assert f"{f2}:{len(text2.splitlines())}:1: toggle NCCL_NTHREADS: step" in res.err + res.out


def test_check_and_init_help_explain_file_and_json(capsys):
    from eagletui.commands.profile import build_parser

    helps = {}
    for sub in ("check", "init"):
        with pytest.raises(SystemExit):
            build_parser().parse_args([sub, "--help"])
        helps[sub] = " ".join(capsys.readouterr().out.split())
    assert "file the profile TOML to check" in helps["check"]
    assert "file the profile TOML to write" in helps["init"]
    assert "--json print one JSON object" in helps["check"] and "Exit 1 on any error" in helps["check"]


def test_check_json_into_a_closed_pipe_exits_quietly(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    f, _ = _kimi(tmp_path)
    r, w = os.pipe()
    os.close(r)  # `| head` has gone before anything is written
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    try:
        res = subprocess.run(
            [sys.executable, "-m", "eagletui", "profile", "check", str(f), "--json"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=60,
        )
    finally:
        os.close(w)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr


def test_check_does_not_print_the_api_key(tmp_path, capsys):
    f, _ = _kimi(tmp_path, extra="")
    text = f.read_text().replace(
        "enable-metrics = true", 'enable-metrics = true\napi-key = "sk-live-abcdef123456"'
    )
    f.write_text(text)
    assert main(["check", str(f)]) == 0
    assert "sk-live-abcdef123456" not in capsys.readouterr().out


def test_check_refuses_values_outside_sglangs_choices(tmp_path, capsys):
    f, text = _kimi(
        tmp_path,
        {
            'reasoning-parser = "kimi_k2"': 'reasoning-parser = "kimi-k2"',
            'choices = ["auto", "trtllm", "mnnvl", "cutedsl"]': 'choices = ["auto", "nccl"]',
        },
    )
    assert main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    rp = _line_of(text, 'reasoning-parser = "kimi-k2"')
    ch = _line_of(text, 'choices = ["auto", "nccl"]')
    assert (
        f"error: {f}:{rp}:1: invalid choice for --reasoning-parser: 'kimi-k2' (did you mean 'kimi_k2'?" in out
    )
    assert (
        f"error: {f}:{ch}:1: invalid choice for --flashinfer-allreduce-fusion-backend: 'nccl' "
        "(choose from auto, trtllm, mnnvl, cutedsl)" in out
    )


def test_init_from_command_warns_about_flags_sglang_refuses(tmp_path, capsys):
    f = tmp_path / "pasted.toml"
    cmd = "python -m sglang.launch_server --model-path m --tp 8 --pp 2 --speculative-num-steps 3"
    assert main(["init", str(f), "--from-command", cmd]) == 0  # written anyway: the user fixes it there
    err = capsys.readouterr().err
    assert "ambiguous option: --pp could match --pp-size" in err and "--tp" not in err.replace(
        "--tp-size", ""
    )
    assert f"{f}:" in err


@pytest.mark.parametrize("example", ["demo", "demo-sweep"])
def test_simulator_examples_get_a_free_port_not_a_fixed_one(tmp_path, example):
    """Issue 20 item 22: two users on one machine running the packaged demo examples collided on the
    fixed ports 30000 / 30017; each written profile gets a port that is free on this machine."""
    import socket

    from eagletui.commands.profile import example_text

    fixed = parse_profile(example_text(example)).port
    # hold the fixed port as another user's server would
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            other.bind(("127.0.0.1", fixed))
            other.listen()
        except OSError:
            pass  # someone holds it already: the point stands
        f = tmp_path / f"{example}.toml"
        assert main(["init", str(f), "--example", example]) == 0
        port = load_profile(f).port
        assert port != fixed
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))  # free now


def test_check_refuses_a_value_outside_its_own_toggle_with_location(tmp_path, capsys):
    """Issue 31 item 8: the profile of run 1 on the real H200 (tests/fixtures/real-0.5.17-turn4-ui/c1.toml)
    sets num-draft-tokens = 6 under a toggle of min 2 / max 5; `profile check` said ok. The Tune tab would
    show a running value its toggle cannot step back to."""
    from pathlib import Path

    real = Path(__file__).parent / "fixtures" / "real-0.5.17-turn4-ui" / "c1.toml"
    assert main(["check", str(real)]) == 1
    out = capsys.readouterr().out
    assert (
        f"error: {real}:24:1: server.args.speculative-num-draft-tokens = 6 is outside its own toggle "
        "(line 59): 6 is above the maximum 5; widen the toggle or change the value" in out
    ), out
    assert main(["check", str(real), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(e["line"], e["col"]) for e in doc["errors"]] == [(24, 1)]
    # an env value, a value below the minimum, a choice the toggle does not list: the same rule
    f, text = _kimi(
        tmp_path,
        extra='\n[[toggles]]\nenv = "NCCL_NTHREADS"\ntype = "int"\nmin = 64\nmax = 512\n',
    )
    text = text.replace("[server.env]", '[server.env]\nNCCL_NTHREADS = "32"', 1)
    text = text.replace('speculative-algorithm = "EAGLE3"', 'speculative-algorithm = "EAGLE"', 1)
    f.write_text(text)
    assert main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    env = _line_of(text, 'NCCL_NTHREADS = "32"')
    assert f"{f}:{env}:1: server.env.NCCL_NTHREADS = '32' is outside its own toggle" in out, out
    assert "32 is below the minimum 64" in out
    algo = _line_of(text, 'speculative-algorithm = "EAGLE"')
    assert f"{f}:{algo}:1: server.args.speculative-algorithm = 'EAGLE' is outside its own toggle" in out, out
    # widened to hold its value, the same file is fine again
    fixed = tmp_path / "c1.toml"
    fixed.write_text(real.read_text().replace("min = 2\nmax = 5", "min = 2\nmax = 6"))
    assert main(["check", str(fixed)]) == 0, capsys.readouterr()


def test_init_seeds_each_toggle_range_with_the_commands_own_value(tmp_path, capsys):
    """A pasted command whose values lie outside the generated toggles' default ranges (the real run's
    --mem-fraction-static 0.3 under 0.5–0.95) gets ranges that hold them: init writes a file check accepts."""
    f = tmp_path / "pasted.toml"
    cmd = (
        "NCCL_MIN_NCHANNELS=64 python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path d --speculative-num-steps 10 --speculative-num-draft-tokens 32 "
        "--mem-fraction-static 0.3 --cuda-graph-max-bs-decode 4"
    )
    assert main(["init", str(f), "--from-command", cmd]) == 0
    assert "outside its own toggle" not in capsys.readouterr().err
    assert main(["check", str(f)]) == 0, capsys.readouterr()
    prof = load_profile(f)
    ranges = {t.name: (t.min, t.max) for t in prof.toggles if t.min is not None}
    assert ranges["--mem-fraction-static"] == (0.3, 0.95) and ranges["--speculative-num-steps"] == (1, 10)
    assert ranges["NCCL_MIN_NCHANNELS"] == (1, 64) and ranges["--cuda-graph-max-bs-decode"] == (4, 256)


def test_check_reports_syntax_errors_values_and_flags_in_one_run(tmp_path, capsys):
    """Issue 33 item 19: a TOML syntax error stopped the check, so a user fixed a file one stage per run
    (d26d01f printed only the first error here). Now: every bad line, then what reads without them."""
    f, text = _kimi(
        tmp_path,
        {
            "tp = 8": "pp = 2",
            "port = 30000": "port = 99999999",
            "num_prompts = 64\nconcurrency = 16": "num_prompts = eight\nconcurrency = [1, 2",
        },
    )
    assert main(["check", str(f)]) == 1
    cap = capsys.readouterr()
    both = cap.err + cap.out
    arr, eight = _line_of(text, "concurrency = [1, 2"), _line_of(text, "num_prompts = eight")
    port, pp = _line_of(text, "port = 99999999"), _line_of(text, "pp = 2")
    assert f"{f}:{arr}:" in both and f"{f}:{eight}:" in both and both.count("invalid TOML") == 2, both
    assert f"{f}:{port}:1: server.port must be at least 1" in both, both
    assert f"error: {f}:{pp}:1: ambiguous option: --pp" in both, both
    assert "4 error(s)" in cap.out
    # a broken [table] header: its keys would land in the table above, so only the syntax is said
    f.write_text(text.replace("[server.args]", "[server.args", 1))
    assert main(["check", str(f)]) == 1
    err = capsys.readouterr().err
    assert "Expected ']'" in err and "unknown key" not in err, err


def test_check_locates_each_broken_toggle_once_in_its_own_block(tmp_path, capsys):
    """Seen in the first hour after round 4: with the first toggle broken, a later toggle's error was
    reported twice, once at the [[toggles]] block before it (the broken one was left out, shifting the
    rest), and the count said 8 for 7 errors."""
    f, text = _kimi(
        tmp_path,
        {
            'choices = ["Ring", "Tree", "NVLS"]': 'choices = "Ring"',
            "min = 1\nmax = 32": "min = 40\nmax = 32",
        },
    )
    assert main(["check", str(f)]) == 1
    cap = capsys.readouterr()
    both = cap.err + cap.out
    algo = _line_of(text, 'choices = "Ring"')  # each error at its own key
    nch = _line_of(text, "min = 40")
    assert f"{f}:{algo}:1: toggle NCCL_ALGO: choices must be a list of values" in both, both
    assert both.count("toggle NCCL_MIN_NCHANNELS: min 40 is above max 32") == 1, both
    assert f"{f}:{nch}:1: toggle NCCL_MIN_NCHANNELS: min 40 is above max 32" in both, both
    assert "2 error(s)" in cap.out, cap.out
