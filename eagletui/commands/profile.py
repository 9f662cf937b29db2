"""``eagletui profile init|check``: get from a pasted launch command to a validated profile quickly.

The generated file is written as TOML text by hand so it can carry comments that explain each section
(tomli_w alone cannot write comments); every value still goes through tomli_w so quoting is always
right, and the result is re-parsed with :func:`load_profile` before it is written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from eagletui.commands._args import ArgumentParser
from eagletui.commands._stdout import write_stdout
from eagletui.core.profile.launch import LaunchCommand, default_toggles, parse_launch_command
from eagletui.core.profile.load import parse_profile
from eagletui.core.profile.model import ProfileError, is_secret
from eagletui.core.profile.redact import Redactor
from eagletui.core.servers.kinds import server_kind

EXAMPLES: dict[str, str] = {
    "demo": "demo.toml",
    "demo-slurm": "demo-slurm.toml",
    "demo-sweep": "demo-sweep.toml",
    "demo-crossover": "demo-crossover.toml",
    "demo-vllm": "demo-vllm.toml",
    "kimi": "kimi-k25-eagle3.toml",
}
#: Examples that run the bundled simulator on this machine: written with a free port, not a fixed one.
SIMULATOR_EXAMPLES = frozenset({"demo", "demo-sweep"})

_TEMPLATE_COMMAND = (
    "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1 "
    "--speculative-algorithm EAGLE3 --speculative-draft-model-path jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B "
    "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --enable-metrics"
)


def example_text(name: str) -> str:
    """The packaged example verbatim: ``{sys_python}`` stays a placeholder resolved when loaded."""
    return resources.files("eagletui").joinpath("profiles", EXAMPLES[name]).read_text(encoding="utf-8")


def _value(value: Any) -> str:
    """TOML for one value, arrays inline (tomli_w would spread them over lines)."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return tomli_w.dumps({"v": value}).strip()[len("v = ") :]


def _kv(key: str, value: Any, comment: str = "") -> str:
    line = tomli_w.dumps({key: 0}).strip()[: -len(" = 0")] + " = " + _value(value)
    return f"{line}  # {comment}" if comment else line


def render_profile(cmd: LaunchCommand, name: str, source: str = "") -> str:
    """Commented profile text for a parsed launch command."""
    out: list[str] = [
        f"# eagletui profile {name!r}, written by `eagletui profile init`.",
        "# Check it with `eagletui profile check FILE` (validates and prints the exact argv).",
        "# Values end up in an argv list and an env dict; nothing here is ever run through a shell.",
    ]
    if source:
        # The pasted command may carry tokens (HF_TOKEN=…, --api-key …): the comment never does.
        out.append("# From: " + Redactor().text(" ".join(source.split()))[:400])
    out += [
        _kv("name", name),
        "",
        "[target]",
        _kv("host", "local", '"local", or [user@]host[:port] / an ~/.ssh/config alias'),
        _kv("workdir", "~"),
        _kv("python", cmd.python, "interpreter on the target; {python} in server.command expands to it"),
        "",
        "[server]",
        _kv("kind", cmd.kind, "the server program: its log format, flags and benchmark API"),
        _kv("command", cmd.command),
        _kv("port", cmd.port or server_kind(cmd.kind).port),
        _kv("host", cmd.host or "127.0.0.1", "keep loopback on remote hosts: eagletui forwards the port"),
        _kv("runs_dir", "~/.eagletui/runs"),
        _kv("ready_timeout_s", 3600, "large checkpoints take minutes to load and capture"),
        *(
            [
                '# version = "0.5.17"   # the sglang release on the host: picks the flag table `profile check` uses'
            ]
            if cmd.kind == "sglang"
            else []
        ),
        "",
        "[server.args]",
        "# One key per server flag (without the leading --); true = bare flag, a list = several values.",
    ]
    for flag, value in cmd.args.items():
        out.append(_kv(flag[2:], value))
    out += ["", "[server.env]"]
    for key, value in cmd.env.items():
        out.append(
            _kv(
                key,
                value,
                "looks like a secret: consider exporting it instead" if is_secret(key, value) else "",
            )
        )
    out += [
        "",
        '# Tunables shown in the TUI. env = … or arg = …; type choice (choices, "" = unset),',
        "# bool, int/float (min/max/step) or str.",
    ]
    for t in default_toggles(cmd.args, cmd.env, cmd.kind):
        out += ["", "[[toggles]]"]
        out += [_kv(k, v) for k, v in t.items()]
    out += [
        "",
        "[bench]",
        _kv("runner", "builtin", "builtin | bench_serving | command"),
        _kv("prompts", "chat", "chat | code | long | path to a JSONL file"),
        _kv("num_prompts", 32),
        _kv("concurrency", 8),
        _kv("max_new_tokens", 256),
        _kv("temperature", 0.0),
        _kv("ignore_eos", True),
        _kv("seed", 1, "same seed → same prompts, so runs stay comparable"),
        _kv("warmup", 2, "excluded from the numbers; the cache is flushed afterwards"),
        _kv("repeats", 1, "≥ 3 gives a noise band for the Δ columns"),
        "",
        "[verdict]",
        "# Thresholds for pass/fail; remove a line to skip that check.",
        _kv("min_accept_len", 2.0),
        _kv("min_speedup", 1.0, "vs the pinned baseline run"),
        "",
    ]
    return "\n".join(out)


def _cmd_init(ns: argparse.Namespace) -> int:
    path = Path(ns.file).expanduser()
    if path.exists() and not ns.force:
        print(f"eagletui: {path} exists; use --force to overwrite", file=sys.stderr)
        return 1
    if ns.example and ns.from_command:
        print("eagletui: use either --example or --from-command, not both", file=sys.stderr)
        return 2
    try:
        if ns.example:
            text = example_text(ns.example)
            if ns.example in SIMULATOR_EXAMPLES:
                from eagletui.commands.demo import with_free_port

                text = with_free_port(text)
        else:
            source = ns.from_command or _TEMPLATE_COMMAND
            cmd = parse_launch_command(source)
            for w in cmd.warnings:
                print(f"warning: {w}", file=sys.stderr)
            for key, value in cmd.env.items():
                if is_secret(key, value):
                    print(
                        f"warning: {key} looks like a secret and is written to {path} in clear",
                        file=sys.stderr,
                    )
            text = render_profile(cmd, path.stem, ns.from_command or "")
        parse_profile(text, path)  # never write a file that would not load
    except ProfileError as exc:
        print(f"eagletui: {exc}", file=sys.stderr)
        return 2
    path.parent.mkdir(parents=True, exist_ok=True)
    # Profiles hold env values that may be credentials: private to the user, like ssh keys.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {path}")
    if ns.from_command:
        # A pasted command is checked at once: "--pp 2" would otherwise surface only at the first launch.
        from eagletui.core.profile.lint import lint_profile

        prof = parse_profile(text, path)
        lint = lint_profile(prof, text, flag_table_for_profile(prof), prof.server_version)
        for problem in lint.errors + lint.warnings:
            print(f"warning: {problem}", file=sys.stderr)
        if lint.errors:
            print(f"check it with `eagletui profile check {path}` once fixed", file=sys.stderr)
    return 0


def flag_table_for_profile(prof: Any) -> Any:
    """The parser the profile's server will meet, learned without a host: the simulator's own parser
    for ``-m eagletui.sim`` (it ships with eagletui), otherwise the real flag table of the sglang release
    the profile declares (``[server] version``), else of the newest shipped release (its ``source`` says
    which decided)."""
    from eagletui.core.servers.flag_rule import FlagTable
    from eagletui.core.servers.flagtables import table_for
    from eagletui.remote.preflight import server_module

    module = server_module(prof)
    if module in ("eagletui.sim", "eagletui.sim.vllm"):
        if module == "eagletui.sim":
            from eagletui.sim.cli import build_parser as sim_parser
        else:
            from eagletui.sim.vllm import build_parser as sim_parser

        p = sim_parser()
        return FlagTable(
            options=tuple(p._option_string_actions),
            allow_abbrev=p.allow_abbrev,
            source="the simulator's parser",
        )
    # no table of vLLM's flags ships with eagletui: only the host's own parser can tell (preflight)
    return table_for(None, prof.server_version) if prof.kind.flag_module == "sglang" else None


def _cmd_check(ns: argparse.Namespace) -> int:
    from eagletui.core.profile.lint import as_dict, lint_profile, load_problems

    path = Path(ns.file).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        print(str(ProfileError("no such profile file", path)), file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as exc:
        print(f"eagletui: cannot read {ns.file}: {exc}", file=sys.stderr)
        return 1
    # every problem, not only the first: the flag checks run on what loads without the broken pieces
    loaded, load_errors = load_problems(text, path)
    if loaded is None:
        for err in load_errors:
            print(str(err), file=sys.stderr)
        print(f"{path}: {len(load_errors)} error(s)", file=sys.stderr)
        return 1
    prof = loaded
    table = flag_table_for_profile(prof)
    lint = lint_profile(prof, text, table, prof.server_version)
    if not ns.json:  # what keeps it from loading, on stderr as before; the flag checks follow
        for err in load_errors:
            print(str(err), file=sys.stderr)
    lint.errors = sorted(load_errors + lint.errors, key=lambda e: (e.line or 0, e.col or 0))
    # Shown on a terminal or piped into CI logs: --api-key and credential env values never in clear.
    redactor = Redactor.for_profile(prof)
    argv = redactor.argv(prof.argv())
    env = redactor.env(prof.env)
    status = 1 if lint.errors else 0
    if ns.json:
        doc = {
            "name": prof.name,
            "target": prof.target,
            "ok": not lint.errors,
            "argv": argv,
            "env": env,
            "flags": {
                "checked": lint.flags_checked,
                "against": table.source if table is not None else None,
                "table_version": table.version if table is not None else None,
                "expanded": lint.notes,
            },
            "errors": [as_dict(e) for e in lint.errors],
            "warnings": [as_dict(w) for w in lint.warnings],
        }
        if prof.slurm is not None:
            doc["slurm"] = prof.slurm.to_dict()
        write_stdout(json.dumps(doc, indent=2) + "\n")
        return status
    out: list[str] = []
    for err in lint.errors:
        if err not in load_errors:
            out.append(f"error: {err}")
    for warn in lint.warnings:
        out.append(f"warning: {warn}")
    verdict = f"{len(lint.errors)} error(s)" if lint.errors else "ok"
    out.append(f"{prof.path}: {verdict} ({prof.name}, target {prof.target}, {len(prof.toggles)} toggles)")
    if table is None:
        out.append(
            f"flags: not checked: no table of {prof.kind.label}'s flags ships with eagletui "
            "(eagletui connect asks the host's own parser)"
        )
    else:
        out.append(f"flags: {lint.flags_checked} checked against {table.source}")
    out += [f"flags: {note}" for note in lint.notes]
    out += [f"env  {key}={value}" for key, value in env.items()]
    out.append("argv " + json.dumps(argv))
    if prof.slurm is not None:
        out.append("slurm " + slurm_summary(prof))
    write_stdout("\n".join(out) + "\n")
    return status


def slurm_summary(prof: Any) -> str:
    """How the server will run as a job, in one line (the argv above is each node's, plus the rank flags)."""
    s = prof.slurm
    parts = [f"{s.nodes} node(s)", f"partition {s.partition or '(the default)'}"]
    if s.gpus_per_node:
        parts.append(f"{s.gpus_per_node} GPU(s) per node")
    if s.time:
        parts.append(f"time limit {s.time}")
    if s.account:
        parts.append(f"account {s.account}")
    note = "; each node runs the argv with --nnodes/--node-rank/--dist-init-addr" if s.multi_node else ""
    if prof.host in ("127.0.0.1", "localhost", "::1"):
        note += "; the server binds 0.0.0.0 (the login node reaches it on the head node's address)"
    return ", ".join(parts) + note


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="eagletui profile", description="Create and check eagletui profiles.")
    sub = p.add_subparsers(dest="cmd", required=True)
    init = sub.add_parser(
        "init",
        help="write a commented profile",
        description="Write a commented profile TOML (from a pasted launch command, an example, or a template).",
    )
    init.add_argument("file", help="the profile TOML to write (created 0600; refused if it exists)")
    init.add_argument("--from-command", metavar="CMD", help="a pasted sglang launch command (quote it)")
    init.add_argument("--example", choices=sorted(EXAMPLES), help="write a packaged example profile")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    check = sub.add_parser(
        "check",
        help="validate a profile and print its argv",
        description=(
            "Validate a profile: TOML and values, toggle ranges, and every server flag (server.args and "
            "toggles) by the server's own argparse rule. Exit 1 on any error."
        ),
    )
    check.add_argument("file", help="the profile TOML to check")
    check.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: name, target, ok, argv, env, flags, errors, warnings (file/line/col)",
    )
    return p


def main(argv: list[str]) -> int:
    try:
        ns = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return _cmd_init(ns) if ns.cmd == "init" else _cmd_check(ns)
