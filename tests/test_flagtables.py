"""The flag check follows the server's release: every shipped release's real parser, and the choice of the
table that decides (host's version, the profile's ``[server] version``, else the newest), named in every
message.

Built on real data: the 0.5.17 table is held to the real 0.5.17 server's own usage text (its full
``--pp 2`` refusal, recorded on the H200), the 0.5.23 one to the reference argparse table taken from that
wheel, and ``profile check`` runs on the very profile eagletui checked against the real 0.5.17 host.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eagletui.core.profile.load import load_profile, parse_profile
from eagletui.core.profile.model import ProfileError
from eagletui.core.servers.flag_rule import check_server_flags
from eagletui.core.servers.flags import ADDED, CHANGES, check_flags
from eagletui.core.servers.flagtables import (
    accepted_in,
    flag_infos,
    nearest_shipped,
    shipped_versions,
    table_for,
)

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "tests" / "fixtures" / "real-0.5.17"
TOOLS = REPO / "tools" / "flagtables"


def _build_module():
    spec = importlib.util.spec_from_file_location("flagtables_build", TOOLS / "build.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _wheel_list() -> list[tuple[str, str, str]]:
    return _build_module().read_wheel_list()


# --------------------------------------------------------------------------- the shipped tables


def test_every_release_from_0_5_13_to_0_5_23_ships_a_table_built_by_the_script_in_the_repo() -> None:
    versions = shipped_versions()
    assert versions[0] == "0.5.13" and versions[-1] == "0.5.23"
    # every release PyPI has in between (posts included), exactly the list the build script reads
    assert list(versions) == [v for v, _, _ in _wheel_list()]
    assert {"0.5.13.post1", "0.5.15.post1", "0.5.17", "0.5.20"} <= set(versions)
    for v, wheel, sha in _wheel_list():
        head = (
            (REPO / "eagletui" / "data" / "sglang-flags" / f"sglang-{v}.flags").read_text().splitlines()[:4]
        )
        assert head[0].startswith(f"# sglang {v}:")
        assert wheel in head[1] and sha in head[1]
        assert f"Regenerate with: python tools/flagtables/build.py {v}" in head[2]
    total = sum(p.stat().st_size for p in (REPO / "eagletui" / "data" / "sglang-flags").iterdir())
    assert total < 400_000  # compact: option strings and marks, not wheels


def test_the_0_5_17_table_is_the_real_0_5_17_parser() -> None:
    """The real server's usage text lists each action's first option string in registration order, with
    the choices of those that have them: the generated table must say the same."""
    text = (REAL / "ambiguous-flag-pp.txt").read_text()
    usage = text[: text.index("sglang serve: error")]
    items = re.findall(r"\[(--[\w-]+)(?: (\{[^}]*\}))?", usage)
    infos = flag_infos("0.5.17")
    shown = [f for f, _ in items]
    assert len(shown) > 450
    assert [f for f in infos if f in set(shown)] == shown  # every flag the server shows, in its order
    # what usage leaves out: aliases of an action (--tensor-parallel-size) and help=SUPPRESS options
    hidden = [f for f in infos if f not in set(shown)]
    assert len(hidden) < 25 and "--tensor-parallel-size" in hidden  # (and the required --model-path)
    for flag, choices in items:
        if choices:
            assert list(infos[flag].choices) == choices[1:-1].split(","), flag
    # the ambiguity the real server reported is the table's
    t = table_for("0.5.17")
    assert t.resolve("--pp").candidates == (
        "--pp-size",
        "--pp-max-micro-batch-size",
        "--pp-async-batch-depth",
    )


def test_the_0_5_23_table_is_the_reference_parser_table() -> None:
    ref = json.loads((REPO / "eagletui" / "data" / "sglang-0.5.23-server-args.json").read_text())
    opts = [o for o in ref["actions"] if o != "-h"]
    assert list(flag_infos("0.5.23")) == opts
    switches = {o for o, a in ref["actions"].items() if a["nargs"] == 0 and o != "-h"}
    assert {f for f, i in flag_infos("0.5.23").items() if i.switch} == switches


def test_the_generated_python_literals_come_from_the_repo_table() -> None:
    """core/servers/sglang_flagtable.py is the build script's output for the newest table in the repo, header
    and all; regenerating gives the same bytes."""
    path = REPO / "eagletui" / "core" / "servers" / "sglang_flagtable.py"
    text = path.read_text()
    assert "/work/" not in text and "Regenerate with: python tools/flagtables/build.py 0.5.23" in text
    assert "eagletui/data/sglang-flags/sglang-0.5.23.flags" in text
    assert _build_module().render_flagtable_py("0.5.23") == text


def test_the_version_notes_agree_with_the_real_parsers() -> None:
    """core/servers/flags.py speaks when no table of the server's release is known: within 0.5.13–0.5.23 every
    note must be what the real parsers do."""
    shipped = shipped_versions()
    for c in CHANGES:
        for v in shipped:
            if v.count(".") > 2:
                continue
            tv = tuple(int(x) for x in v.split("."))
            info = flag_infos(v).get(c.flag)
            if c.kind == "removed" and tv >= c.since:
                assert info is None, (c.flag, v)
            if c.kind == "deprecated" and tv >= c.since and info is not None:
                assert info.deprecated is not None, (c.flag, v)
        if c.kind == "deprecated" and c.since >= (0, 5, 14):
            prev = [v for v in shipped if v.count(".") == 2 and tuple(map(int, v.split("."))) < c.since]
            before = flag_infos(prev[-1]).get(c.flag)
            assert before is None or before.deprecated is None, (c.flag, prev[-1])
    for flag, since in ADDED.items():
        first = accepted_in(flag)[0]
        if since >= (0, 5, 13):
            assert tuple(map(int, first.split(".")[:3])) == since, flag


# --------------------------------------------------------------------------- which table decides


def test_the_host_release_decides_and_is_named() -> None:
    t = table_for("0.5.17", "0.5.23")
    assert t.version == "0.5.17" and t.source == "sglang 0.5.17's flags (host)"
    t = table_for(None, "0.5.17")
    assert t.version == "0.5.17" and t.source == "sglang 0.5.17's flags (profile server.version)"
    t = table_for(None, None)
    assert t.version == "0.5.23" and t.assumed and "newest shipped" in t.source
    t = table_for("0.5.24")
    assert t.version == "0.5.23" and "the host has 0.5.24: the nearest shipped release" in t.source
    assert nearest_shipped("0.5.13rc0") == "0.5.13"
    assert nearest_shipped("0.5.15.post1") == "0.5.15.post1"
    assert nearest_shipped("0.5.12") == "0.5.13"
    assert nearest_shipped("garbage") is None


def test_a_deprecated_alias_follows_each_release() -> None:
    """0.5.17 takes --cuda-graph-max-bs (warns, reads --cuda-graph-max-bs-decode); 0.5.13 has it as the
    real flag; 0.5.20 on refuse it as an ambiguous prefix."""
    r = check_server_flags(["--cuda-graph-max-bs"], table_for("0.5.17"), "0.5.17")
    assert not r.errors
    assert r.warnings == [
        "--cuda-graph-max-bs is deprecated in sglang 0.5.17: the server warns and reads it as "
        "--cuda-graph-max-bs-decode"
    ]
    r = check_server_flags(["--cuda-graph-max-bs"], table_for("0.5.13"), "0.5.13")
    assert not r.errors and not r.warnings
    r = check_server_flags(["--cuda-graph-max-bs"], table_for("0.5.20"), "0.5.20")
    assert r.errors and "ambiguous option: --cuda-graph-max-bs" in r.errors[0]
    assert "[sglang 0.5.20's flags (host)]" in r.errors[0]
    # unknown release: the newest decides, and says which releases would take it
    r = check_server_flags(["--cuda-graph-max-bs"], table_for(None), None)
    assert r.errors and "sglang 0.5.13–0.5.19 accept it" in r.errors[0]
    # and a flag only newer releases have is refused on an older one
    r = check_server_flags(["--cuda-graph-max-bs-decode"], table_for("0.5.13"), "0.5.13")
    assert r.errors and "does not accept --cuda-graph-max-bs-decode" in r.errors[0]


def test_check_flags_version_notes_match_0_5_17() -> None:
    assert check_flags(["--cuda-graph-max-bs"], "0.5.17") == (
        [],
        ["--cuda-graph-max-bs is deprecated since sglang 0.5.14: prefer --cuda-graph-max-bs-decode"],
    )


# --------------------------------------------------------------------------- the profile key and the command


def test_server_version_key_is_validated_with_its_location(tmp_path: Path) -> None:
    base = '[server]\nversion = "{}"\n[server.args]\nmodel-path = "m"\n'
    assert parse_profile(base.format("0.5.17")).server_version == "0.5.17"
    assert parse_profile(base.format("0.5.13.post1")).server_version == "0.5.13.post1"
    assert parse_profile("[server]\n[server.args]\n").server_version is None
    for bad in ("latest", "0.5", "0.5.17; rm -rf /", ""):
        with pytest.raises(ProfileError) as ei:
            parse_profile(base.format(bad) if bad != "0.5" else base.format("x0.5"), tmp_path / "p.toml")
        assert ei.value.line == 2 and "server.version" in ei.value.message
    with pytest.raises(ProfileError) as ei:
        parse_profile("[server]\nversion = 17\n")
    assert "server.version" in str(ei.value)


def _profile_check(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eagletui", "profile", "check", str(path), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_profile_check_of_the_real_0_5_17_profile_follows_its_declared_release(tmp_path: Path) -> None:
    """The profile eagletui checked on the real 0.5.17 host: today's main calls its
    --cuda-graph-max-bs an error (0.5.23 table); with ``version = "0.5.17"`` it is the deprecation the
    server itself warns about, and the output names the table that decided."""
    text = (REAL / "profile-alias.toml").read_text()
    assert "cuda-graph-max-bs = 8" in text
    declared = tmp_path / "alias17.toml"
    declared.write_text(text.replace("ready_timeout_s = 240", 'ready_timeout_s = 240\nversion = "0.5.17"'))
    res = _profile_check(declared)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "checked against sglang 0.5.17's flags (profile server.version)" in res.stdout
    assert "--cuda-graph-max-bs is deprecated in sglang 0.5.17" in res.stdout + res.stderr
    res = _profile_check(declared, "--json")
    doc = json.loads(res.stdout)
    assert doc["ok"] and doc["flags"]["table_version"] == "0.5.17"
    assert any("deprecated in sglang 0.5.17" in w["message"] for w in doc["warnings"])
    # undeclared: the newest release decides, says so, and names the releases that take the flag
    res = _profile_check(REAL / "profile-alias.toml")
    assert res.returncode == 1
    out = res.stdout + res.stderr
    assert "sglang 0.5.23's flags (the newest shipped: the server's version is unknown)" in out
    assert "sglang 0.5.13–0.5.19 accept it" in out


def test_the_real_host_s_version_picks_its_table() -> None:
    """The preflight found sglang 0.5.17 on the real host; that version picks the 0.5.17 table."""
    from eagletui.remote.preflight import flag_table_for

    checks = json.loads((REAL / "a-preflight-alias.json").read_text())
    module = next(c for c in checks if c["name"] == "server module")
    assert "(version 0.5.17)" in module["message"]
    prof = load_profile(REAL / "profile-alias.toml")
    table = flag_table_for("sglang.launch_server", None, "0.5.17", prof.server_version)
    assert table is not None and table.source == "sglang 0.5.17's flags (host)"
    r = check_server_flags(["--cuda-graph-max-bs"], table, "0.5.17")
    assert not r.errors and "deprecated in sglang 0.5.17" in r.warnings[0]
    # a vLLM module has no shipped table: only its host's parser can tell
    assert flag_table_for("vllm", None, "0.11.0", None) is None


# --------------------------------------------------------------------------- the extraction script


def test_dump_parser_reads_a_wheel_without_its_dependencies(tmp_path: Path) -> None:
    """The extraction runs sglang's own parser code with every missing dependency stubbed: a tiny
    stand-in package that imports torch at module level, probes the platform and registers a deprecated
    alias comes out as the table lines the build writes."""
    pkg = tmp_path / "site" / "sglang" / "srt"
    (pkg / "arg_groups").mkdir(parents=True)
    (tmp_path / "site" / "sglang" / "__init__.py").write_text(
        "import torch\nassert torch.cuda.is_available() or True\n"
    )
    (pkg / "arg_groups" / "__init__.py").write_text("")
    (pkg / "arg_groups" / "argparse_actions.py").write_text(
        "import argparse\n"
        "class DeprecatedAliasStoreAction(argparse.Action):\n"
        "    def __init__(self, option_strings, dest, new_flag=None, **kw):\n"
        "        self.new_flag = new_flag\n"
        "        super().__init__(option_strings, dest, **kw)\n"
        "    def __call__(self, *a, **k):\n"
        "        pass\n"
    )
    (pkg / "platform_probe.py").write_text("import torch_npu\nraise RuntimeError('no NPU here')\n")
    (pkg / "server_args.py").write_text(
        "import dataclasses\nimport torch, triton\n"
        "from sglang.srt.arg_groups.argparse_actions import DeprecatedAliasStoreAction\n"
        "try:\n    import sglang.srt.platform_probe\nexcept ImportError:\n    pass\n"
        "@dataclasses.dataclass\n"
        "class ServerArgs:\n"
        "    tp_size: int = 1\n"
        "    @staticmethod\n"
        "    def add_cli_args(parser):\n"
        "        parser.add_argument('--tp-size', '--tensor-parallel-size', type=int)\n"
        "        parser.add_argument('--enable-metrics', action='store_true')\n"
        "        parser.add_argument('--attention-backend', choices=['triton', 'fa3'])\n"
        "        parser.add_argument('--api-key', dest='api_key')\n"
        "        parser.add_argument('--cuda-graph-max-bs-decode', type=int)\n"
        "        parser.add_argument('--cuda-graph-max-bs', type=int, dest='cuda_graph_max_bs_decode',\n"
        "            action=DeprecatedAliasStoreAction, new_flag='--cuda-graph-max-bs-decode')\n"
    )
    res = subprocess.run(
        [sys.executable, "-I", "-S", str(TOOLS / "dump_parser.py"), str(tmp_path / "site")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    lines = _build_module().table_lines(data)
    assert lines == [
        "--help\t0",
        "--tp-size",
        "--tensor-parallel-size\t=--tp-size",
        "--enable-metrics\t0",
        '--attention-backend\t["triton","fa3"]',
        "--api-key\tsecret",
        "--cuda-graph-max-bs-decode",
        "--cuda-graph-max-bs\t=--cuda-graph-max-bs-decode\t~--cuda-graph-max-bs-decode",
    ]
