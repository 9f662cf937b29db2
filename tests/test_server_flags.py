"""eagletui's flag check gives exactly argparse's verdict on the real sglang 0.5.23 parser table.

The reference is a real ``argparse.ArgumentParser(allow_abbrev=True)`` holding every option string of
sglang 0.5.23's ``ServerArgs.add_cli_args`` (the bundled JSON, taken from the real wheel), in the same
registration order, the parser ``prepare_server_args`` builds. Only ``error`` is overridden, so the
parser's verdict can be read instead of ending the test process.
"""

from __future__ import annotations

import argparse
import json
import re
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eagletui.core.profile.load import load_profile
from eagletui.core.servers.flag_rule import BUNDLED_VERSION, FlagTable, bundled_table, check_server_flags

REFERENCE = Path("/work/shared/reference/sglang-0.5.23-server-args.json")
PROFILES = sorted(resources.files("eagletui").joinpath("profiles").iterdir(), key=lambda p: p.name)
PRESENT = "<present>"


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise _Refused(message)


def _table_json() -> dict:
    return json.loads(
        resources.files("eagletui").joinpath("data", "sglang-0.5.23-server-args.json").read_text()
    )


def sglang_parser() -> _Parser:
    """Every option string of the real table as its own action (dest = the option string), nargs '?':
    which option a prefix resolves to is then visible, and ``--flag=value`` parses like the real one."""
    p = _Parser(prog="sglang serve", allow_abbrev=True, add_help=False)
    for opt in _table_json()["actions"]:
        p.add_argument(opt, dest=opt, nargs="?", const=PRESENT, default=None)
    return p


PARSER = sglang_parser()


def argparse_verdict(arg: str) -> tuple[str, object]:
    """("ok", full flag) | ("ambiguous", candidates) | ("unknown", None), by the real parser."""
    try:
        ns = PARSER.parse_args([arg])
    except _Refused as exc:
        msg = str(exc)
        m = re.match(r"ambiguous option: (\S+) could match (.*)$", msg)
        if m:
            return "ambiguous", tuple(m.group(2).split(", "))
        assert msg.startswith("unrecognized arguments"), msg
        return "unknown", None
    set_ = [k for k, v in vars(ns).items() if v is not None]
    assert len(set_) == 1, set_
    return "ok", set_[0]


def eagletui_verdict(arg: str, table: FlagTable | None = None) -> tuple[str, object]:
    v = (table or bundled_table()).resolve(arg)
    if v.ok:
        return "ok", v.flag
    if v.kind == "ambiguous":
        return "ambiguous", v.candidates
    return "unknown", None


def _profile_flags() -> list[str]:
    flags: list[str] = []
    for path in PROFILES:
        prof = load_profile(path)
        if prof.server != "sglang":
            continue  # another server's flags are not SGLang's parser's to judge
        flags += list(prof.args)
        flags += [t.name for t in prof.toggles if t.kind == "arg"]
    return sorted(set(flags))


def test_bundled_table_is_the_reference_file() -> None:
    shipped = resources.files("eagletui").joinpath("data", "sglang-0.5.23-server-args.json").read_bytes()
    if REFERENCE.exists():
        assert shipped == REFERENCE.read_bytes()
    t = bundled_table()
    assert len([o for o in t.options if o.startswith("--")]) == 560 and t.version == BUNDLED_VERSION


def test_every_flag_of_the_shipped_profiles_matches_argparse() -> None:
    flags = _profile_flags()
    assert (
        len(flags) == 22
    )  # the shipped SGLang profiles, server.args and toggles (the demos have three --sim-* flags)
    for flag in flags:
        assert eagletui_verdict(flag) == argparse_verdict(flag), flag


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("--tp", ("ok", "--tp-size")),
        ("--tp=8", ("ok", "--tp-size")),
        ("--dp", ("ok", "--dp-size")),
        ("--pp", ("ambiguous", ("--pp-size", "--pp-max-micro-batch-size", "--pp-async-batch-depth"))),
        ("--pp=2", ("ambiguous", ("--pp-size", "--pp-max-micro-batch-size", "--pp-async-batch-depth"))),
        ("--cuda-graph-bs", ("ambiguous", ("--cuda-graph-bs-decode", "--cuda-graph-bs-prefill"))),
        ("--cuda-graph-max-bs", ("ambiguous", ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill"))),
        ("--stream-output", ("unknown", None)),
        (
            "--disable-cuda-graph",
            ("ok", "--disable-cuda-graph"),
        ),  # exact wins over --disable-cuda-graph-padding
        ("--model", ("ok", "--model")),
        ("--tp-size=8", ("ok", "--tp-size")),
    ],
)
def test_issue_cases_match_argparse(arg: str, expected: tuple[str, object]) -> None:
    assert argparse_verdict(arg) == expected  # the reference itself says so
    assert eagletui_verdict(arg) == expected


_OPTIONS = [o for o in _table_json()["actions"] if o.startswith("--")]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_OPTIONS), st.integers(min_value=2, max_value=60), st.sampled_from(["", "=1"]))
def test_random_prefixes_of_real_flags_match_argparse(opt: str, cut: int, tail: str) -> None:
    arg = opt[: max(3, min(cut, len(opt)))] + tail
    assert eagletui_verdict(arg) == argparse_verdict(arg)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdeghilmnoprstuvz-", min_size=1, max_size=25))
def test_random_spellings_match_argparse(body: str) -> None:
    arg = "--" + body
    assert eagletui_verdict(arg) == argparse_verdict(arg)


def test_check_messages_for_the_issue_cases() -> None:
    r = check_server_flags(
        ["--tp", "--dp", "--pp", "--cuda-graph-bs", "--cuda-graph-max-bs", "--stream-output"],
        bundled_table(),
        None,
    )
    assert r.notes == [
        "--tp is accepted as --tp-size (a unique prefix)",
        "--dp is accepted as --dp-size (a unique prefix)",
    ]
    assert len(r.errors) == 4 and not r.warnings
    assert r.errors[0].startswith(
        "ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size, --pp-async-batch-depth"
    )
    assert "use --cuda-graph-max-bs-decode" in r.errors[2]
    assert "does not accept --stream-output (use --incremental-streaming-output)" in r.errors[3]


def test_unknown_flag_names_the_closest_spelling() -> None:
    r = check_server_flags(["--speculative-num-stepz"], bundled_table(), None)
    assert r.errors and "did you mean --speculative-num-steps?" in r.errors[0]


def test_a_parser_without_abbreviations_wants_exact_names() -> None:
    t = FlagTable(options=("--tp-size", "--port"), allow_abbrev=False)
    assert t.resolve("--tp").kind == "unknown" and t.resolve("--tp-size=2").kind == "exact"


def test_bundled_table_of_another_release_only_warns() -> None:
    r = check_server_flags(["--pp", "--cuda-graph-max-bs"], bundled_table(), "0.5.13")
    assert not r.errors and len(r.warnings) == 2 and "the host has 0.5.13" in r.warnings[0]
    r = check_server_flags(["--cuda-graph-max-bs"], bundled_table(), "0.5.22")
    assert r.errors == [
        "--cuda-graph-max-bs was removed in sglang 0.5.20 (host has 0.5.22): use --cuda-graph-max-bs-decode"
    ]


def test_deprecated_flags_warn_on_0_5_23() -> None:
    r = check_server_flags(
        ["--enable-flashinfer-allreduce-fusion", "--disable-cuda-graph"], bundled_table(), None
    )
    assert not r.errors and len(r.warnings) == 2


#: The every-prefix check in this many parts (every ``PREFIX_PARTS``-th flag each): one test of 14 s of CPU
#: ran past pytest's 300 s timeout with another suite on the same two cores; the parts share the
#: workers, and together check every prefix as before.
PREFIX_PARTS = 8


@pytest.mark.slow
@pytest.mark.parametrize("part", range(PREFIX_PARTS))
def test_every_prefix_of_every_real_flag_matches_argparse(part: int) -> None:
    n = 0
    for opt in _OPTIONS[part::PREFIX_PARTS]:
        for k in range(3, len(opt) + 1):
            for arg in (opt[:k], opt[:k] + "=1"):
                assert eagletui_verdict(arg) == argparse_verdict(arg), arg
                n += 1
    assert n > 20000 // PREFIX_PARTS // 2


def test_the_prefix_parts_cover_every_flag_and_over_20000_prefixes() -> None:
    parts = [_OPTIONS[i::PREFIX_PARTS] for i in range(PREFIX_PARTS)]
    assert sorted(o for p in parts for o in p) == sorted(_OPTIONS)
    assert sum(2 * (len(o) - 2) for o in _OPTIONS) > 20000


def test_values_outside_choices_match_argparse() -> None:
    """The real parser refuses them too (``invalid choice``), checked with the table's own choices."""
    from eagletui.core.servers.flag_rule import check_values

    t = bundled_table()
    cases = {
        "--reasoning-parser": ("kimi_k2", "kimi2"),
        "--cuda-graph-backend-decode": ("breakable", "tc_piecewise"),
        "--log-requests-level": ("3", "7"),
        "--tp": ("8", "8"),  # no choices: any value passes the flag check
    }
    actions = _table_json()["actions"]
    for flag, (good, bad) in cases.items():
        spec = actions[t.resolve(flag).flag]
        p = _Parser(allow_abbrev=True, add_help=False)
        p.add_argument(
            flag if flag in actions else t.resolve(flag).flag,
            choices=spec["choices"],
            type=type((spec["choices"] or [""])[0]),
        )
        for value in (good, bad):
            try:
                p.parse_args([flag, value])
                real_ok = True
            except _Refused as exc:
                real_ok = False
                assert "invalid choice" in str(exc)
            assert (check_values({flag: value}, t) == []) == real_ok, (flag, value)
